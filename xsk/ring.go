package xsk

import (
	"sync/atomic"
	"unsafe"
)

// ring is what the four rings share: the shared indices and flags, and our
// cached copies of them. Indices are free-running uint32s; the slot of index
// i is i & mask, so they wrap at 2^32 without special cases.
type ring struct {
	producer *atomic.Uint32
	consumer *atomic.Uint32
	flags    *atomic.Uint32
	desc     unsafe.Pointer
	mask     uint32
	size     uint32

	// For a ring we produce: cachedProd is our producer index (we own it);
	// cachedCons is the consumer index plus size, so that cachedCons -
	// cachedProd is the free room without a subtraction from size.
	// For a ring we consume: cachedCons is our consumer index; cachedProd
	// the producer index as last read.
	cachedProd uint32
	cachedCons uint32
}

// Size is the number of slots in the ring.
func (r *ring) Size() uint32 { return r.size }

// needWakeup reports whether the kernel asked for a system call.
func (r *ring) needWakeup() bool { return r.flags != nil && r.flags.Load()&xdpRingNeedWakeup != 0 }

const xdpRingNeedWakeup = 1 // XDP_RING_NEED_WAKEUP

// prodFree returns how many slots can be reserved, reading the shared
// consumer index only when the cached one does not show n free.
func (r *ring) prodFree(n uint32) uint32 {
	free := r.cachedCons - r.cachedProd
	if free >= n {
		return free
	}
	r.cachedCons = r.consumer.Load() + r.size
	return r.cachedCons - r.cachedProd
}

// reserve claims up to n slots; it returns the first index and the count.
func (r *ring) reserve(n uint32) (uint32, uint32) {
	free := r.prodFree(n)
	if n > free {
		n = free
	}
	idx := r.cachedProd
	r.cachedProd += n
	return idx, n
}

// submit publishes n reserved slots to the consumer. The slots' contents
// were written before this store, which has release semantics.
func (r *ring) submit(n uint32) { r.producer.Store(r.producer.Load() + n) }

// consAvail returns how many entries can be peeked, reading the shared
// producer index only when the cached one does not show n entries.
func (r *ring) consAvail(n uint32) uint32 {
	avail := r.cachedProd - r.cachedCons
	if avail >= n {
		return avail
	}
	r.cachedProd = r.producer.Load()
	return r.cachedProd - r.cachedCons
}

// peek claims up to n filled entries; it returns the first index and count.
func (r *ring) peek(n uint32) (uint32, uint32) {
	avail := r.consAvail(n)
	if n > avail {
		n = avail
	}
	idx := r.cachedCons
	r.cachedCons += n
	return idx, n
}

// release hands n peeked entries back to the producer. The entries were
// read before this store, which has release semantics.
func (r *ring) release(n uint32) { r.consumer.Store(r.consumer.Load() + n) }

// pending is the number of entries between the producer and consumer
// indices in shared memory: in flight, from either side's point of view.
// It is 0 for a ring the socket does not have.
func (r *ring) pending() uint32 {
	if r.producer == nil {
		return 0
	}
	return r.producer.Load() - r.consumer.Load()
}

// cancel gives back the last n reserved, unsubmitted slots.
func (r *ring) cancel(n uint32) { r.cachedProd -= n }
