package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/xdpeng/xdpeng/cmd/internal/metrics"
	"github.com/xdpeng/xdpeng/cmd/internal/privilege"
	"github.com/xdpeng/xdpeng/cmd/internal/units"
	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/internal/counter"
	"github.com/xdpeng/xdpeng/internal/cpuset"
	"github.com/xdpeng/xdpeng/internal/lab/kern"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

func init() { addCommand(newKernCmd()) }

// kernFlags are the flags of every `kern` path; some apply to one path only.
type kernFlags struct {
	iface      string
	mode       string
	skb        bool
	native     bool
	hook       string
	out        []string
	countProto bool
	cpus       []string // redirect-cpu's -c, each a list; given again, added to
	remote     string   // redirect-cpu's -r: drop or pass
	qsize      int      // redirect-cpu's -q
	packetOp   string   // -p, "" for the path's default
	loadMode   string   // -l: dpa or load-bytes
	force      int      // --force given once, twice
	duration   time.Duration
	interval   time.Duration
	json       bool
	quiet      bool
	watch      watchFlags // --metrics, -e, --irq (watch.go)
}

func newKernCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kern drop|pass|tx|redirect|redirect-cpu -i DEV",
		Short: "Run an in-kernel path (XDP drop/pass/tx/redirect/redirect-cpu, tc drop) and count per rx queue and CPU",
		Long: `kern attaches one of the in-kernel paths that xdpeng's AF_XDP engine is compared
with, the xdp-bench set, and prints packets per second per rx queue and per CPU
every interval (like xdp_rxq_info), then the totals when the duration ends or
on Ctrl-C/SIGTERM. The program is attached through bpf_link, so it is detached
on every exit path, even kill -9. A program someone else attached is never
replaced unless --force (which says what it replaces first), nor one a running
process holds open unless --force twice, nor ever one held by another
process's bpf_link.`,
		Example: `  sudo xdpeng kern drop -i dut0                   # XDP_DROP in the driver (native mode where it has it)
  sudo xdpeng kern drop -i dut0 -S                # ... on the skb, generic mode (works on any interface)
  sudo xdpeng kern drop -i dut0 --count-proto     # parse and count per IP protocol first
  sudo xdpeng kern drop -i dut0 --hook tc         # tc ingress drop (TCX)
  sudo xdpeng kern pass -i dut0 -d 10s            # XDP_PASS: the stack's cost
  sudo xdpeng kern tx -i dut0 --json              # swap MACs, send back (XDP_TX)
  sudo xdpeng kern redirect -i dut0 -o dut1       # to another port (DEVMAP)
  sudo xdpeng kern redirect -i dut0 -o dut1,dut2  # a copy to each (DEVMAP_HASH broadcast)
  sudo xdpeng kern redirect-cpu -i dut0 -c 1      # to CPU 1 (CPUMAP), dropped there`,
	}
	requireSubcommand(cmd)
	for _, path := range []struct{ name, short, example string }{
		{"drop", "XDP_DROP every frame (or tc ingress drop with --hook tc)", `  sudo xdpeng kern drop -i dut0                   # native mode where the driver has it
  sudo xdpeng kern drop -i dut0 -S -d 5           # generic mode, 5 seconds
  sudo xdpeng kern drop -i dut0 --count-proto     # count per IP protocol first
  sudo xdpeng kern drop -i dut0 --hook tc --json  # tc ingress drop (TCX)
  ip netns exec xdpeng-dut xdpeng kern drop -i dut0 -e   # on the test bed, and why frames were lost`},
		{"pass", "XDP_PASS every frame to the stack", `  sudo xdpeng kern pass -i dut0 -d 10s            # what the stack costs
  ip netns exec xdpeng-gen xdpeng kern pass -i gen0   # lets a veth peer take XDP_TX frames`},
		{"tx", "swap the MAC addresses and send every frame back out (XDP_TX)", `  sudo xdpeng kern tx -i dut0                     # sent back and failed counted
  sudo xdpeng kern tx -i dut0 -S --json           # generic mode, JSON lines`},
		{"redirect", "redirect every frame out of -o (DEVMAP), or a copy out of each -o port", `  sudo xdpeng kern redirect -i dut0 -o dut1       # DEVMAP
  sudo xdpeng kern redirect -i dut0 -o dut1,dut2  # a copy to each (DEVMAP_HASH broadcast)
  sudo xdpeng kern redirect -i dut0 -o dut1 -e    # and why frames were lost (xdp-bench -e)`},
		{"redirect-cpu", "redirect every frame to other CPUs (CPUMAP), round robin, and drop it there (xdp-bench redirect-cpu)", `  sudo xdpeng kern redirect-cpu -i dut0 -c 1      # from the receiving CPU to CPU 1, dropped there
  sudo xdpeng kern redirect-cpu -i dut0 -c 0-3 -r pass   # spread over CPUs 0-3, to the stack there`},
	} {
		f := &kernFlags{}
		sub := &cobra.Command{
			Use:     path.name + " -i DEV",
			Short:   path.short,
			Example: path.example,
			Args:    cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return runKern(cmd, path.name, f)
			},
		}
		fs := sub.Flags()
		fs.StringVarP(&f.iface, "interface", "i", "", "interface to attach to (required)")
		fs.BoolVarP(&f.native, "native", "N", false, "XDP in native (driver) mode; refused where the driver has none (default: native where the device has it, else generic)")
		fs.BoolVarP(&f.skb, "generic", "S", false, "XDP in generic (SKB) mode, which every device has")
		// The old spellings, still taken: -m native|generic, --native-mode,
		// --skb-mode.
		fs.StringVarP(&f.mode, "mode", "m", "", "XDP mode: native or generic (the old spelling of -N and -S)")
		fs.BoolVar(&f.skb, "skb-mode", false, "the old spelling of -S")
		fs.BoolVar(&f.native, "native-mode", false, "the old spelling of -N")
		for _, old := range []string{"mode", "skb-mode", "native-mode"} {
			_ = fs.MarkHidden(old)
		}
		forceFlag(fs, &f.force)
		secondsVarP(fs, &f.duration, "duration", "d", 0, "stop after this long (seconds, or a duration like 500ms; default: until Ctrl-C)")
		intervalFlags(fs, &f.interval, "statistics interval")
		fs.BoolVar(&f.json, "json", false, "one JSON object per line: interval lines, then a summary")
		fs.BoolVarP(&f.quiet, "quiet", "Q", false, "no per-interval lines: only the summary (and link changes)")
		f.watch.registerMetrics(fs)
		f.watch.registerErrors(fs)
		f.watch.registerIRQ(fs)
		switch path.name {
		case "redirect-cpu":
			fs.StringVarP(&f.packetOp, "packet-operation", "p", "", "what the program does to each frame before sending it on, as xdp-bench drop's -p: no-touch (default), read-data, parse-ip or swap-macs; xdp-bench redirect-cpu's program modes round-robin (how this one spreads) and touch (read-data) are taken too")
		case "tx":
			fs.StringVarP(&f.packetOp, "packet-operation", "p", "", "what the program does to each frame before sending it back, as xdp-bench's -p: swap-macs (default), no-touch (send it back as it came), read-data or parse-ip; a frame it finds malformed is aborted (-e counts it)")
		default:
			fs.StringVarP(&f.packetOp, "packet-operation", "p", "", "what the program does to each frame before its verdict, as xdp-bench's -p: no-touch (default), read-data (the EtherType), parse-ip (Ethernet, VLAN and IP headers) or swap-macs (writes the frame); a frame it finds malformed is aborted (-e counts it)")
		}
		fs.StringVarP(&f.loadMode, "load-mode", "l", "dpa", "how the packet operation reads the frame, as xdp-bench's -l: dpa (direct packet access) or load-bytes (bpf_xdp_load_bytes, Linux 5.18; VLAN tags are not walked)")
		switch path.name {
		case "drop":
			fs.StringVar(&f.hook, "hook", "xdp", "where to drop: xdp or tc (ingress, TCX)")
			fs.BoolVar(&f.countProto, "count-proto", false, "parse Ethernet/VLAN/IP and count per IP protocol before dropping")
		case "redirect":
			fs.StringSliceVarP(&f.out, "out", "o", nil, "egress interface(s); several: a copy to each (required)")
		case "redirect-cpu":
			fs.StringArrayVarP(&f.cpus, "cpus", "c", nil, "CPUs to send the frames to, round robin, e.g. 1 or 0-3; may be given again, as xdp-bench's -c (required)")
			fs.StringVarP(&f.remote, "remote-action", "r", "drop", "what a frame meets on the CPU it was sent to: drop, or pass (to the network stack there) (xdp-bench's -r)")
			fs.IntVarP(&f.qsize, "qsize", "q", kern.DefaultQSize, "each CPU's queue in the CPUMAP, in frames (xdp-bench's -q)")
		}
		cmd.AddCommand(sub)
	}
	return cmd
}

