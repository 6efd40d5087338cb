package packet

import "encoding/binary"

// Summary is what Parse learns about a frame: enough to count it by
// protocol and port. Offsets are from the start of the frame; zero means
// "not present".
type Summary struct {
	EtherType uint16 // after any VLAN tags
	VLAN      uint16 // VLAN ID of the outermost tag; 0 = untagged
	InnerVLAN uint16 // VLAN ID of the second tag (QinQ); 0 = none
	Tags      uint8  // VLAN tags seen, 0..2
	L3        uint8  // 4 or 6; 0 = not IP
	Proto     uint8  // IP protocol (IPv6: after extension headers)
	Fragment  bool   // a non-first IP fragment: no transport header
	L3Off     uint16
	L4Off     uint16
	// SrcPort and DstPort are set for UDP and TCP.
	SrcPort, DstPort uint16
	// ICMPType and ICMPCode are set for ICMP and ICMPv6.
	ICMPType, ICMPCode uint8
	TCPFlags           uint8
}

// maxExtHeaders bounds the IPv6 extension headers Parse skips, so that a
// crafted chain costs a fixed, small amount of work. Each one skipped must
// be complete (an AH at least its 12-byte fixed part).
const maxExtHeaders = 4

// Parse decodes the headers of an Ethernet frame into s (which it resets
// first) and reports whether every header the frame announces is complete:
// false for a frame shorter than an Ethernet header, or one truncated inside
// a VLAN, IP or transport header. s then holds what was decoded before the
// cut. Non-IP frames, unknown protocols, IPv6 ESP and non-first fragments are
// complete as far as Parse goes: true, with the fields beyond left zero.
//
// Parse never reads outside frame, never panics and never allocates.
func Parse(frame []byte, s *Summary) bool {
	*s = Summary{}
	if len(frame) < EthHdrLen {
		return false
	}
	et := binary.BigEndian.Uint16(frame[12:])
	off := EthHdrLen
	for et == EtherTypeVLAN || et == EtherTypeQinQ {
		if s.Tags == 2 {
			// A third tag: a frame we do not read further.
			s.EtherType = et
			return true
		}
		if len(frame) < off+VLANTagLen {
			return false
		}
		id := binary.BigEndian.Uint16(frame[off:]) & 0x0fff
		if s.Tags == 0 {
			s.VLAN = id
		} else {
			s.InnerVLAN = id
		}
		s.Tags++
		et = binary.BigEndian.Uint16(frame[off+2:])
		off += VLANTagLen
	}
	s.EtherType = et
	switch et {
	case EtherTypeIPv4:
		return parseIPv4(frame, off, s)
	case EtherTypeIPv6:
		return parseIPv6(frame, off, s)
	}
	return true
}

func parseIPv4(frame []byte, off int, s *Summary) bool {
	if len(frame) < off+IPv4HdrLen {
		return false
	}
	ip := frame[off:]
	if ip[0]>>4 != 4 {
		return false
	}
	ihl := int(ip[0]&0x0f) * 4
	if ihl < IPv4HdrLen || len(ip) < ihl {
		return false
	}
	s.L3, s.L3Off = 4, uint16(off)
	s.Proto = ip[9]
	if binary.BigEndian.Uint16(ip[6:])&0x1fff != 0 {
		s.Fragment = true
		return true
	}
	return parseL4(frame, off+ihl, s)
}

func parseIPv6(frame []byte, off int, s *Summary) bool {
	if len(frame) < off+IPv6HdrLen {
		return false
	}
	if frame[off]>>4 != 6 {
		return false
	}
	s.L3, s.L3Off = 6, uint16(off)
	next := frame[off+6]
	off += IPv6HdrLen
	for skipped := 0; ; skipped++ {
		switch next {
		case 0, 43, 44, 51, 60: // hop-by-hop, routing, fragment, AH, destination options
		default:
			s.Proto = next
			return parseL4(frame, off, s)
		}
		if skipped == maxExtHeaders {
			// A longer chain than Parse reads: report where it stopped.
			s.Proto = next
			return true
		}
		if len(frame) < off+8 {
			s.Proto = next
			return false
		}
		var n int // the extension header's length; all of it must be there
		switch next {
		case 44: // fragment
			if binary.BigEndian.Uint16(frame[off+2:])&0xfff8 != 0 {
				s.Proto, s.Fragment = frame[off], true
				return true
			}
			n = 8
		case 51: // AH: length in 4-byte units, minus 2
			n = (int(frame[off+1]) + 2) * 4
		default: // length in 8-byte units, not counting the first 8
			n = (int(frame[off+1]) + 1) * 8
		}
		// An AH shorter than its fixed part (12 bytes) cannot be complete.
		if len(frame) < off+n || (next == 51 && n < 12) {
			s.Proto = next
			return false
		}
		next, off = frame[off], off+n
	}
}

func parseL4(frame []byte, off int, s *Summary) bool {
	switch s.Proto {
	case ProtoUDP:
		if len(frame) < off+UDPHdrLen {
			return false
		}
		s.L4Off = uint16(off)
		s.SrcPort = binary.BigEndian.Uint16(frame[off:])
		s.DstPort = binary.BigEndian.Uint16(frame[off+2:])
	case ProtoTCP:
		if len(frame) < off+TCPHdrLen {
			return false
		}
		s.L4Off = uint16(off)
		s.SrcPort = binary.BigEndian.Uint16(frame[off:])
		s.DstPort = binary.BigEndian.Uint16(frame[off+2:])
		s.TCPFlags = frame[off+13]
	case ProtoICMP, ProtoICMPv6:
		if len(frame) < off+4 {
			return false
		}
		s.L4Off = uint16(off)
		s.ICMPType, s.ICMPCode = frame[off], frame[off+1]
	}
	return true
}
