package engine_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/xsk"
)

// splitter sends frames to even UDP ports out of port a and the rest out of
// port b, each with a destination MAC of its port's, and drops what is not
// UDP.
type splitter struct {
	a, b       engine.Dest
	macA, macB net.HardwareAddr
}

func (h splitter) Handle(b *engine.Batch) {
	var s packet.Summary
	for i := 0; i < b.Len(); i++ {
		f := b.Frame(i)
		if !packet.Parse(f, &s) || s.Proto != packet.ProtoUDP {
			continue
		}
		if s.DstPort%2 == 0 {
			packet.SetDstMAC(f, h.macA)
			b.Forward(i, h.a)
		} else {
			packet.SetDstMAC(f, h.macB)
			b.Forward(i, h.b)
		}
	}
}

// TestSimTwoOutputs runs a forwarder with two output ports over more
// frames than a batch and checks each port's frames byte for byte, in
// order, and the counters.
func TestSimTwoOutputs(t *testing.T) {
	h := splitter{a: engine.ToOutput(0), b: engine.ToOutput(1),
		macA: net.HardwareAddr{2, 0, 0, 0, 0xa, 0xa}, macB: net.HardwareAddr{2, 0, 0, 0, 0xb, 0xb}}
	var frames, wantA, wantB [][]byte
	for i := 0; i < 150; i++ {
		f := udpFrame(uint16(1000+i), 64)
		if i%7 == 0 {
			f[12], f[13] = 0x08, 0x06 // ARP: dropped
		}
		frames = append(frames, f)
		w := append([]byte(nil), f...)
		switch {
		case i%7 == 0:
		case i%2 == 0:
			copy(w, h.macA)
			wantA = append(wantA, w)
		default:
			copy(w, h.macB)
			wantB = append(wantB, w)
		}
	}
	in := make([][]byte, len(frames))
	for i, f := range frames {
		in[i] = append([]byte(nil), f...)
	}
	res, err := engine.Sim{Outputs: 2}.Run(h, in)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range in {
		if !bytes.Equal(f, frames[i]) {
			t.Fatalf("Run changed the caller's frame %d", i)
		}
	}
	for _, c := range []struct {
		p    engine.Dest
		want [][]byte
	}{{h.a, wantA}, {h.b, wantB}, {engine.ToInput, nil}} {
		got := res.SentOn(c.p)
		if len(got) != len(c.want) {
			t.Fatalf("port %d: %d frames, want %d", c.p, len(got), len(c.want))
		}
		for i := range got {
			if !bytes.Equal(got[i], c.want[i]) {
				t.Fatalf("port %d frame %d:\n got %x\nwant %x", c.p, i, got[i], c.want[i])
			}
		}
	}
	st := res.Stats
	sent := uint64(len(wantA) + len(wantB))
	if st.RxPackets != 150 || st.TxPackets != sent || st.Dropped != 150-sent || st.TxRingFull != 0 {
		t.Errorf("stats %+v, want rx 150, tx %d, dropped %d", st, sent, 150-sent)
	}
}

