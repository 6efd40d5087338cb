package xsk

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// memSocket is an in-memory socket on a UMEM of its own, with rings of
// size slots.
func memSocket(t *testing.T, uc UmemConfig, mb bool, size uint32) (*Socket, *MemKernel) {
	t.Helper()
	u, err := NewMemUmem(uc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewMemSocket(u, SocketConfig{FillSize: size, CompletionSize: size, RxSize: size, TxSize: size, MultiBuffer: mb})
	if err != nil {
		t.Fatal(err)
	}
	return s, s.Kernel()
}

// sendDescs puts descs on the tx ring and submits them.
func sendDescs(t *testing.T, s *Socket, descs ...Desc) {
	t.Helper()
	idx, got := s.Tx.Reserve(uint32(len(descs)))
	if got != uint32(len(descs)) {
		t.Fatalf("tx ring took %d of %d descriptors", got, len(descs))
	}
	for i, d := range descs {
		s.Tx.SetOptions(idx+uint32(i), d.Addr, d.Len, d.Options)
	}
	s.Tx.Submit(got)
}

// reap takes every completion off the ring and returns the addresses.
func reap(s *Socket) []uint64 {
	var addrs []uint64
	idx, n := s.Completion.Peek(s.Completion.Size())
	for i := uint32(0); i < n; i++ {
		addrs = append(addrs, s.Completion.Addr(idx+i))
	}
	s.Completion.Release(n)
	return addrs
}

// The simulated kernel refuses the tx descriptors the kernel refuses
// (xp_aligned_validate_desc, xp_unaligned_validate_desc), in both chunk
// modes, with 2 KiB and 4 KiB frames, with and without TX metadata in
// front of the data, on sockets with and without multi-buffer; each
// refused one counts once in TxInvalidDescs and, without ReclaimInvalid,
// never reaches the completion ring.
func TestTransmitChecksDescriptors(t *testing.T) {
	const frames = 8
	type tc struct {
		name string
		// addr and length of the descriptor, given fs (the frame size)
		// and meta (the TX metadata length, 0 without).
		desc func(fs, meta uint64) Desc
		// aligned, unaligned: whether the kernel takes it in each mode.
		aligned, unaligned bool
		mbOnly             bool // and only on a multi-buffer socket
		noMeta             bool // and only without TX metadata
	}
	off := func(base, o uint64) uint64 { return base | o<<48 } // an unaligned address
	cases := []tc{
		{"a short frame after the metadata", func(fs, m uint64) Desc { return Desc{Addr: fs + m, Len: 64} }, true, true, false, false},
		{"the rest of the frame after the metadata", func(fs, m uint64) Desc { return Desc{Addr: fs + m, Len: uint32(fs - m)} }, true, true, false, false},
		{"one byte more than the frame holds", func(fs, m uint64) Desc { return Desc{Addr: fs + m, Len: uint32(fs-m) + 1} }, false, false, false, false},
		{"across into the next frame", func(fs, m uint64) Desc { return Desc{Addr: fs + m + 100, Len: uint32(fs - m - 99)} }, false, true, false, false},
		{"zero length", func(fs, m uint64) Desc { return Desc{Addr: fs + m, Len: 0} }, false, false, false, false},
		{"an unknown option bit", func(fs, m uint64) Desc { return Desc{Addr: fs + m, Len: 64, Options: 1 << 2} }, false, false, false, false},
		{"every option bit", func(fs, m uint64) Desc { return Desc{Addr: fs + m, Len: 64, Options: 0xffff} }, false, false, false, false},
		{"TX metadata asked for", func(fs, m uint64) Desc { return Desc{Addr: fs + m, Len: 64, Options: TxMetadataOption} }, true, true, false, false},
		{"XDP_PKT_CONTD", func(fs, m uint64) Desc { return Desc{Addr: fs + m, Len: 64, Options: PacketContinues} }, true, true, true, false},
		{"data at the frame's start", func(fs, m uint64) Desc { return Desc{Addr: 0, Len: 64} }, true, true, false, true},
		{"data 16 bytes into the UMEM", func(fs, m uint64) Desc { return Desc{Addr: 16, Len: 64} }, true, true, false, true},
		{"the last frame, whole", func(fs, m uint64) Desc { return Desc{Addr: (frames-1)*fs + m, Len: uint32(fs - m)} }, true, true, false, false},
		{"the UMEM's last 64 bytes", func(fs, m uint64) Desc { return Desc{Addr: frames*fs - 64, Len: 64} }, true, true, false, false},
		{"past the UMEM's end by one byte", func(fs, m uint64) Desc { return Desc{Addr: frames*fs - 64, Len: 65} }, false, false, false, false},
		{"past the UMEM", func(fs, m uint64) Desc { return Desc{Addr: frames*fs + m, Len: 64} }, false, false, false, false},
		{"an offset in the upper 16 bits", func(fs, m uint64) Desc { return Desc{Addr: off(2*fs, m+32), Len: 64} }, false, true, false, false},
		{"an offset that leads past the UMEM", func(fs, m uint64) Desc { return Desc{Addr: off((frames-1)*fs, fs), Len: 64} }, false, false, false, false},
	}
	for _, fs := range []uint32{2048, 4096} {
		for _, unaligned := range []bool{false, true} {
			for _, meta := range []bool{false, true} {
				for _, mb := range []bool{false, true} {
					name := fmt.Sprintf("%d/unaligned=%v/txmeta=%v/multibuffer=%v", fs, unaligned, meta, mb)
					t.Run(name, func(t *testing.T) {
						s, k := memSocket(t, UmemConfig{FrameSize: fs, NumFrames: frames, Unaligned: unaligned, TxMetadata: meta}, mb, 64)
						var m uint64
						if meta {
							m = TxMetadataLen
						}
						var invalid uint64
						for _, c := range cases {
							d := c.desc(uint64(fs), m)
							want := c.aligned
							if unaligned {
								want = c.unaligned
							}
							want = want && (!c.mbOnly || mb) && (!c.noMeta || !meta)
							if got := k.ValidTx(d); got != want {
								t.Errorf("%s (%+v): ValidTx %v, want %v", c.name, d, got, want)
							}
							if d.Options&PacketContinues != 0 && want {
								// A valid descriptor that says the packet
								// goes on is sent with the packet's end.
								sendDescs(t, s, d, Desc{Addr: 3*uint64(fs) + m, Len: 64})
							} else {
								sendDescs(t, s, d)
							}
							sent := k.Transmit(64)
							done := reap(s)
							if !want {
								invalid++
							}
							switch {
							case k.Stats.TxInvalidDescs != invalid:
								t.Errorf("%s (%+v): tx_invalid_descs %d, want %d", c.name, d, k.Stats.TxInvalidDescs, invalid)
							case want && (sent == 0 || len(done) == 0 || done[0] != d.Addr):
								t.Errorf("%s (%+v): sent %d, completions %#x; want it sent and completed", c.name, d, sent, done)
							case !want && (sent != 0 || len(done) != 0):
								t.Errorf("%s (%+v): sent %d, completions %#x; want it refused and kept", c.name, d, sent, done)
							}
							if s.Tx.Pending() != 0 {
								t.Fatalf("%s: %d descriptors left on the tx ring", c.name, s.Tx.Pending())
							}
						}
					})
				}
			}
		}
	}
}

// mbStream is a tx ring's worth of multi-buffer packets with invalid
// descriptors among them, on a UMEM of 2 KiB frames, 32 of them:
// descriptor i uses frame i, but for the one past the UMEM.
func mbStream() []Desc {
	const fs = 2048
	f := func(i uint64) uint64 { return i * fs }
	c := uint32(PacketContinues)
	return []Desc{
		{Addr: f(0), Len: 64}, // a valid frame
		// A packet whose last descriptor has no length.
		{Addr: f(1), Len: 100, Options: c},
		{Addr: f(2), Len: 100, Options: c},
		{Addr: f(3), Len: 0},
		// A packet whose second descriptor is past the UMEM and says
		// the packet goes on, then a valid descriptor that ends it.
		{Addr: f(4), Len: 100, Options: c},
		{Addr: f(32), Len: 100, Options: c},
		{Addr: f(6), Len: 100},
		// A packet whose second descriptor has every option bit
		// (XDP_PKT_CONTD among them), then a valid packet of two.
		{Addr: f(7), Len: 100, Options: c},
		{Addr: f(8), Len: 100, Options: 0xffff},
		{Addr: f(9), Len: 100, Options: c},
		{Addr: f(10), Len: 100},
		{Addr: f(11), Len: 64}, // a valid frame
	}
}

// A multi-buffer packet with an invalid descriptor is dropped whole, each
// of its descriptors counted in TxInvalidDescs, as the kernel reads it:
// without ReclaimInvalid the invalid descriptor ends the packet and none of
// it comes back (the audit finds the frames kept by the kernel); with it
// the packet ends only at a descriptor without XDP_PKT_CONTD and every
// descriptor comes back on the completion ring in its place.
func TestTransmitDropsInvalidPackets(t *testing.T) {
	f := func(is ...uint64) []uint64 {
		var a []uint64
		for _, i := range is {
			a = append(a, i*2048)
		}
		return a
	}
	for _, tc := range []struct {
		reclaim     bool
		invalid     uint64
		sent        int
		completions []uint64
		lost        []uint64
	}{
		// Before the reclaim series: [0] sent; [1 2 3] dropped at 3;
		// [4 32] dropped at 32; [6] sent; [7 8] dropped at 8; [9 10]
		// and [11] sent.
		{false, 3 + 2 + 2, 5, f(0, 6, 9, 10, 11), f(1, 2, 3, 4, 32, 7, 8)},
		// With it: [0] sent; [1 2 3] dropped; [4 32 6] dropped (32
		// says it goes on); [7 8 9 10] dropped (8 has the bit); [11]
		// sent; every descriptor back in its place.
		{true, 3 + 3 + 4, 2, f(0, 1, 2, 3, 4, 32, 6, 7, 8, 9, 10, 11), nil},
	} {
		t.Run(fmt.Sprintf("reclaim=%v", tc.reclaim), func(t *testing.T) {
			s, k := memSocket(t, UmemConfig{FrameSize: 2048, NumFrames: 32}, true, 16)
			k.ReclaimInvalid = tc.reclaim
			// The stream's frames come off the free stack and the fill
			// ring, as an application's would.
			taken := map[uint64]bool{}
			for _, d := range mbStream() {
				taken[d.Addr] = true
			}
			drainFramesExcept(t, s, taken)
			sendDescs(t, s, mbStream()...)
			sent := k.Transmit(64)
			got := reap(s)
			if sent != tc.sent || k.Stats.TxInvalidDescs != tc.invalid || !slices.Equal(got, tc.completions) || !slices.Equal(k.Lost(), tc.lost) {
				t.Fatalf("sent %d, tx_invalid_descs %d, completions %#x, kept %#x; want %d, %d, %#x, %#x",
					sent, k.Stats.TxInvalidDescs, got, k.Lost(), tc.sent, tc.invalid, tc.completions, tc.lost)
			}
			for _, a := range got {
				if a < 32*2048 { // not the address past the UMEM
					s.Frames.Push(a)
				}
			}
			c, err := s.Audit()
			if err != nil {
				t.Fatal(err)
			}
			lost := len(tc.lost)
			if !tc.reclaim {
				lost-- // the address past the UMEM is no frame of the socket's
			}
			if c.Missing() != 0 || c.Kernel != lost {
				t.Fatalf("%+v: want every frame found, %d kept by the kernel", c, lost)
			}
			err = c.Check()
			switch {
			case lost == 0 && err != nil:
				t.Fatalf("every frame came back: %v", err)
			case lost > 0 && (err == nil || !strings.Contains(err.Error(), "lost")):
				t.Fatalf("%d frames kept by the kernel: Check says %v, want them lost", lost, err)
			}
		})
	}
}

// drainFramesExcept takes the frames in keep off the socket's free stack
// and out of its fill ring, as though the application held them: the
// frames the test is about to transmit. The fill ring is emptied and
// refilled with the others.
func drainFramesExcept(t *testing.T, s *Socket, keep map[uint64]bool) {
	t.Helper()
	k := s.kernel
	// Have the kernel hand back what the fill ring holds: take every
	// entry and publish, then put the addresses on the free stack.
	idx, n := k.fill.peek(k.fill.size)
	for i := uint32(0); i < n; i++ {
		s.Frames.Push(k.fillAddrs[(idx+i)&k.fill.mask])
	}
	k.fill.release(n)
	var rest []uint64
	for {
		a, ok := s.Frames.Pop()
		if !ok {
			break
		}
		if !keep[a] {
			rest = append(rest, a)
		}
	}
	for _, a := range rest {
		s.Frames.Push(a)
	}
	s.Refill()
}

// A packet may have up to MaxTxDescs descriptors: one that says it goes on
// past that is dropped at the descriptor it cannot take (before the
// reclaim series, the next descriptor begins a packet) or to its end (with
// it).
func TestTransmitTooManyDescriptors(t *testing.T) {
	long := func(n int, lastContinues bool) []Desc {
		var ds []Desc
		for i := range n {
			d := Desc{Addr: uint64(i) * 2048, Len: 100, Options: PacketContinues}
			if i == n-1 && !lastContinues {
				d.Options = 0
			}
			ds = append(ds, d)
		}
		return ds
	}
	for _, tc := range []struct {
		name    string
		descs   []Desc
		reclaim bool
		sent    int
		invalid uint64
		comps   int
	}{
		{"18 descriptors", long(MaxTxDescs, false), false, 18, 0, 18},
		{"19, before the reclaim series", long(MaxTxDescs+1, false), false, 1, 18, 1},
		{"19, with it", long(MaxTxDescs+1, false), true, 0, 19, 19},
		{"18 and a 19th that ends another packet, before", append(long(MaxTxDescs, true), Desc{Addr: 30 * 2048, Len: 64}), false, 1, 18, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, k := memSocket(t, UmemConfig{FrameSize: 2048, NumFrames: 32}, true, 32)
			k.ReclaimInvalid = tc.reclaim
			sendDescs(t, s, tc.descs...)
			sent := k.Transmit(64)
			if comps := reap(s); sent != tc.sent || k.Stats.TxInvalidDescs != tc.invalid || len(comps) != tc.comps {
				t.Fatalf("sent %d, tx_invalid_descs %d, %d completions; want %d, %d, %d", sent, k.Stats.TxInvalidDescs, len(comps), tc.sent, tc.invalid, tc.comps)
			}
		})
	}
}

