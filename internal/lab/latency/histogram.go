// Package latency measures what a frame waits in a path: the generator
// (internal/lab/gen with Config.Stamp) writes a sequence number and the kernel
// clock into each frame as it sends it, and a receiver program (bpf/latency.c)
// attached where the frames come back takes the clock again, puts the delay
// into a per-CPU histogram and accounts for every frame by its sequence
// number: received, duplicated, reordered and, against the count sent, lost.
//
// # The histogram
//
// Delays go into a log-linear histogram, the same in C (bpf/latency.c) and
// here: bucket 0 holds delays below 2^MinExp ns (32 ns), the last bucket
// those of 2^MaxExp ns (134 ms) and more; each power of two in between is
// split into 2^SubBits (32) equal buckets, so a bucket is at most 1/32
// (3.1%) of its lower bound wide (1 ns from 32 to 63 ns). 1 us .. 100 ms
// lies inside, and so do the few hundred ns an in-kernel path takes on a
// veth test bed. The bucket
// of a delay takes integer operations only (no loop), cheap enough for the
// receiver to run on every frame. Minimum, maximum and sum are kept exactly
// beside the buckets.
//
// Percentiles follow one rule: the q-quantile of n delays is the upper
// bound of the bucket that holds the delay of rank ceil(q*n) (counting from
// 1 in ascending order), clamped to the exact maximum. So it is never below
// the true quantile, and above it by less than the bucket's width: 3.1% of
// the value at most inside 32 ns .. 134 ms, up to 31 ns in the underflow
// bucket, and exact (the maximum) for a quantile in the overflow bucket.
package latency

import (
	"fmt"
	"math"
	"math/bits"
)

// The histogram's shape; bpf/latency.c has the same constants.
const (
	// SubBits is log2 of the buckets per power of two.
	SubBits = 5
	// MinExp: delays below 2^MinExp ns go to the underflow bucket 0.
	MinExp = 5
	// MaxExp: delays of 2^MaxExp ns and more go to the overflow bucket,
	// Buckets-1.
	MaxExp = 27
	// Buckets is the number of buckets, underflow and overflow included.
	Buckets = 2 + (MaxExp-MinExp)<<SubBits
)

// The first power of two must hold 2^SubBits buckets of at least 1 ns.
const _ = uint(MinExp - SubBits)

// BucketOf returns the bucket of a delay of ns nanoseconds.
func BucketOf(ns uint64) int {
	if ns < 1<<MinExp {
		return 0
	}
	if ns >= 1<<MaxExp {
		return Buckets - 1
	}
	e := bits.Len64(ns) - 1 // the highest set bit
	return 1 + (e-MinExp)<<SubBits + int(ns>>(e-SubBits)&(1<<SubBits-1))
}

// BucketBounds returns the smallest and the largest delay (ns, both
// inclusive) of bucket i; the overflow bucket ends at math.MaxUint64.
func BucketBounds(i int) (lo, hi uint64) {
	switch {
	case i <= 0:
		return 0, 1<<MinExp - 1
	case i >= Buckets-1:
		return 1 << MaxExp, math.MaxUint64
	}
	e := MinExp + (i-1)>>SubBits
	sub := uint64((i - 1) & (1<<SubBits - 1))
	width := uint64(1) << (e - SubBits)
	lo = (1<<SubBits + sub) * width
	return lo, lo + width - 1
}

// Histogram is a distribution of delays in ns. The zero value is empty and
// ready to use.
type Histogram struct {
	Counts [Buckets]uint64
	// Count is the number of delays, the sum of Counts.
	Count uint64
	// Sum is the sum of the delays, for the mean.
	Sum uint64
	// Min and Max are exact; both are 0 while Count is 0.
	Min, Max uint64
}

// Add records one delay of ns nanoseconds.
func (h *Histogram) Add(ns uint64) {
	h.Counts[BucketOf(ns)]++
	if h.Count == 0 || ns < h.Min {
		h.Min = ns
	}
	if ns > h.Max {
		h.Max = ns
	}
	h.Count++
	h.Sum += ns
}

// Merge adds the delays of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.Count == 0 {
		return
	}
	if h.Count == 0 || o.Min < h.Min {
		h.Min = o.Min
	}
	h.Max = max(h.Max, o.Max)
	h.Count += o.Count
	h.Sum += o.Sum
	for i, n := range o.Counts {
		h.Counts[i] += n
	}
}

// Mean is the exact mean delay in ns, 0 when empty.
func (h *Histogram) Mean() float64 {
	if h.Count == 0 {
		return 0
	}
	return float64(h.Sum) / float64(h.Count)
}

// Quantile returns the q-quantile (0 < q <= 1) of the delays in ns by the
// package's rule: the upper bound of the bucket holding the delay of rank
// ceil(q*Count), clamped to Max. q is taken to the nearest millionth (0.999
// is p99.9 exactly). It returns 0 for an empty histogram, and panics for q
// outside (0, 1].
func (h *Histogram) Quantile(q float64) uint64 {
	if !(q > 0 && q <= 1) {
		panic(fmt.Sprintf("latency: quantile %v is outside (0, 1]", q))
	}
	if h.Count == 0 {
		return 0
	}
	const million = 1_000_000
	ppm := max(1, uint64(math.Round(q*million)))
	// rank = ceil(Count * ppm / million), exactly, in 128 bits.
	hi, lo := bits.Mul64(h.Count, ppm)
	lo, carry := bits.Add64(lo, million-1, 0)
	rank, _ := bits.Div64(hi+carry, lo, million)
	var cum uint64
	for i, n := range h.Counts {
		cum += n
		if cum >= rank {
			_, top := BucketBounds(i)
			return min(top, h.Max)
		}
	}
	// Counts add up to less than Count: a histogram built by hand.
	return h.Max
}

// Summary is the digest of a histogram that results carry, in ns: the
// exact minimum and maximum and the percentiles by Quantile's rule.
type Summary struct {
	Min  uint64 `json:"min"`
	P50  uint64 `json:"p50"`
	P90  uint64 `json:"p90"`
	P99  uint64 `json:"p99"`
	P999 uint64 `json:"p999"`
	Max  uint64 `json:"max"`
}

// Summary returns h's digest; all zero when h is empty.
func (h *Histogram) Summary() Summary {
	if h.Count == 0 {
		return Summary{}
	}
	return Summary{
		Min:  h.Min,
		P50:  h.Quantile(0.5),
		P90:  h.Quantile(0.9),
		P99:  h.Quantile(0.99),
		P999: h.Quantile(0.999),
		Max:  h.Max,
	}
}

// Bucket is one non-empty bucket of a histogram: delays Lo..Hi ns
// (inclusive), Count of them.
type Bucket struct {
	Lo, Hi, Count uint64
}

// NonEmpty lists the buckets that hold delays, in ascending order, with
// the outer bounds narrowed to Min and Max: what a picture of the
// distribution draws.
func (h *Histogram) NonEmpty() []Bucket {
	var out []Bucket
	for i, n := range h.Counts {
		if n == 0 {
			continue
		}
		lo, hi := BucketBounds(i)
		out = append(out, Bucket{Lo: max(lo, h.Min), Hi: min(hi, h.Max), Count: n})
	}
	return out
}