// TestSimUnknownPort: a frame forwarded to a port the engine does not have
// is dropped and counted, not sent anywhere: an output beyond its own, and
// ToOutput of an index beyond MaxOutputs or below 0, which is never the
// input's port (as a uint8 it would have wrapped to ToInput: a frame sent
// back out of the queue it came in on).
func TestSimUnknownPort(t *testing.T) {
	for _, k := range []int{3, engine.MaxOutputs, 255, 511, -1, -256} {
		p := engine.ToOutput(k)
		if p == engine.ToInput {
			t.Errorf("ToOutput(%d) is ToInput", k)
		}
		h := engine.HandlerFunc(func(b *engine.Batch) {
			for i := 0; i < b.Len(); i++ {
				b.Forward(i, p)
			}
		})
		res, err := engine.Sim{Outputs: 1}.Run(h, [][]byte{udpFrame(9, 64)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Frames[0].Sent || res.Stats.Dropped != 1 || res.Stats.TxPackets != 0 {
			t.Errorf("ToOutput(%d): frame %+v, stats %+v: want it dropped and counted", k, res.Frames[0], res.Stats)
		}
	}
	// The last output an engine may have keeps its own port.
	if p := engine.ToOutput(engine.MaxOutputs - 1); p != engine.Dest(engine.MaxOutputs) {
		t.Errorf("ToOutput(%d) = %d, want %d", engine.MaxOutputs-1, p, engine.MaxOutputs)
	}
}

// TestBatchHeadAndLength moves frames' starts and ends within their UMEM
// frames and checks what is sent, and that moves out of bounds, or to an
// empty frame, are refused and change nothing: in aligned and unaligned
// chunk mode, with and without a UMEM headroom, whose addresses differ, and
// with the TX metadata area (TxChecksum), which is not headroom.
func TestBatchHeadAndLength(t *testing.T) {
	for _, sim := range []engine.Sim{
		{},
		{Unaligned: true},
		{FrameHeadroom: 300},
		{Unaligned: true, FrameHeadroom: 300, FrameSize: 4096},
		{TxChecksum: true},
	} {
		t.Run(fmt.Sprintf("unaligned=%v,headroom=%d,frame=%d,txmeta=%v", sim.Unaligned, sim.FrameHeadroom, sim.FrameSize, sim.TxChecksum), func(t *testing.T) {
			testBatchHeadAndLength(t, sim)
		})
	}
}

func testBatchHeadAndLength(t *testing.T, sim engine.Sim) {
	fs := int(engine.DefaultConfig().FrameSize) // what an engine has
	if sim.FrameSize != 0 {
		fs = int(sim.FrameSize)
	}
	wantHead := 256 + int(sim.FrameHeadroom)
	txMeta := 0
	if sim.TxChecksum {
		txMeta = xsk.TxMetadataLen
		wantHead -= txMeta
	}
	var checks []string
	h := engine.HandlerFunc(func(b *engine.Batch) {
		for i := 0; i < b.Len(); i++ {
			hr, tr, n := b.Headroom(i), b.Tailroom(i), len(b.Frame(i))
			if hr != wantHead || txMeta+hr+n+tr != fs || b.Segments(i) != 1 || b.PacketLen(i) != n {
				checks = append(checks, fmt.Sprintf("frame %d: headroom %d, tailroom %d, length %d, %d segments", i, hr, tr, n, b.Segments(i)))
			}
			if b.AdjustHead(i, -hr-1) || b.AdjustHead(i, n+1) || b.AdjustHead(i, n) || b.SetLen(i, n+tr+1) || b.SetLen(i, -1) || b.SetLen(i, 0) {
				checks = append(checks, fmt.Sprintf("frame %d: a move out of bounds was accepted", i))
			}
			if b.Headroom(i) != hr || len(b.Frame(i)) != n {
				checks = append(checks, fmt.Sprintf("frame %d: a refused move changed it", i))
			}
			switch i {
			case 0: // push 8 bytes of 0xee in front
				b.AdjustHead(i, -8)
				copy(b.Frame(i), bytes.Repeat([]byte{0xee}, 8))
			case 1: // pop the Ethernet header
				b.AdjustHead(i, packet.EthHdrLen)
			case 2: // trim to 20 bytes
				b.SetLen(i, 20)
			case 3: // the whole UMEM frame after the head
				b.SetLen(i, n+tr)
			case 4: // all the headroom, and back
				b.AdjustHead(i, -hr)
				b.AdjustHead(i, hr)
			}
			b.Transmit(i)
		}
	})
	frames := [][]byte{udpFrame(1, 64), udpFrame(2, 64), udpFrame(3, 64), udpFrame(4, 64), udpFrame(5, 64)}
	res, err := sim.Run(h, frames)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		t.Error(c)
	}
	want := [][]byte{
		append(bytes.Repeat([]byte{0xee}, 8), frames[0]...),
		frames[1][packet.EthHdrLen:],
		frames[2][:20],
	}
	for i, w := range want {
		if f := res.Frames[i]; !f.Sent || !bytes.Equal(f.Data, w) {
			t.Errorf("frame %d sent %v:\n %x\nwant\n %x", i, f.Sent, f.Data, w)
		}
	}
	if f := res.Frames[3]; !f.Sent || len(f.Data) != fs-txMeta-wantHead || !bytes.Equal(f.Data[:64], frames[3]) {
		t.Errorf("frame 3 sent %v, %d bytes, want the UMEM frame after the headroom starting with the frame", f.Sent, len(f.Data))
	}
	if f := res.Frames[4]; !f.Sent || !bytes.Equal(f.Data, frames[4]) {
		t.Errorf("frame 4 sent %v as %x, want it unchanged", f.Sent, f.Data)
	}
	if st := res.Stats; st.TxPackets != 5 || st.XDP.TxInvalidDescs != 0 {
		t.Errorf("stats %+v", st)
	}
}

// idleCounter counts batches and idle calls.
type idleCounter struct{ batches, idles int }

func (c *idleCounter) Handle(*engine.Batch) { c.batches++ }
func (c *idleCounter) Idle()                { c.idles++ }

func TestSimIdle(t *testing.T) {
	c := new(idleCounter)
	frames := make([][]byte, 130)
	for i := range frames {
		frames[i] = udpFrame(9, 64)
	}
	if _, err := engine.Simulate(c, frames); err != nil {
		t.Fatal(err)
	}
	if c.batches != 3 || c.idles != 1 {
		t.Errorf("%d batches, %d idle calls; want 3 and 1", c.batches, c.idles)
	}
}

// dropHinted declares DropAll: the worker must never call Handle.
type dropHinted struct{ called bool }

func (d *dropHinted) Handle(*engine.Batch) { d.called = true }
func (d *dropHinted) Hints() engine.Hints  { return engine.Hints{DropAll: true} }

func TestSimHonoursDropAll(t *testing.T) {
	d := new(dropHinted)
	res, err := engine.Simulate(d, [][]byte{udpFrame(9, 64), udpFrame(9, 64)})
	if err != nil {
		t.Fatal(err)
	}
	if d.called || res.Stats.RxPackets != 2 || res.Stats.Dropped != 2 {
		t.Errorf("Handle called %v, stats %+v: want the drop-all loop", d.called, res.Stats)
	}
}

// receiveOnlyTx declares ReceiveOnly and transmits all the same.
type receiveOnlyTx struct{}

func (receiveOnlyTx) Handle(b *engine.Batch) {
	for i := 0; i < b.Len(); i++ {
		b.Transmit(i)
	}
}
func (receiveOnlyTx) Hints() engine.Hints { return engine.Hints{ReceiveOnly: true} }

// TestSimHonoursReceiveOnly: as in an engine, a ReceiveOnly handler's queue
// has no tx ring, so what it transmits anyway is counted as tx ring full
// and dropped, not sent.
func TestSimHonoursReceiveOnly(t *testing.T) {
	res, err := engine.Simulate(receiveOnlyTx{}, [][]byte{udpFrame(9, 64), udpFrame(9, 64), udpFrame(9, 64)})
	if err != nil {
		t.Fatal(err)
	}
	if st := res.Stats; st.RxPackets != 3 || st.TxPackets != 0 || st.TxRingFull != 3 {
		t.Errorf("stats %+v: want 3 received, none sent, 3 tx ring full", st)
	}
}

// TestSimPanicIsAnError: a handler's panic comes back as a
// *HandlerPanicError with the value and the handler's stack, and a panic
// with an error unwraps to it.
func TestSimPanicIsAnError(t *testing.T) {
	h := engine.HandlerFunc(func(*engine.Batch) { panic("boom") })
	_, err := engine.Simulate(h, [][]byte{udpFrame(9, 64)})
	var hp *engine.HandlerPanicError
	if !errors.As(err, &hp) || !errors.Is(err, engine.ErrHandlerPanic) || hp.Value != "boom" || hp.Queue != 0 ||
		err.Error() != "simulate: queue 0: handler panicked: boom" {
		t.Fatalf("error %v (%#v), want a *HandlerPanicError with the value", err, hp)
	}
	if !bytes.Contains(hp.Stack, []byte("TestSimPanicIsAnError")) {
		t.Errorf("the stack does not show the handler:\n%s", hp.Stack)
	}
	h = engine.HandlerFunc(func(*engine.Batch) { panic(io.ErrUnexpectedEOF) })
	if _, err := (engine.Sim{}).Run(h, [][]byte{udpFrame(9, 64)}); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a panic with an error: %v, want it wrapped", err)
	}
}

