//go:build linux

package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/handler"
	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/internal/testutil/hugetest"
)

// close closes the engine of a finished run before the test ends, so that
// another can take the device.
func (r *running) close() {
	<-r.done
	r.eng.Close()
	r.done <- nil // for the cleanup
}

// genToDUT is a UDP frame of size bytes from link 0's generator end to its
// DUT end.
func genToDUT(l testbed.Link, size int) packet.UDPConfig {
	return packet.UDPConfig{
		SrcMAC: l.GenMAC, DstMAC: l.DUTMAC,
		SrcIP: netip.MustParseAddr(l.GenIP.String()), DstIP: netip.MustParseAddr(l.DUTIP.String()),
		SrcPort: 1234, DstPort: 9, Size: size,
	}
}

// txJumbo sends count frames from the generator end of link 0 with an AF_XDP
// generator (txonly; live frames stop at a page) and returns its totals
// and the frames of the generator end's transmit path that were dropped
// (veth: the peer's ring was full).
func txJumbo(t *testing.T, bed *testbed.Bed, frames [][]byte, count, rate uint64, frameSize uint32) (engine.QueueStats, uint64) {
	t.Helper()
	l := bed.Links[0]
	cfg := engine.DefaultGeneratorConfig()
	cfg.Interface, cfg.Frames, cfg.Count, cfg.Rate = l.Gen, frames, count, rate
	cfg.MultiBuffer, cfg.FrameSize = true, frameSize
	var g *engine.Generator
	var before netdev.LinkStats
	if err := bed.InGen(func() (err error) {
		if before, err = netdev.ReadLinkStats(l.GenIndex); err != nil {
			return err
		}
		g, err = engine.NewGenerator(cfg)
		return err
	}); err != nil {
		t.Fatalf("engine.NewGenerator: %v", err)
	}
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := g.Run(ctx); err != nil {
		t.Fatalf("generator: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the generator did not end by itself")
	}
	s, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	var after netdev.LinkStats
	if err := bed.InGen(func() (err error) { after, err = netdev.ReadLinkStats(l.GenIndex); return err }); err != nil {
		t.Fatal(err)
	}
	return s.Total(), after.TxDropped - before.TxDropped
}

// TestRxDropMultiBufferJumbo is rxdrop -F on a bed of MTU 9000: 9000-byte
// frames (9014 on the wire, without FCS) sent by txonly -F, in UMEM frames
// of 2048 and 4096 bytes, in native and generic XDP. Every frame is
// received once, or counted as a drop; bytes are frames times the size; no
// descriptor is invalid.
func TestRxDropMultiBufferJumbo(t *testing.T) {
	bed := testbedtest.NewConfig(t, testbed.Config{MTU: 9000})
	l := bed.Links[0]
	const count, size = 20_000, 9014
	frame := make([]byte, size)
	if _, err := packet.BuildUDP(frame, genToDUT(l, size)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fs   uint32
		mode engine.XDPMode
	}{{2048, engine.XDPNative}, {4096, engine.XDPNative}, {4096, engine.XDPGeneric}} {
		fs := tc.fs
		t.Run(fmt.Sprintf("%d,%v", fs, tc.mode), func(t *testing.T) {
			cfg := rxdropConfig(bed)
			cfg.FrameSize, cfg.MultiBuffer, cfg.XDPMode = fs, true, tc.mode
			r := start(t, bed, cfg)
			sent, vethDrops := txJumbo(t, bed, [][]byte{frame}, count, 100_000, fs)
			if sent.TxPackets != count || sent.TxBytes != count*size {
				t.Fatalf("the generator sent %d frames, %d bytes; want %d of %d bytes", sent.TxPackets, sent.TxBytes, count, size)
			}
			s := r.finish(count - vethDrops)
			tot := s.Total()
			t.Logf("sent %d: received %d (%d bytes), socket drops %d (%+v), veth drops %d", count, tot.RxPackets, tot.RxBytes, tot.XDP.Drops(), tot.XDP, vethDrops)
			if got := tot.RxPackets + tot.XDP.Drops() + vethDrops; got != count {
				t.Errorf("sent %d != received %d + socket drops %d + veth drops %d", count, tot.RxPackets, tot.XDP.Drops(), vethDrops)
			}
			if tot.RxBytes != tot.RxPackets*size {
				t.Errorf("received %d bytes in %d frames, want %d each", tot.RxBytes, tot.RxPackets, size)
			}
			if tot.Dropped != tot.RxPackets {
				t.Errorf("handler drops %d, want every frame received (%d)", tot.Dropped, tot.RxPackets)
			}
			if tot.XDP.RxInvalidDescs != 0 || tot.XDP.TxInvalidDescs != 0 {
				t.Errorf("invalid descriptors: %+v", tot.XDP)
			}
			if tot.RxPackets == 0 {
				t.Error("nothing received")
			}
		})
	}
}

