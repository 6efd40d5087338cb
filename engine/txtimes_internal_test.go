package engine

import (
	"math"
	"testing"
	"time"
)

// TestTxTimeBuckets: every value lies in its bucket, buckets are in order
// and at most 1/16 of their lower bound wide.
func TestTxTimeBuckets(t *testing.T) {
	vals := []uint64{0, 1, 15, 16, 17, 31, 32, 33, 1000, 1023, 1024, 1025, 123456789, 1 << 40, math.MaxUint64 - 1, math.MaxUint64}
	for e := 0; e < 64; e++ {
		vals = append(vals, 1<<e, 1<<e-1, 1<<e+1)
	}
	for _, v := range vals {
		i := txTimeBucket(v)
		if i < 0 || i >= txTimeBuckets {
			t.Fatalf("bucket of %d is %d, outside 0..%d", v, i, txTimeBuckets-1)
		}
		hi := txTimeUpper(i)
		var lo uint64
		if i > 0 {
			lo = txTimeUpper(i-1) + 1
		}
		if v < lo || v > hi {
			t.Errorf("%d in bucket %d of %d..%d", v, i, lo, hi)
		}
		if v >= 16 && float64(hi-lo+1) > float64(lo)/16 {
			t.Errorf("bucket %d (%d..%d) is wider than 1/16 of its start", i, lo, hi)
		}
	}
	if txTimeUpper(txTimeBuckets-1) != math.MaxUint64 {
		t.Errorf("the last bucket ends at %d", txTimeUpper(txTimeBuckets-1))
	}
}

// TestTxTimerRecord: counts, min, max, sum, the early and missing ones,
// and percentiles at bucket bounds.
func TestTxTimerRecord(t *testing.T) {
	var r txTimer
	const sent = 1_000_000
	for d := uint64(1); d <= 1000; d++ {
		r.record(sent+d*1000, true, sent) // 1 µs .. 1 ms
	}
	r.record(0, false, sent)
	r.record(sent-5, true, sent)
	var got TxTimes
	r.addTo(&got)
	var other txTimer
	other.record(sent+7e6, true, sent)
	other.addTo(&got)
	if got.Frames != 1002 || got.NoTimestamp != 1 || got.Early != 1 {
		t.Fatalf("frames %d, no timestamp %d, early %d: want 1002, 1, 1", got.Frames, got.NoTimestamp, got.Early)
	}
	if got.Min != 0 || got.Max != 7*time.Millisecond {
		t.Errorf("min %v, max %v: want 0 (the early one) and 7ms", got.Min, got.Max)
	}
	if want := time.Duration(500500*1000 + 7e6); got.Sum != want {
		t.Errorf("sum %v, want %v", got.Sum, want)
	}
	if p := got.Percentile(50); p < 500*time.Microsecond || p > 500*time.Microsecond*17/16 {
		t.Errorf("p50 %v, want 500µs to 1/16 above", p)
	}
	if p := got.Percentile(100); p != 7*time.Millisecond {
		t.Errorf("p100 %v, want the max, 7ms", p)
	}
	if (&TxTimes{}).Percentile(50) != 0 || (&TxTimes{}).Mean() != 0 {
		t.Error("an empty TxTimes has a percentile or a mean")
	}
}
