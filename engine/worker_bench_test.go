package engine

import (
	"testing"

	"github.com/xdpeng/xdpeng/xsk"
)

// memWorker is a worker on an in-memory socket whose kernel side the test
// drives by hand. Every UMEM frame holds frame64 from the start.
func memWorker(t testing.TB, h Handler, txSize uint32) (*rxWorker, *xsk.MemKernel) {
	t.Helper()
	return memWorkerFrames(t, h, txSize, frame64)
}

// memWorkerFrames is memWorker with UMEM frame i holding frames[i %
// len(frames)] from the start, so that the simulated kernel need not copy a
// frame in per packet: a benchmark that receives with a nil payload then
// times our side of the rings and the handler, plus the simulated kernel's
// descriptor moves, not a memcpy the real kernel does on another CPU.
func memWorkerFrames(t testing.TB, h Handler, txSize uint32, frames ...[]byte) (*rxWorker, *xsk.MemKernel) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Interface = "mem0"
	u, err := xsk.NewMemUmem(xsk.UmemConfig{FrameSize: cfg.FrameSize, NumFrames: cfg.framesPerSocket()})
	if err != nil {
		t.Fatal(err)
	}
	fillFrames(u, frames...)
	s, err := xsk.NewMemSocket(u, xsk.SocketConfig{FillSize: cfg.FillSize, CompletionSize: cfg.CompletionSize, RxSize: cfg.RxSize, TxSize: txSize})
	if err != nil {
		t.Fatal(err)
	}
	return newRxWorker(0, 0, s, h, workerOptions(&cfg)), s.Kernel()
}

// fillFrames writes frames[i % len(frames)] into frame i of u.
func fillFrames(u *xsk.Umem, frames ...[]byte) {
	for i := uint32(0); i < u.NumFrames(); i++ {
		f := frames[int(i)%len(frames)]
		copy(u.Frame(uint64(i)*uint64(u.FrameSize()), uint32(len(f))), f)
	}
}

var frame64 = func() []byte {
	f := make([]byte, 64)
	copy(f, []byte{0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00})
	return f
}()

// BenchmarkRxDropJumbo is rxdrop -F on 9000-byte frames in 2048-byte UMEM
// frames (5 descriptors each), per frame.
func BenchmarkRxDropJumbo(b *testing.B) {
	w, k := memMBWorker(b, dropAll{}, 64, false)
	k.Headroom = 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k.ReceiveLong(13, 9000, nil) // 65 descriptors: one batch and a bit
		w.rxDropMB()
		w.rxDropMB()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(w.c.rxPackets), "ns/frame")
}

// BenchmarkL2FwdJumbo is l2fwd -F on 9000-byte frames in 2048-byte UMEM
// frames, per frame: whole frames back out of the queue.
func BenchmarkL2FwdJumbo(b *testing.B) {
	w, k := memMBWorker(b, swapMACs{}, 64, false)
	k.Headroom = 0
	k.AutoTransmit = true
	k.SetNeedWakeup(false, true)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k.ReceiveLong(13, 9000, nil)
		w.rxHandleMB()
		w.rxHandleMB()
		w.complete()
	}
	if w.c.txPackets == 0 {
		b.Fatal("nothing transmitted")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(w.c.rxPackets), "ns/frame")
}
