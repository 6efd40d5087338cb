package xsk

import (
	"math"
	"testing"
)

// FuzzRings drives an in-memory socket with a random sequence of producer
// and consumer steps on both sides (the application's and the simulated
// kernel's) and checks after every step, against a simple model, that no
// frame is lost or duplicated and that the counters add up.
//
// The input's first three bytes choose the geometry (ring size, frames,
// where the indices start, so that runs cross the 2^32 wrap); the rest is
// pairs of (operation, argument). The seeds in testdata/fuzz/FuzzRings run
// under plain go test; tx-cancel and fill-cancel give back reserved slots
// (operations 6 and 5) and then submit more, so a Cancel that gives nothing
// back fails there, not only under make fuzz.
func FuzzRings(f *testing.F) {
	f.Add([]byte{2, 8, 0, 0, 5, 1, 0, 4, 0, 2, 4, 3, 4, 4, 0})
	f.Add([]byte{0, 0, 1, 0, 255, 1, 255, 2, 255, 3, 255, 4, 0, 0, 255})
	f.Add([]byte{3, 40, 2, 0, 20, 1, 0xaa, 6, 3, 2, 1, 3, 9, 5, 7, 0, 20, 1, 0x55, 7, 1, 1, 0xff})
	f.Add([]byte{1, 1, 3, 0, 9, 0, 9, 1, 1, 1, 0xff, 2, 9, 3, 9, 4, 0, 5, 2})
	f.Add([]byte{6, 200, 1, 0, 90, 1, 0xf0, 2, 50, 3, 60, 5, 100, 4, 0, 0, 64, 1, 0x0f, 7, 3})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 3 {
			return
		}
		ringSize := uint32(1) << (in[0] % 7) // 1..64
		frames := 1 + uint32(in[1])          // 1..256
		starts := []uint32{0, math.MaxUint32 - 2, math.MaxUint32 - 70, 1 << 31}
		start := starts[int(in[2])%len(starts)]
		m := newRingModel(t, ringSize, frames, start)
		m.check("setup")
		ops := in[3:]
		for i := 0; i+1 < len(ops) && i < 2000; i += 2 {
			m.step(ops[i], ops[i+1])
			m.check(opNames[ops[i]%uint8(len(opNames))])
		}
	})
}

var opNames = []string{"kernel receive", "app rx", "kernel transmit", "app completion", "app refill",
	"app fill partial", "app tx reserve+cancel", "app wake tx, fill lag"}

// ringModel is an in-memory socket and what should be true of it.
type ringModel struct {
	t      *testing.T
	s      *Socket
	k      *MemKernel
	frames uint32
	size   uint32
	length uint32

	offered     uint64 // frames the kernel was asked to receive
	appRx       uint64 // frames the application took from rx
	txSubmitted uint64 // frames the application submitted to tx
	reaped      uint64 // completions the application took
}

func newRingModel(t *testing.T, ringSize, frames, start uint32) *ringModel {
	u, err := NewMemUmem(UmemConfig{FrameSize: 2048, NumFrames: frames})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewMemSocket(u, SocketConfig{FillSize: ringSize, CompletionSize: ringSize, RxSize: ringSize, TxSize: ringSize})
	if err != nil {
		t.Fatal(err)
	}
	s.startAt(start)
	return &ringModel{t: t, s: s, k: s.Kernel(), frames: frames, size: ringSize, length: 60}
}

