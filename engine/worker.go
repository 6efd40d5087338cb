package engine

import (
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/xdpeng/xdpeng/xsk"
)

// rxWorker serves one rx queue: it owns the queue's socket and handler and
// runs on one pinned CPU.
type rxWorker struct {
	port
	// fillGap is how many fill-ring entries the kernel has taken (one
	// per descriptor received) that the worker has not given back yet.
	// Frames wait on the free stack while the fill ring is full; a worker
	// without transmits looks for room (refill) only while there is a
	// gap, so that one whose drops keep the fill ring full does not read
	// the kernel's consumer index every batch to learn that there is none.
	// The multi-buffer loops refill on their own and leave the gap alone.
	fillGap uint32

	// dropAll is set for a handler that declared DropAll: its frames go
	// straight back to the fill ring.
	dropAll bool
	// mb is set for multi-buffer sockets (Config.MultiBuffer): frames may
	// span several descriptors. eop marks, per frame of the worker's
	// UMEM, whether the descriptor last queued on a tx ring from it ended
	// a frame, so that completions count frames, not descriptors.
	mb       bool
	maxDescs uint32 // the most descriptors a batch may hold: the rx ring
	eop      []uint8

	handler    Handler
	idler      Idler // handler's Idle, nil if it has none
	idleCalled bool  // Idle was called since the last frames
	batch      Batch

	// panicked is the handler's panic, once it panicked; the worker then
	// stops.
	panicked *HandlerPanicError

	// wait is what the worker does when its rx ring is empty.
	wait waiter
}

// newRxWorker makes the worker of queue on cpu; h nil drops every frame.
func newRxWorker(queue, cpu int, sock *xsk.Socket, h Handler, o options) *rxWorker {
	w := &rxWorker{port: newPort(queue, cpu, sock, o), handler: h}
	w.wait = newWaiter(&w.port, o)
	w.dropAll = hintsOf(h).DropAll
	w.idler, _ = h.(Idler)
	if o.multiBuffer {
		w.mb = true
		// A batch of descriptors ends with a whole frame, which the rx
		// ring holds all of: the ring bounds what a batch may take.
		w.maxDescs = max(o.rxSize, uint32(o.batch))
		w.eop = make([]uint8, w.umem.NumFrames())
	}
	w.batch = newBatch(queue, o.batch, w.umem, w.mb, int(w.maxDescs))
	w.syncPorts()
	return w
}

// syncPorts builds the per-port state; call it after w.ports changed,
// before the worker runs.
func (w *rxWorker) syncPorts() {
	w.port.syncPorts()
	if w.mb {
		for i := range w.out {
			if o := &w.out[i]; o.copy {
				o.eop = make([]uint8, o.s.Umem().NumFrames())
			}
		}
	}
}

// run is the worker's loop; it returns when stop is set.
func (w *rxWorker) run(stop *atomic.Bool) error {
	wt := &w.wait
	wt.open()
	defer wt.close()
	for !stop.Load() {
		if wt.pollsFirst() {
			w.idleCalled = false // an idle handler hears again after each sleep
			if err := wt.sleep(); err != nil {
				return err
			}
		}
		if w.step() > 0 {
			if w.panicked != nil {
				break
			}
			wt.busy()
			w.idleCalled = false
			continue
		}
		// The ring is empty: whatever the wait mode, the counts of the
		// last batches (and of completions since) become visible now,
		// not when the 16th batch or the end comes.
		if w.c.batches != w.pubBatches || w.c.txPackets != w.pubTxPackets {
			w.publish()
		}
		if w.idler != nil && !w.idleCalled {
			w.idleCalled = true
			w.idle1()
		}
		if w.panicked != nil {
			break
		}
		// The kernel publishes its fill-ring consumer index lazily, only
		// when it has used up every buffer it peeked, so a batch may have
		// found no room and left frames on the free stack. Give them now:
		// with the rx ring empty there may be no next batch to do it.
		if w.sock.Frames.Len() > 0 {
			w.filled(w.sock.Refill())
		}
		slept, err := wt.waitRx()
		if slept {
			w.idleCalled = false
		}
		if err != nil {
			return err
		}
	}
	w.drain()
	w.publish()
	if w.panicked != nil {
		return w.panicked
	}
	return nil
}

// handle runs the handler on b. A panic in it is kept in w.panicked, and
// the batch's verdicts, as far as the handler set them, are carried out:
// no frame is lost, and the worker stops after the batch. Only the
// handler's code is recovered from: a panic in the worker's own is a bug
// that crashes the program.
func (w *rxWorker) handle(b *Batch) {
	defer w.recoverHandler()
	w.handler.Handle(b)
}

