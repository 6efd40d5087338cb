package selftest

import (
	"encoding/binary"
	"fmt"
	"net"
)

// The frames of every test have the same shape, so that the receiver can
// check each one whole: an Ethernet header (destination, source, EtherType
// 0x9000, the loopback test protocol), two bytes of padding so that the
// payload is aligned to 4 bytes (the first, selectorByte, tells the
// steering program which socket the frame is for in XDP_SHARED_UMEM), then 32-bit big-endian words, word i of
// frame n holding n<<16 | i. A frame's bytes past its last whole word are
// zero. Any byte out of place, a frame out of order, a frame cut short or
// one from another test shows as a wrong word.
const (
	headerLen   = 16     // Ethernet header and padding
	etherType   = 0x9000 // ETH_P_LOOPBACK
	minFrameLen = 64     // the smallest frame the tests send (MIN_PKT_SIZE)
	// selectorByte is the padding byte xsk_selftest.c reads, in
	// XDP_SHARED_UMEM, as the key of the socket a frame is for.
	selectorByte = 14
)

// word is what word i of frame nb holds.
func word(nb uint32, i int) uint32 { return nb<<16 | uint32(i)&0xffff }

// writeFrame fills b, a whole frame, as frame number nb from src to dst.
func writeFrame(b []byte, dst, src net.HardwareAddr, nb uint32) {
	copy(b[0:6], dst)
	copy(b[6:12], src)
	binary.BigEndian.PutUint16(b[12:14], etherType)
	b[14], b[15] = 0, 0
	i := 0
	for ; headerLen+4*i+4 <= len(b); i++ {
		binary.BigEndian.PutUint32(b[headerLen+4*i:], word(nb, i))
	}
	clear(b[headerLen+4*i:])
}

// mismatch is the first difference checkFrame found.
type mismatch struct {
	What, Expected, Got string
}

// checkFrame compares b, a received frame, with frame nb from src to dst of
// wantLen bytes, and returns the first difference, nil if there is none.
func checkFrame(b []byte, wantLen int, dst, src net.HardwareAddr, nb uint32) *mismatch {
	if len(b) != wantLen {
		got := fmt.Sprintf("%d bytes", len(b))
		if len(b) >= headerLen+4 {
			if other := binary.BigEndian.Uint32(b[headerLen:]) >> 16; other != nb {
				got += fmt.Sprintf(" (frame %d)", other)
			}
		}
		return &mismatch{"length", fmt.Sprintf("%d bytes", wantLen), got}
	}
	if len(b) < headerLen {
		return &mismatch{"length", fmt.Sprintf("at least %d bytes", headerLen), fmt.Sprintf("%d bytes", len(b))}
	}
	if got := net.HardwareAddr(b[0:6]); got.String() != dst.String() {
		return &mismatch{"destination MAC", dst.String(), got.String()}
	}
	if got := net.HardwareAddr(b[6:12]); got.String() != src.String() {
		return &mismatch{"source MAC", src.String(), got.String()}
	}
	if got := binary.BigEndian.Uint16(b[12:14]); got != etherType {
		return &mismatch{"EtherType", fmt.Sprintf("%#04x", etherType), fmt.Sprintf("%#04x", got)}
	}
	i := 0
	for ; headerLen+4*i+4 <= len(b); i++ {
		if got, want := binary.BigEndian.Uint32(b[headerLen+4*i:]), word(nb, i); got != want {
			return &mismatch{fmt.Sprintf("payload word %d", i),
				fmt.Sprintf("%#08x (frame %d word %d)", want, nb, i),
				fmt.Sprintf("%#08x (frame %d word %d)", got, got>>16, got&0xffff)}
		}
	}
	for j := headerLen + 4*i; j < len(b); j++ {
		if b[j] != 0 {
			return &mismatch{fmt.Sprintf("byte %d", j), "0", fmt.Sprint(b[j])}
		}
	}
	return nil
}
