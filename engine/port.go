package engine

import (
	"sync/atomic"
	"time"

	"github.com/xdpeng/xdpeng/xsk"
)

// worker is the loop of one queue, run on its pinned CPU: a receive worker
// (rxWorker) or a generator's transmit worker (txWorker), each built around
// the queue's port.
type worker interface {
	// run is the loop; it returns when stop is set, when the worker is
	// done (a generator's share sent), or with the error that stopped it.
	run(stop *atomic.Bool) error
	// base is the port the worker runs on: its socket, which Close
	// closes, and its counters, which Stats reads.
	base() *port
}

// port is one queue's socket as a worker sends and counts through it: the
// socket and its UMEM, the sockets it can send to and their per-batch
// state, the descriptors in flight on their tx rings, and the worker's
// counters with their published copy.
type port struct {
	queue, cpu int
	sock       *xsk.Socket
	umem       *xsk.Umem
	batchSize  uint32
	needWakeup bool

	// ports are the sockets a handler can send to: ports[0] is the queue's
	// own socket, ports[k] the socket on Config.Outputs[k-1].
	ports []*xsk.Socket
	// out is the per-batch state of each port (syncPorts).
	out []outPort

	txOutstanding uint32 // submitted to tx, not yet completed
	c             local
	pub           *counters

	// pubBatches and pubTxPackets are c's counts at the last publish.
	pubBatches, pubTxPackets uint64

	// thread is the thread the worker runs on while it runs, 0 else
	// (core.inRun).
	thread atomic.Int64
}

// newPort is the port of queue on cpu, whose socket is sock.
func newPort(queue, cpu int, sock *xsk.Socket, o options) port {
	return port{
		queue:      queue,
		cpu:        cpu,
		sock:       sock,
		umem:       sock.Umem(),
		batchSize:  uint32(o.batch),
		needWakeup: o.needWakeup,
		ports:      []*xsk.Socket{sock},
		pub:        new(counters),
	}
}

func (p *port) base() *port { return p }

// counters are one worker's statistics, written only by the worker (with
// atomic stores, every few batches and before it sleeps) and read by the
// stats loop. The padding keeps each worker's counters on cache lines of
// their own.
type counters struct {
	rxPackets, rxBytes   atomic.Uint64
	txPackets, txBytes   atomic.Uint64
	dropped, txRingFull  atomic.Uint64
	rxWakeups, txWakeups atomic.Uint64
	polls, batches       atomic.Uint64
	naps                 atomic.Uint64
	droppedFor           [MaxDropReasons + 1]atomic.Uint64
	// busyPollInert is set when WaitBusyPoll found no NAPI instance to
	// poll and the worker waits as WaitAdaptive instead.
	busyPollInert atomic.Bool
	_             [64]byte
}

// local is the worker's private copy of its counters.
type local struct {
	rxPackets, rxBytes   uint64
	txPackets, txBytes   uint64
	dropped, txRingFull  uint64
	rxWakeups, txWakeups uint64
	polls, batches       uint64
	naps                 uint64
	droppedFor           [MaxDropReasons + 1]uint64
	// reasons is set once a handler gave a drop reason: until then
	// publish leaves droppedFor alone.
	reasons bool
}

// options are a worker's settings from its engine's or generator's
// configuration.
type options struct {
	batch       int
	wait        WaitMode
	needWakeup  bool
	pollTimeout time.Duration
	multiBuffer bool
	rxSize      uint32
}

func workerOptions(c *Config) options {
	return options{batch: c.Batch, wait: c.Wait, needWakeup: c.NeedWakeup, pollTimeout: pollTimeout(c.PollTimeout),
		multiBuffer: c.MultiBuffer, rxSize: c.RxSize}
}

