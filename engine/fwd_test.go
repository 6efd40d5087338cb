package engine

import (
	"bytes"
	"net"
	"testing"

	"github.com/xdpeng/xdpeng/xsk"
)

var fwdMAC = net.HardwareAddr{0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee}

// memFwdWorker is a forwarding worker on in-memory sockets: the input
// socket and, as port 1, an output socket on the same UMEM (shared) or on a
// UMEM of its own.
func memFwdWorker(t testing.TB, shared bool) (w *rxWorker, in, out *xsk.MemKernel) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Interface = "mem0"
	per := cfg.framesPerSocket()
	u, err := xsk.NewMemUmem(xsk.UmemConfig{FrameSize: cfg.FrameSize, NumFrames: per + outFrames})
	if err != nil {
		t.Fatal(err)
	}
	s, err := xsk.NewMemSocket(u, xsk.SocketConfig{FillSize: cfg.FillSize, CompletionSize: cfg.CompletionSize, RxSize: cfg.RxSize, TxSize: cfg.TxSize, NumFrames: per})
	if err != nil {
		t.Fatal(err)
	}
	ou, first := u, per
	if !shared {
		if ou, err = xsk.NewMemUmem(xsk.UmemConfig{FrameSize: cfg.FrameSize, NumFrames: cfg.TxSize + outFrames}); err != nil {
			t.Fatal(err)
		}
		first = 0
	}
	os, err := xsk.NewMemSocket(ou, xsk.SocketConfig{FillSize: outFillSize, CompletionSize: cfg.CompletionSize, TxSize: cfg.TxSize, FirstFrame: first, NumFrames: map[bool]uint32{true: outFrames, false: cfg.TxSize + outFrames}[shared]})
	if err != nil {
		t.Fatal(err)
	}
	w = newRxWorker(0, 0, s, forwardTo{port: ToOutput(0), mac: fwdMAC}, workerOptions(&cfg))
	w.ports = append(w.ports, os)
	w.syncPorts()
	return w, s.Kernel(), os.Kernel()
}

func testFwd(t *testing.T, shared bool) {
	w, in, out := memFwdWorker(t, shared)
	frame := make([]byte, 100)
	copy(frame, frame64)
	for i := 14; i < len(frame); i++ {
		frame[i] = byte(i)
	}
	want := append([]byte(nil), frame...)
	copy(want, fwdMAC)
	for round := 0; round < 100; round++ {
		if got := in.Receive(64, uint32(len(frame)), frame); got != 64 {
			t.Fatalf("round %d: kernel delivered %d of 64", round, got)
		}
		if n := w.rxHandle(); n != 64 {
			t.Fatalf("round %d: handled %d", round, n)
		}
		os := w.ports[1]
		if p := os.Tx.Pending(); p != 64 {
			t.Fatalf("round %d: %d frames on the output tx ring, want 64", round, p)
		}
		for i := uint32(0); i < 64; i++ {
			d := out.TxDesc(uint32(round)*64 + i)
			if got := os.Umem().Frame(d.Addr, d.Len); !bytes.Equal(got, want) {
				t.Fatalf("round %d frame %d on the output ring:\n got %x\nwant %x", round, i, got, want)
			}
			if shared != (os.Umem() == w.umem) {
				t.Fatal("wrong UMEM")
			}
		}
		if got := out.Transmit(64); got != 64 {
			t.Fatalf("transmitted %d", got)
		}
		w.complete()
	}
	if w.c.rxPackets != 6400 || w.c.txPackets != 6400 || w.c.dropped != 0 || w.c.txRingFull != 0 || w.txOutstanding != 0 {
		t.Fatalf("counters %+v, outstanding %d", w.c, w.txOutstanding)
	}
	// Every frame is back where it started: the input's in its fill ring or
	// on its stack, the output's (copy) on its stack.
	if err := w.sock.CountFrames().Check(); err != nil {
		t.Error("input:", err)
	}
	if c := w.sock.CountFrames(); c.Fill+c.Free != c.Total {
		t.Errorf("input frames not all free: %+v", c)
	}
	if !shared {
		if err := w.ports[1].CountFrames().Check(); err != nil {
			t.Error("output:", err)
		}
	}
}

func TestFwdSharedUmem(t *testing.T) { testFwd(t, true) }
func TestFwdCopy(t *testing.T)       { testFwd(t, false) }

// TestFwdOutputFull checks that frames the output cannot take are counted
// and recycled, not lost.
func TestFwdOutputFull(t *testing.T) {
	w, in, _ := memFwdWorker(t, true)
	var rx uint64
	for i := 0; i < 40; i++ { // 2560 frames for a 2048-slot output ring
		in.Receive(64, 64, frame64)
		rx += uint64(w.rxHandle())
	}
	os := w.ports[1]
	if os.Tx.Pending() != os.Tx.Size() {
		t.Fatalf("output ring holds %d, want it full (%d)", os.Tx.Pending(), os.Tx.Size())
	}
	if got := uint64(os.Tx.Pending()) + w.c.txRingFull; got != rx {
		t.Fatalf("received %d != queued %d + ring full %d", rx, os.Tx.Pending(), w.c.txRingFull)
	}
}

func TestOutputsValidate(t *testing.T) {
	for _, outs := range [][]Output{
		{{Interface: "dut0"}},                      // the input device
		{{Interface: "dut1"}, {Interface: "dut1"}}, // twice
		{{Interface: ""}},                          // no name
		make([]Output, MaxOutputs+1),               // too many
	} {
		cfg := DefaultConfig()
		cfg.Interface = "dut0"
		cfg.Outputs = outs
		if err := cfg.Validate(); err == nil {
			t.Errorf("outputs %+v accepted", outs)
		}
	}
}
