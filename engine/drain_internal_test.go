package engine

import (
	"testing"
	"time"
)

// TestDrainWaitsForLateCompletions: frames in flight when a worker stops
// are completed later, as a zero-copy driver completes them when its NAPI
// runs; drain waits for them on time, not on a count of tries, so that
// the final counts include them.
func TestDrainWaitsForLateCompletions(t *testing.T) {
	sw := transmitAll(t)
	k, w := sw.kernels[0], sw.w
	n := k.Receive(8, 64, nil)
	if n == 0 || w.receive() != uint32(n) || w.txOutstanding != uint32(n) {
		t.Fatalf("received %d, %d in flight", n, w.txOutstanding)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		k.Transmit(n)
	}()
	w.drain()
	if w.txOutstanding != 0 || w.c.txPackets != uint64(n) {
		t.Errorf("after drain: %d in flight, %d counted sent; want 0 and %d", w.txOutstanding, w.c.txPackets, n)
	}
}

// transmitAll is a simulated engine whose handler sends every frame back
// out, its kernel putting frames where a device does (Umem.RxOffset).
func transmitAll(t *testing.T) *simWorld {
	t.Helper()
	h := HandlerFunc(func(b *Batch) {
		for i := 0; i < b.Len(); i++ {
			b.Transmit(i)
		}
	})
	sw, err := Sim{}.setup(h, simRings{segs: 1})
	if err != nil {
		t.Fatal(err)
	}
	sw.kernels[0].Headroom = sw.w.umem.RxOffset()
	return sw
}
