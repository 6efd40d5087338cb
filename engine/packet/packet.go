// Package packet builds and parses Ethernet frames by hand: Ethernet with up to
// two VLAN tags, IPv4 and IPv6, UDP, TCP, ICMP and ICMPv6.
//
// It is written for the data path. Builders write into a buffer the caller
// owns (a UMEM frame, a generator template) and return the length; Parse fills
// a caller's Summary. Neither allocates, and Parse never reads past the frame
// nor panics, whatever bytes it is given: frames come from the wire.
//
// Sizes are frame lengths without the 4-byte FCS, the bytes a buffer holds
// and the kernel counts. The usual "64-byte" test frame (RFC 2544, xdpsock's
// and xdp-trafficgen's -s 64, xdpeng's --size 64) counts the FCS that the
// NIC adds on the wire: it is Size 60 here.
package packet

// EtherTypes the builders and the parser know.
const (
	EtherTypeIPv4 = 0x0800
	EtherTypeIPv6 = 0x86dd
	EtherTypeVLAN = 0x8100 // 802.1Q customer tag
	EtherTypeQinQ = 0x88a8 // 802.1ad service tag
)

// IP protocol numbers (IPv4 protocol, IPv6 next header) the builders and
// the parser know: Summary.Proto.
const (
	ProtoUDP    = 17
	ProtoTCP    = 6
	ProtoICMP   = 1
	ProtoICMPv6 = 58
)

// Header lengths, as the builders write the headers and the parser reads
// them.
const (
	EthHdrLen  = 14
	VLANTagLen = 4
	IPv4HdrLen = 20 // without options
	IPv6HdrLen = 40
	UDPHdrLen  = 8
	TCPHdrLen  = 20 // without options
	ICMPHdrLen = 8  // echo request/reply: type, code, checksum, id, sequence
)

// Frame sizes, without FCS.
const (
	// MinFrameSize is the smallest Ethernet frame without FCS (64 with it).
	MinFrameSize = 60
	// MaxFrameSize is the largest untagged frame for a 1500-byte MTU without
	// FCS; a VLAN tag adds VLANTagLen to it.
	MaxFrameSize = 1514
	// MaxJumboFrameSize is the largest untagged frame the builders make: an
	// Ethernet header and the most an IPv4 packet's total length can say.
	// Which of these a device carries is its MTU's business.
	MaxJumboFrameSize = EthHdrLen + 65535
)

// TCP flags for BuildTCP.
const (
	TCPFin = 0x01
	TCPSyn = 0x02
	TCPRst = 0x04
	TCPPsh = 0x08
	TCPAck = 0x10
)
