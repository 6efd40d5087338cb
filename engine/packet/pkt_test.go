package packet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
)

var (
	macA = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x01}
	macB = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x02}
)

func udpConfig(v6 bool, vlan uint16, size int) UDPConfig {
	c := UDPConfig{
		SrcMAC: macA, DstMAC: macB,
		SrcIP: netip.MustParseAddr("198.18.0.1"), DstIP: netip.MustParseAddr("198.18.0.2"),
		SrcPort: 1234, DstPort: 9, VLAN: vlan, Size: size, Fill: 0xa5,
	}
	if v6 {
		c.SrcIP, c.DstIP = netip.MustParseAddr("2001:2::1"), netip.MustParseAddr("2001:2::2")
	}
	return c
}

func TestBuildErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(*UDPConfig)
		want   string
	}{
		{"short size", func(c *UDPConfig) { c.Size = 59 }, "Size 59 out of range: frame size without FCS must be 60..65549"},
		{"big size", func(c *UDPConfig) { c.Size = 65550 }, "Size 65550 out of range"},
		{"vlan big size ok", func(c *UDPConfig) { c.VLAN = 5; c.Size = 65554 }, "Size 65554 out of range: frame size without FCS must be 60..65553"},
		{"v6 min", func(c *UDPConfig) {
			c.SrcIP, c.DstIP = netip.MustParseAddr("::1"), netip.MustParseAddr("::2")
			c.VLAN, c.Size = 7, 64
		}, "must be 66..65553"},
		{"src mac", func(c *UDPConfig) { c.SrcMAC = nil }, "SrcMAC"},
		{"dst mac", func(c *UDPConfig) { c.DstMAC = net.HardwareAddr{1, 2} }, "DstMAC"},
		{"src ip", func(c *UDPConfig) { c.SrcIP = netip.Addr{} }, "SrcIP is not set"},
		{"dst ip", func(c *UDPConfig) { c.DstIP = netip.Addr{} }, "DstIP is not set"},
		{"mixed", func(c *UDPConfig) { c.DstIP = netip.MustParseAddr("::2") }, "both must be IPv4 or both IPv6"},
		{"vlan", func(c *UDPConfig) { c.VLAN = 4095 }, "VLAN 4095 out of range: 1..4094"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := udpConfig(false, 0, 64)
			tc.modify(&c)
			_, err := BuildUDP(make([]byte, 70000), c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := BuildUDP(make([]byte, 63), udpConfig(false, 0, 64)); err == nil || !strings.Contains(err.Error(), "too small") {
		t.Errorf("small buffer: error %v", err)
	}
}

func TestChecksumHelpers(t *testing.T) {
	// RFC 1071's example: the sum of these words is 0xddf2.
	b := []byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}
	if got := Checksum(b); got != ^uint16(0xddf2) {
		t.Errorf("Checksum = %#04x, want %#04x", got, ^uint16(0xddf2))
	}
	// Odd length pads with zero.
	if got, want := Checksum([]byte{0x12, 0x34, 0x56}), ^uint16(0x1234+0x5600); got != want {
		t.Errorf("odd Checksum = %#04x, want %#04x", got, want)
	}
	// Rewriting the port incrementally gives the checksum of a rebuild.
	c := udpConfig(false, 0, 64)
	f := make([]byte, 64)
	if _, err := BuildUDP(f, c); err != nil {
		t.Fatal(err)
	}
	l4 := c.L4Offset()
	for _, port := range []uint16{10, 65535, 0, 4242} {
		old := binary.BigEndian.Uint16(f[l4+2:])
		binary.BigEndian.PutUint16(f[l4+2:], port)
		binary.BigEndian.PutUint16(f[l4+6:], UpdateChecksum(binary.BigEndian.Uint16(f[l4+6:]), old, port))
		c.DstPort = port
		want := make([]byte, 64)
		if _, err := BuildUDP(want, c); err != nil {
			t.Fatal(err)
		}
		// The two may differ only in 0x0000 versus 0xffff, the two
		// one's complement zeros; both verify.
		got, exp := binary.BigEndian.Uint16(f[l4+6:]), binary.BigEndian.Uint16(want[l4+6:])
		if got != exp && !(got|exp == 0xffff && got&exp == 0) {
			t.Errorf("port %d: incremental checksum %#04x, rebuilt %#04x", port, got, exp)
		}
	}
}

func TestSwapAndSetMACs(t *testing.T) {
	f := make([]byte, 64)
	if _, err := BuildUDP(f, udpConfig(false, 0, 64)); err != nil {
		t.Fatal(err)
	}
	SwapMACs(f)
	if !bytes.Equal(f[0:6], macA) || !bytes.Equal(f[6:12], macB) {
		t.Errorf("after SwapMACs dst %x src %x", f[0:6], f[6:12])
	}
	c := net.HardwareAddr{0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff}
	SetDstMAC(f, c)
	SetSrcMAC(f, macA)
	if !bytes.Equal(f[0:6], c) || !bytes.Equal(f[6:12], macA) {
		t.Errorf("after Set* dst %x src %x", f[0:6], f[6:12])
	}
	short := []byte{1, 2, 3}
	SwapMACs(short)
	SetDstMAC(short, c)
	if !bytes.Equal(short, []byte{1, 2, 3}) {
		t.Errorf("short frame changed: %x", short)
	}
}

func TestBuildVLANPriorityAndPattern(t *testing.T) {
	c := UDPConfig{
		SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2},
		SrcIP: netip.MustParseAddr("198.18.0.1"), DstIP: netip.MustParseAddr("198.18.0.2"),
		SrcPort: 1, DstPort: 9, VLAN: 100, VLANPriority: 5, Size: 64, Pattern: 0x12345678,
	}
	buf := make([]byte, c.Size)
	if _, err := BuildUDP(buf, c); err != nil {
		t.Fatal(err)
	}
	if tci := binary.BigEndian.Uint16(buf[14:]); tci != 5<<13|100 {
		t.Errorf("TCI %#04x, want priority 5, VLAN 100", tci)
	}
	payload := buf[c.L4Offset()+UDPHdrLen:]
	for i, b := range payload {
		if want := []byte{0x12, 0x34, 0x56, 0x78}[i%4]; b != want {
			t.Fatalf("payload byte %d is %#02x, want %#02x: % x", i, b, want, payload)
		}
	}
	var s Summary
	if !Parse(buf, &s) || s.VLAN != 100 {
		t.Errorf("parsed %+v", s)
	}
	for _, bad := range []UDPConfig{
		func() UDPConfig { b := c; b.VLANPriority = 8; return b }(),
		func() UDPConfig { b := c; b.VLAN = 0; return b }(),
	} {
		var fe *FieldError
		if err := bad.ValidateUDP(); !errors.As(err, &fe) || fe.Field != "VLANPriority" {
			t.Errorf("VLAN %d priority %d: %v, want a VLANPriority error", bad.VLAN, bad.VLANPriority, err)
		}
	}
}

// TestSwapMACsEveryByte swaps addresses of twelve distinct bytes, in a
// frame of exactly twelve and in a longer one whose other bytes must stay.
func TestSwapMACsEveryByte(t *testing.T) {
	for _, n := range []int{12, 14, 64} {
		f := make([]byte, n)
		for i := range f {
			f[i] = byte(i + 1)
		}
		want := append([]byte(nil), f...)
		copy(want[0:6], f[6:12])
		copy(want[6:12], f[0:6])
		SwapMACs(f)
		if !bytes.Equal(f, want) {
			t.Errorf("%d bytes: got %x, want %x", n, f, want)
		}
	}
}
