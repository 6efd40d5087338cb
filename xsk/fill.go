package xsk

// FillRing carries empty frames from userspace to the kernel, which receives
// into them. We are its producer.
type FillRing struct {
	ring
	addrs []uint64
}

// Reserve claims up to n slots and returns the first index and how many it
// got. Write each slot with Set, then Submit the same count.
func (f *FillRing) Reserve(n uint32) (idx, got uint32) { return f.reserve(n) }

// Slots returns the ring's slots and the mask that maps an index to its
// slot: slot idx is slots[idx&mask]. A loop over many slots keeps both in
// local variables, which spares it a reload of the ring's fields after
// every store.
func (f *FillRing) Slots() ([]uint64, uint32) { return f.addrs, f.mask }

// Set writes the frame address for slot idx.
func (f *FillRing) Set(idx uint32, addr uint64) { f.addrs[idx&f.mask] = addr }

// Cancel gives back the last n reserved slots, which will not be submitted.
func (f *FillRing) Cancel(n uint32) { f.cancel(n) }

// Submit hands n reserved slots to the kernel.
func (f *FillRing) Submit(n uint32) { f.submit(n) }

// NeedWakeup reports whether the kernel wants a system call (recvfrom or
// poll) before it receives into the frames of this ring again.
func (f *FillRing) NeedWakeup() bool { return f.needWakeup() }

// Pending is the number of frames the kernel holds in this ring.
func (f *FillRing) Pending() uint32 { return f.pending() }
