// Package engine is xdpeng's AF_XDP data path as a Go library: an Engine
// binds one AF_XDP socket per rx queue of a device, steers each queue into
// its socket with an XDP program, and runs one worker per queue, pinned to
// its own CPU, that takes frames from the rings in batches and hands them
// to a Handler.
//
// A Handler sees a *Batch of frames and gives each a verdict: drop,
// transmit back out of the queue it came in on, or forward to one of the
// engine's outputs (Config.Outputs, other devices). It may rewrite a frame
// in place and move its start and end (to push or pop a header); it never
// sees ring indices, UMEM addresses or system calls. The handlers xdpeng's
// own commands use are in package engine/handler, written on this API
// alone; package engine/packet parses and rewrites frames. Simulate runs a
// handler on in-memory rings through the same worker code, without a
// device or privilege: the way to unit-test a handler.
//
// A Generator is the other use of the same sockets: it only transmits
// frames built in advance (xdpsock's txonly).
//
// A worker spins while frames arrive. When its rx ring stays empty it
// sleeps in poll(), and when it notices that it shares its CPU with other
// busy threads (a NAPI thread, a generator) it stops spinning altogether and
// naps between batches, so the other threads keep their CPU time.
//
// An engine lives beside other XDP users when given their program's XSKMAP
// (Config.XSKMap): it then puts its sockets in that map, and attaches
// nothing unless given the program too (Config.Program).
//
// Setup is all or nothing: New either returns an engine ready to run or
// leaves the device as it found it. Close detaches the program and closes
// the sockets; the program is attached with a bpf_link, so the kernel
// detaches it too if the process dies. Errors a caller can act on are typed
// (ErrNoDevice, ErrNoQueue, ErrMTU, ErrAttached, ErrQueueBusy,
// ErrNoZeroCopy, ErrNoNativeXDP; see errors.Is). Close may be called at any
// time: it ends a Run that is running and waits for its workers before it
// frees anything.
//
// The package builds on every operating system, and Simulate runs a
// handler on all of them; New, NewGenerator and LookupDevice need Linux and
// return ErrNotSupported elsewhere.
//
// While it runs, an engine watches its devices' links: one that goes down
// and comes back is told to Config.OnLinkChange and the run goes on; one
// that is deleted, or leaves the network namespace, ends Run with
// ErrDeviceGone at once.
package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"

	"github.com/xdpeng/xdpeng/internal/cpuset"
	"github.com/xdpeng/xdpeng/internal/engineview"
	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/xsk"
)

// Engine runs the workers of one device.
type Engine struct {
	core
	cfg  Config
	prog steering
	link io.Closer
	outs []output
	napi napiState
}

// steering puts each queue's socket where the XDP program on the device
// finds it: the XSKMAP of the engine's own program, or the caller's
// (Config.XSKMap). Close undoes what it did.
type steering interface {
	SetSocket(queue, fd int) error
	Close() error
}

// userMap is the caller's XSKMAP as steering: Close deletes the entries
// SetSocket put, and leaves the map open.
type userMap struct {
	m    *ebpf.Map
	keys []uint32
}

func (u *userMap) SetSocket(queue, fd int) error {
	if err := u.m.Put(uint32(queue), uint32(fd)); err != nil {
		return fmt.Errorf("put queue %d's socket in XSKMap: %w", queue, err)
	}
	u.keys = append(u.keys, uint32(queue))
	return nil
}

func (u *userMap) Close() error {
	var errs []error
	for _, k := range u.keys {
		if err := u.m.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			errs = append(errs, fmt.Errorf("delete queue %d from XSKMap: %w", k, err))
		}
	}
	u.keys = nil
	return errors.Join(errs...)
}

// frameOverhead is what a frame adds to the MTU: an Ethernet header and one
// VLAN tag.
const frameOverhead = netdev.FrameOverhead

