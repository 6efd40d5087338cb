package engine

// Forwarding between two devices (xdpeng fwd): each worker receives on one
// queue of the input device and transmits on the same queue of the output
// device, through a second socket that is the worker's port 1.

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/internal/xsk"
)

// ForwardConfig is the output side of a forwarding engine. Queue q of
// Config.Interface is forwarded out of queue q of Interface, which must
// therefore have at least as many queues as the highest input queue plus
// one (queues are not folded: two input queues on one output queue would
// need two sockets on it, which the kernel refuses).
type ForwardConfig struct {
	// Interface is the device to transmit on; it must differ from the
	// input device.
	Interface string
	// DstMAC is written as the destination of every forwarded frame; nil
	// means, on a veth, the address of the output device's peer (which may
	// live in another namespace).
	DstMAC net.HardwareAddr
	// CopyOut makes the output sockets use UMEMs of their own, into which
	// every frame is copied. By default an output socket shares its
	// worker's UMEM (XDP_SHARED_UMEM across devices, Linux 5.10 and later),
	// so frames move without a copy; if the kernel refuses that, the engine
	// falls back to copying (see Engine.ForwardUmem).
	CopyOut bool
}

func (f *ForwardConfig) validate(c *Config) error {
	if f.Interface == "" {
		return errors.New("forwarding needs an output device: use -o DEV")
	}
	if f.Interface == c.Interface {
		return fmt.Errorf("input and output are both %s: forwarding needs two devices (to send frames back out of the queue they came in on, use l2fwd)", f.Interface)
	}
	if f.DstMAC != nil && len(f.DstMAC) != 6 {
		return fmt.Errorf("destination MAC %q: need a 6-byte Ethernet address", f.DstMAC)
	}
	return nil
}

// outFrames is the number of UMEM frames an output socket keeps in its fill
// ring. The kernel requires a fill ring on every socket that does not share
// its rings, and fills nothing from it on a socket without an rx ring: the
// smallest ring (one slot) with one frame wastes least.
const (
	outFrames   = 1
	outFillSize = 1
)

// lookupOut checks the output device against the input one and fills in
// the destination MAC.
func lookupOut(cfg *Config, in *netdev.Info) (*netdev.Info, error) {
	f := *cfg.Forward
	out, err := netdev.Lookup(f.Interface)
	if err != nil {
		return nil, fmt.Errorf("output device: %w", err)
	}
	if out.Index == in.Index {
		return nil, fmt.Errorf("input %s and output %s are the same device: forwarding needs two devices", in.Name, out.Name)
	}
	outQueues := max(out.TxQueues, out.RxQueues)
	for _, q := range cfg.Queues {
		if q >= outQueues {
			return nil, fmt.Errorf("input queue %d has no counterpart on %s, which has %d queues: queue q is forwarded out of queue q, so bind fewer queues with -q or give %s more queues",
				q, out.Name, outQueues, out.Name)
		}
	}
	if f.DstMAC == nil {
		mac, _, err := gen.DstMAC(out.Index, netip.Addr{})
		if err != nil {
			return nil, fmt.Errorf("destination MAC for %s: %w: give it with --dst-mac", out.Name, err)
		}
		f.DstMAC = mac
	}
	cfg.Forward = &f
	return out, nil
}

// bindOut gives worker w its output socket, on the output device's queue of
// the same number, as port 1. With a shared UMEM the socket takes frame
// fillFrame of the worker's UMEM for its fill ring; without, or when the
// kernel refuses to share, it gets a UMEM of its own.
func (e *Engine) bindOut(w *Worker, fillFrame uint32) error {
	cfg := &e.cfg
	sc := xsk.SocketConfig{
		Ifindex:        e.out.Index,
		Queue:          w.queue,
		FillSize:       outFillSize,
		CompletionSize: cfg.CompletionSize,
		TxSize:         cfg.TxSize,
	}
	if e.outShared {
		shared := sc
		shared.FirstFrame, shared.NumFrames = fillFrame, outFrames
		// Bind flags are refused on a socket that shares a UMEM: copy
		// or zero-copy and need_wakeup come from the UMEM's first socket.
		s, err := xsk.NewSocket(w.umem, shared)
		if err == nil {
			w.ports = append(w.ports, s)
			return nil
		}
		if len(e.workers) > 1 {
			// Queue 0 shared its UMEM, this one cannot: mixing the two
			// would make the header's "shared" a half-truth.
			return fmt.Errorf("queue %d: share UMEM with %s: %w", w.queue, e.out.Name, err)
		}
		e.outShared, e.outSharedErr = false, err
	}
	u, err := xsk.NewUmem(xsk.UmemConfig{FrameSize: cfg.FrameSize, NumFrames: cfg.TxSize + outFrames})
	if err != nil {
		return fmt.Errorf("queue %d: UMEM for %s: %w", w.queue, e.out.Name, err)
	}
	e.umems = append(e.umems, u)
	sc.Mode, sc.NeedWakeup = cfg.BindMode, cfg.NeedWakeup
	s, err := xsk.NewSocket(u, sc)
	if err != nil {
		return fmt.Errorf("queue %d: output socket on %s: %w", w.queue, e.out.Name, err)
	}
	w.ports = append(w.ports, s)
	return nil
}

// ForwardUmem says how forwarded frames reach the output device: "shared"
// (no copy: the output sockets share the input sockets' UMEMs) or "copy"
// (into UMEMs of the output sockets' own), and, for "copy" after a refused
// share, the kernel's reason. It is "" without Config.Forward.
func (e *Engine) ForwardUmem() (mode string, why error) {
	switch {
	case e.cfg.Forward == nil:
		return "", nil
	case e.outShared:
		return "shared", nil
	}
	return "copy", e.outSharedErr
}

// Output is what the engine knows of its output device; nil without
// Config.Forward.
func (e *Engine) Output() *netdev.Info { return e.out }

// OutputStats reads the XDP_STATISTICS of each worker's output socket, in
// the order of Workers (tx_invalid_descs, tx_ring_empty_descs are the ones
// that matter for a socket that only transmits).
func (e *Engine) OutputStats() ([]xsk.Statistics, error) {
	var st []xsk.Statistics
	for _, w := range e.workers {
		if len(w.ports) < 2 {
			continue
		}
		s, err := w.ports[1].Statistics()
		if err != nil {
			return nil, fmt.Errorf("queue %d output: %w", w.queue, err)
		}
		st = append(st, s)
	}
	return st, nil
}

// ForwardHandler sends every frame out of port 1 (the output device of
// Config.Forward) with its destination MAC set to DstMAC (unchanged when
// DstMAC is nil). Frames too short for an Ethernet header are dropped.
type ForwardHandler struct {
	DstMAC net.HardwareAddr
}

// Handle rewrites and forwards every frame.
func (h *ForwardHandler) Handle(b *Batch) {
	mac := h.DstMAC
	for i := 0; i < b.Len(); i++ {
		f := b.Frame(i)
		if len(f) < 14 {
			continue
		}
		if len(mac) == 6 {
			copy(f[:6], mac)
		}
		b.Forward(i, 1)
	}
}
