package engine

import (
	"fmt"

	"github.com/xdpeng/xdpeng/internal/xsk"
)

// SimFrame is what became of one frame in Simulate.
type SimFrame struct {
	// Verdict is the verdict the handler left on the frame.
	Verdict Verdict
	// Port is the port given to Batch.Forward.
	Port int
	// Sent reports whether the worker put the frame on the queue's tx
	// ring: what a device would transmit.
	Sent bool
	// Data is the frame as the handler left it (with any length change
	// from SetLen): the bytes that were sent, or would have been.
	Data []byte
}

// SimResult is the outcome of Simulate.
type SimResult struct {
	// Frames[i] is what became of the i-th frame given to Simulate.
	Frames []SimFrame
	// Stats are the worker's counters, as Engine.Stats reports them.
	Stats QueueStats
}

// Sent returns the frames that were put on the tx ring, in order.
func (r SimResult) Sent() [][]byte {
	var out [][]byte
	for _, f := range r.Frames {
		if f.Sent {
			out = append(out, f.Data)
		}
	}
	return out
}

// SimBatch is the number of frames Simulate hands a handler at once, the
// engine's default batch size.
const SimBatch = 64

// simFrameSize is the UMEM frame size of Simulate and so the longest frame
// it takes.
const simFrameSize = 4096

// Simulate runs h over frames as a worker would, without a device or root:
// on an in-memory socket, frames arrive on the rx ring in batches of
// SimBatch and go through the same worker code as in an Engine, and the
// simulated kernel transmits what the worker queues. It is meant for
// unit-testing handlers:
//
//	res, err := engine.Simulate(myHandler, [][]byte{frame1, frame2})
//	// res.Frames[1].Sent, res.Frames[1].Data: was it sent, and as what?
//
// The frames are copied in, so the caller's slices are not modified. The
// worker has one port, its own queue: Batch.Forward to port 0 transmits,
// and to any other port drops the frame (counted in Stats.Dropped). A frame
// longer than 4096 bytes is an error; a panic in h is returned as an error.
func Simulate(h Handler, frames [][]byte) (res SimResult, err error) {
	if h == nil {
		return res, fmt.Errorf("simulate: nil handler")
	}
	for i, f := range frames {
		if len(f) > simFrameSize {
			return res, fmt.Errorf("simulate: frame %d is %d bytes, longer than the %d-byte UMEM frame", i, len(f), simFrameSize)
		}
	}
	cfg := DefaultConfig()
	cfg.Interface = "sim"
	cfg.FrameSize = simFrameSize
	cfg.Batch = SimBatch
	// Rings of a few batches: everything fits, and a Simulate costs
	// 2 MiB of UMEM rather than the engine's default 32 MiB.
	cfg.FillSize, cfg.CompletionSize, cfg.RxSize, cfg.TxSize = 4*SimBatch, 4*SimBatch, 4*SimBatch, 4*SimBatch
	u, err := xsk.NewMemUmem(xsk.UmemConfig{FrameSize: cfg.FrameSize, NumFrames: cfg.framesPerSocket()})
	if err != nil {
		return res, fmt.Errorf("simulate: %w", err)
	}
	s, err := xsk.NewMemSocket(u, xsk.SocketConfig{
		FillSize: cfg.FillSize, CompletionSize: cfg.CompletionSize, RxSize: cfg.RxSize, TxSize: cfg.TxSize,
	})
	if err != nil {
		return res, fmt.Errorf("simulate: %w", err)
	}
	// Without the dropper shortcut: a handler that drops everything still
	// runs, so its side effects (counters) are what a test checks.
	w := newWorker(0, 0, s, HandlerFunc(h.Handle), &cfg)
	k := s.Kernel()

	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("simulate: handler panicked: %v", r)
		}
	}()
	res.Frames = make([]SimFrame, len(frames))
	for start := 0; start < len(frames); start += SimBatch {
		end := min(start+SimBatch, len(frames))
		for _, f := range frames[start:end] {
			if k.Receive(1, uint32(len(f)), f) != 1 {
				return res, fmt.Errorf("simulate: the rx ring took no frame (fill ring empty)")
			}
		}
		txBefore := k.Transmitted
		if got := w.rxHandle(); got != uint32(end-start) {
			return res, fmt.Errorf("simulate: worker took %d frames of a batch of %d", got, end-start)
		}
		// The batch still holds each frame's address, length and verdict;
		// the frames' bytes stay in the UMEM until the next Receive.
		b := &w.batch
		for i := 0; i < b.n; i++ {
			r := &res.Frames[start+i]
			r.Verdict = b.verdicts[i]
			if r.Verdict == Forward {
				r.Port = int(b.ports[i])
			}
			r.Data = append([]byte(nil), b.Frame(i)...)
		}
		// Transmit what the worker queued and match the descriptors to
		// the batch's frames by address.
		sent := k.Transmit(int(cfg.TxSize))
		for j := 0; j < sent; j++ {
			d := k.TxDesc(uint32(txBefore) + uint32(j))
			for i := 0; i < b.n; i++ {
				if b.addrs[i] == d.Addr {
					r := &res.Frames[start+i]
					r.Sent = true
					r.Data = append(r.Data[:0], u.Frame(d.Addr, d.Len)...)
					break
				}
			}
		}
		if err := w.complete(); err != nil {
			return res, fmt.Errorf("simulate: %w", err)
		}
	}
	res.Stats = QueueStats{
		RxPackets: w.c.rxPackets, RxBytes: w.c.rxBytes,
		TxPackets: w.c.txPackets, TxBytes: w.c.txBytes,
		Dropped: w.c.dropped, TxRingFull: w.c.txRingFull,
		RxWakeups: w.c.rxWakeups, TxWakeups: w.c.txWakeups,
		Polls: w.c.polls, Batches: w.c.batches,
		XDP: k.Stats,
	}
	return res, nil
}