// loadBytes reads a load mode flag (kern's -l, compare's --load-mode):
// whether the packet operation reads the frame with load-bytes.
func loadBytes(flag, mode string) (bool, error) {
	switch mode {
	case "dpa":
		return false, nil
	case "load-bytes":
		return true, nil
	}
	return false, fmt.Errorf("%s %q: want dpa or load-bytes", flag, mode)
}

// kernConfig checks the flags of a kern path and makes its kern.Config. It
// looks the interfaces up (no privilege needed for that), so that bad input
// is refused before anything else, root included.
func (f *kernFlags) kernConfig(path string) (kern.Config, error) {
	cfg := kern.Config{Action: kern.Action(path), Interface: f.iface, Outs: f.out, Force: f.force > 0, ForceInUse: f.force > 1}
	if f.skb && f.native {
		return cfg, errors.New("-S (generic) and -N (native) contradict each other")
	}
	h, auto := kern.XDP, true
	if f.mode != "" {
		m, err := kern.ParseXDPMode(f.mode)
		if err != nil {
			return cfg, fmt.Errorf("-m/--mode: %w", err)
		}
		// -m is the old spelling of -N and -S: given with one of them,
		// they must agree.
		if (f.skb && m != kern.XDPGeneric) || (f.native && m != kern.XDP) {
			other := "-N (native)"
			if f.skb {
				other = "-S (generic)"
			}
			return cfg, fmt.Errorf("-m %s and %s contradict each other: give one (-m is the old spelling of -N and -S)", f.mode, other)
		}
		h, auto = m, false
	}
	if f.skb {
		h, auto = kern.XDPGeneric, false
	}
	if f.native {
		h, auto = kern.XDP, false
	}
	switch f.hook {
	case "", "xdp":
	case "tc":
		if !auto {
			// -S, -N and -m choose the XDP attach mode, which tc has not.
			return cfg, errors.New("-S, -N and -m choose how XDP is attached, and mean nothing with --hook tc: leave them out")
		}
		h = kern.TC
	default:
		return cfg, fmt.Errorf("--hook %q: want xdp or tc", f.hook)
	}
	cfg.Hook = h
	if f.interval <= 0 {
		return cfg, fmt.Errorf("-n/--interval %v: must be positive", f.interval)
	}
	if f.duration < 0 {
		return cfg, fmt.Errorf("-d/--duration %v: must not be negative", f.duration)
	}
	if err := f.watch.check(); err != nil {
		return cfg, err
	}

	if path == "redirect-cpu" {
		// xdp-bench redirect-cpu's -p is its program mode.
		switch f.packetOp {
		case "round-robin":
			f.packetOp = ""
		case "touch":
			f.packetOp = "read-data"
		case "l4-proto", "l4-filter", "l4-hash", "l4-sport", "l4-dport":
			return cfg, fmt.Errorf("-p %s: xdp-bench redirect-cpu's program mode; xdpeng's redirect-cpu goes round robin over -c (xdp-bench's -p round-robin), and its -p is the packet operation: %s", f.packetOp, strings.Join(kern.PacketOps, ", "))
		}
	}
	if f.packetOp != "" && !slices.Contains(kern.PacketOps, f.packetOp) {
		return cfg, fmt.Errorf("-p/--packet-operation %q: want %s", f.packetOp, strings.Join(kern.PacketOps, ", "))
	}
	var err error
	if cfg.LoadBytes, err = loadBytes("-l/--load-mode", f.loadMode); err != nil {
		return cfg, err
	}
	cfg.PacketOp = f.packetOp
	switch {
	case (f.packetOp != "" || cfg.LoadBytes) && h == kern.TC:
		return cfg, errors.New("-p and -l are the XDP hook's: tc drop reads no frame (leave them out, or drop at XDP)")
	case (f.packetOp != "" || cfg.LoadBytes) && f.countProto:
		return cfg, errors.New("--count-proto parses the headers itself: it takes no -p or -l (for the cost of parsing alone: -p parse-ip)")
	case cfg.LoadBytes && (f.packetOp == "no-touch" || f.packetOp == "" && path != "tx"):
		return cfg, errors.New("-l load-bytes is how a packet operation reads the frame, and no-touch reads nothing: give -p read-data, parse-ip or swap-macs too")
	}
	switch path {
	case "drop":
		if h == kern.TC && f.countProto {
			return cfg, errors.New("--count-proto is for the XDP hook, not --hook tc")
		}
		cfg.CountProto = f.countProto
	case "redirect":
		if len(f.out) == 0 {
			return cfg, cliFlagError{errors.New("redirect needs -o OUT (or -o OUT1,OUT2 for a copy to each)")}
		}
	case "redirect-cpu":
		if len(f.cpus) == 0 {
			return cfg, cliFlagError{errors.New("redirect-cpu needs -c CPUS, the CPUs to send the frames to (e.g. -c 1)")}
		}
		cpus, err := cpuset.ParseList(strings.Join(f.cpus, ","), "CPU")
		if err != nil {
			return cfg, fmt.Errorf("-c/--cpus: %w", err)
		}
		if err := cpuset.CheckOnline(cpus); err != nil {
			return cfg, fmt.Errorf("-c/--cpus: %w", err)
		}
		cfg.CPUs = cpus
		switch f.remote {
		case "drop":
		case "pass":
			cfg.RemotePass = true
		default:
			return cfg, fmt.Errorf("-r/--remote-action %q: want drop or pass", f.remote)
		}
		if f.qsize < 1 {
			return cfg, fmt.Errorf("-q/--qsize %d: want a queue of 1 frame or more", f.qsize)
		}
		cfg.QSize = f.qsize
	}
	if f.iface == "" {
		return cfg, cliFlagError{errors.New("no interface given: use -i DEV")}
	}
	if auto && h != kern.TC {
		var err error
		if h, err = kern.NativeOrGeneric(f.iface); err != nil {
			return cfg, kernError(err, f.iface)
		}
		cfg.Hook = h
	}
	for i, o := range f.out {
		if o == f.iface {
			return cfg, fmt.Errorf("-o %s: the egress interface must differ from -i", o)
		}
		if slices.Contains(f.out[:i], o) {
			return cfg, fmt.Errorf("-o %s: listed twice", o)
		}
	}
	if err := kern.Check(cfg); err != nil {
		return cfg, kernError(err, f.iface)
	}
	return cfg, nil
}

