package engine_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"testing"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/handler"
	"github.com/xdpeng/xdpeng/engine/packet"
)

// jumboFrame builds an Ethernet/IPv4/UDP frame of size bytes to dstPort,
// with a payload that differs from byte to byte, so that a segment out of
// place or lost shows.
func jumboFrame(t testing.TB, size int, dstPort uint16) []byte {
	t.Helper()
	f := make([]byte, size)
	if _, err := packet.BuildUDP(f, packet.UDPConfig{
		SrcMAC: net.HardwareAddr{0x02, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{0x02, 0, 0, 0, 0, 2},
		SrcIP: netip.MustParseAddr("198.18.0.1"), DstIP: netip.MustParseAddr("198.18.0.2"),
		SrcPort: 1234, DstPort: dstPort, Size: size,
	}); err != nil {
		t.Fatal(err)
	}
	for i := 42; i < size; i++ {
		f[i] = byte(i * 13)
	}
	return f
}

func swapped(f []byte) []byte {
	w := append([]byte(nil), f...)
	packet.SwapMACs(w)
	return w
}

// segmentChecker records what a handler sees of each frame: segments,
// lengths, the whole frame, and transmits it.
type segmentChecker struct {
	segs    []int
	lens    []int
	frames  [][]byte
	batches int
}

func (c *segmentChecker) Handle(b *engine.Batch) {
	c.batches++
	for i := 0; i < b.Len(); i++ {
		c.segs = append(c.segs, b.Segments(i))
		c.lens = append(c.lens, b.PacketLen(i))
		c.frames = append(c.frames, b.AppendPacket(nil, i))
		n := 0
		for j := 0; j < b.Segments(i); j++ {
			n += len(b.Segment(i, j))
		}
		if n != b.PacketLen(i) || !bytes.Equal(b.Segment(i, 0), b.Frame(i)) {
			panic(fmt.Sprintf("frame %d: segments of %d bytes, PacketLen %d", i, n, b.PacketLen(i)))
		}
		packet.SwapMACs(b.Frame(i))
		b.Transmit(i)
	}
}

// TestSimMultiBuffer runs frames longer than a UMEM frame through a
// multi-buffer simulation in every frame size and address mode: the handler
// sees each whole, in as many segments as the UMEM frames it takes, and
// each goes back out whole; frames are counted once and bytes in full.
func TestSimMultiBuffer(t *testing.T) {
	sizes := []int{60, 1500, 3839, 3840, 3841, 9000, 9014}
	for _, sim := range []engine.Sim{
		{MultiBuffer: true},
		{MultiBuffer: true, FrameSize: 4096},
		{MultiBuffer: true, FrameSize: 2048, Unaligned: true, FrameHeadroom: 128},
		{MultiBuffer: true, Batch: 3}, // batches end inside frames
	} {
		t.Run(fmt.Sprintf("frame=%d,unaligned=%v,headroom=%d,batch=%d", sim.FrameSize, sim.Unaligned, sim.FrameHeadroom, sim.Batch), func(t *testing.T) {
			fs := int(engine.DefaultConfig().FrameSize)
			if sim.FrameSize != 0 {
				fs = int(sim.FrameSize)
			}
			room := fs - 256 - int(sim.FrameHeadroom)
			var frames [][]byte
			var bytesIn uint64
			for r := 0; r < 20; r++ { // more than a batch
				for i, size := range sizes {
					frames = append(frames, jumboFrame(t, size, uint16(r*len(sizes)+i)))
					bytesIn += uint64(size)
				}
			}
			c := &segmentChecker{}
			res, err := sim.Run(c, frames)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.frames) != len(frames) {
				t.Fatalf("the handler saw %d frames of %d", len(c.frames), len(frames))
			}
			for i, f := range frames {
				if want := (len(f) + room - 1) / room; c.segs[i] != want || c.lens[i] != len(f) {
					t.Errorf("frame %d (%d bytes): %d segments, length %d; want %d segments", i, len(f), c.segs[i], c.lens[i], want)
				}
				if !bytes.Equal(c.frames[i], f) {
					t.Errorf("frame %d (%d bytes): the handler's copy differs", i, len(f))
				}
				if r := res.Frames[i]; !r.Sent || r.Dest != engine.ToInput || !bytes.Equal(r.Data, swapped(f)) {
					t.Errorf("frame %d (%d bytes): sent %v on %d, %d bytes; want it back whole with its MACs swapped", i, len(f), r.Sent, r.Dest, len(r.Data))
				}
			}
			st := res.Stats
			n := uint64(len(frames))
			if st.RxPackets != n || st.RxBytes != bytesIn || st.TxPackets != n || st.TxBytes != bytesIn || st.Dropped != 0 || st.TxRingFull != 0 {
				t.Errorf("stats %+v; want %d frames and %d bytes each way", st, n, bytesIn)
			}
			if st.XDP.RxInvalidDescs != 0 || st.XDP.Drops() != 0 {
				t.Errorf("socket stats %+v", st.XDP)
			}
		})
	}
}

