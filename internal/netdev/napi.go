//go:build linux

package netdev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// NAPI is one NAPI instance of a device, as the netdev generic netlink family
// reports it (Linux 6.9 and later).
type NAPI struct {
	ID      uint32
	IfIndex int
	IRQ     int // 0 when the NAPI has no interrupt (veth)
	PID     int // the "napi/DEV-ID" kthread in threaded mode, 0 otherwise
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
	fam, err := netlink.GenlFamilyGet(netdevFamilyName)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoNAPIInfo, err)
	}
	msgs, err := genlDump(fam.ID, netdevCmdNAPIGet, netdevFamilyVers,
		nl.NewRtAttr(netdevANAPIIfidx, nl.Uint32Attr(uint32(ifindex))).Serialize())
	if err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			return nil, fmt.Errorf("%w: %w", ErrNoNAPIInfo, err)
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

// genlDump sends one generic netlink dump request and returns the payloads
// (generic netlink header included) of all the replies. It reads until
// NLMSG_DONE itself: netlink.NetlinkRequest.Execute can return only the
// first reply of a netdev family dump.
func genlDump(family uint16, cmd, version uint8, attrs []byte) ([][]byte, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_GENERIC)
	if err != nil {
		return nil, fmt.Errorf("open generic netlink socket: %w", err)
	}
	defer unix.Close(fd)
	tv := unix.NsecToTimeval(int64(5 * time.Second))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return nil, fmt.Errorf("set netlink receive timeout: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("bind generic netlink socket: %w", err)
	}

	const seq = 1
	req := make([]byte, unix.NLMSG_HDRLEN+nl.SizeofGenlmsg, unix.NLMSG_HDRLEN+nl.SizeofGenlmsg+len(attrs))
	req = append(req, attrs...)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], family)
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	binary.NativeEndian.PutUint32(req[8:], seq)
	req[unix.NLMSG_HDRLEN] = cmd
	req[unix.NLMSG_HDRLEN+1] = version
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("send generic netlink request: %w", err)
	}

	var out [][]byte
	buf := make([]byte, 64<<10)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return nil, fmt.Errorf("receive generic netlink reply: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return nil, fmt.Errorf("parse generic netlink reply: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Seq != seq {
				continue
			}
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return out, nil
			case unix.NLMSG_ERROR:
				if len(m.Data) < 4 {
					return nil, errors.New("short netlink error message")
				}
				if e := int32(binary.NativeEndian.Uint32(m.Data)); e != 0 {
					return nil, unix.Errno(-e)
				}
				return out, nil
			}
			out = append(out, slices.Clone(m.Data))
		}
	}
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
