package engine

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// idleCounter is a handler that counts the calls of its worker: Idle is
// called on every empty turn of an in-memory worker's loop, so the count
// moves for as long as the worker runs.
type idleCounter struct{ calls atomic.Int64 }

func (h *idleCounter) Handle(b *Batch) { h.calls.Add(1) }
func (h *idleCounter) Idle()           { h.calls.Add(1) }

// simCore is a core with one worker on in-memory rings, as an Engine has
// one per queue, and the worker's handler.
func simCore(t *testing.T) (*Engine, *idleCounter) {
	t.Helper()
	h := new(idleCounter)
	sw, err := Sim{}.setup(h, simRings{segs: 1})
	if err != nil {
		t.Fatal(err)
	}
	sw.w.wait.pollMs = 1
	e := &Engine{core: core{dev: &netdev.Info{Name: "sim"}, workers: []worker{sw.w}}}
	return e, h
}

// Close while Run runs stops the workers and waits for them before it
// frees their sockets: when Close returns, Run has returned and no worker
// touches a ring. After Close, Run and Stats fail with os.ErrClosed.
func TestCloseWhileRunning(t *testing.T) {
	e, h := simCore(t)
	done := make(chan error, 1)
	go func() { done <- e.Run(context.Background()) }()
	for h.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// Run has ended when Close returns; its goroutine may take a moment
	// to be scheduled and hand the result over.
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after Close = %v, want nil", err)
		}
	case <-time.After(time.Second):
		t.Fatal("Close returned while Run was still running")
	}
	calls := h.calls.Load()
	time.Sleep(20 * time.Millisecond)
	if got := h.calls.Load(); got != calls {
		t.Fatalf("the worker ran on after Close: %d calls, then %d", calls, got)
	}
	if err := e.Run(context.Background()); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Run after Close = %v, want os.ErrClosed", err)
	}
	if _, err := e.Stats(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Stats after Close = %v, want os.ErrClosed", err)
	}
	if _, err := e.OutputStats(ToOutput(0)); !errors.Is(err, os.ErrClosed) {
		t.Errorf("OutputStats after Close = %v, want os.ErrClosed", err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

// Stats and Close from other goroutines while Run runs (run with -race).
func TestStatsRacesClose(t *testing.T) {
	e, _ := simCore(t)
	done := make(chan error, 1)
	go func() { done <- e.Run(context.Background()) }()
	stop := make(chan struct{})
	statsDone := make(chan struct{})
	go func() {
		defer close(statsDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := e.Stats(); err != nil && !errors.Is(err, os.ErrClosed) {
				t.Errorf("Stats: %v", err)
				return
			}
		}
	}()
	time.Sleep(10 * time.Millisecond)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	<-statsDone
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// failedWatch is a link watch whose reading failed.
type failedWatch struct {
	events chan netdev.LinkEvent
	err    error
}

func (w *failedWatch) Events() <-chan netdev.LinkEvent { return w.events }
func (w *failedWatch) Err() error                      { return w.err }
func (w *failedWatch) Close() error                    { return nil }

// A link watch that fails ends Run with its error: without it a device
// deleted afterwards would go unnoticed.
func TestRunEndsWhenLinkWatchFails(t *testing.T) {
	e, _ := simCore(t)
	t.Cleanup(func() { e.Close() })
	fail := errors.New("netlink socket failed")
	w := &failedWatch{events: make(chan netdev.LinkEvent), err: fail}
	close(w.events)
	e.links = newLinkWatcher(w)
	if err := e.Run(context.Background()); !errors.Is(err, fail) {
		t.Fatalf("Run with a failed link watch = %v, want %v", err, fail)
	}
}

// Only the handler's code is recovered from: a panic in the worker's own
// code (here a port table broken on purpose) is the engine's bug and goes
// on up, never reported as a *HandlerPanicError.
func TestWorkerPanicIsNotAHandlerPanic(t *testing.T) {
	h := HandlerFunc(func(b *Batch) {
		for i := range b.Len() {
			b.Forward(i, ToOutput(0))
		}
	})
	sw, err := Sim{Outputs: 1}.setup(h, simRings{segs: 1})
	if err != nil {
		t.Fatal(err)
	}
	sw.w.out = sw.w.out[:1] // the engine loses its output port
	sw.w.out = append(sw.w.out, outPort{})
	sw.kernels[0].ReceiveFrames(1, [][]byte{make([]byte, 64)})
	c := &core{workers: []worker{sw.w}}
	var recovered any
	func() {
		defer func() { recovered = recover() }()
		err = c.runWorker(sw.w)
	}()
	if recovered == nil {
		t.Fatalf("runWorker returned %v; want the worker's own panic to go on up", err)
	}
	if _, ok := recovered.(*HandlerPanicError); ok {
		t.Fatalf("the worker's own panic came as a handler's: %v", recovered)
	}
}

// A handler's panic stops its worker with a *HandlerPanicError, and the
// frames of the batch it panicked in are accounted for: received, and
// dropped where the handler had set no other verdict.
func TestHandlerPanicStopsWorker(t *testing.T) {
	h := HandlerFunc(func(b *Batch) {
		b.Transmit(0)
		panic("boom")
	})
	sw, err := Sim{}.setup(h, simRings{segs: 1})
	if err != nil {
		t.Fatal(err)
	}
	sw.kernels[0].ReceiveFrames(4, [][]byte{make([]byte, 64)})
	c := &core{workers: []worker{sw.w}}
	err = c.runWorker(sw.w)
	var hp *HandlerPanicError
	if !errors.As(err, &hp) || hp.Value != "boom" {
		t.Fatalf("runWorker = %v, want a *HandlerPanicError", err)
	}
	st := sw.w.stats(SocketStats{})
	if st.RxPackets != 4 || st.Dropped != 3 || st.TxBytes != 64 {
		t.Fatalf("stats %+v: want 4 received, 3 dropped, one transmitted", st)
	}
}

// Each accessor from another goroutine while Close frees the sockets under
// a running Run (run with -race; one accessor per engine, so that the race
// detector's history holds its reads): each answers as before Close.
func TestAccessorsRaceClose(t *testing.T) {
	for name, read := range map[string]func(e *Engine) any{
		"ZeroCopy":    func(e *Engine) any { return e.ZeroCopy() },
		"Umem":        func(e *Engine) any { return e.Umem().HugePages },
		"Outputs":     func(e *Engine) any { return len(e.Outputs()) },
		"Config":      func(e *Engine) any { return len(e.Config().Queues) },
		"Device":      func(e *Engine) any { return e.Device().Name },
		"OutputStats": func(e *Engine) any { _, err := e.OutputStats(ToOutput(0)); return err == nil },
	} {
		t.Run(name, func(t *testing.T) {
			e, h := simCore(t)
			readsAgainstClose(t, e.Run, e.Close, func() any { return read(e) }, func() bool { return h.calls.Load() > 0 })
		})
	}
}

// readsAgainstClose runs run, waits until started says it has, and calls
// read over and over from another goroutine while closeIt frees what run
// used; the test fails if read's answer changes (and, under -race, on a
// data race).
func readsAgainstClose(t *testing.T, run func(context.Context) error, closeIt func() error, read func() any, started func() bool) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- run(context.Background()) }()
	for !started() {
		time.Sleep(time.Millisecond)
	}
	before := read()
	var reads atomic.Int64
	stop, fin := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(fin)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if got := read(); got != before {
				t.Errorf("%v, was %v", got, before)
				return
			}
			reads.Add(1)
		}
	}()
	// Reads before Close and after it, whatever the scheduler does.
	waitReads := func(n int64) {
		for deadline := time.Now().Add(5 * time.Second); reads.Load() < n && time.Now().Before(deadline); {
			time.Sleep(100 * time.Microsecond)
		}
	}
	waitReads(1)
	if err := closeIt(); err != nil {
		t.Fatal(err)
	}
	waitReads(reads.Load() + 1)
	close(stop)
	<-fin
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// closer is a handler that closes its engine from Idle or Handle.
type closer struct {
	e          *Engine
	fromHandle bool
	closed     atomic.Bool
	err        error
}

