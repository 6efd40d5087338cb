package xsk

// RxRing carries received frames from the kernel to userspace. We are its
// consumer.
type RxRing struct {
	ring
	descs []Desc
}

// Peek claims up to n received frames and returns the first index and how
// many it got. Read each with Desc, then Release the same count.
func (r *RxRing) Peek(n uint32) (idx, got uint32) { return r.peek(n) }

// Desc returns the descriptor in slot idx.
func (r *RxRing) Desc(idx uint32) *Desc { return &r.descs[idx&r.mask] }

// Slots returns the ring's slots and the mask that maps an index to its
// slot: slot idx is slots[idx&mask]. A loop over many slots keeps both in
// local variables, which spares it a reload of the ring's fields after
// every store.
func (r *RxRing) Slots() ([]Desc, uint32) { return r.descs, r.mask }

// Unpeek gives back the last n peeked slots, unreleased, so that the next
// Peek returns them again: a batch that ends in the middle of a
// multi-buffer packet leaves its start for the next batch.
func (r *RxRing) Unpeek(n uint32) { r.cachedCons -= n }

// Release gives n peeked slots back to the kernel.
func (r *RxRing) Release(n uint32) { r.release(n) }

// Pending is the number of received frames the kernel has posted and we have
// not released yet.
func (r *RxRing) Pending() uint32 { return r.pending() }
