//go:build vmguest

package main

// The kernel matrix's guest test of --busy-poll's NAPI settings (issue 38),
// on virtio-net, whose queues have a NAPI with an interrupt each.

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// deferral is the part of a NAPI's settings --busy-poll sets.
type deferral struct {
	defer_ uint32
	gro    time.Duration
}

// TestGuestBusyPollNAPI: rxdrop -B gives the NAPI of each receive queue
// what preferred busy polling needs (defer-hard-irqs 2, gro-flush-timeout
// 200 µs): its own settings where the kernel has them (Linux 6.13), else
// the device's (sysfs), and says which; probe shows queue 0's NAPI and
// interrupt (Linux 6.8); the old values are back after Ctrl-C, and after
// kill -9 (the guard puts them back). compare's busy-poll path, killed, and
// txonly -B do the same.
func TestGuestBusyPollNAPI(t *testing.T) {
	g := newGuest(t)
	if !g.atLeast(5, 11) {
		privtest.Unsupported(t, "preferred busy polling needs Linux 5.11")
	}
	ifi, err := net.InterfaceByName(g.rx)
	if err != nil {
		t.Fatal(err)
	}
	// Every queue: the frames' flow lands on one the test cannot choose
	// (the RSS key is the guest's own, new at each boot).
	info, err := netdev.Lookup(g.rx)
	if err != nil {
		t.Fatal(err)
	}
	var napiIDs []uint32
	perNAPI := true
	for q := range info.RxQueues {
		rq, err := netdev.RxQueueInfo(ifi.Index, q)
		switch {
		case errors.Is(err, netdev.ErrNoQueueInfo):
			perNAPI = false
		case err != nil:
			t.Fatal(err)
		case rq.NAPIID == 0:
			// virtio_net links its queues to their NAPIs from some
			// kernel after 6.12: before, the device-wide values are set.
			t.Logf("virtio_net on Linux %d.%d links no NAPI to queue %d of %s", g.kernel[0], g.kernel[1], q, g.rx)
			perNAPI = false
		default:
			_, c, err := netdev.NAPIByID(rq.NAPIID)
			if err != nil {
				t.Fatal(err)
			}
			perNAPI = perNAPI && c != nil
			napiIDs = append(napiIDs, rq.NAPIID)
		}
	}
	napiID := uint32(0) // queue 0's, for probe
	if len(napiIDs) > 0 {
		napiID = napiIDs[0]
	}
	// now is each NAPI's deferral, or the device's.
	now := func() []deferral {
		t.Helper()
		if perNAPI {
			var out []deferral
			for _, id := range napiIDs {
				_, c, err := netdev.NAPIByID(id)
				if err != nil || c == nil {
					t.Fatalf("NAPI %d: %v, %v", id, c, err)
				}
				out = append(out, deferral{c.DeferHardIRQs, c.GROFlushTimeout})
			}
			return out
		}
		d, err := netdev.IRQDeferralOf(g.rx)
		if err != nil {
			t.Fatal(err)
		}
		return []deferral{{uint32(d.DeferHardIRQs), d.GROFlushTimeout}}
	}
	before := now()
	want := slices.Repeat([]deferral{{2, 200 * time.Microsecond}}, len(before))
	if slices.ContainsFunc(before, func(d deferral) bool { return d == want[0] }) {
		t.Fatalf("%s has busy polling's settings already (%+v): the test cannot tell a change", g.rx, before)
	}
	said := "put back on exit" // per NAPI
	if !perNAPI {
		said = "held with any other run"
	}
	start := func(what string) *proc {
		t.Helper()
		p := g.start(t, "rxdrop", "-i", g.rx, "-B", "-n", "200ms")
		if !p.waitOutput(60*time.Second, false, func(s string) bool { return strings.Contains(s, "queue cpu") }) {
			p.cmd.Process.Kill()
			t.Fatalf("%s did not start:\n%s", what, p.wait(t))
		}
		if got := now(); !slices.Equal(got, want) {
			p.cmd.Process.Kill()
			t.Fatalf("while %s runs, %s has %+v, want %+v", what, g.rx, got, want)
		}
		return p
	}
	softirqs := func() uint64 { return netRxSoftirqs(t) }

	// Ctrl-C.
	p := start("rxdrop -B")
	if napiID != 0 {
		// probe shows the queue's NAPI, its interrupt, its settings
		// (Linux 6.13) and the socket bound to it (Linux 6.14).
		pr := g.run(t, time.Minute, "probe", "-i", g.rx, "--json")
		var pj probeJSON
		if err := json.Unmarshal([]byte(pr.stdout), &pj); err != nil || pr.code != 0 {
			p.cmd.Process.Kill()
			t.Fatalf("probe: %v\n%s", err, pr)
		}
		// (virtio_net does not tell its NAPIs' interrupts: IRQ 0.)
		if len(pj.NAPIs) == 0 || pj.NAPIs[0].NAPIID != napiID || (pj.NAPIs[0].Settings != nil) != perNAPI ||
			(perNAPI && pj.NAPIs[0].Settings.DeferHardIRQs != 2) || (g.atLeast(6, 14) && !pj.NAPIs[0].XSK) {
			p.cmd.Process.Kill()
			t.Fatalf("probe's queue 0 while rxdrop -B runs: %+v, want NAPI %d, its settings (6.13: defer-hard-irqs 2) and (6.14) the socket", pj.NAPIs, napiID)
		}
		t.Logf("probe's queue 0: %+v", pj.NAPIs[0])
	}
	s0 := softirqs()
	g.send(t)
	s1 := softirqs()
	time.Sleep(500 * time.Millisecond)
	p.signal(t, syscall.SIGINT)
	r := p.wait(t)
	if r.code != 0 || !strings.Contains(r.stdout, "busy-poll: ") || !strings.Contains(r.stdout, said) {
		t.Errorf("rxdrop -B: want exit 0 and the change said (%q):\n%s", said, r)
	}
	if got := now(); !slices.Equal(got, before) {
		t.Errorf("after Ctrl-C, %s has %+v, want %+v back", g.rx, got, before)
	}

	// The same frames without -B, for the softirqs they cost.
	q := g.start(t, "rxdrop", "-i", g.rx, "-n", "200ms")
	if !q.waitOutput(60*time.Second, false, func(s string) bool { return strings.Contains(s, "queue cpu") }) {
		q.cmd.Process.Kill()
		t.Fatalf("rxdrop did not start:\n%s", q.wait(t))
	}
	s2 := softirqs()
	g.send(t)
	s3 := softirqs()
	q.signal(t, syscall.SIGINT)
	q.wait(t)
	// The kernel matrix reports this line (TCG: counts, not rates).
	how := "device-wide"
	if perNAPI {
		how = fmt.Sprintf("the NAPIs of the %d queues", len(napiIDs))
	}
	fmt.Printf("vmbusypoll: %s set to defer-hard-irqs %d, gro-flush-timeout %v and put back; NET_RX softirqs while %d frames arrived: %d with -B, %d without\n",
		how, want[0].defer_, want[0].gro, guestFrames, s1-s0, s3-s2)

	// kill -9: the guard puts the settings back.
	k := start("the second rxdrop -B")
	k.signal(t, syscall.SIGKILL)
	k.wait(t)
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Equal(now(), before) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if got := now(); !slices.Equal(got, before) {
		t.Errorf("10 s after kill -9, %s has %+v, want %+v back (the guard)", g.rx, got, before)
	}

	// compare's busy-poll path sets them too, guarded the same way.
	c := g.start(t, "compare", "-i", g.rx, "--paths", "xsk-drop-busy-poll", "-d", "60s")
	deadline = time.Now().Add(60 * time.Second)
	for !slices.Equal(now(), want) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if got := now(); !slices.Equal(got, want) {
		c.cmd.Process.Kill()
		t.Fatalf("while compare's xsk-drop-busy-poll runs, %s has %+v, want %+v\n%s", g.rx, got, want, c.wait(t))
	}
	c.signal(t, syscall.SIGKILL)
	c.wait(t)
	deadline = time.Now().Add(10 * time.Second)
	for !slices.Equal(now(), before) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if got := now(); !slices.Equal(got, before) {
		t.Errorf("10 s after compare was killed (-9), %s has %+v, want %+v back (the guard)", g.rx, got, before)
	}

	// txonly -B busy-polls the NAPI of its queue's receive side: set for
	// the run too, and put back on exit.
	txi, err := net.InterfaceByName(g.tx)
	if err != nil {
		t.Fatal(err)
	}
	x := g.start(t, "txonly", "-i", g.rx, "-B", "-c", "--xdp-pass", "never", "-G", txi.HardwareAddr.String(),
		"--rate", "1000", "-d", "60s", "-Q")
	deadline = time.Now().Add(60 * time.Second)
	for !slices.Equal(now(), want) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if got := now(); !slices.Equal(got, want) {
		x.cmd.Process.Kill()
		t.Fatalf("while txonly -B runs, %s has %+v, want %+v\n%s", g.rx, got, want, x.wait(t))
	}
	x.signal(t, syscall.SIGINT)
	if r := x.wait(t); r.code != 0 || !strings.Contains(r.stdout, "busy-poll: ") {
		t.Errorf("txonly -B: want exit 0 and the change said:\n%s", r)
	}
	if got := now(); !slices.Equal(got, before) {
		t.Errorf("after txonly -B ended, %s has %+v, want %+v back", g.rx, got, before)
	}
}