// kernError adds to an error of package kern the flag that helps.
func kernError(err error, iface string) error {
	var nf *netdev.NoInterfaceError
	var fe *netdev.ForeignXDPError
	switch {
	case errors.As(err, &nf):
		return deviceFlag(inputOrOutput(err, iface))
	case errors.As(err, &fe):
		return advise(err)
	case errors.Is(err, kern.ErrNoNativeXDP):
		return fmt.Errorf("%w; generic mode (-S) works on every interface, and leaving -N out gets it where native is missing", err)
	case errors.Is(err, kern.ErrMTUTooLarge):
		return fmt.Errorf("%w (lower it, or use generic mode: -S)", err)
	case errors.Is(err, kern.ErrNoLoadBytes):
		return fmt.Errorf("%w: leave out -l load-bytes (direct packet access, -l dpa, works on every kernel)", err)
	}
	return err
}

func runKern(cmd *cobra.Command, path string, f *kernFlags) error {
	cfg, err := f.kernConfig(path)
	if err != nil {
		return err
	}
	if err := needRoot("kern "+path, privilege.BPF); err != nil {
		return err
	}
	if cfg.Hook != kern.TC {
		forceNote(cmd.ErrOrStderr(), f.iface, f.force)
	}
	w, err := f.watch.startWatch(f.iface)
	if err != nil {
		return err
	}
	defer w.close()
	kp, err := kern.Open(cfg)
	if err != nil {
		return kernError(err, f.iface)
	}
	// Deferred, so it runs on every return and panic; a bpf_link would
	// also go with the process.
	defer kp.Close()
	var watched []string
	for _, d := range append([]netdev.Info{kp.Interface()}, kp.Outs()...) {
		watched = append(watched, d.Name)
	}
	watch, err := engine.WatchLinks(watched...)
	if err != nil {
		return err
	}
	defer watch.Close()

	ctx, cancel := signalContext()
	defer cancel()
	if f.duration > 0 {
		var c2 func()
		ctx, c2 = context.WithTimeout(ctx, f.duration)
		defer c2()
	}

	p := &kernPrinter{w: cmd.OutOrStdout(), path: path, f: f, k: kp, start: time.Now(), watch: w}
	lp := newLinkPrinter(p.w, f.json, p.name(), func() time.Time { return p.start })
	p.header()
	// The link watch tells changes only: a device down from the start is
	// said here.
	for i, d := range append([]netdev.Info{kp.Interface()}, kp.Outs()...) {
		switch note := downNote(d, i > 0); {
		case note == "":
		case f.json:
			fmt.Fprintln(cmd.ErrOrStderr(), "xdpeng: note: "+note)
		default:
			fmt.Fprintln(p.w, "  note: "+note)
		}
	}
	prev, err := p.snapshot()
	if err != nil {
		return err
	}
	first := prev
	if err := w.serve(&metrics.Kern{Mode: p.name(), Interface: kp.Interface().Name, Hook: p.hookName(),
		Read: kp.Read, Base: first.Counters, Outs: f.out}); err != nil {
		return err
	}
	defer w.stopServing()
	tick := time.NewTicker(f.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			last, err := p.snapshot()
			if err != nil {
				return err
			}
			ferr := w.finish(0)
			p.summary(first, last)
			w.stopServing()
			return errors.Join(ferr, kp.Close())
		case c, ok := <-watch.Changes():
			if !ok { // the watch failed: a device gone would go unnoticed
				return errors.Join(watch.Err(), kp.Close())
			}
			lp.change(c)
		case gone := <-watch.Gone():
			// The program's counters stay readable; a gone device's own
			// counters do not, and then the last ones read stand.
			last, err := p.snapshot()
			if err != nil {
				last = kernSnapshot{t: gone.Time, Counters: prev.Counters}
				if st, serr := kp.Stats(); serr == nil {
					last.Stats = st
				}
			}
			ferr := w.finish(0)
			p.summary(first, last)
			w.stopServing()
			return errors.Join(lp.gone(gone), ferr, kp.Close())
		case <-tick.C:
			cur, err := p.snapshot()
			if err != nil {
				return err
			}
			p.interval(prev, cur)
			prev = cur
		}
	}
}

