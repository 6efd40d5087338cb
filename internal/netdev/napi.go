//go:build linux

package netdev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/vishvananda/netlink/nl"
)

// NAPI is one NAPI instance of a device, as the netdev generic netlink family
// reports it (Linux 6.9 and later).
type NAPI struct {
	ID      uint32
	IfIndex int
	IRQ     int // 0 when the NAPI has no interrupt (veth)
	PID     int // the "napi/DEV-ID" kthread in threaded mode, 0 otherwise
	// Threaded is the NAPI's threaded mode, where the kernel reports it
	// (ThreadedKnown: 6.18 does, 6.12 does not).
	Threaded      NAPIThreaded
	ThreadedKnown bool
}

// Values from include/uapi/linux/netdev.h; x/sys/unix does not carry them.
const (
	netdevCmdNAPIGet  = 11 // NETDEV_CMD_NAPI_GET
	netdevANAPIIfidx  = 1  // NETDEV_A_NAPI_IFINDEX
	netdevANAPIID     = 2  // NETDEV_A_NAPI_ID
	netdevANAPIIRQ    = 3  // NETDEV_A_NAPI_IRQ
	netdevANAPIPID    = 4  // NETDEV_A_NAPI_PID
	netdevFamilyName  = "netdev"
	netdevFamilyVers  = 1
	minNAPIGetVersion = "Linux 6.9"
)

// ErrNoNAPIInfo means the kernel cannot list NAPI instances over netlink.
var ErrNoNAPIInfo = errors.New("the kernel does not list NAPI instances (netdev netlink napi-get needs " + minNAPIGetVersion + ")")

// NAPIs lists the NAPI instances of the interface with index ifindex in the
// current network namespace, sorted by ID. veth has one per receive queue, but
// only while it is up and has GRO enabled or an XDP program attached.
func NAPIs(ifindex int) ([]NAPI, error) {
	msgs, err := netdevDump(netdevCmdNAPIGet, ErrNoNAPIInfo, nl.NewRtAttr(netdevANAPIIfidx, nl.Uint32Attr(uint32(ifindex))))
	if err != nil {
		if errors.Is(err, ErrNoNAPIInfo) {
			return nil, err
		}
		return nil, fmt.Errorf("list NAPI instances of interface index %d: %w", ifindex, err)
	}
	var out []NAPI
	for _, m := range msgs {
		n, _, err := parseNAPI(m)
		if err != nil {
			return nil, err
		}
		if n.IfIndex == ifindex {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out, nil
}

// parseNAPI reads a napi-get reply: the NAPI, and its settings where the
// kernel gave them (Linux 6.13; nil before).
func parseNAPI(msg []byte) (NAPI, *NAPIConfig, error) {
	attrs, err := genlAttrs(msg)
	if err != nil {
		return NAPI{}, nil, err
	}
	var n NAPI
	var c NAPIConfig
	settings := false
	for _, a := range attrs {
		if len(a.Value) < 4 {
			continue
		}
		v := binary.NativeEndian.Uint32(a.Value)
		switch a.Attr.Type & nl.NLA_TYPE_MASK {
		case netdevANAPIIfidx:
			n.IfIndex = int(v)
		case netdevANAPIID:
			n.ID = v
		case netdevANAPIIRQ:
			n.IRQ = int(v)
		case netdevANAPIPID:
			n.PID = int(v)
		case netdevANAPIThreaded:
			n.Threaded, n.ThreadedKnown = NAPIThreaded(v), true
		case netdevANAPIDeferHardIRQs:
			c.DeferHardIRQs, settings = v, true
		case netdevANAPIGROFlushTimeout:
			c.GROFlushTimeout, settings = time.Duration(nlaUint(a.Value)), true
		case netdevANAPIIRQSuspendTimeout:
			c.IRQSuspendTimeout, settings = time.Duration(nlaUint(a.Value)), true
		}
	}
	if !settings {
		return n, nil, nil
	}
	return n, &c, nil
}
