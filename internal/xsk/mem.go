package xsk

// In-memory sockets: the rings and the UMEM live in ordinary memory and a
// MemKernel plays the kernel's side. They need no privilege, so the ring
// logic, the engine and its benchmarks run anywhere.

// NewMemUmem returns a UMEM in ordinary memory.
func NewMemUmem(cfg UmemConfig) (*Umem, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	area := make([]byte, int(cfg.FrameSize)*int(cfg.NumFrames))
	return newUmem(cfg, -1, mapping{mem: area}), nil
}

// NewMemSocket returns a socket whose rings live in ordinary memory, with
// its fill ring filled, and the simulated kernel side of it.
func NewMemSocket(u *Umem, cfg SocketConfig) (*Socket, error) {
	if err := cfg.Validate(u); err != nil {
		return nil, err
	}
	s := &Socket{fd: -1, umem: u, cfg: cfg}
	s.maps = []mapping{
		memRing(cfg.FillSize, 8, &s.Fill.ring),
		memRing(cfg.CompletionSize, 8, &s.Completion.ring),
	}
	if cfg.RxSize > 0 {
		s.maps = append(s.maps, memRing(cfg.RxSize, descSize, &s.Rx.ring))
	}
	if cfg.TxSize > 0 {
		s.maps = append(s.maps, memRing(cfg.TxSize, descSize, &s.Tx.ring))
	}
	s.setup()
	k := &MemKernel{s: s, fill: s.Fill.ring, comp: s.Completion.ring, rx: s.Rx.ring, tx: s.Tx.ring,
		multiBuffer: cfg.MultiBuffer, frameSize: u.frameSize, offShift: u.offShift}
	// The kernel's views share the rings' memory, with their own cursors.
	k.fill.cachedProd, k.fill.cachedCons = 0, 0
	k.comp.cachedProd, k.comp.cachedCons = 0, 0
	k.rx.cachedProd, k.rx.cachedCons = 0, 0
	k.tx.cachedProd, k.tx.cachedCons = 0, 0
	k.fillAddrs = addrSlice(&k.fill)
	k.compAddrs = addrSlice(&k.comp)
	if cfg.RxSize > 0 {
		k.rxDescs = descSlice(&k.rx)
	}
	if cfg.TxSize > 0 {
		k.txDescs = descSlice(&k.tx)
	}
	s.kernel = k
	u.sockets++
	return s, nil
}

// MemKernel is the kernel side of an in-memory socket: it consumes the fill
// and tx rings and produces the rx and completion rings, counting what a
// real kernel would count in XDP_STATISTICS.
type MemKernel struct {
	// Stats are the counters the socket reports as its XDP_STATISTICS.
	Stats Statistics
	// AutoTransmit makes WakeTx transmit everything on the tx ring, like a
	// copy-mode sendto.
	AutoTransmit bool
	// Received, Transmitted count descriptors delivered to rx and completed
	// (a frame split over several buffers counts once per buffer).
	Received, Transmitted uint64
	// Headroom is where in its buffer Receive puts a frame. The kernel
	// puts it the UMEM headroom and XDP_PACKET_HEADROOM (256) bytes in
	// (Umem.RxOffset), which a simulation sets; it is 0 to begin with, for
	// benchmarks that prepare the frames at the start of each buffer.
	Headroom uint32

	s                    *Socket
	fill, comp, rx, tx   ring
	fillAddrs, compAddrs []uint64
	rxDescs, txDescs     []Desc
	multiBuffer          bool   // the socket was bound with XDP_USE_SG
	frameSize            uint32 // of the UMEM
	offShift             uint   // of the UMEM: where an address keeps its offset
}

// Receive delivers up to n frames of length bytes into the rx ring, taking
// buffers from the fill ring, and returns how many it delivered. Frames that
// find no buffer or no room are counted as a kernel would count them, and
// the caller's payload (if any) is copied into each frame. Each frame must
// fit in one buffer after Headroom (Fits); ReceiveLong takes the others.
func (k *MemKernel) Receive(n int, length uint32, payload []byte) int {
	fidx, got := k.fill.peek(uint32(n))
	ridx, room := k.rx.reserve(got)
	// A descriptor's address is the buffer's and the offset, in the
	// UMEM's mode.
	off := uint64(k.Headroom) << k.offShift
	for i := uint32(0); i < room; i++ {
		addr := k.fillAddrs[(fidx+i)&k.fill.mask]
		if payload != nil {
			a := addr + uint64(k.Headroom)
			copy(k.s.umem.area.mem[a:a+uint64(length)], payload)
		}
		d := &k.rxDescs[(ridx+i)&k.rx.mask]
		d.Addr, d.Len, d.Options = addr+off, length, 0
	}
	return k.delivered(n, got, room)
}

// delivered ends a receive of n frames that found got buffers on the fill
// ring and room for room of them on the rx ring: it publishes the room
// descriptors, counts what found no buffer or no room, and returns room.
func (k *MemKernel) delivered(n int, got, room uint32) int {
	// Buffers taken from the fill ring but without room in rx are put back
	// by consuming fewer: only room entries leave the fill ring.
	k.fill.cachedCons -= got - room
	if room > 0 {
		k.fill.release(room)
		k.rx.submit(room)
	}
	if short := uint32(n) - got; short > 0 {
		k.Stats.RxFillRingEmptyDescs += uint64(short)
		k.Stats.RxDropped += uint64(short)
	}
	if full := got - room; full > 0 {
		// Like the kernel's XDP_STATISTICS (with the extra counters): a
		// frame that finds the rx ring full counts in RxRingFull only,
		// so that Statistics.Drops counts it once.
		k.Stats.RxRingFull += uint64(full)
	}
	k.Received += uint64(room)
	return int(room)
}

