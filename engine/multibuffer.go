package engine

// The receive loops of multi-buffer sockets (Config.MultiBuffer): a frame
// longer than a UMEM frame arrives as several descriptors, each with
// xsk.PacketContinues but the last (Documentation/networking/af_xdp.rst,
// "Multi-Buffer Support"). The kernel posts all of a frame's descriptors
// or none, so a batch that ends inside a frame can take the rest at once.
// The loops of single-buffer sockets are rxDrop and rxHandle; receive
// picks the loop of a batch.

import (
	"github.com/xdpeng/xdpeng/xsk"
)

// rxDropMB is rxDrop for multi-buffer sockets: every descriptor goes back
// to the fill ring as in rxDrop; frames are counted by their last
// descriptor, so a frame split across two batches counts once, in the
// second.
func (w *rxWorker) rxDropMB() uint32 {
	s := w.sock
	idx, n := s.Rx.Peek(w.batchSize)
	if n == 0 {
		return 0
	}
	fidx, room := s.Fill.Reserve(n)
	var bytes, frames uint64
	mask := w.umem.BaseMask()
	for i := uint32(0); i < n; i++ {
		d := s.Rx.Desc(idx + i)
		bytes += uint64(d.Len)
		frames += uint64(^d.Options & xsk.PacketContinues)
		if i < room {
			s.Fill.Set(fidx+i, d.Addr&mask)
		} else {
			s.Frames.Push(d.Addr & mask)
		}
	}
	if room > 0 {
		s.Fill.Submit(room)
	}
	s.Rx.Release(n)
	if s.Frames.Len() > 0 {
		s.Refill()
	}
	w.c.rxPackets += frames
	w.c.rxBytes += bytes
	w.c.dropped += frames
	w.c.batches++
	return n
}

// peekFrames peeks up to a batch of descriptors that end with a whole
// frame: it takes the rest of a frame that goes on past the batch, and
// leaves a frame whose end is not posted yet (which the kernel does not
// do) for the next call. It returns the first index and the count.
func (w *rxWorker) peekFrames() (idx, n uint32) {
	rx := &w.sock.Rx
	idx, n = rx.Peek(w.batchSize)
	for n > 0 && n < w.maxDescs && rx.Desc(idx+n-1).Options&xsk.PacketContinues != 0 {
		_, got := rx.Peek(1)
		if got == 0 {
			break
		}
		n++
	}
	whole := n
	for whole > 0 && rx.Desc(idx+whole-1).Options&xsk.PacketContinues != 0 {
		whole--
	}
	rx.Unpeek(n - whole)
	return idx, whole
}

