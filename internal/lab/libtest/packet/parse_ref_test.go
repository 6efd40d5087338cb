package packet_test

import (
	"encoding/binary"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/xdpeng/xdpeng/engine/packet"
)

// maxExtHeaders is how many IPv6 extension headers Parse's documentation
// says it skips.
const maxExtHeaders = 4

// refParse is an independent decoder for FuzzParse to compare Parse with:
// gopacket's layer decoders read every field and say whether each header is
// complete, and this function walks the headers by Parse's documented rules,
// written here from the rules rather than from Parse's code:
//
//   - an Ethernet header of 14 bytes; at most two 802.1Q/802.1ad tags, a
//     third is reported as the EtherType and ends the walk;
//   - IPv4: version 4, IHL of at least 5 and the whole header present; the
//     total length field is not used (the frame's length is); a non-first
//     fragment has no transport header;
//   - IPv6: version 6; up to maxExtHeaders extension headers (hop-by-hop,
//     routing, destination options, fragment, AH) are skipped, each of which
//     must be complete; one more ends the walk with Proto = its type; a
//     non-first fragment has no transport header;
//   - UDP needs 8 bytes, TCP 20, ICMP and ICMPv6 their type, code and
//     checksum (4); other protocols are complete as they stand.
func refParse(frame []byte) (packet.Summary, bool) {
	var s packet.Summary
	var eth layers.Ethernet
	if !decode(&eth, frame) {
		return s, false
	}
	et, rest := uint16(eth.EthernetType), frame[14:]
	if eth.EthernetType == layers.EthernetTypeLLC {
		et = eth.Length // an 802.3 length: packet.Parse reports it as it is
	}
	for et == packet.EtherTypeVLAN || et == packet.EtherTypeQinQ {
		if s.Tags == 2 {
			s.EtherType = et
			return s, true
		}
		var tag layers.Dot1Q
		if !decode(&tag, rest) {
			return s, false
		}
		if s.Tags == 0 {
			s.VLAN = tag.VLANIdentifier
		} else {
			s.InnerVLAN = tag.VLANIdentifier
		}
		s.Tags++
		et, rest = uint16(tag.Type), tag.Payload
	}
	s.EtherType = et
	l3Off := len(frame) - len(rest)
	switch et {
	case packet.EtherTypeIPv4:
		// Parse ignores the total length and the options: give gopacket a
		// copy whose total length is what the frame holds and whose
		// options are end-of-options bytes.
		if len(rest) < 20 {
			return s, false
		}
		hdr := append([]byte(nil), rest...)
		binary.BigEndian.PutUint16(hdr[2:], uint16(min(len(hdr), 0xffff)))
		if ihl := int(hdr[0]&0x0f) * 4; ihl > 20 && ihl <= len(hdr) {
			clear(hdr[20:ihl])
		}
		var ip layers.IPv4
		if !decode(&ip, hdr) || ip.Version != 4 {
			return s, false
		}
		s.L3, s.L3Off, s.Proto = 4, uint16(l3Off), uint8(ip.Protocol)
		if ip.FragOffset != 0 {
			s.Fragment = true
			return s, true
		}
		return refL4(frame, l3Off+int(ip.IHL)*4, &s)
	case packet.EtherTypeIPv6:
		// gopacket's IPv6 decoder reads a hop-by-hop header itself and
		// checks the payload length: give it a copy with neither, and
		// walk the extension headers here.
		if len(rest) < 40 {
			return s, false
		}
		hdr := append([]byte(nil), rest[:40]...)
		hdr[6] = uint8(layers.IPProtocolNoNextHeader)
		binary.BigEndian.PutUint16(hdr[4:], 1)
		var ip layers.IPv6
		if !decode(&ip, append(hdr, 0)) || ip.Version != 6 {
			return s, false
		}
		s.L3, s.L3Off = 6, uint16(l3Off)
		next, off := rest[6], l3Off+40
		for i := 0; ; i++ {
			var n int // the extension header's length
			switch next {
			case 0, 43, 60:
				if i == maxExtHeaders {
					s.Proto = next
					return s, true
				}
				// The same layout for all three: next header, length in
				// 8-byte units after the first 8; the rest replaced by
				// padding options, since packet.Parse does not read it.
				if len(frame) < off+2 {
					s.Proto = next
					return s, false
				}
				e := append([]byte(nil), frame[off:]...)
				padOptions(e, (int(e[1])+1)*8)
				var d layers.IPv6Destination
				if !decode(&d, e) {
					s.Proto = next
					return s, false
				}
				next, n = uint8(d.NextHeader), d.ActualLength
			case 44:
				if i == maxExtHeaders {
					s.Proto = next
					return s, true
				}
				f, ok := decodeFirst(frame[off:], layers.LayerTypeIPv6Fragment).(*layers.IPv6Fragment)
				if !ok {
					s.Proto = next
					return s, false
				}
				if f.FragmentOffset != 0 {
					s.Proto, s.Fragment = uint8(f.NextHeader), true
					return s, true
				}
				next, n = uint8(f.NextHeader), 8
			case 51:
				if i == maxExtHeaders {
					s.Proto = next
					return s, true
				}
				ah, ok := decodeFirst(frame[off:], layers.LayerTypeIPSecAH).(*layers.IPSecAH)
				if !ok {
					s.Proto = next
					return s, false
				}
				next, n = uint8(ah.NextHeader), ah.ActualLength
			default:
				s.Proto = next
				return refL4(frame, off, &s)
			}
			off += n
		}
	}
	return s, true
}

