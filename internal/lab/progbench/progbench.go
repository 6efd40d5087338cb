//go:build linux

// Package progbench measures what each of xdpeng's BPF programs costs per
// packet, with BPF_PROG_TEST_RUN: the kernel runs the program on one frame
// repeat times in a loop and reports the mean time per run. No device, no
// driver, no memory traffic beyond the one frame: it is the program's own
// cost, the figure xdp_perf-style benchmarks quote (~15 ns for XDP_DROP on
// the mailing list's machine), and what adding a feature to a program costs.
//
// The kernel reports whole nanoseconds per run (the loop's time divided by
// the runs, truncated), too coarse for programs of 6 to 10 ns whose
// differences are a nanosecond or less. So each call is also timed from
// userspace: the thread's CPU time (CLOCK_THREAD_CPUTIME_ID) around the
// system call. Over 10^7 runs the call's fixed cost (copying the frame in
// and out, some microseconds) is below a thousandth of a nanosecond per
// run, and the time per run reads to a tenth of a nanosecond. The thread's
// CPU time, not the wall clock: the kernel's loop lets other threads run
// when they need the CPU, and leaves their time out of its own figure,
// whole ticks of it (4 ms at HZ=250, 0.4 ns a run over 10^7 runs).
package progbench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/engine/packet"
)

// The programs Run knows, in the order they are shown.
const (
	XskRedirect         = "xsk-redirect"          // steering program as deployed, empty XSKMAP (frames fall to XDP_PASS)
	XskRedirectCounters = "xsk-redirect-counters" // the same with per-queue counters
	XskRedirectFilter   = "xsk-redirect-filter"   // the same with the UDP port filter (the frame matches)
	Drop                = "drop"                  // bare XDP_DROP
	DropCounters        = "drop-counters"         // XDP_DROP with per-queue counters
	Pass                = "pass"                  // bare XDP_PASS
	TX                  = "tx"                    // swap MACs, XDP_TX
	CountProto          = "count-proto"           // parse to the IP protocol, count it, XDP_DROP
	TCDrop              = "tc-drop"               // tc ingress TC_ACT_SHOT (a SCHED_CLS test run, on an skb)
)

// Programs lists every program name Run accepts.
var Programs = []string{XskRedirect, XskRedirectCounters, XskRedirectFilter, Drop, DropCounters, Pass, TX, CountProto, TCDrop}

// udpPort is the destination port of the test frame, and of the filter.
const udpPort = 9999

// Config says what to measure.
type Config struct {
	Programs []string // names from Programs; empty means all
	Sizes    []int    // frame sizes without FCS, 60..1514; empty means 64 and 1500
	Repeat   int      // runs per measurement; 0 means DefaultRepeat
	Rounds   int      // measurements per program and size, the median is kept; 0 means 5
	// CPU pins the measuring thread; -1 leaves it where the scheduler puts it.
	CPU int
	// PacketOps are the packet operations (bpf.PacketOps' names) each
	// program that takes one (drop, drop-counters, pass, tx) is measured
	// with, one result each; empty measures each with its default
	// (no-touch; swap-macs for tx). LoadBytes measures each operation
	// that reads the frame with load-bytes too.
	PacketOps []string
	LoadBytes bool
}

// unit is one program as measured: a program, and for one that takes
// them a packet operation and load mode.
type unit struct {
	program string
	op      string // "" is the program's default
	lb      bool
}

// label names u as progbench shows it: "drop", "drop -p parse-ip",
// "drop -p parse-ip -l load-bytes".
func (u unit) label() string {
	s := u.program
	if u.op != "" {
		s += " -p " + u.op
	}
	if u.lb {
		s += " -l load-bytes"
	}
	return s
}

// takesOp reports whether program applies a packet operation.
func takesOp(program string) bool {
	return program == Drop || program == DropCounters || program == Pass || program == TX
}

// units are what cfg measures, in order.
func (cfg *Config) units() []unit {
	var out []unit
	for _, p := range cfg.Programs {
		if len(cfg.PacketOps) == 0 || !takesOp(p) {
			out = append(out, unit{program: p})
			continue
		}
		for _, op := range cfg.PacketOps {
			out = append(out, unit{program: p, op: op})
			if cfg.LoadBytes && op != string(bpf.NoTouch) {
				out = append(out, unit{program: p, op: op, lb: true})
			}
		}
	}
	return out
}