// idle1 tells the handler that its queue is idle, as handle runs it.
func (w *rxWorker) idle1() {
	defer w.recoverHandler()
	w.idler.Idle()
}

// recoverHandler keeps a panic of the handler's in w.panicked; call it
// deferred around the handler's code only.
func (w *rxWorker) recoverHandler() {
	if r := recover(); r != nil && w.panicked == nil {
		w.panicked = &HandlerPanicError{Queue: w.queue, Value: r, Stack: debug.Stack()}
	}
}

// step is one turn of the worker's loop while frames flow: a batch from the
// rx ring, through the handler or straight back to the fill ring,
// completions reaped, and the counters published every 16th batch. It
// returns the descriptors taken.
func (w *rxWorker) step() uint32 {
	n := w.receive()
	if w.txOutstanding > 0 {
		w.complete()
	} else if w.fillGap > 0 {
		w.refill()
	}
	if n > 0 && w.c.batches&15 == 0 {
		w.publish()
	}
	return n
}

// receive takes one batch off the rx ring and carries out what becomes of
// it: through the handler (rxHandle), or, for a handler that declared
// DropAll, straight back to the fill ring (rxDrop); on a multi-buffer
// socket in whole frames (rxHandleMB, rxDropMB). It returns the
// descriptors taken. It is the one receive path of an engine's worker and
// of a simulation's.
func (w *rxWorker) receive() uint32 {
	switch {
	case w.mb && w.dropAll:
		return w.rxDropMB()
	case w.mb:
		return w.rxHandleMB()
	case w.dropAll:
		return w.rxDrop()
	default:
		return w.rxHandle()
	}
}

// rxDrop recycles a batch of received frames straight to the fill ring.
func (w *rxWorker) rxDrop() uint32 {
	s := w.sock
	idx, n := s.Rx.Peek(w.batchSize)
	if n == 0 {
		return 0
	}
	fidx, room := s.Fill.Reserve(n)
	var bytes uint64
	mask := w.umem.BaseMask()
	rx, rmask := s.Rx.Slots()
	fill, fmask := s.Fill.Slots()
	_, _ = rx[rmask], fill[fmask] // every slot index below is in bounds
	for i := uint32(0); i < room; i++ {
		d := &rx[(idx+i)&rmask]
		bytes += uint64(d.Len)
		fill[(fidx+i)&fmask] = d.Addr & mask
	}
	for i := room; i < n; i++ {
		d := &rx[(idx+i)&rmask]
		bytes += uint64(d.Len)
		s.Frames.Push(d.Addr & mask)
	}
	if room > 0 {
		s.Fill.Submit(room)
	}
	s.Rx.Release(n)
	if room < n {
		w.fillGap += n - room // step refills
	}
	w.c.rxPackets += uint64(n)
	w.c.rxBytes += bytes
	w.c.dropped += uint64(n)
	w.c.batches++
	return n
}

// rxHandle runs the handler on a batch of received frames and carries out
// its verdicts.
func (w *rxWorker) rxHandle() uint32 {
	s := w.sock
	idx, n := s.Rx.Peek(w.batchSize)
	if n == 0 {
		return 0
	}
	b := &w.batch
	b.clearReasons()
	b.resize(int(n))
	// One length for both lets the compiler drop the per-frame bounds
	// checks.
	addrs, lens := b.addrs, b.lens
	lens = lens[:len(addrs)]
	var bytes uint64
	rx, rmask := s.Rx.Slots()
	_ = rx[rmask] // every slot index below is in bounds
	for i := range addrs {
		d := &rx[(idx+uint32(i))&rmask]
		addrs[i], lens[i] = d.Addr, d.Len
		bytes += uint64(d.Len)
	}
	clear(b.dests)
	s.Rx.Release(n)
	w.fillGap += n
	b.back, b.forwarded = false, false
	b.clearTxMeta()
	w.c.rxPackets += uint64(n)
	w.c.rxBytes += bytes
	w.c.batches++

	w.handle(b)
	if b.anyReason {
		b.countReasons(&w.c)
	}

	switch {
	case b.forwarded:
		w.sendBatch(n)
	case b.back:
		w.transmitBatch(n)
	default:
		w.dropBatch(addrs)
	}
	return n
}

