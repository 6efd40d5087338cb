package hook

import (
	"fmt"
	"io"

	"github.com/cilium/ebpf"

	"github.com/xdpeng/xdpeng/internal/netdev"
)

// Point is where on a device a program runs.
type Point int

const (
	// XDP runs the program in the driver (native mode), before an skb
	// exists: frames that arrive through the driver or ndo_xdp_xmit.
	XDP Point = iota
	// XDPGeneric runs the program on the skb (generic mode), after the
	// driver: every interface has it, and it is slower.
	XDPGeneric
	// TC runs the program at tc ingress, attached with TCX (netlink clsact
	// before Linux 6.6), after the programs already there: frames that
	// arrive as skbs.
	TC
)

// String returns "xdp", "xdp-generic" or "tc".
func (p Point) String() string {
	switch p {
	case XDP:
		return "xdp"
	case XDPGeneric:
		return "xdp-generic"
	case TC:
		return "tc"
	}
	return fmt.Sprintf("Point(%d)", int(p))
}

// XDPMode names the XDP attach mode of p: "native" or "generic", "" for TC.
func (p Point) XDPMode() string {
	switch p {
	case XDP:
		return Native.String()
	case XDPGeneric:
		return Generic.String()
	}
	return ""
}

// ParsePoint accepts the names String returns.
func ParsePoint(s string) (Point, error) {
	for _, p := range []Point{XDP, XDPGeneric, TC} {
		if s == p.String() {
			return p, nil
		}
	}
	return 0, fmt.Errorf("unknown hook %q (want xdp, xdp-generic or tc)", s)
}

// Attach attaches prog at p of the interface ifindex and returns what
// detaches it: AttachXDP in native or generic mode (replace as there), or
// AttachTCIngress.
func Attach(prog *ebpf.Program, ifindex int, p Point, replace netdev.Replace) (io.Closer, error) {
	switch p {
	case XDP:
		return AttachXDP(prog, ifindex, Native, replace)
	case XDPGeneric:
		return AttachXDP(prog, ifindex, Generic, replace)
	case TC:
		return AttachTCIngress(prog, ifindex)
	}
	return nil, fmt.Errorf("attach: unknown hook %v", p)
}
