package bpf

// The layout of struct xsk_rx_meta (xsk_meta.h), which ends where a
// frame's data starts: RxMetaSize bytes in front of it, host byte order but
// for the VLAN protocol (big-endian, as on the wire).
const (
	RxMetaSize        = 24
	RxMetaTimestampAt = 0  // uint64, ns of the device's clock
	RxMetaHashAt      = 8  // uint32
	RxMetaHashTypeAt  = 12 // uint32, enum xdp_rss_hash_type
	RxMetaVLANTCIAt   = 16 // uint16
	RxMetaVLANProtoAt = 18 // uint16, big-endian
	RxMetaValidAt     = 20 // uint32, RxMeta* bits
)

// The bits of the valid word: which fields the driver gave for the frame.
const (
	RxMetaTimestamp = 1 << 0
	RxMetaHash      = 1 << 1
	RxMetaVLAN      = 1 << 2
)
