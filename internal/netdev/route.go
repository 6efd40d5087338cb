//go:build linux

package netdev

import (
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// CarriesDefaultRoute reports whether a default route (IPv4 or IPv6, any
// routing table) of the calling thread's network namespace leaves through
// the interface with index ifindex, directly or as one of its next hops:
// the interface this host most likely reaches the world, and its users,
// through.
func CarriesDefaultRoute(ifindex int) (bool, error) {
	routes, err := netlink.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return false, fmt.Errorf("list routes: %w", err)
	}
	for _, r := range routes {
		if !isDefault(r) {
			continue
		}
		if r.LinkIndex == ifindex {
			return true, nil
		}
		for _, hop := range r.MultiPath {
			if hop.LinkIndex == ifindex {
				return true, nil
			}
		}
	}
	return false, nil
}

func isDefault(r netlink.Route) bool {
	if r.Dst == nil {
		return true
	}
	ones, _ := r.Dst.Mask.Size()
	return ones == 0
}
