//go:build linux

// Package compare measures receive paths side by side on the same traffic:
// the in-kernel XDP and tc drops, xdpeng's AF_XDP engine, the same rxdrop
// written on github.com/asavie/xdp, an AF_PACKET TPACKET_V3 ring, and the
// forwarding paths (Linux bridge, XDP redirect through a devmap).
//
// Each path is set up on the device under test, measured, and torn down
// before the next one starts, so that every path sees the same offered load
// and leaves the interface as it found it (every program detached, every
// socket closed) on every exit path.
//
// # What is measured
//
// Mpps is the frames the path received, counted by the path itself (its BPF
// counters, the engine's rx counters, the AF_PACKET blocks) or, for
// forwarding paths, where the frames come out (an XDP counter on the
// generator side of the egress link), divided by the time between two
// samples taken inside the generator's run, after a warm-up and before its
// end, so that start-up and drain do not dilute the rate.
//
// CPU is read from /proc/stat over the same window: every busy tick of the
// receiver CPUs that run no generator, plus the irq and softirq ticks of the
// other CPUs, where the kernel runs a veth's receive work (NAPI) for the
// receiver when the generator sends from there (layout A). ns per packet is
// that CPU time divided by the frames received in the window. The kernel
// here samples CPU time at each tick (no IRQ_TIME_ACCOUNTING), so a 2.5 s
// window at 250 Hz resolves about 0.2% of a CPU.
//
// Loss is accounted over the whole run: sent = received + every counted drop
// reason + unexplained. On a test bed the last sample is taken after the
// counters have come to rest with the generator stopped, so no frame is in
// flight and unexplained is 0 when every drop is counted; a path whose
// counters do not come to rest fails.
//
// # Two hosts
//
// With Config.Remote the device under test is another host, reached over
// ssh (package remote): each path runs there as xdpeng's own command for it
// (kern, rxdrop, l2fwd, fwd) with --json, beside `xdpeng stats --cpu` on the
// DUT's ports, both bounded by their own duration, and their JSON lines
// come back as they go. The generator and the sinks run here, on the
// tester's ports cabled to the DUT's. Each row joins the two: sent is the
// tester's, received and the drops the DUT's own counters (or the sinks'
// here), and the frames the tester's port sent that the DUT's port never
// counted are named lost_on_wire. Only the tester's clock times a frame
// (latency), and the DUT's CPU figures come from its own /proc/stat.
package compare

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/internal/cpuset"
	labenv "github.com/xdpeng/xdpeng/internal/lab/env"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/kern"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
)

// ErrDefaultRoute is returned for an Interface that carries a default route
// of its network namespace: every path takes all of that interface's
// traffic while it runs (the drop paths drop it), which would cut the host
// off from its network and its users for the whole comparison.
var ErrDefaultRoute = errors.New("it carries the default route")

// Family groups the paths that do the same job on the same traffic.
type Family string

// The families: drop every frame, or forward every frame to another port.
const (
	Drop    Family = "drop"
	Forward Family = "forward"
)

// PathInfo describes one path.
type PathInfo struct {
	Name   string
	Family Family
	// Doc says what the path is and where its frames are counted.
	Doc string
	// Testbed is set for paths that need a test bed (forwarding: they
	// count where frames come out, on the generator side).
	Testbed bool
	// Needs names a program the path runs that xdpeng does not bring
	// (dpdk-testpmd, xdpsock, xdp-bench): such a path runs only when asked for by name, and
	// is skipped with a note where the program is missing.
	Needs string
	// Remote says that the path runs on a DUT that is another host
	// (Config.Remote): an xdpeng command does its job there.
	Remote bool
	// Generator says that the path measures another generator than
	// xdpeng's (xdp-trafficgen, trafgen) into the xdp-drop receiver: its
	// row never says whether xdpeng's generator bound the run.
	Generator bool
}

// PacketOpPaths are the paths Config.PacketOp and LoadBytes apply to: the
// in-kernel XDP paths.
var PacketOpPaths = []string{"xdp-drop", "xdp-drop-generic", "xdp-tx", "xdp-redirect", "xdp-redirect-generic", "xdp-redirect-multi", "xdp-redirect-cpu"}

// checkPacketOp checks PacketOp and LoadBytes against each other and the
// paths.
func (c *Config) checkPacketOp() error {
	switch {
	case c.PacketOp == "" && !c.LoadBytes:
		return nil
	case c.PacketOp != "" && !slices.Contains(kern.PacketOps, c.PacketOp):
		return fmt.Errorf("unknown packet operation %q (want %s)", c.PacketOp, strings.Join(kern.PacketOps, ", "))
	case c.LoadBytes && (c.PacketOp == "" || c.PacketOp == "no-touch"):
		return errors.New("load-bytes is how a packet operation reads the frame: name one that reads it (read-data, parse-ip, swap-macs)")
	case !slices.ContainsFunc(c.Paths, func(p string) bool { return slices.Contains(PacketOpPaths, p) }):
		return fmt.Errorf("a packet operation applies to the in-kernel XDP paths (%s), and none of them runs", strings.Join(PacketOpPaths, ", "))
	}
	if c.LoadBytes && c.Remote == nil {
		// Where the probe cannot be made (no privilege), the paths say.
		if err := bpf.HaveLoadBytes(); errors.Is(err, bpf.ErrNoLoadBytes) {
			return err
		}
	}
	return nil
}