// TestL2FwdMultiBufferJumbo is l2fwd -F: 9000-byte frames come back to the
// generator end whole, byte for byte, with their MAC addresses swapped.
func TestL2FwdMultiBufferJumbo(t *testing.T) {
	bed := testbedtest.NewConfig(t, testbed.Config{MTU: 9000})
	l := bed.Links[0]
	const count, size = 5_000, 9014
	var frames, want [][]byte
	for i := 0; i < 3; i++ {
		c := genToDUT(l, size)
		c.DstPort, c.Fill = uint16(9+i), byte(0xa0+i)
		f := make([]byte, size)
		if _, err := packet.BuildUDP(f, c); err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f)
		w := append([]byte(nil), f...)
		packet.SwapMACs(w)
		want = append(want, w)
	}
	ps := openPacketSocket(t, bed, 0)
	capt := ps.capture()
	cfg := rxdropConfig(bed)
	cfg.MultiBuffer = true
	cfg.Handler = func(int) engine.Handler { return handler.L2Fwd{} }
	r := start(t, bed, cfg)
	sent, vethDrops := txJumbo(t, bed, frames, count, 50_000, 4096)
	if sent.TxPackets != count {
		t.Fatalf("the generator sent %d frames, want %d", sent.TxPackets, count)
	}
	s := r.finish(count - vethDrops)
	tot := s.Total()
	capt.waitFor(int(tot.TxPackets))
	got, drops := capt.stop(t)
	t.Logf("sent %d: rx %d, tx %d, tx ring full %d, socket drops %d (%+v), veth drops %d; captured %d (capture drops %d)",
		count, tot.RxPackets, tot.TxPackets, tot.TxRingFull, tot.XDP.Drops(), tot.XDP, vethDrops, len(got), drops)
	if tot.RxPackets+tot.XDP.Drops()+vethDrops != count {
		t.Errorf("sent %d != received %d + socket drops %d + veth drops %d", count, tot.RxPackets, tot.XDP.Drops(), vethDrops)
	}
	if tot.RxPackets != tot.TxPackets+tot.TxRingFull+tot.Dropped {
		t.Errorf("rx %d != tx %d + tx ring full %d + dropped %d", tot.RxPackets, tot.TxPackets, tot.TxRingFull, tot.Dropped)
	}
	if tot.TxBytes != (tot.TxPackets)*size && tot.TxRingFull == 0 {
		t.Errorf("tx %d bytes for %d frames of %d", tot.TxBytes, tot.TxPackets, size)
	}
	if tot.XDP.RxInvalidDescs != 0 || tot.XDP.TxInvalidDescs != 0 {
		t.Errorf("invalid descriptors: %+v", tot.XDP)
	}
	if drops != 0 || uint64(len(got)) != tot.TxPackets {
		t.Errorf("captured %d frames (capture drops %d), the engine completed %d", len(got), drops, tot.TxPackets)
	}
	bad := 0
	for i, f := range got {
		ok := false
		for _, w := range want {
			ok = ok || bytes.Equal(f, w)
		}
		if !ok {
			if bad++; bad <= 3 {
				t.Errorf("frame %d came back as %d bytes that match no frame sent", i, len(f))
			}
		}
	}
	if tot.TxPackets == 0 {
		t.Error("no frame came back")
	}
}

