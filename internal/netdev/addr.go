//go:build linux

package netdev

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
)

// AddrIn returns the first address of the interface ifindex that lies in
// prefix (IPv4 or IPv6, as prefix is); ok is false when it has none.
func AddrIn(ifindex int, prefix netip.Prefix) (addr netip.Addr, ok bool, err error) {
	link, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		return netip.Addr{}, false, fmt.Errorf("interface index %d: %w", ifindex, err)
	}
	family := netlink.FAMILY_V4
	if prefix.Addr().Is6() {
		family = netlink.FAMILY_V6
	}
	addrs, err := netlink.AddrList(link, family)
	if err != nil {
		return netip.Addr{}, false, fmt.Errorf("list addresses of %s: %w", link.Attrs().Name, err)
	}
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if ok && prefix.Contains(ip.Unmap()) {
			return ip.Unmap(), true, nil
		}
	}
	return netip.Addr{}, false, nil
}

// DstMAC finds the MAC address frames sent out of ifindex to dst should
// carry: on a veth, its peer's address (the peer may live in another network
// namespace); otherwise the neighbour table's entry for dst. how says which
// of the two it used.
func DstMAC(ifindex int, dst netip.Addr) (mac net.HardwareAddr, how string, err error) {
	link, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		return nil, "", fmt.Errorf("interface index %d: %w", ifindex, err)
	}
	if _, isVeth := link.(*netlink.Veth); isVeth {
		if mac, err := vethPeerMAC(link); err == nil {
			return mac, "veth peer", nil
		}
	}
	family := netlink.FAMILY_V4
	if dst.Is6() && !dst.Is4In6() {
		family = netlink.FAMILY_V6
	}
	neighs, err := netlink.NeighList(ifindex, family)
	if err != nil {
		return nil, "", fmt.Errorf("list neighbours of %s: %w", link.Attrs().Name, err)
	}
	for _, n := range neighs {
		ip, ok := netip.AddrFromSlice(n.IP)
		usable := n.State&(netlink.NUD_INCOMPLETE|netlink.NUD_FAILED) == 0
		if ok && ip.Unmap() == dst.Unmap() && len(n.HardwareAddr) == 6 && usable {
			return n.HardwareAddr, "neighbour entry", nil
		}
	}
	return nil, "", fmt.Errorf("%s is not a veth and has no neighbour entry for %s: %w", link.Attrs().Name, dst, ErrNoDstMAC)
}

// vethPeerMAC returns the address of a veth's peer.
func vethPeerMAC(link netlink.Link) (net.HardwareAddr, error) {
	peer, err := vethPeerLink(link)
	if err != nil {
		return nil, err
	}
	if mac := peer.Attrs().HardwareAddr; len(mac) == 6 {
		return mac, nil
	}
	return nil, fmt.Errorf("veth %s: peer has no Ethernet address", link.Attrs().Name)
}
