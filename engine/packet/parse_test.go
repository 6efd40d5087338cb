package packet

import (
	"testing"

	"github.com/xdpeng/xdpeng/internal/testutil/difftest"
	"github.com/xdpeng/xdpeng/internal/testutil/frametest"
)

// Raw frame pieces (frametest), under short names.
var (
	eth   = frametest.Eth
	ipv4  = frametest.IPv4
	ipv6  = frametest.IPv6
	ext   = frametest.Ext
	frag6 = frametest.Frag6
	ports = frametest.Ports
	cat   = frametest.Cat
)

func TestParse(t *testing.T) {
	tcp := ports(80, 443, 20)
	tcp[13] = TCPSyn
	icmp := []byte{8, 0, 0, 0, 0, 1, 0, 1}
	icmp6 := []byte{128, 0, 0, 0, 0, 1, 0, 1}
	payload := make([]byte, 10)

	for _, tc := range []struct {
		name  string
		frame []byte
		// end is where the last header Parse needs ends: every shorter
		// prefix must report false, every longer one true.
		end  int
		want Summary
	}{
		{
			name:  "IPv4 UDP",
			frame: cat(eth(EtherTypeIPv4), ipv4(ProtoUDP, 5, 0x4000), ports(1234, 9, 8), payload),
			end:   42,
			want:  Summary{EtherType: EtherTypeIPv4, L3: 4, Proto: ProtoUDP, L3Off: 14, L4Off: 34, SrcPort: 1234, DstPort: 9},
		},
		{
			name:  "IPv4 options TCP",
			frame: cat(eth(EtherTypeIPv4), ipv4(ProtoTCP, 7, 0), tcp, payload),
			end:   14 + 28 + 20,
			want: Summary{EtherType: EtherTypeIPv4, L3: 4, Proto: ProtoTCP, L3Off: 14, L4Off: 42,
				SrcPort: 80, DstPort: 443, TCPFlags: TCPSyn},
		},
		{
			name:  "IPv4 first fragment",
			frame: cat(eth(EtherTypeIPv4), ipv4(ProtoUDP, 5, 0x2000), ports(1, 2, 8)),
			end:   42,
			want:  Summary{EtherType: EtherTypeIPv4, L3: 4, Proto: ProtoUDP, L3Off: 14, L4Off: 34, SrcPort: 1, DstPort: 2},
		},
		{
			name:  "IPv4 later fragment",
			frame: cat(eth(EtherTypeIPv4), ipv4(ProtoUDP, 5, 0x0010), payload),
			end:   34,
			want:  Summary{EtherType: EtherTypeIPv4, L3: 4, Proto: ProtoUDP, L3Off: 14, Fragment: true},
		},
		{
			name:  "VLAN IPv4 ICMP",
			frame: cat(eth(EtherTypeIPv4, EtherTypeVLAN, 0x2000|100), ipv4(ProtoICMP, 5, 0), icmp),
			end:   18 + 20 + 4,
			want: Summary{EtherType: EtherTypeIPv4, VLAN: 100, Tags: 1, L3: 4, Proto: ProtoICMP,
				L3Off: 18, L4Off: 38, ICMPType: 8},
		},
		{
			name:  "QinQ IPv6 UDP",
			frame: cat(eth(EtherTypeIPv6, EtherTypeQinQ, 10, EtherTypeVLAN, 20), ipv6(ProtoUDP), ports(5, 6, 8)),
			end:   22 + 40 + 8,
			want: Summary{EtherType: EtherTypeIPv6, VLAN: 10, InnerVLAN: 20, Tags: 2, L3: 6, Proto: ProtoUDP,
				L3Off: 22, L4Off: 62, SrcPort: 5, DstPort: 6},
		},
		{
			name:  "three tags",
			frame: cat(eth(EtherTypeIPv4, EtherTypeQinQ, 1, EtherTypeVLAN, 2, EtherTypeVLAN, 3), ipv4(ProtoUDP, 5, 0)),
			end:   22,
			want:  Summary{EtherType: EtherTypeVLAN, VLAN: 1, InnerVLAN: 2, Tags: 2},
		},
		{
			name:  "IPv6 hop-by-hop, dest opts, UDP",
			frame: cat(eth(EtherTypeIPv6), ipv6(0), ext(60, 0), ext(ProtoUDP, 1), ports(7, 8, 8), payload),
			end:   14 + 40 + 8 + 16 + 8,
			want:  Summary{EtherType: EtherTypeIPv6, L3: 6, Proto: ProtoUDP, L3Off: 14, L4Off: 78, SrcPort: 7, DstPort: 8},
		},
		{
			name:  "IPv6 four extension headers, UDP",
			frame: cat(eth(EtherTypeIPv6), ipv6(0), ext(60, 0), ext(43, 0), ext(60, 0), ext(ProtoUDP, 0), ports(3, 4, 8)),
			end:   14 + 40 + 4*8 + 8,
			want:  Summary{EtherType: EtherTypeIPv6, L3: 6, Proto: ProtoUDP, L3Off: 14, L4Off: 86, SrcPort: 3, DstPort: 4},
		},
		{
			name:  "IPv6 five extension headers: not read further",
			frame: cat(eth(EtherTypeIPv6), ipv6(0), ext(60, 0), ext(43, 0), ext(60, 0), ext(60, 0), ext(ProtoUDP, 0), ports(3, 4, 8)),
			end:   14 + 40 + 4*8,
			want:  Summary{EtherType: EtherTypeIPv6, L3: 6, Proto: 60, L3Off: 14},
		},
		{
			name:  "IPv6 AH TCP",
			frame: cat(eth(EtherTypeIPv6), ipv6(51), ext(ProtoTCP, 1)[:12], tcp),
			end:   14 + 40 + 12 + 20,
			want: Summary{EtherType: EtherTypeIPv6, L3: 6, Proto: ProtoTCP, L3Off: 14, L4Off: 66,
				SrcPort: 80, DstPort: 443, TCPFlags: TCPSyn},
		},
		{
			name:  "IPv6 first fragment UDP",
			frame: cat(eth(EtherTypeIPv6), ipv6(44), frag6(ProtoUDP, 0), ports(9, 10, 8)),
			end:   14 + 40 + 8 + 8,
			want:  Summary{EtherType: EtherTypeIPv6, L3: 6, Proto: ProtoUDP, L3Off: 14, L4Off: 62, SrcPort: 9, DstPort: 10},
		},
		{
			name:  "IPv6 later fragment",
			frame: cat(eth(EtherTypeIPv6), ipv6(44), frag6(ProtoUDP, 100), payload),
			end:   14 + 40 + 8,
			want:  Summary{EtherType: EtherTypeIPv6, L3: 6, Proto: ProtoUDP, L3Off: 14, Fragment: true},
		},
		{
			name:  "ICMPv6",
			frame: cat(eth(EtherTypeIPv6), ipv6(ProtoICMPv6), icmp6),
			end:   14 + 40 + 4,
			want:  Summary{EtherType: EtherTypeIPv6, L3: 6, Proto: ProtoICMPv6, L3Off: 14, L4Off: 54, ICMPType: 128},
		},
		{
			name:  "IPv4 GRE (unknown protocol)",
			frame: cat(eth(EtherTypeIPv4), ipv4(47, 5, 0), payload),
			end:   34,
			want:  Summary{EtherType: EtherTypeIPv4, L3: 4, Proto: 47, L3Off: 14},
		},
		{
			name:  "ARP",
			frame: cat(eth(0x0806), make([]byte, 28)),
			end:   14,
			want:  Summary{EtherType: 0x0806},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Summary
			if !Parse(tc.frame, &s) {
				t.Fatalf("Parse(full frame) = false, summary %+v", s)
			}
			if diff := difftest.Diff(tc.want, s); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
			for n := 0; n <= len(tc.frame); n++ {
				// A copy of exactly n bytes, so reading past it would
				// show up in the race detector and the fuzzer as well.
				prefix := append([]byte(nil), tc.frame[:n]...)
				ok := Parse(prefix, &s)
				if want := n >= tc.end; ok != want {
					t.Errorf("Parse(first %d of %d bytes) = %v, want %v (%+v)", n, len(tc.frame), ok, want, s)
				}
				if ok {
					if diff := difftest.Diff(tc.want, s); diff != "" {
						t.Errorf("first %d bytes: summary (-want +got):\n%s", n, diff)
					}
				}
			}
		})
	}
}

