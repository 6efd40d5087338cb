package packet

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
)

// UDPConfig describes a frame to build: Ethernet, an optional 802.1Q tag,
// IPv4 or IPv6 (by the family of the addresses), UDP and a payload filled
// with Fill. BuildTCP and BuildICMPEcho take the same description; ICMP
// ignores the ports.
type UDPConfig struct {
	SrcMAC, DstMAC   net.HardwareAddr
	SrcIP, DstIP     netip.Addr // both IPv4 or both IPv6
	SrcPort, DstPort uint16
	VLAN             uint16 // 802.1Q VLAN ID 1..4094; 0 = untagged
	// VLANPriority is the tag's 802.1p priority (PCP), 0..7; only with a
	// VLAN.
	VLANPriority uint8
	// Size is the frame length without FCS, MinFrameSize..MaxJumboFrameSize
	// (+VLANTagLen when tagged), and at least the headers' length.
	Size int
	Fill byte // every payload byte, where Pattern is 0
	// Pattern, if not zero, fills the payload instead of Fill: its four
	// bytes, most significant first, repeated (xdpsock's -P).
	Pattern uint32
}

// IPv6 reports whether the frame is IPv6 (else IPv4).
func (c *UDPConfig) IPv6() bool { return c.SrcIP.Is6() && !c.SrcIP.Is4In6() }

// L4Offset is where the transport header starts in the frame.
func (c *UDPConfig) L4Offset() int {
	off := EthHdrLen + IPv4HdrLen
	if c.IPv6() {
		off = EthHdrLen + IPv6HdrLen
	}
	if c.VLAN != 0 {
		off += VLANTagLen
	}
	return off
}

// MaxSize is the largest valid Size for c: MaxJumboFrameSize, plus a VLAN
// tag.
func (c *UDPConfig) MaxSize() int {
	if c.VLAN != 0 {
		return MaxJumboFrameSize + VLANTagLen
	}
	return MaxJumboFrameSize
}

// FieldError reports an invalid UDPConfig field. Msg names the field and
// its valid range; Field is the bare name ("Size"), for callers that want to
// name their own option instead.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Msg }

// validate checks every field and names the bad one with its valid range.
// l4len is the transport header length the frame must also hold.
func (c *UDPConfig) validate(l4len int) error {
	if len(c.SrcMAC) != 6 {
		return &FieldError{Field: "SrcMAC", Msg: fmt.Sprintf("SrcMAC %q: need a 6-byte Ethernet address like 02:00:00:00:00:01", c.SrcMAC)}
	}
	if len(c.DstMAC) != 6 {
		return &FieldError{Field: "DstMAC", Msg: fmt.Sprintf("DstMAC %q: need a 6-byte Ethernet address like 02:00:00:00:00:02", c.DstMAC)}
	}
	if !c.SrcIP.IsValid() {
		return &FieldError{Field: "SrcIP", Msg: "SrcIP is not set: need an IPv4 or IPv6 address"}
	}
	if !c.DstIP.IsValid() {
		return &FieldError{Field: "DstIP", Msg: "DstIP is not set: need an IPv4 or IPv6 address"}
	}
	if c.SrcIP.Unmap().Is4() != c.DstIP.Unmap().Is4() {
		return &FieldError{Field: "SrcIP", Msg: fmt.Sprintf("SrcIP %s and DstIP %s: both must be IPv4 or both IPv6", c.SrcIP, c.DstIP)}
	}
	if c.VLAN > 4094 {
		return &FieldError{Field: "VLAN", Msg: fmt.Sprintf("VLAN %d out of range: 1..4094, or 0 for untagged", c.VLAN)}
	}
	if c.VLANPriority > 7 {
		return &FieldError{Field: "VLANPriority", Msg: fmt.Sprintf("VLAN priority %d out of range: 0..7", c.VLANPriority)}
	}
	if c.VLANPriority != 0 && c.VLAN == 0 {
		return &FieldError{Field: "VLANPriority", Msg: fmt.Sprintf("VLAN priority %d without a VLAN: an untagged frame has no priority field", c.VLANPriority)}
	}
	lo := max(MinFrameSize, c.L4Offset()+l4len)
	if c.Size < lo || c.Size > c.MaxSize() {
		return &FieldError{Field: "Size", Msg: fmt.Sprintf("Size %d out of range: frame size without FCS must be %d..%d for this frame", c.Size, lo, c.MaxSize())}
	}
	return nil
}

