//go:build linux

package engine_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/engineview"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

func TestMain(m *testing.M) { os.Exit(privtest.Main(m)) }

// running is an engine started on a test bed's DUT.
type running struct {
	t    *testing.T
	eng  *engine.Engine
	stop context.CancelFunc
	done chan error
}

// start creates an engine inside the DUT namespace (its sockets and
// program stay there) and runs it until the test ends or finish is called.
// With TxChecksum, a kernel without AF_XDP TX metadata makes the test not
// supported here.
func start(t *testing.T, bed *testbed.Bed, cfg engine.Config) *running {
	t.Helper()
	var eng *engine.Engine
	if err := bed.InDUT(func() (err error) {
		eng, err = engine.New(cfg)
		return err
	}); err != nil {
		if cfg.TxChecksum && errors.Is(err, engine.ErrTxMetadata) && errors.Is(err, unix.EINVAL) {
			privtest.Unsupported(t, "%v", err) // a kernel without AF_XDP TX metadata
		}
		t.Fatalf("engine.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{t: t, eng: eng, stop: cancel, done: make(chan error, 1)}
	go func() { r.done <- eng.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-r.done
		eng.Close()
	})
	return r
}

// waitFor waits until the engine has received want frames or its count
// has stopped changing for a while, then stops it and returns the totals.
func (r *running) finish(want uint64) engine.Snapshot {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var last uint64
	stable := 0
	for time.Now().Before(deadline) {
		s, err := r.eng.Stats()
		if err != nil {
			r.t.Fatal(err)
		}
		got := s.Total().RxPackets
		if got >= want {
			break
		}
		if got == last {
			if stable++; stable > 20 {
				break
			}
		} else {
			stable = 0
		}
		last = got
		time.Sleep(50 * time.Millisecond)
	}
	r.stop()
	if err := <-r.done; err != nil {
		r.t.Fatalf("engine.Run: %v", err)
	}
	r.done <- nil // for the cleanup
	s, err := r.eng.Stats()
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

// send runs the generator in the bed's gen namespace.
func send(t *testing.T, bed *testbed.Bed, link int, cfg gen.Config) gen.Stats {
	t.Helper()
	l := bed.Links[link]
	cfg.Ifindex = l.GenIndex
	if cfg.Frame.Size == 0 {
		cfg.Frame = packet.UDPConfig{
			SrcMAC: l.GenMAC, DstMAC: l.DUTMAC,
			SrcIP:   netip.MustParseAddr(l.GenIP.String()),
			DstIP:   netip.MustParseAddr(l.DUTIP.String()),
			SrcPort: 1234, DstPort: 9, Size: 64,
		}
	}
	var st gen.Stats
	if err := bed.InGen(func() (err error) {
		st, err = gen.Run(context.Background(), cfg, nil)
		return err
	}); err != nil {
		t.Fatalf("gen.Run: %v", err)
	}
	return st
}

func rxdropConfig(bed *testbed.Bed) engine.Config {
	cfg := engine.DefaultConfig()
	cfg.Interface = bed.Links[0].DUT
	return cfg
}

func TestRxDropExactCount(t *testing.T) {
	for _, tc := range []struct {
		name    string
		queues  int
		threads int
		count   uint64
	}{
		{"1queue", 1, 1, 100_000},
		{"2queues", 2, 2, 200_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bed := testbedtest.New(t, tc.queues, 1)
			r := start(t, bed, rxdropConfig(bed))
			st := send(t, bed, 0, gen.Config{Count: tc.count, Rate: tc.count, Threads: tc.threads})
			if st.Sent != tc.count {
				t.Fatalf("generator sent %d, want %d", st.Sent, tc.count)
			}
			s := r.finish(tc.count)
			tot := s.Total()
			// Every frame is received once or counted as a socket drop.
			// At this rate none is dropped unless the worker loses its CPU
			// for longer than its fill ring lasts (a loaded machine): a
			// drop is logged, not failed, as the count still closes.
			if tot.RxPackets+tot.XDP.Drops() != tc.count {
				t.Errorf("received %d + socket drops %d != sent %d (xdp stats %+v, generator %+v)", tot.RxPackets, tot.XDP.Drops(), tc.count, tot.XDP, st)
			}
			if tot.RxBytes != tot.RxPackets*64 {
				t.Errorf("received %d bytes in %d frames, want 64 each", tot.RxBytes, tot.RxPackets)
			}
			if tot.XDP.RxInvalidDescs != 0 || tot.XDP.TxInvalidDescs != 0 {
				t.Errorf("invalid descriptors: %+v", tot.XDP)
			}
			if d := tot.XDP.Drops(); d != 0 {
				t.Logf("%d frames dropped by the socket (xdp stats %+v)", d, tot.XDP)
			}
			if len(s.Queues) != tc.queues {
				t.Fatalf("%d queues bound, want %d", len(s.Queues), tc.queues)
			}
			for _, q := range s.Queues {
				if q.RxPackets == 0 {
					t.Errorf("queue %d received nothing: %+v", q.Queue, s.Queues)
				}
			}
		})
	}
}

// TestRxDropAccountingUnbounded sends as fast as the generator can for a
// while: whatever the engine cannot take must show up as a counted drop.
func TestRxDropAccountingUnbounded(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	cfg := rxdropConfig(bed)
	cfg.FillSize, cfg.RxSize, cfg.CompletionSize = 64, 64, 64
	cfg.NumFrames = 128
	r := start(t, bed, cfg)
	var before []netdev.VethQueue
	if err := bed.InDUT(func() (err error) { before, err = netdev.VethQueueCounters(bed.Links[0].DUT); return err }); err != nil {
		t.Fatal(err)
	}
	st := send(t, bed, 0, gen.Config{Duration: time.Second, Threads: 1})
	s := r.finish(st.Sent)
	var after []netdev.VethQueue
	if err := bed.InDUT(func() (err error) { after, err = netdev.VethQueueCounters(bed.Links[0].DUT); return err }); err != nil {
		t.Fatal(err)
	}
	tot := s.Total()
	vethRxDrops := netdev.SumVethQueues(after).RxDrops - netdev.SumVethQueues(before).RxDrops
	// Every frame the generator handed over either reached the socket, was
	// dropped by the socket (rx ring full, no fill buffer: XDP_STATISTICS),
	// or was refused by the veth before XDP ran (xmit errors: its ring to
	// the peer was full).
	got := tot.RxPackets + tot.XDP.Drops() + st.Errors + st.Unaccounted()
	t.Logf("sent %d: received %d, socket drops %d (%+v), veth xmit errors %d, unaccounted %d; veth rx drops %d",
		st.Sent, tot.RxPackets, tot.XDP.Drops(), tot.XDP, st.Errors, st.Unaccounted(), vethRxDrops)
	if got != st.Sent {
		t.Errorf("sent %d != received %d + socket drops %d + veth xmit errors %d = %d",
			st.Sent, tot.RxPackets, tot.XDP.Drops(), st.Errors, got)
	}
	if st.Unaccounted() != 0 {
		t.Errorf("%d frames vanished before the veth counted them", st.Unaccounted())
	}
	// The socket's drops are failed redirects, which veth counts as well.
	if vethRxDrops != tot.XDP.Drops() {
		t.Errorf("veth counted %d failed redirects, the socket %d drops", vethRxDrops, tot.XDP.Drops())
	}
}

func TestDetachOnClose(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	dut := bed.Links[0].DUT
	err := bed.InDUT(func() error {
		eng, err := engine.New(rxdropConfig(bed))
		if err != nil {
			return err
		}
		info, err := netdev.Lookup(dut)
		if err != nil {
			eng.Close()
			return err
		}
		st, err := netdev.XDPAttached(info.Index)
		if err != nil {
			eng.Close()
			return err
		}
		if st.ProgID == 0 {
			eng.Close()
			return errors.New("no XDP program attached while the engine exists")
		}
		if err := eng.Close(); err != nil {
			return err
		}
		if st, err = netdev.XDPAttached(info.Index); err != nil {
			return err
		}
		if st.ProgID != 0 {
			return errors.New("XDP program still attached after Close")
		}
		// A second engine on the same queues works: nothing was left bound.
		eng, err = engine.New(rxdropConfig(bed))
		if err != nil {
			return err
		}
		return eng.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestBadInput(t *testing.T) {
	bed := testbedtest.New(t, 2, 1)
	for _, tc := range []struct {
		name string
		mod  func(*engine.Config)
		want string
	}{
		{"missing interface", func(c *engine.Config) { c.Interface = "nosuch0" }, `interface "nosuch0" not found`},
		{"queue out of range", func(c *engine.Config) { c.Queues = []int{0, 5} }, "queue 5"},
		{"frame size", func(c *engine.Config) { c.FrameSize = 3000 }, "frame size 3000"},
		{"ring size", func(c *engine.Config) { c.RxSize = 1000 }, "rx ring size 1000"},
		{"batch", func(c *engine.Config) { c.Batch = 4096 }, "batch size 4096"},
		{"cpus", func(c *engine.Config) { c.Queues = []int{0}; c.CPUs = []int{4000} }, "CPU 4000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := rxdropConfig(bed)
			tc.mod(&cfg)
			err := bed.InDUT(func() error {
				eng, err := engine.New(cfg)
				if err == nil {
					eng.Close()
				}
				return err
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if h := testbedtest.ReadHooksIn(t, bed.DUTNS, bed.Links[0].DUT); !h.Empty() {
				t.Errorf("hooks %+v left after a refused configuration", h)
			}
		})
	}
}

// TestMTUTooLarge: a device whose frames do not fit in the UMEM frames is
// refused before anything is attached, and 4096-byte frames then take it.
func TestMTUTooLarge(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	dev := bed.Links[0].DUT
	err := bed.InDUT(func() error {
		link, err := netlink.LinkByName(dev)
		if err != nil {
			return err
		}
		if err := netlink.LinkSetMTU(link, 3000); err != nil {
			return err
		}
		cfg := rxdropConfig(bed)
		cfg.FrameSize = 2048
		eng, err := engine.New(cfg)
		if err == nil {
			eng.Close()
			return errors.New("2048-byte frames accepted on a device with MTU 3000")
		}
		var me *engine.MTUError
		if !errors.As(err, &me) || me.Device != dev || me.MTU != 3000 || me.MaxMTU != 1774 {
			return fmt.Errorf("error %q (%+v), want an *MTUError for %s with MTU 3000 and MaxMTU 1774", err, me, dev)
		}
		cfg.FrameSize = 4096
		eng, err = engine.New(cfg)
		if err != nil {
			return fmt.Errorf("4096-byte frames on MTU 3000: %w", err)
		}
		return eng.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestThreadedBusyPollRefused: on veth, which links no NAPI to its queues
// (or on a kernel without threaded busy polling), New refuses
// WaitThreadedBusyPoll with an error that says which, and leaves the
// device as it found it: no XDP program, its NAPIs in their threaded mode.
func TestThreadedBusyPollRefused(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	cfg := rxdropConfig(bed)
	cfg.Wait = engine.WaitThreadedBusyPoll
	err := bed.InDUT(func() error {
		before, err := netdev.NAPIs(l.DUTIndex)
		if err != nil {
			return err
		}
		eng, err := engine.New(cfg)
		if err == nil {
			eng.Close()
			return errors.New("New with WaitThreadedBusyPoll on veth succeeded")
		}
		t.Logf("refused: %v", err)
		if !errors.Is(err, engine.ErrNoThreadedBusyPoll) && !(errors.Is(err, errors.ErrUnsupported) && strings.Contains(err.Error(), "links no NAPI to queue 0")) {
			t.Errorf("New: %v; want ErrNoThreadedBusyPoll, or the queue without a NAPI named", err)
		}
		h, err := testbedtest.ReadHooks(l.DUTIndex)
		if err != nil {
			return err
		}
		if !h.Empty() {
			t.Errorf("%s after the refusal: %+v, want no program", l.DUT, h)
		}
		after, err := netdev.NAPIs(l.DUTIndex)
		if err != nil {
			return err
		}
		if fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("%s's NAPIs before New %+v, after %+v", l.DUT, before, after)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestBusyPollWithoutNAPI checks WaitBusyPoll on a device whose socket gets
// no NAPI ID (veth in Linux 6.18): the worker finds busy polling inert once
// frames came in, says so, and still receives every frame; on a kernel
// that gives veth sockets a NAPI ID it keeps busy polling.
func TestBusyPollWithoutNAPI(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	cfg := rxdropConfig(bed)
	cfg.Wait = engine.WaitBusyPoll
	r := start(t, bed, cfg)
	const count = 50_000
	if st := send(t, bed, 0, gen.Config{Count: count, Rate: count}); st.Sent != count {
		t.Fatalf("generator sent %d, want %d", st.Sent, count)
	}
	id, err := engineview.Sockets(r.eng)[0].NAPIID()
	if err != nil {
		t.Fatal(err)
	}
	// veth links no NAPI to its queues: Config.BusyPollNAPI (the
	// default's) changes nothing, and the engine says why.
	if changes, note := r.eng.BusyPollNAPI(); len(changes) != 0 || !strings.Contains(note, "links no NAPI to queue 0") {
		t.Errorf("BusyPollNAPI on veth: %+v, %q: want no change, and the reason", changes, note)
	}
	s := r.finish(count)
	tot := s.Total()
	if tot.RxPackets+tot.XDP.Drops() != count {
		t.Errorf("received %d + socket drops %d != sent %d", tot.RxPackets, tot.XDP.Drops(), count)
	}
	if tot.BusyPollInert != (id == 0) {
		t.Errorf("socket NAPI ID %d, BusyPollInert %v: want it set exactly when the ID is 0", id, tot.BusyPollInert)
	}
	t.Logf("NAPI ID %d, busy poll inert %v, rx wakeups %d, polls %d", id, tot.BusyPollInert, tot.RxWakeups, tot.Polls)
}
