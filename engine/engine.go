// Package engine is xdpeng's public Go API: an Engine binds one AF_XDP
// socket per rx queue of a device, steers each queue into its socket with an
// XDP program, and runs one worker per queue, pinned to its own CPU, that
// takes frames from the rings in batches and hands them to a Handler.
//
// A Handler sees a *Batch of frames and gives each a verdict (drop, transmit
// back, forward); it never sees ring indices, UMEM addresses or system
// calls. The built-in modes are handlers too: DropHandler (rxdrop),
// L2FwdHandler (l2fwd), CountHandler and CountGroup (count), ForwardHandler
// (fwd, with Config.Forward). With Config.TxOnly the engine is instead a
// generator (txonly): its workers only transmit pre-built frames and no
// program is attached. Simulate runs a handler on in-memory rings through
// the same worker code, without privilege: the way to unit-test a handler.
//
// A worker spins while frames arrive. When its rx ring stays empty it
// sleeps in poll(), and when it notices that it shares its CPU with other
// busy threads (a NAPI thread, a generator) it stops spinning altogether and
// naps between batches, so the other threads keep their CPU time.
//
// Setup is all or nothing: New either returns a running-ready engine or
// leaves the device as it found it. Close detaches the program and closes
// the sockets; the program is attached with a bpf_link, so the kernel
// detaches it too if the process dies.
package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/cpuset"
	"github.com/xdpeng/xdpeng/internal/hook"
	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/internal/xsk"
)

// Engine runs the workers of one device.
type Engine struct {
	cfg     Config
	info    *netdev.Info
	prog    *bpf.XskRedirect
	link    io.Closer
	umems   []*xsk.Umem
	workers []*Worker
	stop    atomic.Bool
	started time.Time

	// Forwarding (Config.Forward): the output device, whether its sockets
	// share the input sockets' UMEMs, and why not if they do not.
	out          *netdev.Info
	outShared    bool
	outSharedErr error
}

// New validates cfg, binds a socket to every queue, and attaches the
// steering program. On error nothing is left attached or open.
func New(cfg Config) (_ *Engine, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	info, err := netdev.Lookup(cfg.Interface)
	if err != nil {
		return nil, err
	}
	if cfg.TxOnly != nil {
		return newTxOnly(cfg, info)
	}
	if cfg.Queues == nil {
		for q := 0; q < info.RxQueues; q++ {
			cfg.Queues = append(cfg.Queues, q)
		}
	}
	if len(cfg.Queues) == 0 {
		return nil, fmt.Errorf("%s reports no rx queues", cfg.Interface)
	}
	if err := info.CheckQueues(cfg.Queues); err != nil {
		return nil, err
	}
	if err := checkMTU(info, cfg.FrameSize); err != nil {
		return nil, err
	}
	var out *netdev.Info
	if cfg.Forward != nil {
		if out, err = lookupOut(&cfg, info); err != nil {
			return nil, err
		}
	}
	if err := cfg.resolveCPUs(); err != nil {
		return nil, err
	}
	if err := hook.CheckXDPFree(info.Index, cfg.Force); err != nil {
		return nil, err
	}

	e := &Engine{cfg: cfg, info: info, out: out}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	if e.prog, err = bpf.NewXskRedirect(bpf.XskOptions{Counters: cfg.SteeringCounters, UDPPort: cfg.UDPPort}); err != nil {
		return nil, err
	}
	if err := e.bindAll(); err != nil {
		return nil, err
	}
	if e.link, err = hook.AttachXDP(e.prog.Program, info.Index, cfg.XDPMode, cfg.Force); err != nil {
		return nil, err
	}
	return e, nil
}

// xdpHeadroom is what the kernel keeps in front of a received frame in an
// AF_XDP buffer (XDP_PACKET_HEADROOM).
const xdpHeadroom = 256

// checkMTU refuses a frame size that cannot hold the largest frame the
// device can receive (its MTU, an Ethernet header and a VLAN tag, after the
// kernel's headroom): the kernel would drop every such frame.
func checkMTU(info *netdev.Info, frameSize uint32) error {
	if info.MTU <= 0 {
		return nil
	}
	need := info.MTU + packet.EthHdrLen + packet.VLANTagLen
	if room := int(frameSize) - xdpHeadroom; need > room {
		hint := "use --frame-size 4096"
		if max := 4096 - xdpHeadroom - packet.EthHdrLen - packet.VLANTagLen; need > 4096-xdpHeadroom {
			hint = fmt.Sprintf("lower it to at most %d (ip link set %s mtu %d)", max, info.Name, max)
			if frameSize < 4096 {
				hint += " and use --frame-size 4096"
			}
		}
		return fmt.Errorf("%s has MTU %d: its frames (up to %d bytes) do not fit in %d-byte UMEM frames after the kernel's %d bytes of headroom: %s",
			info.Name, info.MTU, need, frameSize, xdpHeadroom, hint)
	}
	return nil
}

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
	if err := cpuset.CheckOnline(c.CPUs); err != nil {
		return err
	}
	if len(c.CPUs) != len(c.Queues) {
		return cpuCountError(len(c.CPUs), len(c.Queues))
	}
	return nil
}

