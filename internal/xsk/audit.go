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