// TestSimMultiBufferL2Fwd is handler.L2Fwd on 9000-byte frames: l2fwd -F.
func TestSimMultiBufferL2Fwd(t *testing.T) {
	frames := [][]byte{jumboFrame(t, 9000, 9), jumboFrame(t, 64, 10), jumboFrame(t, 9000, 11)}
	res, err := engine.Sim{MultiBuffer: true, FrameSize: 2048}.Run(handler.L2Fwd{}, frames)
	if err != nil {
		t.Fatal(err)
	}
	sent := res.Sent()
	if len(sent) != len(frames) {
		t.Fatalf("%d frames sent, want %d", len(sent), len(frames))
	}
	for i, f := range frames {
		if !bytes.Equal(sent[i], swapped(f)) {
			t.Errorf("frame %d came back changed", i)
		}
	}
}

// TestSimMultiBufferDropAll is rxdrop -F: the drop-all loop counts frames by
// their last segment.
func TestSimMultiBufferDropAll(t *testing.T) {
	var frames [][]byte
	for i := 0; i < 100; i++ {
		frames = append(frames, jumboFrame(t, 9000, 9))
	}
	for _, batch := range []int{0, 4} {
		res, err := engine.Sim{MultiBuffer: true, Batch: batch}.Run(new(dropHinted), frames)
		if err != nil {
			t.Fatal(err)
		}
		if st := res.Stats; st.RxPackets != 100 || st.RxBytes != 900_000 || st.Dropped != 100 {
			t.Errorf("batch %d: stats %+v, want 100 frames of 9000 bytes dropped", batch, st)
		}
	}
}

// TestSimMultiBufferForward forwards jumbo frames to two outputs.
func TestSimMultiBufferForward(t *testing.T) {
	h := splitter{a: engine.ToOutput(0), b: engine.ToOutput(1),
		macA: net.HardwareAddr{2, 0, 0, 0, 0xa, 0xa}, macB: net.HardwareAddr{2, 0, 0, 0, 0xb, 0xb}}
	var frames, wantA, wantB [][]byte
	for i := 0; i < 50; i++ {
		f := jumboFrame(t, 5000+i, uint16(i))
		frames = append(frames, f)
		w := append([]byte(nil), f...)
		if i%2 == 0 {
			copy(w, h.macA)
			wantA = append(wantA, w)
		} else {
			copy(w, h.macB)
			wantB = append(wantB, w)
		}
	}
	res, err := engine.Sim{Outputs: 2, MultiBuffer: true, FrameSize: 2048}.Run(h, frames)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		p    engine.Dest
		want [][]byte
	}{{h.a, wantA}, {h.b, wantB}} {
		got := res.SentOn(c.p)
		if len(got) != len(c.want) {
			t.Fatalf("port %d: %d frames, want %d", c.p, len(got), len(c.want))
		}
		for i := range got {
			if !bytes.Equal(got[i], c.want[i]) {
				t.Errorf("port %d frame %d differs", c.p, i)
			}
		}
	}
	if st := res.Stats; st.TxPackets != 50 || st.RxPackets != 50 {
		t.Errorf("stats %+v", st)
	}
}