// namedOnly are paths that, like those with PathInfo.Needs, run only when
// asked for by name: variants of another path that bench measures.
var namedOnly = map[string]bool{"xsk-drop-busy-poll": true}

// paths lists every path in the order tables show them.
var paths = []PathInfo{
	{"xdp-drop", Drop, "XDP_DROP in the driver (native XDP), counted by the program", false, "", true, false},
	{"xdp-drop-generic", Drop, "XDP_DROP on the skb (generic XDP), counted by the program", false, "", true, false},
	{"tc-drop", Drop, "tc ingress TC_ACT_SHOT (TCX), counted by the program", false, "", true, false},
	{"xsk-drop", Drop, "xdpeng engine, DropHandler: AF_XDP rxdrop, counted by the engine", false, "", true, false},
	{Name: "xsk-drop-busy-poll", Family: Drop,
		Doc: "xsk-drop with --busy-poll: SO_PREFER_BUSY_POLL, recvfrom runs the driver's NAPI (where the socket has no NAPI ID to poll, veth, the engine waits as adaptive and says so)"},
	{"xdp-tx", Drop, "XDP_TX in the driver (native XDP): swap MACs, send back; received = frames that came back out to the generator side (test bed, two hosts) or the program's count (NIC)", false, "", true, false},
	{"xsk-l2fwd", Drop, "xdpeng engine, L2FwdHandler: swap MACs, send back; received = frames that came back out to the generator side (test bed, two hosts) or the engine's tx completions (NIC)", false, "", true, false},
	{"asavie-drop", Drop, "the same rxdrop on github.com/asavie/xdp v0.3.3, its default loop, 4096 frames, rings of 2048", false, "", false, false},
	{"af-packet", Drop, "AF_PACKET TPACKET_V3 mmap ring, count each block's packets and release it", false, "", false, false},
	{"xdp-redirect-cpu", Drop, "XDP redirect to the receiver CPU through a CPUMAP (native), dropped there (xdp-bench redirect-cpu); counted by the CPUMAP's program on that CPU", false, "", false, false},
	{"bridge", Forward, "Linux bridge of dut0 and dut1, counted where frames come out (gen1)", true, "", false, false},
	{"xdp-redirect", Forward, "XDP redirect dut0 -> dut1 through a DEVMAP (native), counted at gen1", true, "", true, false},
	{"xdp-redirect-generic", Forward, "the same in generic XDP, counted at gen1", true, "", true, false},
	{"xdp-redirect-multi", Forward, "XDP broadcast redirect (DEVMAP_HASH) dut0 -> dut1 and dut2, a copy counted at each of gen1 and gen2", true, "", true, false},
	{"xsk-fwd", Forward, "xdpeng engine, fwd: AF_XDP dut0 -> dut1, the UMEM shared across the devices, counted at gen1", true, "", true, false},
	{Name: "dpdk-af-xdp", Family: Drop, Testbed: true, Needs: TestPMD,
		Doc: "DPDK's AF_XDP driver (net_af_xdp), dpdk-testpmd rxonly, its default arguments; counted at the device: veth's XDP redirects on dut0"},
	{Name: "dpdk-af-xdp-nobusy", Family: Drop, Testbed: true, Needs: TestPMD,
		Doc: "the same with busy_budget=0: no preferred busy polling"},
	{Name: "dpdk-l2fwd", Family: Drop, Testbed: true, Needs: TestPMD,
		Doc: "DPDK's AF_XDP driver, dpdk-testpmd macswap (swap MACs, send back), its default arguments; counted where the frames come back (gen0)"},
	{Name: "dpdk-l2fwd-nobusy", Family: Drop, Testbed: true, Needs: TestPMD,
		Doc: "the same with busy_budget=0"},
	{Name: "xdpsock-drop", Family: Drop, Testbed: true, Needs: Xdpsock,
		Doc: "xdpsock -r -N -c (bpf-examples): AF_XDP rxdrop, its busy loop; counted at the device: veth's XDP redirects on dut0"},
	{Name: "xdpsock-drop-poll", Family: Drop, Testbed: true, Needs: Xdpsock,
		Doc: "xdpsock -r -p: the same, waiting in poll()"},
	{Name: "xdpsock-drop-busy-poll", Family: Drop, Testbed: true, Needs: Xdpsock,
		Doc: "xdpsock -r -B -p: the same with preferred busy polling"},
	{Name: "xdpsock-l2fwd", Family: Drop, Testbed: true, Needs: Xdpsock,
		Doc: "xdpsock -l -N -c: swap MACs, send back; counted where the frames come back (gen0)"},
	{Name: "xdp-bench-xsk-drop", Family: Drop, Testbed: true, Needs: XdpBench,
		Doc: "xdp-bench xsk-drop (xdp-tools >= 1.6), its defaults; counted at the device: veth's XDP redirects on dut0"},
	{Name: "xdp-bench-xsk-drop-poll", Family: Drop, Testbed: true, Needs: XdpBench,
		Doc: "xdp-bench xsk-drop -p: the same, waiting in poll()"},
	{Name: "xdp-bench-xsk-tx", Family: Drop, Testbed: true, Needs: XdpBench,
		Doc: "xdp-bench xsk-tx, its defaults: swap MACs, send back; counted where the frames come back (gen0)"},
	{Name: "xdp-trafficgen-udp", Family: Drop, Testbed: true, Needs: XdpTrafficgen, Generator: true,
		Doc: "the generator under test: xdp-trafficgen udp on gen0, one thread, into xdp-drop's XDP_DROP on dut0 (beside xdp-drop, whose frames come from xdpeng's generator); sent counted at gen0's device"},
	{Name: "trafgen-udp", Family: Drop, Testbed: true, Needs: Trafgen, Generator: true,
		Doc: "the generator under test: netsniff-ng's trafgen on gen0, one process on CPU 0 (AF_PACKET, qdisc bypass), xdpeng's frame, into xdp-drop's XDP_DROP on dut0; sent counted at gen0 (tx_packets, tx_dropped)"},
}

