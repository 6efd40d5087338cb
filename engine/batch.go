package engine

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/xdpeng/xdpeng/xsk"
)

// Verdict is what happens to a frame after the handler.
type Verdict uint8

const (
	// VerdictDrop returns the frame to the kernel for reuse. It is the default.
	VerdictDrop Verdict = iota
	// VerdictTransmit sends the frame back out of the queue it arrived on.
	VerdictTransmit
	// VerdictForward sends the frame out of one of the engine's outputs (see
	// Batch.Forward).
	VerdictForward
)

func (v Verdict) String() string {
	switch v {
	case VerdictTransmit:
		return "transmit"
	case VerdictForward:
		return "forward"
	default:
		return "drop"
	}
}

// Dest names where Batch.Forward sends a frame: ToInput is the queue the
// frame arrived on (the same as Batch.Transmit), and ToOutput(i) is the
// same queue number of Config.Outputs[i], the engine's i-th output device.
type Dest uint8

// ToInput is the queue the frame arrived on.
const ToInput Dest = 0

// ToOutput is the destination Config.Outputs[i]. An i outside 0 to
// MaxOutputs-1 gives a destination that no engine has, never ToInput: a
// frame forwarded there is dropped and counted in QueueStats.Dropped, as to
// any output the engine does not have.
func ToOutput(i int) Dest {
	if i < 0 || i >= MaxOutputs {
		return noDest
	}
	return Dest(i + 1)
}

// String names the destination: "in" for ToInput, "out0" for ToOutput(0),
// and so on; "none" for what ToOutput gives an index out of range.
func (p Dest) String() string {
	switch {
	case p == ToInput:
		return "in"
	case p <= MaxOutputs:
		return "out" + strconv.Itoa(int(p)-1)
	case p == noDest:
		return "none"
	}
	return fmt.Sprintf("Dest(%d)", uint8(p))
}

// MarshalText is String: JSON names a destination as String does.
func (p Dest) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText reads a destination as String writes it.
func (p *Dest) UnmarshalText(b []byte) error {
	s := string(b)
	switch s {
	case "in":
		*p = ToInput
		return nil
	case "none":
		*p = noDest
		return nil
	}
	if n, ok := strings.CutPrefix(s, "out"); ok {
		if i, err := strconv.Atoi(n); err == nil && i >= 0 && i < MaxOutputs && strconv.Itoa(i) == n {
			*p = ToOutput(i)
			return nil
		}
	}
	return fmt.Errorf("destination %q: want in, out0 to out%d, or none", s, MaxOutputs-1)
}

// noDest is what ToOutput gives an index out of range: above every
// output an engine may have.
const noDest Dest = MaxOutputs + 1

// Batch is the frames a worker received in one go. A handler reads and may
// rewrite each frame in place, may move its start and end within its UMEM
// frame, and gives each a verdict; frames it leaves alone are dropped. A
// Batch is only valid during the Handle call: the frames go back to the
// kernel when it returns.
//
// With Config.MultiBuffer a frame longer than a UMEM frame holds arrives in
// several segments, each in a UMEM frame of its own. The batch always holds
// whole frames: Len counts frames, not segments, and a verdict applies to
// all of a frame's segments. Frame(i) is the first segment, which holds the
// headers (at least the first UMEM frame's worth of the frame); Segments(i)
// says how many there are and Segment(i, j) returns each, PacketLen(i) is
// the length of them all and AppendPacket copies them out in one piece.
// Without multi-buffer every frame has one segment and Frame(i) is all of
// it.
type Batch struct {
	// Queue is the rx queue the frames arrived on.
	Queue int

	n     int
	addrs []uint64 // descriptor address of each frame's first segment
	lens  []uint32 // length of each frame's first segment
	// dests says where each frame goes, verdict and port in one:
	// destDrop, destTransmit, or destForward+p for Forward to port p.
	dests []dest
	umem  *xsk.Umem
	mem   []byte // umem's memory, for Frame
	// back is set when a frame of the batch was to go back out of its
	// queue (Transmit, or Forward to ToInput), and forwarded when one got
	// Forward: a batch with neither is dropped whole, one without
	// forwarded needs no look at the ports, one without back no loop for
	// its queue's own tx ring.
	back, forwarded bool
	// rxMetadata is set when the steering program writes the receive
	// metadata in front of each frame (Config.RxMetadata).
	rxMetadata bool
	// txMeta marks the frames whose TX metadata asks for a checksum
	// (SetTxChecksum), with anyTxMeta set when one is marked; nil without
	// Config.TxChecksum.
	txMeta    []bool
	anyTxMeta bool
	// reasons holds the reason DropFor gave each frame, with anyReason
	// set when one was given; the worker counts and clears them after the
	// handler.
	reasons   []DropReason
	anyReason bool

	// With multi-buffer, frame i's further segments are
	// segAddrs[segStart[i]:segStart[i+1]] (and segLens); nil without.
	segStart []uint32
	segAddrs []uint64
	segLens  []uint32
}

