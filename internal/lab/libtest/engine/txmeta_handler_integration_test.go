//go:build linux

package engine_test

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
)

// rewriteUDP rewrites every UDP frame's payload, which leaves its checksum
// wrong, writes garbage into the checksum field, asks for the checksum to
// be filled as it is sent (Batch.SetTxChecksum), and sends it back with
// the MACs swapped.
type rewriteUDP struct {
	fill byte
	err  error
}

func (h *rewriteUDP) Handle(b *engine.Batch) {
	for i := 0; i < b.Len(); i++ {
		f := b.Frame(i)
		if len(f) < 42 {
			continue
		}
		for j := 42; j < len(f); j++ {
			f[j] = h.fill
		}
		f[40], f[41] = 0x12, 0x34
		if err := b.SetTxChecksum(i); err != nil && h.err == nil {
			h.err = err
		}
		packet.SwapMACs(f)
		b.Transmit(i)
	}
}

// TestTxChecksumHandler: a handler that rewrites each frame's payload and
// asks for its checksum (Config.TxChecksum, copy mode) sends back frames
// whose UDP checksum the kernel filled: each must arrive exactly as the
// packet builder makes the rewritten frame, checksum and all.
func TestTxChecksumHandler(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	const count = 5000
	frame := packet.UDPConfig{
		SrcMAC: l.GenMAC, DstMAC: l.DUTMAC,
		SrcIP: netip.MustParseAddr(l.GenIP.String()), DstIP: netip.MustParseAddr(l.DUTIP.String()),
		SrcPort: 1234, DstPort: 9, Size: 100, Fill: 0xa5,
	}
	rewritten := frame
	rewritten.Fill = 0x5a
	want := make([]byte, frame.Size)
	if _, err := packet.BuildUDP(want, rewritten); err != nil {
		t.Fatal(err)
	}
	packet.SwapMACs(want)

	ps := openPacketSocket(t, bed, 0)
	capt := ps.capture()
	cfg := rxdropConfig(bed)
	cfg.TxChecksum = true
	cfg.BindMode = engine.BindCopy
	cfg.FillSize, cfg.RxSize = 8192, 8192
	h := &rewriteUDP{fill: 0x5a}
	cfg.Handler = func(int) engine.Handler { return h }
	r := start(t, bed, cfg)
	st := send(t, bed, 0, gen.Config{Frame: frame, Count: count, Rate: 50_000, Threads: 1})
	s := r.finish(count)
	tot := s.Total()
	capt.waitFor(int(tot.TxPackets))
	got, drops := capt.stop(t)
	if h.err != nil {
		t.Fatalf("SetTxChecksum: %v", h.err)
	}
	t.Logf("sent %d: rx %d, tx completed %d, tx ring full %d, dropped %d, socket drops %d; captured %d (capture drops %d)",
		st.Sent, tot.RxPackets, tot.TxPackets, tot.TxRingFull, tot.Dropped, tot.XDP.Drops(), len(got), drops)
	if tot.TxPackets == 0 || uint64(len(got)) != tot.TxPackets {
		t.Fatalf("captured %d frames, the engine completed %d", len(got), tot.TxPackets)
	}
	bad := 0
	for i, f := range got {
		if !bytes.Equal(f, want) {
			if bad++; bad <= 3 {
				t.Errorf("frame %d came back as\n% x\nwant\n% x", i, f, want)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d frames came back other than rewritten with their checksum filled", bad, len(got))
	}
}

// TestTxChecksumHandlerRefused checks what Config.TxChecksum refuses
// before anything is set up, and that a handler's request without it
// fails.
func TestTxChecksumHandlerRefused(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	for _, tc := range []struct {
		name    string
		mb, una bool
	}{{"multi-buffer", true, false}, {"unaligned", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := rxdropConfig(bed)
			cfg.TxChecksum, cfg.MultiBuffer, cfg.Unaligned = true, tc.mb, tc.una
			err := bed.InDUT(func() error {
				e, err := engine.New(cfg)
				if err == nil {
					e.Close()
				}
				return err
			})
			if !errors.Is(err, engine.ErrTxMetadata) {
				t.Fatalf("engine.New: %v, want ErrTxMetadata", err)
			}
			t.Log(err)
		})
	}
}

// growAll asks each frame for an empty length (which must be refused), then
// grows it at the front by all of its headroom, and sends it back.
type growAll struct{ refusedEmpty, grew, frames int }

func (h *growAll) Handle(b *engine.Batch) {
	for i := 0; i < b.Len(); i++ {
		h.frames++
		if !b.SetLen(i, 0) && !b.AdjustHead(i, len(b.Frame(i))) {
			h.refusedEmpty++
		}
		if b.AdjustHead(i, -b.Headroom(i)) {
			h.grew++
		}
		b.Transmit(i)
	}
}

// TestBatchMakesNoInvalidDescriptor: a handler cannot make a descriptor
// the kernel rejects. An empty frame is refused at the call, and a frame
// grown by all of Headroom, which with TxChecksum leaves the TX metadata
// area in front of it, is sent: the kernel's tx_invalid_descs stays 0
// and every frame counted as sent arrives.
func TestBatchMakesNoInvalidDescriptor(t *testing.T) {
	for _, txMeta := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "TxChecksum"}[txMeta], func(t *testing.T) {
			bed := testbedtest.New(t, 1, 1)
			l := bed.Links[0]
			const count = 2000
			frame := packet.UDPConfig{
				SrcMAC: l.GenMAC, DstMAC: l.DUTMAC,
				SrcIP: netip.MustParseAddr(l.GenIP.String()), DstIP: netip.MustParseAddr(l.DUTIP.String()),
				SrcPort: 1234, DstPort: 9, Size: 64,
			}
			ps := openPacketSocket(t, bed, 0)
			capt := ps.capture()
			cfg := rxdropConfig(bed)
			cfg.TxChecksum = txMeta
			cfg.BindMode = engine.BindCopy
			cfg.FillSize, cfg.RxSize = 8192, 8192
			h := &growAll{}
			cfg.Handler = func(int) engine.Handler { return h }
			r := start(t, bed, cfg)
			send(t, bed, 0, gen.Config{Frame: frame, Count: count, Rate: 50_000, Threads: 1})
			s := r.finish(count)
			tot := s.Total()
			capt.waitFor(int(tot.TxPackets))
			got, _ := capt.stop(t)
			t.Logf("rx %d: refused empty %d, grown %d; tx completed %d, tx_invalid_descs %d; captured %d",
				tot.RxPackets, h.refusedEmpty, h.grew, tot.TxPackets, tot.XDP.TxInvalidDescs, len(got))
			if h.frames == 0 || h.refusedEmpty != h.frames || h.grew != h.frames {
				t.Errorf("%d frames: empty refused %d, grown by all of Headroom %d: want all", h.frames, h.refusedEmpty, h.grew)
			}
			if tot.XDP.TxInvalidDescs != 0 {
				t.Errorf("the kernel rejected %d descriptors", tot.XDP.TxInvalidDescs)
			}
			if tot.TxPackets == 0 || uint64(len(got)) != tot.TxPackets {
				t.Errorf("captured %d frames, the engine counted %d sent", len(got), tot.TxPackets)
			}
		})
	}
}
