package handler

import (
	"encoding/binary"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/xdpeng/xdpeng/internal/testutil/difftest"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/packet"
)

var (
	cntSrcMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 1}
	cntDstMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 2}
)

// cntFrame builds a 64-byte (68 with a VLAN tag) frame with build.
func cntFrame(t testing.TB, v6 bool, vlan uint16, dport uint16, build func([]byte, packet.UDPConfig) (int, error)) []byte {
	t.Helper()
	c := packet.UDPConfig{
		SrcMAC: cntSrcMAC, DstMAC: cntDstMAC,
		SrcIP: netip.MustParseAddr("198.18.0.1"), DstIP: netip.MustParseAddr("198.18.0.2"),
		SrcPort: 1234, DstPort: dport, VLAN: vlan, Size: 64,
	}
	if v6 {
		c.SrcIP, c.DstIP, c.Size = netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2"), 90
	}
	if vlan != 0 {
		c.Size += packet.VLANTagLen
	}
	f := make([]byte, c.Size)
	if _, err := build(f, c); err != nil {
		t.Fatal(err)
	}
	return f
}

func cntUDP(t testing.TB, v6 bool, vlan, dport uint16) []byte {
	return cntFrame(t, v6, vlan, dport, packet.BuildUDP)
}

func cntTCP(t testing.TB, v6 bool, dport uint16) []byte {
	return cntFrame(t, v6, 0, dport, func(b []byte, c packet.UDPConfig) (int, error) { return packet.BuildTCP(b, c, packet.TCPSyn) })
}

func cntICMP(t testing.TB, v6 bool) []byte {
	return cntFrame(t, v6, 0, 0, func(b []byte, c packet.UDPConfig) (int, error) { return packet.BuildICMPEcho(b, c, 1, 1) })
}

// cntRawEth is a 60-byte frame of the given EtherType with a zero payload.
func cntRawEth(et uint16) []byte {
	f := make([]byte, 60)
	copy(f, cntDstMAC)
	copy(f[6:], cntSrcMAC)
	binary.BigEndian.PutUint16(f[12:], et)
	return f
}

func cntRepeat(n int, f []byte) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = f
	}
	return out
}

