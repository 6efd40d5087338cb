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
		multiBuffer: cfg.MultiBuffer, frameSize: u.frameSize, offShift: u.offShift,
		unaligned: u.unaligned, umemSize: uint64(u.frameSize) * uint64(u.numFrames)}
	if u.txMetadata {
		k.txMetaLen = TxMetadataLen
	}
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
	// copy-mode sendto (see TxBudget).
	AutoTransmit bool
	// TxBudget, if not 0, is the most descriptors one WakeTx transmits,
	// as a copy-mode sendto transmits at most 32 (TX_BATCH_SIZE in
	// net/xdp/xsk.c).
	TxBudget int
	// TxConsumerLate makes WakeTx write the tx ring's consumer index as
	// kernels before Linux 6.17 do ("net: xsk: update tx queue consumer
	// immediately after transmission"): only when the kernel's cache of
	// tx entries runs out, in the call that finds it empty, so a call that
	// stops at TxBudget with entries left shows none of what it took. It
	// takes single-descriptor packets; with it, set TxBudget.
	TxConsumerLate bool
	// Received, Transmitted count descriptors delivered to rx and completed
	// (a frame split over several buffers counts once per buffer).
	Received, Transmitted uint64
	// Headroom is where in its buffer Receive puts a frame. The kernel
	// puts it the UMEM headroom and XDP_PACKET_HEADROOM (256) bytes in
	// (Umem.RxOffset), which a simulation sets; it is 0 to begin with, for
	// benchmarks that prepare the frames at the start of each buffer.
	Headroom uint32
	// ReclaimInvalid gives every tx descriptor Transmit refuses back on
	// the completion ring, in its place among the others, as kernels with
	// the 2026 series "xsk: reclaim invalid Tx descriptors" do (Linux 7.2,
	// and stable kernels that took it). It is off to begin with, as in
	// every kernel before: a refused descriptor is consumed and never comes
	// back, so the application loses its frame (Lost, FrameCount.Kernel).
	// A multi-buffer packet with a refused descriptor is dropped whole in
	// either case, each of its descriptors counted in TxInvalidDescs; see
	// Transmit for where such a packet ends.
	ReclaimInvalid bool
	// FillLag is how many fill-ring entries the kernel may have used
	// without publishing the ring's consumer index: the application then
	// sees its fill ring fuller than it is, and may find it full while the
	// kernel has taken its frames, as it does with a real kernel, which
	// publishes the index only now and then (xskq_cons_release only
	// counts; xskq_cons_get_entries and xsk_flush publish). Whenever it
	// finds fewer entries than it needs, the kernel publishes all it has
	// used. 0, to begin with, publishes every entry at once, for
	// benchmarks that want the application's refill to find room.
	FillLag uint32

	s                    *Socket
	fill, comp, rx, tx   ring
	fillAddrs, compAddrs []uint64
	rxDescs, txDescs     []Desc
	multiBuffer          bool   // the socket was bound with XDP_USE_SG
	unaligned            bool   // the UMEM is in unaligned chunk mode
	frameSize            uint32 // of the UMEM
	offShift             uint   // of the UMEM: where an address keeps its offset
	umemSize             uint64 // of the UMEM, in bytes
	txMetaLen            uint64 // TxMetadataLen where the UMEM has TX metadata, else 0

	// fillUnpublished is how many of the fill entries the kernel used
	// (k.fill.cachedCons) it has not yet published (FillLag).
	fillUnpublished uint32
	// draining is set, with ReclaimInvalid, while Transmit drops the
	// rest of a refused multi-buffer packet: the descriptors up to one
	// without PacketContinues.
	draining bool
	// lost are the addresses of the refused tx descriptors kept without
	// ReclaimInvalid, in the order the kernel refused them.
	lost []uint64
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
		k.usedFill(room)
		k.rx.submit(room)
	}
	if short := uint32(n) - got; short > 0 {
		k.publishFill()
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

// usedFill accounts for n more fill entries the kernel used: it publishes
// the ring's consumer index past them, or, with FillLag, past all but the
// last FillLag entries it used.
func (k *MemKernel) usedFill(n uint32) {
	if k.FillLag == 0 && k.fillUnpublished == 0 {
		k.fill.release(n)
		return
	}
	k.fillUnpublished += n
	if k.fillUnpublished > k.FillLag {
		k.fill.release(k.fillUnpublished - k.FillLag)
		k.fillUnpublished = k.FillLag
	}
}

// publishFill publishes the fill ring's consumer index past every entry
// the kernel used: what it does when it finds fewer entries than it needs,
// so that the application can refill.
func (k *MemKernel) publishFill() {
	if k.fillUnpublished > 0 {
		k.fill.release(k.fillUnpublished)
		k.fillUnpublished = 0
	}
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
			k.publishFill()
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
		k.usedFill(segs)
		k.rx.submit(segs)
		k.Received += uint64(segs)
		delivered++
	}
	return delivered
}

