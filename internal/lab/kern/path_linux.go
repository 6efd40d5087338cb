package kern

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/internal/hook"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// The two spell "no rx queue recorded" alike.
const _ = uint(QueueUnrecorded-bpf.QueueUnrecorded) + uint(bpf.QueueUnrecorded-QueueUnrecorded)

// The limits and constants here and in bpf must agree.
const (
	_ = uint(bpf.MaxPorts - MaxOuts)
	_ = uint(MaxOuts - bpf.MaxPorts)
	_ = uint(bpf.ProtoNotIP - ProtoNotIP)
	_ = uint(ProtoNotIP - bpf.ProtoNotIP)
)

// Reasons Open fails for, besides a bad Config, a missing interface (a
// *netdev.NoInterfaceError) and an XDP program someone else attached (a
// *netdev.ForeignXDPError).
var (
	// ErrNoNativeXDP: the driver has no native XDP; XDPGeneric works on
	// every interface.
	ErrNoNativeXDP = hook.ErrNoNativeXDP
	// ErrMTUTooLarge: the driver takes no XDP program at the interface's
	// MTU in this mode.
	ErrMTUTooLarge = hook.ErrMTUTooLarge
)

// Path is an in-kernel path attached to an interface. Its methods may be
// called from any goroutine, but not after Close.
type Path struct {
	cfg  Config
	in   netdev.Info
	outs []netdev.Info
	objs *bpf.KernObjects
	att  io.Closer

	once     sync.Once
	closeErr error
}

// Check validates cfg and looks up its interfaces as Open would, refusing
// what Open would refuse for the same reasons, but loads and attaches
// nothing and needs no privilege: a caller can refuse bad input before it
// asks for privilege.
func Check(cfg Config) error {
	_, _, err := lookup(cfg)
	return err
}

// lookup validates cfg and looks up its interfaces.
func lookup(cfg Config) (*netdev.Info, []netdev.Info, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	in, err := netdev.Lookup(cfg.Interface)
	if err != nil {
		return nil, nil, err
	}
	if cfg.Hook == XDP {
		if err := checkNative(in); err != nil {
			return nil, nil, err
		}
	}
	var outs []netdev.Info
	for _, name := range cfg.Outs {
		o, err := netdev.Lookup(name)
		if err != nil {
			return nil, nil, err
		}
		outs = append(outs, *o)
	}
	return in, outs, nil
}

// checkNative refuses native XDP on a device the kernel reports without
// it, before anything is loaded.
func checkNative(in *netdev.Info) error {
	feat, err := netdev.Features(in.Index)
	switch {
	case errors.Is(err, netdev.ErrNoXDPFeatures):
		return nil // only attaching tells
	case err != nil:
		return err
	case !feat.XDP.Has(netdev.XDPBasic):
		return fmt.Errorf("%s: %w: the kernel does not report the basic XDP feature for it, so XDP runs there only in generic mode", in.Name, ErrNoNativeXDP)
	}
	return nil
}

// NativeOrGeneric is the XDP hook a path gets on the interface called name
// when none is asked for: XDP (native) where the kernel reports native XDP
// for it, or does not report XDP features at all; XDPGeneric elsewhere.
func NativeOrGeneric(name string) (Hook, error) {
	in, err := netdev.Lookup(name)
	if err != nil {
		return XDP, err
	}
	if errors.Is(checkNative(in), ErrNoNativeXDP) {
		return XDPGeneric, nil
	}
	return XDP, nil
}

// Open loads the program of the path cfg describes, with its counters on,
// sets its egress interfaces and attaches it. On error nothing stays loaded
// or attached. A missing interface is a *netdev.NoInterfaceError; an XDP
// program someone else attached, a *netdev.ForeignXDPError; see also
// ErrNoNativeXDP and ErrMTUTooLarge.
//
// The path stays attached until Close, or until the process ends: it is
// attached through a bpf_link (at tc through TCX). Only on kernels without
// those (before 5.9 for XDP, 6.6 for tc) does it fall back to netlink, and
// then a killed process leaves the program attached.
func Open(cfg Config) (_ *Path, err error) {
	in, outs, err := lookup(cfg)
	if err != nil {
		return nil, err
	}
	cfg.Outs, cfg.CPUs = slices.Clone(cfg.Outs), slices.Clone(cfg.CPUs)
	p := &Path{cfg: cfg, in: *in, outs: outs}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	opts := bpf.KernOptions{Counters: true, CountUDPDstPort: cfg.CountUDPDstPort, PacketOp: bpf.PacketOp(cfg.PacketOp), LoadBytes: cfg.LoadBytes,
		CPUs: cfg.CPUs, QSize: cfg.QSize, RemotePass: cfg.RemotePass}
	if p.objs, err = bpf.LoadKern(bpf.KernProgram(cfg.Program()), opts); err != nil {
		return nil, err
	}
	if len(outs) > 0 {
		idx := make([]int, len(outs))
		for i, o := range outs {
			idx[i] = o.Index
		}
		if err := p.objs.SetPorts(idx...); err != nil {
			return nil, err
		}
	}
	if p.att, err = hook.Attach(p.objs.Program, in.Index, cfg.Hook, netdev.ReplaceOf(cfg.Force, cfg.ForceInUse)); err != nil {
		return nil, err
	}
	return p, nil
}

