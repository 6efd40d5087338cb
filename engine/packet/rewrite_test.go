package packet

import (
	"bytes"
	"net"
	"net/netip"
	"testing"
)

func testFrame(t testing.TB, v6 bool, vlan uint16) []byte {
	t.Helper()
	c := UDPConfig{
		SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2},
		SrcIP: netip.MustParseAddr("198.18.0.1"), DstIP: netip.MustParseAddr("198.18.0.2"),
		SrcPort: 1234, DstPort: 9, VLAN: vlan, Size: 64,
	}
	if v6 {
		c.SrcIP, c.DstIP, c.Size = netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2"), 90
	}
	if vlan != 0 {
		c.Size += VLANTagLen
	}
	f := make([]byte, c.Size)
	if _, err := BuildUDP(f, c); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestDecTTL(t *testing.T) {
	for _, tc := range []struct {
		name string
		v6   bool
		vlan uint16
	}{{"IPv4", false, 0}, {"IPv4 VLAN", false, 7}, {"IPv6", true, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			f := testFrame(t, tc.v6, tc.vlan)
			var s Summary
			if !Parse(f, &s) {
				t.Fatal("parse")
			}
			ttl := int(s.L3Off) + 8 // IPv4 TTL
			if tc.v6 {
				ttl = int(s.L3Off) + 7 // IPv6 hop limit
			}
			f[ttl] = 3
			if !tc.v6 {
				fixIPv4Checksum(f[s.L3Off:])
			}
			for want := byte(2); want >= 1; want-- {
				if !DecTTL(f, &s) || f[ttl] != want {
					t.Fatalf("TTL %d after DecTTL, want %d", f[ttl], want)
				}
				if !tc.v6 && Checksum(f[s.L3Off:int(s.L3Off)+IPv4HdrLen]) != 0 {
					t.Fatalf("IPv4 header checksum wrong after DecTTL to %d", want)
				}
			}
			before := append([]byte(nil), f...)
			if DecTTL(f, &s) || !bytes.Equal(f, before) {
				t.Fatal("DecTTL at TTL 1 changed the frame or reported success")
			}
		})
	}
	arp := make([]byte, 60)
	arp[12], arp[13] = 0x08, 0x06
	var s Summary
	Parse(arp, &s)
	if DecTTL(arp, &s) {
		t.Error("DecTTL on ARP reported success")
	}
}

func fixIPv4Checksum(ip []byte) {
	ip[10], ip[11] = 0, 0
	c := Checksum(ip[:IPv4HdrLen])
	ip[10], ip[11] = byte(c>>8), byte(c)
}

// TestVLANPushPop pushes a tag onto an untagged frame and pops it again:
// the tagged frame is byte for byte the one BuildUDP makes with that tag,
// and popping it gives back the untagged frame.
func TestVLANPushPop(t *testing.T) {
	plain := testFrame(t, false, 0)
	tagged := testFrame(t, false, 42)
	// The room a Batch.AdjustHead(i, -VLANTagLen) makes in front.
	buf := append(make([]byte, VLANTagLen), plain...)
	if !PushVLAN(buf, 42) {
		t.Fatal("PushVLAN refused")
	}
	// BuildUDP's tagged frame is 4 bytes longer; its tail is padding.
	if !bytes.Equal(buf, tagged[:len(buf)]) {
		t.Fatalf("pushed\n %x\nwant\n %x", buf, tagged[:len(buf)])
	}
	tci, ok := PopVLAN(buf)
	if !ok || tci != 42 || !bytes.Equal(buf[VLANTagLen:], plain) {
		t.Fatalf("popped tci %d ok %v:\n %x\nwant\n %x", tci, ok, buf[VLANTagLen:], plain)
	}
	if _, ok := PopVLAN(plain); ok {
		t.Error("PopVLAN found a tag on an untagged frame")
	}
	if PushVLAN(make([]byte, 10), 1) {
		t.Error("PushVLAN took a frame too short for the MACs")
	}
}

func BenchmarkDecTTL(b *testing.B) {
	f := testFrame(b, false, 0)
	var s Summary
	Parse(f, &s)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		f[s.L3Off+8] = 64
		DecTTL(f, &s)
	}
}

func BenchmarkVLANPushPop(b *testing.B) {
	buf := append(make([]byte, VLANTagLen), testFrame(b, false, 0)...)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		PushVLAN(buf, 42)
		PopVLAN(buf)
	}
}
