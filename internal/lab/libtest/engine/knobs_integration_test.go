//go:build linux

package engine_test

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/handler"
	"github.com/xdpeng/xdpeng/internal/engineview"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// l2fwd makes L2FwdHandlers: sockets with a tx ring.
func l2fwd(int) engine.Handler { return handler.L2Fwd{} }

// inEngine creates an engine with cfg in the DUT namespace, runs check
// there, and closes the engine.
func inEngine(t *testing.T, bed *testbed.Bed, cfg engine.Config, check func(*engine.Engine)) {
	t.Helper()
	err := bed.InDUT(func() error {
		eng, err := engine.New(cfg)
		if err != nil {
			return err
		}
		defer eng.Close()
		check(eng)
		return nil
	})
	if err != nil {
		t.Fatalf("engine.New: %v", err)
	}
}

// TestKnobs checks that each configuration knob changes what it says it
// changes, read back from the sockets and the device. One bed of two
// queues serves every case; the engines are created and closed in turn.
func TestKnobs(t *testing.T) {
	bed := testbedtest.New(t, 2, 1)

	t.Run("ring sizes", func(t *testing.T) {
		cfg := rxdropConfig(bed)
		cfg.FillSize, cfg.CompletionSize, cfg.RxSize, cfg.TxSize = 512, 256, 1024, 128
		cfg.Handler = l2fwd
		inEngine(t, bed, cfg, func(eng *engine.Engine) {
			for q, s := range engineview.Sockets(eng) {
				c := s.Config()
				got := [4]uint32{c.FillSize, c.CompletionSize, c.RxSize, c.TxSize}
				// The ring sizes of the mmap'd rings: mapping a ring larger
				// than the kernel made it would have failed.
				mapped := [4]uint32{s.Fill.Size(), s.Completion.Size(), s.Rx.Size(), s.Tx.Size()}
				want := [4]uint32{512, 256, 1024, 128}
				if got != want || mapped != want {
					t.Errorf("queue %d: rings fill/comp/rx/tx configured %v, mapped %v, want %v", q, got, mapped, want)
				}
				// Enough frames to fill the fill ring and the tx ring.
				if n := s.Umem().NumFrames(); n != 512+128 {
					t.Errorf("queue %d: UMEM of %d frames, want %d", q, n, 512+128)
				}
			}
		})
		cfg.Handler = nil // rxdrop: never transmits, so gets no tx ring
		cfg.NumFrames = 1000
		inEngine(t, bed, cfg, func(eng *engine.Engine) {
			s := engineview.Sockets(eng)[0]
			if s.Config().TxSize != 0 || s.Tx.Size() != 0 {
				t.Errorf("rxdrop socket has a tx ring of %d", s.Tx.Size())
			}
			if n := s.Umem().NumFrames(); n != 1000 {
				t.Errorf("UMEM of %d frames, want NumFrames 1000", n)
			}
		})
	})

	t.Run("bind mode", func(t *testing.T) {
		for _, m := range []engine.BindMode{engine.BindAuto, engine.BindCopy} {
			cfg := rxdropConfig(bed)
			cfg.BindMode = m
			inEngine(t, bed, cfg, func(eng *engine.Engine) {
				for q, s := range engineview.Sockets(eng) {
					if s.ZeroCopy() {
						t.Errorf("%s on veth: queue %d reports zero-copy", m, q)
					}
				}
			})
		}
		cfg := rxdropConfig(bed)
		cfg.BindMode = engine.BindZeroCopy
		err := bed.InDUT(func() error {
			eng, err := engine.New(cfg)
			if err == nil {
				eng.Close()
			}
			return err
		})
		if !errors.Is(err, engine.ErrNoZeroCopy) {
			t.Errorf("zero-copy on veth: error %v, want ErrNoZeroCopy", err)
		}
		checkDetached(t, bed)
	})

	t.Run("need_wakeup", func(t *testing.T) {
		// What the kernel shows of the bind flag on veth (copy mode) is
		// little: Linux 6.18 sets the tx ring's need_wakeup flag at bind
		// either way (xp_assign_dev sets cached_need_wakeup to
		// XDP_WAKEUP_TX unconditionally), so the first transmit needs a
		// kick, and copy mode never sets the fill ring's flag. So check
		// that both binds work, that the flag asks for the first kick,
		// and that the worker kicks as the knob says: without
		// need_wakeup, after every batch it transmits.
		for _, on := range []bool{true, false} {
			// A subtest each, so that its cleanup closes the engine
			// before the next one binds the queue.
			t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
				cfg := rxdropConfig(bed)
				cfg.Queues = []int{0}
				cfg.NeedWakeup = on
				cfg.Handler = l2fwd
				r := start(t, bed, cfg)
				if !engineview.Sockets(r.eng)[0].Tx.NeedWakeup() {
					t.Errorf("the tx ring does not ask for the first kick")
				}
				const count = 2000
				send(t, bed, 0, gen.Config{Count: count, Rate: 100_000, Threads: 1, CPUs: []int{0}})
				tot := r.finish(count).Total()
				if tot.TxPackets != count {
					t.Errorf("reflected %d of %d frames (%+v)", tot.TxPackets, count, tot)
				}
				if !on && tot.TxWakeups < tot.Batches {
					t.Errorf("%d tx kicks for %d batches, want one per batch at least", tot.TxWakeups, tot.Batches)
				}
			})
		}
	})

	t.Run("busy poll", func(t *testing.T) {
		for _, wait := range []engine.WaitMode{engine.WaitBusyPoll, engine.WaitAdaptive} {
			cfg := rxdropConfig(bed)
			cfg.Wait = wait
			cfg.BusyPollUsecs, cfg.BusyPollBudget = 37, 17
			want := [2]int{1, 37}
			if wait != engine.WaitBusyPoll {
				want = [2]int{0, 0}
			}
			inEngine(t, bed, cfg, func(eng *engine.Engine) {
				for q, sock := range engineview.Sockets(eng) {
					fd := sock.FD()
					var got [2]int
					var err error
					for i, opt := range []int{unix.SO_PREFER_BUSY_POLL, unix.SO_BUSY_POLL} {
						if got[i], err = unix.GetsockoptInt(fd, unix.SOL_SOCKET, opt); err != nil {
							t.Errorf("getsockopt: %v", err)
						}
					}
					if got != want {
						t.Errorf("%s: queue %d SO_PREFER_BUSY_POLL, SO_BUSY_POLL = %v, want %v", wait, q, got, want)
					}
					// The kernel has no getsockopt for SO_BUSY_POLL_BUDGET
					// (ENOPROTOOPT); should it gain one, check the value.
					if v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_BUSY_POLL_BUDGET); err == nil && wait == engine.WaitBusyPoll && v != 17 {
						t.Errorf("queue %d SO_BUSY_POLL_BUDGET = %d, want 17", q, v)
					} else if err != nil && !errors.Is(err, unix.ENOPROTOOPT) {
						t.Errorf("getsockopt SO_BUSY_POLL_BUDGET: %v", err)
					}
				}
			})
		}
	})

	t.Run("shared umem", func(t *testing.T) {
		for _, tc := range []struct {
			name               string
			shared, needWakeup bool
		}{{"shared", true, false}, {"shared need_wakeup", true, true}, {"own", false, true}} {
			t.Run(tc.name, func(t *testing.T) {
				shared := tc.shared
				cfg := rxdropConfig(bed)
				cfg.SharedUmem, cfg.NeedWakeup = tc.shared, tc.needWakeup
				inEngine(t, bed, cfg, func(eng *engine.Engine) {
					ws := engineview.Sockets(eng)
					if len(ws) != 2 {
						t.Errorf("%d workers, want 2", len(ws))
						return
					}
					a, b := ws[0], ws[1]
					if same := a.Umem() == b.Umem(); same != shared {
						t.Errorf("shared %v: queues use one UMEM: %v", shared, same)
					}
					if a.FD() == b.FD() {
						t.Errorf("both queues have socket %d", a.FD())
					}
					// A socket that shares the UMEM is bound as asked,
					// which it inherits from the first (the kernel refuses
					// the flags themselves on it).
					if b.Config().NeedWakeup != tc.needWakeup || b.Config().Mode != a.Config().Mode {
						t.Errorf("second socket bound with need_wakeup %v, mode %v; want %v, %v", b.Config().NeedWakeup, b.Config().Mode, tc.needWakeup, a.Config().Mode)
					}
					if !shared {
						return
					}
					// Each socket owns its own part of the one UMEM.
					per := a.Config().NumFrames
					if a.Umem().NumFrames() != 2*per || a.Config().FirstFrame != 0 || b.Config().FirstFrame != per {
						t.Errorf("UMEM of %d frames split as %d+%d from %d and %d", a.Umem().NumFrames(),
							per, b.Config().NumFrames, a.Config().FirstFrame, b.Config().FirstFrame)
					}
				})
			})
		}
	})

	t.Run("xdp mode", func(t *testing.T) {
		for _, m := range []engine.XDPMode{engine.XDPNative, engine.XDPGeneric} {
			cfg := rxdropConfig(bed)
			cfg.XDPMode = m
			inEngine(t, bed, cfg, func(eng *engine.Engine) {
				st, err := netdev.XDPAttached(eng.Device().Index)
				if err != nil {
					t.Fatal(err)
				}
				if st.ProgID == 0 || st.Mode != m.String() {
					t.Errorf("XDP mode %s: attached %+v", m, st)
				}
			})
		}
		checkDetached(t, bed)
	})

	t.Run("batch size", func(t *testing.T) {
		const count, batch = 20_000, 8
		cfg := rxdropConfig(bed)
		cfg.Batch = batch
		r := start(t, bed, cfg)
		st := send(t, bed, 0, gen.Config{Count: count, Rate: 200_000, Threads: 1})
		tot := r.finish(st.Sent).Total()
		// Frames the socket had to drop (a worker descheduled on a busy
		// machine) are counted; the batches are what this test is about,
		// and they need more frames than fit in one.
		if tot.RxPackets+tot.XDP.Drops() != count || tot.RxPackets <= batch {
			t.Fatalf("received %d of %d frames (xdp stats %+v)", tot.RxPackets, count, tot.XDP)
		}
		// No batch takes more than Batch frames.
		if tot.Batches*batch < tot.RxPackets {
			t.Errorf("%d frames in %d batches: more than %d per batch", tot.RxPackets, tot.Batches, batch)
		}
	})
}

// checkDetached fails the test if an XDP program is left on the DUT end.
func checkDetached(t *testing.T, bed *testbed.Bed) {
	t.Helper()
	err := bed.InDUT(func() error {
		st, err := netdev.XDPAttached(bed.Links[0].DUTIndex)
		if err == nil && st.ProgID != 0 {
			t.Errorf("XDP program %d left attached", st.ProgID)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
