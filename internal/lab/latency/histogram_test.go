package latency

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestBucketsTileTheRange(t *testing.T) {
	var next uint64 // the lower bound the next bucket must have
	for i := range Buckets {
		lo, hi := BucketBounds(i)
		if lo != next || hi < lo {
			t.Fatalf("bucket %d is [%d, %d], want it to start at %d", i, lo, hi, next)
		}
		for _, v := range []uint64{lo, lo + (hi-lo)/2, hi} {
			if got := BucketOf(v); got != i {
				t.Fatalf("BucketOf(%d) = %d, want %d (bounds [%d, %d])", v, got, i, lo, hi)
			}
		}
		if i > 0 && i < Buckets-1 && (hi-lo+1)*32 > lo {
			t.Errorf("bucket %d [%d, %d] is wider than 1/32 of its lower bound", i, lo, hi)
		}
		next = hi + 1
	}
	if next != 0 { // the overflow bucket ends at MaxUint64, and next wrapped
		t.Errorf("the buckets end at %d, want math.MaxUint64", next-1)
	}
	// The range the issue asks for lies between underflow and overflow.
	if BucketOf(1000) == 0 || BucketOf(100_000_000) == Buckets-1 {
		t.Errorf("1 us is in bucket %d, 100 ms in %d: want both inside 1..%d", BucketOf(1000), BucketOf(100_000_000), Buckets-2)
	}
}

// samples draws n delays, log-uniform over 100 ns .. 1 s, so that every
// part of the histogram, underflow and overflow included, gets some.
func samples(r *rand.Rand, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(math.Exp(math.Log(100) + r.Float64()*(math.Log(1e9)-math.Log(100))))
	}
	return out
}

func histogramOf(vs []uint64) *Histogram {
	var h Histogram
	for _, v := range vs {
		h.Add(v)
	}
	return &h
}

// TestQuantileAgainstSortedSamples checks the rule on the samples
// themselves: the q-quantile is at or above the sample of rank ceil(q*n),
// and no higher than that sample's bucket's upper bound (and Max).
func TestQuantileAgainstSortedSamples(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 7, 10, 100, 1000, 12345} {
		vs := samples(r, n)
		h := histogramOf(vs)
		sorted := slices.Sorted(slices.Values(vs))
		for _, q := range []float64{0.000001, 0.01, 0.5, 0.9, 0.99, 0.999, 1} {
			rank := int(math.Ceil(q*float64(n) - 1e-9))
			x := sorted[max(rank, 1)-1]
			_, top := BucketBounds(BucketOf(x))
			got := h.Quantile(q)
			if got < x || got > min(top, h.Max) {
				t.Errorf("n=%d q=%v: got %d, want in [%d, %d] (sample of rank %d)", n, q, got, x, min(top, h.Max), rank)
			}
			if b := BucketOf(x); b > 0 && b < Buckets-1 && float64(got-x) > float64(x)/32 {
				t.Errorf("n=%d q=%v: got %d for %d, more than 1/32 off", n, q, got, x)
			}
		}
		if h.Quantile(1) != sorted[n-1] {
			t.Errorf("n=%d: p100 = %d, want the maximum %d", n, h.Quantile(1), sorted[n-1])
		}
	}
}

// The rank is exact: p90 of 10 delays is the 9th, not the 10th (0.9*10 is
// 9.000000000000002 in floating point).
func TestQuantileRankIsExact(t *testing.T) {
	vs := []uint64{1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 1_000_000}
	h := histogramOf(vs)
	_, top := BucketBounds(BucketOf(9000))
	if got := h.Quantile(0.9); got != top {
		t.Errorf("p90 = %d, want %d, the top of 9000's bucket", got, top)
	}
	// 1000 delays of 0 and one of 5000: p99.9 is rank ceil(999.999) =
	// 1000, still a 0, reported as the underflow bucket's top.
	h = histogramOf(make([]uint64, 1000))
	h.Add(5000)
	if got := h.Quantile(0.999); got != 1<<MinExp-1 {
		t.Errorf("p99.9 of 1000 zeros and one 5000 = %d, want %d", got, 1<<MinExp-1)
	}
}

func TestHistogramProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		n := 1 + r.IntN(3000)
		vs := samples(r, n)
		h := histogramOf(vs)
		var sum uint64
		for _, c := range h.Counts {
			sum += c
		}
		if h.Count != uint64(n) || sum != uint64(n) {
			t.Fatalf("trial %d: Count %d, buckets add up to %d, want %d", trial, h.Count, sum, n)
		}
		s := h.Summary()
		if !(s.Min <= s.P50 && s.P50 <= s.P90 && s.P90 <= s.P99 && s.P99 <= s.P999 && s.P999 <= s.Max) {
			t.Fatalf("trial %d: summary %+v is not ordered", trial, s)
		}
		if s.Min != slices.Min(vs) || s.Max != slices.Max(vs) {
			t.Fatalf("trial %d: min %d max %d, want %d %d", trial, s.Min, s.Max, slices.Min(vs), slices.Max(vs))
		}
		// Merging two halves gives the histogram of the whole.
		cut := r.IntN(n + 1)
		a, b := histogramOf(vs[:cut]), histogramOf(vs[cut:])
		a.Merge(b)
		if *a != *h {
			t.Fatalf("trial %d: merge of halves cut at %d differs from the whole", trial, cut)
		}
	}
}

func TestEmptyHistogram(t *testing.T) {
	var h Histogram
	if s := h.Summary(); s != (Summary{}) || h.Quantile(0.5) != 0 || h.Mean() != 0 || h.NonEmpty() != nil {
		t.Errorf("empty histogram: summary %+v, p50 %d, mean %v, buckets %v", s, h.Quantile(0.5), h.Mean(), h.NonEmpty())
	}
	var o Histogram
	o.Add(700)
	h.Merge(&o)
	if h.Min != 700 || h.Max != 700 || h.Count != 1 {
		t.Errorf("empty merged with {700}: %+v", h.Summary())
	}
	for _, q := range []float64{0, -1, 1.0001, math.NaN()} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Quantile(%v) did not panic", q)
				}
			}()
			h.Quantile(q)
		}()
	}
}

func TestNonEmptyAndJSON(t *testing.T) {
	h := histogramOf([]uint64{300, 310, 5000, 200_000_000})
	got := h.NonEmpty()
	want := []Bucket{{Lo: 300, Hi: 303, Count: 1}, {Lo: 304, Hi: 311, Count: 1}, {Lo: 4992, Hi: 5119, Count: 1}, {Lo: 1 << 27, Hi: 200_000_000, Count: 1}}
	if !slices.Equal(got, want) {
		t.Errorf("NonEmpty = %+v, want %+v", got, want)
	}
	b, err := json.Marshal(h.Summary())
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"min":300,"p50":311,"p90":200000000,"p99":200000000,"p999":200000000,"max":200000000}` {
		t.Errorf("JSON %s", b)
	}
}
