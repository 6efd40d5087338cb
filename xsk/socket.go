package xsk

import (
	"errors"
	"fmt"
	"os"

	"github.com/xdpeng/xdpeng/internal/platform"
)

// ErrNotSupported: AF_XDP sockets need Linux (in-memory ones work
// everywhere).
var ErrNotSupported = platform.ErrNotSupported

// BindMode chooses between copy and zero-copy.
type BindMode int

const (
	// Auto lets the kernel use zero-copy where the driver supports it and
	// copy mode otherwise.
	Auto BindMode = iota
	// Copy forces copy mode (XDP_COPY).
	Copy
	// ZeroCopy requires zero-copy (XDP_ZEROCOPY); bind fails without it.
	ZeroCopy
)

func (m BindMode) String() string {
	switch m {
	case Copy:
		return "copy"
	case ZeroCopy:
		return "zero-copy"
	default:
		return "auto"
	}
}

// SocketConfig describes one AF_XDP socket.
type SocketConfig struct {
	Ifindex int
	Queue   int
	// Ring sizes, each a power of two.
	FillSize, CompletionSize, RxSize, TxSize uint32
	// Mode chooses copy or zero-copy. A socket that shares its UMEM
	// (not the UMEM's first) inherits the first socket's mode, need_wakeup
	// and MultiBuffer, and the kernel refuses bind flags on it: NewSocket
	// binds it without any, and fails if Mode (other than Auto),
	// NeedWakeup or MultiBuffer ask otherwise than the first socket has.
	Mode BindMode
	// NeedWakeup asks the kernel to set a flag when it needs a system call
	// (XDP_USE_NEED_WAKEUP) instead of expecting one every time.
	NeedWakeup bool
	// FirstFrame and NumFrames are the part of the UMEM this socket owns.
	// NumFrames 0 means the whole UMEM.
	FirstFrame, NumFrames uint32
	// MultiBuffer lets a packet span several descriptors (XDP_USE_SG):
	// received frames longer than a buffer arrive split, with
	// PacketContinues on every descriptor but the last, and the tx ring
	// takes packets of several descriptors. Without it the kernel drops
	// such frames. A socket that shares its UMEM inherits it from the
	// UMEM's first socket (Linux 6.6 and later).
	MultiBuffer bool
	// SharePool makes a socket that shares the UMEM's first socket's
	// buffer pool: its fill and completion rings, on the same device and
	// queue (XDP_SHARED_UMEM without rings of its own). Such a socket has
	// no Fill, Completion or free frames of its own: the first socket's
	// feed both, and frames received on either are returned through the
	// first socket's fill ring. FillSize, CompletionSize, FirstFrame and
	// NumFrames are not used.
	SharePool bool
}

// MaxRingSize bounds ring sizes; the kernel accepts more, but a larger ring
// only adds latency and memory.
const MaxRingSize = 1 << 16

// CheckRingSize returns an error unless size is a power of two between 1
// and MaxRingSize; name says which ring ("fill ring size 3: ..."), or ""
// for none ("ring size 3: ...").
func CheckRingSize(name string, size uint32) error {
	if size == 0 || size&(size-1) != 0 || size > MaxRingSize {
		if name != "" {
			name += " "
		}
		return fmt.Errorf("%sring size %d: must be a power of two between 1 and %d", name, size, MaxRingSize)
	}
	return nil
}

// Validate checks the ring sizes and the frame range. An rx or tx size of 0
// means the socket has no such ring (a socket that only receives, or only
// transmits).
func (c SocketConfig) Validate(u *Umem) error {
	if c.SharePool {
		if u.sockets == 0 {
			return errors.New("a socket that shares the buffer pool needs the UMEM's first socket, on the same device and queue")
		}
		c.FillSize, c.CompletionSize, c.FirstFrame, c.NumFrames = 1, 1, 0, 0
	}
	for _, r := range []struct {
		name     string
		size     uint32
		optional bool
	}{{"fill", c.FillSize, false}, {"completion", c.CompletionSize, false}, {"rx", c.RxSize, true}, {"tx", c.TxSize, true}} {
		if r.optional && r.size == 0 {
			continue
		}
		if err := CheckRingSize(r.name, r.size); err != nil {
			return err
		}
	}
	if c.RxSize == 0 && c.TxSize == 0 {
		return errors.New("a socket needs an rx ring, a tx ring or both")
	}
	n := c.NumFrames
	if n == 0 {
		n = u.numFrames
	}
	if uint64(c.FirstFrame)+uint64(n) > uint64(u.numFrames) {
		return fmt.Errorf("frames %d..%d are outside the UMEM of %d frames", c.FirstFrame, c.FirstFrame+n, u.numFrames)
	}
	return nil
}

