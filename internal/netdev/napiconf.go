//go:build linux

package netdev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Values from include/uapi/linux/netdev.h.
const (
	netdevCmdQueueGet            = 10 // NETDEV_CMD_QUEUE_GET
	netdevCmdNAPISet             = 14 // NETDEV_CMD_NAPI_SET
	netdevANAPIDeferHardIRQs     = 5  // NETDEV_A_NAPI_DEFER_HARD_IRQS, u32
	netdevANAPIGROFlushTimeout   = 6  // NETDEV_A_NAPI_GRO_FLUSH_TIMEOUT, uint (ns)
	netdevANAPIIRQSuspendTimeout = 7  // NETDEV_A_NAPI_IRQ_SUSPEND_TIMEOUT, uint (ns)
	netdevANAPIThreaded          = 8  // NETDEV_A_NAPI_THREADED, u32
	netdevAQueueID               = 1  // NETDEV_A_QUEUE_ID
	netdevAQueueIfindex          = 2  // NETDEV_A_QUEUE_IFINDEX
	netdevAQueueType             = 3  // NETDEV_A_QUEUE_TYPE
	netdevAQueueNAPIID           = 4  // NETDEV_A_QUEUE_NAPI_ID
	netdevAQueueXSK              = 7  // NETDEV_A_QUEUE_XSK, a nest (Linux 6.14)
	netdevQueueTypeRx            = 0  // NETDEV_QUEUE_TYPE_RX
)

// ErrNoQueueInfo means the kernel cannot say which NAPI serves a queue
// (netdev netlink queue-get needs Linux 6.8).
var ErrNoQueueInfo = errors.New("the kernel does not report queues (netdev netlink queue-get needs Linux 6.8)")

// ErrNoNAPIConfig means the kernel has no settings of a NAPI's own: the
// device-wide ones in sysfs are all there is (netdev netlink napi-set
// needs Linux 6.13).
var ErrNoNAPIConfig = errors.New("the kernel has no per-NAPI settings (netdev netlink napi-set needs Linux 6.13)")

// RxQueue is what the kernel says of one receive queue.
type RxQueue struct {
	Queue int
	// NAPIID is the NAPI instance that serves the queue; 0 when none
	// does (a device that is down, or veth without GRO or XDP).
	NAPIID uint32
	// XSK reports an AF_XDP socket bound to the queue (Linux 6.14 and
	// later say so; before, it is always false).
	XSK bool
}

// NAPIConfig are the settings a NAPI instance has of its own (Linux
// 6.13): how it defers its interrupt in favour of busy polling
// (Documentation/networking/napi.rst).
type NAPIConfig struct {
	// DeferHardIRQs is how many polls in a row that find nothing it
	// takes before the interrupt is unmasked again.
	DeferHardIRQs uint32
	// GROFlushTimeout is the timer that polls while the interrupt is
	// deferred.
	GROFlushTimeout time.Duration
	// IRQSuspendTimeout is how long an application's busy polling
	// (through epoll) keeps the interrupt suspended.
	IRQSuspendTimeout time.Duration
}

// String writes c as the kernel's attribute names do.
func (c NAPIConfig) String() string {
	return fmt.Sprintf("defer-hard-irqs %d, gro-flush-timeout %v, irq-suspend-timeout %v", c.DeferHardIRQs, c.GROFlushTimeout, c.IRQSuspendTimeout)
}

// RxQueueInfo asks the kernel about receive queue queue of the interface
// with index ifindex, in the current network namespace.
func RxQueueInfo(ifindex, queue int) (RxQueue, error) {
	msgs, err := netdevDo(netdevCmdQueueGet, ErrNoQueueInfo,
		nl.NewRtAttr(netdevAQueueIfindex, nl.Uint32Attr(uint32(ifindex))),
		nl.NewRtAttr(netdevAQueueType, nl.Uint32Attr(netdevQueueTypeRx)),
		nl.NewRtAttr(netdevAQueueID, nl.Uint32Attr(uint32(queue))))
	if err != nil {
		return RxQueue{}, fmt.Errorf("receive queue %d of interface index %d: %w", queue, ifindex, err)
	}
	if len(msgs) != 1 {
		return RxQueue{}, fmt.Errorf("receive queue %d of interface index %d: %d replies, want 1", queue, ifindex, len(msgs))
	}
	attrs, err := genlAttrs(msgs[0])
	if err != nil {
		return RxQueue{}, fmt.Errorf("receive queue %d of interface index %d: %w", queue, ifindex, err)
	}
	q := RxQueue{Queue: queue}
	for _, a := range attrs {
		switch a.Attr.Type & nl.NLA_TYPE_MASK {
		case netdevAQueueNAPIID:
			if len(a.Value) >= 4 {
				q.NAPIID = binary.NativeEndian.Uint32(a.Value)
			}
		case netdevAQueueXSK:
			q.XSK = true
		}
	}
	return q, nil
}