func TestSimLoopAllocatesNothing(t *testing.T) {
	l, err := engine.Sim{Outputs: 1}.NewLoop(engine.HandlerFunc(func(b *engine.Batch) {
		for i := 0; i < b.Len(); i++ {
			b.Forward(i, engine.ToOutput(0))
		}
	}), [][]byte{udpFrame(9, 64)})
	if err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(100, func() { l.Step() }); a != 0 {
		t.Errorf("%v allocations per step", a)
	}
	if st := l.Stats(); st.TxPackets == 0 || st.RxPackets != st.TxPackets {
		t.Errorf("stats %+v: every frame received should have gone out", st)
	}
}

func TestParseXDPMode(t *testing.T) {
	for s, want := range map[string]engine.XDPMode{"native": engine.XDPNative, "drv": engine.XDPNative, "generic": engine.XDPGeneric, "skb": engine.XDPGeneric} {
		if m, err := engine.ParseXDPMode(s); err != nil || m != want {
			t.Errorf("ParseXDPMode(%q) = %v, %v", s, m, err)
		}
	}
	if _, err := engine.ParseXDPMode("offload"); err == nil {
		t.Error("offload accepted")
	}
	if !errors.Is(&engine.DeviceError{Name: "x"}, engine.ErrNoDevice) {
		t.Error("a DeviceError is not ErrNoDevice")
	}
}