// A packet waits on the tx ring until its last descriptor is there; on a
// socket without multi-buffer XDP_PKT_CONTD makes a descriptor invalid,
// a packet of its own.
func TestTransmitWholePackets(t *testing.T) {
	s, k := memSocket(t, UmemConfig{FrameSize: 2048, NumFrames: 32}, true, 16)
	sendDescs(t, s, Desc{Addr: 0, Len: 100, Options: PacketContinues})
	if sent := k.Transmit(16); sent != 0 || s.Tx.Pending() != 1 {
		t.Fatalf("half a packet: sent %d, %d pending; want it left on the ring", sent, s.Tx.Pending())
	}
	sendDescs(t, s, Desc{Addr: 2048, Len: 100})
	if sent := k.Transmit(16); sent != 2 || s.Tx.Pending() != 0 || !slices.Equal(reap(s), []uint64{0, 2048}) {
		t.Fatalf("the whole packet: sent %d, %d pending", sent, s.Tx.Pending())
	}

	s, k = memSocket(t, UmemConfig{FrameSize: 2048, NumFrames: 32}, false, 16)
	k.ReclaimInvalid = true
	sendDescs(t, s, Desc{Addr: 0, Len: 100, Options: PacketContinues}, Desc{Addr: 2048, Len: 100})
	sent := k.Transmit(16)
	if got := reap(s); sent != 0 || k.Stats.TxInvalidDescs != 2 || !slices.Equal(got, []uint64{0, 2048}) {
		// The refused descriptor says the packet goes on: with the
		// reclaim series the packet's end goes with it.
		t.Fatalf("without multi-buffer: sent %d, tx_invalid_descs %d, completions %#x; want 0, 2, [0 0x800]", sent, k.Stats.TxInvalidDescs, got)
	}
}

