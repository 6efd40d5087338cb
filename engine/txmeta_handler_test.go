package engine

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/xsk"
)

// markEven asks for the checksum of every even frame and transmits every
// frame; it keeps the first error of each kind.
type markEven struct{ errs []error }

func (h *markEven) Handle(b *Batch) {
	for i := 0; i < b.Len(); i++ {
		if i%2 == 0 {
			if err := b.SetTxChecksum(i); err != nil {
				h.errs = append(h.errs, err)
			}
		}
		b.Transmit(i)
	}
}

// TestSetTxChecksumMarks: the frames a handler asked a checksum for go on
// the tx ring with the TX metadata option, their metadata asking for the
// checksum of the UDP header on, their checksum field seeded with the
// pseudo-header's sum; the others, and every frame of the next batch that
// asks nothing, go without.
func TestSetTxChecksumMarks(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Interface, cfg.TxChecksum = "mem0", true
	u, err := xsk.NewMemUmem(cfg.umemConfig(cfg.framesPerSocket()))
	if err != nil {
		t.Fatal(err)
	}
	s, err := xsk.NewMemSocket(u, xsk.SocketConfig{FillSize: cfg.FillSize, CompletionSize: cfg.CompletionSize, RxSize: cfg.RxSize, TxSize: cfg.TxSize})
	if err != nil {
		t.Fatal(err)
	}
	h := &markEven{}
	w := newRxWorker(0, 0, s, h, workerOptions(&cfg))
	w.batch.txMeta = make([]bool, len(w.batch.addrs))
	k := s.Kernel()
	k.Headroom = KernelHeadroom
	udp := packet.UDPConfig{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, SrcIP: netip.MustParseAddr("198.18.0.1"), DstIP: netip.MustParseAddr("198.18.0.2"), SrcPort: 1, DstPort: 9, Size: 64}
	f := make([]byte, udp.Size)
	if _, err := packet.BuildUDP(f, udp); err != nil {
		t.Fatal(err)
	}
	seed := pseudoSeed(f)
	w.refill()

	check := func(round int, marked func(j int) bool) {
		t.Helper()
		if got := k.ReceiveFrames(8, [][]byte{f}); got != 8 {
			t.Fatalf("round %d: delivered %d of 8", round, got)
		}
		before := k.Transmitted
		if n := w.receive(); n != 8 {
			t.Fatalf("round %d: took %d of 8", round, n)
		}
		for j := uint32(0); j < 8; j++ {
			d := k.TxDesc(uint32(before) + j)
			wantOpt := uint32(0)
			if marked(int(j)) {
				wantOpt = xsk.TxMetadataOption
			}
			if d.Options != wantOpt {
				t.Errorf("round %d: descriptor %d has options %#x, want %#x", round, j, d.Options, wantOpt)
			}
			if !marked(int(j)) {
				continue
			}
			m, err := u.TxMetadata(d.Addr)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if flags := binary.NativeEndian.Uint64(m); flags != uint64(xsk.TxChecksum) {
				t.Errorf("round %d: descriptor %d asks for %#x, want the checksum", round, j, flags)
			}
			if start, off := binary.NativeEndian.Uint16(m[8:]), binary.NativeEndian.Uint16(m[10:]); start != 34 || off != 6 {
				t.Errorf("round %d: checksum from %d at +%d, want from 34 at +6", round, start, off)
			}
			if got := binary.BigEndian.Uint16(u.Frame(d.Addr, d.Len)[40:]); got != seed {
				t.Errorf("round %d: checksum field %#04x, want the pseudo-header's sum %#04x", round, got, seed)
			}
		}
		k.Transmit(8)
		w.complete()
	}
	check(1, func(j int) bool { return j%2 == 0 })
	h2 := HandlerFunc(func(b *Batch) {
		for i := 0; i < b.Len(); i++ {
			b.Transmit(i)
		}
	})
	w.handler = h2
	check(2, func(int) bool { return false })
	if len(h.errs) != 0 {
		t.Fatalf("SetTxChecksum: %v", h.errs[0])
	}
}