// NAPIByID asks the kernel about the NAPI instance id: its interrupt, its
// thread, and, where the kernel has them (Linux 6.13), its settings.
func NAPIByID(id uint32) (NAPI, *NAPIConfig, error) {
	msgs, err := netdevDo(netdevCmdNAPIGet, ErrNoNAPIInfo, nl.NewRtAttr(netdevANAPIID, nl.Uint32Attr(id)))
	if err != nil {
		return NAPI{}, nil, fmt.Errorf("NAPI %d: %w", id, err)
	}
	if len(msgs) != 1 {
		return NAPI{}, nil, fmt.Errorf("NAPI %d: %d replies, want 1", id, len(msgs))
	}
	return parseNAPI(msgs[0])
}

// SetNAPI gives the NAPI instance id the settings c (napi-set). Only root
// (CAP_NET_ADMIN) may.
func SetNAPI(id uint32, c NAPIConfig) error {
	_, err := netdevDo(netdevCmdNAPISet, ErrNoNAPIConfig,
		nl.NewRtAttr(netdevANAPIID, nl.Uint32Attr(id)),
		nl.NewRtAttr(netdevANAPIDeferHardIRQs, nl.Uint32Attr(c.DeferHardIRQs)),
		nl.NewRtAttr(netdevANAPIGROFlushTimeout, nl.Uint64Attr(uint64(c.GROFlushTimeout))),
		nl.NewRtAttr(netdevANAPIIRQSuspendTimeout, nl.Uint64Attr(uint64(c.IRQSuspendTimeout))))
	if err != nil {
		return fmt.Errorf("set NAPI %d (%v): %w", id, c, err)
	}
	return nil
}

// SetNAPIThreaded gives the NAPI instance id the threaded mode m
// (napi-set). Only root (CAP_NET_ADMIN) may. A kernel that has no such
// mode gives ErrNoThreadedBusyPoll (for NAPIThreadedBusyPoll) or
// ErrNoNAPIConfig, wrapped.
func SetNAPIThreaded(id uint32, m NAPIThreaded) error {
	missing := ErrNoNAPIConfig
	if m == NAPIThreadedBusyPoll {
		missing = ErrNoThreadedBusyPoll
	}
	_, err := netdevDo(netdevCmdNAPISet, missing,
		nl.NewRtAttr(netdevANAPIID, nl.Uint32Attr(id)),
		nl.NewRtAttr(netdevANAPIThreaded, nl.Uint32Attr(uint32(m))))
	if refusedAttr(err) {
		err = fmt.Errorf("%w: %w", missing, err)
	}
	if err != nil {
		return fmt.Errorf("set NAPI %d threaded mode %d: %w", id, uint32(m), err)
	}
	return nil
}

// ProbeThreadedBusyPoll says whether the kernel has threaded busy polling,
// without changing any NAPI: it asks napi-set to put a NAPI that cannot
// exist in that mode. A kernel that has the mode looks for the NAPI and
// finds none (ENOENT); one that has not refuses the value (ERANGE) or the
// attribute (EINVAL) first, and gives ErrNoThreadedBusyPoll, wrapped.
// Only root (CAP_NET_ADMIN) may ask.
func ProbeThreadedBusyPoll() error {
	_, err := netdevDo(netdevCmdNAPISet, ErrNoThreadedBusyPoll,
		nl.NewRtAttr(netdevANAPIID, nl.Uint32Attr(math.MaxUint32)),
		nl.NewRtAttr(netdevANAPIThreaded, nl.Uint32Attr(uint32(NAPIThreadedBusyPoll))))
	return threadedProbeAnswer(err)
}