// Paths returns the paths of a family, or all of them for "", that run
// without being named: not those that need a program xdpeng does not
// bring (PathInfo.Needs) nor the variants that bench names (see AllPaths).
func Paths(f Family) []PathInfo {
	var out []PathInfo
	for _, p := range paths {
		if (f == "" || p.Family == f) && p.Needs == "" && !namedOnly[p.Name] {
			out = append(out, p)
		}
	}
	return out
}

// AllPaths returns every path, those that run only when named included.
func AllPaths() []PathInfo { return append([]PathInfo(nil), paths...) }

// LookupPath returns the path called name.
func LookupPath(name string) (PathInfo, bool) {
	for _, p := range paths {
		if p.Name == name {
			return p, true
		}
	}
	return PathInfo{}, false
}

func pathNames(ps []PathInfo) []string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return names
}

// ParsePaths turns a comma-separated list into path names, in table order
// and without duplicates. An unknown name is an error that lists the valid
// ones.
func ParsePaths(list string) ([]string, error) {
	var names []string
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if _, ok := LookupPath(n); !ok {
			return nil, fmt.Errorf("unknown path %q: valid paths are %s",
				n, strings.Join(pathNames(paths), ", "))
		}
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("empty path list: give some of %s", strings.Join(pathNames(paths), ", "))
	}
	slices.SortStableFunc(names, func(a, b string) int { return pathIndex(a) - pathIndex(b) })
	return names, nil
}

func pathIndex(name string) int {
	return slices.IndexFunc(paths, func(p PathInfo) bool { return p.Name == name })
}

// Layout is where the test bed runs the DUT's receive work.
type Layout string

const (
	// LayoutA leaves the DUT's NAPI in softirq on the generator's CPU; the
	// receiver's own threads run on the DUT CPU.
	LayoutA Layout = "A"
	// LayoutB runs the DUT's NAPI threaded, pinned to the DUT CPU together
	// with the receiver's threads: one core does all the DUT's work.
	LayoutB Layout = "B"
)

// ParseLayout accepts A or B (either case).
func ParseLayout(s string) (Layout, error) {
	switch strings.ToUpper(s) {
	case "A":
		return LayoutA, nil
	case "B":
		return LayoutB, nil
	}
	return "", fmt.Errorf("layout %q: use A (DUT NAPI in softirq on the generator CPU) or B (threaded NAPI on the DUT CPU)", s)
}

// Config describes a comparison.
type Config struct {
	// Paths are the path names to run, in order (see ParsePaths).
	Paths []string
	// Duration is how long each path is measured (the generator's run on
	// a test bed).
	Duration time.Duration
	// Rate bounds the generator in frames per second; 0 is as fast as it
	// can.
	Rate uint64
	// FrameSize is the generated frame size in bytes (without FCS).
	FrameSize int
	// GenMethod is how the generator sends (gen.Method); gen.Auto, the
	// zero value, takes the fastest the kernel grants. Run resolves it.
	GenMethod gen.Method
	// GenCopies is, for the relayed methods, how many times the
	// generator's relay sends each frame its sender makes
	// (gen.Config.Copies); 0 chooses gen.DefaultCopies. Run resolves it.
	GenCopies int

	// Testbed makes a test bed for the run and removes it afterwards.
	Testbed bool
	// Bed, if set, is an existing test bed to run on instead (it is left
	// in place); its queues, CPUs and NAPI mode are used.
	Bed *testbed.Bed
	// BedName names the bed; "" picks a unique one.
	BedName string
	Layout  Layout
	// Queues is the test bed's queue count.
	Queues int
	// GenCPUs and DUTCPUs are where the generator and the receiver run;
	// nil picks the first and the last CPU.
	GenCPUs, DUTCPUs []int
	// GenRPS makes the bed steer what arrives back at the generator ends
	// (the frames l2fwd, fwd and the bridge send) to the generator CPUs
	// (testbed.Config.GenRPS), so that the DUT's CPU does not pay for the
	// generator side's stack.
	GenRPS bool

	// Interface is the receiving device when there is no test bed: every
	// path measures whatever traffic arrives there for Duration.
	Interface string
	// Queues of Interface to bind (AF_XDP paths); nil means all.
	InterfaceQueues []int
	// Force measures Interface even if it carries the default route
	// (see ErrDefaultRoute).
	Force bool

	// PacketOp is what the in-kernel XDP paths (xdp-drop, xdp-tx,
	// xdp-redirect, ...; not tc-drop) do to each frame before their
	// verdict: kern.PacketOps' names, "" each path's default (no-touch;
	// swap-macs for xdp-tx). LoadBytes makes them read the frame through
	// bpf_xdp_load_bytes. The AF_XDP paths read every frame regardless.
	PacketOp  string
	LoadBytes bool

	// Peers is a directory where the peer paths look for their tools
	// (xdpsock, xdp-bench) before PATH; "" is PATH alone.
	Peers string

	// Remote, if set, runs the paths on a DUT that is another host,
	// reached over ssh, with the generator and sinks here (see Remote).
	// Queues (InterfaceQueues) and DUTCPUs are then the DUT's.
	Remote *Remote

	// NDR, if set, also searches each path's zero-loss rate (test bed
	// or two hosts).
	NDR *NDRConfig

	// NAPIGuard, if set, makes the guard (engine.Config.NAPIGuard) of the
	// engine of each of xdpeng's AF_XDP paths on this host, for the device
	// iface, so that what busy polling sets on its NAPIs is put back even
	// if the run is killed; done ends the guard after the engine's Close.
	// It is called in the DUT's network namespace.
	NAPIGuard func(iface string) (g engine.NAPIGuard, done func() error)

	// Progress, if set, is told what is happening (one line per call).
	Progress func(msg string)
}

