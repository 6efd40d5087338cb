//go:build linux

package netdev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strings"

	"github.com/vishvananda/netlink/nl"
)

// XDPFeatures is a device's xdp-features bitmask as the kernel's netdev
// netlink family reports it (enum netdev_xdp_act, include/uapi/linux/netdev.h).
// A driver may change it at run time: several set ndo-xmit only while an XDP
// program is attached, and veth sets it from its peer's state.
type XDPFeatures uint64

// The xdp-features bits; comments give the names of the kernel's netlink spec
// (Documentation/netlink/specs/netdev.yaml), which String prints.
const (
	XDPBasic       XDPFeatures = 1 << iota // basic: native XDP with XDP_ABORTED, XDP_DROP, XDP_PASS, XDP_TX
	XDPRedirect                            // redirect: XDP_REDIRECT from this device
	XDPNdoXmit                             // ndo-xmit: accepts frames redirected to it (ndo_xdp_xmit)
	XDPXSKZeroCopy                         // xsk-zerocopy: AF_XDP zero-copy
	XDPHWOffload                           // hw-offload: programs offloaded to the NIC
	XDPRxSG                                // rx-sg: multi-buffer (non-linear) frames on receive
	XDPNdoXmitSG                           // ndo-xmit-sg: multi-buffer frames through ndo_xdp_xmit
)

var xdpFeatureNames = []string{"basic", "redirect", "ndo-xmit", "xsk-zerocopy", "hw-offload", "rx-sg", "ndo-xmit-sg"}

// Has reports whether every feature in want is set.
func (f XDPFeatures) Has(want XDPFeatures) bool { return f&want == want }

// Names returns the names of the set bits in the kernel's spelling, unknown
// bits as hex numbers; nil for none.
func (f XDPFeatures) Names() []string { return flagNames(uint64(f), xdpFeatureNames) }

// String returns the names of the set bits separated by commas, or "none".
func (f XDPFeatures) String() string { return joinFlags(f.Names()) }

// XDPRxMetadata is the xdp-rx-metadata-features bitmask (enum
// netdev_xdp_rx_metadata): the receive metadata an XDP program can read
// through kfuncs.
type XDPRxMetadata uint64

// The xdp-rx-metadata bits.
const (
	XDPRxMetaTimestamp XDPRxMetadata = 1 << iota // timestamp: bpf_xdp_metadata_rx_timestamp
	XDPRxMetaHash                                // hash: bpf_xdp_metadata_rx_hash
	XDPRxMetaVLANTag                             // vlan-tag: bpf_xdp_metadata_rx_vlan_tag
)

var xdpRxMetadataNames = []string{"timestamp", "hash", "vlan-tag"}

// Has reports whether every bit in want is set.
func (m XDPRxMetadata) Has(want XDPRxMetadata) bool { return m&want == want }

// Names returns the names of the set bits, as XDPFeatures.Names does.
func (m XDPRxMetadata) Names() []string { return flagNames(uint64(m), xdpRxMetadataNames) }

// String returns the names of the set bits separated by commas, or "none".
func (m XDPRxMetadata) String() string { return joinFlags(m.Names()) }

// XSKFeatures is the xsk-features bitmask (enum netdev_xsk_flags): what the
// driver does with AF_XDP transmit metadata.
type XSKFeatures uint64

// The xsk-flags bits.
const (
	XSKTxTimestamp      XSKFeatures = 1 << iota // tx-timestamp
	XSKTxChecksum                               // tx-checksum
	XSKTxLaunchTimeFIFO                         // tx-launch-time-fifo
)

var xskFeatureNames = []string{"tx-timestamp", "tx-checksum", "tx-launch-time-fifo"}

// Has reports whether every bit in want is set.
func (x XSKFeatures) Has(want XSKFeatures) bool { return x&want == want }

// Names returns the names of the set bits, as XDPFeatures.Names does.
func (x XSKFeatures) Names() []string { return flagNames(uint64(x), xskFeatureNames) }

// String returns the names of the set bits separated by commas, or "none".
func (x XSKFeatures) String() string { return joinFlags(x.Names()) }

func flagNames(v uint64, names []string) []string {
	var out []string
	for v != 0 {
		i := bits.TrailingZeros64(v)
		v &^= 1 << i
		if i < len(names) {
			out = append(out, names[i])
		} else {
			out = append(out, fmt.Sprintf("%#x", uint64(1)<<i))
		}
	}
	return out
}

func joinFlags(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}

