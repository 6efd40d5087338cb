package netdev

// What the package's users need on every operating system: the types that
// describe a device and its link events, and the arithmetic of frame sizes.
// The rest of the package asks Linux (netlink, ethtool, sysfs) and is built
// there only.

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/xsk"
)

// Info describes an interface as xdpeng needs it.
type Info struct {
	Name  string
	Index int
	MAC   net.HardwareAddr
	// Driver is the driver's name ("veth", "mlx5_core", ...), the link kind
	// ("bridge") when the driver does not say, "" when neither does (lo).
	Driver string
	MTU    int
	// RxQueues and TxQueues are the queues in use, the ids an AF_XDP socket may
	// bind to: ethtool channels (combined + rx/tx) where the driver reports them,
	// otherwise the allocated queue count from netlink (which is exact for veth).
	RxQueues, TxQueues int
}

// NoInterfaceError reports that an interface does not exist in the namespace
// of the calling thread.
type NoInterfaceError struct {
	Name string
}

func (e *NoInterfaceError) Error() string {
	return fmt.Sprintf("interface %q not found in this network namespace", e.Name)
}

// LinkEventKind says what happened to a watched device.
type LinkEventKind int

const (
	// LinkDown: the device stopped passing frames. It was set down, or it
	// lost its carrier (a veth whose peer went down or away).
	LinkDown LinkEventKind = iota + 1
	// LinkUp: the device passes frames again.
	LinkUp
	// LinkGone: the device was deleted, or left the network namespace
	// (moved to another, or its namespace was torn down). Nothing more is
	// reported about it.
	LinkGone
)

// String returns "down", "up" or "gone".
func (k LinkEventKind) String() string {
	switch k {
	case LinkDown:
		return "down"
	case LinkUp:
		return "up"
	case LinkGone:
		return "gone"
	}
	return fmt.Sprintf("LinkEventKind(%d)", int(k))
}

// LinkEvent is a change of a watched device's state.
type LinkEvent struct {
	Kind LinkEventKind
	// Time is when the watch read the kernel's notification.
	Time time.Time
	// Index and Name are the device's, as given to WatchLinks.
	Index int
	Name  string
	// AdminUp (IFF_UP) and Carrier (IFF_LOWER_UP) are the state after the
	// change; both false when the device is gone. A device passes frames
	// when both are true.
	AdminUp, Carrier bool
}

// FrameOverhead is what a frame carries on top of its MTU: an Ethernet
// header and one VLAN tag.
const FrameOverhead = packet.EthHdrLen + packet.VLANTagLen

// CopyModeMaxFrags is how many descriptors one packet may span in AF_XDP copy
// mode on every kernel: CONFIG_MAX_SKB_FRAGS + 1, and the config's minimum is
// 17 (Documentation/networking/af_xdp.rst, "Multi-Buffer Support"). Receive
// takes more; transmit (txonly, l2fwd) drops longer packets as invalid.
const CopyModeMaxFrags = 18

// FrameMTU returns the largest MTU whose frames, with an Ethernet header and
// one VLAN tag, fit in frames UMEM frames of frameSize bytes each, when the
// UMEM reserves headroom bytes in front of the data and the kernel
// XDP_PACKET_HEADROOM more: each receive buffer holds frameSize - 256 -
// headroom bytes (xsk_pool_get_rx_frame_size in include/net/xdp_sock_drv.h).
// It returns 0 if not even an empty frame fits.
func FrameMTU(frameSize, headroom, frames int) int {
	room := frameSize - xsk.KernelHeadroom - headroom
	if room <= 0 || frames <= 0 {
		return 0
	}
	return max(frames*room-FrameOverhead, 0)
}

// ErrNoNativeXDP: the driver has no native XDP (XDP_FLAGS_DRV_MODE);
// generic mode works on every interface. The packages that attach or plan
// XDP programs (hook, kern, engine) return this value.
var ErrNoNativeXDP = errors.New("the driver has no native XDP support")

// ErrNoThreadedBusyPoll means the kernel cannot have a NAPI's thread busy
// poll it (netdev netlink napi-set threaded busy-poll needs Linux 6.19).
var ErrNoThreadedBusyPoll = errors.New("the kernel has no threaded busy polling (netdev netlink napi-set threaded busy-poll needs Linux 6.19)")

// ErrNoDstMAC is returned by DstMAC when it finds no address to send to.
var ErrNoDstMAC = errors.New("no destination MAC found")

// NAPIThreaded is a NAPI's threaded mode (netdev napi-set "threaded"), as
// the kernel numbers it; engine.NAPIThreaded names it.
type NAPIThreaded uint32

const (
	// NAPIThreadedDisabled: the NAPI runs in softirq context.
	NAPIThreadedDisabled NAPIThreaded = 0
	// NAPIThreadedEnabled: the NAPI runs in a kernel thread of its own
	// ("napi/DEV-ID"), woken by the device's interrupt.
	NAPIThreadedEnabled NAPIThreaded = 1
	// NAPIThreadedBusyPoll: the NAPI's kernel thread polls it without
	// stopping, its interrupt left off, taking its CPU whole (Linux 6.19).
	NAPIThreadedBusyPoll NAPIThreaded = 2
)