// refL4 decodes the transport header at off of frame into s.
func refL4(frame []byte, off int, s *packet.Summary) (packet.Summary, bool) {
	seg := frame[min(off, len(frame)):]
	switch s.Proto {
	case packet.ProtoUDP:
		// packet.Parse does not use the UDP length: a copy whose length is the
		// header's, which gopacket accepts.
		if len(seg) < 8 {
			return *s, false
		}
		h := append([]byte(nil), seg[:8]...)
		binary.BigEndian.PutUint16(h[4:], 8)
		var u layers.UDP
		if !decode(&u, h) {
			return *s, false
		}
		s.L4Off, s.SrcPort, s.DstPort = uint16(off), uint16(u.SrcPort), uint16(u.DstPort)
	case packet.ProtoTCP:
		// packet.Parse reads the fixed 20 bytes only: a copy whose data offset
		// says so, so that gopacket neither wants nor reads options.
		if len(seg) < 20 {
			return *s, false
		}
		h := append([]byte(nil), seg[:20]...)
		h[12] = 5<<4 | h[12]&0x0f
		var tcp layers.TCP
		if !decode(&tcp, h) {
			return *s, false
		}
		s.L4Off, s.SrcPort, s.DstPort = uint16(off), uint16(tcp.SrcPort), uint16(tcp.DstPort)
		for i, f := range []bool{tcp.FIN, tcp.SYN, tcp.RST, tcp.PSH, tcp.ACK, tcp.URG, tcp.ECE, tcp.CWR} {
			if f {
				s.TCPFlags |= 1 << i
			}
		}
	case packet.ProtoICMP:
		// gopacket wants the 8-byte echo layout; packet.Parse needs only type,
		// code and checksum.
		if len(seg) < 4 {
			return *s, false
		}
		h := make([]byte, 8)
		copy(h, seg[:4])
		var icmp layers.ICMPv4
		if !decode(&icmp, h) {
			return *s, false
		}
		s.L4Off, s.ICMPType, s.ICMPCode = uint16(off), icmp.TypeCode.Type(), icmp.TypeCode.Code()
	case packet.ProtoICMPv6:
		var icmp layers.ICMPv6
		if !decode(&icmp, seg) {
			return *s, false
		}
		s.L4Off, s.ICMPType, s.ICMPCode = uint16(off), icmp.TypeCode.Type(), icmp.TypeCode.Code()
	}
	return *s, true
}

// padOptions fills bytes 2..n of the extension header h (if h holds them)
// with PadN options. (gopacket refuses a Pad1 in the last byte of a frame,
// so no option here is a single byte.)
func padOptions(h []byte, n int) {
	if len(h) < n {
		return // incomplete: gopacket refuses it before the options
	}
	for p := 2; p < n; {
		size := min(n-p, 257)
		if n-p-size == 1 {
			size--
		}
		h[p], h[p+1] = 1, byte(size-2)
		clear(h[p+2 : p+size])
		p += size
	}
}

// decode decodes data into l with gopacket and reports whether it found
// the header complete and well-formed.
func decode(l interface {
	DecodeFromBytes([]byte, gopacket.DecodeFeedback) error
}, data []byte) bool {
	return l.DecodeFromBytes(data, gopacket.NilDecodeFeedback) == nil
}

// decodeFirst decodes data as a layer of type lt for the two that have no
// DecodeFromBytes (the IPv6 fragment header and AH): their decoders add the
// layer only when it is complete, so a nil result means gopacket refused
// it. Lazy decoding stops there, before the payload.
func decodeFirst(data []byte, lt gopacket.LayerType) gopacket.Layer {
	p := gopacket.NewPacket(data, lt, gopacket.DecodeOptions{Lazy: true, NoCopy: true})
	return p.Layer(lt)
}
