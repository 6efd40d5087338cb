package xsk

import "fmt"

// FrameCount says where a socket's UMEM frames are: in one of its four
// rings (between the shared producer and consumer indices) or on its free
// stack. Total is the number of frames the socket owns.
type FrameCount struct {
	Fill, Rx, Tx, Completion int
	Free                     int
	Total                    int
	ZeroCopy                 bool
}

// Accounted is the number of frames found in the rings and on the stack.
func (c FrameCount) Accounted() int { return c.Fill + c.Rx + c.Tx + c.Completion + c.Free }

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
// legitimately hold (CopyModeParked in copy mode; in zero-copy mode the
// driver's own rx ring holds frames, so only duplicates are caught).
func (c FrameCount) Check() error {
	miss := c.Missing()
	ok := miss >= 0 && (c.ZeroCopy || miss <= CopyModeParked)
	if !ok {
		return fmt.Errorf("%d of %d UMEM frames accounted for: fill %d + rx %d + tx %d + completion %d + free %d",
			c.Accounted(), c.Total, c.Fill, c.Rx, c.Tx, c.Completion, c.Free)
	}
	return nil
}

// CountFrames reads where the socket's frames are. It is only meaningful
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
	return c
}

// Audit reads every frame address in the socket's four rings (the entries
// between each ring's shared consumer and producer indices) and on its free
// stack, and returns where the frames are. The error names the first frame
// found in two places, or an address outside the socket's own frames (a
// descriptor's offset into its frame is allowed). A frame of another
// socket that shares the UMEM counts as outside. Like CountFrames it is
// only meaningful when nobody uses the socket and the kernel is quiet, and
// it is meant for tests and diagnostics. Frames found nowhere are not an
// error here: FrameCount.Check decides how many the kernel may hold.
func (s *Socket) Audit() (FrameCount, error) {
	c := s.CountFrames()
	fs := uint64(s.umem.frameSize)
	first := uint64(s.cfg.FirstFrame) * fs
	end := first + uint64(s.cfg.NumFrames)*fs
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
		for i, p := r.r.consumer.Load(), r.r.producer.Load(); i != p; i++ {
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
	return c, nil
}