func TestCountMix(t *testing.T) {
	frag := cntUDP(t, false, 0, 7)
	binary.BigEndian.PutUint16(frag[14+6:], 0x0010) // fragment offset 16*8: no UDP header
	gre := cntUDP(t, false, 0, 7)
	gre[14+9] = 47
	var frames [][]byte
	for _, part := range [][][]byte{
		cntRepeat(100, cntUDP(t, false, 0, 9)),
		cntRepeat(50, cntUDP(t, true, 0, 9)),    // IPv6 counts under the same port
		cntRepeat(30, cntUDP(t, false, 10, 53)), // VLAN-tagged
		cntRepeat(20, cntTCP(t, false, 80)),
		cntRepeat(5, cntTCP(t, true, 443)),
		cntRepeat(7, cntICMP(t, false)),
		cntRepeat(3, cntICMP(t, true)),
		cntRepeat(4, cntRawEth(0x0806)),
		cntRepeat(2, cntRawEth(0x88b5)),
		cntRepeat(6, frag),
		cntRepeat(1, gre),
		cntRepeat(2, cntUDP(t, false, 0, 9)[:40]), // cut inside the UDP header
		cntRepeat(1, make([]byte, 10)),            // not even Ethernet
	} {
		frames = append(frames, part...)
	}
	h := NewCount()
	res, err := engine.Simulate(h, frames)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.RxPackets != uint64(len(frames)) || res.Stats.Dropped != uint64(len(frames)) || len(res.Sent()) != 0 {
		t.Errorf("count must drop every frame: %+v", res.Stats)
	}
	want := CountStats{
		Frames: uint64(len(frames)),
		ByProtocol: map[uint8]uint64{
			packet.ProtoUDP: 100 + 50 + 30 + 6 + 2, packet.ProtoTCP: 25, packet.ProtoICMP: 7, packet.ProtoICMPv6: 3, 47: 1,
		},
		NonIP: 4 + 2 + 1,
		ByPort: map[PortKey]uint64{
			{packet.ProtoUDP, 9}: 150, {packet.ProtoUDP, 53}: 30, {packet.ProtoTCP, 80}: 20, {packet.ProtoTCP, 443}: 5,
		},
		ByEtherType: map[uint16]uint64{0x0806: 4, 0x88b5: 2, 0x0000: 1},
		Malformed:   2 + 1,
	}
	if diff := difftest.Diff(want, h.Stats()); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

func TestCountEtherTypeOverflow(t *testing.T) {
	var frames [][]byte
	for et := uint16(0x9000); et < 0x9000+maxEtherTypes+3; et++ {
		frames = append(frames, cntRawEth(et), cntRawEth(et))
	}
	h := NewCount()
	if _, err := engine.Simulate(h, frames); err != nil {
		t.Fatal(err)
	}
	s := h.Stats()
	if len(s.ByEtherType) != maxEtherTypes || s.OtherEtherTypes != 6 || s.ByEtherType[0x9000] != 2 {
		t.Errorf("by EtherType: %v, other %d", s.ByEtherType, s.OtherEtherTypes)
	}
	if s.NonIP != uint64(len(frames)) || len(s.ByProtocol) != 0 || s.Frames != uint64(len(frames)) {
		t.Errorf("by protocol: %v, not IP %d, frames %d", s.ByProtocol, s.NonIP, s.Frames)
	}
}

func TestCountGroupSums(t *testing.T) {
	var g CountGroup
	a, b := g.Handler(0), g.Handler(1)
	if _, err := engine.Simulate(a, cntRepeat(3, cntUDP(t, false, 0, 9))); err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Simulate(b, append(cntRepeat(2, cntUDP(t, false, 0, 9)), cntTCP(t, false, 22))); err != nil {
		t.Fatal(err)
	}
	want := CountStats{
		Frames:      6,
		ByProtocol:  map[uint8]uint64{packet.ProtoUDP: 5, packet.ProtoTCP: 1},
		ByPort:      map[PortKey]uint64{{packet.ProtoUDP, 9}: 5, {packet.ProtoTCP, 22}: 1},
		ByEtherType: map[uint16]uint64{},
	}
	if diff := difftest.Diff(want, g.Stats()); diff != "" {
		t.Errorf("group (-want +got):\n%s", diff)
	}
}

func TestPortKeyString(t *testing.T) {
	for k, want := range map[PortKey]string{{packet.ProtoUDP, 53}: "udp/53", {packet.ProtoTCP, 443}: "tcp/443", {132, 9}: "ip/132/9"} {
		if got := k.String(); got != want {
			t.Errorf("%+v.String() = %q, want %q", k, got, want)
		}
	}
}

// TestCountConcurrentRead reads the counters while a worker counts, as the
// CLI's interval output does: the race detector checks the publishing, and
// the counts read must never go back, and end exact. (Counters are
// published one by one, so a reader may see one batch ahead of another.)
func TestCountConcurrentRead(t *testing.T) {
	h := NewCount()
	frame := cntUDP(t, false, 0, 9)
	l, err := engine.Sim{}.NewLoop(h, [][]byte{frame})
	if err != nil {
		t.Fatal(err)
	}
	const batches = 2000
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var last uint64
		for !done.Load() {
			s := h.Stats()
			if s.ByPort[PortKey{packet.ProtoUDP, 9}] < last {
				t.Errorf("count went back: %v after %d", s, last)
				return
			}
			last = s.ByPort[PortKey{packet.ProtoUDP, 9}]
		}
	}()
	for i := 0; i < batches; i++ {
		l.Step()
	}
	done.Store(true)
	wg.Wait()
	if s := h.Stats(); s.ByPort[PortKey{packet.ProtoUDP, 9}] != 64*batches || s.Frames != 64*batches {
		t.Errorf("after %d batches of 64: %v", batches, s)
	}
}

func TestCountZeroAllocs(t *testing.T) {
	h := NewCount()
	frames := [][]byte{cntUDP(t, false, 0, 9), cntTCP(t, false, 80), cntRawEth(0x0806), cntUDP(t, true, 10, 53)}
	l, err := engine.Sim{}.NewLoop(h, frames)
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() { l.Step() })
	if allocs != 0 {
		t.Errorf("%v allocations per batch, want 0", allocs)
	}
}

// BenchmarkCountMix is count mode on batches that mix UDP ports, TCP,
// IPv6, VLAN tags and ARP, so that the published counters change from
// frame to frame. UMEM frame i holds mix[i % 8] from the start (no copy per
// frame); which frames a batch gets follows the fill ring, a mix of all.
// Every descriptor has the longest frame's length; Parse reads the headers.
func BenchmarkCountMix(b *testing.B) {
	h := NewCount()
	mix := [][]byte{cntUDP(b, false, 0, 9), cntUDP(b, false, 0, 10), cntTCP(b, false, 80), cntUDP(b, true, 10, 53),
		cntUDP(b, false, 0, 11), cntTCP(b, true, 443), cntRawEth(0x0806), cntUDP(b, false, 0, 12)}
	l, err := engine.Sim{}.NewLoop(h, mix)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	c := l.Run(b.N * engine.SimBatch)
	b.StopTimer()
	if s := h.Stats(); s.Frames != c.Frames || len(s.ByPort) < 6 {
		b.Fatalf("counted %d of %d frames, ports %v: not the mix", s.Frames, c.Frames, s.ByPort)
	}
	b.ReportMetric(c.WorkerNs(), "worker-ns/frame")
	b.ReportMetric(c.KernelNs(), "kernel-ns/frame")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(c.Frames), "ns/frame")
}
