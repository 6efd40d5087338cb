package xsk

import (
	"errors"
	"fmt"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

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
	Mode                                     BindMode
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
}

// PacketContinues is set in a descriptor's Options when the packet goes
// on in the next descriptor (XDP_PKT_CONTD, multi-buffer only).
const PacketContinues = unix.XDP_PKT_CONTD

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
}

// NewSocket creates a socket on u, fills its fill ring, and binds it to
// cfg.Queue of cfg.Ifindex. The first socket of a UMEM is the one that
// registered it; later ones share it (XDP_SHARED_UMEM) with fill and
// completion rings of their own, which lets them use another queue or
// device (Linux 5.10 and later).
func NewSocket(u *Umem, cfg SocketConfig) (_ *Socket, err error) {
	if err := cfg.Validate(u); err != nil {
		return nil, err
	}
	s := &Socket{fd: u.fd, umem: u, cfg: cfg}
	shared := u.sockets > 0
	if shared {
		if s.fd, err = unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0); err != nil {
			return nil, fmt.Errorf("create AF_XDP socket: %w", err)
		}
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	for _, o := range []struct {
		name string
		opt  int
		size uint32
	}{
		{"fill", unix.XDP_UMEM_FILL_RING, cfg.FillSize},
		{"completion", unix.XDP_UMEM_COMPLETION_RING, cfg.CompletionSize},
		{"rx", unix.XDP_RX_RING, cfg.RxSize},
		{"tx", unix.XDP_TX_RING, cfg.TxSize},
	} {
		if o.size == 0 {
			continue
		}
		if err := unix.SetsockoptInt(s.fd, unix.SOL_XDP, o.opt, int(o.size)); err != nil {
			return nil, fmt.Errorf("set %s ring size %d: %w", o.name, o.size, err)
		}
	}
	var off unix.XDPMmapOffsets
	if err := getsockopt(s.fd, unix.SOL_XDP, unix.XDP_MMAP_OFFSETS, &off); err != nil {
		return nil, fmt.Errorf("read ring offsets: %w", err)
	}
	for _, m := range []struct {
		pgoff int64
		off   unix.XDPRingOffset
		size  uint32
		elem  uint64
		r     *ring
	}{
		{unix.XDP_UMEM_PGOFF_FILL_RING, off.Fr, cfg.FillSize, 8, &s.Fill.ring},
		{unix.XDP_UMEM_PGOFF_COMPLETION_RING, off.Cr, cfg.CompletionSize, 8, &s.Completion.ring},
		{unix.XDP_PGOFF_RX_RING, off.Rx, cfg.RxSize, descSize, &s.Rx.ring},
		{unix.XDP_PGOFF_TX_RING, off.Tx, cfg.TxSize, descSize, &s.Tx.ring},
	} {
		if m.size == 0 {
			continue
		}
		mp, err := mmapRing(s.fd, m.pgoff, m.off, m.size, m.elem, m.r)
		if err != nil {
			return nil, err
		}
		s.maps = append(s.maps, mp)
	}
	s.setup()

	sa := &unix.SockaddrXDP{Ifindex: uint32(cfg.Ifindex), QueueID: uint32(cfg.Queue)}
	switch cfg.Mode {
	case Copy:
		sa.Flags |= unix.XDP_COPY
	case ZeroCopy:
		sa.Flags |= unix.XDP_ZEROCOPY
	}
	if cfg.NeedWakeup {
		sa.Flags |= unix.XDP_USE_NEED_WAKEUP
	}
	if cfg.MultiBuffer && !shared {
		sa.Flags |= unix.XDP_USE_SG
	}
	if shared {
		sa.Flags |= unix.XDP_SHARED_UMEM
		sa.SharedUmemFD = uint32(u.fd)
	}
	if err := bind(s.fd, sa); err != nil {
		return nil, bindError(cfg, err)
	}
	var opts struct{ Flags uint32 }
	if err := getsockopt(s.fd, unix.SOL_XDP, unix.XDP_OPTIONS, &opts); err == nil {
		s.zeroCopy = opts.Flags&unix.XDP_OPTIONS_ZEROCOPY != 0
	}
	u.sockets++
	return s, nil
}

