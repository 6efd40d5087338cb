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
	"github.com/vishvananda/netlink"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/internal/counter"
	"github.com/xdpeng/xdpeng/internal/hook"
	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/internal/privilege"
	"github.com/xdpeng/xdpeng/internal/units"
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
	force      bool
	duration   time.Duration
	interval   time.Duration
	json       bool
}

func newKernCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kern drop|pass|tx|redirect -i DEV",
		Short: "Run an in-kernel path (XDP drop/pass/tx/redirect, tc drop) and count per rx queue and CPU",
		Long: `kern attaches one of the in-kernel paths that xdpeng's AF_XDP engine is compared
with, the xdp-bench set, and prints packets per second per rx queue and per CPU
every interval (like xdp_rxq_info), then the totals when the duration ends or
on Ctrl-C/SIGTERM. The program is attached through bpf_link, so it is detached
on every exit path, even kill -9. A program someone else attached is never
replaced unless --force (and never one held by another process's bpf_link).`,
		Example: `  sudo xdpeng kern drop -i dut0                   # XDP_DROP in the driver (native mode)
  sudo xdpeng kern drop -i dut0 -m generic        # ... on the skb (works on any interface)
  sudo xdpeng kern drop -i dut0 --count-proto     # parse and count per IP protocol first
  sudo xdpeng kern drop -i dut0 --hook tc         # tc ingress drop (TCX)
  sudo xdpeng kern pass -i dut0 -d 10s            # XDP_PASS: the stack's cost
  sudo xdpeng kern tx -i dut0 --json              # swap MACs, send back (XDP_TX)
  sudo xdpeng kern redirect -i dut0 -o dut1       # to another port (DEVMAP)
  sudo xdpeng kern redirect -i dut0 -o dut1,dut2  # a copy to each (DEVMAP_HASH broadcast)`,
	}
	requireSubcommand(cmd)
	for _, path := range []struct{ name, short string }{
		{"drop", "XDP_DROP every frame (or tc ingress drop with --hook tc)"},
		{"pass", "XDP_PASS every frame to the stack"},
		{"tx", "swap the MAC addresses and send every frame back out (XDP_TX)"},
		{"redirect", "redirect every frame out of -o (DEVMAP), or a copy out of each -o port"},
	} {
		f := &kernFlags{}
		sub := &cobra.Command{
			Use:   path.name + " -i DEV",
			Short: path.short,
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return runKern(cmd, path.name, f)
			},
		}
		fs := sub.Flags()
		fs.StringVarP(&f.iface, "interface", "i", "", "interface to attach to (required)")
		fs.StringVarP(&f.mode, "mode", "m", "native", "XDP mode: native (in the driver) or generic (on the skb)")
		fs.BoolVarP(&f.skb, "skb-mode", "S", false, "generic mode, as xdpsock's -S")
		fs.BoolVarP(&f.native, "native-mode", "N", false, "native mode, as xdpsock's -N (the default)")
		fs.BoolVar(&f.force, "force", false, "replace an XDP program someone else attached through netlink")
		fs.DurationVarP(&f.duration, "duration", "d", 0, "stop after this long (0: until Ctrl-C)")
		fs.DurationVarP(&f.interval, "interval", "I", time.Second, "statistics interval")
		fs.BoolVar(&f.json, "json", false, "one JSON object per line: interval lines, then a summary")
		switch path.name {
		case "drop":
			fs.StringVar(&f.hook, "hook", "xdp", "where to drop: xdp or tc (ingress, TCX)")
			fs.BoolVar(&f.countProto, "count-proto", false, "parse Ethernet/VLAN/IP and count per IP protocol before dropping")
		case "redirect":
			fs.StringSliceVarP(&f.out, "out", "o", nil, "egress interface(s); several: a copy to each (required)")
		}
		cmd.AddCommand(sub)
	}
	return cmd
}

// kernSetup is a validated kern invocation.
type kernSetup struct {
	path    string // drop, pass, tx, redirect
	name    string // kern-drop, ...: the JSON mode
	program bpf.KernProgram
	tc      bool
	mode    hook.XDPMode
	in      netlink.Link
	outs    []netlink.Link
}