// outPort is the worker's per-batch state of one port: the tx slots
// reserved for the batch, so that a batch costs one Reserve and one Submit
// per port rather than one per frame.
type outPort struct {
	s *xsk.Socket
	// copy is set when the port has a UMEM of its own: frames are copied
	// into one of its free frames, and its completions go back to its own
	// stack rather than to the rx socket's fill ring.
	copy            bool
	idx, room, used uint32
	reserved        bool
	// eop is the port's own UMEM's rxWorker.eop (copy ports, multi-buffer).
	eop []uint8
	// c is the port's share of the worker's transmit counters, pub where
	// publish puts them.
	c   portLocal
	pub *portCounters
}

// portLocal and portCounters are a port's transmit counters (QueueStats.
// Ports): the worker's private copy, and the one the stats loop reads.
type portLocal struct{ txPackets, txBytes, txRingFull uint64 }

type portCounters struct{ txPackets, txBytes, txRingFull atomic.Uint64 }

// txRingFull counts a frame for port o that found no room.
func (p *port) txRingFull(o *outPort) {
	p.c.txRingFull++
	o.c.txRingFull++
}

// txBytes counts bytes queued on port o.
func (p *port) txBytes(o *outPort, n uint64) {
	p.c.txBytes += n
	o.c.txBytes += n
}

// syncPorts builds the per-port state; call it after p.ports changed,
// before the worker runs.
func (p *port) syncPorts() {
	p.out = make([]outPort, len(p.ports))
	for i, s := range p.ports {
		p.out[i] = outPort{s: s, copy: s.Umem() != p.umem, pub: new(portCounters)}
	}
}

// kickTx makes the kernel transmit s's tx ring, if it asked to be woken
// (always, without need_wakeup).
func (p *port) kickTx(s *xsk.Socket) {
	if p.needWakeup && !s.Tx.NeedWakeup() {
		return
	}
	// In copy mode the kernel transmits inside sendto, at most
	// copyTxBudget frames a call, so a batch of 64 needs two. Kick until
	// the ring is drained or a call makes no progress (the device is
	// busy): frames left on the ring would fill it and be dropped as
	// tx ring full while the next batch arrives. Before Linux 6.17 a
	// call that stops at its budget writes the consumer index only in a
	// later call, so what it took shows one kick late; the frames still
	// go out at the rate they come.
	for i := 0; i < maxKicks; i++ {
		before := s.Tx.Pending()
		p.c.txWakeups++
		// Errors here are transient (ring busy, device down); the frames
		// stay on the ring and the next kick retries them.
		_ = s.WakeTx()
		if after := s.Tx.Pending(); after == 0 || after == before {
			return
		}
	}
}

// copyTxBudget is the most frames a copy-mode sendto transmits
// (TX_BATCH_SIZE in net/xdp/xsk.c).
const copyTxBudget = 32

// maxKicks bounds the sendto calls of one kick: 8 x 32 frames.
const maxKicks = 8

// publish makes the worker's counters visible to the stats loop.
func (p *port) publish() {
	pc, c := p.pub, &p.c
	pc.rxPackets.Store(c.rxPackets)
	pc.rxBytes.Store(c.rxBytes)
	pc.txPackets.Store(c.txPackets)
	pc.txBytes.Store(c.txBytes)
	pc.dropped.Store(c.dropped)
	if c.reasons {
		for r := range c.droppedFor {
			pc.droppedFor[r].Store(c.droppedFor[r])
		}
	}
	pc.txRingFull.Store(c.txRingFull)
	pc.rxWakeups.Store(c.rxWakeups)
	pc.txWakeups.Store(c.txWakeups)
	pc.polls.Store(c.polls)
	pc.batches.Store(c.batches)
	pc.naps.Store(c.naps)
	for i := range p.out {
		o := &p.out[i]
		o.pub.txPackets.Store(o.c.txPackets)
		o.pub.txBytes.Store(o.c.txBytes)
		o.pub.txRingFull.Store(o.c.txRingFull)
	}
	p.pubBatches, p.pubTxPackets = c.batches, c.txPackets
}