func (c *closer) Handle(*Batch) {
	if c.fromHandle && !c.closed.Swap(true) {
		c.err = c.e.Close()
	}
}

func (c *closer) Idle() {
	if !c.fromHandle && !c.closed.Swap(true) {
		c.err = c.e.Close()
	}
}

// Close from a handler (Idle, Handle) ends the run instead of waiting for
// the worker it is called from: Run returns, having freed the sockets,
// and the engine is closed.
func TestCloseFromHandler(t *testing.T) {
	for _, fromHandle := range []bool{false, true} {
		t.Run(map[bool]string{false: "Idle", true: "Handle"}[fromHandle], func(t *testing.T) {
			c := &closer{fromHandle: fromHandle}
			sw, err := Sim{}.setup(c, simRings{segs: 1})
			if err != nil {
				t.Fatal(err)
			}
			sw.w.wait.pollMs = 1
			e := &Engine{core: core{dev: &netdev.Info{Name: "sim"}, workers: []worker{sw.w}}}
			c.e = e
			if fromHandle {
				k := sw.kernels[0]
				k.Headroom = sw.w.umem.RxOffset()
				if k.Receive(1, 64, nil) != 1 {
					t.Fatal("the simulated kernel delivered no frame")
				}
			}
			done := make(chan error, 1)
			go func() { done <- e.Run(context.Background()) }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Run = %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not end within 5 s of Close from the handler")
			}
			if !c.closed.Load() || c.err != nil {
				t.Fatalf("the handler's Close: called %v, error %v", c.closed.Load(), c.err)
			}
			if _, err := e.Stats(); !errors.Is(err, os.ErrClosed) {
				t.Errorf("Stats after Run = %v, want os.ErrClosed", err)
			}
			if err := e.Close(); err != nil {
				t.Errorf("Close after Run = %v", err)
			}
		})
	}
}

// A generator's accessors (TxTimes, Umem, ZeroCopy) from another
// goroutine while Close frees its sockets under a running Run (run with
// -race).
func TestGeneratorAccessorsRaceClose(t *testing.T) {
	frames, err := packet.UDPVariants(testUDP(64), 1)
	if err != nil {
		t.Fatal(err)
	}
	for name, read := range map[string]func(g *Generator) any{
		"TxTimes":  func(g *Generator) any { _ = g.TxTimes(); return nil },
		"Umem":     func(g *Generator) any { return g.Umem().HugePages },
		"ZeroCopy": func(g *Generator) any { return g.ZeroCopy() },
	} {
		t.Run(name, func(t *testing.T) {
			w, _ := memTxWorker(t, GeneratorConfig{Frames: frames, TxTimestamp: true}, 1)
			g := &Generator{core: core{dev: &netdev.Info{Name: "sim"}, workers: []worker{w}}}
			readsAgainstClose(t, g.Run, g.Close, func() any { return read(g) }, func() bool { return !g.Started().IsZero() })
		})
	}
}