// Check validates c as Run would, on a copy: it changes nothing, in c or
// on the host. With Remote, the DUT's queues and CPUs are checked when the
// run reaches it.
func (c *Config) Check() error {
	d := *c
	return d.Resolve()
}

// Resolve fills in c's defaults (paths, frame size, queues, layout, CPUs,
// and a test bed's settings from Bed), then validates c as Check does.
func (c *Config) Resolve() error {
	if c.Remote != nil {
		if err := c.checkRemote(); err != nil {
			return err
		}
	}
	if c.Bed != nil {
		if c.Interface != "" {
			return errors.New("give either a test bed or an interface (-i), not both")
		}
		c.Testbed, c.Queues, c.GenCPUs, c.DUTCPUs = true, c.Bed.Queues, c.Bed.GenCPUs, c.Bed.DUTCPUs
		c.Layout = LayoutA
		if c.Bed.ThreadedNAPI {
			c.Layout = LayoutB
		}
		if n := needLinks(c.Paths); len(c.Bed.Links) < n {
			return fmt.Errorf("test bed %s has %d link(s); the paths need %d", c.Bed.Name, len(c.Bed.Links), n)
		}
	}
	if len(c.Paths) == 0 {
		c.Paths = pathNames(Paths(Drop))
		if c.Remote != nil {
			c.Paths, _ = c.Remote.Runnable(c.Paths)
		}
	}
	for _, n := range c.Paths {
		p, ok := LookupPath(n)
		if !ok {
			_, err := ParsePaths(n)
			return err
		}
		if c.Remote != nil {
			if err := c.Remote.runs(p); err != nil {
				return err
			}
			continue
		}
		if p.Testbed && !c.Testbed {
			return fmt.Errorf("path %s counts frames on a test bed's veth ends (where they come out, or at the DUT's veth counters): use --testbed", n)
		}
	}
	if err := c.checkPacketOp(); err != nil {
		return err
	}
	if c.Peers != "" {
		if st, err := os.Stat(c.Peers); err != nil || !st.IsDir() {
			return fmt.Errorf("peers directory %q: not a directory (%v): give the directory that holds xdpsock and xdp-bench", c.Peers, err)
		}
	}
	if c.Duration <= 0 {
		return fmt.Errorf("duration %v: must be positive", c.Duration)
	}
	if c.Duration < 500*time.Millisecond {
		return fmt.Errorf("duration %v is too short to measure: use at least 500ms", c.Duration)
	}
	if c.FrameSize == 0 {
		c.FrameSize = 64
	}
	if c.NDR != nil {
		if !c.Testbed && c.Remote == nil {
			return errors.New("a zero-loss search needs a generator: use a test bed (--testbed), or a DUT on another host (--dut)")
		}
		if err := c.NDR.check(); err != nil {
			return err
		}
	}
	if c.Testbed {
		if c.Interface != "" {
			return errors.New("give either a test bed or an interface (-i), not both")
		}
		if c.Layout == "" {
			c.Layout = LayoutA
		}
		if _, err := ParseLayout(string(c.Layout)); err != nil {
			return err
		}
		if c.Queues == 0 {
			c.Queues = 1
		}
		if c.Queues < 1 || c.Queues > testbed.MaxQueues {
			return fmt.Errorf("queues %d: out of range 1-%d", c.Queues, testbed.MaxQueues)
		}
	} else if c.Interface == "" && c.Remote == nil {
		return errors.New("no interface: give -i DEV, or --testbed to make a test bed")
	}
	online, err := cpuset.Online()
	if err != nil {
		return err
	}
	if (c.Testbed || c.Remote != nil) && len(c.GenCPUs) == 0 {
		c.GenCPUs = []int{online[0]}
	}
	if c.Remote != nil {
		// The DUT's CPUs are the DUT's to check (remoteEnv).
		return cpuset.CheckOnline(c.GenCPUs)
	}
	if len(c.DUTCPUs) == 0 {
		c.DUTCPUs = []int{online[len(online)-1]}
	}
	if err := cpuset.CheckOnline(append(slices.Clone(c.GenCPUs), c.DUTCPUs...)); err != nil {
		return err
	}
	if c.Layout == LayoutB {
		for _, d := range c.DUTCPUs {
			if slices.Contains(c.GenCPUs, d) {
				return fmt.Errorf("layout B needs DUT CPUs apart from the generator's: CPU %d is in both", d)
			}
		}
	}
	return nil
}