// Transmit takes up to n descriptors off the tx ring, whole packets only,
// checks each as the kernel does (ValidTx), and puts the frames of the
// packets it sends on the completion ring, one entry per descriptor in
// ring order; it returns how many descriptors it sent (none on a socket
// without a tx ring). A packet stays on the tx ring while its last
// descriptor is not there yet, or while the completion ring has no room
// for what it would post.
//
// A packet ends at a descriptor without PacketContinues, and may have up
// to MaxTxDescs descriptors. Every descriptor the kernel refuses, and
// every descriptor of a packet it drops, counts in Stats.TxInvalidDescs.
// Where a dropped packet ends, and what becomes of its frames, are the
// two readings of net/xdp/xsk.c (__xsk_generic_xmit, xsk_build_skb,
// xsk_drop_skb) that docs/selftest.md describes:
//   - without ReclaimInvalid (kernels before the reclaim series): a refused
//     descriptor ends its packet, which is dropped with the descriptors
//     before it, and a packet dropped for its length ends at the descriptor
//     it could not take; the next descriptor begins a packet. None of the
//     dropped descriptors comes back: the kernel keeps them (Lost).
//   - with ReclaimInvalid: a dropped packet still ends only at a
//     descriptor without PacketContinues, and every descriptor of it comes
//     back on the completion ring in its place.
func (k *MemKernel) Transmit(n int) int {
	if k.txDescs == nil {
		return 0
	}
	tidx, avail := k.tx.peek(uint32(n))
	cidx, croom := k.comp.reserve(avail)
	descs, tmask := k.txDescs, k.tx.mask
	comp, cmask := k.compAddrs, k.comp.mask
	var (
		used  uint32 // completion slots written
		start uint32 // the first descriptor of the packet being read
		sent  uint32
		j     uint32
	)
	if !k.unaligned && !k.draining {
		// Valid descriptors in aligned mode: ValidTx's checks in a loop
		// that does nothing else, each completion written as it goes.
		// At the first descriptor it does not take, the loop below
		// reads on from the start of that descriptor's packet, whose
		// completions it writes again.
		meta, fs, size := k.txMetaLen, uint64(k.frameSize), k.umemSize
		opts := uint32(TxMetadataOption)
		if k.multiBuffer {
			opts |= PacketContinues
		}
		ended := used // the completions of the packets read whole
		for ; j < avail && used < croom; j++ {
			d := &descs[(tidx+j)&tmask]
			a := d.Addr - meta // an address below meta wraps past size
			more := d.Options&PacketContinues != 0
			if d.Options&^opts != 0 || d.Len == 0 || a >= size || a&(fs-1)+meta+uint64(d.Len) > fs ||
				more && j-start+1 >= MaxTxDescs {
				break
			}
			comp[(cidx+used)&cmask] = d.Addr
			used++
			if !more {
				start, ended = j+1, used
			}
		}
		used, sent = ended, ended
	}
	for ; j < avail; j++ {
		d := &descs[(tidx+j)&tmask]
		if k.draining {
			// The rest of a packet dropped before: refused with it
			// and given back.
			if used == croom {
				break
			}
			comp[(cidx+used)&cmask] = d.Addr
			used++
			k.Stats.TxInvalidDescs++
			k.draining = d.Options&PacketContinues != 0
			start = j + 1
			continue
		}
		valid := k.ValidTx(*d)
		more := d.Options&PacketContinues != 0
		if valid && more && j-start+1 < MaxTxDescs {
			continue // the packet goes on
		}
		count := j - start + 1
		if valid && !more {
			if croom-used < count {
				break
			}
			for i := start; i <= j; i++ {
				comp[(cidx+used)&cmask] = descs[(tidx+i)&tmask].Addr
				used++
			}
			sent += count
			start = j + 1
			continue
		}
		// A refused descriptor, or one more than a packet may have:
		// the packet is dropped.
		if k.ReclaimInvalid {
			if croom-used < count {
				break
			}
			for i := start; i <= j; i++ {
				comp[(cidx+used)&cmask] = descs[(tidx+i)&tmask].Addr
				used++
			}
			k.draining = more
		} else {
			for i := start; i <= j; i++ {
				k.lost = append(k.lost, descs[(tidx+i)&tmask].Addr)
			}
		}
		k.Stats.TxInvalidDescs += uint64(count)
		start = j + 1
	}
	// The descriptors from start on wait on the ring: a packet whose end
	// is not there yet, or that found no room.
	k.tx.cachedCons = tidx + start
	if start > 0 {
		k.tx.release(start)
	}
	k.comp.cancel(croom - used)
	if used > 0 {
		k.comp.submit(used)
	}
	k.Transmitted += uint64(sent)
	return int(sent)
}