// Socket is an AF_XDP socket bound to one queue of one device.
type Socket struct {
	Fill       FillRing
	Completion CompletionRing
	Rx         RxRing
	Tx         TxRing
	// Frames holds this socket's free frames.
	Frames *FrameStack

	fd       int
	umem     *Umem
	cfg      SocketConfig
	maps     []mapping
	zeroCopy bool
	kernel   *MemKernel // set for in-memory sockets
	closed   bool       // set by Close
}

// setup makes the typed views of the rings and gives the kernel every frame
// the fill ring has room for, before bind, so reception can start at once.
func (s *Socket) setup() {
	if s.cfg.SharePool {
		s.Frames = NewFrameStack(0, s.umem.frameSize, 0)
		if s.Rx.size > 0 {
			s.Rx.descs = descSlice(&s.Rx.ring)
		}
		if s.Tx.size > 0 {
			s.Tx.descs = descSlice(&s.Tx.ring)
		}
		return
	}
	s.Fill.addrs = addrSlice(&s.Fill.ring)
	s.Completion.addrs = addrSlice(&s.Completion.ring)
	if s.Rx.size > 0 {
		s.Rx.descs = descSlice(&s.Rx.ring)
	}
	if s.Tx.size > 0 {
		s.Tx.descs = descSlice(&s.Tx.ring)
	}
	n := s.cfg.NumFrames
	if n == 0 {
		n = s.umem.numFrames - s.cfg.FirstFrame
		s.cfg.NumFrames = n
	}
	s.Frames = NewFrameStack(uint64(s.cfg.FirstFrame)*uint64(s.umem.frameSize), s.umem.frameSize, int(n))
	s.Refill()
}

// Bind failures a caller can act on, wrapped (with the errno) in what
// NewSocket returns.
var (
	// ErrBusy: another AF_XDP socket is bound to the queue.
	ErrBusy = errors.New("another AF_XDP socket is bound to this queue")
	// ErrNoZeroCopy: zero-copy was required and the driver has none there.
	ErrNoZeroCopy = errors.New("the driver does not support zero-copy here")
)

// Refill moves free frames from the stack into the fill ring, as many as
// both allow, and returns how many it moved.
func (s *Socket) Refill() uint32 {
	n := uint32(s.Frames.Len())
	if n == 0 {
		return 0
	}
	idx, got := s.Fill.Reserve(n)
	for i := uint32(0); i < got; i++ {
		addr, _ := s.Frames.Pop()
		s.Fill.Set(idx+i, addr)
	}
	if got > 0 {
		s.Fill.Submit(got)
	}
	return got
}

// FD is the socket's file descriptor (-1 for an in-memory or closed socket).
func (s *Socket) FD() int { return s.fd }

// Umem is the UMEM the socket uses.
func (s *Socket) Umem() *Umem { return s.umem }

// Config is the configuration the socket was bound with.
func (s *Socket) Config() SocketConfig { return s.cfg }

// ZeroCopy reports whether the kernel granted zero-copy (XDP_OPTIONS).
func (s *Socket) ZeroCopy() bool { return s.zeroCopy }

// Kernel is the simulated kernel side of an in-memory socket, nil otherwise.
func (s *Socket) Kernel() *MemKernel { return s.kernel }

// WakeRx asks the kernel to receive into the fill ring again (recvfrom with
// MSG_DONTWAIT); call it only when Fill.NeedWakeup says so, or for busy
// polling.
func (s *Socket) WakeRx() error {
	if s.closed {
		return fmt.Errorf("wake up rx: %w", os.ErrClosed)
	}
	if s.kernel != nil {
		return nil
	}
	return s.wakeRx()
}

// WakeTx asks the kernel to transmit what the tx ring holds (sendto with
// MSG_DONTWAIT). In copy mode this is where transmission happens.
func (s *Socket) WakeTx() error {
	if s.closed {
		return fmt.Errorf("wake up tx: %w", os.ErrClosed)
	}
	if s.kernel != nil {
		if s.kernel.AutoTransmit {
			s.kernel.wakeTx()
		}
		return nil
	}
	return s.wakeTx()
}

// Poll waits up to timeoutMs for received frames (and, with tx, for room to
// transmit). It reports whether the socket is ready.
func (s *Socket) Poll(timeoutMs int, tx bool) (bool, error) {
	if s.closed {
		return false, fmt.Errorf("poll AF_XDP socket: %w", os.ErrClosed)
	}
	if s.kernel != nil {
		return true, nil
	}
	return s.poll(timeoutMs, tx)
}