// kernSnapshot is every counter kern reports, at one time.
type kernSnapshot struct {
	t time.Time
	kern.Counters
}

type kernPrinter struct {
	w     io.Writer
	path  string // drop, pass, tx, redirect
	f     *kernFlags
	k     *kern.Path
	start time.Time
	watch *watcher
}

// name is the JSON mode: kern-drop, ...
func (p *kernPrinter) name() string { return "kern-" + p.path }

func (p *kernPrinter) snapshot() (kernSnapshot, error) {
	c, err := p.k.Read()
	return kernSnapshot{t: time.Now(), Counters: c}, err
}

// hookName is "xdp" (native or generic) or "tc".
func (p *kernPrinter) hookName() string {
	if p.k.Config().Hook == kern.TC {
		return "tc"
	}
	return "xdp"
}

func (p *kernPrinter) header() {
	if p.f.json {
		return
	}
	where := fmt.Sprintf("XDP %s mode", p.k.Config().Hook.XDPMode())
	if p.k.Config().Hook == kern.TC {
		where = "tc ingress (TCX)"
		if p.k.TCVia() == "clsact" {
			where = "tc ingress through a bpf filter on a clsact qdisc (this kernel has no TCX, which needs Linux 6.6; a kill -9 leaves the filter: tc filter del dev " + p.k.Interface().Name + " ingress)"
		}
	}
	extra := ""
	if len(p.f.out) > 0 {
		extra = " -> " + strings.Join(p.f.out, ",")
	}
	if op := p.k.PacketOp(); op != "" {
		where += ", packet operation " + op
		if p.k.Config().LoadBytes {
			where += " (load-bytes)"
		}
	}
	fmt.Fprintf(p.w, "%s (%s) on %s%s, %s; counting per rx queue and CPU every %v; %s\n",
		p.name(), p.k.Program(), p.k.Interface().Name, extra, where, p.f.interval, howLong(p.f.duration))
	p.watch.header(p.w)
}

