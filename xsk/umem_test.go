package xsk

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestUmemConfigFrameSizes(t *testing.T) {
	page := uint32(PageSize())
	for _, tc := range []struct {
		size     uint32
		huge     bool
		headroom uint32
		want     string // "" accepted, else a part of the error
	}{
		{2048, false, 0, ""},
		{page, false, 0, ""},
		{2048, true, 0, ""},
		{page, true, 1024, ""},
		{1024, false, 0, fmt.Sprintf("frame size 1024: must be a power of two from 2048 to the page size, %d", page)},
		{3000, false, 0, "must be a power of two"},
		{2 * page, false, 0, "to the page size"},
		{2 * page, true, 0, "to the page size"},
		{2048, false, 1345, "UMEM headroom 1345 is too large for 2048-byte frames: at most 1344"},
		{2048, false, 1344, ""},
		{page, false, page - 704, ""},
	} {
		err := UmemConfig{FrameSize: tc.size, NumFrames: 4, HugePages: tc.huge, Headroom: tc.headroom}.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("frame size %d (huge %v, headroom %d): %v", tc.size, tc.huge, tc.headroom, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("frame size %d (huge %v, headroom %d): error %v, want one with %q", tc.size, tc.huge, tc.headroom, err, tc.want)
		}
	}
	var fe *FrameSizeError
	if err := (UmemConfig{FrameSize: 3000, NumFrames: 1}).Validate(); !errors.As(err, &fe) || fe.FrameSize != 3000 {
		t.Errorf("frame size 3000: %v, want a FrameSizeError", err)
	}
}

// TestAnyFrameSize: a frame size that is not a power of two is taken only
// in unaligned mode with AnyFrameSize, within the kernel's bounds, and
// FrameIndex divides by it.
func TestAnyFrameSize(t *testing.T) {
	page := uint32(PageSize())
	for _, tc := range []struct {
		cfg  UmemConfig
		want string
	}{
		{UmemConfig{FrameSize: 4001, NumFrames: 4, Unaligned: true, AnyFrameSize: true}, ""},
		{UmemConfig{FrameSize: 4001, NumFrames: 4, Unaligned: true}, "must be a power of two"},
		{UmemConfig{FrameSize: 4001, NumFrames: 4, AnyFrameSize: true}, "needs unaligned chunk mode"},
		{UmemConfig{FrameSize: 2047, NumFrames: 4, Unaligned: true, AnyFrameSize: true}, "from 2048"},
		{UmemConfig{FrameSize: page + 1, NumFrames: 4, Unaligned: true, AnyFrameSize: true}, "to the page size"},
	} {
		err := tc.cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.cfg, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: error %v, want one with %q", tc.cfg, err, tc.want)
		}
	}
	u, err := NewMemUmem(UmemConfig{FrameSize: 4001, NumFrames: 4, Unaligned: true, AnyFrameSize: true})
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[uint64]uint32{0: 0, 4000: 0, 4001: 1, 3*4001 + 17: 3, 2*4001 - 32 + 200<<48: 1} {
		if got := u.FrameIndex(addr); got != want {
			t.Errorf("FrameIndex(%#x) = %d, want %d", addr, got, want)
		}
	}
}

