package engine

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/xsk"
)

// memMBWorker is a multi-buffer worker on an in-memory socket of 2048-byte
// frames (1792 bytes of data after the kernel's headroom), with a batch of
// batch descriptors.
func memMBWorker(t testing.TB, h Handler, batch int, unaligned bool) (*rxWorker, *xsk.MemKernel) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Interface = "mem0"
	cfg.Batch, cfg.MultiBuffer, cfg.Unaligned = batch, true, unaligned
	u, err := xsk.NewMemUmem(cfg.umemConfig(cfg.framesPerSocket()))
	if err != nil {
		t.Fatal(err)
	}
	s, err := xsk.NewMemSocket(u, xsk.SocketConfig{FillSize: cfg.FillSize, CompletionSize: cfg.CompletionSize,
		RxSize: cfg.RxSize, TxSize: cfg.TxSize, MultiBuffer: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Kernel().Headroom = u.RxOffset()
	return newRxWorker(0, 0, s, h, workerOptions(&cfg)), s.Kernel()
}

// TestPeekFramesEndsWithWholeFrames: a batch of 4 descriptors over frames of
// 3 takes the rest of a frame it cut, and leaves a frame whose end the
// kernel has not posted (which it does not do; here it is made to) for the
// next batch.
func TestPeekFramesEndsWithWholeFrames(t *testing.T) {
	var seen []int
	h := HandlerFunc(func(b *Batch) {
		for i := 0; i < b.Len(); i++ {
			seen = append(seen, b.Segments(i))
		}
	})
	for _, unaligned := range []bool{false, true} {
		seen = seen[:0]
		w, k := memMBWorker(t, h, 4, unaligned)
		if n := k.ReceiveLong(3, 5000, nil); n != 3 {
			t.Fatalf("delivered %d", n)
		}
		// 9 descriptors: the first batch takes 4 and the 2 more of the
		// second frame, the next the third frame.
		if n := w.rxHandleMB(); n != 6 || len(seen) != 2 {
			t.Fatalf("first batch took %d descriptors, %d frames; want 6 and 2", n, len(seen))
		}
		if n := w.rxHandleMB(); n != 3 || len(seen) != 3 {
			t.Fatalf("second batch took %d descriptors, %d frames; want 3 and 1 more", n, len(seen))
		}
		// A frame whose last descriptor is not there: nothing is taken.
		s := w.sock
		k.ReceiveLong(1, 5000, nil)
		idx, _ := s.Rx.Peek(3)
		s.Rx.Unpeek(3)
		s.Rx.Desc(idx + 2).Options = xsk.PacketContinues // as if the frame went on
		if n := w.rxHandleMB(); n != 0 {
			t.Fatalf("took %d descriptors of a frame without its end", n)
		}
		s.Rx.Desc(idx + 2).Options = 0
		if n := w.rxHandleMB(); n != 3 {
			t.Fatalf("took %d descriptors of the completed frame, want 3", n)
		}
		if w.c.rxPackets != 4 || w.c.rxBytes != 20000 || w.c.dropped != 4 {
			t.Errorf("counters %+v, want 4 frames of 5000 bytes dropped", w.c)
		}
		if c, err := s.Audit(); err != nil || c.Check() != nil || c.Fill+c.Free != c.Total {
			t.Errorf("frames after the batches: %+v, %v", c, err)
		}
	}
}

// TestRxDropMBCountsFramesOnce: a frame whose descriptors are split between
// two batches of the drop-all loop counts once, in the second.
func TestRxDropMBCountsFramesOnce(t *testing.T) {
	w, k := memMBWorker(t, dropAll{}, 4, false)
	k.ReceiveLong(2, 5000, nil) // 6 descriptors
	if n := w.rxDropMB(); n != 4 || w.c.rxPackets != 1 || w.c.rxBytes != 5000+1792 {
		t.Fatalf("first batch: %d descriptors, counters %+v", n, w.c)
	}
	if n := w.rxDropMB(); n != 2 || w.c.rxPackets != 2 || w.c.rxBytes != 10000 || w.c.dropped != 2 {
		t.Fatalf("second batch: %d descriptors, counters %+v", n, w.c)
	}
}

// TestTxRingFullDropsWholeFrames: a frame that does not fit in what is left
// of the tx ring is dropped whole and counted once, and every descriptor on
// the ring belongs to a whole frame.
func TestTxRingFullDropsWholeFrames(t *testing.T) {
	w, k := memMBWorker(t, swapMACs{}, 64, false)
	// Leave 4 slots on the tx ring: room for one frame of 3, not two.
	s := w.sock
	idx, got := s.Tx.Reserve(s.Tx.Size() - 4)
	for i := uint32(0); i < got; i++ {
		s.Tx.Set(idx+i, 0, 60)
	}
	s.Tx.Submit(got)
	k.ReceiveLong(2, 5000, nil)
	if n := w.rxHandleMB(); n != 6 {
		t.Fatalf("took %d descriptors", n)
	}
	if w.c.txRingFull != 1 || s.Tx.Pending() != s.Tx.Size()-1 {
		t.Fatalf("tx ring full %d, %d on the ring; want 1 frame refused and 3 descriptors queued", w.c.txRingFull, s.Tx.Pending())
	}
	for i := uint32(0); i < 3; i++ {
		d := k.TxDesc(got + i)
		if contd := d.Options&xsk.PacketContinues != 0; contd != (i < 2) {
			t.Errorf("descriptor %d of the frame: options %#x", i, d.Options)
		}
	}
}

// TestForwardMBCopy forwards a frame of several segments to a port with a
// UMEM of its own: copied segment by segment, each in a frame of the port's,
// and completions count it once.
func TestForwardMBCopy(t *testing.T) {
	w, k := memMBWorker(t, forwardTo{port: ToOutput(0), mac: fwdMAC}, 64, false)
	cfg := DefaultConfig()
	ou, err := xsk.NewMemUmem(xsk.UmemConfig{FrameSize: 2048, NumFrames: cfg.TxSize + outFrames})
	if err != nil {
		t.Fatal(err)
	}
	os, err := xsk.NewMemSocket(ou, xsk.SocketConfig{FillSize: outFillSize, CompletionSize: cfg.CompletionSize, TxSize: cfg.TxSize, MultiBuffer: true})
	if err != nil {
		t.Fatal(err)
	}
	w.ports = append(w.ports, os)
	w.syncPorts()
	frame := make([]byte, 5000)
	copy(frame, frame64)
	for i := 14; i < len(frame); i++ {
		frame[i] = byte(i * 7)
	}
	want := append([]byte(nil), frame...)
	copy(want, fwdMAC)
	for round := 0; round < 3; round++ {
		k.ReceiveLong(10, uint32(len(frame)), frame)
		if n := w.rxHandleMB(); n != 30 {
			t.Fatalf("took %d descriptors", n)
		}
		out := os.Kernel()
		sent := out.Transmit(64)
		if sent != 30 {
			t.Fatalf("the output transmitted %d descriptors, want 30", sent)
		}
		var got []byte
		for i := 0; i < sent; i++ {
			d := out.TxDesc(uint32(round*30 + i))
			got = append(got, ou.Frame(d.Addr, d.Len)...)
			if d.Options&xsk.PacketContinues == 0 {
				if !bytes.Equal(got, want) {
					t.Fatalf("round %d: a frame went out as %d bytes that differ", round, len(got))
				}
				got = nil
			}
		}
		w.complete()
	}
	if w.c.rxPackets != 30 || w.c.txPackets != 30 || w.c.txBytes != 30*5000 || w.txOutstanding != 0 {
		t.Errorf("counters %+v, outstanding %d", w.c, w.txOutstanding)
	}
	if c := w.sock.CountFrames(); c.Fill+c.Free != c.Total {
		t.Errorf("input frames not all back: %+v", c)
	}
	if c := os.CountFrames(); c.Free != c.Total-c.Fill {
		t.Errorf("output frames not all back: %+v", c)
	}
}

// memMBTxWorker is a multi-buffer generator worker on an in-memory socket.
func memMBTxWorker(t testing.TB, frames [][]byte, count uint64, frameSize uint32) (*txWorker, *xsk.MemKernel) {
	t.Helper()
	return memGenWorker(t, frames, count, frameSize, true, false)
}

// memGenWorker is a generator worker on an in-memory socket, with or
// without multi-buffer, aligned or not.
func memGenWorker(t testing.TB, frames [][]byte, count uint64, frameSize uint32, multiBuffer, unaligned bool) (*txWorker, *xsk.MemKernel) {
	t.Helper()
	cfg := DefaultGeneratorConfig()
	cfg.Interface = "mem0"
	cfg.Frames, cfg.Count, cfg.FrameSize, cfg.MultiBuffer, cfg.Unaligned = frames, count, frameSize, multiBuffer, unaligned
	cfg.Queues = []int{0}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	n := cfg.txFrames()
	sc := cfg.sockets()
	u, err := xsk.NewMemUmem(sc.umemConfig(n + outFrames))
	if err != nil {
		t.Fatal(err)
	}
	writeTxFrames(u, cfg.Frames, n, cfg.segments())
	s, err := xsk.NewMemSocket(u, xsk.SocketConfig{FillSize: outFillSize, CompletionSize: cfg.CompletionSize, TxSize: cfg.TxSize,
		FirstFrame: n, NumFrames: outFrames, MultiBuffer: multiBuffer})
	if err != nil {
		t.Fatal(err)
	}
	w := newTxWorker(0, 0, s, workerOptions(&sc), newTxGen(&cfg, 0, n))
	return w, s.Kernel()
}

// TestTxOnlyMultiBuffer sends 9000-byte frames over 2048-byte UMEM frames:
// five descriptors each, the frames whole and in variant order, counted as
// frames and bytes on completion.
func TestTxOnlyMultiBuffer(t *testing.T) {
	cfg := testUDP(9000)
	frames, err := packet.UDPVariants(cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	w, k := memMBTxWorker(t, frames, 0, 2048)
	s := w.sock
	var sent uint32
	for i := 0; i < 3; i++ {
		sent += w.txBatchMB(time.Time{})
	}
	if sent != 3*64 || s.Tx.Pending() != 3*64*5 {
		t.Fatalf("submitted %d frames, %d descriptors; want %d and %d", sent, s.Tx.Pending(), 3*64, 3*64*5)
	}
	var f []byte
	got := 0
	for i := uint32(0); i < s.Tx.Pending(); i++ {
		d := k.TxDesc(i)
		f = append(f, s.Umem().Frame(d.Addr, d.Len)...)
		if d.Options&xsk.PacketContinues != 0 {
			continue
		}
		if want := frames[got%3]; !bytes.Equal(f, want) {
			t.Fatalf("frame %d: %d bytes that differ from variant %d", got, len(f), got%3)
		}
		got++
		f = nil
	}
	// The kernel takes what the completion ring has room for; the rest
	// follows on the next rounds.
	for w.txOutstanding > 0 {
		k.Transmit(int(s.Tx.Size()))
		w.txComplete()
	}
	if w.c.txPackets != 3*64 || w.c.txBytes != 3*64*9000 || w.tx.inFlight != 0 {
		t.Errorf("counted %d frames, %d bytes, %d in flight; want %d frames of 9000", w.c.txPackets, w.c.txBytes, w.tx.inFlight, 3*64)
	}
}

// TestTxOnlyMultiBufferCount: a count of jumbo frames is sent exactly, and
// the slots bound the frames in flight.
func TestTxOnlyMultiBufferCount(t *testing.T) {
	frames := [][]byte{make([]byte, 9000)}
	if _, err := packet.BuildUDP(frames[0], testUDP(9000)); err != nil {
		t.Fatal(err)
	}
	w, k := memMBTxWorker(t, frames, 5001, 4096)
	k.AutoTransmit = true
	k.SetNeedWakeup(false, true)
	if err := w.run(new(atomic.Bool)); err != nil {
		t.Fatal(err)
	}
	if w.c.txPackets != 5001 || w.c.txBytes != 5001*9000 || k.Transmitted != 5001*3 || w.txOutstanding != 0 {
		t.Errorf("sent %d frames, %d bytes, %d descriptors transmitted, %d outstanding; want 5001 frames", w.c.txPackets, w.c.txBytes, k.Transmitted, w.txOutstanding)
	}
}

// TestGeneratorConfigMultiBuffer checks the frame limits.
func TestGeneratorConfigMultiBuffer(t *testing.T) {
	big := make([]byte, 9000)
	c := DefaultGeneratorConfig()
	c.Interface, c.Frames = "mem0", [][]byte{big}
	if err := c.Validate(); err == nil {
		t.Error("a 9000-byte frame without multi-buffer accepted")
	}
	c.MultiBuffer = true
	if err := c.Validate(); err != nil {
		t.Errorf("a 9000-byte frame with multi-buffer: %v", err)
	}
	if c.segments() != 5 || c.txFrames()%5 != 0 {
		t.Errorf("%d segments, %d frames", c.segments(), c.txFrames())
	}
	c.Frames = [][]byte{make([]byte, 18*2048+1)}
	if err := c.Validate(); err == nil {
		t.Error("a frame of 19 UMEM frames accepted")
	}
}

// TestTxOnlyUnaligned runs the generator on an unaligned UMEM, one buffer
// per frame and several: what the kernel transmits is the frames, whole.
func TestTxOnlyUnaligned(t *testing.T) {
	for _, size := range []int{64, 9000} {
		frames, err := packet.UDPVariants(testUDP(size), 2)
		if err != nil {
			t.Fatal(err)
		}
		w, k := memGenWorker(t, frames, 1001, 4096, size > 4096, true)
		if !w.umem.Unaligned() {
			t.Fatal("the UMEM is aligned")
		}
		var got []byte
		n := 0
		for w.tx.left > 0 || w.txOutstanding > 0 {
			if size > 4096 {
				w.txBatchMB(time.Time{})
			} else {
				w.txBatch(time.Time{})
			}
			before := k.Transmitted
			k.Transmit(64)
			for i := before; i < k.Transmitted; i++ {
				d := k.TxDesc(uint32(i))
				got = append(got, w.umem.Frame(d.Addr, d.Len)...)
				if d.Options&xsk.PacketContinues == 0 {
					if !bytes.Equal(got, frames[n%2]) {
						t.Fatalf("%d-byte frames: frame %d went out as %d bytes that differ", size, n, len(got))
					}
					got, n = nil, n+1
				}
			}
			w.txComplete()
		}
		if n != 1001 || w.c.txPackets != 1001 || w.c.txBytes != 1001*uint64(size) {
			t.Errorf("%d-byte frames: %d sent, counted %d frames and %d bytes", size, n, w.c.txPackets, w.c.txBytes)
		}
	}
}