// TestRxDropFrameGeometry runs rxdrop in every frame size the kernel takes,
// aligned and unaligned, with and without a UMEM headroom, on live frames:
// each receives exactly what was sent.
func TestRxDropFrameGeometry(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	const count = 50_000
	for _, g := range []struct {
		fs        uint32
		unaligned bool
		headroom  uint32
	}{
		{2048, false, 0}, {4096, false, 0}, {2048, true, 0}, {4096, true, 0}, {2048, false, 256}, {4096, true, 1000},
	} {
		t.Run(fmt.Sprintf("frame=%d,unaligned=%v,headroom=%d", g.fs, g.unaligned, g.headroom), func(t *testing.T) {
			cfg := rxdropConfig(bed)
			cfg.FrameSize, cfg.Unaligned, cfg.FrameHeadroom = g.fs, g.unaligned, g.headroom
			cfg.HugePages = engine.HugePagesOff // TestUnalignedHugePages has them
			// A handler that reads every frame, so that a wrong data
			// address shows as a wrong frame.
			var bad, seen uint64
			cfg.Handler = func(int) engine.Handler {
				return engine.HandlerFunc(func(b *engine.Batch) {
					var s packet.Summary
					for i := 0; i < b.Len(); i++ {
						seen++
						if !packet.Parse(b.Frame(i), &s) || s.DstPort != 9 || len(b.Frame(i)) != 64 || b.Headroom(i) != 256+int(g.headroom) {
							bad++
						}
					}
				})
			}
			r := start(t, bed, cfg)
			if u := r.eng.Umem(); u.FrameSize != g.fs || u.Unaligned != g.unaligned || u.Headroom != g.headroom || u.HugePages {
				t.Errorf("Umem() = %+v", u)
			}
			st := send(t, bed, 0, gen.Config{Count: count, Rate: count, Threads: 1})
			if st.Sent != count {
				t.Fatalf("generator sent %d, want %d", st.Sent, count)
			}
			tot := r.finish(count).Total()
			if tot.RxPackets+tot.XDP.Drops() != count || tot.RxBytes != tot.RxPackets*64 {
				t.Errorf("received %d (%d bytes) + socket drops %d != sent %d", tot.RxPackets, tot.RxBytes, tot.XDP.Drops(), count)
			}
			if bad != 0 || seen != tot.RxPackets {
				t.Errorf("%d of %d frames read wrong", bad, seen)
			}
			if tot.XDP.RxInvalidDescs != 0 || tot.RxPackets == 0 {
				t.Errorf("stats %+v", tot)
			}
		})
	}
}

// TestUnalignedHugePages: unaligned UMEMs go into huge pages when the pool
// has them, fall back to normal pages and say so when it has not, and
// HugePagesOn refuses without them.
func TestUnalignedHugePages(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	const count = 50_000
	t.Run("free", func(t *testing.T) {
		hugetest.Reserve(t, 16)
		for _, mode := range []engine.HugePageMode{engine.HugePagesAuto, engine.HugePagesOn} {
			cfg := rxdropConfig(bed)
			cfg.Unaligned, cfg.HugePages = true, mode
			r := start(t, bed, cfg)
			if u := r.eng.Umem(); !u.HugePages || u.HugePageSize == 0 || u.Note != "" {
				t.Errorf("%v: Umem() = %+v, want huge pages", mode, u)
			}
			st := send(t, bed, 0, gen.Config{Count: count, Rate: count, Threads: 1})
			tot := r.finish(count).Total()
			if tot.RxPackets+tot.XDP.Drops() != st.Sent || st.Sent != count || tot.XDP.RxInvalidDescs != 0 {
				t.Errorf("%v: sent %d, received %d + socket drops %d (%+v)", mode, st.Sent, tot.RxPackets, tot.XDP.Drops(), tot.XDP)
			}
			r.close()
		}
	})
	t.Run("none free", func(t *testing.T) {
		hugetest.Hold(t, 1)
		cfg := rxdropConfig(bed)
		cfg.Unaligned = true
		r := start(t, bed, cfg)
		if u := r.eng.Umem(); u.HugePages || !strings.Contains(u.Note, "normal pages") {
			t.Errorf("Umem() = %+v, want normal pages and a note", u)
		}
		st := send(t, bed, 0, gen.Config{Count: count, Rate: count, Threads: 1})
		tot := r.finish(count).Total()
		if tot.RxPackets+tot.XDP.Drops() != st.Sent || tot.XDP.RxInvalidDescs != 0 {
			t.Errorf("sent %d, received %d + socket drops %d", st.Sent, tot.RxPackets, tot.XDP.Drops())
		}
		r.close()

		cfg.HugePages = engine.HugePagesOn
		err := bed.InDUT(func() error {
			e, err := engine.New(cfg)
			if err == nil {
				e.Close()
			}
			return err
		})
		var he *engine.HugePagesError
		if !errors.Is(err, engine.ErrNoHugePages) || !errors.As(err, &he) || he.Need == 0 {
			t.Errorf("HugePagesOn without free huge pages: %v, want ErrNoHugePages", err)
		}
	})
}

