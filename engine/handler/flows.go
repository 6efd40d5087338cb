package handler

import (
	"sync"
	"sync/atomic"

	"github.com/xdpeng/xdpeng/engine"
)

// MaxFlows is how many distinct RX hashes a FlowCount counts apart; the
// frames of further hashes are counted together (FlowStats.Overflow).
const MaxFlows = 3072

// flowSlots is the size of a FlowCount's open-addressing table: a quarter
// stays empty, so that a probe ends soon.
const flowSlots = 4096

// FlowCount counts the frames of one queue by their RX hash, the flows as
// the device's RSS tells them apart, without parsing a header, then drops
// them. The engine must ask the driver for the hash (Config.RxMetadata
// with RxHash); frames the driver has no hash for are counted apart
// (FlowStats.Unhashed).
//
// Like Count, it counts in private arrays and publishes what a batch
// changed with atomic stores at its end: Stats may be called from any
// goroutine while the worker runs, and the hot path takes no lock and
// allocates nothing.
type FlowCount struct {
	keys   [flowSlots]uint32
	used   [flowSlots]bool
	counts [flowSlots]uint64
	flows  int
	// touched lists the slots changed in the current batch.
	touched             [engine.MaxBatch]uint16
	unhashed, overflow  uint64
	pubKey              [flowSlots]atomic.Uint64 // key | 1<<32 once the slot is used
	pubCount            [flowSlots]atomic.Uint64
	pubUnhashed, pubOvf atomic.Uint64
}

// NewFlowCount returns a handler with no flows counted.
func NewFlowCount() *FlowCount { return new(FlowCount) }

// Hints declares that a FlowCount never transmits.
func (h *FlowCount) Hints() engine.Hints { return engine.Hints{ReceiveOnly: true} }

// Handle counts every frame of b by its RX hash and leaves it dropped.
func (h *FlowCount) Handle(b *engine.Batch) {
	n := 0
	last := -1
	for i := range b.Len() {
		hash, _, ok := b.RxHash(i)
		if !ok {
			h.unhashed++
			continue
		}
		s := h.slot(hash)
		if s < 0 {
			h.overflow++
			continue
		}
		h.counts[s]++
		if s != last {
			h.touched[n] = uint16(s)
			n++
			last = s
		}
	}
	for _, s := range h.touched[:n] {
		if v := h.counts[s]; h.pubCount[s].Load() != v {
			h.pubCount[s].Store(v)
		}
	}
	if h.pubUnhashed.Load() != h.unhashed {
		h.pubUnhashed.Store(h.unhashed)
	}
	if h.pubOvf.Load() != h.overflow {
		h.pubOvf.Store(h.overflow)
	}
}

// slot returns the table slot of hash, taking a free one for a new hash;
// -1 once MaxFlows hashes have one.
func (h *FlowCount) slot(hash uint32) int {
	for i := hash; ; i++ {
		s := int(i % flowSlots)
		if !h.used[s] {
			if h.flows == MaxFlows {
				return -1
			}
			h.used[s], h.keys[s] = true, hash
			h.flows++
			h.pubKey[s].Store(uint64(hash) | 1<<32)
			return s
		}
		if h.keys[s] == hash {
			return s
		}
	}
}

// FlowStats are the counts of one or more FlowCounts.
type FlowStats struct {
	Frames uint64
	// ByHash counts the frames of each RX hash.
	ByHash map[uint32]uint64
	// Unhashed counts the frames the driver had no hash for; Overflow
	// those of hashes beyond the first MaxFlows of a queue.
	Unhashed, Overflow uint64
}

// Add adds o's counts to s.
func (s *FlowStats) Add(o FlowStats) {
	if s.ByHash == nil {
		s.ByHash = map[uint32]uint64{}
	}
	s.Frames += o.Frames
	for k, v := range o.ByHash {
		s.ByHash[k] += v
	}
	s.Unhashed += o.Unhashed
	s.Overflow += o.Overflow
}

// Stats reads the published counts.
func (h *FlowCount) Stats() FlowStats {
	s := FlowStats{ByHash: map[uint32]uint64{}, Unhashed: h.pubUnhashed.Load(), Overflow: h.pubOvf.Load()}
	s.Frames = s.Unhashed + s.Overflow
	for i := range h.pubKey {
		k := h.pubKey[i].Load()
		if k == 0 {
			continue
		}
		if v := h.pubCount[i].Load(); v != 0 {
			s.ByHash[uint32(k)] += v
			s.Frames += v
		}
	}
	return s
}

// FlowGroup makes a FlowCount per queue and sums their counts.
type FlowGroup struct {
	mu       sync.Mutex
	handlers []*FlowCount
}

// Handler makes the handler of one queue's worker.
func (g *FlowGroup) Handler(queue int) engine.Handler {
	h := NewFlowCount()
	g.mu.Lock()
	g.handlers = append(g.handlers, h)
	g.mu.Unlock()
	return h
}

// Stats sums the counts of every queue.
func (g *FlowGroup) Stats() FlowStats {
	g.mu.Lock()
	hs := append([]*FlowCount(nil), g.handlers...)
	g.mu.Unlock()
	var s FlowStats
	for _, h := range hs {
		s.Add(h.Stats())
	}
	return s
}
