package xsk

// TxRing carries frames to transmit from userspace to the kernel. We are its
// producer.
type TxRing struct {
	ring
	descs []Desc
}

// Reserve claims up to n slots and returns the first index and how many it
// got. Write each with Set, then Submit the same count.
func (t *TxRing) Reserve(n uint32) (idx, got uint32) { return t.reserve(n) }

// Slots returns the ring's slots and the mask that maps an index to its
// slot: slot idx is slots[idx&mask]. A loop over many slots keeps both in
// local variables, which spares it a reload of the ring's fields after
// every store.
func (t *TxRing) Slots() ([]Desc, uint32) { return t.descs, t.mask }

// Set writes the descriptor for slot idx.
func (t *TxRing) Set(idx uint32, addr uint64, length uint32) {
	d := &t.descs[idx&t.mask]
	d.Addr = addr
	d.Len = length
	d.Options = 0
}

// SetOptions writes the descriptor for slot idx with options: 0, or
// PacketContinues on every descriptor of a multi-buffer packet but the
// last.
func (t *TxRing) SetOptions(idx uint32, addr uint64, length, options uint32) {
	d := &t.descs[idx&t.mask]
	d.Addr = addr
	d.Len = length
	d.Options = options
}

// Cancel gives back the last n reserved slots, which will not be submitted.
func (t *TxRing) Cancel(n uint32) { t.cancel(n) }

// Submit hands n reserved slots to the kernel.
func (t *TxRing) Submit(n uint32) { t.submit(n) }

// NeedWakeup reports whether the kernel wants a sendto before it transmits.
// In copy mode the kernel transmits only inside that system call.
func (t *TxRing) NeedWakeup() bool { return t.needWakeup() }

// Pending is the number of descriptors the kernel has not consumed yet.
func (t *TxRing) Pending() uint32 { return t.pending() }
