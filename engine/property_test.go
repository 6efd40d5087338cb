package engine_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/xdpeng/xdpeng/engine"
)

// fate is what a random handler did to one frame: the verdict and port it
// left, and the frame's bytes after its changes.
type fate struct {
	verdict engine.Verdict
	port    engine.Dest
	data    []byte
}

// randomHandler gives every frame a random verdict (drop, transmit,
// forward to ToInput, to an output, to a port the engine lacks), moves its
// start and end at random, and records what it left.
type randomHandler struct {
	rng     *rand.Rand
	outputs int
	fates   []fate
	hints   engine.Hints
}

func (h *randomHandler) Hints() engine.Hints { return h.hints }

func (h *randomHandler) Handle(b *engine.Batch) {
	for i := range b.Len() {
		switch h.rng.IntN(4) {
		case 0:
			b.AdjustHead(i, h.rng.IntN(2*b.Headroom(i)+1)-b.Headroom(i))
		case 1:
			b.SetLen(i, b.PacketLen(i)+h.rng.IntN(129)-64)
		}
		if h.rng.IntN(8) == 0 {
			b.DropFor(i, 3) // a reason that a later verdict below takes back
		}
		switch h.rng.IntN(6) {
		case 0:
			if h.rng.IntN(2) == 0 {
				b.DropFor(i, engine.DropReason(h.rng.IntN(engine.MaxDropReasons+3))) // 0 and beyond the last too
			} else {
				b.Drop(i)
			}
		case 1, 2:
			b.Transmit(i)
		case 3:
			b.Forward(i, engine.ToInput)
		case 4:
			b.Forward(i, engine.ToOutput(h.rng.IntN(h.outputs+2))) // and ports the engine lacks
		case 5:
			b.Forward(i, engine.ToOutput(h.rng.IntN(3)*100)) // 0, and out of range
		}
		h.fates = append(h.fates, fate{b.Verdict(i), b.Dest(i), b.AppendPacket(nil, i)})
	}
}

// TestSimProperty runs random handlers through Sim over random geometry
// (outputs, batch sizes from 1 to the ring, frame sizes, headroom,
// multi-buffer frames, aligned or not) and checks every frame's fate
// against its verdict and that every count closes: received = transmitted
// on every port + dropped (Drop, and ports the engine lacks) + tx ring full.
func TestSimProperty(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
		sim := engine.Sim{
			Outputs:       rng.IntN(4),
			FrameSize:     []uint32{2048, 4096}[rng.IntN(2)],
			FrameHeadroom: uint32(rng.IntN(3) * 64),
			Unaligned:     rng.IntN(2) == 0,
			MultiBuffer:   rng.IntN(2) == 0,
		}
		sim.Batch = []int{1, 2, 3, 7, 64, 255, 512, engine.MaxBatch}[rng.IntN(8)]
		room := int(sim.FrameSize) - 256 - int(sim.FrameHeadroom)
		longest := room
		if sim.MultiBuffer {
			longest = room * (1 + rng.IntN(4))
		}
		frames := make([][]byte, 1+rng.IntN(300))
		for i := range frames {
			f := make([]byte, 14+rng.IntN(longest-13))
			for j := range f {
				f[j] = byte(rng.Uint32())
			}
			frames[i] = f
		}
		h := &randomHandler{rng: rng, outputs: sim.Outputs}
		if rng.IntN(8) == 0 {
			// ReceiveOnly without outputs binds no tx ring: every
			// transmit finds no room, and is counted so.
			h.hints.ReceiveOnly = true
		}
		dropAll := rng.IntN(16) == 0
		var hd engine.Handler = h
		if dropAll {
			hd = dropAllHandler{}
		}
		name := fmt.Sprintf("seed %d %+v, %d frames, drop-all %v, receive-only %v", seed, sim, len(frames), dropAll, h.hints.ReceiveOnly)
		res, err := sim.Run(hd, frames)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkFates(t, name, sim, h, dropAll, frames, res)
	}
}

type dropAllHandler struct{}

func (dropAllHandler) Handle(*engine.Batch) { panic("a DropAll handler is never called") }
func (dropAllHandler) Hints() engine.Hints  { return engine.Hints{DropAll: true} }

func checkFates(t *testing.T, name string, sim engine.Sim, h *randomHandler, dropAll bool, frames [][]byte, res engine.SimResult) {
	t.Helper()
	noTx := h.hints.ReceiveOnly && sim.Outputs == 0
	perPort := make([]uint64, sim.Outputs+1)
	var sent, dropped, full uint64
	for i, f := range res.Frames {
		want := fate{verdict: engine.VerdictDrop, data: frames[i]}
		if !dropAll {
			want = h.fates[i]
		}
		if f.Verdict != want.verdict || !bytes.Equal(f.Data, want.data) {
			t.Fatalf("%s: frame %d: %v, %d bytes; the handler left %v, %d bytes", name, i, f.Verdict, len(f.Data), want.verdict, len(want.data))
		}
		port, known := engine.ToInput, true
		if want.verdict == engine.VerdictForward {
			port, known = want.port, int(want.port) <= sim.Outputs
		}
		switch {
		case want.verdict == engine.VerdictDrop || !known:
			if f.Sent {
				t.Fatalf("%s: frame %d (%v to %v) went out of %v", name, i, want.verdict, want.port, f.Dest)
			}
			dropped++
		case noTx && port == engine.ToInput:
			if f.Sent {
				t.Fatalf("%s: frame %d went out of a socket without a tx ring", name, i)
			}
			full++
		default:
			if !f.Sent || f.Dest != port {
				t.Fatalf("%s: frame %d (%v to %v): sent %v on %v", name, i, want.verdict, port, f.Sent, f.Dest)
			}
			sent++
			perPort[port]++
		}
	}
	st := res.Stats
	if st.RxPackets != uint64(len(frames)) || st.TxPackets != sent || st.Dropped != dropped || st.TxRingFull != full ||
		st.RxPackets != st.TxPackets+st.Dropped+st.TxRingFull {
		t.Fatalf("%s: stats %+v; want %d received = %d sent + %d dropped + %d tx ring full", name, st, len(frames), sent, dropped, full)
	}
	if sim.Outputs > 0 && !dropAll {
		if len(st.Dests) != sim.Outputs+1 {
			t.Fatalf("%s: %d ports in the stats, want %d", name, len(st.Dests), sim.Outputs+1)
		}
		for p, ps := range st.Dests {
			if ps.Dest != engine.Dest(p) || ps.TxPackets != perPort[p] {
				t.Fatalf("%s: port %v: %+v; want %d sent", name, engine.Dest(p), ps, perPort[p])
			}
		}
	}
}