func (m *ringModel) step(op, arg uint8) {
	s, k := m.s, m.k
	n := uint32(arg) % (2*m.size + 1)
	switch op % uint8(len(opNames)) {
	case 0:
		m.offered += uint64(n)
		k.Receive(int(n), m.length, nil)
	case 1:
		// Take up to n frames; bit i of arg sends frame i back out on tx
		// (if there is room), the others are dropped to the free stack.
		idx, got := s.Rx.Peek(n)
		m.appRx += uint64(got)
		for i := uint32(0); i < got; i++ {
			d := s.Rx.Desc(idx + i)
			if d.Len != m.length || d.Addr%2048 != 0 || d.Addr >= uint64(m.frames)*2048 {
				m.t.Fatalf("rx descriptor %+v: want length %d and a frame address below %d", *d, m.length, m.frames*2048)
			}
			if arg&(1<<(i%8)) != 0 {
				if tidx, room := s.Tx.Reserve(1); room == 1 {
					s.Tx.Set(tidx, d.Addr, d.Len)
					s.Tx.Submit(1)
					m.txSubmitted++
					continue
				}
			}
			s.Frames.Push(d.Addr)
		}
		s.Rx.Release(got)
	case 2:
		k.Transmit(int(n))
	case 3:
		idx, got := s.Completion.Peek(n)
		for i := uint32(0); i < got; i++ {
			s.Frames.Push(s.Completion.Addr(idx + i))
		}
		s.Completion.Release(got)
		m.reaped += uint64(got)
	case 4:
		s.Refill()
	case 5:
		// Reserve n slots, fill only as many as there are free frames,
		// give the rest back.
		idx, got := s.Fill.Reserve(n)
		var used uint32
		for ; used < got; used++ {
			addr, ok := s.Frames.Pop()
			if !ok {
				break
			}
			s.Fill.Set(idx+used, addr)
		}
		s.Fill.Cancel(got - used)
		if used > 0 {
			s.Fill.Submit(used)
		}
	case 6:
		_, got := s.Tx.Reserve(n)
		s.Tx.Cancel(got)
	case 7:
		k.AutoTransmit = arg&1 != 0
		k.SetNeedWakeup(arg&2 != 0, arg&4 != 0)
		// The kernel may publish its fill-ring consumer index late.
		k.FillLag = []uint32{0, 1, m.size / 2, m.size}[arg>>3&3]
		if err := s.WakeTx(); err != nil {
			m.t.Fatal(err)
		}
	}
}

// check compares the socket with the model: every frame is in exactly one
// place, and the counters agree.
func (m *ringModel) check(after string) {
	t, s, k := m.t, m.s, m.k
	t.Helper()
	// Every frame is in exactly one place: a ring or the free stack.
	c, err := s.Audit()
	if err != nil {
		t.Fatalf("after %s: %v", after, err)
	}
	if c.Missing() != 0 || c.Total != int(m.frames) {
		// The simulated kernel parks no frame, unlike copy mode.
		t.Fatalf("after %s: %d of %d frames missing: %+v", after, c.Missing(), m.frames, c)
	}
	for _, r := range []struct {
		name string
		r    *ring
	}{{"fill", &s.Fill.ring}, {"rx", &s.Rx.ring}, {"tx", &s.Tx.ring}, {"completion", &s.Completion.ring}} {
		if p := r.r.pending(); p > m.size {
			t.Fatalf("after %s: %s ring holds %d entries, more than its %d slots", after, r.name, p, m.size)
		}
	}

	st := k.Stats
	if got := k.Received + st.Drops(); got != m.offered {
		t.Fatalf("after %s: offered %d != received %d + drops %d (%+v)", after, m.offered, k.Received, st.Drops(), st)
	}
	if st.RxDropped != st.RxFillRingEmptyDescs {
		// Without a fill buffer a frame counts in RxDropped; with the rx
		// ring full, in RxRingFull only (as XDP_STATISTICS does).
		t.Fatalf("after %s: rx_dropped %d != fill ring empty %d (ring full %d)", after, st.RxDropped, st.RxFillRingEmptyDescs, st.RxRingFull)
	}
	if got := m.appRx + uint64(s.Rx.Pending()); got != k.Received {
		t.Fatalf("after %s: taken %d + pending %d != received %d", after, m.appRx, s.Rx.Pending(), k.Received)
	}
	if got := k.Transmitted + uint64(s.Tx.Pending()); got != m.txSubmitted {
		t.Fatalf("after %s: transmitted %d + pending %d != submitted %d", after, k.Transmitted, s.Tx.Pending(), m.txSubmitted)
	}
	if got := m.reaped + uint64(s.Completion.Pending()); got != k.Transmitted {
		t.Fatalf("after %s: reaped %d + pending %d != transmitted %d", after, m.reaped, s.Completion.Pending(), k.Transmitted)
	}
}
