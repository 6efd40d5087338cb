package engine

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/xsk"
)

func testUDP(size int) packet.UDPConfig {
	return packet.UDPConfig{
		SrcMAC: net.HardwareAddr{0x02, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{0x02, 0, 0, 0, 0, 2},
		SrcIP: netip.MustParseAddr("198.18.0.1"), DstIP: netip.MustParseAddr("198.18.0.2"),
		SrcPort: 1234, DstPort: 9, Size: size,
	}
}

// memTxWorker is a generator worker on an in-memory socket whose kernel
// transmits on every kick, as copy mode does.
func memTxWorker(t testing.TB, tc GeneratorConfig, queues int) (*txWorker, *xsk.MemKernel) {
	t.Helper()
	cfg := DefaultGeneratorConfig()
	cfg.Interface = "mem0"
	cfg.Frames, cfg.Count, cfg.Rate, cfg.TxTimestamp = tc.Frames, tc.Count, tc.Rate, tc.TxTimestamp
	cfg.Queues = make([]int, queues)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	n := cfg.txFrames()
	u, err := xsk.NewMemUmem(xsk.UmemConfig{FrameSize: cfg.FrameSize, NumFrames: n + outFrames, TxMetadata: cfg.txMetadata()})
	if err != nil {
		t.Fatal(err)
	}
	var csum [][2]uint16
	if cfg.txMetadata() {
		if csum, err = cfg.txChecksums(); err != nil {
			t.Fatal(err)
		}
		if err := writeTxMetaFrames(u, cfg.Frames, csum, n, cfg.txRequest()); err != nil {
			t.Fatal(err)
		}
	} else {
		writeTxFrames(u, cfg.Frames, n, cfg.segments())
	}
	s, err := xsk.NewMemSocket(u, xsk.SocketConfig{FillSize: outFillSize, CompletionSize: cfg.CompletionSize, TxSize: cfg.TxSize, FirstFrame: n, NumFrames: outFrames})
	if err != nil {
		t.Fatal(err)
	}
	sc := cfg.sockets()
	w := newTxWorker(0, 0, s, workerOptions(&sc), newTxGen(&cfg, 0, n))
	if cfg.TxTimestamp {
		g := w.tx
		g.metaOff, g.metaOpts, g.metaReq, g.csum, g.umem = txMetaOffset, xsk.TxMetadataOption, cfg.txRequest(), csum, u
		g.timer, g.sentAt, g.tai = new(txTimer), make([]uint64, n), taiClock{base: time.Now(), tai: 1 << 40}
	}
	k := s.Kernel()
	k.AutoTransmit = true
	k.SetNeedWakeup(false, true)
	return w, k
}

func TestTxOnlyExactCount(t *testing.T) {
	frames, err := packet.UDPVariants(testUDP(64), 3)
	if err != nil {
		t.Fatal(err)
	}
	// 10001 frames over 3 queues: this worker, the first, gets 3334.
	w, k := memTxWorker(t, GeneratorConfig{Frames: frames, Count: 10001}, 3)
	var stop atomic.Bool
	if err := w.run(&stop); err != nil {
		t.Fatal(err)
	}
	if k.Transmitted != 3334 || w.c.txPackets != 3334 || w.c.txBytes != 3334*64 {
		t.Fatalf("transmitted %d, counted %d packets %d bytes; want 3334 and %d bytes", k.Transmitted, w.c.txPackets, w.c.txBytes, 3334*64)
	}
	if w.txOutstanding != 0 {
		t.Fatalf("%d descriptors outstanding after the end", w.txOutstanding)
	}
}

// TestTxOnlyCycle checks the descriptors themselves: variants in order, each
// frame holding the variant it claims, and never more in flight than frames.
func TestTxOnlyCycle(t *testing.T) {
	frames, err := packet.UDPVariants(testUDP(100), 5)
	if err != nil {
		t.Fatal(err)
	}
	w, k := memTxWorker(t, GeneratorConfig{Frames: frames}, 1)
	k.AutoTransmit = false // let descriptors pile up on the ring
	s := w.sock
	var sent uint32
	for i := 0; i < 10; i++ {
		sent += w.txBatch(time.Time{})
	}
	if sent != 640 || s.Tx.Pending() != 640 {
		t.Fatalf("submitted %d, %d on the ring; want 640", sent, s.Tx.Pending())
	}
	var sum packet.Summary
	for i := uint32(0); i < sent; i++ {
		d := k.TxDesc(i)
		f := s.Umem().Frame(d.Addr, d.Len)
		if !packet.Parse(f, &sum) || sum.DstPort != 9+uint16(i%5) || d.Len != 100 {
			t.Fatalf("descriptor %d: %d bytes, dst port %d (parsed %v), want port %d", i, d.Len, sum.DstPort, sum, 9+i%5)
		}
	}
	// The ring holds 2048 and the UMEM 4096 frames: the generator stops at
	// the ring, then at the frames once the kernel has taken them.
	for i := 0; i < 100; i++ {
		w.txBatch(time.Time{})
		k.Transmit(64)
	}
	if w.txOutstanding > w.tx.frames {
		t.Fatalf("%d descriptors in flight for %d frames", w.txOutstanding, w.tx.frames)
	}
	// Here the rings bound it: the kernel takes no more from tx than the
	// completion ring has room for.
	if want := s.Tx.Size() + s.Completion.Size(); w.txOutstanding != want {
		t.Fatalf("%d descriptors in flight, want %d (tx + completion ring)", w.txOutstanding, want)
	}
	if got := w.txComplete(); got != s.Completion.Size() && got == 0 {
		t.Fatalf("reaped %d", got)
	}
}

// fakeClock is a generator's clock in a test: each reading moves it on by
// tick (the time a turn of the loop takes), each sleep by what was asked
// plus slack (a timer that fires late).
type fakeClock struct {
	now         time.Time
	tick, slack time.Duration
	sleeps      int
}

func (c *fakeClock) Now() time.Time {
	c.now = c.now.Add(c.tick)
	return c.now
}

func (c *fakeClock) Sleep(d time.Duration) {
	c.sleeps++
	c.now = c.now.Add(d + c.slack)
}

// TestTxOnlyRate runs a paced generator on a clock of the test's own: 2000
// frames at 20000/s must take 100 ms of that clock, no less (the rate is an
// upper bound), and at most 5% more, also when every sleep ends a
// millisecond late: what fell due meanwhile goes at once. (The pacer drops
// the fraction of a frame that falls due while its loop turns, about 1 us
// in each 50 here; one that lost the lateness of every sleep would take
// 2.1 s with late sleeps.)
func TestTxOnlyRate(t *testing.T) {
	frames, err := packet.UDPVariants(testUDP(64), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, slack := range []time.Duration{0, time.Millisecond} {
		t.Run(fmt.Sprintf("sleeps %v late", slack), func(t *testing.T) {
			w, k := memTxWorker(t, GeneratorConfig{Frames: frames, Count: 2000, Rate: 20000}, 1)
			clk := &fakeClock{now: time.Unix(1e9, 0), tick: time.Microsecond, slack: slack}
			w.tx.clock = clk
			start := clk.now
			var stop atomic.Bool
			if err := w.run(&stop); err != nil {
				t.Fatal(err)
			}
			el := clk.now.Sub(start)
			if k.Transmitted != 2000 || w.c.txPackets != 2000 {
				t.Fatalf("transmitted %d, counted %d; want 2000", k.Transmitted, w.c.txPackets)
			}
			// The first frame goes at once, each further one 50 us later.
			if min := 1999 * 50 * time.Microsecond; el < min {
				t.Errorf("2000 frames at 20000/s took %v of the clock: faster than the rate allows (%v)", el, min)
			}
			if max := 105 * time.Millisecond; el > max {
				t.Errorf("2000 frames at 20000/s took %v of the clock, more than %v: pacing loses rate", el, max)
			}
			if clk.sleeps == 0 {
				t.Error("the pacer never slept")
			}
		})
	}
}

func TestGeneratorValidate(t *testing.T) {
	cfg := DefaultGeneratorConfig()
	cfg.Interface = "x"
	if err := cfg.Validate(); err == nil {
		t.Fatal("no frames accepted")
	}
	cfg.Frames = [][]byte{make([]byte, 5000)}
	if err := cfg.Validate(); err == nil {
		t.Fatal("frame larger than a UMEM frame accepted")
	}
	cfg.Frames = [][]byte{make([]byte, 64)}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("a good config refused: %v", err)
	}
	cfg.Batch = int(cfg.TxSize) + 1
	if err := cfg.Validate(); err == nil {
		t.Fatal("a batch larger than the tx ring accepted")
	}
}

// BenchmarkTxOnly is txonly, the generator's worker: descriptors of
// pre-built frames onto the tx ring, completions reaped. As in the mode
// benchmarks (mode_bench_test.go, engine.SimLoop.Run), it runs in rounds
// of a ring's worth and times the worker apart from the simulated kernel,
// which transmits a round at once, as a busy zero-copy NIC does without a
// kick; the worker then reaps the completions.
func BenchmarkTxOnly(b *testing.B) { benchTxOnly(b, false) }

// BenchmarkTxOnlyTimestamp is BenchmarkTxOnly with TxTimestamp: the
// sending time noted per frame, and per completion its timestamp (written
// by the simulated kernel, in the kernel's time) counted and the request
// written again.
func BenchmarkTxOnlyTimestamp(b *testing.B) { benchTxOnly(b, true) }

func benchTxOnly(b *testing.B, stamps bool) {
	frames, err := packet.UDPVariants(testUDP(64), 4)
	if err != nil {
		b.Fatal(err)
	}
	w, k := memTxWorker(b, GeneratorConfig{Frames: frames, TxTimestamp: stamps}, 1)
	k.AutoTransmit = false
	k.SetNeedWakeup(false, false)
	per := w.sock.Tx.Size() / w.batchSize
	b.ReportAllocs()
	b.ResetTimer()
	var c SimCost
	for c.Frames < uint64(b.N)*uint64(w.batchSize) {
		t0 := time.Now()
		var sent uint64
		for range per {
			s, _ := w.txStep(time.Time{})
			sent += uint64(s)
		}
		t1 := time.Now()
		k.Transmit(int(w.sock.Tx.Size()))
		if stamps {
			ts := 1<<40 + uint64(time.Since(w.tx.tai.base))
			for f := range uint64(w.tx.frames) {
				m, err := w.umem.TxMetadata(f<<w.tx.shift + txMetaOffset)
				if err != nil {
					b.Fatal(err)
				}
				binary.NativeEndian.PutUint64(m[8:], ts)
			}
		}
		t2 := time.Now()
		w.txComplete()
		t3 := time.Now()
		c.Worker += t1.Sub(t0) + t3.Sub(t2)
		c.Kernel += t2.Sub(t1)
		c.Frames += sent
		if sent == 0 {
			b.Fatal("nothing sent")
		}
	}
	b.StopTimer()
	b.ReportMetric(c.WorkerNs(), "worker-ns/frame")
	b.ReportMetric(c.KernelNs(), "kernel-ns/frame")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(c.Frames), "ns/frame")
}