// kernRate is one row: a queue, a CPU, an egress port or a protocol.
type kernRate struct {
	Queue *int `json:"queue,omitempty"`
	// QueueUnrecorded marks the frames whose rx queue the driver did not
	// record (the tc hook; veth records none): no queue is known.
	QueueUnrecorded bool   `json:"queue_unrecorded,omitempty"`
	CPU             *int   `json:"cpu,omitempty"`
	Interface       string `json:"interface,omitempty"`
	Proto           *int   `json:"proto,omitempty"`
	// ProtoName is Proto as count names it: "udp", "ip/47", "other".
	ProtoName string  `json:"proto_name,omitempty"`
	PPS       float64 `json:"pps"`
	BPS       float64 `json:"bps,omitempty"`
	Packets   uint64  `json:"packets"` // in the interval (rates) or in all (summary)
}

func intp(v int) *int { return &v }

// statRows are the per queue and per CPU rows of s, counted over dt seconds.
// Empty, not nil, so JSON shows [] rather than null.
func statRows(s kern.Stats, dt float64) (perQueue, perCPU []kernRate) {
	perQueue, perCPU = []kernRate{}, []kernRate{}
	rate := func(e kern.QueueCPU) kernRate {
		r := kernRate{Packets: e.Packets}
		if dt > 0 {
			r.PPS, r.BPS = float64(e.Packets)/dt, float64(e.Bytes)*8/dt
		}
		return r
	}
	for _, e := range s.ByQueue() {
		r := rate(e)
		if e.Queue == kern.QueueUnrecorded {
			r.QueueUnrecorded = true
		} else {
			r.Queue = intp(e.Queue)
		}
		perQueue = append(perQueue, r)
	}
	for _, e := range s.ByCPU() {
		r := rate(e)
		r.CPU = intp(e.CPU)
		perCPU = append(perCPU, r)
	}
	return perQueue, perCPU
}

