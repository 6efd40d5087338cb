package engine

import (
	"fmt"
	"os"
	"time"

	"github.com/xdpeng/xdpeng/xsk"
)

// SocketStats are the kernel's counters of one AF_XDP socket
// (XDP_STATISTICS): what it could not deliver or take.
type SocketStats struct {
	// RxDropped are received frames the socket dropped for any reason
	// but a full rx ring: a frame that found no buffer in the fill ring
	// (counted in RxFillRingEmptyDescs too); with multi-buffer, a frame
	// that found fewer buffers in the fill ring than it has segments
	// (counted nowhere else); a frame longer than a UMEM frame without
	// multi-buffer.
	RxDropped uint64 `json:"rx_dropped"`
	// RxInvalidDescs and TxInvalidDescs are descriptors the kernel
	// refused (an address outside the UMEM, a length too large).
	RxInvalidDescs uint64 `json:"rx_invalid_descs"`
	TxInvalidDescs uint64 `json:"tx_invalid_descs"`
	// RxRingFull are received frames dropped because the rx ring was
	// full; a frame counts here or in RxDropped, never in both.
	RxRingFull uint64 `json:"rx_ring_full"`
	// RxFillRingEmptyDescs counts the times the kernel found the fill
	// ring empty; TxRingEmptyDescs the times it found the tx ring empty
	// when asked to transmit.
	RxFillRingEmptyDescs uint64 `json:"rx_fill_ring_empty_descs"`
	TxRingEmptyDescs     uint64 `json:"tx_ring_empty_descs"`
}

// SocketStats has the fields of xsk.Statistics, in their order: a socket's
// statistics convert to it as they are (SocketStats(st)), and its sums are
// xsk's.

// Drops is how many received frames the socket dropped.
func (s SocketStats) Drops() uint64 { return xsk.Statistics(s).Drops() }

// Add adds o to s.
func (s *SocketStats) Add(o SocketStats) { (*xsk.Statistics)(s).Add(xsk.Statistics(o)) }

// QueueStats are one queue's counters since the start.
type QueueStats struct {
	Queue int `json:"queue"`
	CPU   int `json:"cpu"`
	// RxPackets and RxBytes were received on the queue's socket.
	RxPackets uint64 `json:"rx_packets"`
	RxBytes   uint64 `json:"rx_bytes"`
	// TxPackets were transmitted and completed; TxBytes were submitted.
	TxPackets uint64 `json:"tx_packets"`
	TxBytes   uint64 `json:"tx_bytes"`
	// Dropped frames got the Drop verdict (all of them in rxdrop), or were
	// forwarded to an output the engine does not have.
	Dropped uint64 `json:"dropped"`
	// DroppedFor[r] counts the frames of Dropped that the handler dropped
	// with Batch.DropFor(i, r), r from 1 to MaxDropReasons; DroppedFor[0]
	// stays 0.
	DroppedFor [MaxDropReasons + 1]uint64 `json:"dropped_for,omitzero"`
	// TxRingFull frames were to be sent but found no room: the tx ring
	// full, no tx ring at all (a Transmit on a ReceiveOnly queue), or no
	// free frame in an output's own UMEM to copy into. They were dropped.
	TxRingFull uint64 `json:"tx_ring_full"`
	// System calls and batches: what --app-stats shows.
	RxWakeups uint64 `json:"rx_wakeups"`
	TxWakeups uint64 `json:"tx_wakeups"`
	Polls     uint64 `json:"polls"`
	Batches   uint64 `json:"batches"`
	// Naps are the short sleeps of a worker that shares its CPU with
	// other busy threads, taken while frames flow so they gather into
	// larger batches.
	Naps uint64 `json:"naps"`
	// BusyPollInert reports that the queue was to busy-poll
	// (WaitBusyPoll) but its socket has no NAPI instance to poll, so
	// that a recvfrom would run nothing (veth, which registers its XDP
	// receive queues without NAPI ids): the worker waits as WaitAdaptive
	// does instead.
	BusyPollInert bool `json:"busy_poll_inert,omitempty"`
	// XDP are the kernel's counters of the queue's socket.
	XDP SocketStats `json:"xdp_stats"`
	// Dests are TxPackets, TxBytes and TxRingFull destination by
	// destination, Dests[d] for Dest d: ToInput (Transmit, and Forward to
	// ToInput) first, then each output. Only an engine with outputs has
	// them. Frames forwarded to an output the engine does not have are in
	// Dropped, not here. (JSON names them "ports", as xdpeng prints them.)
	Dests []DestStats `json:"ports,omitempty"`
}