// TCVia says how a tc path's program is attached: "tcx", or "clsact" on a
// kernel without TCX (before Linux 6.6); "" for an XDP path.
func (p *Path) TCVia() string { return hook.TCVia(p.att) }

// Config returns the path's configuration.
func (p *Path) Config() Config {
	c := p.cfg
	c.Outs = slices.Clone(c.Outs)
	return c
}

// Program names the program the path runs (Config.Program).
func (p *Path) Program() string { return p.cfg.Program() }

// DefaultQSize is RedirectCPU's queue to each CPU when Config.QSize is 0.
const DefaultQSize = bpf.DefaultQSize

// ErrNoLoadBytes is returned for Config.LoadBytes on a kernel without
// bpf_xdp_load_bytes (before Linux 5.18).
var ErrNoLoadBytes = bpf.ErrNoLoadBytes

// HaveLoadBytes probes whether the kernel has bpf_xdp_load_bytes, which
// Config.LoadBytes needs: an error wrapping ErrNoLoadBytes where it has
// not, another where the probe could not be made (no privilege).
func HaveLoadBytes() error { return bpf.HaveLoadBytes() }

// PacketOp is the packet operation the path applies: Config.PacketOp, or
// the path's default; "" for a path that takes none (tc, CountProto).
func (p *Path) PacketOp() string {
	if !p.objs.Kind.TakesPacketOp() {
		return ""
	}
	return string(p.objs.Op)
}

// Interface is the interface the path runs on, as it was when opened.
func (p *Path) Interface() netdev.Info { return p.in }

// Outs are the egress interfaces of a redirect, in the order of
// Config.Outs, as they were when opened.
func (p *Path) Outs() []netdev.Info { return slices.Clone(p.outs) }

// Stats reads the per rx queue, per CPU counters.
func (p *Path) Stats() (Stats, error) {
	raw, err := p.objs.ReadStats()
	if err != nil {
		return nil, err
	}
	s := make(Stats, len(raw))
	for i, e := range raw {
		s[i] = QueueCPU{Queue: e.Queue, CPU: e.CPU, Packets: e.Packets, Bytes: e.Bytes}
	}
	return s, nil
}

// ProtoStats reads the per-protocol counters, summed over CPUs, of the
// protocols seen, ordered by protocol. Only a path opened with CountProto
// has them.
func (p *Path) ProtoStats() ([]ProtoCount, error) {
	if !p.cfg.CountProto {
		return nil, fmt.Errorf("kern: %s does not count per protocol", p.cfg.Program())
	}
	raw, err := p.objs.ReadProtoStats()
	if err != nil {
		return nil, err
	}
	out := make([]ProtoCount, len(raw))
	for i, e := range raw {
		out[i] = ProtoCount{Proto: e.Proto, Packets: e.Packets}
	}
	return out, nil
}

// Read reads all the path's counters (see Counters). The interfaces'
// counters are read in the calling thread's network namespace, which must
// be the one the path was opened in.
func (p *Path) Read() (Counters, error) {
	var c Counters
	var err error
	if c.Stats, err = p.Stats(); err != nil {
		return c, err
	}
	if p.cfg.CountProto {
		if c.Proto, err = p.ProtoStats(); err != nil {
			return c, err
		}
	}
	for _, o := range p.outs {
		st, err := netdev.ReadLinkStats(o.Index)
		if err != nil {
			return c, err
		}
		c.OutTx = append(c.OutTx, st.TxPackets)
	}
	if p.cfg.Action == RedirectCPU {
		rs, err := p.objs.ReadRemoteStats()
		if err != nil {
			return c, err
		}
		for _, r := range rs {
			c.Remote = append(c.Remote, RemoteCount{CPU: r.CPU, Packets: r.Packets, Bytes: r.Bytes})
		}
	}
	if p.cfg.Action == TX {
		// Only veth counts XDP_TX per queue; other drivers have nothing
		// to read here.
		if qs, err := netdev.VethQueueCounters(p.in.Name); err == nil {
			t := netdev.SumVethQueues(qs)
			c.XDPTx = &XDPTx{Sent: t.RxXDPTx, Failed: t.RxXDPTxErrors}
		}
	}
	return c, nil
}

// Close detaches the program and frees it and its maps; later calls return
// the first result. Where the program was attached through netlink (old
// kernels), Close must run in the network namespace of Open.
func (p *Path) Close() error {
	p.once.Do(func() {
		var errs []error
		if p.att != nil {
			errs = append(errs, p.att.Close())
		}
		if p.objs != nil {
			errs = append(errs, p.objs.Close())
		}
		p.closeErr = errors.Join(errs...)
	})
	return p.closeErr
}
