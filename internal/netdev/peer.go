//go:build linux

package netdev

import (
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Peer is the other end of a veth pair, read from the namespace of the end
// asked about, wherever the peer is.
type Peer struct {
	// Name and Index are the peer's in its own namespace.
	Name  string
	Index int
	// XDPProgID is the XDP program attached to the peer (0: none). A
	// veth's XDP_TX frames and the frames redirected into it wait on the
	// peer's receive ring until the peer's NAPI takes them, and it is
	// woken for them only while the peer has a program (veth_xdp_flush in
	// drivers/net/veth.c): with GRO alone the ring fills and stays full.
	XDPProgID uint32
}

// VethPeer returns the peer of the veth called name in this namespace.
func VethPeer(name string) (Peer, error) {
	link, err := netlink.LinkByName(name)
	if err != nil {
		if _, ok := err.(netlink.LinkNotFoundError); ok {
			return Peer{}, &NoInterfaceError{Name: name}
		}
		return Peer{}, fmt.Errorf("interface %s: %w", name, err)
	}
	if link.Type() != "veth" {
		return Peer{}, fmt.Errorf("%s is a %s, not a veth", name, link.Type())
	}
	peer, err := vethPeerLink(link)
	if err != nil {
		return Peer{}, err
	}
	p := Peer{Name: peer.Attrs().Name, Index: peer.Attrs().Index}
	if x := peer.Attrs().Xdp; x != nil && x.Attached {
		p.XDPProgID = x.ProgId
	}
	return p, nil
}

// vethPeerLink reads a veth's peer. Netlink gives the peer's ifindex
// (IFLA_LINK) and, when the peer is in another namespace, that namespace's
// id as seen from ours (IFLA_LINK_NETNSID); RTM_GETLINK with
// IFLA_TARGET_NETNSID then reads the peer without entering its namespace.
func vethPeerLink(link netlink.Link) (netlink.Link, error) {
	attrs := link.Attrs()
	if attrs.ParentIndex <= 0 {
		return nil, fmt.Errorf("veth %s: peer index unknown", attrs.Name)
	}
	var peer netlink.Link
	var err error
	if attrs.NetNsID < 0 {
		peer, err = netlink.LinkByIndex(attrs.ParentIndex)
	} else {
		req := nl.NewNetlinkRequest(unix.RTM_GETLINK, unix.NLM_F_ACK)
		msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
		msg.Index = int32(attrs.ParentIndex)
		req.AddData(msg)
		req.AddData(nl.NewRtAttr(unix.IFLA_TARGET_NETNSID, nl.Uint32Attr(uint32(attrs.NetNsID))))
		var msgs [][]byte
		msgs, err = req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWLINK)
		if err == nil && len(msgs) != 1 {
			err = fmt.Errorf("%d answers", len(msgs))
		}
		if err == nil {
			peer, err = netlink.LinkDeserialize(nil, msgs[0])
		}
	}
	if err != nil {
		return nil, fmt.Errorf("veth %s: read peer %d: %w", attrs.Name, attrs.ParentIndex, err)
	}
	return peer, nil
}
