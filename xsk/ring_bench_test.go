package xsk

import "testing"

// BenchmarkRxDropRecycle measures the userspace side of rxdrop on in-memory
// rings: peek a batch, hand every frame straight back to the fill ring. The
// simulated kernel's work is inside the loop too, so ns/op over-states ours.
func BenchmarkRxDropRecycle(b *testing.B) {
	const batch = 64
	s := newTestSocket(b, 4096, 2048)
	b.ReportAllocs()
	b.ResetTimer()
	var frames uint64
	for i := 0; i < b.N; i++ {
		s.kernel.Receive(batch, 64, nil)
		idx, got := s.Rx.Peek(batch)
		fidx, room := s.Fill.Reserve(got)
		for j := uint32(0); j < room; j++ {
			s.Fill.Set(fidx+j, s.Rx.Desc(idx+j).Addr)
		}
		s.Fill.Submit(room)
		s.Rx.Release(got)
		frames += uint64(room)
	}
	b.StopTimer()
	// Per frame handed back: a batch the kernel could not fill, or that
	// found the fill ring short, counts only what went round.
	if want := uint64(b.N) * batch; frames != want {
		b.Fatalf("recycled %d frames of %d: the benchmark is not measuring full batches", frames, want)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(frames), "ns/frame")
}