// needLinks is how many veth pairs the paths need: dut0 receives, dut1 (and
// dut2 for the broadcast redirect) forward.
func needLinks(names []string) int {
	n := 1
	for _, p := range names {
		switch p {
		case "xdp-redirect-multi":
			n = max(n, 3)
		case "bridge", "xdp-redirect", "xdp-redirect-generic", "xsk-fwd":
			n = max(n, 2)
		}
	}
	return n
}

// Setup says where the figures were measured, so that they can be
// reproduced.
type Setup struct {
	Mode      string `json:"mode"` // "testbed", "interface" or "remote" (two hosts)
	Interface string `json:"interface"`
	// DUT is the DUT of a two-host run (ssh://user@host), DUTInterfaces
	// its ports and GenInterfaces the tester's cabled to them.
	DUT           string   `json:"dut,omitempty"`
	DUTInterfaces []string `json:"dut_interfaces,omitempty"`
	GenInterfaces []string `json:"gen_interfaces,omitempty"`
	Bed           string   `json:"testbed,omitempty"`
	Layout        Layout   `json:"layout,omitempty"`
	NAPI          string   `json:"napi,omitempty"`
	Queues        int      `json:"queues"`
	FrameSize     int      `json:"frame_size,omitempty"`
	GenCPUs       []int    `json:"gen_cpus,omitempty"`
	DUTCPUs       []int    `json:"dut_cpus"`
	// GenRPS is set when the generator ends steer what they receive to
	// the generator CPUs (Config.GenRPS).
	GenRPS    bool    `json:"gen_rps,omitempty"`
	DurationS float64 `json:"duration_s"`
	Rate      uint64  `json:"rate,omitempty"`
	// GenMethod is the generator's method (gen.Method), where the run
	// drove its own traffic.
	GenMethod *gen.Method `json:"gen_method,omitempty"`
	// GenCopies is how many frames the generator sent for each its sender
	// made (gen.Config.Copies), where the run made traffic.
	GenCopies int `json:"gen_copies,omitempty"`
	// PacketOp and LoadMode are what the in-kernel XDP paths did to each
	// frame, and how they read it (dpa, load-bytes), where the run named
	// an operation (Config.PacketOp).
	PacketOp string `json:"packet_operation,omitempty"`
	LoadMode string `json:"load_mode,omitempty"`
	Kernel   string `json:"kernel,omitempty"`
	// CPUNote says what the CPU figures include.
	CPUNote string `json:"cpu_note"`
	// Env is the environment every row shares; each row's Env adds the
	// path's XDP mode.
	Env labenv.Env `json:"env"`
}

// Result is a whole comparison.
type Result struct {
	Setup Setup `json:"setup"`
	Rows  []Row `json:"rows"`
	// Notes are remarks on the run (paths left out, and why).
	Notes []string `json:"notes,omitempty"`
	// Unfinished are the paths a cancelled run did not finish, the one
	// it was measuring first; nil when it ran to the end.
	Unfinished []string `json:"unfinished,omitempty"`
	// GeneratorBound, when set, says why Mpps ranks nothing: every
	// measured row carried what the generator offered (Row.OfferBound;
	// in layout A at about one rate), so its Mpps is the generator's and
	// the paths are told apart by NsPerPacket, the receiving CPU's time
	// per frame at that rate.
	GeneratorBound string `json:"generator_bound,omitempty"`
}

// Interrupted reports whether the run was cancelled before its last path
// finished: Rows are those that did.
func (r *Result) Interrupted() bool { return len(r.Unfinished) > 0 }

