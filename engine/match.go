package engine

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Match chooses what the engine's steering program sends to the sockets;
// everything else goes to the kernel's stack, so that ARP, ICMP and routing
// protocols keep working beside a forwarder. A field's zero value matches
// anything; a frame must meet every field that is set. The zero Match
// sends every frame.
type Match struct {
	// EtherType of an untagged frame: 0x0800 IPv4, 0x86dd IPv6, 0x0806
	// ARP, 0x88f7 PTP.
	EtherType uint16
	// IPProto is the IPv4 protocol or the IPv6 next header (no extension
	// headers): 6 TCP, 17 UDP, 1 ICMP, 58 ICMPv6.
	IPProto uint8
	// DstPort is a UDP or TCP destination port. An IPv4 fragment after the
	// first never matches it (it has no transport header).
	DstPort uint16
	// Dst is a destination prefix, IPv4 or IPv6, without host bits; the
	// zero Prefix matches any destination.
	Dst netip.Prefix
}

// IsZero reports whether m sends every frame.
func (m Match) IsZero() bool { return m == Match{} }

// Validate refuses a Match no frame can meet, or that is not what it
// looks like: a port with a protocol other than UDP or TCP, IP rules with
// an EtherType that is not IPv4 or IPv6, a prefix of the other family than
// the EtherType, a prefix with host bits set or an IPv4-mapped one.
func (m Match) Validate() error {
	if m.Dst != (netip.Prefix{}) {
		switch {
		case !m.Dst.IsValid():
			return errors.New("Match.Dst is not a valid prefix")
		case m.Dst.Addr().Is4In6():
			return fmt.Errorf("Match.Dst %v is IPv4-mapped: give the IPv4 prefix", m.Dst)
		case m.Dst.Masked() != m.Dst:
			return fmt.Errorf("Match.Dst %v has host bits set: %v", m.Dst, m.Dst.Masked())
		}
	}
	if m.DstPort != 0 && m.IPProto != 0 && m.IPProto != ipProtoUDP && m.IPProto != ipProtoTCP {
		return fmt.Errorf("Match.DstPort %d with IPProto %d: ports are UDP's or TCP's", m.DstPort, m.IPProto)
	}
	ip := m.IPProto != 0 || m.DstPort != 0 || m.Dst.IsValid()
	if ip && m.EtherType != 0 && m.EtherType != etherIPv4 && m.EtherType != etherIPv6 {
		return fmt.Errorf("Match.EtherType %#04x with IP rules: no such frame is IP", m.EtherType)
	}
	if m.Dst.IsValid() && m.EtherType != 0 && (m.EtherType == etherIPv4) != m.Dst.Addr().Is4() {
		return fmt.Errorf("Match.EtherType %#04x with Match.Dst %v: another family", m.EtherType, m.Dst)
	}
	return nil
}

// String is m as xdpeng's --match takes it: "proto=udp,port=4789", or
// "all" for the zero Match.
func (m Match) String() string {
	var s []string
	if m.EtherType != 0 {
		s = append(s, "ether="+etherName(m.EtherType))
	}
	if m.IPProto != 0 {
		s = append(s, "proto="+protoName(m.IPProto))
	}
	if m.DstPort != 0 {
		s = append(s, fmt.Sprintf("port=%d", m.DstPort))
	}
	if m.Dst.IsValid() {
		s = append(s, "dst="+m.Dst.String())
	}
	if len(s) == 0 {
		return "all"
	}
	return strings.Join(s, ",")
}

const (
	etherIPv4  = 0x0800
	etherIPv6  = 0x86dd
	ipProtoTCP = 6
	ipProtoUDP = 17
)

var (
	etherNames = map[string]uint16{"ipv4": etherIPv4, "ipv6": etherIPv6, "arp": 0x0806, "vlan": 0x8100, "ptp": 0x88f7, "lldp": 0x88cc}
	protoNames = map[string]uint8{"icmp": 1, "tcp": ipProtoTCP, "udp": ipProtoUDP, "gre": 47, "esp": 50, "icmpv6": 58, "ospf": 89, "sctp": 132}
)

func etherName(t uint16) string {
	for n, v := range etherNames {
		if v == t {
			return n
		}
	}
	return fmt.Sprintf("%#04x", t)
}

func protoName(p uint8) string {
	for n, v := range protoNames {
		if v == p {
			return n
		}
	}
	return fmt.Sprint(p)
}

// ParseMatch reads a Match as String writes it: comma-separated terms
// ether=NAME|0xNNNN (ipv4, ipv6, arp, vlan, ptp, lldp), proto=NAME|N
// (icmp, tcp, udp, gre, esp, icmpv6, ospf, sctp), port=N and dst=PREFIX;
// "all" or "" is the zero Match. It validates the result.
func ParseMatch(s string) (Match, error) {
	var m Match
	if s == "" || s == "all" {
		return m, nil
	}
	seen := map[string]bool{}
	for _, term := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(term), "=")
		if !ok || v == "" {
			return m, fmt.Errorf("%q: a term is KEY=VALUE, KEY one of ether, proto, port, dst", term)
		}
		if seen[k] {
			return m, fmt.Errorf("%q: %s given twice", term, k)
		}
		seen[k] = true
		switch k {
		case "ether":
			if n, ok := etherNames[strings.ToLower(v)]; ok {
				m.EtherType = n
			} else if n, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(v), "0x"), 16, 16); err == nil && strings.HasPrefix(strings.ToLower(v), "0x") && n >= 0x0600 {
				m.EtherType = uint16(n)
			} else {
				return m, fmt.Errorf("%q: an EtherType is ipv4, ipv6, arp, vlan, ptp, lldp or 0x0600 to 0xffff", term)
			}
		case "proto":
			if n, ok := protoNames[strings.ToLower(v)]; ok {
				m.IPProto = n
			} else if n, err := strconv.ParseUint(v, 10, 8); err == nil && n > 0 {
				m.IPProto = uint8(n)
			} else {
				return m, fmt.Errorf("%q: a protocol is icmp, tcp, udp, gre, esp, icmpv6, ospf, sctp or 1 to 255", term)
			}
		case "port":
			n, err := strconv.ParseUint(v, 10, 16)
			if err != nil || n == 0 {
				return m, fmt.Errorf("%q: a port is 1 to 65535", term)
			}
			m.DstPort = uint16(n)
		case "dst":
			p, err := netip.ParsePrefix(v)
			if err != nil {
				a, aerr := netip.ParseAddr(v)
				if aerr != nil {
					return m, fmt.Errorf("%q: a destination is a prefix (198.18.0.0/15) or an address", term)
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
			m.Dst = p
		default:
			return m, fmt.Errorf("%q: KEY is one of ether, proto, port, dst", term)
		}
	}
	return m, m.Validate()
}
