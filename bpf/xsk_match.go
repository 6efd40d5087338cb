//go:build linux

package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
)

// XskMatch chooses what a steering program sends to the sockets; the rest
// goes to the kernel's stack. A field's zero value matches anything; a
// frame must meet every field that is set.
type XskMatch struct {
	// EtherType of an untagged frame.
	EtherType uint16
	// IPProto is the IPv4 protocol or IPv6 next header (no extension
	// headers).
	IPProto uint8
	// DstPort is a UDP or TCP destination port. An IPv4 fragment after the
	// first never matches it.
	DstPort uint16
	// Dst is a destination prefix, IPv4 or IPv6; the zero Prefix matches
	// anything.
	Dst netip.Prefix
}

// IsZero reports whether m matches every frame.
func (m XskMatch) IsZero() bool { return m == XskMatch{} }

// setMatch sets the filter's load-time constants (xsk_filter.h) in vars.
func setMatch(vars map[string]*ebpf.VariableSpec, m XskMatch) error {
	// The FILTER_* bits of xsk_filter.h.
	const (
		ether   = 0x01
		proto   = 0x02
		port    = 0x04
		prefix4 = 0x08
		prefix6 = 0x10
	)
	var rules uint8
	var addr, mask [4]uint32
	if m.Dst.IsValid() {
		a := m.Dst.Addr().Unmap()
		bits := m.Dst.Bits()
		var ab, mb []byte
		if a.Is4() {
			rules |= prefix4
			b := a.As4()
			ab, mb = b[:], make([]byte, 4)
		} else {
			rules |= prefix6
			b := a.As16()
			ab, mb = b[:], make([]byte, 16)
		}
		for i := 0; i < bits; i++ {
			mb[i/8] |= 0x80 >> (i % 8)
		}
		// Network order in memory: each word as the frame holds it.
		for i := 0; i*4 < len(ab); i++ {
			mask[i] = binary.NativeEndian.Uint32(mb[i*4:])
			addr[i] = binary.NativeEndian.Uint32(ab[i*4:]) & mask[i]
		}
	} else if m.Dst != (netip.Prefix{}) {
		return errors.New("an invalid destination prefix")
	}
	if m.EtherType != 0 {
		rules |= ether
	}
	if m.IPProto != 0 {
		rules |= proto
	}
	if m.DstPort != 0 {
		rules |= port
	}
	for name, v := range map[string]any{
		XskRedirectVarFilterRules:     rules,
		XskRedirectVarFilterEthertype: htons(m.EtherType),
		XskRedirectVarFilterIpProto:   m.IPProto,
		XskRedirectVarFilterDstPort:   htons(m.DstPort),
		XskRedirectVarFilterAddr:      addr,
		XskRedirectVarFilterMask:      mask,
	} {
		vs, ok := vars[name]
		if !ok {
			return fmt.Errorf("no variable %s", name)
		}
		if err := vs.Set(v); err != nil {
			return fmt.Errorf("set %s: %w", name, err)
		}
	}
	return nil
}

// htons is v in network order, as a load-time constant the program
// compares with a frame's bytes.
func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}
