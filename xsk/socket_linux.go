package xsk

import (
	"errors"
	"fmt"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

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
		if o.size == 0 || (cfg.SharePool && o.opt != unix.XDP_RX_RING && o.opt != unix.XDP_TX_RING) {
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
		if m.size == 0 || (cfg.SharePool && m.elem == 8) {
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
	if cfg.MultiBuffer {
		sa.Flags |= unix.XDP_USE_SG
	}
	if shared {
		// The first socket chose copy or zero-copy, need_wakeup and
		// multi-buffer for every socket of the UMEM; the kernel refuses
		// the flags on one that shares it (EINVAL).
		if err := sharedBindCheck(u.first, cfg); err != nil {
			return nil, err
		}
		sa.Flags = unix.XDP_SHARED_UMEM
		sa.SharedUmemFD = uint32(u.fd)
	}
	if err := bind(s.fd, sa); err != nil {
		return nil, bindError(cfg, err)
	}
	var opts struct{ Flags uint32 }
	if err := getsockopt(s.fd, unix.SOL_XDP, unix.XDP_OPTIONS, &opts); err == nil {
		s.zeroCopy = opts.Flags&unix.XDP_OPTIONS_ZEROCOPY != 0
	}
	if !shared {
		u.first = boundAs{zeroCopy: s.zeroCopy, needWakeup: cfg.NeedWakeup, multiBuffer: cfg.MultiBuffer}
	}
	u.sockets++
	return s, nil
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

func (s *Socket) wakeRx() error {
	switch err := kick(unix.SYS_RECVFROM, s.fd); err {
	case 0, unix.EAGAIN, unix.EBUSY, unix.ENETDOWN:
		return nil
	default:
		return fmt.Errorf("wake up rx: %w", err)
	}
}

func (s *Socket) wakeTx() error {
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

func (s *Socket) poll(timeoutMs int, tx bool) (bool, error) {
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

func (s *Socket) setBusyPoll(usecs, budget int) error {
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

func (s *Socket) napiID() (uint32, error) {
	id, err := unix.GetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_INCOMING_NAPI_ID)
	if err != nil {
		return 0, fmt.Errorf("read SO_INCOMING_NAPI_ID: %w", err)
	}
	return uint32(id), nil
}

func (s *Socket) statistics() (Statistics, error) {
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

// ifaceName names the device with index ifindex for an error message: its
// name in this network namespace, else the index.
func ifaceName(ifindex int) string {
	if ifi, err := net.InterfaceByIndex(ifindex); err == nil {
		return ifi.Name
	}
	return fmt.Sprintf("ifindex %d", ifindex)
}
