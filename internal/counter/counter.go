// Package counter does the arithmetic of cumulative packet counters read at
// different moments, where a plain uint64 subtraction can wrap: two reads of
// one counter where the second came from a source that had not caught up (a
// per-CPU sum, a driver's batched statistics), or a counter that includes
// another one, read a moment apart, so that the part ran ahead of the whole.
// A wrapped difference prints as 18446744073709550499; these give 0 instead.
package counter

// Sub returns a - b, or 0 when b > a.
//
// For two reads of one counter (Sub(after, before)) it is what was counted
// in between; for a counter a that includes b, it is what a counts besides
// b. Both are zero, not a huge number, when the reads disagree.
func Sub(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

// Diff returns a - b as a signed number, for a figure that may honestly be
// negative and is reported as such (frames counted beyond what was sent).
// It saturates at the bounds of int64.
func Diff(a, b uint64) int64 {
	if a >= b {
		if d := a - b; d <= 1<<63-1 {
			return int64(d)
		}
		return 1<<63 - 1
	}
	if d := b - a; d <= 1<<63 {
		return -int64(d-1) - 1
	}
	return -1 << 63
}