// TestSetTxChecksumRefuses: a frame that is not UDP or TCP over IP, and an
// engine made without Config.TxChecksum: each error wraps ErrNoTxChecksum,
// and the refusal allocates nothing.
func TestSetTxChecksumRefuses(t *testing.T) {
	arp := make([]byte, 64)
	arp[12], arp[13] = 0x08, 0x06
	var got []error
	h := HandlerFunc(func(b *Batch) {
		for i := 0; i < b.Len(); i++ {
			got = append(got, b.SetTxChecksum(i))
		}
	})
	if _, err := Simulate(h, [][]byte{arp}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !errors.Is(got[0], ErrNoTxChecksum) {
		t.Fatalf("without Config.TxChecksum: %v, want ErrNoTxChecksum", got)
	}
	b := Batch{txMeta: make([]bool, 1), n: 1, addrs: []uint64{256}, lens: []uint32{64}, mem: make([]byte, 4096)}
	copy(b.mem[256:], arp)
	if err := b.SetTxChecksum(0); !errors.Is(err, ErrNoTxChecksum) || b.anyTxMeta {
		t.Fatalf("ARP frame: %v (marked %v), want ErrNoTxChecksum and no mark", err, b.anyTxMeta)
	}
	icmp := make([]byte, 64)
	icmp[12], icmp[13] = 0x08, 0x00
	icmp[14], icmp[16], icmp[17], icmp[23] = 0x45, 0, 50, 1 // IPv4, total length 50, protocol ICMP
	copy(b.mem[256:], icmp)
	if err := b.SetTxChecksum(0); !errors.Is(err, ErrNoTxChecksum) || !strings.Contains(err.Error(), "only UDP and TCP") || b.anyTxMeta {
		t.Fatalf("ICMP frame: %v (marked %v), want ErrNoTxChecksum for its protocol and no mark", err, b.anyTxMeta)
	}
	if a := testing.AllocsPerRun(100, func() { _ = b.SetTxChecksum(0) }); a != 0 {
		t.Errorf("a refused SetTxChecksum allocates %.0f times", a)
	}
}

// TestSimTxChecksumPorts: with Sim.TxChecksum the frames that asked go out
// asking, on every way out: Transmit, Forward to ToInput, to the batch's
// first output (its own loop) and to another (frame by frame).
func TestSimTxChecksumPorts(t *testing.T) {
	udp := packet.UDPConfig{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2},
		SrcIP: netip.MustParseAddr("198.18.0.1"), DstIP: netip.MustParseAddr("198.18.0.2"), SrcPort: 1, DstPort: 9, Size: 64}
	f := make([]byte, udp.Size)
	if _, err := packet.BuildUDP(f, udp); err != nil {
		t.Fatal(err)
	}
	frames := make([][]byte, 16)
	for i := range frames {
		frames[i] = f
	}
	ports := []Dest{ToInput, ToInput, ToOutput(0), ToOutput(1)}
	var errs []error
	h := HandlerFunc(func(b *Batch) {
		for i := 0; i < b.Len(); i++ {
			if i%3 != 0 {
				if err := b.SetTxChecksum(i); err != nil {
					errs = append(errs, err)
				}
			}
			switch p := ports[i%4]; {
			case i%4 == 0:
				b.Transmit(i)
			default:
				b.Forward(i, p)
			}
		}
	})
	res, err := Sim{Outputs: 2, TxChecksum: true}.Run(h, frames)
	if err != nil {
		t.Fatal(err)
	}
	if len(errs) != 0 {
		t.Fatal(errs[0])
	}
	seed := pseudoSeed(f)
	for i, r := range res.Frames {
		if !r.Sent || r.Dest != ports[i%4] {
			t.Fatalf("frame %d: sent %v on %v, want sent on %v", i, r.Sent, r.Dest, ports[i%4])
		}
		if want := i%3 != 0; r.TxChecksum != want {
			t.Errorf("frame %d on %v: TxChecksum %v, want %v", i, r.Dest, r.TxChecksum, want)
		}
		if got := binary.BigEndian.Uint16(r.Data[40:]); r.TxChecksum && got != seed {
			t.Errorf("frame %d: checksum field %#04x, want the pseudo-header's sum %#04x", i, got, seed)
		}
	}
	if _, err := (Sim{TxChecksum: true, MultiBuffer: true}).Run(h, frames); !errors.Is(err, ErrTxMetadata) {
		t.Errorf("with multi-buffer: %v, want ErrTxMetadata", err)
	}
}