// DevFeatures is what the netdev family's dev-get says about one device.
type DevFeatures struct {
	XDP XDPFeatures
	// ZCMaxSegs is the most buffers a packet may span in AF_XDP zero-copy
	// mode (xdp-zc-max-segs): 1 means no zero-copy multi-buffer. The kernel
	// sends it only with xsk-zerocopy; 0 otherwise.
	ZCMaxSegs  uint32
	RxMetadata XDPRxMetadata // xdp-rx-metadata-features (Linux 6.8 and later)
	XSK        XSKFeatures   // xsk-features (Linux 6.8 and later)
}

// Values from include/uapi/linux/netdev.h.
const (
	netdevCmdDevGet             = 1 // NETDEV_CMD_DEV_GET
	netdevADevIfindex           = 1 // NETDEV_A_DEV_IFINDEX
	netdevADevXDPFeatures       = 3 // NETDEV_A_DEV_XDP_FEATURES
	netdevADevXDPZCMaxSegs      = 4 // NETDEV_A_DEV_XDP_ZC_MAX_SEGS
	netdevADevXDPRxMetaFeatures = 5 // NETDEV_A_DEV_XDP_RX_METADATA_FEATURES
	netdevADevXSKFeatures       = 6 // NETDEV_A_DEV_XSK_FEATURES
)

// ErrNoXDPFeatures means the kernel cannot report XDP features: the netdev
// generic netlink family came with Linux 6.3.
var ErrNoXDPFeatures = errors.New("the kernel does not report XDP features (the netdev netlink family needs Linux 6.3)")

// Features returns the XDP features of the interface with index ifindex in
// the current network namespace. It wraps ErrNoXDPFeatures where the kernel
// has no netdev family.
func Features(ifindex int) (DevFeatures, error) {
	if ifindex <= 0 {
		return DevFeatures{}, fmt.Errorf("XDP features: invalid interface index %d", ifindex)
	}
	msgs, err := netdevDo(netdevCmdDevGet, ErrNoXDPFeatures, nl.NewRtAttr(netdevADevIfindex, nl.Uint32Attr(uint32(ifindex))))
	if err != nil {
		return DevFeatures{}, fmt.Errorf("XDP features of interface index %d: %w", ifindex, err)
	}
	if len(msgs) != 1 {
		return DevFeatures{}, fmt.Errorf("XDP features of interface index %d: %d replies, want 1", ifindex, len(msgs))
	}
	return parseDevFeatures(msgs[0])
}

// genlHeader is a generic netlink header with zero reserved bytes, which
// nl.Genlmsg does not give: its Serialize reads four bytes from a two-byte
// struct, and the kernel refuses netdev requests whose reserved bytes are not
// zero (genl_header_check in net/netlink/genetlink.c, EINVAL).
type genlHeader struct{ cmd, version uint8 }

func (h genlHeader) Len() int          { return nl.SizeofGenlmsg }
func (h genlHeader) Serialize() []byte { return []byte{h.cmd, h.version, 0, 0} }

// parseDevFeatures decodes a dev-get reply (generic netlink header first).
// Attributes that an older kernel does not send stay zero.
func parseDevFeatures(msg []byte) (DevFeatures, error) {
	if len(msg) < nl.SizeofGenlmsg {
		return DevFeatures{}, fmt.Errorf("short netdev dev-get reply (%d bytes)", len(msg))
	}
	attrs, err := nl.ParseRouteAttr(msg[nl.SizeofGenlmsg:])
	if err != nil {
		return DevFeatures{}, fmt.Errorf("parse netdev dev-get reply: %w", err)
	}
	var f DevFeatures
	for _, a := range attrs {
		switch a.Attr.Type {
		case netdevADevXDPFeatures, netdevADevXDPRxMetaFeatures, netdevADevXSKFeatures:
			if len(a.Value) != 8 {
				return DevFeatures{}, fmt.Errorf("netdev attribute %d: %d bytes, want 8", a.Attr.Type, len(a.Value))
			}
			v := binary.NativeEndian.Uint64(a.Value)
			switch a.Attr.Type {
			case netdevADevXDPFeatures:
				f.XDP = XDPFeatures(v)
			case netdevADevXDPRxMetaFeatures:
				f.RxMetadata = XDPRxMetadata(v)
			default:
				f.XSK = XSKFeatures(v)
			}
		case netdevADevXDPZCMaxSegs:
			if len(a.Value) != 4 {
				return DevFeatures{}, fmt.Errorf("netdev xdp-zc-max-segs: %d bytes, want 4", len(a.Value))
			}
			f.ZCMaxSegs = binary.NativeEndian.Uint32(a.Value)
		}
	}
	return f, nil
}
