package stamp

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/testutil/frametest"
)

func udpConfig(v6 bool, vlan uint16, size int) packet.UDPConfig {
	c := packet.UDPConfig{
		SrcMAC: frametest.MACA, DstMAC: frametest.MACB,
		SrcIP: netip.MustParseAddr("198.18.0.1"), DstIP: netip.MustParseAddr("198.18.0.2"),
		SrcPort: 1234, DstPort: 9, VLAN: vlan, Size: size, Fill: 0xa5,
	}
	if v6 {
		c.SrcIP, c.DstIP = netip.MustParseAddr("2001:2::1"), netip.MustParseAddr("2001:2::2")
	}
	return c
}

func TestBuildUDPTooSmall(t *testing.T) {
	c := udpConfig(true, 0, 64) // IPv6: 62 bytes of headers
	_, err := BuildUDP(make([]byte, 128), c, Stamp{})
	var fe *packet.FieldError
	if !errors.As(err, &fe) || fe.Field != "Size" {
		t.Fatalf("err = %v, want a FieldError on Size", err)
	}
	if want := "at least 82 bytes"; !bytes.Contains([]byte(err.Error()), []byte(want)) {
		t.Errorf("err = %v, want it to say %q", err, want)
	}
}

func TestReadRefuses(t *testing.T) {
	b := make([]byte, Len)
	Put(b, Stamp{RunID: 1, Seq: 2, TimeNS: 3})
	if s, ok := Read(b); !ok || s != (Stamp{1, 2, 3}) {
		t.Fatalf("Read = %+v, %v", s, ok)
	}
	if _, ok := Read(b[:Len-1]); ok {
		t.Error("Read of a short buffer: ok")
	}
	b[0] ^= 1
	if _, ok := Read(b); ok {
		t.Error("Read without the magic: ok")
	}
	// A frame that is not UDP has no stamp, whatever its bytes.
	c := udpConfig(false, 0, 128)
	f := make([]byte, 128)
	if _, err := packet.BuildTCP(f, c, packet.TCPAck); err != nil {
		t.Fatal(err)
	}
	Put(f[Offset(&c):], Stamp{})
	if _, ok := Find(f); ok {
		t.Error("Find found a stamp in a TCP frame")
	}
}

func TestBuildUDPMatchesGopacket(t *testing.T) {
	s := Stamp{RunID: 0xdeadbeef, Seq: 0x01020304, TimeNS: 0x1122334455667788}
	want := []byte{0x78, 0x64, 0x6c, 0x74, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88}
	for _, v6 := range []bool{false, true} {
		for _, vlan := range []uint16{0, 100} {
			c := udpConfig(v6, vlan, 0)
			off := Offset(&c)
			for _, size := range []int{max(packet.MinFrameSize, off+Len), off + Len + 1, 1514} {
				c.Size = size
				buf := make([]byte, 2048)
				n, err := BuildUDP(buf, c, s)
				if err != nil {
					t.Fatalf("v6=%v vlan=%d size=%d: %v", v6, vlan, size, err)
				}
				payload := append(append([]byte{}, want...), bytes.Repeat([]byte{c.Fill}, size-off-Len)...)
				ref := serializePayload(t, c, payload)
				if diff := cmp.Diff(ref, buf[:n]); diff != "" {
					t.Errorf("v6=%v vlan=%d size=%d: differs from gopacket's (-gopacket +ours):\n%s", v6, vlan, size, diff)
				}
				got, ok := Find(buf[:n])
				if !ok || got != s {
					t.Errorf("v6=%v vlan=%d size=%d: Find = %+v, %v", v6, vlan, size, got, ok)
				}
			}
		}
	}
}

// serializePayload is serialize with an arbitrary UDP payload.
func serializePayload(t *testing.T, c packet.UDPConfig, payload []byte) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: c.SrcMAC, DstMAC: c.DstMAC}
	ls := []gopacket.SerializableLayer{eth}
	et := layers.EthernetTypeIPv4
	if c.IPv6() {
		et = layers.EthernetTypeIPv6
	}
	eth.EthernetType = et
	if c.VLAN != 0 {
		eth.EthernetType = layers.EthernetTypeDot1Q
		ls = append(ls, &layers.Dot1Q{VLANIdentifier: c.VLAN, Type: et})
	}
	udp := &layers.UDP{SrcPort: layers.UDPPort(c.SrcPort), DstPort: layers.UDPPort(c.DstPort)}
	if c.IPv6() {
		ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP, SrcIP: c.SrcIP.AsSlice(), DstIP: c.DstIP.AsSlice()}
		udp.SetNetworkLayerForChecksum(ip)
		ls = append(ls, ip)
	} else {
		ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Flags: layers.IPv4DontFragment, Protocol: layers.IPProtocolUDP,
			SrcIP: c.SrcIP.AsSlice(), DstIP: c.DstIP.AsSlice()}
		udp.SetNetworkLayerForChecksum(ip)
		ls = append(ls, ip)
	}
	ls = append(ls, udp, gopacket.Payload(payload))
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
