package packet_test

// What the builders and Parse of engine/packet are held against: gopacket,
// which the library module does not depend on.

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/testutil/frametest"
)

var (
	macA = frametest.MACA
	macB = frametest.MACB

	eth   = frametest.Eth
	ipv4  = frametest.IPv4
	ipv6  = frametest.IPv6
	ext   = frametest.Ext
	frag6 = frametest.Frag6
	ports = frametest.Ports
	cat   = frametest.Cat
)

// serialize builds the same frame with gopacket, lengths and checksums
// computed by it, as the reference for our builders.
func serialize(t testing.TB, c packet.UDPConfig, l4 gopacket.SerializableLayer, l4proto uint8, payloadLen int) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: c.SrcMAC, DstMAC: c.DstMAC, EthernetType: layers.EthernetTypeIPv4}
	var ls []gopacket.SerializableLayer
	ls = append(ls, eth)
	et := layers.EthernetTypeIPv4
	if c.IPv6() {
		et = layers.EthernetTypeIPv6
	}
	if c.VLAN != 0 {
		eth.EthernetType = layers.EthernetTypeDot1Q
		ls = append(ls, &layers.Dot1Q{VLANIdentifier: c.VLAN, Type: et})
	} else {
		eth.EthernetType = et
	}
	var nl gopacket.NetworkLayer
	if c.IPv6() {
		ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocol(l4proto),
			SrcIP: c.SrcIP.AsSlice(), DstIP: c.DstIP.AsSlice()}
		nl = ip
		ls = append(ls, ip)
	} else {
		ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Flags: layers.IPv4DontFragment,
			Protocol: layers.IPProtocol(l4proto), SrcIP: c.SrcIP.AsSlice(), DstIP: c.DstIP.AsSlice()}
		nl = ip
		ls = append(ls, ip)
	}
	switch l := l4.(type) {
	case *layers.UDP:
		l.SetNetworkLayerForChecksum(nl)
	case *layers.TCP:
		l.SetNetworkLayerForChecksum(nl)
	case *layers.ICMPv6:
		l.SetNetworkLayerForChecksum(nl)
	}
	ls = append(ls, l4, gopacket.Payload(bytes.Repeat([]byte{c.Fill}, payloadLen)))
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestBuildUDPMatchesGopacket(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		for _, vlan := range []uint16{0, 100} {
			for _, size := range []int{66, 64 + 4*3, 128, 1514, 9000, packet.MaxJumboFrameSize} {
				c := udpConfig(v6, vlan, size)
				buf := make([]byte, packet.MaxJumboFrameSize)
				n, err := packet.BuildUDP(buf, c)
				if err != nil {
					t.Fatalf("v6=%v vlan=%d size=%d: %v", v6, vlan, size, err)
				}
				if n != size {
					t.Fatalf("length %d, want %d", n, size)
				}
				want := serialize(t, c, &layers.UDP{SrcPort: 1234, DstPort: 9}, packet.ProtoUDP, size-c.L4Offset()-packet.UDPHdrLen)
				if diff := cmp.Diff(want, buf[:n]); diff != "" {
					t.Errorf("v6=%v vlan=%d size=%d: frame differs from gopacket's (-gopacket +ours):\n%s", v6, vlan, size, diff)
				}
				checkDecodes(t, buf[:n], layers.LayerTypeUDP)
			}
		}
	}
}

