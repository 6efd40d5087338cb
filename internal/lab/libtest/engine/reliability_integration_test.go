//go:build linux

package engine_test

// What happens when things go wrong inside the engine: a handler that
// panics, a setup that fails half-way, a handler too slow for the traffic.
// Each test checks the contracts: the interface is left as found, no
// socket or file descriptor stays behind, and every frame is counted.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/internal/engineview"
	"github.com/xdpeng/xdpeng/internal/hook"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/xsk"
)

// queuesFree binds a fresh AF_XDP socket to each queue of dev in the DUT
// namespace and closes it again: EBUSY means a socket was left bound.
func queuesFree(bed *testbed.Bed, dev string, queues ...int) error {
	return bed.InDUT(func() error {
		info, err := netdev.Lookup(dev)
		if err != nil {
			return err
		}
		for _, q := range queues {
			s, u, err := bindBare(info.Index, q)
			if err != nil {
				return fmt.Errorf("queue %d is not free: %w", q, err)
			}
			s.Close()
			u.Close()
		}
		return nil
	})
}

// bindBare binds a minimal copy-mode socket to queue q of ifindex, in the
// calling thread's namespace.
func bindBare(ifindex, q int) (*xsk.Socket, *xsk.Umem, error) {
	u, err := xsk.NewUmem(xsk.UmemConfig{FrameSize: 2048, NumFrames: 64})
	if err != nil {
		return nil, nil, err
	}
	s, err := xsk.NewSocket(u, xsk.SocketConfig{Ifindex: ifindex, Queue: q, FillSize: 32, CompletionSize: 32, RxSize: 32, Mode: xsk.Copy})
	if err != nil {
		u.Close()
		return nil, nil, err
	}
	return s, u, nil
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// checkFDs fails the test if the process holds more descriptors than
// before; other tests of the package do not run in parallel with these,
// but the Go runtime and the test bed may open a few briefly.
func checkFDs(t *testing.T, before int) {
	t.Helper()
	var now int
	for range 20 {
		if now = openFDs(t); now <= before {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("%d file descriptors open, %d before: sockets or maps were left open", now, before)
}

// TestHandlerPanicLeavesNothing: a panic in a user's handler on one queue
// stops every worker; Run returns it as an error naming the queue, the
// counters stay readable, and Close leaves the interface as it was.
func TestHandlerPanicLeavesNothing(t *testing.T) {
	bed := testbedtest.New(t, 2, 1)
	dut := bed.Links[0].DUT
	before := testbedtest.ReadHooksIn(t, bed.DUTNS, dut)
	fds := openFDs(t)

	cfg := rxdropConfig(bed)
	cfg.Handler = func(q int) engine.Handler {
		return engine.HandlerFunc(func(b *engine.Batch) {
			if b.Len() > 0 {
				panic(fmt.Sprintf("user handler of queue %d gave up", q))
			}
		})
	}
	var eng *engine.Engine
	if err := bed.InDUT(func() (err error) { eng, err = engine.New(cfg); return err }); err != nil {
		t.Fatalf("engine.New: %v", err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			eng.Close()
		}
	})
	if h := testbedtest.ReadHooksIn(t, bed.DUTNS, dut); h.XDPProg == 0 {
		t.Fatal("no XDP program attached while the engine exists")
	}
	done := make(chan error, 1)
	go func() { done <- eng.Run(context.Background()) }()
	send(t, bed, 0, gen.Config{Count: 1000, Rate: 100_000, Threads: 2})

	var runErr error
	select {
	case runErr = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10 s of a handler panic")
	}
	var hp *engine.HandlerPanicError
	if !errors.As(runErr, &hp) || !errors.Is(runErr, engine.ErrHandlerPanic) {
		t.Fatalf("Run returned %v, want a *HandlerPanicError", runErr)
	}
	if want := fmt.Sprintf("user handler of queue %d gave up", hp.Queue); hp.Value != want ||
		runErr.Error() != fmt.Sprintf("queue %d: handler panicked: %s", hp.Queue, want) {
		t.Errorf("Run returned %q (queue %d, value %v), want the panic of queue %d's handler, %q", runErr, hp.Queue, hp.Value, hp.Queue, want)
	}
	if !strings.Contains(string(hp.Stack), "goroutine") || !strings.Contains(string(hp.Stack), "TestHandlerPanicLeavesNothing") {
		t.Errorf("the error's stack is not the handler's:\n%s", hp.Stack)
	}
	s, err := eng.Stats()
	if err != nil {
		t.Fatalf("Stats after the panic: %v", err)
	}
	if s.Total().RxPackets == 0 {
		t.Errorf("no frame counted before the panic: %+v", s.Total())
	}
	if err := eng.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	closed = true
	if err := eng.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if h := testbedtest.ReadHooksIn(t, bed.DUTNS, dut); !h.Equal(before) {
		t.Errorf("hooks after Close %+v, before %+v", h, before)
	}
	if err := queuesFree(bed, dut, 0, 1); err != nil {
		t.Error(err)
	}
	checkFDs(t, fds)
}

// TestSetupFailsOnSecondQueue: queue 1 is held by another socket, so New
// fails after it bound queue 0. The error says why, queue 0's socket is
// closed, nothing is attached and no descriptor stays open.
func TestSetupFailsOnSecondQueue(t *testing.T) {
	bed := testbedtest.New(t, 2, 1)
	dut := bed.Links[0].DUT
	before := testbedtest.ReadHooksIn(t, bed.DUTNS, dut)

	var other *xsk.Socket
	var otherUmem *xsk.Umem
	if err := bed.InDUT(func() error {
		info, err := netdev.Lookup(dut)
		if err != nil {
			return err
		}
		other, otherUmem, err = bindBare(info.Index, 1)
		return err
	}); err != nil {
		t.Fatalf("bind the other socket to queue 1: %v", err)
	}
	t.Cleanup(func() { other.Close(); otherUmem.Close() })
	fds := openFDs(t)

	cfg := rxdropConfig(bed)
	cfg.Queues = []int{0, 1}
	err := bed.InDUT(func() error {
		eng, err := engine.New(cfg)
		if err == nil {
			eng.Close()
		}
		return err
	})
	if err == nil {
		t.Fatal("engine.New bound a queue another socket holds")
	}
	if !errors.Is(err, unix.EBUSY) || !errors.Is(err, engine.ErrQueueBusy) {
		t.Errorf("error %v does not wrap EBUSY and ErrQueueBusy", err)
	}
	for _, want := range []string{"queue 1", "another AF_XDP socket is bound to this queue"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if h := testbedtest.ReadHooksIn(t, bed.DUTNS, dut); !h.Equal(before) {
		t.Errorf("hooks after a failed New %+v, before %+v", h, before)
	}
	if err := queuesFree(bed, dut, 0); err != nil {
		t.Errorf("the socket of the queue bound before the failure was left open: %v", err)
	}
	checkFDs(t, fds)
}

// TestSetupFailsAtAttach: every queue binds, then attaching the steering
// program fails because another process's bpf_link holds the interface
// (even with Force). The sockets are closed and the other program stays.
func TestSetupFailsAtAttach(t *testing.T) {
	bed := testbedtest.New(t, 2, 1)
	dut := bed.Links[0].DUT
	var held interface{ Close() error }
	var prog *bpf.KernObjects
	if err := bed.InDUT(func() error {
		l, err := netlink.LinkByName(dut)
		if err != nil {
			return err
		}
		if prog, err = bpf.LoadKern(bpf.Pass, bpf.KernOptions{}); err != nil {
			return err
		}
		held, err = hook.AttachXDP(prog.Program, l.Attrs().Index, hook.Native, netdev.ReplaceNone)
		return err
	}); err != nil {
		t.Fatalf("attach the other program: %v", err)
	}
	t.Cleanup(func() { held.Close(); prog.Close() })
	before := testbedtest.ReadHooksIn(t, bed.DUTNS, dut)
	fds := openFDs(t)

	for _, force := range []bool{false, true} {
		cfg := rxdropConfig(bed)
		cfg.Force = force
		err := bed.InDUT(func() error {
			eng, err := engine.New(cfg)
			if err == nil {
				eng.Close()
			}
			return err
		})
		if err == nil {
			t.Fatalf("force=%v: engine.New replaced a program held by a bpf_link", force)
		}
		t.Logf("force=%v: %v", force, err)
		// With or without Force the error says that a bpf_link (a running
		// process) holds the program, which Force cannot replace.
		var ae *engine.AttachedError
		if !errors.As(err, &ae) || !errors.Is(err, engine.ErrAttached) || ae.LinkID == 0 || ae.ProgramID == 0 || ae.Device != dut {
			t.Errorf("force=%v: error %q (%+v), want an *AttachedError naming %s, the program and its bpf_link", force, err, ae, dut)
		}
		if h := testbedtest.ReadHooksIn(t, bed.DUTNS, dut); !h.Equal(before) {
			t.Errorf("force=%v: hooks after a failed New %+v, before %+v", force, h, before)
		}
		if err := queuesFree(bed, dut, 0, 1); err != nil {
			t.Errorf("force=%v: %v", force, err)
		}
		checkFDs(t, fds)
	}
}

// TestOverloadAccountingStalledHandler sends 20,000 frames as fast as the
// generator can to a handler that stalls on its first batch until the
// generator is done, with rings of 64: whatever the machine's speed, all
// but a few hundred frames cannot be taken, and every one of them must be
// counted.
func TestOverloadAccountingStalledHandler(t *testing.T) {
	for _, tc := range []struct {
		name            string
		queues, threads int
	}{{"1queue", 1, 1}, {"2queues", 2, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			bed := testbedtest.New(t, tc.queues, 1)
			cfg := rxdropConfig(bed)
			cfg.FillSize, cfg.RxSize, cfg.CompletionSize, cfg.TxSize = 64, 64, 64, 64
			cfg.NumFrames = 128
			cfg.Batch = 32
			stall := make(chan struct{})
			var resume sync.Once
			cfg.Handler = func(int) engine.Handler {
				return engine.HandlerFunc(func(b *engine.Batch) {
					<-stall
					for i := 0; i < b.Len(); i++ {
						_ = b.Frame(i)[0]
					}
				})
			}
			r := start(t, bed, cfg)
			// Before start's cleanup (cleanups run last first): a worker
			// stalled in its handler would never stop.
			t.Cleanup(func() { resume.Do(func() { close(stall) }) })
			const count = 20_000
			st := send(t, bed, 0, gen.Config{Count: count, Threads: tc.threads})
			resume.Do(func() { close(stall) })
			if st.Sent != count {
				t.Fatalf("generator sent %d, want %d", st.Sent, count)
			}
			s := r.finish(st.Sent)
			tot := s.Total()
			t.Logf("sent %d: received %d, socket drops %d (%+v), veth xmit errors %d, unaccounted %d",
				st.Sent, tot.RxPackets, tot.XDP.Drops(), tot.XDP, st.Errors, st.Unaccounted())
			if got := tot.RxPackets + tot.XDP.Drops() + st.Errors + st.Unaccounted(); got != st.Sent {
				t.Errorf("sent %d != received %d + socket drops %d + veth xmit errors %d + unaccounted %d = %d",
					st.Sent, tot.RxPackets, tot.XDP.Drops(), st.Errors, st.Unaccounted(), got)
			}
			if st.Unaccounted() != 0 {
				t.Errorf("%d frames vanished before the veth counted them", st.Unaccounted())
			}
			// The rings hold 64 frames each and a stalled worker has one
			// batch in hand: nearly everything else was dropped.
			if limit := uint64(tc.queues * (64 + 64 + 32)); tot.RxPackets > limit {
				t.Errorf("received %d frames while the handler stalled: more than the %d the rings and a batch hold", tot.RxPackets, limit)
			}
			if tot.Dropped != tot.RxPackets {
				t.Errorf("handler verdicts: %d dropped of %d received", tot.Dropped, tot.RxPackets)
			}
			// Every UMEM frame is back in a ring or on the free stack,
			// but for the one a copy-mode socket's kernel side may park
			// after an rx-ring-full drop (xsk.CopyModeParked).
			for i, sock := range engineview.Sockets(r.eng) {
				c := sock.CountFrames()
				if err := c.Check(); err != nil {
					t.Errorf("queue %d: %v", r.eng.Config().Queues[i], err)
				}
				t.Logf("queue %d frames: %+v (missing %d)", r.eng.Config().Queues[i], c, c.Missing())
			}
		})
	}
}
