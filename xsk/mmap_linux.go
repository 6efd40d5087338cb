package xsk

// The kernel's side of the package's unsafe code: mapping the rings and the
// UMEM, and the socket options that take structs.

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func munmap(mem []byte) error { return unix.Munmap(mem) }

// mmapRing maps one ring of fd at pgoff and fills in r's shared pointers.
// elemSize is 8 for the fill and completion rings, 16 for rx and tx.
func mmapRing(fd int, pgoff int64, off unix.XDPRingOffset, size uint32, elemSize uint64, r *ring) (mapping, error) {
	length := int(off.Desc + uint64(size)*elemSize)
	mem, err := unix.Mmap(fd, pgoff, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return mapping{}, fmt.Errorf("mmap ring (offset %#x, %d bytes): %w", pgoff, length, err)
	}
	r.init(mem, ringOffset(off), size)
	return mapping{mem: mem, mapped: true}, nil
}

// mmapArea maps the UMEM: anonymous and private, and populated up front so
// that the first packets do not fault pages in. With huge, it is in huge
// pages of the system's default size (MAP_HUGETLB), size rounded up to a
// whole page; the kernel reserves them at mmap, so a pool without enough
// free pages fails here, with ErrNoHugePages. Otherwise it is in normal
// pages, backed by transparent huge pages where the kernel allows them.
// Huge pages matter here: the kernel copies every received frame into a
// different UMEM frame, and with 4 KiB pages each of those copies would
// need a TLB entry of its own.
func mmapArea(size int, huge bool) (mapping, error) {
	if huge {
		hp, err := ReadHugePages()
		if err != nil {
			return mapping{}, err
		}
		size = (size + hp.Size - 1) / hp.Size * hp.Size
		mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE,
			unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_HUGETLB|unix.MAP_POPULATE)
		if err != nil {
			if errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.EINVAL) {
				return mapping{}, &HugePagesError{Need: size / hp.Size, Pages: hp, Err: err}
			}
			return mapping{}, fmt.Errorf("mmap UMEM of %d bytes in huge pages: %w", size, err)
		}
		return mapping{mem: mem, mapped: true}, nil
	}
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return mapping{}, fmt.Errorf("mmap UMEM of %d bytes: %w", size, err)
	}
	// Both are best effort: without THP (or on kernels before 5.14 for
	// MADV_POPULATE_WRITE) the UMEM still works, in small pages, faulted in
	// by registration's page pinning.
	_ = unix.Madvise(mem, unix.MADV_HUGEPAGE)
	_ = unix.Madvise(mem, unix.MADV_POPULATE_WRITE)
	return mapping{mem: mem, mapped: true}, nil
}

func areaAddr(area []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&area[0]))) }

// getsockopt reads a fixed-size struct option.
func getsockopt[T any](fd, level, name int, v *T) error {
	size := uint32(unsafe.Sizeof(*v))
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), uintptr(name),
		uintptr(unsafe.Pointer(v)), uintptr(unsafe.Pointer(&size)), 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// setsockopt writes a fixed-size struct option.
func setsockopt[T any](fd, level, name int, v *T) error {
	_, _, errno := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), uintptr(level), uintptr(name),
		uintptr(unsafe.Pointer(v)), unsafe.Sizeof(*v), 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// Nap sleeps for d (at most a few hundred microseconds: the Go runtime
// cannot stop the world while it lasts) with a raw nanosleep. A nap through
// the runtime's system call path looks to it like a blocking call: its
// monitor thread wakes every 20 microseconds to take the P away and a
// second thread runs to hold it, and on a worker's CPU those threads are
// what makes the CPU look shared. A signal (the runtime's preemption)
// ends the nap early; that is not an error.
func Nap(d time.Duration) error {
	ts := unix.NsecToTimespec(int64(d))
	_, _, e := unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
	if e != 0 && e != unix.EINTR {
		return e
	}
	return nil
}
