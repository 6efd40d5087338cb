package latency

import (
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/lab/stamp"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// These tests run the receiver program with BPF_PROG_TEST_RUN on frames
// made here: no interface, no traffic.

func monotonicNS(t *testing.T) uint64 {
	t.Helper()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return uint64(ts.Nano())
}

func frameConfig(v6 bool, vlan uint16) packet.UDPConfig {
	c := packet.UDPConfig{
		SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2},
		SrcIP: netip.MustParseAddr("198.18.0.1"), DstIP: netip.MustParseAddr("198.18.0.2"),
		SrcPort: 1234, DstPort: 9, VLAN: vlan, Size: 128,
	}
	if v6 {
		c.SrcIP, c.DstIP = netip.MustParseAddr("2001:2::1"), netip.MustParseAddr("2001:2::2")
	}
	return c
}

func stamped(t *testing.T, c packet.UDPConfig, s stamp.Stamp) []byte {
	t.Helper()
	f := make([]byte, c.Size)
	if _, err := stamp.BuildUDP(f, c, s); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestBucketOfMatchesKernel runs latency.c's bucket function on every
// bucket boundary and on random delays and compares with BucketOf.
func TestBucketOfMatchesKernel(t *testing.T) {
	privtest.Root(t)
	var vs []uint64
	for i := range Buckets {
		lo, hi := BucketBounds(i)
		vs = append(vs, lo, hi)
	}
	for e := range 64 {
		vs = append(vs, 1<<e-1, 1<<e, 1<<e+1)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		vs = append(vs, uint64(math.Exp(r.Float64()*math.Log(1e10))), r.Uint64())
	}
	got, err := bpf.LatencyBuckets(vs)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		if int(got[i]) != BucketOf(v) {
			t.Errorf("delay %d: the kernel says bucket %d, BucketOf %d", v, got[i], BucketOf(v))
		}
	}
}

const (
	xdpDrop  = 1
	xdpPass  = 2
	tcShot   = 2
	tcUnspec = math.MaxUint32 // TC_ACT_UNSPEC, -1
)

// TestReceiverAccounting sends a crafted sequence through the XDP entry:
// two streams, one duplicate, one frame out of order in its stream, one
// beyond the capacity, one stamped in the future, one of another run, one
// not stamped at all.
func TestReceiverAccounting(t *testing.T) {
	privtest.Root(t)
	const run = 9
	l, err := bpf.NewLatencyReceiver(bpf.LatencyOptions{RunID: run, Streams: 2, Capacity: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const age = 50_000 // ns: how long ago each frame was "sent"
	var maxDelay uint64
	send := func(c packet.UDPConfig, s stamp.Stamp, want uint32) {
		t.Helper()
		s.TimeNS = monotonicNS(t) - age
		ret, _, err := l.XDP.Test(stamped(t, c, s))
		if after := monotonicNS(t); after-s.TimeNS > maxDelay {
			maxDelay = after - s.TimeNS
		}
		if err != nil || ret != want {
			t.Fatalf("seq %d: verdict %d, %v; want %d", s.Seq, ret, err, want)
		}
	}
	// Streams 0 (even numbers) and 1 (odd); 5 comes after 7 in stream 1.
	// Every header layout the receiver reads is used along the way.
	layouts := []packet.UDPConfig{frameConfig(false, 0), frameConfig(true, 0), frameConfig(false, 7), frameConfig(true, 7)}
	for i, seq := range []uint32{0, 2, 1, 4, 3, 7, 6, 5} {
		send(layouts[i%len(layouts)], stamp.Stamp{RunID: run, Seq: seq}, xdpDrop)
	}
	send(frameConfig(false, 0), stamp.Stamp{RunID: run, Seq: 2}, xdpDrop)   // duplicate
	send(frameConfig(false, 0), stamp.Stamp{RunID: run, Seq: 100}, xdpDrop) // beyond 64
	send(frameConfig(false, 0), stamp.Stamp{RunID: run + 1, Seq: 8}, xdpPass)
	ahead := stamped(t, frameConfig(false, 0), stamp.Stamp{RunID: run, Seq: 8, TimeNS: monotonicNS(t) + 1e12})
	if ret, _, err := l.XDP.Test(ahead); err != nil || ret != xdpDrop {
		t.Fatalf("frame from the future: verdict %d, %v", ret, err)
	}
	plain := make([]byte, 128)
	if _, err := packet.BuildUDP(plain, frameConfig(false, 0)); err != nil {
		t.Fatal(err)
	}
	if ret, _, err := l.XDP.Test(plain); err != nil || ret != xdpPass {
		t.Fatalf("unstamped frame: verdict %d, %v", ret, err)
	}

	per, err := l.ReadStats()
	if err != nil {
		t.Fatal(err)
	}
	c := MergeCPUs(per)
	want := Counts{Received: 11, Duplicated: 1, Reordered: 1, Beyond: 1, Ahead: 1, Other: 2}
	got := c
	got.Histogram = Histogram{}
	if got != want {
		t.Errorf("counts %+v, want %+v", got, want)
	}
	if h := c.Histogram; h.Count != c.Received-c.Ahead || h.Min < age || h.Max > maxDelay {
		t.Errorf("histogram of %d delays, %d..%d ns; want %d in %d..%d", h.Count, h.Min, h.Max, c.Received-c.Ahead, age, maxDelay)
	}
	if _, err := c.Result(9); err == nil {
		t.Error("Result with a frame beyond the capacity and one from the future: no error")
	}
}

// TestReceiverTCEntry: the tc entry measures the same way, from an skb.
func TestReceiverTCEntry(t *testing.T) {
	privtest.Root(t)
	l, err := bpf.NewLatencyReceiver(bpf.LatencyOptions{RunID: 3, Streams: 1, Capacity: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, tc := range []struct {
		seq, run uint32
		want     uint32
	}{{0, 3, tcShot}, {2, 3, tcShot}, {1, 3, tcShot}, {1, 3, tcShot}, {1, 4, tcUnspec}} {
		f := stamped(t, frameConfig(true, 0), stamp.Stamp{RunID: tc.run, Seq: tc.seq, TimeNS: monotonicNS(t)})
		if ret, _, err := l.TC.Test(f); err != nil || ret != tc.want {
			t.Fatalf("seq %d run %d: verdict %d, %v; want %d", tc.seq, tc.run, ret, err, tc.want)
		}
	}
	per, err := l.ReadStats()
	if err != nil {
		t.Fatal(err)
	}
	c := MergeCPUs(per)
	r, err := c.Result(4)
	if err != nil {
		t.Fatal(err)
	}
	if r.Received != 4 || r.Duplicated != 1 || r.Reordered != 1 || r.Lost != 1 || r.Other != 1 || r.Histogram.Count != 4 {
		t.Errorf("result %+v, want 4 received, 1 duplicated, 1 reordered, 1 lost (seq 3), 1 other", r)
	}
}
