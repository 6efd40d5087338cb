//go:build linux

package engine_test

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
	"github.com/xdpeng/xdpeng/internal/testutil/xskmaptest"
)

// TestUserXSKMap: an engine given the caller's XSKMAP puts its socket in
// it and receives what the caller's program redirects there, with the
// program attached by the engine (Config.Program) or by the caller (map
// alone: the engine attaches nothing). Close detaches what the engine
// attached and leaves the caller's program on, and the map serves the
// next engine.
func TestUserXSKMap(t *testing.T) {
	for _, engineAttaches := range []bool{true, false} {
		t.Run(map[bool]string{true: "program and map", false: "map alone"}[engineAttaches], func(t *testing.T) {
			bed := testbedtest.New(t, 1, 1)
			l := bed.Links[0]
			m, p := xskmaptest.New(t, 4)
			cfg := rxdropConfig(bed)
			cfg.XSKMap = m
			if engineAttaches {
				cfg.Program = p
			} else {
				if err := bed.InDUT(func() error {
					lk, err := link.AttachXDP(link.XDPOptions{Program: p, Interface: l.DUTIndex})
					if err == nil {
						t.Cleanup(func() { lk.Close() })
					}
					return err
				}); err != nil {
					t.Fatalf("attach the caller's program: %v", err)
				}
			}
			const count = 20_000
			r := start(t, bed, cfg)
			// Every frame reaches the socket: received (and dropped by
			// the handler), or dropped by the kernel at the socket and
			// counted there (the fill ring empty when a slow worker, under
			// the race detector, falls behind a burst).
			gs := send(t, bed, 0, gen.Config{Count: count, Threads: 1, Rate: 200_000})
			tot := r.finish(count).Total()
			if tot.RxPackets+tot.XDP.RxDropped != count || tot.Dropped != tot.RxPackets {
				t.Errorf("received %d (handler dropped %d), dropped at the socket %d: want %d in all (socket %+v; generator %+v)",
					tot.RxPackets, tot.Dropped, tot.XDP.RxDropped, count, tot.XDP, gs)
			}
			if err := r.eng.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			var st netdev.XDPState
			if err := bed.InDUT(func() (err error) { st, err = netdev.XDPAttached(l.DUTIndex); return err }); err != nil {
				t.Fatal(err)
			}
			info, _ := p.Info()
			id, _ := info.ID()
			switch {
			case engineAttaches && st.ProgID != 0:
				t.Errorf("program %d still attached after Close", st.ProgID)
			case !engineAttaches && st.ProgID != uint32(id):
				t.Errorf("after Close the device has program %d attached, want the caller's %d", st.ProgID, id)
			}
			// The map serves the next engine as it served this one.
			r = start(t, bed, cfg)
			send(t, bed, 0, gen.Config{Count: count, Threads: 1, Rate: 200_000})
			if tot := r.finish(count).Total(); tot.RxPackets+tot.XDP.RxDropped != count {
				t.Errorf("a second engine on the map received %d and dropped %d of %d", tot.RxPackets, tot.XDP.RxDropped, count)
			}
		})
	}
}

// TestUserXSKMapRefused: what New refuses of a caller's map before
// anything is set up.
func TestUserXSKMapRefused(t *testing.T) {
	privtest.Root(t)
	xsks, _ := xskmaptest.New(t, 2)
	hash, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer hash.Close()
	for _, tc := range []struct {
		name string
		set  func(*engine.Config)
		want string
	}{
		{"not an XSKMAP", func(c *engine.Config) { c.XSKMap = hash }, "it must be an XSKMAP"},
		{"no room for the queue", func(c *engine.Config) { c.XSKMap, c.Queues = xsks, []int{2} }, "queue 2: XSKMap has room for queues 0 to 1 only"},
		{"UDPPort", func(c *engine.Config) { c.XSKMap, c.UDPPort = xsks, 9 }, "UDPPort and Match are the engine's own program's"},
		{"Match", func(c *engine.Config) { c.XSKMap, c.Match = xsks, engine.Match{IPProto: 6} }, "UDPPort and Match are the engine's own program's"},
		{"program without its map", func(c *engine.Config) { c.XSKMap = nil; c.Program = &ebpf.Program{} }, "a Program needs its XSKMap"},
	} {
		cfg := engine.DefaultConfig()
		cfg.Interface = "xdpeng-none0"
		tc.set(&cfg)
		if _, err := engine.New(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestMatchSteers: Config.Match reaches the steering program. The
// generator's UDP frames to port 9 all reach the sockets when the match
// takes them, and none when it takes TCP or another destination (they go
// to the stack). The rules themselves are bpf's TestXskRedirectSteers.
func TestMatchSteers(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	dut := netip.MustParseAddr(bed.Links[0].DUTIP.String())
	const count = 2000
	for _, c := range []struct {
		match engine.Match
		want  uint64
	}{
		{engine.Match{IPProto: 17, DstPort: 9}, count},
		{engine.Match{Dst: netip.PrefixFrom(dut, 32)}, count},
		{engine.Match{IPProto: 6}, 0},
		{engine.Match{Dst: netip.MustParsePrefix("198.19.0.0/16")}, 0},
		{engine.Match{EtherType: 0x86dd}, 0},
	} {
		t.Run(c.match.String(), func(t *testing.T) {
			cfg := rxdropConfig(bed)
			cfg.Match = c.match
			r := start(t, bed, cfg)
			send(t, bed, 0, gen.Config{Count: count, Threads: 1, Rate: 200_000})
			if c.want == 0 {
				time.Sleep(300 * time.Millisecond)
			}
			if tot := r.finish(c.want).Total(); tot.RxPackets != c.want {
				t.Errorf("match %v: the sockets received %d of %d frames, want %d", c.match, tot.RxPackets, count, c.want)
			}
			r.eng.Close()
		})
	}
}