// TestMultiBufferRefused: with an MTU that needs more than 18 UMEM frames,
// New refuses multi-buffer with the reason, before attaching anything, also
// on a device (lo of a namespace) where the XDP mode defaults to generic.
// (No device here has native XDP without rx-sg: TestCheckMultiBuffer
// covers that refusal.)
func TestMultiBufferRefused(t *testing.T) {
	bed := testbedtest.NewConfig(t, testbed.Config{MTU: 65535})
	for _, tc := range []struct {
		dev, want string
		noRxSG    bool
	}{
		{"lo", "need 37 UMEM frames", false},
		{bed.Links[0].DUT, "need 37 UMEM frames", false},
	} {
		cfg := engine.DefaultConfig()
		cfg.Interface, cfg.MultiBuffer = tc.dev, true
		err := bed.InDUT(func() error {
			e, err := engine.New(cfg)
			if err == nil {
				e.Close()
			}
			return err
		})
		var me *engine.MultiBufferError
		if !errors.Is(err, engine.ErrMultiBuffer) || !errors.As(err, &me) || me.NoRxSG != tc.noRxSG || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrMultiBuffer with %q", tc.dev, err, tc.want)
		}
	}
	// 4096-byte frames take an MTU of 65535 in 18.
	cfg := rxdropConfig(bed)
	cfg.FrameSize, cfg.MultiBuffer = 4096, true
	r := start(t, bed, cfg)
	r.stop()
}

// TestFwdMultiBufferJumbo is fwd -F: 9000-byte frames into dut0 come out of
// dut1 whole, with the new destination MAC, through a shared UMEM and
// copied into one of the output's own.
func TestFwdMultiBufferJumbo(t *testing.T) {
	for _, copyOut := range []bool{false, true} {
		t.Run(fmt.Sprintf("copy=%v", copyOut), func(t *testing.T) {
			bed := testbedtest.NewConfig(t, testbed.Config{Links: 2, MTU: 9000})
			in, out := bed.Links[0], bed.Links[1]
			const count, size = 5_000, 9014
			frame := make([]byte, size)
			c := genToDUT(in, size)
			c.Fill = 0x3c
			if _, err := packet.BuildUDP(frame, c); err != nil {
				t.Fatal(err)
			}
			want := append([]byte(nil), frame...)
			copy(want, out.GenMAC)
			ps := openPacketSocket(t, bed, 1)
			capt := ps.capture()
			cfg := rxdropConfig(bed)
			cfg.MultiBuffer, cfg.FrameSize = true, 4096
			cfg.Outputs = []engine.Output{{Interface: out.DUT, Copy: copyOut}}
			cfg.Handler = func(int) engine.Handler { return &handler.Fwd{Dest: engine.ToOutput(0), DstMAC: out.GenMAC} }
			r := start(t, bed, cfg)
			if o := r.eng.Outputs(); o[0].Copy != copyOut {
				t.Fatalf("output %+v, want copy %v", o[0], copyOut)
			}
			sent, vethDrops := txJumbo(t, bed, [][]byte{frame}, count, 50_000, 4096)
			if sent.TxPackets != count {
				t.Fatalf("the generator sent %d frames, want %d", sent.TxPackets, count)
			}
			tot := r.finish(count - vethDrops).Total()
			capt.waitFor(int(tot.TxPackets))
			got, drops := capt.stop(t)
			outStats, err := r.eng.OutputStats(engine.ToOutput(0))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("sent %d: rx %d, forwarded %d (%d bytes), tx ring full %d, socket drops %d, veth drops %d, out xdp %+v; captured %d",
				count, tot.RxPackets, tot.TxPackets, tot.TxBytes, tot.TxRingFull, tot.XDP.Drops(), vethDrops, outStats, len(got))
			if tot.RxPackets+tot.XDP.Drops()+vethDrops != count || tot.RxPackets != tot.TxPackets+tot.TxRingFull+tot.Dropped {
				t.Errorf("sent %d, rx %d + socket drops %d + veth drops %d; rx != forwarded %d + tx ring full %d + dropped %d",
					count, tot.RxPackets, tot.XDP.Drops(), vethDrops, tot.TxPackets, tot.TxRingFull, tot.Dropped)
			}
			if tot.TxRingFull == 0 && tot.TxBytes != tot.TxPackets*size {
				t.Errorf("forwarded %d bytes in %d frames", tot.TxBytes, tot.TxPackets)
			}
			if outStats.TxInvalidDescs != 0 || tot.XDP.RxInvalidDescs != 0 {
				t.Errorf("invalid descriptors: in %+v, out %+v", tot.XDP, outStats)
			}
			if drops != 0 || uint64(len(got)) != tot.TxPackets || tot.TxPackets == 0 {
				t.Errorf("captured %d frames on %s (capture drops %d), the engine forwarded %d", len(got), out.Gen, drops, tot.TxPackets)
			}
			for i, f := range got {
				if !bytes.Equal(f, want) {
					t.Fatalf("frame %d came out of %s as %d bytes that differ", i, out.DUT, len(f))
				}
			}
		})
	}
}