// rxHandleMB is rxHandle for multi-buffer sockets: the handler sees whole
// frames, and every verdict applies to all of a frame's descriptors.
func (w *rxWorker) rxHandleMB() uint32 {
	s := w.sock
	idx, n := w.peekFrames()
	if n == 0 {
		return 0
	}
	b := &w.batch
	b.clearReasons()
	b.resize(cap(b.addrs))
	var bytes uint64
	frames, segs := 0, uint32(0)
	for i := uint32(0); i < n; {
		d := s.Rx.Desc(idx + i)
		i++
		b.addrs[frames], b.lens[frames], b.dests[frames] = d.Addr, d.Len, destDrop
		b.segStart[frames] = segs
		bytes += uint64(d.Len)
		for d.Options&xsk.PacketContinues != 0 {
			d = s.Rx.Desc(idx + i)
			i++
			b.segAddrs[segs], b.segLens[segs] = d.Addr, d.Len
			segs++
			bytes += uint64(d.Len)
		}
		frames++
	}
	b.segStart[frames] = segs
	s.Rx.Release(n)
	b.resize(frames)
	w.c.rxPackets += uint64(frames)
	w.c.rxBytes += bytes
	w.c.batches++

	w.handle(b)
	if b.anyReason {
		b.countReasons(&w.c)
	}

	mask := w.umem.BaseMask()
	var tidx, troom uint32
	if s.Tx.Size() > 0 {
		tidx, troom = s.Tx.Reserve(n)
	}
	var ntx uint32
	var fidx, froom, nfill uint32
	fillReserved := false
	left := n // descriptors of this frame and the ones after it
	in := &w.out[ToInput]
	for i := 0; i < frames; i++ {
		k := uint32(b.Segments(i))
		v := b.dests[i].verdict()
		if b.dests[i].back() {
			v = VerdictTransmit
		}
		switch v {
		case VerdictTransmit:
			if ntx+k <= troom {
				w.txBytes(in, w.queueFrame(&s.Tx, tidx+ntx, b, i, w.umem, w.eop))
				ntx += k
				left -= k
				continue
			}
			w.txRingFull(in)
		case VerdictForward:
			if w.forwardMB(b.dests[i].port(), b, i, left) {
				left -= k
				continue
			}
		default:
			w.c.dropped++
		}
		if !fillReserved {
			fidx, froom = s.Fill.Reserve(left)
			fillReserved = true
		}
		for j := 0; j < int(k); j++ {
			addr := b.addrs[i]
			if j > 0 {
				addr = b.segAddrs[b.segStart[i]+uint32(j)-1]
			}
			if nfill < froom {
				s.Fill.Set(fidx+nfill, addr&mask)
				nfill++
			} else {
				s.Frames.Push(addr & mask)
			}
		}
		left -= k
	}
	if fillReserved {
		s.Fill.Cancel(froom - nfill)
		if nfill > 0 {
			s.Fill.Submit(nfill)
		}
	}
	s.Tx.Cancel(troom - ntx)
	if ntx > 0 {
		s.Tx.Submit(ntx)
		w.txOutstanding += ntx
		w.kickTx(s)
	}
	if len(w.out) > 1 {
		w.flushPorts()
	}
	if s.Frames.Len() > 0 {
		s.Refill()
	}
	return n
}

// queueFrame writes frame i of b, all of its segments, into the tx slots
// from idx, marks its last UMEM frame in eop (the marks of u), and returns
// its length.
func (w *rxWorker) queueFrame(tx *xsk.TxRing, idx uint32, b *Batch, i int, u *xsk.Umem, eop []uint8) uint64 {
	k := b.Segments(i)
	addr, length := b.addrs[i], b.lens[i]
	total := uint64(0)
	for j := 0; j < k; j++ {
		if j > 0 {
			addr, length = b.segAddrs[b.segStart[i]+uint32(j)-1], b.segLens[b.segStart[i]+uint32(j)-1]
		}
		var opts uint32
		if j < k-1 {
			opts = xsk.PacketContinues
		}
		tx.SetOptions(idx+uint32(j), addr, length, opts)
		eop[u.FrameIndex(addr)] = uint8(opts ^ xsk.PacketContinues)
		total += uint64(length)
	}
	return total
}

// forwardMB is forward for a frame of several descriptors: all of them go
// on port p's tx ring, or none (counted as a full ring). left is the most
// descriptors of the batch that may still follow to the port.
func (w *rxWorker) forwardMB(p Dest, b *Batch, i int, left uint32) bool {
	o := w.reserved(p, left)
	if o == nil {
		return false
	}
	k := uint32(b.Segments(i))
	if o.used+k > o.room {
		w.txRingFull(o)
		return false
	}
	if !o.copy {
		w.txBytes(o, w.queueFrame(&o.s.Tx, o.idx+o.used, b, i, w.umem, w.eop))
		o.used += k
		return true
	}
	// A UMEM of the port's own: each segment is copied into a free frame
	// of it, at the frame's start.
	if uint32(o.s.Frames.Len()) < k {
		w.txRingFull(o) // every frame of the port's UMEM is in flight
		return false
	}
	pu := o.s.Umem()
	for j := uint32(0); j < k; j++ {
		seg := b.Segment(i, int(j))
		dst, _ := o.s.Frames.Pop()
		copy(pu.Frame(dst, uint32(len(seg))), seg)
		var opts uint32
		if j < k-1 {
			opts = xsk.PacketContinues
		}
		o.s.Tx.SetOptions(o.idx+o.used, dst, uint32(len(seg)), opts)
		o.eop[pu.FrameIndex(dst)] = uint8(opts ^ xsk.PacketContinues)
		o.used++
		w.txBytes(o, uint64(len(seg)))
	}
	return false
}