func (e *Engine) bindAll() error {
	cfg := &e.cfg
	handlers := make([]Handler, len(cfg.Queues))
	for i, q := range cfg.Queues {
		handlers[i] = Handler(DropHandler{})
		switch {
		case cfg.Handler != nil:
			handlers[i] = cfg.Handler(q)
		case cfg.Forward != nil:
			handlers[i] = &ForwardHandler{DstMAC: cfg.Forward.DstMAC}
		}
	}
	per := cfg.framesPerSocket()
	// stride is the frames each queue takes of a UMEM: its rx socket's,
	// and with forwarding the one frame that sits in the output socket's
	// fill ring (see bindOut).
	stride := per
	if cfg.Forward != nil {
		e.outShared = !cfg.Forward.CopyOut
		stride += outFrames
	}
	var shared *xsk.Umem
	if cfg.SharedUmem {
		u, err := xsk.NewUmem(xsk.UmemConfig{FrameSize: cfg.FrameSize, NumFrames: stride * uint32(len(cfg.Queues))})
		if err != nil {
			return err
		}
		shared = u
		e.umems = append(e.umems, u)
	}
	for i, q := range cfg.Queues {
		u, first := shared, uint32(i)*stride
		if u == nil {
			var err error
			if u, err = xsk.NewUmem(xsk.UmemConfig{FrameSize: cfg.FrameSize, NumFrames: stride}); err != nil {
				return err
			}
			e.umems = append(e.umems, u)
			first = 0
		}
		h := handlers[i]
		mode, wakeup := cfg.BindMode, cfg.NeedWakeup
		if i > 0 && shared != nil {
			// The kernel refuses bind flags on a socket that shares a
			// UMEM (EINVAL): it inherits copy/zero-copy and need_wakeup
			// from the UMEM's first socket.
			mode, wakeup = xsk.Auto, false
		}
		txSize := cfg.TxSize
		if _, ok := h.(receiveOnly); ok {
			// A socket that never transmits gets no tx ring, so poll()
			// does not try to transmit from it.
			txSize = 0
		}
		s, err := xsk.NewSocket(u, xsk.SocketConfig{
			Ifindex:        e.info.Index,
			Queue:          q,
			FillSize:       cfg.FillSize,
			CompletionSize: cfg.CompletionSize,
			RxSize:         cfg.RxSize,
			TxSize:         txSize,
			Mode:           mode,
			NeedWakeup:     wakeup,
			FirstFrame:     first,
			NumFrames:      per,
		})
		if err != nil {
			return err
		}
		w := newWorker(q, cfg.CPUs[i], s, h, cfg)
		e.workers = append(e.workers, w)
		if cfg.Forward != nil {
			if err := e.bindOut(w, first+per); err != nil {
				return err
			}
		}
		if cfg.Wait == WaitBusyPoll {
			if err := s.SetBusyPoll(cfg.BusyPollUsecs, cfg.BusyPollBudget); err != nil {
				return fmt.Errorf("queue %d: %w", q, err)
			}
		}
		if err := e.prog.SetSocket(q, s.FD()); err != nil {
			return err
		}
	}
	return nil
}

// Config is the engine's configuration with defaults filled in (queues,
// CPUs).
func (e *Engine) Config() Config { return e.cfg }

// Interface is what the engine knows of its device.
func (e *Engine) Interface() *netdev.Info { return e.info }

// Workers are the per-queue workers, in the order of Config().Queues.
func (e *Engine) Workers() []*Worker { return e.workers }

// Steering is the loaded steering program (for its counters).
func (e *Engine) Steering() *bpf.XskRedirect { return e.prog }

// Run starts the workers and returns when ctx is done, when every worker
// has finished (a generator that sent its count), or when a worker fails (a
// handler panic included). Counters stay readable after Run returns.
func (e *Engine) Run(ctx context.Context) error {
	e.started = time.Now()
	errs := make(chan error, len(e.workers))
	var wg sync.WaitGroup
	for _, w := range e.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- e.runWorker(w)
		}()
	}
	// Receiving workers run until stopped; a generator's workers end by
	// themselves when they have sent their count, and the engine ends when
	// all have, or at the first error.
	var err error
	ended := 0
wait:
	for ended < len(e.workers) {
		select {
		case <-ctx.Done():
			break wait
		case err = <-errs:
			ended++
			if err != nil {
				break wait
			}
		}
	}
	e.stop.Store(true)
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
// panic in the handler becomes an error that stops the engine.
func (e *Engine) runWorker(w *Worker) (err error) {
	// The thread stays locked until the goroutine ends, so Go retires it
	// rather than reuse a thread with a narrowed affinity.
	if err := cpuset.Pin(w.cpu); err != nil {
		e.stop.Store(true)
		return fmt.Errorf("queue %d: %w", w.queue, err)
	}
	// Name the thread after its queue so that top -H, ps -L and
	// /proc/PID/task/TID/comm show which worker is which. Only a label:
	// a kernel that refuses it changes nothing else.
	_ = os.WriteFile("/proc/thread-self/comm", []byte(workerThreadName(w.queue)), 0)
	defer func() {
		if r := recover(); r != nil {
			w.publish()
			buf := make([]byte, 4096)
			buf = buf[:runtime.Stack(buf, false)]
			err = fmt.Errorf("queue %d: handler panicked: %v\n%s", w.queue, r, buf)
		}
		if err != nil {
			e.stop.Store(true)
		}
	}()
	return w.run(&e.stop)
}

// Close detaches the program and closes the sockets. It is safe to call
// more than once and after a failed New.
func (e *Engine) Close() error {
	var errs []error
	if e.link != nil {
		errs = append(errs, e.link.Close())
		e.link = nil
	}
	for _, w := range e.workers {
		// Sockets that share a UMEM before the one that registered it.
		for _, p := range w.ports[1:] {
			errs = append(errs, p.Close())
		}
		errs = append(errs, w.sock.Close())
	}
	e.workers = nil
	for i := len(e.umems) - 1; i >= 0; i-- {
		errs = append(errs, e.umems[i].Close())
	}
	e.umems = nil
	if e.prog != nil {
		errs = append(errs, e.prog.Close())
		e.prog = nil
	}
	return errors.Join(errs...)
}