// Row is one path's figures.
type Row struct {
	Path   string `json:"path"`
	Family Family `json:"family"`
	// Mpps is the frames received per second in the measurement window,
	// in millions.
	Mpps float64 `json:"mpps"`
	// NsPerPacket is the receiving side's CPU time per received frame.
	NsPerPacket float64 `json:"ns_per_packet"`
	// Sent is what the generator sent (0 without a test bed), OfferedMpps
	// its rate.
	Sent        uint64  `json:"sent"`
	OfferedMpps float64 `json:"offered_mpps,omitempty"`
	// Copies is how many frames come out per frame in (2 for the
	// broadcast redirect to two ports), so sent*copies is expected.
	Copies   int    `json:"copies"`
	Received uint64 `json:"received"`
	// Dropped is sent*copies - received, the frames lost, and Reasons
	// splits it by counter; Unexplained is what no counter accounts for
	// (negative if counters saw more than was sent).
	Dropped     uint64            `json:"dropped"`
	Reasons     map[string]uint64 `json:"drop_reasons"`
	Unexplained int64             `json:"unexplained"`
	// CPUPercent is each CPU's busy time in the window, keyed by CPU
	// number; CPU has the breakdown.
	CPUPercent map[string]float64 `json:"cpu_percent"`
	CPU        []CPUUse           `json:"cpu"`
	// WindowS and WindowPackets are the measurement window behind Mpps
	// and NsPerPacket.
	WindowS       float64 `json:"window_s"`
	WindowPackets uint64  `json:"window_packets"`
	// CountedAt says where Received is counted.
	CountedAt string `json:"counted_at"`
	// OfferBound says the path carried what the generator offered, all
	// but at most OfferBoundLoss of it (OfferBoundIdleLoss where no
	// receiver CPU was saturated): its Mpps is the generator's rate, a
	// lower bound of what the path takes, not its limit.
	OfferBound bool `json:"offer_bound,omitempty"`
	// NDRMpps is the highest rate that lost no frame in a trial of the
	// NDR search (NDR.RatePPS), PDRMpps the highest within the PDR
	// search's loss limit; both only with Config.NDR, and only when the
	// search found a rate. Trials counts the searches' trials.
	NDRMpps *float64 `json:"ndr_mpps,omitempty"`
	PDRMpps *float64 `json:"pdr_mpps,omitempty"`
	Trials  int      `json:"trials,omitempty"`
	NDR     *Search  `json:"ndr,omitempty"`
	PDR     *Search  `json:"pdr,omitempty"`
	// Env is the environment the row was measured in, with the path's
	// XDP mode.
	Env labenv.Env `json:"env"`
	// Cleanup says, for a path that runs another program (a peer tool),
	// how that program was ended (SIGINT, or SIGKILL when it did not end)
	// and what it left on the device that was removed after it.
	Cleanup string `json:"cleanup,omitempty"`
	// Error is set when the path could not be run.
	Error string `json:"error,omitempty"`
}

// Failed reports whether any row has an error.
func (r *Result) Failed() []string {
	var bad []string
	for _, row := range r.Rows {
		if row.Error != "" {
			bad = append(bad, row.Path)
		}
	}
	return bad
}

// Row returns the row of path name.
func (r *Result) Row(name string) (Row, bool) {
	for _, row := range r.Rows {
		if row.Path == name {
			return row, true
		}
	}
	return Row{}, false
}

func (c *Config) progress(format string, args ...any) {
	if c.Progress != nil {
		c.Progress(fmt.Sprintf(format, args...))
	}
}

// Run runs every path of cfg in turn and returns their rows. With
// cfg.Testbed it makes a test bed first and removes it before returning,
// also when ctx is cancelled. A path that fails gets a row with Error and
// the others still run; Run itself fails only on bad input, when the bed
// cannot be made or removed, or when ctx is cancelled: then res holds the
// rows of the paths that finished, and Unfinished the others.
func Run(ctx context.Context, cfg Config) (res Result, err error) {
	if err := cfg.Resolve(); err != nil {
		return res, err
	}
	res.Setup = Setup{
		Queues: cfg.Queues, FrameSize: cfg.FrameSize, GenCPUs: cfg.GenCPUs, DUTCPUs: cfg.DUTCPUs,
		DurationS: cfg.Duration.Seconds(), Rate: cfg.Rate, Kernel: kernelRelease(),
	}
	if cfg.PacketOp != "" {
		res.Setup.PacketOp, res.Setup.LoadMode = cfg.PacketOp, "dpa"
		if cfg.LoadBytes {
			res.Setup.LoadMode = "load-bytes"
		}
	}
	e, done, err := prepare(ctx, &cfg, &res.Setup)
	defer func() { err = errors.Join(err, done()) }()
	if err != nil {
		return res, err
	}
	if e.remote != nil {
		// The DUT's commands count the tracepoints there (-e).
		defer func() { res.Notes = append(res.Notes, e.remote.notes...) }()
	} else if werr := e.watchErrors(); werr != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("the xdp tracepoints are not counted here (%v): the drops they would explain by errno or action show in veth_rx_drops or as unexplained", werr))
	} else {
		defer e.errs.Close()
		if m := e.errs.Missing(); len(m) > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("xdp tracepoints not counted on this kernel: %v", m))
		}
	}

	for i, name := range cfg.Paths {
		if err := ctx.Err(); err != nil {
			res.Unfinished = cfg.Paths[i:]
			return res, err
		}
		info, _ := LookupPath(name)
		row, perr := measure(ctx, e, &cfg, info, res.Setup.Env)
		if perr != nil {
			if ctx.Err() != nil {
				res.Unfinished = cfg.Paths[i:]
				return res, ctx.Err()
			}
			if se := (*SkipError)(nil); errors.As(perr, &se) {
				res.Notes = append(res.Notes, se.Error())
				cfg.progress("%s", se)
				continue
			}
			row.Error = perr.Error()
			cfg.progress("%-20s failed: %v", name, perr)
		}
		if row.Cleanup != "" {
			res.Notes = append(res.Notes, row.Path+": "+row.Cleanup)
		}
		res.Rows = append(res.Rows, row)
	}
	markOfferBound(&res)
	if traced(res.Rows) {
		res.Notes = append(res.Notes, "xdp_redirect_err_*, xdp_exception_*, xdp_devmap_xmit_*: losses of the DUT's receiving device by errno or action, "+
			"from the xdp tracepoints (xdpeng's -e); veth counts a failed redirect or XDP_TX in native mode as an rx drop too, so veth_rx_drops lists only the rest")
	}
	return res, nil
}