// resolveCPUs gives each queue's worker a CPU: the configured ones, checked
// against the queues and the online CPUs, or by default from the last
// online CPU down, leaving CPU 0 (where generators and interrupts usually
// run) for last.
func (c *Config) resolveCPUs() error {
	if c.CPUs == nil {
		online, err := cpuset.Online()
		if err != nil {
			return err
		}
		c.CPUs = make([]int, len(c.Queues))
		for i := range c.CPUs {
			c.CPUs[i] = online[len(online)-1-i%len(online)]
		}
		return nil
	}
	// Each CPU first: CPU 4000 is about CPU 4000, not the count.
	if err := cpuset.CheckOnline(c.CPUs); err != nil {
		return err
	}
	if len(c.CPUs) != len(c.Queues) {
		return cpuCountError(len(c.CPUs), len(c.Queues))
	}
	return nil
}

// Config is the engine's configuration with defaults filled in (queues,
// CPUs).
func (e *Engine) Config() Config { return e.cfg }

// Umem describes the engine's UMEMs as it set them up.
func (e *Engine) Umem() UmemInfo { return e.umemInfo(&e.cfg) }

// Device is the device the engine receives from.
func (e *Engine) Device() Device { return deviceOf(e.dev) }

// ZeroCopy reports whether the kernel granted zero-copy to the sockets.
func (e *Engine) ZeroCopy() bool { return e.zeroCopy() }

// Run starts the workers and returns when ctx is done or when a worker
// fails (a handler panic included: a *HandlerPanicError with the queue,
// the panic value and the stack). When the device or an output is deleted, or
// leaves the network namespace, Run stops at once with a *DeviceGoneError
// (errors.Is(err, ErrDeviceGone)); a device that goes down and comes back
// is told to Config.OnLinkChange, and the run goes on. Counters stay
// readable after Run returns.
func (e *Engine) Run(ctx context.Context) error { return e.run(ctx) }

// Started is when Run started the workers; zero before.
func (e *Engine) Started() time.Time { return e.startedAt() }

// Stats reads every worker's counters and its socket's XDP statistics. It
// may be called from any goroutine, also while Run runs; after Close it
// fails with os.ErrClosed.
func (e *Engine) Stats() (Snapshot, error) { return e.stats() }

// BusyPollNAPI returns what New did to the queues' NAPIs for busy polling
// (Config.BusyPollNAPI), queue by queue, and why it left a queue's NAPI, or
// all of them, as they were ("" when it changed every queue's, or was not
// asked to). Close puts the changes back.
func (e *Engine) BusyPollNAPI() (changes []NAPIChange, note string) {
	return slices.Clone(e.napi.changes), e.napi.note
}

// Close stops a Run that is running and waits for its workers to end, then
// detaches the program and closes the sockets. It may be called from any
// goroutine, at any time, more than once, and after a failed New. Called
// from within the run (a handler's Handle or Idle, OnLinkChange), which
// cannot end while Close waits for it, it ends the run and returns at
// once, and Run detaches and closes everything before it returns (its
// error then includes what that failed with). After Close, Run, Stats and
// OutputStats fail with os.ErrClosed; the other methods go on answering
// as before.
func (e *Engine) Close() error { return e.shutdown(e.release) }

// release detaches the program and closes the sockets; c.life is held.
func (e *Engine) release() error {
	e.closeLinks()
	errs := []error{e.napi.restore()}
	if e.link != nil {
		errs = append(errs, e.link.Close())
		e.link = nil
	}
	// The map entries go before the sockets, so that no entry of a
	// socket bound after one of these closed is deleted.
	if e.prog != nil {
		errs = append(errs, e.prog.Close())
		e.prog = nil
	}
	errs = append(errs, e.closeSockets())
	return errors.Join(errs...)
}

