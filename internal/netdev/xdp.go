//go:build linux

package netdev

import (
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
)

// XDPAttached reports the XDP program attached to the interface with index
// ifindex in the current network namespace, as netlink sees it (this includes
// programs attached through bpf_link).
func XDPAttached(ifindex int) (XDPState, error) {
	link, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		return XDPState{}, fmt.Errorf("look up interface index %d: %w", ifindex, err)
	}
	x := link.Attrs().Xdp
	if x == nil || !x.Attached {
		return XDPState{}, nil
	}
	return XDPState{ProgID: x.ProgId, Mode: XDPModeName(x.AttachMode)}, nil
}

// XDPModeName names a netlink IFLA_XDP_ATTACHED value as xdpeng's flags and
// messages do: "native", "generic", "offload", "multi" ("" for none).
func XDPModeName(m uint32) string {
	switch m {
	case nl.XDP_ATTACHED_DRV:
		return "native"
	case nl.XDP_ATTACHED_SKB:
		return "generic"
	case nl.XDP_ATTACHED_HW:
		return "offload"
	case xdpAttachedMulti:
		return "multi"
	}
	return ""
}

// xdpAttachedMulti is XDP_ATTACHED_MULTI from linux/if_link.h, which the
// netlink package does not name.
const xdpAttachedMulti = 4
