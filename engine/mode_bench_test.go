package engine_test

import (
	"net"
	"testing"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/handler"
)

// The benchmarks of each mode's worker: the built-in handlers on in-memory
// rings of an engine's default sizes, 64-byte UDP frames already in the
// UMEM. Each reports the worker's own time per frame (worker-ns/frame: what
// the engine costs the CPU it runs on), the simulated kernel's beside it
// (kernel-ns/frame: delivering to rx, taking tx to completion), and their
// sum with the timing (ns/frame). An op is a batch of 64 frames. See
// engine.SimLoop.Run for how the two sides are told apart.

// benchLoop runs l for b.N batches and reports its costs.
func benchLoop(b *testing.B, l *engine.SimLoop) engine.SimCost {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	c := l.Run(b.N * engine.SimBatch)
	b.StopTimer()
	if c.Frames == 0 {
		b.Fatal("no frame went through")
	}
	b.ReportMetric(c.WorkerNs(), "worker-ns/frame")
	b.ReportMetric(c.KernelNs(), "kernel-ns/frame")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(c.Frames), "ns/frame")
	return c
}

func newLoop(b *testing.B, sim engine.Sim, h engine.Handler) *engine.SimLoop {
	b.Helper()
	l, err := sim.NewLoop(h, [][]byte{udpFrame(9, 64)})
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// BenchmarkRxDrop is rxdrop: handler.RxDrop declares DropAll, so the worker
// hands each batch straight back to the fill ring.
func BenchmarkRxDrop(b *testing.B) {
	l := newLoop(b, engine.Sim{}, handler.RxDrop{})
	benchLoop(b, l)
	if st := l.Stats(); st.Dropped != st.RxPackets {
		b.Fatalf("stats %+v: every frame should be dropped", st)
	}
}

// BenchmarkRxHandlerDrop is rxdrop through the general path: a handler
// that leaves every frame dropped, called with every batch.
func BenchmarkRxHandlerDrop(b *testing.B) {
	l := newLoop(b, engine.Sim{}, engine.HandlerFunc(func(*engine.Batch) {}))
	benchLoop(b, l)
	if st := l.Stats(); st.Dropped != st.RxPackets {
		b.Fatalf("stats %+v: every frame should be dropped", st)
	}
}

// BenchmarkL2Fwd is l2fwd: swap the MACs, send every frame back out of its
// queue, reap the completions into the fill ring.
func BenchmarkL2Fwd(b *testing.B) {
	l := newLoop(b, engine.Sim{}, handler.L2Fwd{})
	benchTx(b, l)
}

var fwdMAC = net.HardwareAddr{0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee}

// BenchmarkFwd is fwd with the output sharing the UMEM (the default):
// rewrite the destination MAC, queue on the output's tx ring, reap its
// completions into the input's fill ring.
func BenchmarkFwd(b *testing.B) {
	l := newLoop(b, engine.Sim{Outputs: 1}, &handler.Fwd{Dest: engine.ToOutput(0), DstMAC: fwdMAC})
	benchTx(b, l)
}

// BenchmarkFwdCopy is fwd with the output on a UMEM of its own
// (Output.Copy, or a kernel that refuses to share): the worker copies every
// frame into a frame of the output's and recycles its own at once.
func BenchmarkFwdCopy(b *testing.B) {
	l, err := engine.NewCopyLoop(engine.Sim{Outputs: 1}, &handler.Fwd{Dest: engine.ToOutput(0), DstMAC: fwdMAC}, [][]byte{udpFrame(9, 64)})
	if err != nil {
		b.Fatal(err)
	}
	benchTx(b, l)
}

// benchTx is benchLoop for a handler that sends every frame: it checks that
// every frame received went out.
func benchTx(b *testing.B, l *engine.SimLoop) {
	b.Helper()
	c := benchLoop(b, l)
	if st := l.Stats(); st.TxRingFull != 0 || st.Dropped != 0 || st.RxPackets != c.Frames {
		b.Fatalf("stats %+v after %d frames: every frame should have gone out", st, c.Frames)
	}
}

// BenchmarkCount is count: parse every frame and count it by protocol and
// destination port (one UDP flow), then drop it.
func BenchmarkCount(b *testing.B) {
	h := handler.NewCount()
	l := newLoop(b, engine.Sim{}, h)
	c := benchLoop(b, l)
	if got := h.Stats().ByPort[handler.PortKey{Proto: 17, Port: 9}]; got != c.Frames { // udp/9
		b.Fatalf("counted %d frames to udp/9 of %d", got, c.Frames)
	}
}