// newBatch makes a batch of up to size frames; with multiBuffer, of up to
// maxSegs further segments in all.
func newBatch(queue, size int, umem *xsk.Umem, multiBuffer bool, maxSegs int) Batch {
	b := Batch{
		Queue:   queue,
		addrs:   make([]uint64, size),
		lens:    make([]uint32, size),
		dests:   make([]dest, size),
		reasons: make([]DropReason, size),
		umem:    umem,
		mem:     umem.Mem(),
	}
	if multiBuffer {
		b.segStart = make([]uint32, size+1)
		b.segAddrs = make([]uint64, maxSegs)
		b.segLens = make([]uint32, maxSegs)
	}
	return b
}

// resize makes the batch n frames long: its per-frame slices have length
// n (within the capacity newBatch gave them), so that an index beyond the
// batch panics as a slice's does.
func (b *Batch) resize(n int) {
	b.n = n
	b.addrs, b.lens, b.dests, b.reasons = b.addrs[:n], b.lens[:n], b.dests[:n], b.reasons[:n]
}

// Len is the number of frames in the batch.
func (b *Batch) Len() int { return b.n }

// Frame returns frame i's bytes (its first segment, with multi-buffer), in
// place in the UMEM: writes change what is transmitted or forwarded.
func (b *Batch) Frame(i int) []byte {
	a, l := xsk.DataAddr(b.addrs[i]), uint64(b.lens[i])
	return b.mem[a : a+l : a+l]
}

// Segments is the number of segments frame i arrived in: 1, unless
// Config.MultiBuffer is set and the frame is longer than a UMEM frame holds.
func (b *Batch) Segments(i int) int {
	if b.segStart == nil {
		return 1
	}
	return 1 + int(b.segStart[i+1]-b.segStart[i])
}

// Segment returns segment j of frame i in place in the UMEM, 0 <=
// j < Segments(i); Segment(i, 0) is Frame(i).
func (b *Batch) Segment(i, j int) []byte {
	if j == 0 {
		return b.Frame(i)
	}
	k := int(b.segStart[i]) + j - 1
	if j < 0 || k >= int(b.segStart[i+1]) {
		panic(fmt.Sprintf("engine: segment %d of frame %d, which has %d", j, i, b.Segments(i)))
	}
	return b.umem.Frame(b.segAddrs[k], b.segLens[k])
}

// PacketLen is the length of frame i, all of its segments.
func (b *Batch) PacketLen(i int) int {
	n := int(b.lens[i])
	if b.segStart != nil {
		for _, l := range b.segLens[b.segStart[i]:b.segStart[i+1]] {
			n += int(l)
		}
	}
	return n
}

// AppendPacket appends frame i, all of its segments, to dst and returns
// the extended slice.
func (b *Batch) AppendPacket(dst []byte, i int) []byte {
	for j := range b.Segments(i) {
		dst = append(dst, b.Segment(i, j)...)
	}
	return dst
}

// last returns the descriptor address and length of frame i's last
// segment, and the length of the segments before it.
func (b *Batch) last(i int) (addr uint64, length uint32, before int) {
	if b.segStart == nil || b.segStart[i] == b.segStart[i+1] {
		return b.addrs[i], b.lens[i], 0
	}
	k := b.segStart[i+1] - 1
	return b.segAddrs[k], b.segLens[k], b.PacketLen(i) - int(b.segLens[k])
}

// Headroom is how many bytes frame i may grow at the front (AdjustHead with
// a negative delta): the kernel leaves 256 in front of every received
// frame, and the UMEM headroom (Config.FrameHeadroom) more; with
// Config.TxChecksum the TX metadata area in front of each frame (struct
// xsk_tx_metadata, 24 bytes) is not headroom: the kernel rejects a frame
// sent with less in front of it.
func (b *Batch) Headroom(i int) int {
	return int(b.umem.DataAddr(b.addrs[i])-b.umem.FrameBase(b.addrs[i])) - b.txMetaLen()
}

// txMetaLen is what the kernel keeps in front of every transmitted frame.
func (b *Batch) txMetaLen() int {
	if b.umem.HasTxMetadata() {
		return xsk.TxMetadataLen
	}
	return 0
}

// Tailroom is how many bytes frame i may grow at the end (SetLen): what its
// last segment's UMEM frame has left.
func (b *Batch) Tailroom(i int) int {
	a, l, _ := b.last(i)
	end := b.umem.FrameBase(a) + uint64(b.umem.FrameSize())
	return int(end - b.umem.DataAddr(a) - uint64(l))
}

