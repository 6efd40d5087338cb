package packet

import "encoding/binary"

// Sum adds b to the one's complement sum acc as big-endian 16-bit words (a
// trailing odd byte is padded with zero), without folding. Chain calls to sum
// a pseudo-header and a segment, then Fold the result.
func Sum(acc uint64, b []byte) uint64 {
	// Eight bytes at a time: the carries pile up in the upper 32 bits of
	// the 64-bit accumulator and are folded once at the end (RFC 1071).
	for len(b) >= 8 {
		v := binary.BigEndian.Uint64(b)
		acc += v >> 32
		acc += v & 0xffffffff
		b = b[8:]
	}
	for len(b) >= 2 {
		acc += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint64(b[0]) << 8
	}
	return acc
}

// Fold folds a sum from Sum to 16 bits and complements it: the value to store
// in a checksum field.
func Fold(acc uint64) uint16 {
	for acc>>16 != 0 {
		acc = (acc & 0xffff) + (acc >> 16)
	}
	return ^uint16(acc)
}

// Checksum is the Internet checksum (RFC 1071) of b.
func Checksum(b []byte) uint16 { return Fold(Sum(0, b)) }

// UpdateChecksum returns the checksum check after a 16-bit word of the data
// it covers changed from old to new (RFC 1624, eqn. 3), so that one field
// can be rewritten without summing the whole packet again.
func UpdateChecksum(check, old, new uint16) uint16 {
	acc := uint32(^check) + uint32(^old) + uint32(new)
	acc = (acc & 0xffff) + (acc >> 16)
	acc = (acc & 0xffff) + (acc >> 16)
	return ^uint16(acc)
}

// pseudoSum sums the IPv4 or IPv6 pseudo-header of an upper-layer segment.
// src and dst are 4 or 16 bytes.
func pseudoSum(src, dst []byte, proto uint8, length int) uint64 {
	acc := Sum(0, src)
	acc = Sum(acc, dst)
	return acc + uint64(proto) + uint64(length)
}