// TestL2FwdUnaligned is l2fwd on an unaligned UMEM with a UMEM headroom:
// frames go back out of the descriptor addresses they came in with (the
// offset in the upper bits), byte for byte with their MACs swapped.
func TestL2FwdUnaligned(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	const count = 20_000
	frame := genToDUT(l, 128)
	frame.Fill = 0x77
	want := make([]byte, frame.Size)
	if _, err := packet.BuildUDP(want, frame); err != nil {
		t.Fatal(err)
	}
	packet.SwapMACs(want)
	ps := openPacketSocket(t, bed, 0)
	capt := ps.capture()
	cfg := rxdropConfig(bed)
	cfg.Unaligned, cfg.FrameHeadroom, cfg.HugePages = true, 256, engine.HugePagesOff
	cfg.Handler = func(int) engine.Handler { return handler.L2Fwd{} }
	r := start(t, bed, cfg)
	st := send(t, bed, 0, gen.Config{Frame: frame, Count: count, Rate: 100_000, Threads: 1})
	tot := r.finish(st.Sent).Total()
	capt.waitFor(int(tot.TxPackets))
	got, drops := capt.stop(t)
	t.Logf("sent %d: rx %d, tx %d, tx ring full %d, socket drops %d (%+v); captured %d", st.Sent, tot.RxPackets, tot.TxPackets, tot.TxRingFull, tot.XDP.Drops(), tot.XDP, len(got))
	if tot.RxPackets+tot.XDP.Drops()+st.Errors != st.Sent || tot.RxPackets != tot.TxPackets+tot.TxRingFull+tot.Dropped {
		t.Errorf("sent %d, rx %d + socket drops %d + xmit errors %d; rx != tx %d + tx ring full %d + dropped %d",
			st.Sent, tot.RxPackets, tot.XDP.Drops(), st.Errors, tot.TxPackets, tot.TxRingFull, tot.Dropped)
	}
	if tot.XDP.TxInvalidDescs != 0 || tot.XDP.RxInvalidDescs != 0 || drops != 0 || uint64(len(got)) != tot.TxPackets || tot.TxPackets == 0 {
		t.Errorf("xdp stats %+v, captured %d (drops %d) of %d sent back", tot.XDP, len(got), drops, tot.TxPackets)
	}
	for i, f := range got {
		if !bytes.Equal(f, want) {
			t.Fatalf("frame %d came back as\n% x\nwant\n% x", i, f, want)
		}
	}
}
