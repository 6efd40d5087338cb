package main

// The frame options of gen and txonly, with xdpsock's letters: -s size,
// -V/-J/-K VLAN, -P pattern (or --fill), -G/-H MACs (the MACs are in
// addrFlags).

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/xdpeng/xdpeng/engine/packet"
)

// fcsLen is the Ethernet frame check sequence the NIC adds on the wire.
const fcsLen = 4

// sizeConvention is what --help says about --size.
const sizeConvention = "frame size in bytes with the 4-byte FCS, as RFC 2544, xdpsock -s and xdp-trafficgen -s count it: 64 builds 60 bytes, to which the NIC adds the FCS; byte counts are of the 60"

// frameFlags are the frame options of gen and txonly.
type frameFlags struct {
	size    int // with FCS
	vlanTag bool
	vlan    uint16
	vlanPri uint8
	pattern string
	fill    uint8
	flags   *pflag.FlagSet
}

func (f *frameFlags) register(fs *pflag.FlagSet) {
	f.flags = fs
	fs.IntVarP(&f.size, "size", "s", 64, fmt.Sprintf("%s; %d..%d (%d with a VLAN tag)", sizeConvention,
		packet.MinFrameSize+fcsLen, packet.MaxFrameSize+fcsLen, packet.MaxFrameSize+fcsLen+packet.VLANTagLen))
	fs.BoolVarP(&f.vlanTag, "tx-vlan", "V", false, "tag frames with 802.1Q VLAN -J (1 if -J is not given), as xdpsock -V")
	fs.Uint16VarP(&f.vlan, "vlan", "J", 0, "802.1Q VLAN ID to tag frames with, 1..4094 (default: untagged, or 1 with -V)")
	fs.Uint8VarP(&f.vlanPri, "vlan-pri", "K", 0, "802.1p priority of the VLAN tag, 0..7")
	fs.StringVarP(&f.pattern, "pattern", "P", "", "payload fill pattern: 32 bits in hex, repeated (xdpsock -P 12345678; default: zero bytes)")
	fs.Uint8Var(&f.fill, "fill", 0, "payload byte, repeated (-P sets a 32-bit pattern instead)")
}

// apply checks the flags and puts them into frame; the size there is
// without FCS. jumbo allows frames beyond a 1500-byte MTU (multi-buffer).
func (f *frameFlags) apply(frame *packet.UDPConfig, jumbo bool) error {
	largest := packet.MaxFrameSize
	if jumbo {
		largest = packet.MaxJumboFrameSize
	}
	maxSize := largest + fcsLen
	if f.vlanTag || f.vlan != 0 {
		maxSize += packet.VLANTagLen
	}
	if f.size < packet.MinFrameSize+fcsLen || f.size > maxSize {
		hint := ""
		if !jumbo && f.size > maxSize {
			hint = "; larger frames need multi-buffer (-F, txonly only)"
		}
		return fmt.Errorf("--size %d out of range: frame size with FCS must be %d..%d (%d with a VLAN tag)%s",
			f.size, packet.MinFrameSize+fcsLen, largest+fcsLen, largest+fcsLen+packet.VLANTagLen, hint)
	}
	frame.Size = f.size - fcsLen
	frame.VLAN = f.vlan
	if f.vlanTag && f.vlan == 0 {
		if f.flags != nil && f.flags.Changed("vlan") {
			return fmt.Errorf("-V (--tx-vlan) with -J 0: a tag needs a VLAN ID, 1..4094")
		}
		frame.VLAN = 1 // xdpsock's default
	}
	if frame.VLAN > 4094 {
		return fmt.Errorf("-J/--vlan %d out of range: 1..4094", frame.VLAN)
	}
	if f.vlanPri > 7 {
		return fmt.Errorf("-K/--vlan-pri %d out of range: 0..7", f.vlanPri)
	}
	if f.vlanPri != 0 && frame.VLAN == 0 {
		return fmt.Errorf("-K/--vlan-pri %d: untagged frames have no priority; tag them with -V or -J ID", f.vlanPri)
	}
	frame.VLANPriority = f.vlanPri
	if f.pattern != "" {
		s := strings.TrimPrefix(strings.ToLower(f.pattern), "0x")
		p, err := strconv.ParseUint(s, 16, 32)
		if err != nil {
			return fmt.Errorf("-P/--pattern %q: want 32 bits in hex, like 12345678 or 0x12345678", f.pattern)
		}
		frame.Pattern = uint32(p)
		if f.flags != nil && f.flags.Changed("fill") {
			return fmt.Errorf("--fill and -P/--pattern both fill the payload: give one")
		}
	}
	frame.Fill = f.fill
	return nil
}

// frameExtras is what a generator's header says of its frames beyond size
// and addresses: the VLAN tag and what fills the payload, where asked for
// (", VLAN 7 priority 3, payload pattern 12345678"); "" when neither was.
func frameExtras(c packet.UDPConfig) string {
	var parts []string
	if c.VLAN != 0 {
		parts = append(parts, fmt.Sprintf("VLAN %d priority %d", c.VLAN, c.VLANPriority))
	}
	switch {
	case c.Pattern != 0:
		parts = append(parts, fmt.Sprintf("payload pattern %08x", c.Pattern))
	case c.Fill != 0:
		parts = append(parts, fmt.Sprintf("payload bytes 0x%02x", c.Fill))
	}
	if len(parts) == 0 {
		return ""
	}
	return ", " + strings.Join(parts, ", ")
}

// wireSize is a frame's size with the FCS, as --size counts it.
func wireSize(frameLen int) int { return frameLen + fcsLen }

// fcsNote is what the receiving modes' --help says about frame sizes.
const fcsNote = `Frame sizes follow RFC 2544, xdpsock and xdp-trafficgen: a "64-byte frame"
(gen -s 64, txonly -s 64, xdpsock -s 64) counts the 4-byte FCS that the NIC
adds on the wire. Byte counts (rx_bytes, tx_bytes) are of the frames as the
socket sees them, without the FCS: such a frame counts 60 bytes.`
