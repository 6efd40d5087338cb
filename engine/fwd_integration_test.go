package engine_test

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/xdpeng/xdpeng/engine"
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
			cfg.Forward = &engine.ForwardConfig{Interface: out.DUT, CopyOut: tc.noShared}
			r := start(t, bed, cfg)
			if got, why := r.eng.ForwardUmem(); got != tc.umem {
				t.Fatalf("umem %q (%v), want %q", got, why, tc.umem)
			}
			if mac := r.eng.Config().Forward.DstMAC; !bytes.Equal(mac, out.GenMAC) {
				t.Fatalf("destination MAC %s, want %s (the peer of %s)", mac, out.GenMAC, out.DUT)
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
			outStats, err := r.eng.OutputStats()
			if err != nil {
				t.Fatal(err)
			}
			drops := tot.Dropped + tot.TxRingFull + tot.XDP.Drops()
			t.Logf("rx %d, tx %d, dropped %d, tx ring full %d, in xdp %+v, out xdp %+v", tot.RxPackets, tot.TxPackets, tot.Dropped, tot.TxRingFull, tot.XDP, outStats)
			if tot.RxPackets+tot.XDP.Drops() != count || tot.TxPackets+drops != count {
				t.Fatalf("sent %d != forwarded %d + drops %d (rx %d)", count, tot.TxPackets, drops, tot.RxPackets)
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
		{"same device", func(c *engine.Config) { c.Forward.Interface = c.Interface }, "forwarding needs two devices"},
		{"no output", func(c *engine.Config) { c.Forward.Interface = "nosuch0" }, "output device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := engine.DefaultConfig()
			cfg.Interface = bed.Links[0].DUT
			cfg.Forward = &engine.ForwardConfig{Interface: bed.Links[1].DUT}
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
