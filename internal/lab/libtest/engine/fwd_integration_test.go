//go:build linux

package engine_test

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/handler"
	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
)

// TestFwdBetweenLinks sends frames into gen0->dut0 and checks that they come
// out of dut1->gen1 intact but for the destination MAC, every one counted.
func TestFwdBetweenLinks(t *testing.T) {
	for _, tc := range []struct {
		name     string
		queues   int
		noShared bool
		umem     string
	}{
		{"shared", 1, false, "shared"},
		{"shared-2queues", 2, false, "shared"},
		{"copy", 1, true, "copy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bed := testbedtest.New(t, tc.queues, 2)
			in, out := bed.Links[0], bed.Links[1]
			cfg := engine.DefaultConfig()
			cfg.Interface = in.DUT
			cfg.Outputs = []engine.Output{{Interface: out.DUT, Copy: tc.noShared}}
			cfg.Handler = func(int) engine.Handler {
				return &handler.Fwd{Dest: engine.ToOutput(0), DstMAC: out.GenMAC}
			}
			r := start(t, bed, cfg)
			o := r.eng.Outputs()
			if len(o) != 1 || o[0].Port != engine.ToOutput(0) || o[0].Device.Name != out.DUT || o[0].Copy != (tc.umem == "copy") {
				t.Fatalf("outputs %+v, want %s on port 1 with umem %s", o, out.DUT, tc.umem)
			}
			c := listenWire(t, bed.GenNS, out.Gen, out.GenIndex, in.GenMAC)

			const count = 20_000
			frame := packet.UDPConfig{
				SrcMAC: in.GenMAC, DstMAC: in.DUTMAC,
				SrcIP: netip.MustParseAddr(in.GenIP.String()), DstIP: netip.MustParseAddr(in.DUTIP.String()),
				SrcPort: 1234, DstPort: 9, Size: 100, Fill: 0x5a,
			}
			st := send(t, bed, 0, gen.Config{Count: count, Rate: 100_000, Threads: tc.queues, Ports: 2 * tc.queues, Frame: frame})
			if st.Sent != count {
				t.Fatalf("generator sent %d, want %d", st.Sent, count)
			}
			s := r.finish(count)
			tot := s.Total()
			outStats, err := r.eng.OutputStats(engine.ToOutput(0))
			if err != nil {
				t.Fatal(err)
			}
			drops := tot.Dropped + tot.TxRingFull + tot.XDP.Drops()
			t.Logf("rx %d, tx %d, dropped %d, tx ring full %d, in xdp %+v, out xdp %+v", tot.RxPackets, tot.TxPackets, tot.Dropped, tot.TxRingFull, tot.XDP, outStats)
			if tot.RxPackets+tot.XDP.Drops() != count || tot.TxPackets+drops != count {
				t.Fatalf("sent %d != forwarded %d + drops %d (rx %d)", count, tot.TxPackets, drops, tot.RxPackets)
			}
			// Every transmit was out of the output, port by port.
			if len(tot.Dests) != 2 || tot.Dests[1].Dest != engine.ToOutput(0) || tot.Dests[1].TxPackets != tot.TxPackets ||
				tot.Dests[0].TxPackets != 0 || tot.Dests[0].TxRingFull+tot.Dests[1].TxRingFull != tot.TxRingFull {
				t.Errorf("per-port counters %+v, want all of the %d transmits and %d tx ring full on %v", tot.Dests, tot.TxPackets, tot.TxRingFull, engine.ToOutput(0))
			}
			if tc.queues > 1 {
				for _, q := range s.Queues {
					if q.TxPackets == 0 {
						t.Errorf("queue %d forwarded nothing", q.Queue)
					}
				}
			}
			c.collect(t, int(tot.TxPackets)+1)
			if uint64(len(c.frames)) != tot.TxPackets {
				t.Fatalf("gen1 received %d frames, the engine forwarded %d", len(c.frames), tot.TxPackets)
			}
			wants := map[string]bool{}
			for p := 0; p < 2*tc.queues; p++ {
				v := frame
				v.DstMAC = out.GenMAC
				v.DstPort = frame.DstPort + uint16(p)
				b := make([]byte, v.Size)
				if _, err := packet.BuildUDP(b, v); err != nil {
					t.Fatal(err)
				}
				wants[string(b)] = true
			}
			for i, f := range c.frames {
				if !wants[string(f)] {
					t.Fatalf("frame %d on gen1 is not a sent frame with the new destination MAC:\n%x", i, f)
				}
			}
		})
	}
}

