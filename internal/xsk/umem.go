package xsk

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// UmemConfig sizes a UMEM.
type UmemConfig struct {
	// FrameSize is the size of one frame: 2048 or 4096 (aligned mode).
	FrameSize uint32
	// NumFrames is the number of frames in the UMEM.
	NumFrames uint32
}

// Validate checks the configuration and says how to fix it.
func (c UmemConfig) Validate() error {
	if c.FrameSize != 2048 && c.FrameSize != 4096 {
		return fmt.Errorf("frame size %d: must be 2048 or 4096 (a power of two between 2048 and the page size)", c.FrameSize)
	}
	if c.NumFrames == 0 {
		return errors.New("number of UMEM frames must be at least 1")
	}
	if uint64(c.FrameSize)*uint64(c.NumFrames) > 1<<32 {
		return fmt.Errorf("UMEM of %d frames of %d bytes is larger than 4 GiB", c.NumFrames, c.FrameSize)
	}
	return nil
}

// Umem is the memory region shared with the kernel, split into frames. The
// socket that registers it is the first socket bound with it; further
// sockets share it (XDP_SHARED_UMEM), each with its own fill and completion
// rings and its own part of the frames.
type Umem struct {
	fd        int // the registering AF_XDP socket, -1 for an in-memory UMEM
	area      mapping
	frameSize uint32
	numFrames uint32
	sockets   int // sockets created on it so far
}

// NewUmem maps a UMEM and registers it with a new AF_XDP socket.
func NewUmem(cfg UmemConfig) (*Umem, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	area, err := mmapArea(int(cfg.FrameSize) * int(cfg.NumFrames))
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		area.unmap()
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return nil, fmt.Errorf("create AF_XDP socket: %w (needs root or CAP_NET_RAW)", err)
		}
		if errors.Is(err, unix.EAFNOSUPPORT) {
			return nil, fmt.Errorf("create AF_XDP socket: %w (kernel built without CONFIG_XDP_SOCKETS)", err)
		}
		return nil, fmt.Errorf("create AF_XDP socket: %w", err)
	}
	reg := unix.XDPUmemReg{
		Addr: areaAddr(area.mem),
		Len:  uint64(len(area.mem)),
		Size: cfg.FrameSize,
	}
	if err := setsockopt(fd, unix.SOL_XDP, unix.XDP_UMEM_REG, &reg); err != nil {
		unix.Close(fd)
		area.unmap()
		if errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("register UMEM of %d bytes: %w (raise RLIMIT_MEMLOCK, or use fewer frames)", len(area.mem), err)
		}
		return nil, fmt.Errorf("register UMEM of %d bytes: %w", len(area.mem), err)
	}
	return &Umem{fd: fd, area: area, frameSize: cfg.FrameSize, numFrames: cfg.NumFrames}, nil
}

// FrameSize is the size of one frame.
func (u *Umem) FrameSize() uint32 { return u.frameSize }

// NumFrames is the number of frames.
func (u *Umem) NumFrames() uint32 { return u.numFrames }

// FD is the registering socket (-1 for an in-memory UMEM).
func (u *Umem) FD() int { return u.fd }

// Frame returns the bytes of a frame's data: length bytes from addr.
func (u *Umem) Frame(addr uint64, length uint32) []byte {
	return u.area.mem[addr : addr+uint64(length) : addr+uint64(length)]
}

// FrameBase returns the address of the frame that contains addr: the kernel
// hands out addresses past a headroom, and frames are recycled by base.
func (u *Umem) FrameBase(addr uint64) uint64 { return addr &^ uint64(u.frameSize-1) }

// Close releases the UMEM. Close every socket using it first.
func (u *Umem) Close() error {
	var err error
	if u.fd >= 0 {
		err = unix.Close(u.fd)
		u.fd = -1
	}
	return errors.Join(err, u.area.unmap())
}
