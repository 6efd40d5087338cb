package gen

import (
	"fmt"
	"net/netip"

	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// The addresses of generated frames: the one place that says where test
// traffic may go (the ranges reserved for benchmarking) and what a
// generator sends to when it is not told, for gen and for txonly alike.

// BenchmarkPrefix is 198.18.0.0/15, the range RFC 2544 reserves for
// benchmarking network devices: traffic to it cannot reach anyone's service.
func BenchmarkPrefix() netip.Prefix { return netip.MustParsePrefix("198.18.0.0/15") }

// BenchmarkPrefix6 is 2001:2::/48, the IPv6 range RFC 5180 reserves for
// benchmarking.
func BenchmarkPrefix6() netip.Prefix { return netip.MustParsePrefix("2001:2::/48") }

// RangeError reports a destination outside the ranges reserved for
// benchmarking.
type RangeError struct {
	Addr netip.Addr
	// IPv6 says that BenchmarkPrefix6 was allowed besides BenchmarkPrefix.
	IPv6 bool
}

func (e *RangeError) Error() string {
	if e.IPv6 {
		return fmt.Sprintf("%s is outside %s (IPv6: %s), the ranges reserved for benchmarking (RFC 2544, RFC 5180)",
			e.Addr, BenchmarkPrefix(), BenchmarkPrefix6())
	}
	return fmt.Sprintf("%s is outside %s, the range reserved for benchmarking (RFC 2544)", e.Addr, BenchmarkPrefix())
}

// CheckDst returns a *RangeError unless dst lies in BenchmarkPrefix or, when
// ipv6 is set, in BenchmarkPrefix6.
func CheckDst(dst netip.Addr, ipv6 bool) error {
	dst = dst.Unmap()
	if BenchmarkPrefix().Contains(dst) || ipv6 && BenchmarkPrefix6().Contains(dst) {
		return nil
	}
	return &RangeError{Addr: dst, IPv6: ipv6}
}

// PeerIP is the default destination for frames from src: the other host of
// a test-bed link (198.18.K.1 <-> 198.18.K.2), else 198.18.0.2.
func PeerIP(src netip.Addr) netip.Addr {
	if src.Is4() && BenchmarkPrefix().Contains(src) {
		b := src.As4()
		switch b[3] {
		case 1:
			b[3] = 2
			return netip.AddrFrom4(b)
		case 2:
			b[3] = 1
			return netip.AddrFrom4(b)
		}
	}
	return netip.MustParseAddr("198.18.0.2")
}

// Default source addresses, when the device has none in BenchmarkPrefix.
var (
	defaultSrcIP  = netip.MustParseAddr("198.18.0.1")
	defaultSrcIP6 = netip.MustParseAddr("2001:2::1")
)

// ResolveAddrs completes the addresses of frames sent out of the interface
// called ifname, in the calling thread's network namespace, and returns the
// frame and the interface's facts. What frame already has is kept; the rest
// is:
//   - SrcMAC: the interface's address;
//   - SrcIP: 2001:2::1 if DstIP is IPv6, else the interface's first address
//     in BenchmarkPrefix, else 198.18.0.1;
//   - DstIP: PeerIP(SrcIP);
//   - DstMAC: netdev.DstMAC (the veth peer's, else the neighbour entry of
//     DstIP).
//
// It does not check that a DstIP given is in range (CheckDst does). A missing
// interface is a *netdev.NoInterfaceError; no destination MAC to be found is
// netdev.ErrNoDstMAC.
func ResolveAddrs(ifname string, frame packet.UDPConfig) (packet.UDPConfig, *netdev.Info, error) {
	info, err := netdev.Lookup(ifname)
	if err != nil {
		return frame, nil, err
	}
	if frame.SrcMAC == nil {
		frame.SrcMAC = info.MAC
	}
	if !frame.SrcIP.IsValid() {
		frame.SrcIP = defaultSrcIP
		if frame.DstIP.Is6() {
			frame.SrcIP = defaultSrcIP6
		} else if ip, ok, err := netdev.AddrIn(info.Index, BenchmarkPrefix()); err != nil {
			return frame, nil, err
		} else if ok {
			frame.SrcIP = ip
		}
	}
	if !frame.DstIP.IsValid() {
		frame.DstIP = PeerIP(frame.SrcIP)
	}
	if frame.DstMAC == nil {
		mac, _, err := netdev.DstMAC(info.Index, frame.DstIP)
		if err != nil {
			return frame, nil, err
		}
		frame.DstMAC = mac
	}
	return frame, info, nil
}
