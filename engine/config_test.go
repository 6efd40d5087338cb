package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/xdpeng/xdpeng/internal/netdev"
)

// TestValidateChecksEachCPUFirst: a CPU that is not online is named as
// such, before the CPU list is counted against the queues.
func TestValidateChecksEachCPUFirst(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Interface = "dut0"
	cfg.Queues = []int{0, 1}
	cfg.CPUs = []int{4000}
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "CPU 4000 is not online") {
		t.Fatalf("Validate() = %v, want it to name CPU 4000 as not online", err)
	}
	cfg.CPUs = []int{0}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "1 CPU(s) for 2 queue(s)") {
		t.Fatalf("Validate() = %v, want the count of CPUs against queues", err)
	}
	// The same order in resolveCPUs, where the queues come from the device.
	cfg.CPUs = []int{4000}
	if err := cfg.resolveCPUs(); err == nil || !strings.Contains(err.Error(), "CPU 4000 is not online") {
		t.Fatalf("resolveCPUs() = %v, want it to name CPU 4000 as not online", err)
	}
}

func TestDeviceCheckQueues(t *testing.T) {
	nic := Device{Name: "eth1", Driver: "mlx5_core", RxQueues: 2}
	if err := nic.CheckQueues([]int{0, 1}); err != nil {
		t.Errorf("queues 0,1 on 2 queues: %v", err)
	}
	err := nic.CheckQueues([]int{0, 3})
	var qe *QueueError
	if !errors.As(err, &qe) || qe.Queue != 3 || qe.Device != "eth1" || qe.RxQueues != 2 || !errors.Is(err, ErrNoQueue) {
		t.Fatalf("err = %v, want a QueueError for queue 3 of eth1's 2", err)
	}
	if want := "queue 3 does not exist on eth1: it has 2 receive queues (0-1)"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	one := Device{Name: "dut0", Driver: "veth", RxQueues: 1}
	if err := one.CheckQueues([]int{1}); err == nil || err.Error() != "queue 1 does not exist on dut0: it has 1 receive queue (0)" {
		t.Errorf("error %v", err)
	}
	if err := one.CheckQueues([]int{-1}); err == nil {
		t.Error("queue -1 accepted")
	}
}

// TestZeroConfig: a zero Config is refused with where to start, not with
// the first field it lacks; its XDP mode is XDPAuto, the default, and an
// XDP mode that is none of the three is refused.
func TestZeroConfig(t *testing.T) {
	var zero Config
	if zero.XDPMode != XDPAuto || DefaultConfig().XDPMode != XDPAuto {
		t.Errorf("zero XDPMode %v, DefaultConfig's %v: want both auto", zero.XDPMode, DefaultConfig().XDPMode)
	}
	cfg := Config{Interface: "dut0"}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "start from DefaultConfig()") {
		t.Errorf("Validate of Config{Interface: dut0} = %v, want it to say start from DefaultConfig()", err)
	}
	g := GeneratorConfig{Interface: "dut0", Frames: [][]byte{make([]byte, 64)}}
	if err := g.Validate(); err == nil || !strings.Contains(err.Error(), "start from DefaultGeneratorConfig()") {
		t.Errorf("Validate of a zero GeneratorConfig = %v, want it to say start from DefaultGeneratorConfig()", err)
	}
	// One field left at 0 is named as such.
	cfg = DefaultConfig()
	cfg.Interface, cfg.FrameSize = "dut0", 0
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "frame size 0") {
		t.Errorf("Validate with FrameSize 0 = %v, want it to name the frame size", err)
	}
	cfg = DefaultConfig()
	cfg.Interface, cfg.XDPMode = "dut0", XDPMode(7)
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "unknown XDP mode 7") {
		t.Errorf("Validate with XDPMode 7 = %v", err)
	}
	for m, want := range map[XDPMode]string{XDPAuto: "auto", XDPNative: "native", XDPGeneric: "generic", 7: "XDPMode(7)"} {
		if m.String() != want {
			t.Errorf("XDPMode %d is %q, want %q", int(m), m, want)
		}
	}
}

// Validate changes nothing: New and NewGenerator fill in the defaults.
// TestValidateQueueBeyondXSKMAP: a queue the steering program's XSKMAP has
// no room for is refused before anything is set up, naming the range.
func TestValidateQueueBeyondXSKMAP(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Interface = "eth0"
	cfg.Queues = []int{0, MaxQueues}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "queue 256: an engine serves queues 0 to 255") {
		t.Fatalf("Validate() = %v, want queue 256 refused", err)
	}
	cfg.Queues = []int{MaxQueues - 1}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("queue %d: %v", MaxQueues-1, err)
	}
}

