package xsk

import "fmt"

// FrameCount says where a socket's UMEM frames are: in one of its four
// rings (between the shared producer and consumer indices) or on its free
// stack, or, for an in-memory socket, kept by its simulated kernel. Total
// is the number of frames the socket owns.
type FrameCount struct {
	Fill, Rx, Tx, Completion int
	Free                     int
	// Kernel is how many of the socket's frames an in-memory socket's
	// kernel kept: tx descriptors it refused without giving them back
	// (MemKernel.ReclaimInvalid off). The application has lost them.
	Kernel   int
	Total    int
	ZeroCopy bool
	// InMemory is set for an in-memory socket: its kernel holds no frame
	// that CountFrames cannot see, so Check wants every frame found.
	InMemory bool
}

// Accounted is the number of frames found in the rings, on the stack and
// kept by an in-memory socket's kernel.
func (c FrameCount) Accounted() int { return c.Fill + c.Rx + c.Tx + c.Completion + c.Free + c.Kernel }

// Missing is the number of frames found nowhere; negative if frames were
// counted twice.
func (c FrameCount) Missing() int { return c.Total - c.Accounted() }

// CopyModeParked is how many frames the kernel may hold off the rings of a
// copy-mode socket: when a packet finds the rx ring full after the kernel
// took a frame from the fill ring for it, the frame goes to the buffer
// pool's free list (net/xdp/xsk.c, __xsk_rcv: xsk_buff_free) and is used
// for the next packet, so at most one frame is parked there at a time.
const CopyModeParked = 1

// Check returns an error unless every frame the socket owns is accounted
// for: none counted twice, and none missing beyond what the kernel may
// legitimately hold (none for an in-memory socket; CopyModeParked in copy
// mode; in zero-copy mode the driver's own rx ring holds frames, so only
// duplicates are caught). Frames an in-memory socket's kernel kept
// (Kernel) are an error too, a leak: a test that has the kernel refuse
// descriptors on purpose checks Missing and Kernel instead.
func (c FrameCount) Check() error {
	miss := c.Missing()
	ok := miss == 0 || miss > 0 && !c.InMemory && (c.ZeroCopy || miss <= CopyModeParked)
	if !ok {
		return fmt.Errorf("%d of %d UMEM frames accounted for: fill %d + rx %d + tx %d + completion %d + free %d + kept by the kernel %d",
			c.Accounted(), c.Total, c.Fill, c.Rx, c.Tx, c.Completion, c.Free, c.Kernel)
	}
	if c.Kernel > 0 {
		return fmt.Errorf("%d of %d UMEM frames lost: the kernel refused their tx descriptors and kept them", c.Kernel, c.Total)
	}
	return nil
}

// CountFrames reads where the socket's frames are. For an in-memory socket
// the fill ring counts from the simulated kernel's own consumer index,
// since the entries it used are elsewhere whether or not it published the
// index past them (MemKernel.FillLag), and Kernel counts the frames of this
// socket that its kernel kept (not those its kernel kept of another socket
// on the UMEM: they count nowhere). It is only meaningful
// when nobody uses the socket (its worker has stopped, nothing has been
// reserved or peeked and not yet submitted or released) and the kernel is
// quiet (no traffic arriving, transmissions completed); the counts are
// read one ring at a time. Call it before Close, which unmaps the rings.
// It is meant for tests and diagnostics, not for the data path.
func (s *Socket) CountFrames() FrameCount {
	c := FrameCount{
		Fill:       int(s.Fill.Pending()),
		Rx:         int(s.Rx.Pending()),
		Tx:         int(s.Tx.Pending()),
		Completion: int(s.Completion.Pending()),
		Total:      int(s.cfg.NumFrames),
		ZeroCopy:   s.zeroCopy,
	}
	if s.Frames != nil {
		c.Free = s.Frames.Len()
	}
	if k := s.kernel; k != nil {
		c.InMemory = true
		if s.Fill.producer != nil {
			// Entries the kernel used are elsewhere now, whether or
			// not it published the consumer index past them (FillLag).
			c.Fill = int(s.Fill.producer.Load() - k.fill.cachedCons)
		}
		first, end := s.frameRange()
		for _, a := range k.lost {
			if b := s.umem.FrameBase(a); b >= first && b < end {
				c.Kernel++
			}
		}
	}
	return c
}

// frameRange is the UMEM addresses of the socket's own frames.
func (s *Socket) frameRange() (first, end uint64) {
	fs := uint64(s.umem.frameSize)
	first = uint64(s.cfg.FirstFrame) * fs
	return first, first + uint64(s.cfg.NumFrames)*fs
}

// Audit reads every frame address in the socket's four rings (the entries
// between each ring's shared consumer and producer indices) and on its free
// stack, and those an in-memory socket's kernel kept, and returns where the
// frames are (the fill ring as CountFrames reads it). The error names the
// first frame found in two places, or an address outside the socket's own
// frames (a descriptor's offset into its frame is allowed). A frame of another
// socket that shares the UMEM counts as outside. Like CountFrames it is
// only meaningful when nobody uses the socket and the kernel is quiet, and
// it is meant for tests and diagnostics. Frames found nowhere are not an
// error here: FrameCount.Check decides how many the kernel may hold.
func (s *Socket) Audit() (FrameCount, error) {
	c := s.CountFrames()
	first, end := s.frameRange()
	where := make(map[uint64]string, s.cfg.NumFrames)
	put := func(addr uint64, place string) error {
		base := s.umem.FrameBase(addr)
		if base < first || base >= end {
			return fmt.Errorf("address %#x in the %s is outside the socket's frames %#x..%#x", addr, place, first, end)
		}
		if prev, ok := where[base]; ok {
			return fmt.Errorf("frame %#x is both in the %s and in the %s", base, prev, place)
		}
		where[base] = place
		return nil
	}
	for _, r := range []struct {
		name string
		r    *ring
		addr func(i uint32) uint64
	}{
		{"fill ring", &s.Fill.ring, func(i uint32) uint64 { return s.Fill.addrs[i&s.Fill.mask] }},
		{"rx ring", &s.Rx.ring, func(i uint32) uint64 { return s.Rx.descs[i&s.Rx.mask].Addr }},
		{"tx ring", &s.Tx.ring, func(i uint32) uint64 { return s.Tx.descs[i&s.Tx.mask].Addr }},
		{"completion ring", &s.Completion.ring, func(i uint32) uint64 { return s.Completion.addrs[i&s.Completion.mask] }},
	} {
		if r.r.producer == nil {
			continue // the socket has no such ring
		}
		i := r.r.consumer.Load()
		if k := s.kernel; k != nil && r.r == &s.Fill.ring {
			i = k.fill.cachedCons // see CountFrames
		}
		for p := r.r.producer.Load(); i != p; i++ {
			if err := put(r.addr(i), r.name); err != nil {
				return c, err
			}
		}
	}
	if s.Frames != nil {
		for _, a := range s.Frames.addrs[:s.Frames.n] {
			if err := put(a, "free stack"); err != nil {
				return c, err
			}
		}
	}
	if k := s.kernel; k != nil {
		for _, a := range k.lost {
			if b := s.umem.FrameBase(a); b < first || b >= end {
				continue // not this socket's frame: CountFrames leaves it out too
			}
			if err := put(a, "kernel (a refused tx descriptor it kept)"); err != nil {
				return c, err
			}
		}
	}
	return c, nil
}