// OfferBoundLoss is the share of the frames sent that a path may lose and
// still count as having carried all it was offered (Row.OfferBound).
const OfferBoundLoss = 0.01

// OfferBoundIdleLoss is the share of the frames sent that a path whose
// receiver CPUs were never saturated (all below DUTBusy) may lose and still
// count as having carried what it was offered: the frames a burst lost
// while the DUT had time to spare.
const OfferBoundIdleLoss = 0.05

// DUTBusy is the busy share of a receiver CPU, in percent, from which it
// counts as saturated.
const DUTBusy = 90.0

// dutIdle reports whether none of the row's receiver CPUs (role "dut",
// not one shared with the generator) was saturated.
func dutIdle(row *Row) bool {
	seen := false
	for _, u := range row.CPU {
		if u.Role != "dut" {
			continue
		}
		seen = true
		if u.Busy >= DUTBusy {
			return false
		}
	}
	return seen
}

// GeneratorBoundSpread is how far apart, as a share of the lowest, the
// rows' Mpps may be in layout A for a run whose every row is offer-bound
// to be generator-bound (Result.GeneratorBound).
const GeneratorBoundSpread = 0.1

// markOfferBound sets each measured row's OfferBound and, when every
// measured row is bound so (in layout A also at rates within
// GeneratorBoundSpread of each other), the result's GeneratorBound; a row
// of another generator (PathInfo.Generator) is neither.
func markOfferBound(res *Result) {
	if !res.Setup.generated() {
		return
	}
	measured, bound := 0, 0
	lo, hi := math.Inf(1), 0.0
	for i := range res.Rows {
		row := &res.Rows[i]
		want := row.Sent * uint64(max(row.Copies, 1))
		if info, _ := LookupPath(row.Path); info.Generator || row.Error != "" || want == 0 || row.WindowPackets == 0 {
			continue
		}
		measured++
		lost := float64(row.Dropped) / float64(want)
		row.OfferBound = lost <= OfferBoundLoss || lost <= OfferBoundIdleLoss && dutIdle(row)
		if row.OfferBound {
			bound++
			lo, hi = min(lo, row.Mpps), max(hi, row.Mpps)
		}
	}
	// In layout A the DUT's softirq shares the generator's CPU, so the
	// offer follows the path: rows that each took all they were offered
	// at rates far apart were bound by the paths, not the generator.
	if measured < 2 || bound < measured || res.Setup.Layout == LayoutA && hi > (1+GeneratorBoundSpread)*lo {
		return
	}
	method := ""
	if m := res.Setup.GenMethod; m != nil {
		method = ", method " + m.String()
		if c := res.Setup.GenCopies; c > 1 {
			method += fmt.Sprintf(", %d copies", c)
		}
	}
	offer := fmt.Sprintf("the generator's full rate (%.2f-%.2f Mpps%s)", lo, hi, method)
	if res.Setup.Rate > 0 {
		offer = fmt.Sprintf("the offered rate (%s)", offered(res.Setup.Rate))
	}
	res.GeneratorBound = fmt.Sprintf("every path carried %s, with at most %.0f%% lost (%.0f%% where the receiving CPU had time to spare): "+
		"Mpps is the generator's, not the paths'; ns/pkt, the receiving CPU's time per frame at that rate, ranks them", offer, OfferBoundLoss*100, OfferBoundIdleLoss*100)
}

