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
	// Two loads and two stores per address instead of a byte loop; the
	// length check above lets the compiler drop the bounds checks.
	d0, d1 := binary.LittleEndian.Uint32(frame[0:]), binary.LittleEndian.Uint16(frame[4:])
	s0, s1 := binary.LittleEndian.Uint32(frame[6:]), binary.LittleEndian.Uint16(frame[10:])
	binary.LittleEndian.PutUint32(frame[0:], s0)
	binary.LittleEndian.PutUint16(frame[4:], s1)
	binary.LittleEndian.PutUint32(frame[6:], d0)
	binary.LittleEndian.PutUint16(frame[10:], d1)
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