// TestSimFrameSize: a simulation's UMEM frames are an engine's by default,
// so a handler sees the same room around a frame, and a frame too long for
// them is refused with what to change.
func TestSimFrameSize(t *testing.T) {
	def := int(engine.DefaultConfig().FrameSize)
	var room []int
	h := engine.HandlerFunc(func(b *engine.Batch) {
		for i := 0; i < b.Len(); i++ {
			room = append(room, b.Headroom(i)+len(b.Frame(i))+b.Tailroom(i))
		}
	})
	if _, err := engine.Simulate(h, [][]byte{udpFrame(9, 64)}); err != nil {
		t.Fatal(err)
	}
	if len(room) != 1 || room[0] != def {
		t.Errorf("a simulated frame has %v bytes of room, an engine's %d", room, def)
	}
	_, err := engine.Simulate(h, [][]byte{make([]byte, def)})
	if want := fmt.Sprintf("longer than the %d bytes a %d-byte UMEM frame holds after 256 bytes of headroom: set FrameSize to %d (the default is an engine's, %d), or set MultiBuffer",
		def-256, def, os.Getpagesize(), def); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a %d-byte frame: %v, want %q", def, err, want)
	}
}

// Destinations print as xdpeng names them.
func TestDestString(t *testing.T) {
	for p, want := range map[engine.Dest]string{
		engine.ToInput: "in", engine.ToOutput(0): "out0", engine.ToOutput(9): "out9",
		engine.ToOutput(engine.MaxOutputs - 1): "out63", engine.ToOutput(engine.MaxOutputs): "none", engine.Dest(200): "Dest(200)",
	} {
		if got := p.String(); got != want {
			t.Errorf("Dest(%d).String() = %q, want %q", uint8(p), got, want)
		}
	}
}

// A destination reads back as it is written.
func TestDestText(t *testing.T) {
	for _, p := range []engine.Dest{engine.ToInput, engine.ToOutput(0), engine.ToOutput(63), engine.ToOutput(64)} {
		b, _ := p.MarshalText()
		var q engine.Dest
		if err := q.UnmarshalText(b); err != nil || q != p {
			t.Errorf("%v: read back as %v, %v", p, q, err)
		}
	}
	var q engine.Dest
	for _, bad := range []string{"out64", "out", "out01", "2", "port1"} {
		if err := q.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("%q read as %v, want an error", bad, q)
		}
	}
}