// validate checks every input before anything is loaded or attached.
func (f *kernFlags) validate(path string) (*kernSetup, error) {
	s := &kernSetup{path: path, name: "kern-" + path}
	if f.skb && f.native {
		return nil, errors.New("-S (generic) and -N (native) contradict each other")
	}
	mode, err := hook.ParseXDPMode(f.mode)
	if err != nil {
		return nil, fmt.Errorf("-m/--mode: %w", err)
	}
	if f.skb {
		mode = hook.Generic
	}
	if f.native {
		mode = hook.Native
	}
	s.mode = mode
	switch f.hook {
	case "", "xdp":
	case "tc":
		s.tc = true
	default:
		return nil, fmt.Errorf("--hook %q: want xdp or tc", f.hook)
	}
	if f.interval <= 0 {
		return nil, fmt.Errorf("-I/--interval %v: must be positive", f.interval)
	}
	if f.duration < 0 {
		return nil, fmt.Errorf("-d/--duration %v: must not be negative", f.duration)
	}

	switch path {
	case "drop":
		s.program = bpf.Drop
		switch {
		case s.tc && f.countProto:
			return nil, errors.New("--count-proto is for the XDP hook, not --hook tc")
		case s.tc:
			s.program = bpf.TCDrop
		case f.countProto:
			s.program = bpf.DropCountProto
		}
	case "pass":
		s.program = bpf.Pass
	case "tx":
		s.program = bpf.TX
	case "redirect":
		s.program = bpf.Redirect
		if len(f.out) == 0 {
			return nil, cliFlagError{errors.New("redirect needs -o OUT (or -o OUT1,OUT2 for a copy to each)")}
		}
		if len(f.out) > 1 {
			s.program = bpf.RedirectMulti
		}
	default:
		return nil, fmt.Errorf("unknown path %q", path)
	}

	if f.iface == "" {
		return nil, cliFlagError{errors.New("no interface given: use -i DEV")}
	}
	if s.in, err = kernLink(f.iface); err != nil {
		return nil, fmt.Errorf("-i: %w", err)
	}
	for i, o := range f.out {
		if o == f.iface {
			return nil, fmt.Errorf("-o %s: the egress interface must differ from -i", o)
		}
		if slices.Contains(f.out[:i], o) {
			return nil, fmt.Errorf("-o %s: listed twice", o)
		}
		l, err := kernLink(o)
		if err != nil {
			return nil, fmt.Errorf("-o: %w", err)
		}
		s.outs = append(s.outs, l)
	}
	if err := needRoot("kern "+path, privilege.BPF); err != nil {
		return nil, err
	}
	return s, nil
}

func kernLink(name string) (netlink.Link, error) {
	l, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil, fmt.Errorf("interface %q not found in this network namespace (list: ip link)", name)
		}
		return nil, fmt.Errorf("look up interface %q: %w", name, err)
	}
	return l, nil
}

