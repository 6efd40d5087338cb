package xsk

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// NewUmem maps a UMEM and registers it with a new AF_XDP socket.
func NewUmem(cfg UmemConfig) (*Umem, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	area, err := mmapArea(int(cfg.FrameSize)*int(cfg.NumFrames), cfg.HugePages)
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
		Addr:     areaAddr(area.mem),
		Len:      uint64(len(area.mem)),
		Size:     cfg.FrameSize,
		Headroom: cfg.Headroom,
	}
	if cfg.Unaligned {
		reg.Flags |= unix.XDP_UMEM_UNALIGNED_CHUNK_FLAG
	}
	if cfg.AnyFrameSize {
		reg.Len = uint64(cfg.FrameSize) * uint64(cfg.NumFrames)
	}
	setTxMetadata(&reg, cfg)
	if err := registerUmem(fd, &reg, cfg); err != nil {
		size := len(area.mem)
		unix.Close(fd)
		area.unmap()
		switch {
		case errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOBUFS):
			return nil, fmt.Errorf("register UMEM of %d bytes: %w (raise RLIMIT_MEMLOCK, or use fewer frames)", size, err)
		case errors.Is(err, unix.EINVAL) && cfg.Unaligned:
			return nil, fmt.Errorf("register UMEM in unaligned chunk mode: %w (needs Linux 5.4 or later)", err)
		}
		return nil, fmt.Errorf("register UMEM of %d bytes: %w", size, err)
	}
	return newUmem(cfg, fd, area), nil
}

func closeFD(fd int) error { return unix.Close(fd) }