// core is what an Engine and a Generator share: the device, the workers and
// their sockets and UMEMs, running them and reading their counters.
type core struct {
	dev     *netdev.Info
	workers []worker
	umems   []*xsk.Umem
	pages   umemPages
	stop    atomic.Bool
	started atomic.Int64 // UnixNano when run started, 0 before

	// sched and schedPriority are the workers' scheduling policy and
	// priority (Config.Sched); SchedOther leaves the threads as they are.
	sched         SchedPolicy
	schedPriority int

	links        *LinkWatcher // the devices' link state; nil if not watched
	onLinkChange func(LinkChange)

	// state guards closing, quit and running: Close sets closing, closes
	// quit to end a Run, and waits for running to be closed.
	state   sync.Mutex
	closing bool
	quit    chan struct{}
	running chan struct{} // closed when the Run under way returns; nil while none is
	// release frees what the run holds, when Close was called from
	// within it (see inRun); Run calls it as it ends. Under state.
	release func() error
	// life guards the sockets and UMEMs: Stats holds it for reading,
	// Close for writing while it frees them, once no Run is under way.
	life   sync.RWMutex
	closed bool // under life

	// runThread and each worker's thread (port.thread) are the
	// threads a Run under way runs on, its goroutines locked to them:
	// Close compares the caller's against them (inRun). 0: none.
	runThread atomic.Int64
}

// quitLocked is the channel Close closes; c.state must be held.
func (c *core) quitLocked() chan struct{} {
	if c.quit == nil {
		c.quit = make(chan struct{})
	}
	return c.quit
}

// shutdown is Close: it ends a Run under way and waits for it to return,
// then takes c.life for writing, marks c closed and calls free, which
// frees what c holds. Called from within the run (inRun), it leaves free
// to the run's end instead. It does nothing when Close was called before.
func (c *core) shutdown(free func() error) error {
	c.state.Lock()
	if c.closing {
		c.state.Unlock()
		return nil
	}
	c.closing = true
	close(c.quitLocked())
	running := c.running
	if running != nil && c.inRun() {
		c.release = free
		c.state.Unlock()
		return nil
	}
	c.state.Unlock()
	if running != nil {
		<-running
	}
	return c.free(free)
}

// free takes c.life for writing, marks c closed and calls free.
func (c *core) free(free func() error) error {
	c.life.Lock()
	defer c.life.Unlock()
	c.closed = true
	return free()
}

// inRun reports whether the calling goroutine is one of the run's: a
// worker (in its handler) or Run's own (in OnLinkChange).
func (c *core) inRun() bool {
	t := int64(cpuset.ThreadID())
	if t <= 0 {
		return false
	}
	if c.runThread.Load() == t {
		return true
	}
	for _, w := range c.workers {
		if w.base().thread.Load() == t {
			return true
		}
	}
	return false
}

// begin marks a Run under way and returns the channel that Close closes
// to end it, and the function that marks the Run's end (and frees what c
// holds if Close was called from within the run); it fails after Close
// and while another Run runs.
func (c *core) begin() (quit <-chan struct{}, end func() error, err error) {
	c.state.Lock()
	defer c.state.Unlock()
	if c.closing {
		return nil, nil, fmt.Errorf("run: %w", os.ErrClosed)
	}
	if c.running != nil {
		return nil, nil, errors.New("run: already running")
	}
	done := make(chan struct{})
	c.running = done
	return c.quitLocked(), func() error {
		c.state.Lock()
		free := c.release
		c.release = nil
		c.running = nil
		close(done)
		c.state.Unlock()
		if free != nil {
			return c.free(free)
		}
		return nil
	}, nil
}

func init() {
	engineview.Sockets = func(e any) []*xsk.Socket {
		eng := e.(*Engine)
		s := make([]*xsk.Socket, len(eng.workers))
		for i, w := range eng.workers {
			s[i] = w.base().sock
		}
		return s
	}
}

func (c *core) zeroCopy() bool { return len(c.workers) > 0 && c.workers[0].base().sock.ZeroCopy() }

