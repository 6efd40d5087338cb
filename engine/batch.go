package engine

import "github.com/xdpeng/xdpeng/internal/xsk"

// Verdict is what happens to a frame after the handler.
type Verdict uint8

const (
	// Drop returns the frame to the kernel for reuse. It is the default.
	Drop Verdict = iota
	// Transmit sends the frame back out of the queue it arrived on.
	Transmit
	// Forward sends the frame out of one of the engine's outputs (see
	// Batch.Forward).
	Forward
)

func (v Verdict) String() string {
	switch v {
	case Transmit:
		return "transmit"
	case Forward:
		return "forward"
	default:
		return "drop"
	}
}

// Port names where Batch.Forward sends a frame: PortIn is the queue the
// frame arrived on (the same as Batch.Transmit), and OutputPort(i) is
// Config.Outputs[i], on the same queue number.
type Port uint8

// PortIn is the queue the frame arrived on.
const PortIn Port = 0

// OutputPort is the port of Config.Outputs[i].
func OutputPort(i int) Port { return Port(i + 1) }

// Batch is the frames a worker received in one go. A handler reads and may
// rewrite each frame in place, may move its start and end within its UMEM
// frame, and gives each a verdict; frames it leaves alone are dropped. A
// Batch is only valid during the Handle call: the frames go back to the
// kernel when it returns.
type Batch struct {
	// Queue is the rx queue the frames arrived on.
	Queue int

	n        int
	addrs    []uint64
	lens     []uint32
	verdicts []Verdict
	ports    []Port
	umem     *xsk.Umem
}

func newBatch(queue, size int, umem *xsk.Umem) Batch {
	return Batch{
		Queue:    queue,
		addrs:    make([]uint64, size),
		lens:     make([]uint32, size),
		verdicts: make([]Verdict, size),
		ports:    make([]Port, size),
		umem:     umem,
	}
}

// Len is the number of frames in the batch.
func (b *Batch) Len() int { return b.n }

// Frame returns frame i's bytes, in place in the UMEM: writes change what is
// transmitted or forwarded.
func (b *Batch) Frame(i int) []byte { return b.umem.Frame(b.addrs[i], b.lens[i]) }

// Headroom is how many bytes frame i may grow at the front (AdjustHead with
// a negative delta): the kernel leaves 256 in front of every received frame.
func (b *Batch) Headroom(i int) int {
	return int(b.addrs[i] - b.umem.FrameBase(b.addrs[i]))
}

// Tailroom is how many bytes frame i may grow at the end (SetLen).
func (b *Batch) Tailroom(i int) int {
	end := b.umem.FrameBase(b.addrs[i]) + uint64(b.umem.FrameSize())
	return int(end - b.addrs[i] - uint64(b.lens[i]))
}

// AdjustHead moves frame i's start by delta bytes, as bpf_xdp_adjust_head
// does: a negative delta grows the frame at the front (to push a header,
// written into Frame(i)[:-delta] afterwards), a positive one shrinks it (to
// pop one). It reports whether the new start lies within the UMEM frame and
// before the frame's end; if not, nothing changes.
func (b *Batch) AdjustHead(i, delta int) bool {
	base := b.umem.FrameBase(b.addrs[i])
	start := int64(b.addrs[i]) + int64(delta)
	n := int64(b.lens[i]) - int64(delta)
	if start < int64(base) || n < 0 {
		return false
	}
	b.addrs[i], b.lens[i] = uint64(start), uint32(n)
	return true
}

// SetLen changes frame i's length, to trim it or to use bytes after it up to
// the end of its UMEM frame. It reports whether the length fits; if not,
// nothing changes.
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

// Forward sends frame i out of port p: PortIn is the queue it arrived on,
// OutputPort(k) the same queue of Config.Outputs[k]. A port the engine does
// not have drops the frame (counted in QueueStats.Dropped).
func (b *Batch) Forward(i int, p Port) {
	b.verdicts[i] = Forward
	b.ports[i] = p
}

// Verdict returns frame i's verdict so far.
func (b *Batch) Verdict(i int) Verdict { return b.verdicts[i] }

// Port returns the port Forward gave frame i.
func (b *Batch) Port(i int) Port { return b.ports[i] }

// Handler is a worker's per-batch logic. Each worker has its own handler, so
// a handler needs no locking for its own state. A handler may also be an
// Idler, and may declare Hints.
type Handler interface {
	Handle(b *Batch)
}

// HandlerFunc adapts a function to a Handler.
type HandlerFunc func(b *Batch)

// Handle calls f(b).
func (f HandlerFunc) Handle(b *Batch) { f(b) }

// Idler is a Handler that wants to know when its queue is idle: to flush
// what it gathered over several batches or to age its state. Idle is called
// from the worker's goroutine when the rx ring is first found empty after
// frames, and again each time the worker wakes from a sleep with the ring
// still empty (a sleep lasts at most Config.PollTimeout; a WaitBusy worker
// never sleeps).
type Idler interface {
	Idle()
}

// Hints are what a handler may declare about itself, by implementing
// Hinter, so that the worker does less.
type Hints struct {
	// ReceiveOnly: the handler never transmits or forwards. Its queue's
	// socket then gets no tx ring, and poll() does not try to transmit.
	ReceiveOnly bool
	// DropAll: the handler drops every frame without reading it. Handle
	// is then never called: the worker hands received frames straight back
	// to the kernel (the loop of a nil Config.Handler, xdpsock's rxdrop).
	DropAll bool
}

// Hinter is a Handler that declares Hints.
type Hinter interface {
	Hints() Hints
}

// hintsOf returns h's hints; nil is the drop-all handler.
func hintsOf(h Handler) Hints {
	if h == nil {
		return Hints{ReceiveOnly: true, DropAll: true}
	}
	if x, ok := h.(Hinter); ok {
		hs := x.Hints()
		if hs.DropAll {
			hs.ReceiveOnly = true
		}
		return hs
	}
	return Hints{}
}