// prepare opens the place the paths of cfg run in (cfg.Bed, a test bed it
// makes, the DUT of cfg.Remote, or cfg.Interface) and fills in what setup
// says about it. done removes a bed it made, and must be called also when
// prepare fails; it is a no-op when there is nothing to remove.
func prepare(ctx context.Context, cfg *Config, setup *Setup) (e *env, done func() error, err error) {
	done = func() error { return nil }
	if cfg.Remote != nil || cfg.Bed != nil || cfg.Testbed {
		// One probe up front: every row is sent the same way.
		m, err := gen.ChooseMethod(cfg.GenMethod)
		if err != nil {
			return nil, done, fmt.Errorf("compare: generator: %w", err)
		}
		if cfg.GenMethod == gen.Auto && m != gen.Live {
			cfg.progress("generator: %v; sending with method %s (%s)", gen.ProbeLiveFrames(), m, m.Describe())
		}
		cfg.GenMethod = m
		setup.GenMethod = &m
		switch {
		case !m.Relayed() && cfg.GenCopies > 1:
			return nil, done, fmt.Errorf("compare: generator: %d copies with method %s: copies are made by the relay of the xsk and packet methods", cfg.GenCopies, m)
		case !m.Relayed():
			cfg.GenCopies = 1
		case cfg.GenCopies == 0:
			cfg.GenCopies = gen.DefaultCopies
		}
		setup.GenCopies = cfg.GenCopies
	}
	switch {
	case cfg.Remote != nil:
		if e, err = remoteEnv(ctx, cfg); err != nil {
			return nil, done, err
		}
		setup.Mode, setup.DUT = "remote", cfg.Remote.Runner.Target.String()
		setup.DUTInterfaces, setup.GenInterfaces = cfg.Remote.DUTInterfaces, cfg.Remote.GenInterfaces
		setup.DUTCPUs, setup.Kernel = cfg.DUTCPUs, e.remote.env.Kernel
	case cfg.Bed != nil:
		if e, err = bedEnv(cfg.Bed, cfg); err != nil {
			return nil, done, err
		}
		setup.Mode, setup.Bed, setup.Layout = "testbed", cfg.Bed.Name, cfg.Layout
		setup.NAPI = napiText(cfg.Bed)
		setup.GenRPS = cfg.Bed.GenRPS
	case cfg.Testbed:
		napi := testbed.NAPISoftirq
		if cfg.Layout == LayoutB {
			napi = testbed.NAPIThreaded
		}
		name := cfg.BedName
		if name == "" {
			name = testbed.UniqueName("cmp")
		}
		cfg.progress("making test bed %s (layout %s, %d queue(s), %d link(s))", name, cfg.Layout, cfg.Queues, needLinks(cfg.Paths))
		bed, err := testbed.Up(testbed.Config{
			Name: name, Queues: cfg.Queues, Links: needLinks(cfg.Paths), GenCPUs: cfg.GenCPUs, DUTCPUs: cfg.DUTCPUs, NAPI: napi,
			GenRPS: cfg.GenRPS,
		})
		if err != nil {
			return nil, done, fmt.Errorf("compare: %w", err)
		}
		done = func() error {
			cfg.progress("removing test bed %s", bed.Name)
			if err := bed.Down(); err != nil {
				return fmt.Errorf("compare: %w", err)
			}
			return nil
		}
		if e, err = bedEnv(bed, cfg); err != nil {
			return nil, done, err
		}
		setup.Mode, setup.Bed, setup.Layout = "testbed", bed.Name, cfg.Layout
		setup.NAPI = napiText(bed)
		setup.GenRPS = bed.GenRPS
	default:
		if e, err = nicEnv(cfg); err != nil {
			return nil, done, err
		}
		setup.Mode = "interface"
		setup.FrameSize = 0
	}
	setup.Interface = e.dut
	setup.Queues = len(e.queues)
	setup.CPUNote = cpuNote(cfg)
	setup.Env = runEnv(cfg, e)
	return e, done, nil
}

// traced reports whether a row has a drop reason from the xdp tracepoints.
func traced(rows []Row) bool {
	for _, r := range rows {
		for k := range r.Reasons {
			if strings.HasPrefix(k, "xdp_") {
				return true
			}
		}
	}
	return false
}

func napiText(bed *testbed.Bed) string {
	if bed.ThreadedNAPI {
		return "threaded, pinned to CPU " + cpuset.Format(bed.DUTCPUs)
	}
	return "in softirq on the sending (generator) CPU"
}

// cpuNote says what ns/packet and the CPU columns include.
func cpuNote(cfg *Config) string {
	if cfg.Remote != nil {
		return fmt.Sprintf("CPU per packet = all busy time (user+system+irq+softirq) of the DUT's receiver CPU %s + irq+softirq of its other CPUs "+
			"(where the DUT's NAPI runs), from the DUT's /proc/stat (xdpeng stats --cpu there) over the measurement window, "+
			"divided by the frames received in it; tick-sampled at the DUT's CONFIG_HZ, idle-polling threads count as busy, "+
			"and the DUT's sshd and reporting commands are in it too", cpuset.Format(cfg.DUTCPUs))
	}
	rest := "the other CPUs"
	if len(cfg.GenCPUs) > 0 {
		rest = "the generator CPU " + cpuset.Format(cfg.GenCPUs)
	}
	relayed := cfg.GenMethod.Relayed()
	relay := ""
	switch {
	case relayed && cfg.Layout == LayoutB:
		rest = "the other CPUs but the generator's (" + cpuset.Format(cfg.GenCPUs) + "), whose softirq runs the generator's own veth relay (gen --method " + cfg.GenMethod.String() + ")"
	case relayed:
		relay = "; the generator's veth relay (gen --method " + cfg.GenMethod.String() + ") runs in that softirq too, so every row carries its share"
	}
	return fmt.Sprintf("CPU per packet = all busy time (user+system+irq+softirq) of receiver CPU %s + irq+softirq of %s "+
		"(where veth runs the DUT's NAPI in layout A; forwarding paths include the XDP counter on the egress peer)%s, "+
		"from /proc/stat over the measurement window, divided by the frames received in it; "+
		"tick-sampled at CONFIG_HZ, idle-polling threads count as busy",
		cpuset.Format(cfg.DUTCPUs), rest, relay)
}
