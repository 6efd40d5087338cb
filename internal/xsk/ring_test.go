package xsk

import (
	"math"
	"testing"
)

func newTestSocket(t testing.TB, frames, ringSize uint32) *Socket {
	t.Helper()
	u, err := NewMemUmem(UmemConfig{FrameSize: 2048, NumFrames: frames})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewMemSocket(u, SocketConfig{FillSize: ringSize, CompletionSize: ringSize, RxSize: ringSize, TxSize: ringSize})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestFillRingStartsFull(t *testing.T) {
	s := newTestSocket(t, 64, 16)
	if got := s.Fill.Pending(); got != 16 {
		t.Fatalf("fill ring holds %d frames after setup, want 16", got)
	}
	if got := s.Frames.Len(); got != 64-16 {
		t.Fatalf("free stack holds %d frames, want %d", got, 64-16)
	}
	if _, got := s.Fill.Reserve(1); got != 0 {
		t.Fatalf("reserved %d slots on a full fill ring", got)
	}
}

func TestRxEmptyAndPartialBatch(t *testing.T) {
	s := newTestSocket(t, 64, 16)
	if _, got := s.Rx.Peek(8); got != 0 {
		t.Fatalf("peeked %d from an empty rx ring", got)
	}
	if n := s.kernel.Receive(5, 60, nil); n != 5 {
		t.Fatalf("kernel delivered %d, want 5", n)
	}
	idx, got := s.Rx.Peek(8)
	if got != 5 {
		t.Fatalf("peeked %d of a partial batch, want 5", got)
	}
	for i := uint32(0); i < got; i++ {
		if d := s.Rx.Desc(idx + i); d.Len != 60 || d.Addr%2048 != 0 {
			t.Fatalf("desc %d = %+v", i, *d)
		}
	}
	s.Rx.Release(got)
	if _, got := s.Rx.Peek(8); got != 0 {
		t.Fatalf("peeked %d after releasing everything", got)
	}
}

func TestRxRingFullAndFillEmptyAreCounted(t *testing.T) {
	s := newTestSocket(t, 64, 16)
	// 16 buffers in the fill ring, rx ring of 16: 20 frames offered, 16
	// delivered, 4 find no buffer.
	if n := s.kernel.Receive(20, 60, nil); n != 16 {
		t.Fatalf("delivered %d, want 16", n)
	}
	if st := s.kernel.Stats; st.RxFillRingEmptyDescs != 4 || st.RxDropped != 4 {
		t.Fatalf("stats %+v, want 4 fill-ring-empty drops", st)
	}
	// Refill 16 more buffers; the rx ring is still full, so all 16 offered
	// frames count as ring full.
	if n := s.Refill(); n != 16 {
		t.Fatalf("refilled %d, want 16", n)
	}
	if n := s.kernel.Receive(16, 60, nil); n != 0 {
		t.Fatalf("delivered %d into a full rx ring", n)
	}
	if st := s.kernel.Stats; st.RxRingFull != 16 || st.RxDropped != 4 || st.Drops() != 20 {
		t.Fatalf("stats %+v, want 16 ring-full drops", st)
	}
	// The buffers stayed in the fill ring.
	if got := s.Fill.Pending(); got != 16 {
		t.Fatalf("fill ring holds %d, want 16", got)
	}
}

// TestWrapAround drives every ring across the 2^32 boundary of its indices
// and checks that no frame is lost or duplicated.
func TestWrapAround(t *testing.T) {
	for _, start := range []uint32{0, math.MaxUint32 - 40, math.MaxUint32 - 3, math.MaxUint32} {
		s := newTestSocket(t, 32, 8)
		s.startAt(start)
		seen := map[uint64]int{}
		for round := 0; round < 50; round++ {
			s.kernel.Receive(3+round%6, 64, nil)
			idx, got := s.Rx.Peek(8)
			tidx, room := s.Tx.Reserve(got)
			for i := uint32(0); i < room; i++ {
				d := s.Rx.Desc(idx + i)
				seen[d.Addr]++
				s.Tx.Set(tidx+i, d.Addr, d.Len)
			}
			for i := room; i < got; i++ {
				s.Frames.Push(s.Rx.Desc(idx + i).Addr)
			}
			s.Rx.Release(got)
			s.Tx.Submit(room)
			s.kernel.Transmit(8)
			cidx, done := s.Completion.Peek(8)
			for i := uint32(0); i < done; i++ {
				s.Frames.Push(s.Completion.Addr(cidx + i))
			}
			s.Completion.Release(done)
			s.Refill()
			if total := int(s.Fill.Pending()+s.Rx.Pending()+s.Tx.Pending()+s.Completion.Pending()) + s.Frames.Len(); total != 32 {
				t.Fatalf("start %#x round %d: %d frames accounted for, want 32", start, round, total)
			}
		}
		if s.kernel.Transmitted == 0 {
			t.Fatalf("start %#x: nothing went round", start)
		}
		for addr := range seen {
			if addr%2048 != 0 || addr >= 32*2048 {
				t.Fatalf("start %#x: bad frame address %#x", start, addr)
			}
		}
	}
}

func TestFrameStack(t *testing.T) {
	s := NewFrameStack(4096, 2048, 3)
	var got []uint64
	for {
		a, ok := s.Pop()
		if !ok {
			break
		}
		got = append(got, a)
	}
	want := []uint64{4096, 6144, 8192}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("popped %v, want %v", got, want)
	}
	s.Push(6144)
	if a, ok := s.Pop(); !ok || a != 6144 {
		t.Fatalf("pop after push = %d, %v", a, ok)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, fs := range []uint32{0, 1000, 3000, 8192} {
		if err := (UmemConfig{FrameSize: fs, NumFrames: 8}).Validate(); err == nil {
			t.Errorf("frame size %d accepted", fs)
		}
	}
	u, _ := NewMemUmem(UmemConfig{FrameSize: 4096, NumFrames: 8})
	for _, rs := range []uint32{0, 3, 1000, 1 << 17} {
		c := SocketConfig{FillSize: rs, CompletionSize: 8, RxSize: 8, TxSize: 8}
		if err := c.Validate(u); err == nil {
			t.Errorf("ring size %d accepted", rs)
		}
	}
	if err := (SocketConfig{FillSize: 8, CompletionSize: 8, RxSize: 8, TxSize: 8, FirstFrame: 4, NumFrames: 5}).Validate(u); err == nil {
		t.Error("frames beyond the UMEM accepted")
	}
}

func TestNeedWakeupFlag(t *testing.T) {
	s := newTestSocket(t, 16, 8)
	if s.Fill.NeedWakeup() || s.Tx.NeedWakeup() {
		t.Fatal("flags set on a fresh socket")
	}
	s.kernel.SetNeedWakeup(true, false)
	if !s.Fill.NeedWakeup() || s.Tx.NeedWakeup() {
		t.Fatal("fill flag not seen")
	}
}