// Labels names what Run measures, in order, as Result.Label does: after
// Validate.
func (cfg *Config) Labels() []string {
	var out []string
	for _, u := range cfg.units() {
		out = append(out, u.label())
	}
	return out
}

// DefaultRepeat makes one measurement take some tens of milliseconds, long
// enough that the syscall's fixed cost disappears in the mean, at a tenth
// of a nanosecond.
const DefaultRepeat = 10_000_000

// Result is one program at one frame size.
type Result struct {
	Program string `json:"program"`
	// PacketOp is the packet operation the program applied, where
	// Config.PacketOps named them ("" is the program's default);
	// LoadBytes whether it read the frame with load-bytes.
	PacketOp  string `json:"packet_operation,omitempty"`
	LoadBytes bool   `json:"load_bytes,omitempty"`
	Size      int    `json:"size"`
	// Ns is the median over the rounds of the time per run timed from
	// userspace, to a tenth of a nanosecond; QuietNs the lower quartile
	// of the rounds: the machine's quiet phases, the figure closest to
	// the program's own cost on a shared host. UserRounds are each
	// round's figure (to a hundredth), for the spread.
	Ns         float64   `json:"ns"`
	QuietNs    float64   `json:"quiet_ns"`
	UserRounds []float64 `json:"user_rounds_ns"`
	// KernelNs and KernelQuietNs are the same of the kernel's own figure,
	// whole nanoseconds per run (a median of an even number of rounds
	// can end in .5), and Rounds each round's.
	KernelNs      float64   `json:"kernel_ns"`
	KernelQuietNs float64   `json:"kernel_quiet_ns"`
	Rounds        []float64 `json:"kernel_rounds_ns"`
	// Repeat is how many runs each round made.
	Repeat int `json:"repeat"`
	// Verdict is the program's return value on the frame (XDP or TC
	// action), VerdictName its name (XDP_DROP, TC_ACT_SHOT, ...).
	Verdict     uint32 `json:"verdict"`
	VerdictName string `json:"verdict_name"`
}

// Label names what r measured: "drop", "drop -p parse-ip -l load-bytes".
func (r Result) Label() string { return unit{r.Program, r.PacketOp, r.LoadBytes}.label() }

// VerdictName names what program returned: an XDP action, or a TC action
// for tc-drop; the number itself where it has no name.
func VerdictName(program string, v uint32) string {
	names := []string{"XDP_ABORTED", "XDP_DROP", "XDP_PASS", "XDP_TX", "XDP_REDIRECT"}
	if program == TCDrop {
		names = []string{"TC_ACT_OK", "TC_ACT_RECLASSIFY", "TC_ACT_SHOT", "TC_ACT_PIPE", "TC_ACT_STOLEN", "TC_ACT_QUEUED", "TC_ACT_REPEAT", "TC_ACT_REDIRECT", "TC_ACT_TRAP"}
	}
	if int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprint(v)
}

// Validate checks cfg and fills in defaults.
func (cfg *Config) Validate() error {
	if len(cfg.Programs) == 0 {
		cfg.Programs = Programs
	}
	for _, p := range cfg.Programs {
		if !slices.Contains(Programs, p) {
			return fmt.Errorf("unknown program %q (known: %s)", p, strings.Join(Programs, ", "))
		}
	}
	if len(cfg.Sizes) == 0 {
		cfg.Sizes = []int{64, 1500}
	}
	for _, s := range cfg.Sizes {
		if s < packet.MinFrameSize || s > packet.MaxFrameSize {
			return fmt.Errorf("frame size %d out of range %d..%d", s, packet.MinFrameSize, packet.MaxFrameSize)
		}
	}
	if cfg.Repeat == 0 {
		cfg.Repeat = DefaultRepeat
	}
	if cfg.Repeat < 1 || cfg.Repeat > 1<<31 {
		return fmt.Errorf("repeat %d out of range 1..%d", cfg.Repeat, 1<<31)
	}
	if cfg.Rounds == 0 {
		cfg.Rounds = 5
	}
	if cfg.Rounds < 1 {
		return fmt.Errorf("rounds %d: need at least 1", cfg.Rounds)
	}
	for _, op := range cfg.PacketOps {
		if _, err := bpf.ParsePacketOp(op); err != nil {
			return err
		}
	}
	if cfg.LoadBytes && !slices.ContainsFunc(cfg.PacketOps, func(op string) bool { return op != string(bpf.NoTouch) }) {
		return errors.New("load-bytes is how a packet operation reads the frame: name one that reads it (read-data, parse-ip, swap-macs)")
	}
	if len(cfg.PacketOps) > 0 && !slices.ContainsFunc(cfg.Programs, takesOp) {
		return fmt.Errorf("packet operations are for %s, %s, %s and %s: none of them is measured", Drop, DropCounters, Pass, TX)
	}
	return nil
}

