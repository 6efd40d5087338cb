package engine

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// TxTimes is the distribution of a generator's completion times
// (GeneratorConfig.TxTimestamp): for each frame, from the moment its
// worker put its descriptor on the tx ring to the completion timestamp the
// kernel wrote into its TX metadata (in copy mode: CLOCK_TAI, when the
// device freed the frame). Times are kept in buckets of 1/16 of a power of
// two (6.25%); Percentile answers a bucket's upper bound.
type TxTimes struct {
	// Frames is how many completions had a timestamp and are counted in
	// the distribution.
	Frames uint64
	// NoTimestamp counts completions whose timestamp the kernel left zero.
	NoTimestamp uint64
	// Early counts timestamps before the frame's sending time (the clock
	// was stepped): in Frames, as 0.
	Early uint64
	// Min, Max and the Sum of the times in Frames.
	Min, Max, Sum time.Duration
	counts        [txTimeBuckets]uint64
}

// Mean is the average time, 0 without frames.
func (t *TxTimes) Mean() time.Duration {
	if t.Frames == 0 {
		return 0
	}
	return t.Sum / time.Duration(t.Frames)
}

// Percentile is the time that p percent (0 to 100) of the frames took at
// most: the upper bound of the bucket where that share is reached, capped
// by Max. 0 without frames.
func (t *TxTimes) Percentile(p float64) time.Duration {
	if t.Frames == 0 {
		return 0
	}
	want := uint64(p / 100 * float64(t.Frames))
	if want < 1 {
		want = 1
	}
	var cum uint64
	for i, n := range t.counts {
		if cum += n; cum >= want {
			return min(time.Duration(txTimeUpper(i)), t.Max)
		}
	}
	return t.Max
}

// txTimeBuckets covers every uint64: 16 exact values, then 16 buckets for
// each power of two from 2^4 to 2^63.
const txTimeBuckets = 16 + 60*16

// txTimeBucket is the bucket of ns.
func txTimeBucket(ns uint64) int {
	if ns < 16 {
		return int(ns)
	}
	e := bits.Len64(ns) - 1 // 4..63
	return (e-3)*16 + int(ns>>(e-4)&15)
}

// txTimeUpper is the largest value of bucket i.
func txTimeUpper(i int) uint64 {
	if i < 16 {
		return uint64(i)
	}
	e, sub := i/16+3, uint64(i%16)
	return (16+sub)<<(e-4) + (1<<(e-4) - 1)
}

// txTimer is one worker's TxTimes, written by the worker alone (so a load
// and a store, without a locked add) and read by any goroutine.
type txTimer struct {
	frames, none, early, sum, min, max atomic.Uint64
	counts                             [txTimeBuckets]atomic.Uint64
}

func inc(v *atomic.Uint64, d uint64) { v.Store(v.Load() + d) }

// record counts a completion timestamp ts (ok false: none) of a frame sent
// at sent, both ns of the same clock.
func (r *txTimer) record(ts uint64, ok bool, sent uint64) {
	if !ok {
		inc(&r.none, 1)
		return
	}
	var d uint64
	if ts >= sent {
		d = ts - sent
	} else {
		inc(&r.early, 1)
	}
	if r.frames.Load() == 0 || d < r.min.Load() {
		r.min.Store(d)
	}
	if d > r.max.Load() {
		r.max.Store(d)
	}
	inc(&r.sum, d)
	inc(&r.counts[txTimeBucket(d)], 1)
	inc(&r.frames, 1)
}

// addTo adds what r counted to t.
func (r *txTimer) addTo(t *TxTimes) {
	n := r.frames.Load()
	if n > 0 {
		lo, hi := time.Duration(r.min.Load()), time.Duration(r.max.Load())
		if t.Frames == 0 || lo < t.Min {
			t.Min = lo
		}
		t.Max = max(t.Max, hi)
	}
	t.Frames += n
	t.NoTimestamp += r.none.Load()
	t.Early += r.early.Load()
	t.Sum += time.Duration(r.sum.Load())
	for i := range r.counts {
		t.counts[i] += r.counts[i].Load()
	}
}