// DestStats are one destination's share of its queue's transmit counters.
type DestStats struct {
	Dest Dest `json:"port"`
	// TxPackets were transmitted and completed, TxBytes submitted.
	TxPackets uint64 `json:"tx_packets"`
	TxBytes   uint64 `json:"tx_bytes"`
	// TxRingFull are the frames for the destination that it dropped: its tx ring
	// was full, or (an output with a UMEM of its own) it had no free frame
	// to copy into.
	TxRingFull uint64 `json:"tx_ring_full"`
}

// Add adds o's counters to p.
func (p *DestStats) Add(o DestStats) {
	p.TxPackets += o.TxPackets
	p.TxBytes += o.TxBytes
	p.TxRingFull += o.TxRingFull
}

// Add adds o's counters to q.
func (q *QueueStats) Add(o QueueStats) {
	q.RxPackets += o.RxPackets
	q.RxBytes += o.RxBytes
	q.TxPackets += o.TxPackets
	q.TxBytes += o.TxBytes
	q.Dropped += o.Dropped
	for r := range q.DroppedFor {
		q.DroppedFor[r] += o.DroppedFor[r]
	}
	q.TxRingFull += o.TxRingFull
	q.RxWakeups += o.RxWakeups
	q.TxWakeups += o.TxWakeups
	q.Polls += o.Polls
	q.Batches += o.Batches
	q.Naps += o.Naps
	q.BusyPollInert = q.BusyPollInert || o.BusyPollInert
	q.XDP.Add(o.XDP)
	for i, p := range o.Dests {
		if i == len(q.Dests) {
			q.Dests = append(q.Dests, DestStats{Dest: p.Dest})
		}
		q.Dests[i].Add(p)
	}
}

// Snapshot is every queue's counters at one moment.
type Snapshot struct {
	Time   time.Time
	Queues []QueueStats
}

// Total sums the queues.
func (s Snapshot) Total() QueueStats {
	t := QueueStats{Queue: -1, CPU: -1}
	for _, q := range s.Queues {
		t.Add(q)
	}
	return t
}

// stats reads every worker's counters and its socket's XDP statistics.
func (c *core) stats() (Snapshot, error) {
	c.life.RLock()
	defer c.life.RUnlock()
	if c.closed {
		return Snapshot{}, fmt.Errorf("stats: %w", os.ErrClosed)
	}
	snap := Snapshot{Time: time.Now(), Queues: make([]QueueStats, len(c.workers))}
	for i, wk := range c.workers {
		w := wk.base()
		p := w.pub
		q := &snap.Queues[i]
		q.Queue, q.CPU = w.queue, w.cpu
		q.RxPackets = p.rxPackets.Load()
		q.RxBytes = p.rxBytes.Load()
		q.TxPackets = p.txPackets.Load()
		q.TxBytes = p.txBytes.Load()
		q.Dropped = p.dropped.Load()
		for r := range q.DroppedFor {
			q.DroppedFor[r] = p.droppedFor[r].Load()
		}
		q.TxRingFull = p.txRingFull.Load()
		q.RxWakeups = p.rxWakeups.Load()
		q.TxWakeups = p.txWakeups.Load()
		q.Polls = p.polls.Load()
		q.Batches = p.batches.Load()
		q.Naps = p.naps.Load()
		q.BusyPollInert = p.busyPollInert.Load()
		q.Dests = w.portStats(func(o *outPort) portLocal {
			return portLocal{o.pub.txPackets.Load(), o.pub.txBytes.Load(), o.pub.txRingFull.Load()}
		})
		st, err := w.sock.Statistics()
		if err != nil {
			return snap, err
		}
		q.XDP = SocketStats(st)
	}
	return snap, nil
}

// stats are the worker's private counters as QueueStats, with xdp as the
// socket's: for simulations, which run on the worker's own goroutine.
func (p *port) stats(xdp SocketStats) QueueStats {
	c := &p.c
	return QueueStats{
		Queue: p.queue, CPU: p.cpu,
		RxPackets: c.rxPackets, RxBytes: c.rxBytes, TxPackets: c.txPackets, TxBytes: c.txBytes,
		Dropped: c.dropped, DroppedFor: c.droppedFor, TxRingFull: c.txRingFull, RxWakeups: c.rxWakeups, TxWakeups: c.txWakeups,
		Polls: c.polls, Batches: c.batches, Naps: c.naps, XDP: xdp,
		Dests: p.portStats(func(o *outPort) portLocal { return o.c }),
	}
}

// portStats are the worker's per-port counters as read reads them, nil
// without outputs.
func (p *port) portStats(read func(*outPort) portLocal) []DestStats {
	if len(p.out) < 2 {
		return nil
	}
	ps := make([]DestStats, len(p.out))
	for i := range p.out {
		c := read(&p.out[i])
		ps[i] = DestStats{Dest: Dest(i), TxPackets: c.txPackets, TxBytes: c.txBytes, TxRingFull: c.txRingFull}
	}
	return ps
}
