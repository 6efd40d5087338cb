package engine

// Outputs (Config.Outputs): each worker receives on one queue of the input
// device and may transmit on the same queue of every output device,
// through one socket per output, the worker's destination ToOutput(k).

import (
	"fmt"
	"os"

	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/xsk"
)

// output is one of Config.Outputs as the engine set it up.
type output struct {
	info *netdev.Info
	// copy says the output's sockets have UMEMs of their own; why is the
	// kernel's refusal to share, when sharing was asked for.
	copy bool
	why  error
	// sharedOnce is set when a socket of this output shared its UMEM.
	sharedOnce bool
}

// OutputInfo describes one of Config.Outputs as the engine set it up.
type OutputInfo struct {
	Port   Dest
	Device Device
	// Copy reports whether forwarded frames are copied into UMEMs of the
	// output's own; CopyReason, where sharing was asked for, is the
	// kernel's refusal to share.
	Copy       bool
	CopyReason error
}

// outFrames is the number of UMEM frames an output socket keeps in its fill
// ring. The kernel requires a fill ring on every socket that does not share
// its rings, and fills nothing from it on a socket without an rx ring: the
// smallest ring (one slot) with one frame wastes least.
const (
	outFrames   = 1
	outFillSize = 1
)

// bindOutput gives worker w its socket on output k, on the output device's
// queue of the same number. Sharing the worker's UMEM, the socket takes
// frame fillFrame of it for its fill ring; copying, or when the kernel
// refuses to share, it gets a UMEM of its own.
func (e *Engine) bindOutput(w *rxWorker, k int, fillFrame uint32) error {
	cfg, o := &e.cfg, &e.outs[k]
	sc := xsk.SocketConfig{
		Ifindex:        o.info.Index,
		Queue:          w.queue,
		FillSize:       outFillSize,
		CompletionSize: cfg.CompletionSize,
		TxSize:         cfg.TxSize,
		Mode:           cfg.BindMode.xsk(),
		NeedWakeup:     cfg.NeedWakeup,
		MultiBuffer:    cfg.MultiBuffer,
	}
	if !o.copy {
		shared := sc
		shared.FirstFrame, shared.NumFrames = fillFrame, outFrames
		s, err := xsk.NewSocket(w.umem, shared)
		if err == nil {
			o.sharedOnce = true
			w.ports = append(w.ports, s)
			return nil
		}
		if o.sharedOnce {
			// An earlier queue shares its UMEM with this output, this
			// one cannot: mixing the two would make Copy a half-truth.
			return fmt.Errorf("queue %d: share UMEM with %s: %w", w.queue, o.info.Name, err)
		}
		if cfg.TxChecksum {
			// A copy would leave the frame's TX metadata behind.
			return &kindError{ErrTxMetadata, fmt.Errorf("queue %d: TX checksum offload needs %s to share the UMEM, which the kernel refused: %w", w.queue, o.info.Name, err)}
		}
		o.copy, o.why = true, err
	}
	u, err := e.newUmem(cfg.umemConfig(cfg.TxSize + outFrames))
	if err != nil {
		return fmt.Errorf("queue %d: UMEM for %s: %w", w.queue, o.info.Name, err)
	}
	s, err := xsk.NewSocket(u, sc)
	if err != nil {
		return fmt.Errorf("queue %d: output socket on %s: %w", w.queue, o.info.Name, err)
	}
	w.ports = append(w.ports, s)
	return nil
}

// Outputs describes Config.Outputs as the engine set them up, in order.
func (e *Engine) Outputs() []OutputInfo {
	infos := make([]OutputInfo, len(e.outs))
	for k, o := range e.outs {
		infos[k] = OutputInfo{Port: ToOutput(k), Device: deviceOf(o.info), Copy: o.copy, CopyReason: o.why}
	}
	return infos
}

// OutputStats sums the XDP_STATISTICS of the sockets of output d over
// the queues (TxInvalidDescs and TxRingEmptyDescs are the ones that matter
// for a socket that only transmits). It may be called while Run runs;
// after Close it fails with os.ErrClosed.
func (e *Engine) OutputStats(d Dest) (SocketStats, error) {
	e.life.RLock()
	defer e.life.RUnlock()
	var sum SocketStats
	if e.closed {
		return sum, fmt.Errorf("output stats: %w", os.ErrClosed)
	}
	if d == ToInput || int(d) > len(e.outs) {
		return sum, fmt.Errorf("%v is not an output", d)
	}
	for _, w := range e.workers {
		q := w.base()
		st, err := q.ports[d].Statistics()
		if err != nil {
			return sum, fmt.Errorf("queue %d output %s: %w", q.queue, e.outs[d-1].info.Name, err)
		}
		sum.Add(SocketStats(st))
	}
	return sum, nil
}