// MaxTxDescs is the most descriptors a multi-buffer packet may have on the
// tx ring in copy mode: a linear part and MAX_SKB_FRAGS (17) fragments
// (xsk_build_skb refuses more, -EOVERFLOW).
const MaxTxDescs = 18

// ValidTx reports whether the kernel takes tx descriptor d on this socket,
// as xp_validate_desc in net/xdp/xsk_queue.h (Linux 6.18) checks it, with
// the socket's multi-buffer setting:
//   - a length of at least 1, and no option but PacketContinues and
//     TxMetadataOption; PacketContinues only on a socket bound with
//     MultiBuffer;
//   - where the UMEM has TX metadata (UmemConfig.TxMetadata), the
//     TxMetadataLen bytes in front of the data count in, whether or not
//     the descriptor asks for metadata: the data must start at least that
//     far into the UMEM;
//   - in aligned mode, the metadata and the data inside one frame and the
//     frame inside the UMEM (xp_aligned_validate_desc);
//   - in unaligned mode, the address's offset (upper 16 bits) added to its
//     base, the metadata and the data no longer than a frame and inside
//     the UMEM, wherever they start (xp_unaligned_validate_desc; the page
//     check there matters only for zero-copy DMA, which an in-memory
//     socket has not).
func (k *MemKernel) ValidTx(d Desc) bool {
	if d.Len == 0 || d.Options&^(PacketContinues|TxMetadataOption) != 0 ||
		d.Options&PacketContinues != 0 && !k.multiBuffer {
		return false
	}
	meta, length, fs := k.txMetaLen, uint64(d.Len), uint64(k.frameSize)
	addr := d.Addr
	if k.unaligned {
		if length+meta > fs {
			return false
		}
		addr = DataAddr(addr)
	}
	if addr < meta {
		return false
	}
	addr -= meta
	if addr >= k.umemSize {
		return false
	}
	if k.unaligned {
		return addr+meta+length <= k.umemSize
	}
	return addr&(fs-1)+meta+length <= fs
}

// Lost returns the addresses of the tx descriptors the kernel refused and
// kept (without ReclaimInvalid), in the order it refused them: frames the
// application never gets back.
func (k *MemKernel) Lost() []uint64 { return append([]uint64(nil), k.lost...) }

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

// wakeTx is what WakeTx does on an in-memory socket with AutoTransmit.
func (k *MemKernel) wakeTx() {
	switch {
	case k.TxConsumerLate && k.TxBudget > 0:
		k.transmitLate()
	case k.TxBudget > 0:
		k.Transmit(k.TxBudget)
	default:
		k.Transmit(int(k.tx.size))
	}
}

// transmitLate is a copy-mode sendto of a kernel before Linux 6.17: it
// takes up to TxBudget descriptors from its cache of the tx ring and
// writes the consumer index, and reads the producer's, only when that
// cache runs out.
func (k *MemKernel) transmitLate() {
	budget := k.TxBudget
	for {
		if k.tx.cachedCons == k.tx.cachedProd {
			k.tx.consumer.Store(k.tx.cachedCons)
			k.tx.cachedProd = k.tx.producer.Load()
			if k.tx.cachedCons == k.tx.cachedProd {
				return
			}
		}
		if budget == 0 {
			return
		}
		cidx, room := k.comp.reserve(1)
		if room == 0 {
			return
		}
		d := k.txDescs[k.tx.cachedCons&k.tx.mask]
		k.tx.cachedCons++
		if !k.ValidTx(d) || d.Options&PacketContinues != 0 {
			k.comp.cancel(1)
			k.Stats.TxInvalidDescs++
			k.lost = append(k.lost, d.Addr)
			continue
		}
		k.compAddrs[cidx&k.comp.mask] = d.Addr
		k.comp.submit(1)
		k.Transmitted++
		budget--
	}
}
