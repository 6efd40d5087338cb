//go:build linux

package engine_test

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xdpeng/xdpeng/engine/handler"
	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
)

// TestCountExact sends a known mix into the DUT, UDP to three ports from
// the generator and TCP, ICMP and non-IP frames injected through an
// AF_PACKET socket, and checks count's numbers to the frame.
func TestCountExact(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	const perPort = 10_000
	base := packet.UDPConfig{
		SrcMAC: l.GenMAC, DstMAC: l.DUTMAC,
		SrcIP: netip.MustParseAddr(l.GenIP.String()), DstIP: netip.MustParseAddr(l.DUTIP.String()),
		SrcPort: 1234, DstPort: 9, Size: 64,
	}
	build := func(n int, mod func(*packet.UDPConfig), b func([]byte, packet.UDPConfig) (int, error)) [][]byte {
		c := base
		mod(&c)
		f := make([]byte, c.Size)
		if _, err := b(f, c); err != nil {
			t.Fatal(err)
		}
		out := make([][]byte, n)
		for i := range out {
			out[i] = f
		}
		return out
	}
	syn := func(f []byte, c packet.UDPConfig) (int, error) { return packet.BuildTCP(f, c, packet.TCPSyn) }
	echo := func(f []byte, c packet.UDPConfig) (int, error) { return packet.BuildICMPEcho(f, c, 1, 1) }
	v6 := func(c *packet.UDPConfig) {
		c.SrcIP, c.DstIP, c.Size = netip.MustParseAddr("2001:2::1"), netip.MustParseAddr("2001:2::2"), 80
	}
	var injected [][]byte
	injected = append(injected, build(300, func(c *packet.UDPConfig) { c.DstPort = 80 }, syn)...)
	injected = append(injected, build(200, func(c *packet.UDPConfig) { v6(c); c.DstPort = 443 }, syn)...)
	injected = append(injected, build(100, func(*packet.UDPConfig) {}, echo)...)
	injected = append(injected, build(40, v6, echo)...)
	injected = append(injected, build(70, func(c *packet.UDPConfig) { c.VLAN = 7; c.DstPort = 53; c.Size = 68 }, packet.BuildUDP)...)
	// A local experimental EtherType: not IP, and nothing on the bed
	// answers it.
	raw := make([]byte, 60)
	copy(raw, l.DUTMAC)
	copy(raw[6:], l.GenMAC)
	binary.BigEndian.PutUint16(raw[12:], 0x88b5)
	for range 50 {
		injected = append(injected, raw)
	}

	var g handler.CountGroup
	cfg := rxdropConfig(bed)
	cfg.Handler = g.Handler
	// Exact counts need every frame received: rings deep enough to ride
	// out the worker losing its CPU for a while (~160 ms at this rate) on
	// a machine busy with other tests.
	cfg.FillSize, cfg.RxSize = 8192, 8192
	r := start(t, bed, cfg)
	st := send(t, bed, 0, gen.Config{Frame: base, Ports: 3, Count: 3 * perPort, Rate: 50_000, Threads: 1})
	if st.Sent != 3*perPort {
		t.Fatalf("generator sent %d, want %d", st.Sent, 3*perPort)
	}
	openPacketSocket(t, bed, 0).send(t, injected...)
	total := uint64(3*perPort + len(injected))
	s := r.finish(total)
	tot := s.Total()
	if tot.RxPackets != total || tot.XDP.Drops() != 0 {
		t.Fatalf("received %d frames, want exactly %d (xdp stats %+v)", tot.RxPackets, total, tot.XDP)
	}

	want := handler.CountStats{
		Frames:     total,
		ByProtocol: map[uint8]uint64{packet.ProtoUDP: 3*perPort + 70, packet.ProtoTCP: 500, packet.ProtoICMP: 100, packet.ProtoICMPv6: 40},
		NonIP:      50,
		ByPort: map[handler.PortKey]uint64{
			{Proto: packet.ProtoUDP, Port: 9}: perPort, {Proto: packet.ProtoUDP, Port: 10}: perPort, {Proto: packet.ProtoUDP, Port: 11}: perPort,
			{Proto: packet.ProtoUDP, Port: 53}: 70, {Proto: packet.ProtoTCP, Port: 80}: 300, {Proto: packet.ProtoTCP, Port: 443}: 200,
		},
		ByEtherType: map[uint16]uint64{0x88b5: 50},
	}
	if diff := cmp.Diff(want, g.Stats()); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}