// setup makes the typed views of the rings and gives the kernel every frame
// the fill ring has room for, before bind, so reception can start at once.
func (s *Socket) setup() {
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

// bindRetry is how long bind retries a busy queue. The kernel frees a
// closed socket's hold on its queue from a workqueue, a little after close
// returns, so a queue that was just released can still look taken.
const bindRetry = time.Second

func bind(fd int, sa *unix.SockaddrXDP) error {
	deadline := time.Now().Add(bindRetry)
	for {
		err := unix.Bind(fd, sa)
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Bind failures a caller can act on, wrapped (with the errno) in what
// NewSocket returns.
var (
	// ErrBusy: another AF_XDP socket is bound to the queue.
	ErrBusy = errors.New("another AF_XDP socket is bound to this queue")
	// ErrNoZeroCopy: zero-copy was required and the driver has none there.
	ErrNoZeroCopy = errors.New("the driver does not support zero-copy here")
)

func bindError(cfg SocketConfig, err error) error {
	where := fmt.Sprintf("bind AF_XDP socket to %s queue %d", ifaceName(cfg.Ifindex), cfg.Queue)
	switch {
	case errors.Is(err, unix.EBUSY):
		return fmt.Errorf("%s: %w (%w)", where, err, ErrBusy)
	case cfg.Mode == ZeroCopy && cfg.MultiBuffer && errors.Is(err, unix.EOPNOTSUPP):
		return fmt.Errorf("%s: %w (%w: the driver has no multi-buffer in zero-copy mode)", where, err, ErrNoZeroCopy)
	case cfg.Mode == ZeroCopy && (errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL)):
		return fmt.Errorf("%s: %w (%w)", where, err, ErrNoZeroCopy)
	case cfg.MultiBuffer && errors.Is(err, unix.EINVAL):
		return fmt.Errorf("%s: %w (multi-buffer sockets, XDP_USE_SG, need Linux 6.6 or later)", where, err)
	case errors.Is(err, unix.EINVAL):
		return fmt.Errorf("%s: %w (is the queue within the device's channels, and the XDP program attached?)", where, err)
	}
	return fmt.Errorf("%s: %w", where, err)
}

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

// FD is the socket's file descriptor (-1 for an in-memory socket).
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
	if s.fd < 0 {
		return nil
	}
	switch err := kick(unix.SYS_RECVFROM, s.fd); err {
	case 0, unix.EAGAIN, unix.EBUSY, unix.ENETDOWN:
		return nil
	default:
		return fmt.Errorf("wake up rx: %w", err)
	}
}

// WakeTx asks the kernel to transmit what the tx ring holds (sendto with
// MSG_DONTWAIT). In copy mode this is where transmission happens.
func (s *Socket) WakeTx() error {
	if s.fd < 0 {
		if s.kernel != nil && s.kernel.AutoTransmit {
			s.kernel.Transmit(int(s.Tx.size))
		}
		return nil
	}
	switch err := kick(unix.SYS_SENDTO, s.fd); err {
	case 0, unix.EAGAIN, unix.EBUSY, unix.ENOBUFS, unix.ENETDOWN:
		return nil
	default:
		return fmt.Errorf("wake up tx: %w", err)
	}
}

// kick makes sendto or recvfrom on fd with no buffer and MSG_DONTWAIT as a
// raw system call. It never blocks, so the Go runtime need not be told: a
// plain unix.Sendto enters and leaves a "system call" state, and the
// runtime's monitor thread wakes up to hand the worker's P to another thread
// when one lasts; on the worker's CPU those wake-ups are the only other
// thread wanting to run.
func kick(trap uintptr, fd int) unix.Errno {
	_, _, e := unix.RawSyscall6(trap, uintptr(fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	return e
}

// Poll waits up to timeoutMs for received frames (and, with tx, for room to
// transmit). It reports whether the socket is ready.
func (s *Socket) Poll(timeoutMs int, tx bool) (bool, error) {
	if s.fd < 0 {
		return true, nil
	}
	fds := [1]unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}}
	if tx {
		fds[0].Events |= unix.POLLOUT
	}
	n, err := unix.Poll(fds[:], timeoutMs)
	if err != nil && !errors.Is(err, unix.EINTR) {
		return false, fmt.Errorf("poll AF_XDP socket: %w", err)
	}
	return n > 0, nil
}

// SetBusyPoll turns on busy polling of the socket's queue: the kernel then
// runs the driver's NAPI in the context of the system calls we make, for up
// to usecs microseconds and budget packets, instead of in softirq
// (SO_PREFER_BUSY_POLL, SO_BUSY_POLL, SO_BUSY_POLL_BUDGET).
func (s *Socket) SetBusyPoll(usecs, budget int) error {
	if s.fd < 0 {
		return nil
	}
	for _, o := range []struct {
		name     string
		opt, val int
	}{
		{"SO_PREFER_BUSY_POLL", unix.SO_PREFER_BUSY_POLL, 1},
		{"SO_BUSY_POLL", unix.SO_BUSY_POLL, usecs},
		{"SO_BUSY_POLL_BUDGET", unix.SO_BUSY_POLL_BUDGET, budget},
	} {
		if err := unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, o.opt, o.val); err != nil {
			if errors.Is(err, unix.ENOPROTOOPT) && o.opt != unix.SO_BUSY_POLL {
				return fmt.Errorf("set %s=%d: %w (preferred busy polling needs Linux 5.11 or later)", o.name, o.val, err)
			}
			return fmt.Errorf("set %s=%d: %w", o.name, o.val, err)
		}
	}
	return nil
}

