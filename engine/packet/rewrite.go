package packet

import "encoding/binary"

// DecTTL decrements the IPv4 TTL or the IPv6 hop limit of the frame that s
// describes (as Parse filled it) and, for IPv4, patches the header checksum
// for the one changed word (RFC 1624) rather than summing the header again.
// It reports false, and changes nothing, where the frame is not IP or the
// TTL is 1 or 0: a router drops such a frame (and may send ICMP time
// exceeded) rather than forward it.
func DecTTL(frame []byte, s *Summary) bool {
	off := int(s.L3Off)
	switch s.L3 {
	case 4:
		if len(frame) < off+IPv4HdrLen || frame[off+8] <= 1 {
			return false
		}
		// TTL and protocol share a 16-bit word of the checksummed header.
		old := binary.BigEndian.Uint16(frame[off+8:])
		frame[off+8]--
		check := binary.BigEndian.Uint16(frame[off+10:])
		binary.BigEndian.PutUint16(frame[off+10:], UpdateChecksum(check, old, binary.BigEndian.Uint16(frame[off+8:])))
		return true
	case 6:
		// The hop limit is not covered by any checksum.
		if len(frame) < off+IPv6HdrLen || frame[off+7] <= 1 {
			return false
		}
		frame[off+7]--
		return true
	}
	return false
}

// PushVLAN turns a frame that was grown by VLANTagLen bytes at its front
// (Batch.AdjustHead(i, -VLANTagLen) in package engine) into the same frame
// with an 802.1Q tag: it moves the MAC addresses to the new front and
// writes the tag, EtherType 0x8100 and tci (priority, DEI and VLAN ID),
// behind them. It reports false, and changes nothing, for a frame too short
// to hold the MACs behind the VLANTagLen new bytes.
func PushVLAN(frame []byte, tci uint16) bool {
	if len(frame) < VLANTagLen+12 {
		return false
	}
	copy(frame[:12], frame[VLANTagLen:VLANTagLen+12])
	binary.BigEndian.PutUint16(frame[12:], EtherTypeVLAN)
	binary.BigEndian.PutUint16(frame[14:], tci)
	return true
}

// PopVLAN removes a frame's outer VLAN tag (802.1Q or 802.1ad) by moving
// the MAC addresses VLANTagLen bytes back, over the tag; the frame then
// starts VLANTagLen bytes later (Batch.AdjustHead(i, VLANTagLen) in package
// engine). It returns the tag's tci, and false, with nothing changed, for an
// untagged or truncated frame.
func PopVLAN(frame []byte) (tci uint16, ok bool) {
	if len(frame) < EthHdrLen+VLANTagLen {
		return 0, false
	}
	if et := binary.BigEndian.Uint16(frame[12:]); et != EtherTypeVLAN && et != EtherTypeQinQ {
		return 0, false
	}
	tci = binary.BigEndian.Uint16(frame[14:])
	copy(frame[VLANTagLen:VLANTagLen+12], frame[:12])
	return tci, true
}