func TestBuildTCPAndICMPMatchGopacket(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		c := udpConfig(v6, 0, 100)
		buf := make([]byte, 2048)
		n, err := packet.BuildTCP(buf, c, packet.TCPSyn|packet.TCPAck)
		if err != nil {
			t.Fatal(err)
		}
		tcp := &layers.TCP{SrcPort: 1234, DstPort: 9, Seq: 1, DataOffset: 5, SYN: true, ACK: true, Window: 65535}
		want := serialize(t, c, tcp, packet.ProtoTCP, 100-c.L4Offset()-packet.TCPHdrLen)
		if diff := cmp.Diff(want, buf[:n]); diff != "" {
			t.Errorf("TCP v6=%v differs (-gopacket +ours):\n%s", v6, diff)
		}
		checkDecodes(t, buf[:n], layers.LayerTypeTCP)

		n, err = packet.BuildICMPEcho(buf, c, 7, 42)
		if err != nil {
			t.Fatal(err)
		}
		if !v6 {
			icmp := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(8, 0), Id: 7, Seq: 42}
			want = serialize(t, c, icmp, packet.ProtoICMP, 100-c.L4Offset()-packet.ICMPHdrLen)
			if diff := cmp.Diff(want, buf[:n]); diff != "" {
				t.Errorf("ICMP differs (-gopacket +ours):\n%s", diff)
			}
			checkDecodes(t, buf[:n], layers.LayerTypeICMPv4)
			continue
		}
		p := checkDecodes(t, buf[:n], layers.LayerTypeICMPv6Echo)
		// gopacket does not verify checksums: the sum over the
		// pseudo-header and the whole message must fold to zero.
		src, dst := c.SrcIP.As16(), c.DstIP.As16()
		seg := buf[c.L4Offset():n]
		if got := packet.Fold(packet.Sum(pseudoSum(src[:], dst[:], packet.ProtoICMPv6, len(seg)), seg)); got != 0 {
			t.Errorf("ICMPv6 checksum does not verify: %#04x", got)
		}
		if echo := p.Layer(layers.LayerTypeICMPv6Echo).(*layers.ICMPv6Echo); echo.Identifier != 7 || echo.SeqNumber != 42 {
			t.Errorf("ICMPv6 echo = %+v, want id 7 seq 42", echo)
		}
	}
}

// checkDecodes decodes frame with gopacket, fails on any decoding error and
// checks that the layer l is present.
func checkDecodes(t *testing.T, frame []byte, l gopacket.LayerType) gopacket.Packet {
	t.Helper()
	p := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	if el := p.ErrorLayer(); el != nil {
		t.Fatalf("gopacket: %v", el.Error())
	}
	if p.Layer(l) == nil {
		t.Fatalf("gopacket found no %v layer in %v", l, p)
	}
	if ip, ok := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4); ok {
		if got := packet.Checksum(ip.Contents); got != 0 {
			t.Errorf("IPv4 header checksum does not verify: %#04x", got)
		}
	}
	return p
}