// With FillLag the kernel publishes its fill-ring consumer index late, so
// the application finds its fill ring full while frames it gave are in the
// rx ring; the audit counts the fill ring from the kernel's own index, so
// that no frame counts twice, and the kernel publishes all it used as soon
// as it finds fewer entries than it needs.
func TestFillLag(t *testing.T) {
	s, k := memSocket(t, UmemConfig{FrameSize: 2048, NumFrames: 16}, false, 8)
	k.FillLag = 4
	audit := func(when string, fill, rx, free int) {
		t.Helper()
		c, err := s.Audit()
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if err := c.Check(); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if c.Fill != fill || c.Rx != rx || c.Free != free {
			t.Fatalf("%s: %+v, want fill %d, rx %d, free %d", when, c, fill, rx, free)
		}
	}
	audit("at the start", 8, 0, 8)
	if got := k.Receive(4, 60, nil); got != 4 {
		t.Fatalf("received %d of 4", got)
	}
	audit("after 4 frames", 4, 4, 8)
	if _, room := s.Fill.Reserve(4); room != 0 {
		t.Fatalf("the fill ring has room for %d with the kernel's consumer index unpublished, want none", room)
	}
	// The application takes the frames and, its fill ring full, keeps
	// them on its free stack.
	idx, n := s.Rx.Peek(8)
	for i := uint32(0); i < n; i++ {
		s.Frames.Push(s.Rx.Desc(idx + i).Addr)
	}
	s.Rx.Release(n)
	audit("with the frames parked", 4, 0, 12)
	if got := k.Receive(2, 60, nil); got != 2 {
		t.Fatalf("received %d of 2", got)
	}
	// 6 used, 4 of them unpublished: room for 2.
	if got := s.Refill(); got != 2 {
		t.Fatalf("refilled %d, want the 2 entries the kernel published", got)
	}
	audit("after a refill", 4, 2, 10)
	// The kernel needs 6 and finds 4: it publishes all it used.
	if got := k.Receive(6, 60, nil); got != 4 || k.Stats.RxFillRingEmptyDescs != 2 {
		t.Fatalf("received %d of 6, fill ring empty %d times; want 4 and 2", got, k.Stats.RxFillRingEmptyDescs)
	}
	if _, room := s.Fill.Reserve(8); room != 8 {
		t.Fatalf("the fill ring has room for %d after the kernel ran short, want all 8", room)
	}
	s.Fill.Cancel(8)
	audit("after the kernel ran short", 0, 6, 10)
}

// Check is exact for an in-memory socket: one frame missing is an error,
// where a copy-mode socket's kernel may hold one.
func TestCheckExactInMemory(t *testing.T) {
	s, _ := memSocket(t, UmemConfig{FrameSize: 2048, NumFrames: 16}, false, 8)
	c := s.CountFrames()
	if err := c.Check(); err != nil || !c.InMemory {
		t.Fatalf("%+v: %v", c, err)
	}
	s.Frames.Pop() // a frame the application forgot
	c = s.CountFrames()
	if err := c.Check(); err == nil {
		t.Fatalf("%+v: one frame missing, and Check passes", c)
	}
	c.InMemory = false
	if err := c.Check(); err != nil {
		t.Fatalf("%+v: a copy-mode socket's kernel may park a frame: %v", c, err)
	}
}
