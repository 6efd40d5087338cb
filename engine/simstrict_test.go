package engine

import (
	"fmt"
	"net"
	"testing"
)

// While the kernel has not published its fill-ring consumer index the
// worker finds its fill ring full and keeps the frames it gives back on
// its socket's free stack (rxDrop, dropBatch, recycle, complete, and the
// multi-buffer loops) until there is room. Through a simulated kernel that
// publishes the index a round late, every batch of every kind of handler
// takes that path, and after every batch every UMEM frame of every socket
// must be in a ring or on a free stack, once: a frame the worker lets go
// of instead of parking it is found missing.
func TestWorkerParksFramesWhileFillRingFull(t *testing.T) {
	jumbo := make([]byte, 3000)
	copy(jumbo, frame64)
	mac := net.HardwareAddr{2, 0xaa, 0xbb, 0xcc, 0xdd, 0xee}
	for _, tc := range []struct {
		name  string
		sim   Sim
		h     Handler
		frame []byte
	}{
		{"drop all", Sim{}, dropAll{}, frame64},
		{"handler drops", Sim{}, HandlerFunc(func(*Batch) {}), frame64},
		{"transmit", Sim{}, swapMACs{}, frame64},
		{"transmit half", Sim{}, HandlerFunc(func(b *Batch) {
			for i := 0; i < b.Len(); i += 2 {
				b.Transmit(i)
			}
		}), frame64},
		{"forward", Sim{Outputs: 1}, forwardTo{ToOutput(0), mac}, frame64},
		{"forward a copy", Sim{Outputs: 1}, forwardTo{ToOutput(0), mac}, frame64},
		{"multi-buffer drop all", Sim{MultiBuffer: true}, dropAll{}, jumbo},
		{"multi-buffer handler drops", Sim{MultiBuffer: true}, HandlerFunc(func(*Batch) {}), jumbo},
		{"multi-buffer transmit", Sim{MultiBuffer: true}, swapMACs{}, jumbo},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.sim.Batch = 16
			frames := [][]byte{tc.frame}
			segs, err := tc.sim.segments(frames)
			if err != nil {
				t.Fatal(err)
			}
			sw, err := tc.sim.setup(tc.h, simRings{segs: segs, copyOutputs: tc.name == "forward a copy"})
			if err != nil {
				t.Fatal(err)
			}
			w, k, s := sw.w, sw.kernels[0], sw.w.sock
			k.FillLag = uint32(sw.batch * segs)
			reserve := s.CountFrames().Free // the frames the fill ring has no room for
			parked := 0
			for round := range 40 {
				for i := range sw.batch {
					if k.ReceiveLong(1, uint32(len(tc.frame)), tc.frame) != 1 {
						t.Fatalf("round %d frame %d: the kernel found no buffer (%+v)", round, i, s.CountFrames())
					}
				}
				for batch := 0; ; batch++ {
					if w.step() == 0 {
						break
					}
					for _, pk := range sw.kernels {
						pk.Transmit(int(sw.cfg.TxSize))
					}
					w.complete()
					if err := auditSim(sw); err != nil {
						t.Fatalf("round %d batch %d: %v", round, batch, err)
					}
					parked = max(parked, s.CountFrames().Free-reserve)
				}
			}
			if parked == 0 {
				t.Fatal("no frame waited on the free stack: the fill ring was never full")
			}
			if st := w.stats(SocketStats(k.Stats)); st.RxPackets != uint64(40*sw.batch) {
				t.Fatalf("the worker took %d frames of %d", st.RxPackets, 40*sw.batch)
			}
		})
	}
}

// auditSim checks that the simulated kernels refused no tx descriptor and
// that every frame of every socket of sw is in one of its rings or on its
// free stack, once, by address.
func auditSim(sw *simWorld) error {
	for p, s := range sw.w.ports {
		c, err := s.Audit()
		if err == nil {
			err = c.Check()
		}
		if err != nil {
			return fmt.Errorf("port %v: %w", Dest(p), err)
		}
	}
	return sw.audit()
}

// Sim.Run fails with an engine bug where the worker loses a frame, and
// where the simulated kernel refuses a descriptor the worker queued.
func TestSimAuditFindsLostFrames(t *testing.T) {
	sw, err := Sim{Batch: 4}.setup(swapMACs{}, simRings{segs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := sw.audit(); err != nil {
		t.Fatalf("a fresh simulation: %v", err)
	}
	s := sw.w.sock
	a, _ := s.Frames.Pop() // a frame the worker forgot
	if err := sw.audit(); err == nil {
		t.Fatal("a frame missing, and the audit passes")
	}
	s.Frames.Push(a)
	idx, _ := s.Tx.Reserve(1)
	s.Tx.Set(idx, a, 0) // no length: the kernel refuses it
	s.Tx.Submit(1)
	sw.kernels[0].Transmit(1)
	if err := sw.audit(); err == nil {
		t.Fatal("a tx descriptor refused, and the audit passes")
	}
}
