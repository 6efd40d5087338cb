package xsk

// This file and mmap_linux.go hold all of the package's unsafe code: viewing
// the rings' memory as indices and descriptors here, mapping the rings and
// the UMEM from the kernel there.

import (
	"sync/atomic"
	"unsafe"
)

const descSize = uint64(unsafe.Sizeof(Desc{}))

// mapping is memory mapped from the kernel (or, for in-memory rings, a Go
// slice standing in for it).
type mapping struct {
	mem    []byte
	mapped bool
}

func (m *mapping) unmap() error {
	if !m.mapped || m.mem == nil {
		m.mem = nil
		return nil
	}
	err := munmap(m.mem)
	m.mem = nil
	return err
}

// memRing lays out a ring in ordinary memory, with the producer, consumer
// and flags words on cache lines of their own as the kernel does.
func memRing(size uint32, elemSize uint64, r *ring) mapping {
	off := ringOffset{Producer: 0, Consumer: 64, Flags: 128, Desc: 192}
	// Back the ring with uint64s so that the words are aligned for atomics.
	words := make([]uint64, (off.Desc+uint64(size)*elemSize+7)/8)
	mem := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	r.init(mem, off, size)
	return mapping{mem: mem}
}

func (r *ring) init(mem []byte, off ringOffset, size uint32) {
	r.producer = (*atomic.Uint32)(unsafe.Pointer(&mem[off.Producer]))
	r.consumer = (*atomic.Uint32)(unsafe.Pointer(&mem[off.Consumer]))
	r.flags = (*atomic.Uint32)(unsafe.Pointer(&mem[off.Flags]))
	r.mask = size - 1
	r.size = size
	r.desc = unsafe.Pointer(&mem[off.Desc])
}

func addrSlice(r *ring) []uint64 { return unsafe.Slice((*uint64)(r.desc), r.size) }
func descSlice(r *ring) []Desc   { return unsafe.Slice((*Desc)(r.desc), r.size) }