// NAPIID is the id of the NAPI instance the socket's frames came in through
// (SO_INCOMING_NAPI_ID): what busy polling on the socket runs. It is 0
// before the first frame, and stays 0 where the device's receive queue
// was registered without one: then busy polling has nothing to run. veth
// is such a device in Linux 6.18 (it registers its XDP receive queues
// before their NAPI instances get ids). An in-memory socket has none.
func (s *Socket) NAPIID() (uint32, error) {
	if s.fd < 0 {
		return 0, nil
	}
	id, err := unix.GetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_INCOMING_NAPI_ID)
	if err != nil {
		return 0, fmt.Errorf("read SO_INCOMING_NAPI_ID: %w", err)
	}
	return uint32(id), nil
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
	if s.kernel != nil {
		return s.kernel.Stats, nil
	}
	var st unix.XDPStatistics
	if err := getsockopt(s.fd, unix.SOL_XDP, unix.XDP_STATISTICS, &st); err != nil {
		return Statistics{}, fmt.Errorf("read XDP_STATISTICS: %w", err)
	}
	return Statistics{
		RxDropped:            st.Rx_dropped,
		RxInvalidDescs:       st.Rx_invalid_descs,
		TxInvalidDescs:       st.Tx_invalid_descs,
		RxRingFull:           st.Rx_ring_full,
		RxFillRingEmptyDescs: st.Rx_fill_ring_empty_descs,
		TxRingEmptyDescs:     st.Tx_ring_empty_descs,
	}, nil
}

// Close unmaps the rings and closes the socket. The UMEM's own socket is
// closed by Umem.Close.
func (s *Socket) Close() error {
	var errs []error
	for i := range s.maps {
		errs = append(errs, s.maps[i].unmap())
	}
	s.maps = nil
	if s.fd >= 0 && s.fd != s.umem.fd {
		errs = append(errs, unix.Close(s.fd))
	}
	s.fd = -1
	return errors.Join(errs...)
}

// ifaceName names the device with index ifindex for an error message: its
// name in this network namespace, else the index.
func ifaceName(ifindex int) string {
	if ifi, err := net.InterfaceByIndex(ifindex); err == nil {
		return ifi.Name
	}
	return fmt.Sprintf("ifindex %d", ifindex)
}
