package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/xdpeng/xdpeng/bpf"
)

// RxMetadata chooses the receive metadata the steering program asks the
// driver for, per frame, through the XDP metadata kfuncs: what the
// hardware (or, on veth, the skb) knows of the frame. The handler reads it
// with Batch.RxHash, Batch.RxTimestamp and Batch.RxVLAN. The zero value
// asks for none and loads the plain steering program, which costs nothing
// more.
//
// Metadata needs native XDP (a program bound to the device: New refuses
// XDPGeneric with ErrRxMetadata), a kernel with the kfuncs (Linux 6.3 for
// the hash and timestamp, 6.8 for the VLAN tag) and a device whose driver
// implements them (the netdev family's xdp-rx-metadata features, Linux 6.8
// and later). With MultiBuffer the metadata is that of the whole frame,
// in front of its first segment.
type RxMetadata uint8

// The kinds of receive metadata.
const (
	RxHash      RxMetadata = 1 << iota // the RX (RSS) hash and its kind
	RxTimestamp                        // the receive timestamp
	RxVLAN                             // the VLAN tag the device took off the frame
)

var rxMetadataNames = []string{"hash", "timestamp", "vlan"}

// String returns the names of the kinds separated by commas, or "none".
func (m RxMetadata) String() string {
	var names []string
	for i, n := range rxMetadataNames {
		if m&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	if m&^(1<<len(rxMetadataNames)-1) != 0 {
		names = append(names, fmt.Sprintf("%#x", uint8(m)&^(1<<len(rxMetadataNames)-1)))
	}
	if names == nil {
		return "none"
	}
	return strings.Join(names, ",")
}

// ParseRxMetadata reads a comma-separated list of hash, timestamp and vlan
// ("" or "none": none).
func ParseRxMetadata(s string) (RxMetadata, error) {
	var m RxMetadata
	if s == "" || s == "none" {
		return 0, nil
	}
	for _, f := range strings.Split(s, ",") {
		i := 0
		for i < len(rxMetadataNames) && rxMetadataNames[i] != f {
			i++
		}
		if i == len(rxMetadataNames) {
			return 0, fmt.Errorf("receive metadata %q: want hash, timestamp or vlan, separated by commas", f)
		}
		m |= 1 << i
	}
	return m, nil
}

// ErrRxMetadata: Config.RxMetadata asks for metadata that the kernel, the
// device or the configuration cannot give; the message names which.
var ErrRxMetadata = errors.New("receive metadata not available")

// ErrRxMetadataRefused: the kernel refuses what every receive metadata
// program needs (bpf_xdp_adjust_meta), whatever the device and mode. It
// comes with ErrRxMetadata: errors.Is matches both.
var ErrRxMetadataRefused = errors.New("the kernel refuses XDP metadata")

// HashKind says what an RX hash was computed over: the kernel's enum
// xdp_rss_hash_type, a set of bits. Zero is a hash over no known headers
// (L2, or a driver that does not say).
type HashKind uint32

// The bits of a HashKind.
const (
	HashL3IPv4   HashKind = 1 << 0 // over the IPv4 addresses
	HashL3IPv6   HashKind = 1 << 1 // over the IPv6 addresses
	HashL3DynHdr HashKind = 1 << 2 // IPv6 with extension headers
	HashL4       HashKind = 1 << 3 // over the ports too
	HashL4TCP    HashKind = 1 << 4
	HashL4UDP    HashKind = 1 << 5
	HashL4SCTP   HashKind = 1 << 6
	HashL4IPsec  HashKind = 1 << 7
	HashL4ICMP   HashKind = 1 << 8
)

var hashKindNames = []string{"ipv4", "ipv6", "ipv6-ext", "l4", "tcp", "udp", "sctp", "ipsec", "icmp"}

// String names the bits, "l4,udp" or "ipv4,l4,tcp"; "l2" for none.
func (k HashKind) String() string {
	var names []string
	for i, n := range hashKindNames {
		if k&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	if rest := k &^ (1<<len(hashKindNames) - 1); rest != 0 {
		names = append(names, fmt.Sprintf("%#x", uint32(rest)))
	}
	if names == nil {
		return "l2"
	}
	return strings.Join(names, ",")
}

// rxMeta returns the metadata in front of frame i and whether the steering
// program wrote it, with valid holding bit (a bpf.RxMeta* bit).
func (b *Batch) rxMeta(i int, bit uint32) ([]byte, bool) {
	if !b.rxMetadata {
		return nil, false
	}
	a := b.umem.DataAddr(b.addrs[i])
	if a < uint64(bpf.RxMetaSize) || a-uint64(bpf.RxMetaSize) < b.umem.FrameBase(b.addrs[i]) {
		return nil, false
	}
	m := b.mem[a-bpf.RxMetaSize : a]
	return m, binary.NativeEndian.Uint32(m[bpf.RxMetaValidAt:])&bit != 0
}

// RxHash returns frame i's RX hash and what it was computed over. ok is
// false where Config.RxMetadata has no RxHash or the driver had none for
// the frame (veth has one only for frames that reached it as skbs: sent by
// the stack or by AF_XDP in copy mode; not for frames redirected into it).
// Like all the metadata it is read from in front of the frame: call it
// before moving the frame's start (AdjustHead).
func (b *Batch) RxHash(i int) (hash uint32, kind HashKind, ok bool) {
	m, ok := b.rxMeta(i, bpf.RxMetaHash)
	if !ok {
		return 0, 0, false
	}
	return binary.NativeEndian.Uint32(m[bpf.RxMetaHashAt:]), HashKind(binary.NativeEndian.Uint32(m[bpf.RxMetaHashTypeAt:])), true
}

// RxTimestamp returns when frame i was received, in nanoseconds of the
// device's clock (its PTP hardware clock: often TAI, not the system's
// CLOCK_REALTIME). ok is false where Config.RxMetadata has no RxTimestamp
// or the device had no timestamp for the frame: one without hardware
// timestamping turned on (SIOCSHWTSTAMP), or veth, whose skbs carry no
// hardware time.
func (b *Batch) RxTimestamp(i int) (ns uint64, ok bool) {
	m, ok := b.rxMeta(i, bpf.RxMetaTimestamp)
	if !ok {
		return 0, false
	}
	return binary.NativeEndian.Uint64(m[bpf.RxMetaTimestampAt:]), true
}

// RxVLAN returns the VLAN tag (TCI: priority, DEI and VLAN id, the id in
// tci&0xfff) that the device took off frame i. ok is false where
// Config.RxMetadata has no RxVLAN or the frame had no tag taken off (an
// untagged frame, or one whose tag is still in it: look in Frame(i)).
func (b *Batch) RxVLAN(i int) (tci uint16, ok bool) {
	m, ok := b.rxMeta(i, bpf.RxMetaVLAN)
	if !ok {
		return 0, false
	}
	return binary.NativeEndian.Uint16(m[bpf.RxMetaVLANTCIAt:]), true
}

// RxVLANProtocol returns the protocol (TPID) of the tag RxVLAN returns:
// 0x8100 (802.1Q) or 0x88a8 (802.1ad), with the same ok.
func (b *Batch) RxVLANProtocol(i int) (proto uint16, ok bool) {
	m, ok := b.rxMeta(i, bpf.RxMetaVLAN)
	if !ok {
		return 0, false
	}
	return binary.BigEndian.Uint16(m[bpf.RxMetaVLANProtoAt:]), true
}