func TestValidateIsPure(t *testing.T) {
	c := DefaultConfig()
	c.Interface, c.PollTimeout = "eth0", 0
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.PollTimeout != 0 || c.Queues != nil || c.CPUs != nil {
		t.Fatalf("Validate changed the config: PollTimeout %v, Queues %v, CPUs %v", c.PollTimeout, c.Queues, c.CPUs)
	}
	g := DefaultGeneratorConfig()
	g.Interface, g.PollTimeout, g.Frames = "eth0", 0, [][]byte{make([]byte, 64)}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	if g.PollTimeout != 0 {
		t.Fatalf("GeneratorConfig.Validate changed PollTimeout to %v", g.PollTimeout)
	}
}

// TestSched: the policy names chrt and xdpsock use parse, and a policy and
// its priority are checked against each other, for the engine and the
// generator alike.
func TestSched(t *testing.T) {
	for in, want := range map[string]SchedPolicy{"SCHED_OTHER": SchedOther, "fifo": SchedFIFO, "SCHED_rr": SchedRR, "Other": SchedOther} {
		if got, err := ParseSchedPolicy(in); err != nil || got != want {
			t.Errorf("ParseSchedPolicy(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseSchedPolicy("idle"); err == nil {
		t.Error("ParseSchedPolicy(idle): no error")
	}
	for _, tc := range []struct {
		p    SchedPolicy
		prio int
		want string
	}{
		{SchedOther, 0, ""},
		{SchedFIFO, 1, ""},
		{SchedRR, 99, ""},
		{SchedOther, 5, "SCHED_OTHER takes 0"},
		{SchedFIFO, 0, "SCHED_FIFO takes 1-99"},
		{SchedRR, 100, "SCHED_RR takes 1-99"},
		{SchedPolicy(6), 1, "unknown scheduling policy"},
	} {
		c := DefaultConfig()
		c.Interface, c.Sched, c.SchedPriority = "eth0", tc.p, tc.prio
		g := DefaultGeneratorConfig()
		g.Interface, g.Sched, g.SchedPriority, g.Frames = "eth0", tc.p, tc.prio, [][]byte{make([]byte, 60)}
		for what, err := range map[string]error{"Config": c.Validate(), "GeneratorConfig": g.Validate()} {
			if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s with %v priority %d: %v, want %q", what, tc.p, tc.prio, err, tc.want)
			}
		}
	}
}

// TestThreadedBusyPollNames: the wait mode is named as the CLI names it,
// the NAPI modes as the kernel names them, and a generator, which has no
// receive work to move to a NAPI's thread, refuses the wait mode.
func TestThreadedBusyPollNames(t *testing.T) {
	if got := WaitThreadedBusyPoll.String(); got != "threaded-busy-poll" {
		t.Errorf("WaitThreadedBusyPoll.String() = %q", got)
	}
	for m, want := range map[NAPIThreaded]string{NAPIThreadedDisabled: "disabled", NAPIThreadedEnabled: "enabled", NAPIThreadedBusyPoll: "busy-poll", 9: "NAPIThreaded(9)"} {
		if got := m.String(); got != want {
			t.Errorf("NAPIThreaded(%d).String() = %q, want %q", uint32(m), got, want)
		}
	}
	// The engine's modes are the kernel's numbers, as netdev sends them.
	for _, p := range [][2]uint32{{uint32(NAPIThreadedDisabled), uint32(netdev.NAPIThreadedDisabled)},
		{uint32(NAPIThreadedEnabled), uint32(netdev.NAPIThreadedEnabled)}, {uint32(NAPIThreadedBusyPoll), uint32(netdev.NAPIThreadedBusyPoll)}} {
		if p[0] != p[1] {
			t.Errorf("engine's mode %d is netdev's %d", p[0], p[1])
		}
	}
	g := DefaultGeneratorConfig()
	g.Interface, g.Frames, g.Wait = "eth0", [][]byte{make([]byte, 64)}, WaitThreadedBusyPoll
	if err := g.Validate(); err == nil || !strings.Contains(err.Error(), "threaded busy polling") {
		t.Errorf("GeneratorConfig.Validate with WaitThreadedBusyPoll: %v, want it refused", err)
	}
}