// AdjustHead moves frame i's start by delta bytes, as bpf_xdp_adjust_head
// does: a negative delta grows the frame at the front (to push a header,
// written into Frame(i)[:-delta] afterwards), a positive one shrinks it (to
// pop one). It reports whether the new start leaves the frame at least one
// byte and lies within its Headroom; if not, nothing changes. Every frame
// it allows is one the kernel takes for transmission.
func (b *Batch) AdjustHead(i, delta int) bool {
	base := int64(b.umem.FrameBase(b.addrs[i]))
	start := int64(b.umem.DataAddr(b.addrs[i])) + int64(delta)
	n := int64(b.lens[i]) - int64(delta)
	if start < base+int64(b.txMetaLen()) || n <= 0 {
		return false
	}
	b.addrs[i], b.lens[i] = b.umem.Addr(uint64(base), uint32(start-base)), uint32(n)
	return true
}

// SetLen changes frame i's length, to trim it or to use bytes after it up to
// the end of its UMEM frame. It reports whether the length fits; if not,
// nothing changes. A frame keeps at least one byte (the kernel rejects an
// empty descriptor). A frame of several segments changes in its last
// segment only: n must leave that segment at least one byte and fit in its
// UMEM frame.
func (b *Batch) SetLen(i, n int) bool {
	a, _, before := b.last(i)
	end := b.umem.FrameBase(a) + uint64(b.umem.FrameSize())
	l := n - before
	if l <= 0 || b.umem.DataAddr(a)+uint64(l) > end {
		return false
	}
	if before == 0 {
		b.lens[i] = uint32(l)
	} else {
		b.segLens[b.segStart[i+1]-1] = uint32(l)
	}
	return true
}

// dest is a frame's verdict and port in one, so that a verdict is one
// store and the loops that carry verdicts out read one array.
type dest uint16

const (
	destDrop dest = iota
	destTransmit
	destForward // destForward+p: Forward to port p
)

// Drop gives frame i back to the kernel for reuse.
func (b *Batch) Drop(i int) { b.dests[i] = destDrop }

// DropReason is why a handler dropped a frame, for the counters: a number
// from 1 to MaxDropReasons whose meaning is the handler's (package handler's
// are ReasonTooShort and the like); 0 is no reason.
type DropReason uint8

// MaxDropReasons is the highest DropReason the engine counts apart.
const MaxDropReasons = 15

// clearReasons forgets the drop reasons of the last batch, all of the
// batch's room (resize may lengthen it).
func (b *Batch) clearReasons() {
	if b.anyReason {
		clear(b.reasons[:cap(b.reasons)])
		b.anyReason = false
	}
}

// countReasons counts in c the reasons of the frames whose verdict stayed
// Drop.
func (b *Batch) countReasons(c *local) {
	for i, r := range b.reasons {
		if r != 0 && r <= MaxDropReasons && b.dests[i] == destDrop {
			c.droppedFor[r]++
		}
	}
	c.reasons = true
}

// DropFor drops frame i, as Drop does, for reason r: if the frame's
// verdict is still Drop when the handler returns, QueueStats.DroppedFor[r]
// counts it as well as Dropped. A reason of 0 or above MaxDropReasons is
// no reason: the frame is counted in Dropped alone.
func (b *Batch) DropFor(i int, r DropReason) {
	b.dests[i] = destDrop
	b.reasons[i] = r
	b.anyReason = true
}

// Transmit sends frame i back out of the queue it arrived on.
func (b *Batch) Transmit(i int) {
	b.dests[i] = destTransmit
	b.back = true
}

// Forward sends frame i to d: ToInput is the queue it arrived on,
// ToOutput(k) the same queue of Config.Outputs[k]. An output the engine
// does not have drops the frame (counted in QueueStats.Dropped).
func (b *Batch) Forward(i int, d Dest) {
	b.dests[i] = destForward + dest(d)
	b.forwarded = true
	if d == ToInput {
		b.back = true
	}
}

// Verdict returns frame i's verdict so far.
func (b *Batch) Verdict(i int) Verdict { return b.dests[i].verdict() }

// Dest returns the destination Forward gave frame i; ToInput for a frame whose
// verdict is not Forward (check Verdict first).
func (b *Batch) Dest(i int) Dest { return b.dests[i].port() }

func (d dest) verdict() Verdict {
	switch d {
	case destDrop:
		return VerdictDrop
	case destTransmit:
		return VerdictTransmit
	}
	return VerdictForward
}

// port is the port of a Forward, ToInput for the other verdicts.
func (d dest) port() Dest {
	if d < destForward {
		return ToInput
	}
	return Dest(d - destForward)
}

// back reports whether the frame goes back out of its queue: Transmit, or
// Forward to ToInput.
func (d dest) back() bool { return d-destTransmit <= destForward-destTransmit }

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