// FuzzParse feeds packet.Parse any bytes and compares what it reports with an
// independent decoder (refParse, on gopacket's layer decoders), and frames
// built by packet.BuildUDP from the fuzzed fields (packet.Parse must return the ports and
// VLAN they were built with).
func FuzzParse(f *testing.F) {
	buf := make([]byte, 2048)
	for _, v6 := range []bool{false, true} {
		n, _ := packet.BuildUDP(buf, udpConfig(v6, 0, 64+24))
		f.Add(append([]byte(nil), buf[:n]...), uint16(1234), uint16(9), uint16(0), uint16(64), v6)
	}
	tcp := ports(80, 443, 20)
	tcp[12], tcp[13] = 0x50, packet.TCPSyn|packet.TCPAck
	for _, frame := range [][]byte{
		cat(eth(packet.EtherTypeIPv6, packet.EtherTypeQinQ, 10, packet.EtherTypeVLAN, 20), ipv6(0), ext(44, 0), frag6(packet.ProtoTCP, 0), make([]byte, 20)),
		cat(eth(packet.EtherTypeIPv4), ipv4(packet.ProtoTCP, 7, 0), tcp),
		cat(eth(packet.EtherTypeIPv4, packet.EtherTypeVLAN, 5), ipv4(packet.ProtoICMP, 5, 0), []byte{3, 1, 0, 0}),
		cat(eth(packet.EtherTypeIPv4), ipv4(packet.ProtoUDP, 5, 0x0020), ports(1, 2, 8)),
		cat(eth(packet.EtherTypeIPv6), ipv6(51), ext(packet.ProtoTCP, 1)[:12], tcp),
		cat(eth(packet.EtherTypeIPv6), ipv6(43), ext(60, 2), ext(packet.ProtoICMPv6, 0), []byte{128, 0, 0, 0}),
		// Exactly maxExtHeaders extension headers, then UDP; and one more.
		cat(eth(packet.EtherTypeIPv6), ipv6(0), ext(60, 0), ext(43, 0), ext(60, 0), ext(packet.ProtoUDP, 0), ports(3, 4, 8)),
		cat(eth(packet.EtherTypeIPv6), ipv6(0), ext(60, 0), ext(43, 0), ext(60, 0), ext(60, 0), ext(packet.ProtoUDP, 0), ports(3, 4, 8)),
		// An extension header longer than the frame, then no next header.
		cat(eth(packet.EtherTypeIPv6), ipv6(60), []byte{59, 200}, make([]byte, 30)),
		cat(eth(packet.EtherTypeIPv4, packet.EtherTypeQinQ, 1, packet.EtherTypeVLAN, 2, packet.EtherTypeVLAN, 3), ipv4(packet.ProtoUDP, 5, 0)),
		cat(eth(0x05dc), make([]byte, 46)), // an 802.3 length, not an EtherType
	} {
		f.Add(frame, uint16(0), uint16(0), uint16(0), uint16(0), false)
	}
	f.Fuzz(func(t *testing.T, frame []byte, sport, dport, vlan, size uint16, v6 bool) {
		var s packet.Summary
		ok := packet.Parse(frame, &s)
		want, wantOK := refParse(frame)
		switch {
		case ok != wantOK:
			t.Fatalf("packet.Parse = %v (%+v), the reference decoder says %v (%+v), frame % x", ok, s, wantOK, want, frame)
		case ok && s != want:
			t.Fatalf("packet.Parse = %+v, the reference decoder %+v, frame % x", s, want, frame)
		case !ok && (s.EtherType != want.EtherType || s.VLAN != want.VLAN || s.InnerVLAN != want.InnerVLAN || s.Tags != want.Tags):
			// A truncated frame: what was decoded before the cut.
			t.Fatalf("truncated: packet.Parse = %+v, the reference decoder %+v, frame % x", s, want, frame)
		}
		if ok && (int(s.L3Off) > len(frame) || int(s.L4Off) > len(frame)) {
			t.Fatalf("offsets past the frame: %+v, len %d", s, len(frame))
		}
		c := udpConfig(v6, vlan%4095, int(size))
		c.SrcPort, c.DstPort = sport, dport
		n, err := packet.BuildUDP(buf, c)
		if err != nil {
			return // out-of-range size: validation is tested elsewhere
		}
		if !packet.Parse(buf[:n], &s) || s.SrcPort != sport || s.DstPort != dport || s.VLAN != c.VLAN || s.Proto != packet.ProtoUDP {
			t.Fatalf("built %+v, parsed %+v", c, s)
		}
	})
}

func udpConfig(v6 bool, vlan uint16, size int) packet.UDPConfig {
	c := packet.UDPConfig{
		SrcMAC: macA, DstMAC: macB,
		SrcIP: netip.MustParseAddr("198.18.0.1"), DstIP: netip.MustParseAddr("198.18.0.2"),
		SrcPort: 1234, DstPort: 9, VLAN: vlan, Size: size, Fill: 0xa5,
	}
	if v6 {
		c.SrcIP, c.DstIP = netip.MustParseAddr("2001:2::1"), netip.MustParseAddr("2001:2::2")
	}
	return c
}

// pseudoSum is the one's-complement sum of an IPv6 pseudo-header (RFC 8200
// 8.1), unfolded.
func pseudoSum(src, dst []byte, proto uint8, length int) uint64 {
	return packet.Sum(packet.Sum(0, src), dst) + uint64(proto) + uint64(length)
}