// SetBusyPoll turns on busy polling of the socket's queue: the kernel then
// runs the driver's NAPI in the context of the system calls we make, for up
// to usecs microseconds and budget packets, instead of in softirq
// (SO_PREFER_BUSY_POLL, SO_BUSY_POLL, SO_BUSY_POLL_BUDGET).
func (s *Socket) SetBusyPoll(usecs, budget int) error {
	if s.closed {
		return fmt.Errorf("set busy polling: %w", os.ErrClosed)
	}
	if s.kernel != nil {
		return nil
	}
	return s.setBusyPoll(usecs, budget)
}

// NAPIID is the id of the NAPI instance the socket's frames came in through
// (SO_INCOMING_NAPI_ID): what busy polling on the socket runs. It is 0
// before the first frame, and stays 0 where the device's receive queue
// was registered without one: then busy polling has nothing to run. veth
// is such a device in Linux 6.18 (it registers its XDP receive queues
// before their NAPI instances get ids). An in-memory socket has none.
func (s *Socket) NAPIID() (uint32, error) {
	if s.closed {
		return 0, fmt.Errorf("read SO_INCOMING_NAPI_ID: %w", os.ErrClosed)
	}
	if s.kernel != nil {
		return 0, nil
	}
	return s.napiID()
}

// Statistics are the kernel's drop counters for a socket (XDP_STATISTICS).
type Statistics struct {
	RxDropped            uint64 `json:"rx_dropped"`
	RxInvalidDescs       uint64 `json:"rx_invalid_descs"`
	TxInvalidDescs       uint64 `json:"tx_invalid_descs"`
	RxRingFull           uint64 `json:"rx_ring_full"`
	RxFillRingEmptyDescs uint64 `json:"rx_fill_ring_empty_descs"`
	TxRingEmptyDescs     uint64 `json:"tx_ring_empty_descs"`
}

// Drops is how many received frames the socket dropped: the kernel counts
// a frame that found the rx ring full in RxRingFull and every other failure
// (no fill-ring buffer, frame too long) in RxDropped, never in both.
func (s Statistics) Drops() uint64 { return s.RxDropped + s.RxRingFull }

// Add adds o to s.
func (s *Statistics) Add(o Statistics) {
	s.RxDropped += o.RxDropped
	s.RxInvalidDescs += o.RxInvalidDescs
	s.TxInvalidDescs += o.TxInvalidDescs
	s.RxRingFull += o.RxRingFull
	s.RxFillRingEmptyDescs += o.RxFillRingEmptyDescs
	s.TxRingEmptyDescs += o.TxRingEmptyDescs
}

// Statistics reads the socket's XDP_STATISTICS.
func (s *Socket) Statistics() (Statistics, error) {
	if s.closed {
		return Statistics{}, fmt.Errorf("read XDP_STATISTICS: %w", os.ErrClosed)
	}
	if s.kernel != nil {
		return s.kernel.Stats, nil
	}
	return s.statistics()
}

// Close unmaps the rings and closes the socket. The UMEM's own socket is
// closed by Umem.Close. A closed socket's system calls (Poll, WakeRx,
// WakeTx, Statistics, ...) fail with os.ErrClosed; its rings must not be
// touched. Close is safe to call more than once.
func (s *Socket) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for i := range s.maps {
		errs = append(errs, s.maps[i].unmap())
	}
	s.maps = nil
	if s.fd >= 0 && s.fd != s.umem.fd {
		errs = append(errs, closeFD(s.fd))
	}
	s.fd = -1
	return errors.Join(errs...)
}

// ErrSharedBind: a socket that shares a UMEM asked for a mode,
// need_wakeup or multi-buffer other than the UMEM's first socket has,
// which it inherits.
var ErrSharedBind = errors.New("a socket that shares a UMEM inherits its first socket's bind")

// sharedBindCheck returns an error unless cfg, for a socket that shares
// the UMEM whose first socket was bound as first, asks for nothing else.
func sharedBindCheck(first boundAs, cfg SocketConfig) error {
	want := boundAs{zeroCopy: first.zeroCopy, needWakeup: cfg.NeedWakeup, multiBuffer: cfg.MultiBuffer}
	switch cfg.Mode {
	case Copy:
		want.zeroCopy = false
	case ZeroCopy:
		want.zeroCopy = true
	}
	if cfg.SharePool {
		// Its rings are the first socket's: nothing to agree on but
		// the mode.
		want.needWakeup, want.multiBuffer = first.needWakeup, first.multiBuffer
	}
	if want != first {
		return fmt.Errorf("%w: the first is bound %s; this one asks %s", ErrSharedBind, first, want)
	}
	return nil
}