// Run measures every program of cfg at every size, calling each (if not
// nil) as soon as a result is known, and returns them all. It stops early,
// with ctx's error, when ctx is done.
func Run(ctx context.Context, cfg Config, each func(Result)) ([]Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// The kernel times runs on the calling thread: keep it one thread,
	// and on one CPU if asked, so rounds are comparable.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if cfg.CPU >= 0 {
		var old, set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &old); err != nil {
			return nil, fmt.Errorf("get CPU affinity: %w", err)
		}
		set.Set(cfg.CPU)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return nil, fmt.Errorf("pin to CPU %d: %w", cfg.CPU, err)
		}
		defer unix.SchedSetaffinity(0, &old)
	}

	// Every program is loaded first and the rounds go round-robin over
	// programs and sizes, so the machine's quiet and noisy moments fall on
	// all of them alike.
	units := cfg.units()
	progs := make([]*ebpf.Program, len(units))
	for i, u := range units {
		prog, closeProg, err := load(u)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", u.label(), err)
		}
		defer closeProg()
		progs[i] = prog
	}
	frames := make([][]byte, len(cfg.Sizes))
	for i, size := range cfg.Sizes {
		f, err := Frame(size)
		if err != nil {
			return nil, err
		}
		frames[i] = f
	}
	results := make([]Result, 0, len(progs)*len(frames))
	for _, u := range units {
		for _, size := range cfg.Sizes {
			results = append(results, Result{Program: u.program, PacketOp: u.op, LoadBytes: u.lb, Size: size, Repeat: cfg.Repeat})
		}
	}
	for range cfg.Rounds {
		for i, prog := range progs {
			for j, frame := range frames {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				r := &results[i*len(frames)+j]
				start, err := threadTime()
				if err != nil {
					return nil, err
				}
				verdict, per, err := prog.Benchmark(frame, cfg.Repeat, nil)
				if err != nil {
					return nil, fmt.Errorf("%s at %d bytes: %w", r.Label(), r.Size, err)
				}
				end, err := threadTime()
				if err != nil {
					return nil, err
				}
				took := end - start
				r.Verdict, r.VerdictName = verdict, VerdictName(r.Program, verdict)
				r.Rounds = append(r.Rounds, float64(per)/float64(time.Nanosecond))
				r.UserRounds = append(r.UserRounds, round(float64(took.Nanoseconds())/float64(cfg.Repeat), 100))
			}
		}
	}
	for i := range results {
		r := &results[i]
		r.Ns, r.QuietNs = round(Median(r.UserRounds), 10), round(quartile(r.UserRounds), 10)
		r.KernelNs, r.KernelQuietNs = Median(r.Rounds), quartile(r.Rounds)
		if each != nil {
			each(results[i])
		}
	}
	return results, nil
}

// threadTime is the CPU time the calling thread has used
// (CLOCK_THREAD_CPUTIME_ID): unlike the wall clock, it leaves out the time
// other threads had the CPU while the kernel's loop let them run.
func threadTime() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, fmt.Errorf("read the thread's CPU time: %w", err)
	}
	return time.Duration(ts.Nano()), nil
}

// Delta is what a program costs over a bare XDP_DROP at the same size.
type Delta struct {
	Program   string `json:"program"`
	PacketOp  string `json:"packet_operation,omitempty"`
	LoadBytes bool   `json:"load_bytes,omitempty"`
	Size      int    `json:"size"`
	// Ns is QuietNs of the program - QuietNs of drop, to a tenth of a
	// nanosecond; KernelNs the same of the kernel's whole nanoseconds.
	Ns       float64 `json:"ns_over_drop"`
	KernelNs float64 `json:"kernel_ns_over_drop"`
}