// TestBatchIndexOutOfRange: an index beyond the batch panics, as a slice's
// does, in every method that takes one, though the batch's buffers are
// longer than the batch; with multi-buffer too.
func TestBatchIndexOutOfRange(t *testing.T) {
	calls := map[string]func(b *engine.Batch, i int){
		"Frame":      func(b *engine.Batch, i int) { b.Frame(i) },
		"Transmit":   func(b *engine.Batch, i int) { b.Transmit(i) },
		"Drop":       func(b *engine.Batch, i int) { b.Drop(i) },
		"Forward":    func(b *engine.Batch, i int) { b.Forward(i, engine.ToInput) },
		"SetLen":     func(b *engine.Batch, i int) { b.SetLen(i, 10) },
		"AdjustHead": func(b *engine.Batch, i int) { b.AdjustHead(i, 1) },
		"Headroom":   func(b *engine.Batch, i int) { b.Headroom(i) },
		"Tailroom":   func(b *engine.Batch, i int) { b.Tailroom(i) },
		"Verdict":    func(b *engine.Batch, i int) { b.Verdict(i) },
		"PacketLen":  func(b *engine.Batch, i int) { b.PacketLen(i) },
	}
	for _, sim := range []engine.Sim{{}, {MultiBuffer: true}} {
		for name, call := range calls {
			t.Run(fmt.Sprintf("%s,multibuffer=%v", name, sim.MultiBuffer), func(t *testing.T) {
				var got any
				h := engine.HandlerFunc(func(b *engine.Batch) {
					defer func() { got = recover() }()
					call(b, b.Len()+3)
				})
				if _, err := sim.Run(h, [][]byte{udpFrame(1, 64)}); err != nil {
					t.Fatal(err)
				}
				if got == nil {
					t.Errorf("%s(4) on a batch of 1 did not panic", name)
				}
			})
		}
	}
}

// TestDropReasons: DroppedFor counts the frames whose verdict stayed Drop
// with the reason DropFor gave them, batch after batch (a reason does not
// outlive its batch), with and without multi-buffer; reason 0, a reason
// above MaxDropReasons and a DropFor taken back by a later verdict count
// in none.
func TestDropReasons(t *testing.T) {
	for _, mb := range []bool{false, true} {
		n := 0 // frames seen, over the batches: frame n gets verdict n%6
		h := engine.HandlerFunc(func(b *engine.Batch) {
			for i := 0; i < b.Len(); i, n = i+1, n+1 {
				switch n % 6 {
				case 0:
					b.DropFor(i, 1)
				case 1:
					b.DropFor(i, engine.MaxDropReasons)
				case 2:
					b.DropFor(i, 0)
				case 3:
					b.DropFor(i, engine.MaxDropReasons+1)
				case 4:
					b.DropFor(i, 2)
					b.Transmit(i)
				case 5:
					b.Drop(i)
				}
			}
		})
		frames := make([][]byte, 40)
		for i := range frames {
			frames[i] = udpFrame(9, 64)
		}
		// Batches of 6 and 7 frames: with 7, a frame given a plain Drop sits
		// where the batch before left a reason.
		for _, batch := range []int{6, 7} {
			n = 0
			res, err := engine.Sim{Batch: batch, MultiBuffer: mb}.Run(h, frames)
			if err != nil {
				t.Fatal(err)
			}
			var want [engine.MaxDropReasons + 1]uint64
			var wantReason [6]engine.DropReason
			wantReason[0], wantReason[1] = 1, engine.MaxDropReasons
			for i := range frames {
				j := i % 6
				want[wantReason[j]]++
				if got := res.Frames[i].Reason; got != wantReason[j] {
					t.Errorf("multi-buffer %v, batch %d: frame %d's reason %d, want %d", mb, batch, i, got, wantReason[j])
				}
			}
			want[0] = 0
			if res.Stats.DroppedFor != want {
				t.Errorf("multi-buffer %v, batch %d: DroppedFor %v, want %v", mb, batch, res.Stats.DroppedFor, want)
			}
		}
	}
}