func TestParseBadVersions(t *testing.T) {
	var s Summary
	bad4 := cat(eth(EtherTypeIPv4), ipv4(ProtoUDP, 5, 0), ports(1, 2, 8))
	bad4[14] = 0x65 // version 6 in an IPv4 frame
	if Parse(bad4, &s) {
		t.Errorf("IPv4 ethertype with version 6: Parse = true")
	}
	ihl := cat(eth(EtherTypeIPv4), ipv4(ProtoUDP, 5, 0), ports(1, 2, 8))
	ihl[14] = 0x44 // IHL 4 < 5
	if Parse(ihl, &s) {
		t.Errorf("IHL 4: Parse = true")
	}
	bad6 := cat(eth(EtherTypeIPv6), ipv6(ProtoUDP), ports(1, 2, 8))
	bad6[14] = 0x40
	if Parse(bad6, &s) {
		t.Errorf("IPv6 ethertype with version 4: Parse = true")
	}
}

// TestParseIncompleteExtensionHeader: an IPv6 extension header whose
// length runs past the frame, or an AH shorter than its 12-byte fixed part,
// is not complete, whatever follows it.
func TestParseIncompleteExtensionHeader(t *testing.T) {
	var s Summary
	for _, tc := range []struct {
		name  string
		frame []byte
	}{
		{"destination options of 1608 bytes, no next header", cat(eth(EtherTypeIPv6), ipv6(60), []byte{59, 200}, make([]byte, 30))},
		{"routing header of 16 bytes in 8", cat(eth(EtherTypeIPv6), ipv6(43), []byte{59, 1}, make([]byte, 6))},
		{"AH of 8 bytes", cat(eth(EtherTypeIPv6), ipv6(51), []byte{59, 0}, make([]byte, 20))},
	} {
		if Parse(tc.frame, &s) {
			t.Errorf("%s: Parse = true (%+v), want false", tc.name, s)
		}
	}
}

