package counter

import (
	"math"
	"testing"
)

func TestSub(t *testing.T) {
	for _, tc := range []struct{ a, b, want uint64 }{
		{10, 3, 7},
		{3, 3, 0},
		// The race of issue 16: veth's rx drops (which include the
		// socket's) read before veth had added a batch the socket had
		// already counted.
		{1000, 2117, 0},
		{0, math.MaxUint64, 0},
		{math.MaxUint64, 0, math.MaxUint64},
	} {
		if got := Sub(tc.a, tc.b); got != tc.want {
			t.Errorf("Sub(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		a, b uint64
		want int64
	}{
		{10, 3, 7},
		{3, 10, -7},
		{5, 5, 0},
		{math.MaxUint64, 0, math.MaxInt64},
		{0, math.MaxUint64, math.MinInt64},
		{0, 1 << 63, math.MinInt64},
		{0, 1<<63 - 1, -(1<<63 - 1)},
	} {
		if got := Diff(tc.a, tc.b); got != tc.want {
			t.Errorf("Diff(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
