//go:build linux

package compare

import (
	"context"
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/handler"
	"github.com/xdpeng/xdpeng/internal/lab/kern"
	"github.com/xdpeng/xdpeng/internal/lab/latency"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// pathOpts is what a run asks of a path beyond its name.
type pathOpts struct {
	// wait is the wait mode of xdpeng's engine (xsk-* paths).
	wait engine.WaitMode
	// handler, if set, replaces the xsk-l2fwd path's handler (tests).
	handler func(queue int) engine.Handler
	// stamp, if set, makes the sinks latency receivers of a stamped run.
	stamp *stampRun
	// packetOp and loadBytes are what the in-kernel XDP paths do to each
	// frame (Config.PacketOp, Config.LoadBytes).
	packetOp  string
	loadBytes bool
}

// stampRun is a run of stamped frames (internal/lab/latency).
type stampRun struct {
	runID   uint32
	count   uint64 // frames the run sends
	streams int    // generator threads
}

// newRunner makes the runner of path name in e; nothing is touched yet.
func newRunner(name string, e *env, o pathOpts) (runner, error) {
	if e.remote != nil {
		return newRemoteRunner(name, e, o)
	}
	switch name {
	case "xdp-drop":
		return &kernRunner{e: e, o: o, action: kern.Drop, hook: kern.XDP}, nil
	case "xdp-drop-generic":
		return &kernRunner{e: e, o: o, action: kern.Drop, hook: kern.XDPGeneric}, nil
	case "tc-drop":
		return &kernRunner{e: e, o: o, action: kern.Drop, hook: kern.TC}, nil
	case "xdp-tx":
		return &kernRunner{e: e, o: o, action: kern.TX, hook: kern.XDP, back: true}, nil
	case "xsk-drop":
		return &xskRunner{e: e, o: o}, nil
	case "xsk-drop-busy-poll":
		o.wait = engine.WaitBusyPoll
		return &xskRunner{e: e, o: o}, nil
	case "xsk-l2fwd":
		return &xskRunner{e: e, o: o, l2fwd: true}, nil
	case "xsk-fwd":
		return &xskRunner{e: e, o: o, fwd: true}, nil
	case "asavie-drop":
		return &asavieRunner{e: e}, nil
	case "af-packet":
		return &afPacketRunner{e: e, fd: -1}, nil
	case "bridge":
		return &bridgeRunner{e: e, o: o}, nil
	case "xdp-redirect":
		return &kernRunner{e: e, o: o, action: kern.Redirect, hook: kern.XDP, outs: []int{1}}, nil
	case "xdp-redirect-generic":
		return &kernRunner{e: e, o: o, action: kern.Redirect, hook: kern.XDPGeneric, outs: []int{1}}, nil
	case "xdp-redirect-multi":
		return &kernRunner{e: e, o: o, action: kern.Redirect, hook: kern.XDP, outs: []int{1, 2}}, nil
	case "xdp-redirect-cpu":
		return &kernRunner{e: e, o: o, action: kern.RedirectCPU, hook: kern.XDP}, nil
	case "dpdk-af-xdp":
		return &dpdkRunner{e: e, o: o}, nil
	case "dpdk-af-xdp-nobusy":
		return &dpdkRunner{e: e, o: o, noBusy: true}, nil
	case "dpdk-l2fwd":
		return &dpdkRunner{e: e, o: o, macswap: true}, nil
	case "dpdk-l2fwd-nobusy":
		return &dpdkRunner{e: e, o: o, macswap: true, noBusy: true}, nil
	}
	switch name {
	case "xdp-trafficgen-udp":
		o.packetOp, o.loadBytes = "", false // the sink of the generator under test
		return &trafficgenRunner{kernRunner: kernRunner{e: e, o: o, action: kern.Drop, hook: kern.XDP}, name: name, tool: XdpTrafficgen}, nil
	case "trafgen-udp":
		o.packetOp, o.loadBytes = "", false
		return &trafficgenRunner{kernRunner: kernRunner{e: e, o: o, action: kern.Drop, hook: kern.XDP}, name: name, tool: Trafgen}, nil
	}
	if p, ok := peerPaths[name]; ok {
		return &peerRunner{e: e, o: o, name: name, p: p}, nil
	}
	return nil, fmt.Errorf("no runner for path %q", name)
}

// sinks count frames where they come out of the test bed, on the generator
// end of each egress link, and drop them: cheaper than letting them into the
// generator side's stack, and exact. They count only the generator's frames
// (UDP to genDstPort): a bridge's own IGMP reports, sent when it comes up,
// also come out there. Frames that arrive by XDP redirect need
// an XDP program there (it gives the veth peer the NAPI it needs to take
// them); frames that arrive as skbs (AF_XDP copy-mode transmit, the bridge)
// are counted by a tc ingress program instead, because an XDP program on a
// veth makes the kernel copy every skb into a page-pool frame before it runs
// (skb_pp_cow_data), work that would be charged to the path under test.
//
// For a stamped run the sink is a latency receiver (internal/lab/latency)
// on one link instead, at the same hook: it counts the run's frames, takes
// their delay and drops them.
type sinks struct {
	paths []*kern.Path
	recv  *latency.Receiver
}

// sinkKind says how the frames reach a sink.
type sinkKind int

const (
	xdpFrames sinkKind = iota // redirected XDP frames
	skbFrames                 // skbs
)

// attachSinks puts a sink on the generator end of each link in links, or
// with stamp a latency receiver on the one link.
func attachSinks(e *env, links []int, kind sinkKind, stamp *stampRun) (*sinks, error) {
	s := &sinks{}
	h := kern.XDP
	if kind == skbFrames {
		h = kern.TC
	}
	if stamp != nil {
		if len(links) != 1 {
			return s, fmt.Errorf("a latency receiver takes frames from one link, not %d", len(links))
		}
		rh := latency.XDP
		if kind == skbFrames {
			rh = latency.TC
		}
		l := e.links[links[0]]
		err := e.inGen(func() (err error) {
			s.recv, err = latency.Attach(latency.ReceiverConfig{
				Ifindex: l.GenIndex, Hook: rh, RunID: stamp.runID, Streams: stamp.streams, Capacity: stamp.count,
			})
			if err != nil {
				return fmt.Errorf("on %s: %w", l.Gen, err)
			}
			return nil
		})
		return s, err
	}
	err := e.inGen(func() error {
		for _, k := range links {
			l := e.links[k]
			p, err := kern.Open(kern.Config{Action: kern.Drop, Interface: l.Gen, Hook: h, CountUDPDstPort: genDstPort})
			if err != nil {
				return fmt.Errorf("sink on %s: %w", l.Gen, err)
			}
			s.paths = append(s.paths, p)
		}
		return nil
	})
	if err != nil {
		return s, errors.Join(err, s.close())
	}
	return s, nil
}

func (s *sinks) count() (uint64, error) {
	if s.recv != nil {
		c, err := s.recv.Read()
		return c.Received, err
	}
	var n uint64
	for _, p := range s.paths {
		st, err := p.Stats()
		if err != nil {
			return 0, err
		}
		p, _ := st.Total()
		n += p
	}
	return n, nil
}

// close detaches and frees the sinks; safe on nil and twice.
func (s *sinks) close() error {
	if s == nil {
		return nil
	}
	var errs []error
	for _, p := range s.paths {
		errs = append(errs, p.Close())
	}
	s.paths = nil
	if s.recv != nil {
		errs = append(errs, s.recv.Close())
		s.recv = nil
	}
	return errors.Join(errs...)
}

// egressDrops adds the drop counters of the DUT's egress links (dut1,
// dut2) to reasons: frames a native redirect could not queue to the veth
// peer (xdp_xmit_errors) and frames the stack's transmit dropped
// (tx_dropped: bridge, generic redirect, AF_XDP copy-mode transmit).
func (e *env) egressDrops(links []int, reasons map[string]uint64) error {
	return e.inDUT(func() error {
		for _, k := range links {
			name := e.links[k].DUT
			if qs, err := netdev.VethQueueCounters(name); err == nil {
				reasons["egress_xmit_errors"] += netdev.SumVethQueues(qs).TxXDPXmitErrors
			}
			st, err := netdev.ReadLinkStats(e.links[k].DUTIndex)
			if err != nil {
				return err
			}
			reasons["egress_tx_dropped"] += st.TxDropped
		}
		return nil
	})
}

// kernRunner is an in-kernel path (internal/lab/kern): a drop, a redirect
// counted by sinks, or XDP_TX counted by a sink where the frames come back.
type kernRunner struct {
	e      *env
	o      pathOpts
	action kern.Action
	hook   kern.Hook
	outs   []int // egress links of a redirect
	back   bool  // frames come back out of dut0: count them on gen0 (test bed)

	k    *kern.Path
	sink *sinks
}

func (r *kernRunner) start(context.Context) (err error) {
	// Sinks first: veth takes redirected (and XDP_TX) frames only if
	// the peer of the egress port can receive them, and an XDP program
	// there is what makes it.
	if sinkLinks := r.sinkLinks(); len(sinkLinks) > 0 {
		if r.sink, err = attachSinks(r.e, sinkLinks, xdpFrames, r.o.stamp); err != nil {
			return err
		}
	}
	cfg := kern.Config{Action: r.action, Interface: r.e.dut, Hook: r.hook}
	if r.hook != kern.TC {
		cfg.PacketOp, cfg.LoadBytes = r.o.packetOp, r.o.loadBytes
	}
	for _, k := range r.outs {
		cfg.Outs = append(cfg.Outs, r.e.links[k].DUT)
	}
	if r.action == kern.RedirectCPU {
		// To the receiver CPU, where the CPUMAP's kthread takes them.
		cfg.CPUs = r.e.dutCPUs[:1]
	}
	return r.e.inDUT(func() error {
		r.k, err = kern.Open(cfg)
		return err
	})
}

// sinkLinks are the links whose generator end the frames come out of.
func (r *kernRunner) sinkLinks() []int {
	if r.back && r.e.generates() {
		return []int{0}
	}
	return r.outs
}

func (r *kernRunner) sample() (s sample, err error) {
	s.reasons = map[string]uint64{}
	if r.sink != nil {
		if s.received, err = r.sink.count(); err != nil {
			return s, err
		}
		if len(r.outs) > 0 {
			if err := r.e.egressDrops(r.outs, s.reasons); err != nil {
				return s, err
			}
		}
	} else if r.action == kern.RedirectCPU {
		c, err := r.k.Read()
		if err != nil {
			return s, err
		}
		for _, rc := range c.Remote {
			s.received += rc.Packets
		}
	} else {
		st, err := r.k.Stats()
		if err != nil {
			return s, err
		}
		s.received, _ = st.Total()
	}
	if v, ok := r.e.vethRx(); ok {
		s.reasons["veth_rx_drops"] = v.RxDrops
	}
	return s, r.e.traceReasons(&s, r.hook == kern.XDP)
}

func (r *kernRunner) stop() error {
	var errs []error
	if r.k != nil {
		errs = append(errs, r.k.Close())
		r.k = nil
	}
	errs = append(errs, r.sink.close())
	return errors.Join(errs...)
}

func (r *kernRunner) countedAt() string {
	switch {
	case len(r.outs) > 0:
		return "XDP counter on the generator end of each egress link"
	case r.sink != nil:
		return "frames that came back: XDP counter on gen0"
	case r.back:
		return "the XDP program's per-CPU count of frames it sent back (XDP_TX)"
	case r.hook == kern.TC:
		return "the tc program's per-CPU counter"
	case r.action == kern.RedirectCPU:
		return "the CPUMAP program's counter on the CPU the frames were sent to"
	}
	return "the XDP program's per-CPU counter"
}

func (r *kernRunner) copies() int { return max(1, len(r.outs)) }

// xskRunner is xdpeng's engine: rxdrop, or l2fwd.
type xskRunner struct {
	e     *env
	o     pathOpts
	l2fwd bool // send back out of dut0
	fwd   bool // forward out of dut1

	eng       *engine.Engine
	guardDone func() error // ends the engine's NAPI guard, nil for none
	cancel    context.CancelFunc
	done      chan error
	sink      *sinks
}

func (r *xskRunner) start(ctx context.Context) (err error) {
	cfg := engine.DefaultConfig()
	cfg.Interface = r.e.dut
	cfg.Queues = r.e.queues
	cfg.CPUs = r.e.cpus
	cfg.Wait = r.o.wait
	if r.l2fwd {
		cfg.Handler = func(int) engine.Handler { return handler.L2Fwd{} }
		if r.o.handler != nil {
			cfg.Handler = r.o.handler
		}
		if r.e.generates() {
			// Frames sent back arrive at gen0: count them there.
			if r.sink, err = attachSinks(r.e, []int{0}, skbFrames, r.o.stamp); err != nil {
				return err
			}
		}
	}
	if r.fwd {
		out := r.e.links[1]
		cfg.Outputs = []engine.Output{{Interface: out.DUT}}
		cfg.Handler = func(int) engine.Handler {
			return &handler.Fwd{Dest: engine.ToOutput(0), DstMAC: out.GenMAC}
		}
		// Forwarded frames leave dut1 as skbs (copy-mode transmit).
		if r.sink, err = attachSinks(r.e, []int{1}, skbFrames, r.o.stamp); err != nil {
			return err
		}
	}
	if err := r.e.inDUT(func() (err error) {
		if r.e.napiGuard != nil {
			cfg.NAPIGuard, r.guardDone = r.e.napiGuard(r.e.dut)
		}
		r.eng, err = engine.New(cfg)
		return err
	}); err != nil {
		if r.guardDone != nil {
			r.guardDone()
			r.guardDone = nil
		}
		return err
	}
	ctx, r.cancel = context.WithCancel(ctx)
	r.done = make(chan error, 1)
	go func() { r.done <- r.eng.Run(ctx) }()
	return nil
}

func (r *xskRunner) sample() (s sample, err error) {
	snap, err := r.eng.Stats()
	if err != nil {
		return s, err
	}
	t := snap.Total()
	s.received = t.RxPackets
	drops := t.XDP.Drops()
	s.reasons = map[string]uint64{"socket_drops": drops}
	if r.l2fwd {
		s.received = t.TxPackets
		if r.sink != nil {
			if s.received, err = r.sink.count(); err != nil {
				return s, err
			}
			if err := r.e.egressDrops([]int{0}, s.reasons); err != nil {
				return s, err
			}
		}
		s.reasons["tx_ring_full"] = t.TxRingFull
	}
	if r.fwd {
		if s.received, err = r.sink.count(); err != nil {
			return s, err
		}
		if err := r.e.egressDrops([]int{1}, s.reasons); err != nil {
			return s, err
		}
		s.reasons["tx_ring_full"] = t.TxRingFull
		s.reasons["dropped"] = t.Dropped
	}
	if v, ok := r.e.vethRx(); ok {
		// veth counts a redirect to a full socket in its rx drops too:
		// the row keeps only the rest so that nothing is counted twice.
		s.reasons["veth_rx_drops"] = v.RxDrops
		s.include("veth_rx_drops", "socket_drops")
	}
	return s, r.e.traceReasons(&s, true)
}

func (r *xskRunner) stop() error {
	var errs []error
	if r.cancel != nil {
		r.cancel()
		if err := <-r.done; err != nil {
			errs = append(errs, fmt.Errorf("engine: %w", err))
		}
		r.cancel = nil
	}
	if r.eng != nil {
		errs = append(errs, r.eng.Close())
		r.eng = nil
	}
	if r.guardDone != nil {
		errs = append(errs, r.guardDone())
		r.guardDone = nil
	}
	errs = append(errs, r.sink.close())
	return errors.Join(errs...)
}

func (r *xskRunner) countedAt() string {
	switch {
	case r.fwd:
		return "frames forwarded out of dut1: tc ingress counter on gen1"
	case !r.l2fwd:
		return "the engine's rx counter"
	case r.sink != nil:
		return "frames that came back: tc ingress counter on gen0"
	}
	return "the engine's tx completions"
}

func (r *xskRunner) copies() int { return 1 }

// bridgeRunner bridges dut0 and dut1.
type bridgeRunner struct {
	e      *env
	o      pathOpts
	bridge netlink.Link
	sink   *sinks
}

// bridgeName is the bridge's name inside the DUT namespace (one bed, one
// bridge at a time).
const bridgeName = "cmpbr0"

func (r *bridgeRunner) start(context.Context) (err error) {
	if r.sink, err = attachSinks(r.e, []int{1}, skbFrames, r.o.stamp); err != nil {
		return err
	}
	return r.e.inDUT(func() error {
		br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: bridgeName}}
		if err := netlink.LinkAdd(br); err != nil {
			return fmt.Errorf("create bridge %s: %w", bridgeName, err)
		}
		l, err := netlink.LinkByName(bridgeName)
		if err != nil {
			netlink.LinkDel(br)
			return fmt.Errorf("find bridge %s: %w", bridgeName, err)
		}
		r.bridge = l
		for _, k := range []int{0, 1} {
			name := r.e.links[k].DUT
			port, err := netlink.LinkByName(name)
			if err != nil {
				return fmt.Errorf("find %s: %w", name, err)
			}
			if err := netlink.LinkSetMaster(port, l); err != nil {
				return fmt.Errorf("add %s to bridge %s: %w", name, bridgeName, err)
			}
		}
		if err := netlink.LinkSetUp(l); err != nil {
			return fmt.Errorf("bring bridge %s up: %w", bridgeName, err)
		}
		// A static entry for gen1's MAC on dut1, as a bridge that has
		// learned it would have: forward, not flood.
		fdb := &netlink.Neigh{
			LinkIndex: r.e.links[1].DUTIndex, Family: unix.AF_BRIDGE, Flags: netlink.NTF_MASTER,
			State: netlink.NUD_NOARP, HardwareAddr: r.e.links[1].GenMAC,
		}
		if err := netlink.NeighAppend(fdb); err != nil {
			return fmt.Errorf("add fdb entry %s on %s: %w", fdb.HardwareAddr, r.e.links[1].DUT, err)
		}
		return nil
	})
}