// dropBatch gives every frame of a batch back to the fill ring (through the
// free stack for what does not fit).
func (w *rxWorker) dropBatch(addrs []uint64) {
	s := w.sock
	n := uint32(len(addrs))
	fidx, room := s.Fill.Reserve(n)
	mask := w.umem.BaseMask()
	if room > 0 {
		fill, fmask := s.Fill.Slots()
		_ = fill[fmask] // every slot index below is in bounds
		for i, a := range addrs[:room] {
			fill[(fidx+uint32(i))&fmask] = a & mask
		}
		s.Fill.Submit(room)
		w.fillGap -= room
	}
	for _, a := range addrs[room:] {
		s.Frames.Push(a & mask)
	}
	w.c.dropped += uint64(n)
}

// transmitBatch carries out the verdicts of a batch whose frames are
// dropped or transmitted, none forwarded: transmitted frames go on the
// queue's own tx ring, the others back to the fill ring.
func (w *rxWorker) transmitBatch(n uint32) {
	s, b := w.sock, &w.batch
	addrs, lens, dests := b.addrs[:n], b.lens[:n], b.dests[:n]
	lens, dests = lens[:len(addrs)], dests[:len(addrs)]
	var tidx, troom uint32
	if s.Tx.Size() > 0 { // a receive-only socket has no tx ring
		tidx, troom = s.Tx.Reserve(n)
	}
	// The frames that go out first, in a loop that does nothing else;
	// the rest (dropped, or no room) go back in a second, when there are
	// any.
	tx, tmask := s.Tx.Slots()
	ntx, txBytes := queueDest(tx, tmask, tidx, troom, addrs, lens, dests, destTransmit)
	if b.anyTxMeta {
		markTxMeta(tx, tmask, tidx, ntx, dests, b.txMeta, destTransmit, false)
	}
	in := &w.out[ToInput]
	w.c.txBytes += txBytes
	in.c.txBytes += txBytes
	if ntx < n {
		var seen uint32 // transmitted frames so far, of which troom went out
		w.recycle(func(i int) bool {
			if dests[i] != destTransmit {
				w.c.dropped++
				return false
			}
			if seen++; seen <= troom {
				return true
			}
			w.txRingFull(in)
			return false
		})
	}
	w.submitTx(troom, ntx)
}

// submitTx submits the first ntx of the troom slots reserved on the
// queue's own tx ring, gives the rest back, and kicks the transmitter.
func (w *rxWorker) submitTx(troom, ntx uint32) {
	s := w.sock
	s.Tx.Cancel(troom - ntx)
	if ntx > 0 {
		s.Tx.Submit(ntx)
		w.txOutstanding += ntx
		w.kickTx(s)
	}
}

// recycle gives the frames of the batch that sent(i) reports as not sent
// back to the fill ring, in a reservation made at the first of them; only
// what does not fit there goes through the free stack.
func (w *rxWorker) recycle(sent func(i int) bool) {
	s, b := w.sock, &w.batch
	n := uint32(b.n)
	mask := w.umem.BaseMask()
	var fidx, froom, nfill uint32
	reserved := false
	for i, a := range b.addrs[:n] {
		if sent(i) {
			continue
		}
		if !reserved {
			fidx, froom = s.Fill.Reserve(n - uint32(i))
			reserved = true
		}
		if nfill < froom {
			s.Fill.Set(fidx+nfill, a&mask)
			nfill++
		} else {
			s.Frames.Push(a & mask)
		}
	}
	if reserved {
		s.Fill.Cancel(froom - nfill)
		if nfill > 0 {
			s.Fill.Submit(nfill)
			w.fillGap -= nfill
		}
	}
}

