package engine

import (
	"time"

	"github.com/xdpeng/xdpeng/internal/xsk"
)

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
	// Dropped frames got the Drop verdict (all of them in rxdrop).
	Dropped uint64 `json:"dropped"`
	// TxRingFull frames were to be sent but found the tx ring full; they
	// were dropped.
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
	// XDP are the kernel's drop counters for the socket.
	XDP xsk.Statistics `json:"xdp_stats"`
}

// Add adds o's counters to q.
func (q *QueueStats) Add(o QueueStats) {
	q.RxPackets += o.RxPackets
	q.RxBytes += o.RxBytes
	q.TxPackets += o.TxPackets
	q.TxBytes += o.TxBytes
	q.Dropped += o.Dropped
	q.TxRingFull += o.TxRingFull
	q.RxWakeups += o.RxWakeups
	q.TxWakeups += o.TxWakeups
	q.Polls += o.Polls
	q.Batches += o.Batches
	q.Naps += o.Naps
	q.XDP.Add(o.XDP)
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

// Stats reads every worker's counters and its socket's XDP statistics.
func (e *Engine) Stats() (Snapshot, error) {
	snap := Snapshot{Time: time.Now(), Queues: make([]QueueStats, len(e.workers))}
	for i, w := range e.workers {
		p := w.pub
		q := &snap.Queues[i]
		q.Queue, q.CPU = w.queue, w.cpu
		q.RxPackets = p.rxPackets.Load()
		q.RxBytes = p.rxBytes.Load()
		q.TxPackets = p.txPackets.Load()
		q.TxBytes = p.txBytes.Load()
		q.Dropped = p.dropped.Load()
		q.TxRingFull = p.txRingFull.Load()
		q.RxWakeups = p.rxWakeups.Load()
		q.TxWakeups = p.txWakeups.Load()
		q.Polls = p.polls.Load()
		q.Batches = p.batches.Load()
		q.Naps = p.naps.Load()
		st, err := w.sock.Statistics()
		if err != nil {
			return snap, err
		}
		q.XDP = st
	}
	return snap, nil
}

// Started is when Run started the workers.
func (e *Engine) Started() time.Time { return e.started }