// ReceiveFrames is Receive with each buffer written as a device writes it:
// the buffer of UMEM frame i gets frames[i % len(frames)] after Headroom,
// and its descriptor that frame's length. Each frame must fit in a buffer
// after Headroom. Frames that find no buffer or no room are counted as in
// Receive.
func (k *MemKernel) ReceiveFrames(n int, frames [][]byte) int {
	fidx, got := k.fill.peek(uint32(n))
	ridx, room := k.rx.reserve(got)
	u := k.s.umem
	off := uint64(k.Headroom) << k.offShift
	nf := uint32(len(frames))
	for i := uint32(0); i < room; i++ {
		addr := k.fillAddrs[(fidx+i)&k.fill.mask]
		f := frames[u.FrameIndex(addr)%nf]
		a := addr&unalignedAddrMask + uint64(k.Headroom)
		copy(u.area.mem[a:a+uint64(len(f))], f)
		d := &k.rxDescs[(ridx+i)&k.rx.mask]
		d.Addr, d.Len, d.Options = addr+off, uint32(len(f)), 0
	}
	return k.delivered(n, got, room)
}

// Fits reports whether a frame of length bytes fits in one buffer after
// Headroom.
func (k *MemKernel) Fits(length uint32) bool { return length+k.Headroom <= k.frameSize }

// ReceiveLong is Receive for frames of any length. A frame longer than a
// buffer holds after Headroom is split over several buffers, as many
// descriptors with PacketContinues on all but the last, on a socket bound
// for multi-buffer (all of them delivered or none, counted once when
// dropped, as __xsk_rcv in net/xdp/xsk.c does); on another socket it is
// dropped (RxDropped), as the kernel drops it.
func (k *MemKernel) ReceiveLong(n int, length uint32, payload []byte) int {
	if k.Fits(length) {
		return k.Receive(n, length, payload)
	}
	room := k.frameSize - k.Headroom
	if !k.multiBuffer {
		k.Stats.RxDropped += uint64(n)
		return 0
	}
	segs := (length + room - 1) / room
	delivered := 0
	for range n {
		fidx, got := k.fill.peek(segs)
		if got < segs {
			k.fill.cachedCons -= got
			k.Stats.RxFillRingEmptyDescs++
			k.Stats.RxDropped++
			continue
		}
		ridx, slots := k.rx.reserve(segs)
		if slots < segs {
			k.rx.cancel(slots)
			k.fill.cachedCons -= got
			k.Stats.RxRingFull++
			continue
		}
		left := length
		for j := uint32(0); j < segs; j++ {
			base := k.fillAddrs[(fidx+j)&k.fill.mask]
			l := min(left, room)
			if payload != nil {
				a := base + uint64(k.Headroom)
				off := length - left
				copy(k.s.umem.area.mem[a:a+uint64(l)], payload[off:off+l])
			}
			left -= l
			d := &k.rxDescs[(ridx+j)&k.rx.mask]
			d.Addr, d.Len, d.Options = k.s.umem.Addr(base, k.Headroom), l, 0
			if left > 0 {
				d.Options = PacketContinues
			}
		}
		k.fill.release(segs)
		k.rx.submit(segs)
		k.Received += uint64(segs)
		delivered++
	}
	return delivered
}

// Transmit consumes up to n descriptors from the tx ring and posts their
// frames to the completion ring; it returns how many it completed (none on
// a socket without a tx ring). Each descriptor of a multi-buffer packet is
// completed on its own, as the kernel does.
func (k *MemKernel) Transmit(n int) int {
	if k.txDescs == nil {
		return 0
	}
	tidx, got := k.tx.peek(uint32(n))
	cidx, room := k.comp.reserve(got)
	for i := uint32(0); i < room; i++ {
		k.compAddrs[(cidx+i)&k.comp.mask] = k.txDescs[(tidx+i)&k.tx.mask].Addr
	}
	k.tx.cachedCons -= got - room
	if room > 0 {
		k.tx.release(room)
		k.comp.submit(room)
	}
	k.Transmitted += uint64(room)
	return int(room)
}

// TxDesc returns the descriptor the application put in tx slot idx, for
// tests that check what would have been sent.
func (k *MemKernel) TxDesc(idx uint32) Desc { return k.txDescs[idx&k.tx.mask] }

// SetNeedWakeup sets or clears the need_wakeup flag of the fill and tx rings.
func (k *MemKernel) SetNeedWakeup(fill, tx bool) {
	set := func(r *ring, on bool) {
		if on {
			r.flags.Store(xdpRingNeedWakeup)
		} else {
			r.flags.Store(0)
		}
	}
	set(&k.fill, fill)
	set(&k.tx, tx)
}

// startAt moves every index of every ring to start, so tests can cross the
// 2^32 wrap-around. Call it on a fresh socket before anything else.
func (s *Socket) startAt(start uint32) {
	for _, r := range []*ring{&s.Fill.ring, &s.Completion.ring, &s.Rx.ring, &s.Tx.ring} {
		r.producer.Store(start)
		r.consumer.Store(start)
		r.cachedProd, r.cachedCons = start, start
	}
	k := s.kernel
	for _, r := range []*ring{&k.fill, &k.comp, &k.rx, &k.tx} {
		r.cachedProd, r.cachedCons = start, start
	}
	s.Frames = NewFrameStack(uint64(s.cfg.FirstFrame)*uint64(s.umem.frameSize), s.umem.frameSize, int(s.cfg.NumFrames))
	s.Refill()
}