func TestParseBuiltFrames(t *testing.T) {
	buf := make([]byte, 2048)
	for _, v6 := range []bool{false, true} {
		for _, vlan := range []uint16{0, 33} {
			c := udpConfig(v6, vlan, 128)
			n, err := BuildUDP(buf, c)
			if err != nil {
				t.Fatal(err)
			}
			var s Summary
			if !Parse(buf[:n], &s) || s.SrcPort != c.SrcPort || s.DstPort != c.DstPort || s.VLAN != vlan || int(s.L4Off) != c.L4Offset() {
				t.Errorf("v6=%v vlan=%d: Parse = %+v", v6, vlan, s)
			}
		}
	}
}

func TestZeroAllocs(t *testing.T) {
	c := udpConfig(true, 10, 64+4+4)
	buf := make([]byte, 2048)
	var s Summary
	allocs := testing.AllocsPerRun(100, func() {
		n, _ := BuildUDP(buf, c)
		Parse(buf[:n], &s)
		SwapMACs(buf)
	})
	if allocs != 0 {
		t.Errorf("BuildUDP+Parse+SwapMACs allocate %v times per run, want 0", allocs)
	}
}

func BenchmarkParse(b *testing.B) {
	for _, bc := range []struct {
		name string
		c    UDPConfig
	}{
		{"IPv4-UDP", udpConfig(false, 0, 64)},
		{"VLAN-IPv6-UDP", udpConfig(true, 7, 128)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			buf := make([]byte, 2048)
			n, err := BuildUDP(buf, bc.c)
			if err != nil {
				b.Fatal(err)
			}
			frame := buf[:n]
			var s Summary
			b.ReportAllocs()
			for b.Loop() {
				Parse(frame, &s)
			}
		})
	}
}

func BenchmarkBuildUDP(b *testing.B) {
	buf := make([]byte, 2048)
	c := udpConfig(false, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := BuildUDP(buf, c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSwapMACs(b *testing.B) {
	frame := make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		SwapMACs(frame)
	}
}
