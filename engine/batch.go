package engine

import "github.com/xdpeng/xdpeng/internal/xsk"

// Verdict is what happens to a frame after the handler.
type Verdict uint8

const (
	// Drop returns the frame to the kernel for reuse. It is the default.
	Drop Verdict = iota
	// Transmit sends the frame back out of the queue it arrived on.
	Transmit
	// Forward sends the frame out of another port of the worker.
	Forward
)

// Batch is the frames a worker received in one go. A handler reads and may
// rewrite each frame and gives each a verdict; frames it leaves alone are
// dropped. A Batch is only valid during the Handle call.
type Batch struct {
	// Queue is the rx queue the frames arrived on.
	Queue int

	n        int
	addrs    []uint64
	lens     []uint32
	verdicts []Verdict
	ports    []uint8
	umem     *xsk.Umem
}

func newBatch(queue, size int, umem *xsk.Umem) Batch {
	return Batch{
		Queue:    queue,
		addrs:    make([]uint64, size),
		lens:     make([]uint32, size),
		verdicts: make([]Verdict, size),
		ports:    make([]uint8, size),
		umem:     umem,
	}
}

// Len is the number of frames in the batch.
func (b *Batch) Len() int { return b.n }

// Frame returns frame i's bytes, in place in the UMEM: writes change what is
// transmitted or forwarded.
func (b *Batch) Frame(i int) []byte { return b.umem.Frame(b.addrs[i], b.lens[i]) }

// SetLen changes frame i's length, to trim it or to use bytes after it up to
// the end of its UMEM frame. It reports whether the length fits.
func (b *Batch) SetLen(i, n int) bool {
	end := b.umem.FrameBase(b.addrs[i]) + uint64(b.umem.FrameSize())
	if n < 0 || b.addrs[i]+uint64(n) > end {
		return false
	}
	b.lens[i] = uint32(n)
	return true
}

// Drop gives frame i back to the kernel for reuse.
func (b *Batch) Drop(i int) { b.verdicts[i] = Drop }

// Transmit sends frame i back out of the queue it arrived on.
func (b *Batch) Transmit(i int) { b.verdicts[i] = Transmit }

// Forward sends frame i out of the worker's port p (see Worker.Ports).
func (b *Batch) Forward(i, p int) {
	b.verdicts[i] = Forward
	b.ports[i] = uint8(p)
}

// Verdict returns frame i's verdict so far.
func (b *Batch) Verdict(i int) Verdict { return b.verdicts[i] }

// Handler is a worker's per-batch logic. Each worker has its own handler, so
// a handler needs no locking for its own state.
type Handler interface {
	Handle(b *Batch)
}

// HandlerFunc adapts a function to a Handler.
type HandlerFunc func(b *Batch)

// Handle calls f(b).
func (f HandlerFunc) Handle(b *Batch) { f(b) }