// netRxSoftirqs sums NET_RX of /proc/softirqs over the CPUs.
func netRxSoftirqs(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/softirqs")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && f[0] == "NET_RX:" {
			var sum uint64
			for _, v := range f[1:] {
				var n uint64
				for _, c := range v {
					n = n*10 + uint64(c-'0')
				}
				sum += n
			}
			return sum
		}
	}
	t.Fatal("no NET_RX in /proc/softirqs")
	return 0
}

// TestGuestThreadedBusyPoll: rxdrop --threaded-busy-poll puts the NAPI of
// each receive queue in threaded busy-poll mode, so that its thread polls
// it; every frame sent is counted, and the modes are back after Ctrl-C and
// after kill -9 (the guard). A kernel without the mode (before Linux 6.19)
// is refused before anything starts, in a line that names it and
// --busy-poll. Every queue: the frames' flow lands on one the test cannot
// choose.
func TestGuestThreadedBusyPoll(t *testing.T) {
	g := newGuest(t)
	args := []string{"rxdrop", "-i", g.rx, "--threaded-busy-poll", "--json", "-n", "200ms"}
	if err := netdev.ProbeThreadedBusyPoll(); err != nil {
		r := g.run(t, time.Minute, append(args, "-d", "1s")...)
		if r.code == 0 || !strings.Contains(r.stderr, "no threaded busy polling") || !strings.Contains(r.stderr, "--busy-poll") {
			t.Fatalf("rxdrop --threaded-busy-poll on Linux %d.%d (%v): want a refusal naming it and --busy-poll:\n%s", g.kernel[0], g.kernel[1], err, r)
		}
		privtest.Unsupported(t, "%v; rxdrop --threaded-busy-poll refuses, naming it", err)
	}
	ifi, err := net.InterfaceByName(g.rx)
	if err != nil {
		t.Fatal(err)
	}
	info, err := netdev.Lookup(g.rx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint32
	for q := range info.RxQueues {
		rq, err := netdev.RxQueueInfo(ifi.Index, q)
		if err != nil || rq.NAPIID == 0 {
			t.Fatalf("queue %d of %s: %+v, %v: a kernel with threaded busy polling links virtio_net's queues to their NAPIs", q, g.rx, rq, err)
		}
		ids = append(ids, rq.NAPIID)
	}
	modes := func() []netdev.NAPI {
		t.Helper()
		var out []netdev.NAPI
		for _, id := range ids {
			n, _, err := netdev.NAPIByID(id)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, n)
		}
		return out
	}
	same := func(a, b []netdev.NAPI) bool {
		for i := range a {
			if a[i].Threaded != b[i].Threaded {
				return false
			}
		}
		return true
	}
	before := modes()
	for _, n := range before {
		if n.Threaded == netdev.NAPIThreadedBusyPoll {
			t.Fatalf("NAPI %d is in threaded busy-poll mode already: the test cannot tell a change", n.ID)
		}
	}
	start := func(what string) *proc {
		t.Helper()
		p := g.start(t, args...)
		running(t, p, what)
		for _, m := range modes() {
			if m.Threaded != netdev.NAPIThreadedBusyPoll || m.PID == 0 {
				p.cmd.Process.Kill()
				t.Fatalf("while %s runs, NAPI %d: %+v, want threaded busy-poll with a thread\n%s", what, m.ID, m, p.wait(t))
			}
		}
		return p
	}

	p := start("rxdrop --threaded-busy-poll")
	s0 := netRxSoftirqs(t)
	g.send(t)
	s1 := netRxSoftirqs(t)
	var s xskSummary
	r := stop(t, p, "rxdrop --threaded-busy-poll", &s)
	counted(t, "rxdrop --threaded-busy-poll", s.RxPackets, s.XDPStats.Drops())
	if want := fmt.Sprintf("threaded-busy-poll: queue 0's NAPI %d: its thread (pid ", ids[0]); !strings.Contains(r.stderr, want) {
		t.Errorf("rxdrop --threaded-busy-poll does not say %q:\n%s", want, r)
	}
	if got := modes(); !same(got, before) {
		t.Errorf("after Ctrl-C, the NAPIs are %+v, want their threaded modes %+v back", got, before)
	}
	// The kernel matrix reports this line (TCG: counts, not rates).
	fmt.Printf("vmbusypoll: threaded: the NAPIs of %d queues polled by their threads (threaded busy-poll) and put back; %d of %d frames received; NET_RX softirqs while they arrived: %d\n",
		len(ids), s.RxPackets, guestFrames, s1-s0)

	k := start("the second rxdrop --threaded-busy-poll")
	k.signal(t, syscall.SIGKILL)
	k.wait(t)
	deadline := time.Now().Add(10 * time.Second)
	for !same(modes(), before) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if got := modes(); !same(got, before) {
		t.Errorf("10 s after kill -9, the NAPIs are %+v, want their threaded modes %+v back (the guard)", got, before)
	}
}
