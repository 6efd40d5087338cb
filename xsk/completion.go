package xsk

// CompletionRing carries transmitted frames from the kernel back to
// userspace. We are its consumer.
type CompletionRing struct {
	ring
	addrs []uint64
}

// Peek claims up to n completed frames and returns the first index and how
// many it got. Read each with Addr, then Release the same count.
func (c *CompletionRing) Peek(n uint32) (idx, got uint32) { return c.peek(n) }

// Addr returns the frame address in slot idx.
func (c *CompletionRing) Addr(idx uint32) uint64 { return c.addrs[idx&c.mask] }

// Slots returns the ring's slots and the mask that maps an index to its
// slot: slot idx is slots[idx&mask]. A loop over many slots keeps both in
// local variables, which spares it a reload of the ring's fields after
// every store.
func (c *CompletionRing) Slots() ([]uint64, uint32) { return c.addrs, c.mask }

// Release gives n peeked slots back to the kernel.
func (c *CompletionRing) Release(n uint32) { c.release(n) }

// Pending is the number of completions the kernel has posted and we have not
// released yet.
func (c *CompletionRing) Pending() uint32 { return c.pending() }