func runKern(cmd *cobra.Command, path string, f *kernFlags) error {
	s, err := f.validate(path)
	if err != nil {
		return err
	}
	k, err := bpf.LoadKern(s.program, bpf.KernOptions{Counters: true})
	if err != nil {
		return err
	}
	defer k.Close()
	if len(s.outs) > 0 {
		idx := make([]int, len(s.outs))
		for i, l := range s.outs {
			idx[i] = l.Attrs().Index
		}
		if err := k.SetPorts(idx...); err != nil {
			return err
		}
	}

	var attachment io.Closer
	if s.tc {
		attachment, err = hook.AttachTCIngress(k.Program, s.in.Attrs().Index)
	} else {
		attachment, err = hook.AttachXDP(k.Program, s.in.Attrs().Index, s.mode, f.force)
	}
	var ae *hook.AttachedError
	if errors.As(err, &ae) {
		err = &engine.AttachedError{Device: ae.Device, ProgramID: ae.ProgramID, Mode: ae.Mode, LinkID: ae.LinkID, OwnerPID: ae.OwnerPID, OwnerComm: ae.OwnerComm}
	}
	if err != nil {
		return advise(err)
	}
	// Deferred, so it runs on every return and panic; a bpf_link would
	// also go with the process.
	defer attachment.Close()

	ctx, cancel := signalContext()
	defer cancel()
	if f.duration > 0 {
		var c2 func()
		ctx, c2 = context.WithTimeout(ctx, f.duration)
		defer c2()
	}

	p := &kernPrinter{w: cmd.OutOrStdout(), s: s, f: f, k: k, start: time.Now()}
	p.header()
	prev, err := p.snapshot()
	if err != nil {
		return err
	}
	first := prev
	tick := time.NewTicker(f.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			last, err := p.snapshot()
			if err != nil {
				return err
			}
			p.summary(first, last)
			return attachment.Close()
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
	t     time.Time
	stats bpf.QueueCPUStats
	proto []bpf.ProtoStat
	outTx []uint64 // tx packets of each -o interface, from its link statistics
	// For tx on a veth: XDP_TX frames the driver sent on, and those it
	// could not (veth's rx_queue_N_xdp_tx and _xdp_tx_errors).
	xdpTx, xdpTxErr uint64
	txCounted       bool
}

type kernPrinter struct {
	w     io.Writer
	s     *kernSetup
	f     *kernFlags
	k     *bpf.KernObjects
	start time.Time
}

func (p *kernPrinter) snapshot() (kernSnapshot, error) {
	snap := kernSnapshot{t: time.Now()}
	var err error
	if snap.stats, err = p.k.ReadStats(); err != nil {
		return snap, err
	}
	if p.s.program == bpf.DropCountProto {
		if snap.proto, err = p.k.ReadProtoStats(); err != nil {
			return snap, err
		}
	}
	for _, o := range p.s.outs {
		l, err := netlink.LinkByIndex(o.Attrs().Index)
		if err != nil {
			return snap, fmt.Errorf("read counters of %s: %w", o.Attrs().Name, err)
		}
		var tx uint64
		if st := l.Attrs().Statistics; st != nil {
			tx = st.TxPackets
		}
		snap.outTx = append(snap.outTx, tx)
	}
	if p.s.program == bpf.TX {
		if qs, err := netdev.VethQueueCounters(p.s.in.Attrs().Name); err == nil {
			t := netdev.SumVethQueues(qs)
			snap.xdpTx, snap.xdpTxErr, snap.txCounted = t.RxXDPTx, t.RxXDPTxErrors, true
		}
	}
	return snap, nil
}

func (p *kernPrinter) hookName() string {
	if p.s.tc {
		return "tc"
	}
	return "xdp"
}

func (p *kernPrinter) header() {
	if p.f.json {
		return
	}
	where := fmt.Sprintf("XDP %s mode", p.s.mode)
	if p.s.tc {
		where = "tc ingress"
	}
	extra := ""
	if len(p.s.outs) > 0 {
		extra = " -> " + strings.Join(p.f.out, ",")
	}
	fmt.Fprintf(p.w, "%s (%s) on %s%s, %s; counting per rx queue and CPU every %v; Ctrl-C to stop\n",
		p.s.name, p.s.program, p.s.in.Attrs().Name, extra, where, p.f.interval)
}

// kernRate is one row: a queue, a CPU, an egress port or a protocol.
type kernRate struct {
	Queue     *int    `json:"queue,omitempty"`
	CPU       *int    `json:"cpu,omitempty"`
	Interface string  `json:"interface,omitempty"`
	Proto     *int    `json:"proto,omitempty"`
	PPS       float64 `json:"pps"`
	BPS       float64 `json:"bps,omitempty"`
	Packets   uint64  `json:"packets"` // in the interval (rates) or in all (summary)
}

func intp(v int) *int { return &v }

// statRows are the per queue and per CPU rows of s, counted over dt seconds.
// Empty, not nil, so JSON shows [] rather than null.
func statRows(s bpf.QueueCPUStats, dt float64) (perQueue, perCPU []kernRate) {
	perQueue, perCPU = []kernRate{}, []kernRate{}
	rate := func(e bpf.QueueCPUStat) kernRate {
		r := kernRate{Packets: e.Packets}
		if dt > 0 {
			r.PPS, r.BPS = float64(e.Packets)/dt, float64(e.Bytes)*8/dt
		}
		return r
	}
	for _, e := range s.ByQueue() {
		r := rate(e)
		r.Queue = intp(e.Queue)
		perQueue = append(perQueue, r)
	}
	for _, e := range s.ByCPU() {
		r := rate(e)
		r.CPU = intp(e.CPU)
		perCPU = append(perCPU, r)
	}
	return perQueue, perCPU
}

// extraRows are the egress ports' and protocols' rows between two snapshots.
func (p *kernPrinter) extraRows(prev, cur kernSnapshot, dt float64) (outs, protos []kernRate) {
	outs, protos = []kernRate{}, []kernRate{}
	per := func(n uint64) float64 {
		if dt <= 0 {
			return 0
		}
		return float64(n) / dt
	}
	for i, o := range p.s.outs {
		n := counter.Sub(cur.outTx[i], prev.outTx[i])
		outs = append(outs, kernRate{Interface: o.Attrs().Name, PPS: per(n), Packets: n})
	}
	before := map[int]uint64{}
	for _, e := range prev.proto {
		before[e.Proto] = e.Packets
	}
	for _, e := range cur.proto {
		if n := counter.Sub(e.Packets, before[e.Proto]); n > 0 {
			protos = append(protos, kernRate{Proto: intp(e.Proto), PPS: per(n), Packets: n})
		}
	}
	return outs, protos
}

func (p *kernPrinter) interval(prev, cur kernSnapshot) {
	dt := cur.t.Sub(prev.t).Seconds()
	d := cur.stats.Sub(prev.stats)
	pkts, bytes := d.Total()
	perQueue, perCPU := statRows(d, dt)
	outs, protos := p.extraRows(prev, cur, dt)
	total, _ := cur.stats.Total()
	elapsed := cur.t.Sub(p.start).Seconds()
	if p.f.json {
		line := map[string]any{
			"type": "interval", "mode": p.s.name, "hook": p.hookName(), "t": round3(elapsed),
			"rx_pps": float64(pkts) / dt, "rx_bps": float64(bytes) * 8 / dt, "rx_packets": total,
			"per_queue": perQueue, "per_cpu": perCPU, "out": outs, "proto": protos,
		}
		if cur.txCounted {
			line["xdp_tx_pps"] = float64(cur.xdpTx-prev.xdpTx) / dt
			line["xdp_tx_errors_pps"] = float64(cur.xdpTxErr-prev.xdpTxErr) / dt
		}
		writeJSON(p.w, line)
		return
	}
	fmt.Fprintf(p.w, "[%7.2fs] %-14s %12s %12s %14d total\n", elapsed, "rx", units.PPS(float64(pkts)/dt), units.BPS(float64(bytes)*8/dt), total)
	if cur.txCounted {
		fmt.Fprintf(p.w, "%10s %-14s %12s %12s errors\n", "", "xdp_tx sent", units.PPS(float64(cur.xdpTx-prev.xdpTx)/dt),
			units.PPS(float64(cur.xdpTxErr-prev.xdpTxErr)/dt))
	}
	p.rows(perQueue, perCPU, outs, protos, true)
}

func (p *kernPrinter) rows(perQueue, perCPU, outs, protos []kernRate, rates bool) {
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
	for _, r := range perQueue {
		line(fmt.Sprintf("queue %d", *r.Queue), r)
	}
	for _, r := range perCPU {
		line(fmt.Sprintf("cpu %d", *r.CPU), r)
	}
	for _, r := range outs {
		line("tx "+r.Interface, r)
	}
	for _, r := range protos {
		label := fmt.Sprintf("proto %d", *r.Proto)
		if *r.Proto == bpf.ProtoNotIP {
			label = "not IP"
		}
		line(label, r)
	}
}

// kernSummary is the last JSON line of kern.
type kernSummary struct {
	Type       string     `json:"type"`
	Mode       string     `json:"mode"`
	Program    string     `json:"program"`
	Hook       string     `json:"hook"`
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
	// XDPTx and XDPTxErrors are, for tx on a veth, the frames the driver
	// sent back out and those it could not.
	XDPTx       *uint64 `json:"xdp_tx,omitempty"`
	XDPTxErrors *uint64 `json:"xdp_tx_errors,omitempty"`
}

func (p *kernPrinter) summary(first, last kernSnapshot) {
	dur := last.t.Sub(p.start).Seconds()
	// Counters start at zero at load; the first snapshot is the baseline
	// for the egress ports only.
	pkts, bytes := last.stats.Total()
	perQueue, perCPU := statRows(last.stats, dur)
	zero := kernSnapshot{outTx: first.outTx}
	outs, protos := p.extraRows(zero, last, dur)
	sum := kernSummary{
		Type: "summary", Mode: p.s.name, Program: string(p.s.program), Hook: p.hookName(),
		Interface: p.s.in.Attrs().Name, Out: p.f.out, DurationS: round3(dur),
		RxPackets: pkts, RxBytes: bytes, PerQueue: perQueue, PerCPU: perCPU, OutTx: outs, PerProto: protos,
		CountProto: p.s.program == bpf.DropCountProto,
	}
	if !p.s.tc {
		sum.XDPMode = p.s.mode.String()
	}
	if dur > 0 {
		sum.RxPPS = float64(pkts) / dur
	}
	var sent, failed uint64
	if last.txCounted && first.txCounted {
		sent, failed = last.xdpTx-first.xdpTx, last.xdpTxErr-first.xdpTxErr
		sum.XDPTx, sum.XDPTxErrors = &sent, &failed
	}
	if p.f.json {
		writeJSON(p.w, sum)
		return
	}
	fmt.Fprintf(p.w, "\n%s on %s: %.2f s, rx %d packets, %d bytes (%s on average)\n",
		p.s.name, sum.Interface, dur, pkts, bytes, units.PPS(sum.RxPPS))
	if sum.XDPTx != nil {
		fmt.Fprintf(p.w, "  xdp_tx: %d sent back, %d failed\n", sent, failed)
		if failed > 0 {
			fmt.Fprintf(p.w, "  (a veth delivers XDP_TX frames only to a peer that runs an XDP program: attach one there, e.g. xdpeng kern pass -i %s in the peer's namespace)\n",
				peerHint(p.s.in.Attrs().Name))
		}
	}
	p.rows(perQueue, perCPU, outs, protos, false)
}

// peerHint names the test bed peer of a dutK interface, or says "the peer".
func peerHint(name string) string {
	if strings.HasPrefix(name, "dut") {
		return "gen" + strings.TrimPrefix(name, "dut")
	}
	return "PEER"
}