// ValidateUDP checks c for BuildUDP; BuildUDP makes the same checks.
func (c *UDPConfig) ValidateUDP() error { return c.validate(UDPHdrLen) }

// BuildUDP writes the frame described by c at the start of buf and returns
// its length, c.Size. The IPv4 header checksum and the UDP checksum (IPv4 and
// IPv6) are set. buf must hold c.Size bytes.
func BuildUDP(buf []byte, c UDPConfig) (int, error) {
	l4, err := buildL3(buf, &c, ProtoUDP, UDPHdrLen)
	if err != nil {
		return 0, err
	}
	seg := buf[l4:c.Size]
	binary.BigEndian.PutUint16(seg[0:], c.SrcPort)
	binary.BigEndian.PutUint16(seg[2:], c.DstPort)
	binary.BigEndian.PutUint16(seg[4:], uint16(len(seg)))
	binary.BigEndian.PutUint16(seg[6:], 0)
	c.fill(seg[UDPHdrLen:])
	sum := l4Checksum(buf, &c, ProtoUDP, seg)
	if sum == 0 {
		// A computed zero is sent as all ones: zero means "no checksum"
		// over IPv4 and is invalid over IPv6 (RFC 768, RFC 8200 8.1).
		sum = 0xffff
	}
	binary.BigEndian.PutUint16(seg[6:], sum)
	return c.Size, nil
}

// BuildTCP writes a TCP segment without options (sequence number 1, window
// 65535) with the given flags, framed as c describes, and returns its length.
func BuildTCP(buf []byte, c UDPConfig, flags uint8) (int, error) {
	l4, err := buildL3(buf, &c, ProtoTCP, TCPHdrLen)
	if err != nil {
		return 0, err
	}
	seg := buf[l4:c.Size]
	binary.BigEndian.PutUint16(seg[0:], c.SrcPort)
	binary.BigEndian.PutUint16(seg[2:], c.DstPort)
	binary.BigEndian.PutUint32(seg[4:], 1) // sequence
	binary.BigEndian.PutUint32(seg[8:], 0) // acknowledgement
	seg[12] = (TCPHdrLen / 4) << 4         // data offset
	seg[13] = flags
	binary.BigEndian.PutUint16(seg[14:], 65535) // window
	binary.BigEndian.PutUint32(seg[16:], 0)     // checksum, urgent pointer
	c.fill(seg[TCPHdrLen:])
	binary.BigEndian.PutUint16(seg[16:], l4Checksum(buf, &c, ProtoTCP, seg))
	return c.Size, nil
}

// BuildICMPEcho writes an ICMP (IPv4) or ICMPv6 echo request with the given
// identifier and sequence number, framed as c describes (ports ignored), and
// returns its length.
func BuildICMPEcho(buf []byte, c UDPConfig, id, seq uint16) (int, error) {
	proto := uint8(ProtoICMP)
	typ := byte(8) // echo request
	if c.IPv6() {
		proto, typ = ProtoICMPv6, 128
	}
	l4, err := buildL3(buf, &c, proto, ICMPHdrLen)
	if err != nil {
		return 0, err
	}
	seg := buf[l4:c.Size]
	seg[0], seg[1] = typ, 0
	binary.BigEndian.PutUint16(seg[2:], 0)
	binary.BigEndian.PutUint16(seg[4:], id)
	binary.BigEndian.PutUint16(seg[6:], seq)
	c.fill(seg[ICMPHdrLen:])
	var sum uint16
	if proto == ProtoICMPv6 {
		sum = l4Checksum(buf, &c, proto, seg) // ICMPv6 covers a pseudo-header
	} else {
		sum = Checksum(seg)
	}
	binary.BigEndian.PutUint16(seg[2:], sum)
	return c.Size, nil
}

