package xsk

import (
	"fmt"
	"math"
	"strings"
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
		seen := map[uint64]int{} // times each frame was received
		for round := 0; round < 50; round++ {
			s.kernel.Receive(3+round%6, 64, nil)
			idx, got := s.Rx.Peek(8)
			batch := map[uint64]bool{}
			for i := uint32(0); i < got; i++ {
				d := s.Rx.Desc(idx + i)
				if batch[d.Addr] {
					t.Fatalf("start %#x round %d: frame %#x twice in one rx batch", start, round, d.Addr)
				}
				batch[d.Addr] = true
				seen[d.Addr]++
			}
			tidx, room := s.Tx.Reserve(got)
			for i := uint32(0); i < room; i++ {
				d := s.Rx.Desc(idx + i)
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
			// Every frame in exactly one place, none counted twice.
			c, err := s.Audit()
			if err != nil {
				t.Fatalf("start %#x round %d: %v", start, round, err)
			}
			if c.Missing() != 0 {
				t.Fatalf("start %#x round %d: %d frames accounted for, want 32: %+v", start, round, c.Accounted(), c)
			}
		}
		if s.kernel.Transmitted == 0 {
			t.Fatalf("start %#x: nothing went round", start)
		}
		received := 0
		for addr, n := range seen {
			if addr%2048 != 0 || addr >= 32*2048 {
				t.Fatalf("start %#x: bad frame address %#x", start, addr)
			}
			received += n
		}
		// Each reception is one frame's trip: the kernel's count and ours agree.
		if uint64(received) != s.kernel.Received {
			t.Fatalf("start %#x: took %d frames from rx, the kernel delivered %d", start, received, s.kernel.Received)
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

func TestFrameCountCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    FrameCount
		ok   bool
	}{
		{"all in place", FrameCount{Fill: 10, Rx: 3, Tx: 2, Completion: 1, Free: 48, Total: 64}, true},
		{"copy mode, one parked", FrameCount{Fill: 16, Free: 47, Total: 64}, true},
		{"copy mode, two missing", FrameCount{Fill: 16, Free: 46, Total: 64}, false},
		{"counted twice", FrameCount{Fill: 16, Rx: 1, Free: 48, Total: 64}, false},
		{"zero-copy, driver holds many", FrameCount{Fill: 8, Free: 40, Total: 64, ZeroCopy: true}, true},
		{"zero-copy, counted twice", FrameCount{Fill: 16, Free: 49, Total: 64, ZeroCopy: true}, false},
	} {
		err := tc.c.Check()
		if (err == nil) != tc.ok {
			t.Errorf("%s: Check(%+v) = %v, want ok %v", tc.name, tc.c, err, tc.ok)
		}
		if err != nil {
			want := fmt.Sprintf("%d of %d UMEM frames accounted for", tc.c.Accounted(), tc.c.Total)
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not say %q", tc.name, err, want)
			}
		}
	}
	if m := (FrameCount{Fill: 1, Rx: 2, Tx: 3, Completion: 4, Free: 5, Total: 16}).Missing(); m != 1 {
		t.Errorf("Missing = %d, want 1", m)
	}
}

func TestAuditFindsMisplacedFrames(t *testing.T) {
	s := newTestSocket(t, 32, 8)
	if c, err := s.Audit(); err != nil || c.Missing() != 0 || c.Fill != 8 || c.Free != 24 {
		t.Fatalf("fresh socket: %+v, %v; want 8 in the fill ring and 24 free", c, err)
	}
	// A frame pushed back onto the stack while it is in the fill ring.
	s.Frames.Push(s.Fill.addrs[0])
	if _, err := s.Audit(); err == nil || !strings.Contains(err.Error(), "both in the fill ring and in the free stack") {
		t.Errorf("duplicate: Audit = %v, want it named", err)
	}
	s.Frames.Pop()
	// A descriptor with an offset into its frame is that frame; one past
	// the socket's frames is not.
	s.kernel.Receive(1, 60, nil)
	idx, _ := s.Rx.Peek(1)
	d := s.Rx.Desc(idx)
	d.Addr += 256
	if _, err := s.Audit(); err != nil {
		t.Errorf("offset into a frame: %v", err)
	}
	d.Addr = 32 * 2048
	if _, err := s.Audit(); err == nil || !strings.Contains(err.Error(), "outside the socket's frames") {
		t.Errorf("address past the frames: Audit = %v, want it named", err)
	}
}
