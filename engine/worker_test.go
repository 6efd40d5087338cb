package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/xdpeng/xdpeng/xsk"
)

// TestRxDropCountsEveryFrame drives rxdrop's hot path, Worker.rxDrop (the
// shortcut a DropAll handler takes, which Simulate goes around), on an in-memory
// socket with a random but fixed schedule of arrivals, refills between
// batches (as Worker.idle does) and batches. After every step every frame
// offered is received by the worker, waiting in the rx ring or counted as
// dropped by the kernel, the worker's counters agree with what it was given,
// and every UMEM frame is in exactly one ring or on the free stack.
func TestRxDropCountsEveryFrame(t *testing.T) {
	for _, g := range []struct {
		fill, rx, frames uint32
		batch            int
	}{
		{2048, 2048, 4096, 64}, // the defaults
		{64, 64, 128, 16},
		{32, 128, 96, 64}, // a fill ring smaller than the rx ring
		{16, 16, 40, 16},  // batch = ring
	} {
		t.Run(fmt.Sprintf("fill%d-rx%d-frames%d-batch%d", g.fill, g.rx, g.frames, g.batch), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Interface = "mem0"
			cfg.Batch = g.batch
			cfg.FillSize, cfg.RxSize, cfg.CompletionSize, cfg.TxSize = g.fill, g.rx, g.fill, 0
			cfg.NumFrames = g.frames
			u, err := xsk.NewMemUmem(xsk.UmemConfig{FrameSize: cfg.FrameSize, NumFrames: cfg.framesPerSocket()})
			if err != nil {
				t.Fatal(err)
			}
			s, err := xsk.NewMemSocket(u, xsk.SocketConfig{FillSize: cfg.FillSize, CompletionSize: cfg.CompletionSize, RxSize: cfg.RxSize})
			if err != nil {
				t.Fatal(err)
			}
			w := newRxWorker(0, 0, s, dropAll{}, workerOptions(&cfg))
			if !w.dropAll {
				t.Fatal("a DropAll handler does not take the rxDrop shortcut")
			}
			k := s.Kernel()
			rng := rand.New(rand.NewPCG(uint64(g.fill), uint64(g.batch)))

			var offered, wantBytes uint64
			// lens holds the length of each frame in the rx ring, oldest
			// first, as runs of frames of one length.
			type run struct{ n, length uint32 }
			var lens []run
			take := func(n uint32) {
				for n > 0 {
					r := &lens[0]
					m := min(n, r.n)
					wantBytes += uint64(m) * uint64(r.length)
					r.n -= m
					n -= m
					if r.n == 0 {
						lens = lens[1:]
					}
				}
			}
			short := 0 // batches that found less room in the fill ring than frames
			batch := func() uint32 {
				if room := s.Fill.Size() - s.Fill.Pending(); room < min(uint32(g.batch), s.Rx.Pending()) {
					short++
				}
				n := w.rxDrop()
				if n > uint32(g.batch) {
					t.Fatalf("a batch of %d frames, more than %d", n, g.batch)
				}
				take(n)
				return n
			}
			check := func(step int, what string) {
				t.Helper()
				c := &w.c
				pending := uint64(s.Rx.Pending())
				if got := c.rxPackets + pending + k.Stats.Drops(); got != offered {
					t.Fatalf("step %d (%s): offered %d != received %d + in the rx ring %d + kernel drops %d (%+v)",
						step, what, offered, c.rxPackets, pending, k.Stats.Drops(), k.Stats)
				}
				if k.Received != c.rxPackets+pending {
					t.Fatalf("step %d (%s): the kernel delivered %d, the worker counted %d with %d waiting", step, what, k.Received, c.rxPackets, pending)
				}
				if c.dropped != c.rxPackets || c.rxBytes != wantBytes || c.txPackets != 0 {
					t.Fatalf("step %d (%s): counted %d received (%d bytes, want %d), %d dropped, %d sent",
						step, what, c.rxPackets, c.rxBytes, wantBytes, c.dropped, c.txPackets)
				}
				fc, err := s.Audit()
				if err != nil {
					t.Fatalf("step %d (%s): %v", step, what, err)
				}
				if fc.Missing() != 0 {
					t.Fatalf("step %d (%s): %d UMEM frames lost: %+v", step, what, fc.Missing(), fc)
				}
			}

			for step := range 3000 {
				switch op := rng.IntN(5); op {
				case 0, 1:
					n := rng.IntN(2*int(g.rx) + 1)
					length := uint32(60 + rng.IntN(1455))
					got := k.Receive(n, length, nil)
					offered += uint64(n)
					if got > 0 {
						lens = append(lens, run{uint32(got), length})
					}
					check(step, fmt.Sprintf("%d offered", n))
				case 2:
					// What Worker.idle does before it waits: the fill ring
					// is topped up from the free stack, so the next batch
					// may find less room there than it has frames.
					s.Refill()
					check(step, "refill")
				default:
					for i := rng.IntN(4); i >= 0; i-- {
						batch()
						check(step, "batch")
					}
				}
			}
			for batch() > 0 {
			}
			check(-1, "drained")
			if s.Rx.Pending() != 0 || w.c.rxPackets+k.Stats.Drops() != offered {
				t.Fatalf("after draining: %d left in the rx ring, received %d + dropped %d != offered %d",
					s.Rx.Pending(), w.c.rxPackets, k.Stats.Drops(), offered)
			}
			if k.Stats.Drops() == 0 || w.c.rxPackets == 0 {
				t.Fatalf("received %d, kernel drops %d: the schedule did not overflow the rings and deliver too", w.c.rxPackets, k.Stats.Drops())
			}
			if short == 0 && g.frames > g.fill {
				t.Fatal("no batch found the fill ring short: the free-stack path of rxDrop was not run")
			}
			if c := s.CountFrames(); c.Fill+c.Free != c.Total {
				t.Fatalf("idle socket: %d frames in the fill ring + %d free != %d", c.Fill, c.Free, c.Total)
			}
		})
	}
}