// TestSimMultiBufferHeadAndLength moves the start of a frame of several
// segments within its first and its end within its last.
func TestSimMultiBufferHeadAndLength(t *testing.T) {
	f := jumboFrame(t, 5000, 9) // 3840 + 1160 in 4096-byte frames
	var checks []string
	h := engine.HandlerFunc(func(b *engine.Batch) {
		if b.Segments(0) != 2 || b.Headroom(0) != 256 || b.Tailroom(0) != 4096-256-1160 {
			checks = append(checks, fmt.Sprintf("segments %d, headroom %d, tailroom %d", b.Segments(0), b.Headroom(0), b.Tailroom(0)))
		}
		if b.SetLen(0, 3840) || b.SetLen(0, 5000+b.Tailroom(0)+1) || b.AdjustHead(0, 3840) {
			checks = append(checks, "a move that empties a segment or leaves its UMEM frame was accepted")
		}
		if !b.AdjustHead(0, -4) || !b.SetLen(0, 5004-10) {
			checks = append(checks, "a move within the segments was refused")
		}
		copy(b.Frame(0), []byte{1, 2, 3, 4})
		b.Transmit(0)
	})
	res, err := engine.Sim{MultiBuffer: true, FrameSize: 4096}.Run(h, [][]byte{f})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		t.Error(c)
	}
	want := append([]byte{1, 2, 3, 4}, f[:len(f)-10]...)
	if got := res.Frames[0]; !got.Sent || !bytes.Equal(got.Data, want) {
		t.Errorf("sent %v, %d bytes; want %d", got.Sent, len(got.Data), len(want))
	}
}

// TestSimMultiBufferLimits: without MultiBuffer a long frame is an error,
// and with it a frame longer than 18 UMEM frames hold.
func TestSimMultiBufferLimits(t *testing.T) {
	if _, err := engine.Simulate(handler.RxDrop{}, [][]byte{jumboFrame(t, 5000, 9)}); err == nil {
		t.Error("a 5000-byte frame taken without MultiBuffer")
	}
	if _, err := (engine.Sim{MultiBuffer: true, FrameSize: 2048}).Run(handler.RxDrop{}, [][]byte{jumboFrame(t, 18*1792+1, 9)}); err == nil {
		t.Error("a frame of 19 UMEM frames taken")
	}
}

// ExampleBatch_Segments checks the UDP length of jumbo frames against what
// arrived: a frame longer than a UMEM frame comes in several segments, and
// a handler that needs all of it reads them in turn (or copies it out with
// AppendPacket).
func ExampleBatch_Segments() {
	h := engine.HandlerFunc(func(b *engine.Batch) {
		var s packet.Summary
		for i := 0; i < b.Len(); i++ {
			if !packet.Parse(b.Frame(i), &s) || s.Proto != packet.ProtoUDP {
				continue
			}
			f := b.Frame(i) // the first segment holds the headers
			udpLen := int(binary.BigEndian.Uint16(f[s.L4Off+4:]))
			fmt.Printf("frame %d: %d bytes in %d segments, UDP length ok: %v\n",
				i, b.PacketLen(i), b.Segments(i), int(s.L4Off)+udpLen == b.PacketLen(i))
		}
	})
	frames := [][]byte{udpFrame(9, 64), make([]byte, 9000)}
	packet.BuildUDP(frames[1], packet.UDPConfig{
		SrcMAC: net.HardwareAddr{0x02, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{0x02, 0, 0, 0, 0, 2},
		SrcIP: netip.MustParseAddr("198.18.0.1"), DstIP: netip.MustParseAddr("198.18.0.2"),
		SrcPort: 1234, DstPort: 9, Size: 9000,
	})
	if _, err := (engine.Sim{MultiBuffer: true}).Run(h, frames); err != nil {
		fmt.Println(err)
	}
	// Output:
	// frame 0: 64 bytes in 1 segments, UDP length ok: true
	// frame 1: 9000 bytes in 6 segments, UDP length ok: true
}