// extraRows are the egress ports', the protocols' and the remote CPUs'
// (redirect-cpu) rows between two snapshots.
func (p *kernPrinter) extraRows(prev, cur kernSnapshot, dt float64) (outs, protos, remote []kernRate) {
	outs, protos = []kernRate{}, []kernRate{}
	per := func(n uint64) float64 {
		if dt <= 0 {
			return 0
		}
		return float64(n) / dt
	}
	for i, o := range p.k.Outs() {
		n := counter.Sub(cur.OutTx[i], prev.OutTx[i])
		outs = append(outs, kernRate{Interface: o.Name, PPS: per(n), Packets: n})
	}
	before := map[int]uint64{}
	for _, e := range prev.Proto {
		before[e.Proto] = e.Packets
	}
	for _, e := range cur.Proto {
		if n := counter.Sub(e.Packets, before[e.Proto]); n > 0 {
			protos = append(protos, kernRate{Proto: intp(e.Proto), ProtoName: kernProtoName(e.Proto), PPS: per(n), Packets: n})
		}
	}
	had := map[int]kern.RemoteCount{}
	for _, r := range prev.Remote {
		had[r.CPU] = r
	}
	for _, r := range cur.Remote {
		n, b := counter.Sub(r.Packets, had[r.CPU].Packets), counter.Sub(r.Bytes, had[r.CPU].Bytes)
		if n > 0 {
			remote = append(remote, kernRate{CPU: intp(r.CPU), PPS: per(n), BPS: per(b) * 8, Packets: n})
		}
	}
	return outs, protos, remote
}

func (p *kernPrinter) interval(prev, cur kernSnapshot) {
	if p.f.quiet {
		return
	}
	dt := cur.t.Sub(prev.t).Seconds()
	d := cur.Stats.Sub(prev.Stats)
	pkts, bytes := d.Total()
	perQueue, perCPU := statRows(d, dt)
	outs, protos, remote := p.extraRows(prev, cur, dt)
	total, _ := cur.Stats.Total()
	elapsed := cur.t.Sub(p.start).Seconds()
	if p.f.json {
		line := map[string]any{
			"type": "interval", "mode": p.name(), "interface": p.k.Interface().Name, "hook": p.hookName(), "t": round3(elapsed),
			"rx_pps": float64(pkts) / dt, "rx_bps": float64(bytes) * 8 / dt, "rx_packets": total,
			"per_queue": perQueue, "per_cpu": perCPU, "out": outs, "proto": protos,
		}
		if p.k.Config().Action == kern.RedirectCPU {
			line["remote"] = append([]kernRate{}, remote...)
		}
		if sent, failed, ok := xdpTxSince(prev, cur); ok {
			line["xdp_tx_pps"] = float64(sent) / dt
			line["xdp_tx_errors_pps"] = float64(failed) / dt
		}
		p.watch.interval(p.w, line, dt)
		writeJSON(p.w, orderedLine{line, jsonFields(kernSummary{})})
		return
	}
	fmt.Fprintf(p.w, "[%7.2fs] %-14s %12s %12s %14d total\n", elapsed, "rx", units.PPS(float64(pkts)/dt), units.BPS(float64(bytes)*8/dt), total)
	if sent, failed, ok := xdpTxSince(prev, cur); ok {
		fmt.Fprintf(p.w, "%10s %-14s %12s %12s errors\n", "", "xdp_tx sent", units.PPS(float64(sent)/dt),
			units.PPS(float64(failed)/dt))
	}
	p.rows(perQueue, perCPU, outs, protos, remote, true)
	p.watch.interval(p.w, nil, dt)
}

