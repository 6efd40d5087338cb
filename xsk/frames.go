package xsk

// FrameStack holds the addresses of free frames: push and pop are O(1) and
// allocate nothing. A socket's frames are either in the stack, in one of the
// four rings, or held by the application for the duration of a batch.
type FrameStack struct {
	addrs []uint64
	n     int
}

// NewFrameStack returns a stack holding the frames first, first+frameSize, ...
// of count frames.
func NewFrameStack(first uint64, frameSize uint32, count int) *FrameStack {
	s := &FrameStack{addrs: make([]uint64, count)}
	for i := count - 1; i >= 0; i-- {
		s.addrs[s.n] = first + uint64(i)*uint64(frameSize)
		s.n++
	}
	return s
}

// Len is the number of free frames.
func (s *FrameStack) Len() int { return s.n }

// Push returns a frame to the stack. Pushing more frames than the stack was
// made for is a bug in the caller and panics.
func (s *FrameStack) Push(addr uint64) {
	s.addrs[s.n] = addr
	s.n++
}

// Pop takes a frame; ok is false when none is free.
func (s *FrameStack) Pop() (addr uint64, ok bool) {
	if s.n == 0 {
		return 0, false
	}
	s.n--
	return s.addrs[s.n], true
}
