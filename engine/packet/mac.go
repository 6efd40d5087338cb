package packet

import (
	"encoding/binary"
	"net"
)

// SwapMACs exchanges the destination and source MAC addresses of an Ethernet
// frame in place, as a reflector (l2fwd, XDP_TX) does. Frames shorter than
// the two addresses are left alone.
func SwapMACs(frame []byte) {
	if len(frame) < 12 {
		return
	}
	// The twelve bytes as one 8-byte and one 4-byte word: two loads and
	// two stores, the addresses exchanged in registers. The length check
	// above lets the compiler drop the bounds checks.
	x, y := binary.LittleEndian.Uint64(frame[0:]), binary.LittleEndian.Uint32(frame[8:])
	dst := x & (1<<48 - 1)       // bytes 0-5
	src := x>>48 | uint64(y)<<16 // bytes 6-11
	binary.LittleEndian.PutUint64(frame[0:], src|dst<<48)
	binary.LittleEndian.PutUint32(frame[8:], uint32(dst>>16))
}

// SetDstMAC writes mac (6 bytes) as the destination address of frame.
// Frames shorter than an address are left alone.
func SetDstMAC(frame []byte, mac net.HardwareAddr) {
	if len(frame) < 6 || len(mac) < 6 {
		return
	}
	copy(frame[0:6], mac[:6])
}

// SetSrcMAC writes mac (6 bytes) as the source address of frame.
// Frames shorter than two addresses are left alone.
func SetSrcMAC(frame []byte, mac net.HardwareAddr) {
	if len(frame) < 12 || len(mac) < 6 {
		return
	}
	copy(frame[6:12], mac[:6])
}