// sendBatch carries out any verdicts: frames to the queue's own tx ring, to
// the outputs' (shared UMEM: the frame itself; a UMEM of the output's
// own: a copy), or back to the fill ring. The frames for the queue's own
// ring, and those for the first output port named in the batch if it
// shares the UMEM (most handlers forward a batch to one port), go out in
// loops of their own; the rest frame by frame.
func (w *rxWorker) sendBatch(n uint32) {
	s, b := w.sock, &w.batch
	addrs, lens, dests := b.addrs[:n], b.lens[:n], b.dests[:n]
	lens, dests = lens[:len(addrs)], dests[:len(addrs)]
	var tidx, troom, ntx uint32
	if s.Tx.Size() > 0 {
		tidx, troom = s.Tx.Reserve(n)
	}
	in := &w.out[ToInput]
	if b.back {
		tx, tmask := s.Tx.Slots()
		var txBytes uint64
		ntx, txBytes = queueBack(tx, tmask, tidx, troom, addrs, lens, dests)
		if b.anyTxMeta {
			markTxMeta(tx, tmask, tidx, ntx, dests, b.txMeta, 0, true)
		}
		w.c.txBytes += txBytes
		in.c.txBytes += txBytes
	}
	main := ToInput
	for _, d := range dests {
		if d > destForward {
			main = d.port()
			break
		}
	}
	var mo *outPort
	if int(main) < len(w.out) && main != ToInput && !w.out[main].copy {
		mo = &w.out[main]
		mo.idx, mo.room = mo.s.Tx.Reserve(n)
		mo.reserved = true
		ptx, pmask := mo.s.Tx.Slots()
		used, bytes := queueDest(ptx, pmask, mo.idx, mo.room, addrs, lens, dests, destForward+dest(main))
		mo.used = used
		if b.anyTxMeta {
			markTxMeta(ptx, pmask, mo.idx, used, dests, b.txMeta, destForward+dest(main), false)
		}
		w.c.txBytes += bytes
		mo.c.txBytes += bytes
	}
	if sent := ntx + mainUsed(mo); sent < n {
		var seenTx, seenMain uint32
		w.recycle(func(i int) bool {
			d := dests[i]
			switch {
			case d.back():
				if seenTx++; seenTx <= troom {
					return true
				}
				w.txRingFull(in)
				return false
			case mo != nil && d == destForward+dest(main):
				if seenMain++; seenMain <= mo.room {
					return true
				}
				w.txRingFull(mo)
				return false
			case d > destForward:
				return w.forward(d.port(), addrs[i], lens[i], n-uint32(i), b.anyTxMeta && b.txMeta[i])
			}
			w.c.dropped++
			return false
		})
	}
	w.submitTx(troom, ntx)
	w.flushPorts()
}

// The loops that put a batch's frames on a tx ring: each puts the frames
// of one kind, in order, on the slots from idx (tx and mask are the ring's
// slots and mask), at most room of them, and returns how many it put and
// their bytes. Each is a loop of its own with as little in it as can be,
// to keep in registers: the frames whose dest is d (queueDest: transmitted,
// or forwarded to one port), and those going back out of their queue by
// Transmit or Forward to ToInput (queueBack).

func queueDest(tx []xsk.Desc, mask, idx, room uint32, addrs []uint64, lens []uint32, dests []dest, d dest) (n uint32, bytes uint64) {
	if room == 0 {
		return 0, 0
	}
	_ = tx[mask] // every slot index below is in bounds
	lens, dests = lens[:len(addrs)], dests[:len(addrs)]
	for i, di := range dests {
		if di == d && n < room {
			tx[(idx+n)&mask] = xsk.Desc{Addr: addrs[i], Len: lens[i]}
			n++
			bytes += uint64(lens[i])
		}
	}
	return n, bytes
}

func queueBack(tx []xsk.Desc, mask, idx, room uint32, addrs []uint64, lens []uint32, dests []dest) (n uint32, bytes uint64) {
	if room == 0 {
		return 0, 0
	}
	_ = tx[mask] // every slot index below is in bounds
	lens, dests = lens[:len(addrs)], dests[:len(addrs)]
	for i, d := range dests {
		if d.back() && n < room {
			tx[(idx+n)&mask] = xsk.Desc{Addr: addrs[i], Len: lens[i]}
			n++
			bytes += uint64(lens[i])
		}
	}
	return n, bytes
}

// mainUsed is how many frames sendBatch's loop put on port o, none for nil.
func mainUsed(o *outPort) uint32 {
	if o == nil {
		return 0
	}
	return o.used
}

// refill moves frames from the free stack to the fill ring, as many as
// the ring has room for. The gap (fillGap) says when to look, not how many
// to give: a fill ring topped up only by the gap held fewer frames than it
// could under overload, and the kernel dropped more for want of one.
func (w *rxWorker) refill() { w.filled(w.sock.Refill()) }

// filled notes that n frames went to the fill ring.
func (w *rxWorker) filled(n uint32) { w.fillGap -= min(n, w.fillGap) }

