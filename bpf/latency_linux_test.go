package bpf

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// stampedFrame is a 64-byte IPv4/UDP frame stamped with run, seq and a send
// time of sentNS.
func stampedFrame(t *testing.T, run, seq uint32, sentNS uint64) []byte {
	t.Helper()
	f := make([]byte, 64)
	c := packet.UDPConfig{
		SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2},
		SrcIP: netip.MustParseAddr("198.18.0.1"), DstIP: netip.MustParseAddr("198.18.0.2"),
		SrcPort: 1234, DstPort: 9, Size: 64,
	}
	if _, err := packet.BuildUDP(f, c); err != nil {
		t.Fatal(err)
	}
	// The stamp, as stamp.h lays it out, at the start of the UDP payload.
	// The receiver reads no checksum: the one BuildUDP wrote stays.
	st := f[c.L4Offset()+packet.UDPHdrLen:]
	binary.BigEndian.PutUint32(st[0:], 0x78646c74) // "xdlt"
	binary.BigEndian.PutUint32(st[4:], run)
	binary.BigEndian.PutUint32(st[8:], seq)
	binary.BigEndian.PutUint64(st[12:], sentNS)
	return f
}

func TestLatencyReceiverLoadsAndCounts(t *testing.T) {
	privtest.Root(t)
	l, err := NewLatencyReceiver(LatencyOptions{RunID: 7, Streams: 1, Capacity: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const xdpDrop, xdpPass, tcShot, tcUnspec = 1, 2, 2, 0xffffffff
	for _, tc := range []struct {
		frame   []byte
		xdp, tc uint32
	}{
		{stampedFrame(t, 7, 0, 1), xdpDrop, tcShot},
		{stampedFrame(t, 8, 1, 1), xdpPass, tcUnspec}, // another run
		{ethFrame(9), xdpPass, tcUnspec},              // no stamp
	} {
		if ret, _, err := l.XDP.Test(tc.frame); err != nil || ret != tc.xdp {
			t.Errorf("XDP verdict %d, %v; want %d", ret, err, tc.xdp)
		}
		if ret, _, err := l.TC.Test(tc.frame); err != nil || ret != tc.tc {
			t.Errorf("tc verdict %d, %v; want %d", ret, err, tc.tc)
		}
	}
	per, err := l.ReadStats()
	if err != nil {
		t.Fatal(err)
	}
	var received, dup, other, count uint64
	for _, s := range per {
		received += s.Received
		dup += s.Duplicated
		other += s.Other
		count += s.Count
	}
	// The same stamped frame went through both programs: the second is a
	// duplicate.
	if received != 2 || dup != 1 || other != 4 || count != 2 {
		t.Errorf("received %d duplicated %d other %d in histogram %d; want 2 1 4 2", received, dup, other, count)
	}
}

func TestLatencyReceiverRefusesBadOptions(t *testing.T) {
	for _, o := range []LatencyOptions{
		{Streams: 0, Capacity: 1},
		{Streams: MaxLatencyStreams + 1, Capacity: 1},
		{Streams: 1, Capacity: 0},
		{Streams: 1, Capacity: MaxLatencyCapacity + 1},
	} {
		if l, err := NewLatencyReceiver(o); err == nil {
			l.Close()
			t.Errorf("NewLatencyReceiver(%+v): no error", o)
		}
	}
}

func TestLatencyBucketsProbe(t *testing.T) {
	privtest.Root(t)
	got, err := LatencyBuckets([]uint64{0, 31, 32, 33, 1<<27 - 1, 1 << 27, 1<<64 - 1})
	if err != nil {
		t.Fatal(err)
	}
	// The full comparison with the Go histogram is in internal/lab/latency.
	want := []uint32{0, 0, 1, 2, 704, 705, 705}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("buckets %v, want %v", got, want)
			break
		}
	}
}