func (r *bridgeRunner) sample() (s sample, err error) {
	s.reasons = map[string]uint64{}
	if s.received, err = r.sink.count(); err != nil {
		return s, err
	}
	if err := r.e.egressDrops([]int{1}, s.reasons); err != nil {
		return s, err
	}
	if v, ok := r.e.vethRx(); ok {
		s.reasons["veth_rx_drops"] = v.RxDrops
	}
	return s, nil
}

func (r *bridgeRunner) stop() error {
	var errs []error
	if r.bridge != nil {
		// Deleting the bridge releases its ports.
		errs = append(errs, r.e.inDUT(func() error {
			if err := netlink.LinkDel(r.bridge); err != nil {
				return fmt.Errorf("delete bridge %s: %w", bridgeName, err)
			}
			return nil
		}))
		r.bridge = nil
	}
	errs = append(errs, r.sink.close())
	return errors.Join(errs...)
}

func (r *bridgeRunner) countedAt() string { return "tc ingress counter on gen1" }
func (r *bridgeRunner) copies() int       { return 1 }

func (r *kernRunner) xdpMode() string {
	if r.hook == kern.TC {
		return "none (tc ingress)"
	}
	return r.hook.XDPMode()
}

func (r *xskRunner) xdpMode() string {
	if r.eng == nil {
		return ""
	}
	return xskMode(r.eng.Config().XDPMode.String(), r.eng.ZeroCopy())
}

// xskMode is the XDP mode of an AF_XDP path: where its steering program
// runs, and whether the sockets copy.
func xskMode(steering string, zeroCopy bool) string {
	if zeroCopy {
		return steering + ", AF_XDP zero-copy"
	}
	return steering + ", AF_XDP copy"
}

func (r *bridgeRunner) xdpMode() string { return "none (bridge)" }