func TestFwdRefusals(t *testing.T) {
	bed := testbedtest.New(t, 2, 2)
	for _, tc := range []struct {
		name string
		mod  func(*engine.Config)
		want string
	}{
		{"same device", func(c *engine.Config) { c.Outputs[0].Interface = c.Interface }, "is the input device too"},
		{"no output", func(c *engine.Config) { c.Outputs[0].Interface = "nosuch0" }, "output device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := engine.DefaultConfig()
			cfg.Interface = bed.Links[0].DUT
			cfg.Outputs = []engine.Output{{Interface: bed.Links[1].DUT}}
			tc.mod(&cfg)
			err := bed.InDUT(func() error {
				eng, err := engine.New(cfg)
				if err == nil {
					eng.Close()
				}
				return err
			})
			if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// byParity forwards frames to even UDP destination ports out of even and
// the rest out of odd, each with its own destination MAC.
type byParity struct {
	even, odd       engine.Dest
	evenMAC, oddMAC []byte
}

func (h byParity) Handle(b *engine.Batch) {
	var s packet.Summary
	for i := 0; i < b.Len(); i++ {
		f := b.Frame(i)
		if !packet.Parse(f, &s) || s.Proto != packet.ProtoUDP {
			continue
		}
		if s.DstPort%2 == 0 {
			copy(f, h.evenMAC)
			b.Forward(i, h.even)
		} else {
			copy(f, h.oddMAC)
			b.Forward(i, h.odd)
		}
	}
}

// TestFwdTwoOutputs forwards from dut0 out of dut1 and dut2 by a handler's
// choice, and checks every frame at each output: the right frames, each
// once, counted.
func TestFwdTwoOutputs(t *testing.T) {
	bed := testbedtest.New(t, 1, 3)
	in, a, b := bed.Links[0], bed.Links[1], bed.Links[2]
	cfg := engine.DefaultConfig()
	cfg.Interface = in.DUT
	cfg.Outputs = []engine.Output{{Interface: a.DUT}, {Interface: b.DUT, Copy: true}}
	cfg.Handler = func(int) engine.Handler {
		return byParity{even: engine.ToOutput(0), odd: engine.ToOutput(1), evenMAC: a.GenMAC, oddMAC: b.GenMAC}
	}
	r := start(t, bed, cfg)
	ca := listenWire(t, bed.GenNS, a.Gen, a.GenIndex, in.GenMAC)
	cb := listenWire(t, bed.GenNS, b.Gen, b.GenIndex, in.GenMAC)
	const count = 10_000
	frame := packet.UDPConfig{
		SrcMAC: in.GenMAC, DstMAC: in.DUTMAC,
		SrcIP: netip.MustParseAddr(in.GenIP.String()), DstIP: netip.MustParseAddr(in.DUTIP.String()),
		SrcPort: 1234, DstPort: 10, Size: 100, Fill: 0x5a,
	}
	st := send(t, bed, 0, gen.Config{Count: count, Rate: 50_000, Threads: 1, Ports: 4, Frame: frame})
	if st.Sent != count {
		t.Fatalf("generator sent %d, want %d", st.Sent, count)
	}
	s := r.finish(count)
	tot := s.Total()
	if drops := tot.Dropped + tot.TxRingFull + tot.XDP.Drops(); tot.TxPackets+drops != count {
		t.Fatalf("sent %d != forwarded %d + drops %d", count, tot.TxPackets, drops)
	}
	ca.collect(t, count+1)
	cb.collect(t, count+1)
	if uint64(len(ca.frames)+len(cb.frames)) != tot.TxPackets {
		t.Fatalf("%s got %d and %s %d frames, the engine forwarded %d", a.Gen, len(ca.frames), b.Gen, len(cb.frames), tot.TxPackets)
	}
	for _, tc := range []struct {
		frames [][]byte
		mac    []byte
		parity uint16
	}{{ca.frames, a.GenMAC, 0}, {cb.frames, b.GenMAC, 1}} {
		if len(tc.frames) == 0 {
			t.Fatalf("nothing came out of the output for parity %d", tc.parity)
		}
		for i, f := range tc.frames {
			var s packet.Summary
			if !packet.Parse(f, &s) || s.DstPort%2 != tc.parity || !bytes.Equal(f[:6], tc.mac) || len(f) != frame.Size {
				t.Fatalf("frame %d of parity %d is wrong: %x", i, tc.parity, f)
			}
		}
	}
}