func TestParseMeminfo(t *testing.T) {
	in := []byte("MemTotal:       24683408 kB\nHugePages_Total:      16\nHugePages_Free:       10\nHugePages_Rsvd:        3\nHugePages_Surp:        0\nHugepagesize:       2048 kB\nHugetlb:           32768 kB\n")
	h, err := parseMeminfo(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := (HugePages{Size: 2 << 20, Total: 16, Free: 10, Reserved: 3}); h != want {
		t.Fatalf("parsed %+v, want %+v", h, want)
	}
	if h.Available() != 7 || h.PagesFor(1) != 1 || h.PagesFor(2<<20) != 1 || h.PagesFor(2<<20+1) != 2 {
		t.Errorf("available %d, pages for 1 B %d, 2 MiB %d, 2 MiB+1 %d", h.Available(), h.PagesFor(1), h.PagesFor(2<<20), h.PagesFor(2<<20+1))
	}
	if h, err := parseMeminfo([]byte("HugePages_Total: 4\nHugePages_Rsvd: 18446744073709551615\n")); err != nil || h.Reserved != 0 {
		t.Errorf("a reserved count below zero read as %+v, %v; want 0", h, err)
	}
	if _, err := parseMeminfo([]byte("HugePages_Free: many\n")); err == nil {
		t.Error("a count that is not a number accepted")
	}
	e := &HugePagesError{Need: 4, Pages: h}
	if !errors.Is(e, ErrNoHugePages) || !strings.Contains(e.Error(), "needs 4 huge pages of 2048 kB and the pool has 7 free of 16") ||
		!strings.Contains(e.Error(), "echo 13 > /proc/sys/vm/nr_hugepages") {
		t.Errorf("error %q", e)
	}
}

// TestAddressesInBothModes checks the descriptor address arithmetic the
// engine relies on: frame base, data address and frame number, aligned and
// unaligned, with and without a UMEM headroom.
func TestAddressesInBothModes(t *testing.T) {
	for _, unaligned := range []bool{false, true} {
		for _, headroom := range []uint32{0, 100} {
			u, err := NewMemUmem(UmemConfig{FrameSize: 4096, NumFrames: 8, Unaligned: unaligned, Headroom: headroom})
			if err != nil {
				t.Fatal(err)
			}
			base := uint64(5 * 4096)
			off := u.RxOffset()
			a := u.Addr(base, off)
			if unaligned && a != base|uint64(off)<<48 || !unaligned && a != base+uint64(off) {
				t.Errorf("unaligned %v: Addr(%#x, %d) = %#x", unaligned, base, off, a)
			}
			if got := u.FrameBase(a); got != base {
				t.Errorf("unaligned %v headroom %d: FrameBase(%#x) = %#x, want %#x", unaligned, headroom, a, got, base)
			}
			if got := u.DataAddr(a); got != base+uint64(off) {
				t.Errorf("unaligned %v headroom %d: DataAddr(%#x) = %#x, want %#x", unaligned, headroom, a, got, base+uint64(off))
			}
			if got := u.FrameIndex(a); got != 5 {
				t.Errorf("unaligned %v: FrameIndex(%#x) = %d, want 5", unaligned, a, got)
			}
			copy(u.area.mem[base+uint64(off):], "hello")
			if got := u.Frame(a, 5); string(got) != "hello" {
				t.Errorf("unaligned %v: Frame(%#x) = %q", unaligned, a, got)
			}
		}
	}
}

func newMBSocket(t *testing.T, frameSize uint32, multiBuffer, unaligned bool) *Socket {
	t.Helper()
	u, err := NewMemUmem(UmemConfig{FrameSize: frameSize, NumFrames: 64, Unaligned: unaligned})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewMemSocket(u, SocketConfig{FillSize: 16, CompletionSize: 16, RxSize: 16, TxSize: 16, MultiBuffer: multiBuffer})
	if err != nil {
		t.Fatal(err)
	}
	s.kernel.Headroom = u.RxOffset()
	return s
}

// TestMemKernelSplitsLongFrames checks that the in-memory kernel splits a
// frame longer than a buffer as the kernel does, in both address modes.
func TestMemKernelSplitsLongFrames(t *testing.T) {
	for _, unaligned := range []bool{false, true} {
		s := newMBSocket(t, 2048, true, unaligned)
		payload := make([]byte, 5000)
		for i := range payload {
			payload[i] = byte(i * 7)
		}
		if n := s.kernel.ReceiveLong(2, 5000, payload); n != 2 {
			t.Fatalf("delivered %d of 2 frames of 5000 bytes", n)
		}
		idx, got := s.Rx.Peek(16)
		if got != 6 { // 1792 + 1792 + 1416, twice
			t.Fatalf("unaligned %v: %d descriptors, want 6", unaligned, got)
		}
		var packet []byte
		for i := uint32(0); i < 3; i++ {
			d := s.Rx.Desc(idx + i)
			contd := d.Options&PacketContinues != 0
			if contd != (i < 2) {
				t.Errorf("descriptor %d: options %#x", i, d.Options)
			}
			if s.umem.DataAddr(d.Addr)-s.umem.FrameBase(d.Addr) != uint64(s.umem.RxOffset()) {
				t.Errorf("descriptor %d: data not %d bytes into its frame: %#x", i, s.umem.RxOffset(), d.Addr)
			}
			packet = append(packet, s.umem.Frame(d.Addr, d.Len)...)
		}
		if !bytes.Equal(packet, payload) {
			t.Errorf("unaligned %v: the segments do not make up the frame", unaligned)
		}
		s.Rx.Release(got)
	}
}

// TestMemKernelMultiBufferDrops checks the counted drops: a long frame on a
// socket without multi-buffer, and one that finds too few fill buffers or
// rx slots for all of its segments.
func TestMemKernelMultiBufferDrops(t *testing.T) {
	s := newMBSocket(t, 2048, false, false)
	if n := s.kernel.ReceiveLong(3, 2000, nil); n != 0 || s.kernel.Stats.RxDropped != 3 {
		t.Fatalf("without multi-buffer: delivered %d, stats %+v; want 0 and 3 dropped", n, s.kernel.Stats)
	}
	s = newMBSocket(t, 2048, true, false)
	// 16 buffers in the fill ring, 16 rx slots: five frames of 3 segments
	// fit, the sixth finds one buffer.
	if n := s.kernel.ReceiveLong(6, 5000, nil); n != 5 {
		t.Fatalf("delivered %d, want 5", n)
	}
	if st := s.kernel.Stats; st.RxDropped != 1 || st.RxFillRingEmptyDescs != 1 || st.RxRingFull != 0 {
		t.Fatalf("stats %+v, want one drop for an empty fill ring", st)
	}
	if got := s.Fill.Pending(); got != 1 {
		t.Fatalf("fill ring holds %d, want the 1 buffer the dropped frame left", got)
	}
	// Refill: the rx ring has one slot left, which a frame of 3 cannot use.
	s.Refill()
	if n := s.kernel.ReceiveLong(1, 5000, nil); n != 0 || s.kernel.Stats.RxRingFull != 1 {
		t.Fatalf("delivered %d into a nearly full rx ring, stats %+v", n, s.kernel.Stats)
	}
	// A one-segment frame still fits.
	if n := s.kernel.Receive(1, 100, nil); n != 1 {
		t.Fatalf("a short frame found no room")
	}
	if _, err := s.Audit(); err != nil {
		t.Fatal(err)
	}
}

// TestAuditUnaligned checks that Audit finds each frame once when the rings
// hold unaligned addresses with offsets.
func TestAuditUnaligned(t *testing.T) {
	s := newMBSocket(t, 4096, false, true)
	if n := s.kernel.Receive(5, 60, nil); n != 5 {
		t.Fatalf("delivered %d", n)
	}
	c, err := s.Audit()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Check(); err != nil || c.Rx != 5 {
		t.Fatalf("count %+v: %v", c, err)
	}
}

// TestSharePoolNeedsFirstSocket: a socket cannot share the buffer pool of
// a UMEM that has no socket yet.
func TestSharePoolNeedsFirstSocket(t *testing.T) {
	u, err := NewMemUmem(UmemConfig{FrameSize: 4096, NumFrames: 8})
	if err != nil {
		t.Fatal(err)
	}
	cfg := SocketConfig{RxSize: 8, SharePool: true}
	if err := cfg.Validate(u); err == nil || !strings.Contains(err.Error(), "first socket") {
		t.Errorf("Validate: %v, want an error about the first socket", err)
	}
	if _, err := NewMemSocket(u, SocketConfig{FillSize: 8, CompletionSize: 8, RxSize: 8}); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(u); err != nil {
		t.Errorf("Validate after the first socket, without fill and completion sizes: %v", err)
	}
}

// TestFrameSizes: the list FrameSizes gives is exactly the sizes Validate
// takes between MinFrameSize and the page size.
func TestFrameSizes(t *testing.T) {
	sizes := FrameSizes()
	if len(sizes) == 0 || sizes[0] != MinFrameSize || int(sizes[len(sizes)-1]) != PageSize() {
		t.Fatalf("FrameSizes() = %v, want %d up to the page size %d", sizes, MinFrameSize, PageSize())
	}
	listed := map[uint32]bool{}
	for _, fs := range sizes {
		listed[fs] = true
	}
	for fs := uint32(MinFrameSize / 2); int(fs) <= 2*PageSize(); fs++ {
		err := UmemConfig{FrameSize: fs, NumFrames: 1}.Validate()
		if (err == nil) != listed[fs] {
			t.Errorf("frame size %d: Validate says %v, FrameSizes lists it: %v", fs, err, listed[fs])
		}
	}
}