func (p *kernPrinter) rows(perQueue, perCPU, outs, protos, remote []kernRate, rates bool) {
	line := func(label string, r kernRate) {
		if rates {
			bps := "" // egress ports and protocols count packets only
			if r.BPS > 0 {
				bps = units.BPS(r.BPS)
			}
			fmt.Fprintf(p.w, "%10s %-14s %12s %12s\n", "", label, units.PPS(r.PPS), bps)
		} else {
			fmt.Fprintf(p.w, "  %-14s %14d packets\n", label, r.Packets)
		}
	}
	unrecorded := false
	for _, r := range perQueue {
		if r.QueueUnrecorded {
			line("queue ?", r)
			unrecorded = true
			continue
		}
		line(fmt.Sprintf("queue %d", *r.Queue), r)
	}
	if unrecorded && !rates {
		fmt.Fprintln(p.w, "  (queue ?: the driver recorded no rx queue in these frames' skbs, which is all tc sees; veth records none, and XDP's rx_queue_index shows it)")
	}
	for _, r := range perCPU {
		line(fmt.Sprintf("cpu %d", *r.CPU), r)
	}
	for _, r := range outs {
		line("tx "+r.Interface, r)
	}
	for _, r := range protos {
		line(protocolLabel(r.ProtoName), r)
	}
	for _, r := range remote {
		line(fmt.Sprintf("remote cpu %d", *r.CPU), r)
	}
}

// kernSummary is the last JSON line of kern.
type kernSummary struct {
	Type    string `json:"type"`
	Mode    string `json:"mode"`
	Program string `json:"program"`
	Hook    string `json:"hook"`
	// TCVia is how a tc program is attached: tcx, or clsact before Linux 6.6.
	TCVia      string     `json:"tc_via,omitempty"`
	XDPMode    string     `json:"xdp_mode,omitempty"`
	Interface  string     `json:"interface"`
	Out        []string   `json:"out,omitempty"`
	DurationS  float64    `json:"duration_s"`
	RxPackets  uint64     `json:"rx_packets"`
	RxBytes    uint64     `json:"rx_bytes"`
	RxPPS      float64    `json:"rx_pps"`
	OutTx      []kernRate `json:"out_tx,omitempty"`
	PerQueue   []kernRate `json:"per_queue"`
	PerCPU     []kernRate `json:"per_cpu"`
	PerProto   []kernRate `json:"per_proto,omitempty"`
	CountProto bool       `json:"count_proto,omitempty"`
	// PacketOp is what the program did to each frame (-p); LoadMode how
	// it read it (-l): dpa or load-bytes. Empty for tc and count-proto.
	PacketOp string `json:"packet_operation,omitempty"`
	LoadMode string `json:"load_mode,omitempty"`
	// XDPTx and XDPTxErrors are, for tx on a veth, the frames the driver
	// put on the peer's receive ring and those it could not; XDPTxNote
	// says why frames failed, when some did.
	XDPTx       *uint64 `json:"xdp_tx,omitempty"`
	XDPTxErrors *uint64 `json:"xdp_tx_errors,omitempty"`
	XDPTxNote   string  `json:"xdp_tx_note,omitempty"`
	// Remote is, for redirect-cpu, what each CPU the frames were sent to
	// took, RemotePackets their sum.
	Remote        []kernRate `json:"remote,omitempty"`
	RemotePackets uint64     `json:"remote_packets,omitempty"`
	watchJSON
}