// forward queues a frame on port p's tx ring; rest is the most frames of
// the batch that may still follow to it. It reports whether the port took
// the frame itself (shared UMEM); false means the frame is still the
// caller's, because it was copied into the port's own UMEM or could not be
// sent (no such port, ring full, no free frame: counted).
func (w *rxWorker) forward(p Dest, addr uint64, length uint32, rest uint32, txMeta bool) bool {
	o := w.reserved(p, rest)
	if o == nil {
		return false
	}
	if o.used == o.room {
		w.txRingFull(o)
		return false
	}
	if o.copy {
		dst, ok := o.s.Frames.Pop()
		if !ok {
			// Every frame of the port's UMEM is in flight: as good as a
			// full ring.
			w.txRingFull(o)
			return false
		}
		copy(o.s.Umem().Frame(dst, length), w.umem.Frame(addr, length))
		o.s.Tx.Set(o.idx+o.used, dst, length)
		o.used++
		w.txBytes(o, uint64(length))
		return false
	}
	if txMeta {
		o.s.Tx.SetOptions(o.idx+o.used, addr, length, xsk.TxMetadataOption)
	} else {
		o.s.Tx.Set(o.idx+o.used, addr, length)
	}
	o.used++
	w.txBytes(o, uint64(length))
	return true
}

// reserved is port p with its tx slots for the batch reserved (at most
// rest of them, at the first frame for it), or nil, counted as dropped,
// for a port the engine does not have.
func (w *rxWorker) reserved(p Dest, rest uint32) *outPort {
	if int(p) >= len(w.out) {
		w.c.dropped++
		return nil
	}
	o := &w.out[p]
	if !o.reserved {
		o.idx, o.room = o.s.Tx.Reserve(rest)
		o.used = 0
		o.reserved = true
	}
	return o
}

// flushPorts submits what the batch queued on the other ports and kicks
// their transmitters.
func (w *rxWorker) flushPorts() {
	for i := 1; i < len(w.out); i++ {
		o := &w.out[i]
		if o.reserved {
			o.s.Tx.Cancel(o.room - o.used)
			if o.used > 0 {
				o.s.Tx.Submit(o.used)
				w.txOutstanding += o.used
			}
			o.reserved = false
		}
		if o.s.Tx.Pending() > 0 {
			w.kickTx(o.s)
		}
	}
}

// complete reaps the completion rings of every port. Frames of the rx
// socket's UMEM go straight back to its fill ring (through the free stack
// only when the fill ring is full); frames of a port with a UMEM of its own
// go back to that port's stack.
func (w *rxWorker) complete() {
	mask := w.umem.BaseMask()
	rx := w.sock
	for i := range w.out {
		o := &w.out[i]
		s := o.s
		idx, n := s.Completion.Peek(s.Completion.Size())
		if n == 0 {
			if s.Tx.Pending() > 0 {
				w.kickTx(s)
			}
			continue
		}
		done := uint64(n)
		if w.mb {
			// Each descriptor of a frame is completed on its own; the
			// frame is done with its last.
			done = 0
			eop, u := w.eop, w.umem
			if o.copy {
				eop, u = o.eop, s.Umem()
			}
			for j := uint32(0); j < n; j++ {
				done += uint64(eop[u.FrameIndex(s.Completion.Addr(idx+j))])
			}
		}
		if o.copy {
			pmask := s.Umem().BaseMask()
			for j := uint32(0); j < n; j++ {
				s.Frames.Push(s.Completion.Addr(idx+j) & pmask)
			}
		} else {
			fidx, room := rx.Fill.Reserve(n)
			fill, fmask := rx.Fill.Slots()
			comp, cmask := s.Completion.Slots()
			_, _ = fill[fmask], comp[cmask] // every slot index below is in bounds
			for j := uint32(0); j < room; j++ {
				fill[(fidx+j)&fmask] = comp[(idx+j)&cmask] & mask
			}
			if room > 0 {
				rx.Fill.Submit(room)
				w.filled(room)
			}
			for j := room; j < n; j++ {
				rx.Frames.Push(s.Completion.Addr(idx+j) & mask)
			}
		}
		s.Completion.Release(n)
		w.txOutstanding -= n
		w.c.txPackets += done
		o.c.txPackets += done
	}
	w.refill()
}

// drainGrace is how long drain waits for a completion before it gives up
// on the frames still in flight.
const drainGrace = 100 * time.Millisecond

// drain waits for frames in flight on tx so that the final counts include
// them: for as long as completions keep coming, and drainGrace after the
// last (a zero-copy driver completes when its NAPI runs, not at once).
func (w *rxWorker) drain() {
	for deadline := time.Now().Add(drainGrace); w.txOutstanding > 0 && time.Now().Before(deadline); {
		before := w.txOutstanding
		w.complete()
		if w.txOutstanding < before {
			deadline = time.Now().Add(drainGrace)
			continue
		}
		time.Sleep(100 * time.Microsecond)
	}
}
