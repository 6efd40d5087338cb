package xsk

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"strconv"
	"strings"
)

// MinFrameSize is the smallest UMEM frame (chunk) size the kernel takes
// (XDP_UMEM_MIN_CHUNK_SIZE); the largest is the page size (PageSize).
// xdp_umem_reg in net/xdp/xdp_umem.c wants a power of two between the two in
// aligned mode and takes other sizes in unaligned mode; xdpeng takes powers
// of two only, in both modes, so that a frame's number is a shift of its
// address. Huge pages do not raise the limit: a patch that let them
// ("xsk: Support UMEM chunk_size > PAGE_SIZE", 2023) did not stay in the
// kernel, and Linux 6.18 refuses 8192-byte chunks in huge pages (EINVAL).
const MinFrameSize = 2048

// HeadroomReserve is what a frame keeps besides the UMEM headroom, as
// xdp_umem_reg checks it: XDP_PACKET_HEADROOM, an aligned struct
// skb_shared_info (320 bytes on 64-bit machines) and 128 bytes of data
// (the check of Linux 7.0 and of the stable kernels that took "xsk: Fix
// headroom validation"); older kernels only want KernelHeadroom.
const HeadroomReserve = KernelHeadroom + 320 + 128

// MaxHeadroom is the largest UMEM headroom frames of frameSize bytes take.
func MaxHeadroom(frameSize uint32) uint32 { return frameSize - HeadroomReserve }

// In unaligned mode a descriptor's address carries the offset of the data
// in its buffer in the upper 16 bits and the buffer's address in the lower
// 48 (XSK_UNALIGNED_BUF_OFFSET_SHIFT, XSK_UNALIGNED_BUF_ADDR_MASK in
// include/uapi/linux/if_xdp.h).
const (
	unalignedOffsetShift = 48
	unalignedAddrMask    = 1<<unalignedOffsetShift - 1
)

// UmemConfig sizes a UMEM.
type UmemConfig struct {
	// FrameSize is the size of one frame: a power of two from MinFrameSize
	// to the page size.
	FrameSize uint32
	// NumFrames is the number of frames in the UMEM.
	NumFrames uint32
	// Headroom is what the kernel leaves free at the start of every
	// receive buffer (XDP_UMEM_REG headroom), in front of its own
	// KernelHeadroom: received data starts Headroom + KernelHeadroom bytes
	// into the frame. It must leave room for data: less than FrameSize -
	// KernelHeadroom.
	Headroom uint32
	// Unaligned registers the UMEM in unaligned chunk mode
	// (XDP_UMEM_UNALIGNED_CHUNK_FLAG): the kernel takes fill-ring addresses
	// as they are instead of rounding them down to a frame, and receive
	// descriptors carry the data's offset in their upper 16 bits
	// (FrameBase and DataAddr read both modes).
	Unaligned bool
	// HugePages backs the UMEM with huge pages (MAP_HUGETLB, the system's
	// default huge page size): they must be free in the pool
	// (HugePages_Free in /proc/meminfo), or NewUmem fails with
	// ErrNoHugePages. Without it the UMEM is in normal pages, which the
	// kernel may merge into transparent huge pages.
	HugePages bool
	// TxMetadata reserves TxMetadataLen bytes in front of each
	// transmitted frame's data for per-frame requests (checksum offload,
	// completion timestamp, launch time; see TxRequest): frames sent with
	// TxMetadataOption must start at least that far into their UMEM frame.
	TxMetadata bool
	// AnyFrameSize, with Unaligned, takes any frame size from
	// MinFrameSize to the page size, as the kernel does in unaligned chunk
	// mode, not only powers of two; FrameIndex then divides, and the UMEM
	// registered is exactly NumFrames frames long even where huge pages
	// round the mapping up. For tests of the kernel's rules; the engine
	// keeps to powers of two.
	AnyFrameSize bool
	// TxSoftwareChecksum makes the kernel compute requested checksums
	// itself in copy mode (XDP_UMEM_TX_SW_CSUM), rather than leave them
	// to the device.
	TxSoftwareChecksum bool
}

// PageSize is the system's page size: the largest frame size.
func PageSize() int { return os.Getpagesize() }

// FrameSizes are the frame sizes Validate takes, smallest first: the powers
// of two from MinFrameSize to the page size.
func FrameSizes() []uint32 {
	var sizes []uint32
	for fs := uint32(MinFrameSize); int(fs) <= PageSize(); fs *= 2 {
		sizes = append(sizes, fs)
	}
	return sizes
}

// Validate checks the configuration and says how to fix it.
func (c UmemConfig) Validate() error {
	fs := c.FrameSize
	if c.AnyFrameSize && !c.Unaligned {
		return fmt.Errorf("frame size %d: a frame size that is not a power of two needs unaligned chunk mode", fs)
	}
	if fs < MinFrameSize || int(fs) > PageSize() || fs&(fs-1) != 0 && !c.AnyFrameSize {
		return &FrameSizeError{FrameSize: fs}
	}
	if c.Headroom > MaxHeadroom(fs) {
		return fmt.Errorf("UMEM headroom %d is too large for %d-byte frames: at most %d (the kernel keeps %d bytes of each frame for itself)",
			c.Headroom, fs, MaxHeadroom(fs), HeadroomReserve)
	}
	if c.NumFrames == 0 {
		return errors.New("number of UMEM frames must be at least 1")
	}
	if uint64(fs)*uint64(c.NumFrames) > 1<<32 {
		return fmt.Errorf("UMEM of %d frames of %d bytes is larger than 4 GiB", c.NumFrames, fs)
	}
	return nil
}

