// Package frametest builds raw frame pieces by hand for tests, so that every
// shape (options, extension headers, fragments, stacked tags) is easy to
// write down.
package frametest

import (
	"encoding/binary"
	"net"
)

// The MACs of the frames built here.
var (
	MACA = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x01}
	MACB = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x02}
)

// Eth is an Ethernet header from MACB to MACA with the given tags (pairs of
// TPID and VLAN ID) and EtherType.
func Eth(ethertype uint16, tags ...uint16) []byte {
	b := append([]byte{}, MACB...)
	b = append(b, MACA...)
	for i := 0; i+1 < len(tags); i += 2 { // pairs: TPID, VLAN ID
		b = binary.BigEndian.AppendUint16(b, tags[i])
		b = binary.BigEndian.AppendUint16(b, tags[i+1])
	}
	return binary.BigEndian.AppendUint16(b, ethertype)
}

// IPv4 is an IPv4 header of ihl words, 198.18.0.1 to 198.18.0.2.
func IPv4(proto uint8, ihl int, fragWord uint16) []byte {
	h := make([]byte, ihl*4)
	h[0] = 0x40 | byte(ihl)
	binary.BigEndian.PutUint16(h[6:], fragWord)
	h[8], h[9] = 64, proto
	copy(h[12:], []byte{198, 18, 0, 1, 198, 18, 0, 2})
	return h
}

// IPv6 is an IPv6 header whose next header is next.
func IPv6(next uint8) []byte {
	h := make([]byte, 40)
	h[0], h[6], h[7] = 0x60, next, 64
	return h
}

// Ext is an IPv6 extension header of 8*(1+units) bytes.
func Ext(next uint8, units int) []byte {
	h := make([]byte, 8*(1+units))
	h[0], h[1] = next, byte(units)
	return h
}

// Frag6 is an IPv6 fragment header.
func Frag6(next uint8, offset uint16) []byte {
	h := make([]byte, 8)
	h[0] = next
	binary.BigEndian.PutUint16(h[2:], offset<<3)
	return h
}

// Ports is n bytes of a layer-4 header beginning with the two ports.
func Ports(sport, dport uint16, n int) []byte {
	h := make([]byte, n)
	binary.BigEndian.PutUint16(h, sport)
	binary.BigEndian.PutUint16(h[2:], dport)
	return h
}

// Cat joins the pieces.
func Cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}