func (c *core) startedAt() time.Time {
	if ns := c.started.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// run starts the workers and returns when ctx is done, when every worker
// has finished (a generator that sent its count), or when a worker fails.
func (c *core) run(ctx context.Context) (err error) {
	quit, end, err := c.begin()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, end()) }()
	// OnLinkChange runs on this goroutine: locked to its thread, the
	// thread names it for Close (inRun).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c.runThread.Store(int64(cpuset.ThreadID()))
	defer c.runThread.Store(0)
	c.stop.Store(false)
	c.started.Store(time.Now().UnixNano())
	errs := make(chan error, len(c.workers))
	var wg sync.WaitGroup
	for _, w := range c.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- c.runWorker(w)
		}()
	}
	// Receiving workers run until stopped; a generator's workers end by
	// themselves when they have sent their count, and the run ends when
	// all have, or at the first error.
	ended := 0
wait:
	for ended < len(c.workers) {
		select {
		case <-ctx.Done():
			break wait
		case <-quit:
			break wait
		case ch, ok := <-c.linkChanges():
			if err = c.onLink(ch, ok); err != nil {
				break wait
			}
		case g := <-c.linkGone():
			err = g
			break wait
		case err = <-errs:
			ended++
			if err != nil {
				if gone := c.goneAfterError(); gone != nil {
					err = gone
				}
				break wait
			}
		}
	}
	c.stop.Store(true)
	wg.Wait()
	close(errs)
	for werr := range errs {
		if err == nil {
			err = werr
		}
	}
	return err
}

// workerThreadName is the name (comm) of the OS thread that runs the worker
// of queue q, as /proc/PID/task/TID/comm shows it: "xdpeng-q0".
func workerThreadName(q int) string { return fmt.Sprintf("xdpeng-q%d", q) }

// runWorker pins the worker's goroutine to its CPU and runs its loop. A
// panic in the handler comes back as a *HandlerPanicError (see
// rxWorker.handle); any error stops the other workers.
func (c *core) runWorker(w worker) (err error) {
	p := w.base()
	// The thread stays locked until the goroutine ends, so Go retires it
	// rather than reuse a thread with a narrowed affinity.
	if err := cpuset.Pin(p.cpu); err != nil {
		c.stop.Store(true)
		return fmt.Errorf("queue %d: %w", p.queue, err)
	}
	if c.sched != SchedOther {
		if err := cpuset.SetScheduler(int(c.sched), c.schedPriority); err != nil {
			c.stop.Store(true)
			return fmt.Errorf("queue %d: %v priority %d: %w", p.queue, c.sched, c.schedPriority, err)
		}
	}
	p.thread.Store(int64(cpuset.ThreadID()))
	defer p.thread.Store(0)
	// Name the thread after its queue so that top -H, ps -L and
	// /proc/PID/task/TID/comm show which worker is which. Only a label:
	// a kernel that refuses it changes nothing else.
	_ = os.WriteFile("/proc/thread-self/comm", []byte(workerThreadName(p.queue)), 0)
	if err := w.run(&c.stop); err != nil {
		c.stop.Store(true)
		return err
	}
	return nil
}

// closeSockets closes every socket and UMEM.
func (c *core) closeSockets() error {
	var errs []error
	for _, w := range c.workers {
		// Sockets that share a UMEM before the one that registered it.
		p := w.base()
		for _, s := range p.ports[1:] {
			errs = append(errs, s.Close())
		}
		errs = append(errs, p.sock.Close())
	}
	// c.workers and c.umems stay: ZeroCopy, Umem, Outputs and TxTimes
	// read what they were set up with, also after Close.
	for i := len(c.umems) - 1; i >= 0; i-- {
		errs = append(errs, c.umems[i].Close())
	}
	return errors.Join(errs...)
}

// kindError is an error of a kind a caller checks with errors.Is (one of
// the Err values) that keeps the message and the cause it wraps.
type kindError struct{ kind, err error }

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.kind, e.err} }