// buildL3 validates c, writes the Ethernet, VLAN and IP headers into buf and
// returns the offset of the transport header.
func buildL3(buf []byte, c *UDPConfig, proto uint8, l4len int) (int, error) {
	if err := c.validate(l4len); err != nil {
		return 0, fmt.Errorf("build frame: %w", err)
	}
	if len(buf) < c.Size {
		return 0, fmt.Errorf("build frame: buffer of %d bytes is too small for Size %d", len(buf), c.Size)
	}
	copy(buf[0:6], c.DstMAC)
	copy(buf[6:12], c.SrcMAC)
	off := 12
	if c.VLAN != 0 {
		binary.BigEndian.PutUint16(buf[off:], EtherTypeVLAN)
		binary.BigEndian.PutUint16(buf[off+2:], uint16(c.VLANPriority)<<13|c.VLAN) // DEI 0
		off += VLANTagLen
	}
	l3len := c.Size - off - 2
	if c.IPv6() {
		binary.BigEndian.PutUint16(buf[off:], EtherTypeIPv6)
		ip := buf[off+2 : off+2+IPv6HdrLen]
		binary.BigEndian.PutUint32(ip[0:], 6<<28) // version, class 0, flow 0
		binary.BigEndian.PutUint16(ip[4:], uint16(l3len-IPv6HdrLen))
		ip[6] = proto
		ip[7] = 64 // hop limit
		src, dst := c.SrcIP.As16(), c.DstIP.As16()
		copy(ip[8:24], src[:])
		copy(ip[24:40], dst[:])
		return off + 2 + IPv6HdrLen, nil
	}
	binary.BigEndian.PutUint16(buf[off:], EtherTypeIPv4)
	ip := buf[off+2 : off+2+IPv4HdrLen]
	ip[0] = 0x45 // version 4, IHL 5
	ip[1] = 0
	binary.BigEndian.PutUint16(ip[2:], uint16(l3len))
	binary.BigEndian.PutUint16(ip[4:], 0)      // identification
	binary.BigEndian.PutUint16(ip[6:], 0x4000) // don't fragment
	ip[8] = 64                                 // TTL
	ip[9] = proto
	binary.BigEndian.PutUint16(ip[10:], 0)
	src, dst := c.SrcIP.Unmap().As4(), c.DstIP.Unmap().As4()
	copy(ip[12:16], src[:])
	copy(ip[16:20], dst[:])
	binary.BigEndian.PutUint16(ip[10:], Checksum(ip))
	return off + 2 + IPv4HdrLen, nil
}

// l4Checksum is the checksum of a transport segment whose checksum field is
// zero, over the pseudo-header of c's addresses.
func l4Checksum(buf []byte, c *UDPConfig, proto uint8, seg []byte) uint16 {
	var acc uint64
	if c.IPv6() {
		src, dst := c.SrcIP.As16(), c.DstIP.As16()
		acc = pseudoSum(src[:], dst[:], proto, len(seg))
	} else {
		src, dst := c.SrcIP.Unmap().As4(), c.DstIP.Unmap().As4()
		acc = pseudoSum(src[:], dst[:], proto, len(seg))
	}
	return Fold(Sum(acc, seg))
}

// fill writes the payload: Pattern repeated, or Fill.
func (c *UDPConfig) fill(b []byte) {
	if c.Pattern == 0 {
		for i := range b {
			b[i] = c.Fill
		}
		return
	}
	var p [4]byte
	binary.BigEndian.PutUint32(p[:], c.Pattern)
	for i := range b {
		b[i] = p[i&3]
	}
}

// UDPVariants builds ports UDP frames from c, the i-th with destination
// port c.DstPort+i: the variants a generator cycles through to spread
// traffic over RSS queues or flows.
func UDPVariants(c UDPConfig, ports int) ([][]byte, error) {
	if ports < 1 || ports > 65536 {
		return nil, fmt.Errorf("%d ports: need 1..65536", ports)
	}
	frames := make([][]byte, ports)
	for i := range frames {
		v := c
		v.DstPort = c.DstPort + uint16(i)
		frames[i] = make([]byte, c.Size)
		if _, err := BuildUDP(frames[i], v); err != nil {
			return nil, err
		}
	}
	return frames, nil
}
