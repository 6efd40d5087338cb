package xsk

// The kernel's AF_XDP structures and constants that the rings use
// (include/uapi/linux/if_xdp.h, include/uapi/linux/bpf.h), declared here
// once for every operating system, so that the rings and in-memory sockets
// build everywhere; abi_linux_test.go checks them against the kernel's
// headers as golang.org/x/sys/unix has them.

// Desc is a descriptor of the rx and tx rings, as the kernel lays it out
// (struct xdp_desc).
type Desc struct {
	Addr    uint64
	Len     uint32
	Options uint32
}

// ringOffset is where a ring's words and descriptors are in its mapping
// (struct xdp_ring_offset).
type ringOffset struct {
	Producer uint64
	Consumer uint64
	Desc     uint64
	Flags    uint64
}

// PacketContinues is set in a descriptor's Options when the packet goes
// on in the next descriptor (XDP_PKT_CONTD, multi-buffer only).
const PacketContinues = 1

// KernelHeadroom is what the kernel leaves in front of a received frame in
// its buffer, after the UMEM's own headroom (XDP_PACKET_HEADROOM).
const KernelHeadroom = 256