// threadedProbeAnswer reads napi-set's answer to ProbeThreadedBusyPoll.
func threadedProbeAnswer(err error) error {
	switch {
	case errors.Is(err, ErrNoThreadedBusyPoll):
		// No netdev family (before Linux 6.3; its lookup fails with
		// ENOENT too) or no napi-set (before 6.13).
		return err
	case errors.Is(err, unix.ENOENT):
		return nil
	case refusedAttr(err):
		return fmt.Errorf("%w: %w", ErrNoThreadedBusyPoll, err)
	case err == nil:
		return errors.New("napi-set found a NAPI with ID 2^32-1")
	}
	return err
}

// refusedAttr says the kernel refused an attribute of a request: one it
// does not know (EINVAL) or a value beyond its range (ERANGE).
func refusedAttr(err error) bool {
	return errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ERANGE)
}

// netdevDo sends one request of the netdev family and returns its replies.
// A kernel without the family or the command gives missing, wrapped.
func netdevDo(cmd uint8, missing error, attrs ...*nl.RtAttr) ([][]byte, error) {
	req, err := netdevRequest(cmd, unix.NLM_F_ACK, missing, attrs)
	if err != nil {
		return nil, err
	}
	msgs, err := req.Execute(unix.NETLINK_GENERIC, 0)
	if errors.Is(err, unix.EOPNOTSUPP) {
		return nil, fmt.Errorf("%w: %w", missing, err)
	}
	return msgs, err
}

// netdevDump sends one dump request of the netdev family and returns all
// its replies, as netdevDo does. It reads them up to NLMSG_DONE itself:
// the family's dump replies come without NLM_F_MULTI, and
// nl.NetlinkRequest.Execute stops after the first reply without it.
func netdevDump(cmd uint8, missing error, attrs ...*nl.RtAttr) ([][]byte, error) {
	req, err := netdevRequest(cmd, unix.NLM_F_DUMP, missing, attrs)
	if err != nil {
		return nil, err
	}
	s, err := nl.GetNetlinkSocketAt(netns.None(), netns.None(), unix.NETLINK_GENERIC)
	if err != nil {
		return nil, fmt.Errorf("open generic netlink socket: %w", err)
	}
	defer s.Close()
	if err := s.SetReceiveTimeout(&nl.SocketTimeoutTv); err != nil {
		return nil, fmt.Errorf("set netlink receive timeout: %w", err)
	}
	if err := s.Send(req); err != nil {
		return nil, fmt.Errorf("send netdev netlink request: %w", err)
	}
	var out [][]byte
	for {
		msgs, _, err := s.Receive()
		if err != nil {
			return nil, fmt.Errorf("receive netdev netlink reply: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Seq != req.Seq {
				continue
			}
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return out, nil
			case unix.NLMSG_ERROR:
				if len(m.Data) < 4 {
					return nil, errors.New("short netlink error message")
				}
				e := unix.Errno(-int32(binary.NativeEndian.Uint32(m.Data)))
				if e == 0 {
					return out, nil
				}
				if e == unix.EOPNOTSUPP {
					return nil, fmt.Errorf("%w: %w", missing, e)
				}
				return nil, e
			}
			out = append(out, m.Data)
		}
	}
}

// netdevRequest builds a request of the netdev family with flags.
func netdevRequest(cmd uint8, flags int, missing error, attrs []*nl.RtAttr) (*nl.NetlinkRequest, error) {
	fam, err := netlink.GenlFamilyGet(netdevFamilyName)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, fmt.Errorf("%w: %w", missing, err)
		}
		return nil, fmt.Errorf("look up the %s netlink family: %w", netdevFamilyName, err)
	}
	req := nl.NewNetlinkRequest(int(fam.ID), flags)
	req.AddData(genlHeader{cmd: cmd, version: netdevFamilyVers})
	for _, a := range attrs {
		req.AddData(a)
	}
	return req, nil
}

// genlAttrs parses the attributes of a generic netlink message.
func genlAttrs(msg []byte) ([]syscall.NetlinkRouteAttr, error) {
	if len(msg) < nl.SizeofGenlmsg {
		return nil, fmt.Errorf("short netdev netlink message (%d bytes)", len(msg))
	}
	attrs, err := nl.ParseRouteAttr(msg[nl.SizeofGenlmsg:])
	if err != nil {
		return nil, fmt.Errorf("parse netdev netlink message: %w", err)
	}
	return attrs, nil
}

// nlaUint reads an NLA_UINT: 4 or 8 bytes.
func nlaUint(b []byte) uint64 {
	switch len(b) {
	case 4:
		return uint64(binary.NativeEndian.Uint32(b))
	case 8:
		return binary.NativeEndian.Uint64(b)
	}
	return 0
}