// Label names what d measured, as Result.Label.
func (d Delta) Label() string { return unit{d.Program, d.PacketOp, d.LoadBytes}.label() }

// bare reports whether r is a bare XDP_DROP: drop with no packet
// operation.
func (r Result) bare() bool {
	return r.Program == Drop && (r.PacketOp == "" || r.PacketOp == string(bpf.NoTouch)) && !r.LoadBytes
}

// OverDrop returns, for every result that has a bare Drop result at the
// same size, the difference of their QuietNs (and KernelQuietNs). On a VM a slow
// phase of the host stretches every run, the costlier program most (drop
// 22 -> 27 ns, xsk-redirect 28 -> 36 ns here), so medians and even
// per-round differences grow with it, while the lower quartiles come from
// the quiet phases, which Run's round-robin order gives every program
// alike.
func OverDrop(results []Result) []Delta {
	drop := map[int]Result{}
	for _, r := range results {
		if r.bare() && len(r.Rounds) > 0 {
			drop[r.Size] = r
		}
	}
	var out []Delta
	for _, r := range results {
		d, ok := drop[r.Size]
		if !ok || r.bare() || len(r.Rounds) == 0 {
			continue
		}
		out = append(out, Delta{Program: r.Program, PacketOp: r.PacketOp, LoadBytes: r.LoadBytes, Size: r.Size,
			Ns:       round(quartile(r.UserRounds)-quartile(d.UserRounds), 10),
			KernelNs: quartile(r.Rounds) - quartile(d.Rounds)})
	}
	return out
}

// round rounds v to 1/per: round(v, 10) to a tenth.
func round(v, per float64) float64 { return math.Round(v*per) / per }

// quartile returns the lower quartile of v (nearest rank), 0 if v is empty.
func quartile(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[(len(s)-1)/4]
}

// Median returns the median of v, 0 if v is empty.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// load loads u's program and returns it with what releases it.
func load(u unit) (*ebpf.Program, func(), error) {
	name := u.program
	switch name {
	case XskRedirect, XskRedirectCounters, XskRedirectFilter:
		opts := bpf.XskOptions{Counters: name == XskRedirectCounters}
		if name == XskRedirectFilter {
			opts.Match = bpf.XskMatch{IPProto: unix.IPPROTO_UDP, DstPort: udpPort}
		}
		x, err := bpf.NewXskRedirect(opts)
		if err != nil {
			return nil, nil, err
		}
		return x.Program, func() { x.Close() }, nil
	}
	kind, opts := map[string]bpf.KernProgram{
		Drop: bpf.Drop, DropCounters: bpf.Drop, Pass: bpf.Pass, TX: bpf.TX, CountProto: bpf.DropCountProto, TCDrop: bpf.TCDrop,
	}[name], bpf.KernOptions{Counters: name == DropCounters, PacketOp: bpf.PacketOp(u.op), LoadBytes: u.lb}
	if kind == "" {
		return nil, nil, errors.New("unknown program")
	}
	k, err := bpf.LoadKern(kind, opts)
	if err != nil {
		return nil, nil, err
	}
	return k.Program, func() { k.Close() }, nil
}

// Frame builds the test frame: UDP over IPv4, 198.18.0.1 to 198.18.0.2,
// destination port 9999, size bytes without FCS.
func Frame(size int) ([]byte, error) {
	buf := make([]byte, size)
	_, err := packet.BuildUDP(buf, packet.UDPConfig{
		SrcMAC:  net.HardwareAddr{0x02, 0, 0, 0, 0, 1},
		DstMAC:  net.HardwareAddr{0x02, 0, 0, 0, 0, 2},
		SrcIP:   netip.MustParseAddr("198.18.0.1"),
		DstIP:   netip.MustParseAddr("198.18.0.2"),
		SrcPort: 9,
		DstPort: udpPort,
		Size:    size,
	})
	if err != nil {
		return nil, fmt.Errorf("build %d-byte frame: %w", size, err)
	}
	return buf, nil
}