func (p *kernPrinter) summary(first, last kernSnapshot) {
	dur := last.t.Sub(p.start).Seconds()
	// Counters start at zero at load; the first snapshot is the baseline
	// for the egress ports only.
	pkts, bytes := last.Stats.Total()
	perQueue, perCPU := statRows(last.Stats, dur)
	zero := kernSnapshot{Counters: kern.Counters{OutTx: first.OutTx}}
	outs, protos, remote := p.extraRows(zero, last, dur)
	sum := kernSummary{
		Type: "summary", Mode: p.name(), Program: p.k.Program(), Hook: p.hookName(), TCVia: p.k.TCVia(),
		Interface: p.k.Interface().Name, Out: p.f.out, DurationS: round3(dur),
		RxPackets: pkts, RxBytes: bytes, PerQueue: perQueue, PerCPU: perCPU, OutTx: outs, PerProto: protos,
		CountProto: p.k.Config().CountProto, XDPMode: p.k.Config().Hook.XDPMode(),
		PacketOp:  p.k.PacketOp(),
		watchJSON: p.watch.summaryJSON(),
	}
	if p.k.Config().Action == kern.RedirectCPU {
		sum.Remote = append([]kernRate{}, remote...)
		for _, r := range remote {
			sum.RemotePackets += r.Packets
		}
	}
	if sum.PacketOp != "" {
		sum.LoadMode = p.f.loadMode
	}
	if dur > 0 {
		sum.RxPPS = float64(pkts) / dur
	}
	sent, failed, ok := xdpTxSince(first, last)
	if ok {
		sum.XDPTx, sum.XDPTxErrors = &sent, &failed
		if failed > 0 {
			sum.XDPTxNote = xdpTxNote(sum.Interface)
		}
	}
	if p.f.json {
		writeJSON(p.w, sum)
		return
	}
	fmt.Fprintf(p.w, "\n%s on %s: %.2f s, rx %d packets, %d bytes (%s on average)\n",
		p.name(), sum.Interface, dur, pkts, bytes, units.PPS(sum.RxPPS))
	if sum.XDPTx != nil {
		fmt.Fprintf(p.w, "  xdp_tx: %d sent back (put on the veth peer's receive ring), %d failed\n", sent, failed)
		if sum.XDPTxNote != "" {
			fmt.Fprintf(p.w, "  (%s)\n", sum.XDPTxNote)
		}
	}
	if sum.Remote != nil {
		action := "dropped"
		if p.k.Config().RemotePass {
			action = "passed to the stack"
		}
		fmt.Fprintf(p.w, "  remote: %d packets reached the CPUs they were sent to (%s), and were %s there\n", sum.RemotePackets, cpuset.Format(p.k.Config().CPUs), action)
		if sum.RemotePackets < pkts {
			fmt.Fprintf(p.w, "  (%d did not: dropped when a CPU's queue was full, which -e counts as xdp_cpumap_enqueue drops, or still on their way when the run stopped)\n", pkts-sum.RemotePackets)
		}
	}
	p.rows(perQueue, perCPU, outs, protos, remote, false)
	p.watch.summaryText(p.w)
}

// xdpTxSince is what tx sent back between two snapshots, and whether the
// interface counts it.
func xdpTxSince(prev, cur kernSnapshot) (sent, failed uint64, ok bool) {
	if prev.XDPTx == nil || cur.XDPTx == nil {
		return 0, 0, false
	}
	return cur.XDPTx.Sent - prev.XDPTx.Sent, cur.XDPTx.Failed - prev.XDPTx.Failed, true
}

// xdpTxNote says why XDP_TX frames on the veth dev failed: its peer has no
// XDP program, so nothing empties the peer's receive ring once it is full
// (with the command that attaches one, in the peer's test bed namespace
// where it has one), or the peer has one and took them more slowly than
// they came. "" when the peer cannot be read.
func xdpTxNote(dev string) string {
	peer, err := netdev.VethPeer(dev)
	if err != nil {
		return ""
	}
	if peer.XDPProgID != 0 {
		return fmt.Sprintf("the failed frames found %s's receive ring full: %s, which runs XDP program id %d, took them more slowly than they came back", peer.Name, peer.Name, peer.XDPProgID)
	}
	run := fmt.Sprintf("xdpeng kern pass -i %s in its namespace", peer.Name)
	if places, _ := testbed.FindInterface(peer.Name); len(places) > 0 {
		for _, p := range places {
			if p.SameBed {
				run = fmt.Sprintf("ip netns exec %s xdpeng kern pass -i %s", p.Namespace, peer.Name)
			}
		}
	}
	return fmt.Sprintf("%s has no XDP program: a veth wakes its peer for XDP_TX frames only while the peer runs one (GRO is not enough), so they wait on %s's receive ring, and once it is full every one fails; attach one there, e.g. %s",
		peer.Name, peer.Name, run)
}

// kernProtoName names a protocol count of kern's as count names its keys:
// "udp", "ip/47", or "other" for frames that are not IP.
func kernProtoName(p int) string {
	if p < 0 || p > 255 {
		return "other"
	}
	return protocolName(uint8(p))
}

// downNote says that device d is down now, and what that does to the run:
// as the input, nothing arrives; as an output (out), what is redirected to
// it is dropped. "" when it is up, or its state cannot be read.
func downNote(d netdev.Info, out bool) string {
	adminUp, carrier, err := netdev.LinkState(d.Index)
	if err != nil || adminUp && carrier {
		return ""
	}
	why := "set down"
	if adminUp {
		why = "no carrier: its link, or its veth peer, is down"
	}
	if out {
		return fmt.Sprintf("%s is down (%s): every frame redirected to it is dropped until it is up (-e counts them: xdp_redirect_err ENETDOWN)", d.Name, why)
	}
	return fmt.Sprintf("%s is down (%s): nothing arrives until it is up", d.Name, why)
}