// FrameSizeError is a frame size the kernel does not take, or xdpeng does
// not offer.
type FrameSizeError struct {
	FrameSize uint32
}

func (e *FrameSizeError) Error() string {
	var sizes []string
	for _, fs := range FrameSizes() {
		sizes = append(sizes, strconv.FormatUint(uint64(fs), 10))
	}
	return fmt.Sprintf("frame size %d: must be a power of two from %d to the page size, %d (here: %s)",
		e.FrameSize, MinFrameSize, PageSize(), strings.Join(sizes, ", "))
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
	headroom  uint32
	unaligned bool
	huge      bool
	// txMetadata is UmemConfig.TxMetadata.
	txMetadata bool
	// baseMask turns a descriptor's address into its frame's address:
	// the frame-size bits cleared in aligned mode, the offset bits in
	// unaligned mode.
	baseMask uint64
	// offShift is where a descriptor keeps the data's offset in its frame:
	// added to the address (0) in aligned mode, in the upper 16 bits in
	// unaligned mode.
	offShift uint
	shift    uint // log2(frameSize), when it is a power of two
	divide   bool // frameSize is not a power of two: FrameIndex divides
	sockets  int  // sockets created on it so far
	// first is how the first socket was bound, which every socket that
	// shares the UMEM inherits.
	first boundAs
}

// boundAs is what a socket's bind chose: copy or zero-copy, need_wakeup,
// multi-buffer.
type boundAs struct {
	zeroCopy, needWakeup, multiBuffer bool
}

func (b boundAs) String() string {
	mode := "copy"
	if b.zeroCopy {
		mode = "zero-copy"
	}
	return fmt.Sprintf("%s, need_wakeup %v, multi-buffer %v", mode, b.needWakeup, b.multiBuffer)
}

func newUmem(cfg UmemConfig, fd int, area mapping) *Umem {
	u := &Umem{fd: fd, area: area, frameSize: cfg.FrameSize, numFrames: cfg.NumFrames, headroom: cfg.Headroom,
		unaligned: cfg.Unaligned, huge: cfg.HugePages, txMetadata: cfg.TxMetadata, shift: uint(bits.TrailingZeros32(cfg.FrameSize))}
	u.divide = cfg.FrameSize&(cfg.FrameSize-1) != 0
	u.baseMask = ^uint64(cfg.FrameSize - 1)
	if cfg.Unaligned {
		u.baseMask, u.offShift = unalignedAddrMask, unalignedOffsetShift
	}
	return u
}

// FrameSize is the size of one frame.
func (u *Umem) FrameSize() uint32 { return u.frameSize }

// NumFrames is the number of frames.
func (u *Umem) NumFrames() uint32 { return u.numFrames }

// Headroom is the UMEM headroom of every receive buffer (UmemConfig.Headroom).
func (u *Umem) Headroom() uint32 { return u.headroom }

// RxOffset is where in its frame the kernel puts a received frame's data:
// the UMEM headroom and the kernel's own.
func (u *Umem) RxOffset() uint32 { return u.headroom + KernelHeadroom }

// Unaligned reports whether the UMEM is in unaligned chunk mode.
func (u *Umem) Unaligned() bool { return u.unaligned }

// HugePages reports whether huge pages back the UMEM.
func (u *Umem) HugePages() bool { return u.huge }

// FD is the registering socket (-1 for an in-memory UMEM).
func (u *Umem) FD() int { return u.fd }

// Frame returns the bytes of a frame's data: length bytes from the data
// address of descriptor address addr (see DataAddr).
func (u *Umem) Frame(addr uint64, length uint32) []byte {
	a := u.DataAddr(addr)
	return u.area.mem[a : a+uint64(length) : a+uint64(length)]
}

// FrameBase returns the address of the frame a descriptor address refers
// to: the kernel hands out addresses past a headroom, and frames are
// recycled by base. It is one AND in either mode.
func (u *Umem) FrameBase(addr uint64) uint64 { return addr & u.baseMask }

// BaseMask is what FrameBase ANDs an address with, for loops that keep it
// in a register.
func (u *Umem) BaseMask() uint64 { return u.baseMask }

// DataAddr returns where the data of descriptor address addr starts in the
// UMEM: addr itself in aligned mode; the buffer address in the lower 48
// bits plus the offset in the upper 16 in unaligned mode. The same sum
// serves both, since an aligned address has no upper bits.
func (u *Umem) DataAddr(addr uint64) uint64 { return DataAddr(addr) }

// DataAddr is Umem.DataAddr, which needs no UMEM: the same sum serves both
// modes.
func DataAddr(addr uint64) uint64 {
	return addr&unalignedAddrMask + addr>>unalignedOffsetShift
}

// Mem is the UMEM's memory: the data of descriptor address addr starts at
// Mem()[DataAddr(addr)].
func (u *Umem) Mem() []byte { return u.area.mem }

// Addr returns the descriptor address of the data off bytes into the frame
// at base, as the kernel reads it in the UMEM's mode.
func (u *Umem) Addr(base uint64, off uint32) uint64 { return base + uint64(off)<<u.offShift }

// FrameIndex is the number of the frame a descriptor address refers to.
func (u *Umem) FrameIndex(addr uint64) uint32 {
	if u.divide {
		return uint32(u.FrameBase(addr) / uint64(u.frameSize))
	}
	return uint32(u.FrameBase(addr) >> u.shift)
}

// Close releases the UMEM. Close every socket using it first.
func (u *Umem) Close() error {
	var err error
	if u.fd >= 0 {
		err = closeFD(u.fd)
		u.fd = -1
	}
	return errors.Join(err, u.area.unmap())
}
