package engine

import (
	"testing"
	"time"
)

func TestCPUShareObserve(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := t0
	var c cpuShare
	var delay int64
	var naps uint64
	// span advances the clock by shareCheck, during which the worker waited
	// for its CPU share of the time and napped n times.
	span := func(share float64, n uint64) bool {
		at = at.Add(shareCheck)
		delay += int64(share * float64(shareCheck))
		naps += n
		c.observe(at, delay, naps)
		return at.Before(c.until)
	}

	if span(0, 0) {
		t.Fatal("shared after the first reading, a baseline only")
	}
	if span(0.01, 0) || span(0.01, 0) {
		t.Fatal("1% run delay counted as shared")
	}
	// A kernel thread's burst: a couple of busy spans, then quiet.
	for i := range shareSpans - 1 {
		if span(0.5, 0) {
			t.Fatalf("shared after %d busy spans, want %d", i+1, shareSpans)
		}
	}
	if span(0, 0) {
		t.Fatal("shared after a burst")
	}
	// A thread that wants the CPU all the time.
	for range shareSpans - 1 {
		span(0.4, 0)
	}
	if !span(0.4, 0) {
		t.Fatalf("not shared after %d spans of 40%% run delay", shareSpans)
	}
	until := c.until
	if !until.Equal(at.Add(shareHold)) {
		t.Fatalf("shared until %v, want %v", until, at.Add(shareHold))
	}
	// Napping from now on: the wake-ups alone make 8% of run delay, or
	// more; spans with naps neither extend the hold nor count.
	for at.Add(shareCheck).Before(until) {
		span(0.3, 100)
	}
	if c.until != until {
		t.Fatalf("spans with naps extended the hold to %v", c.until)
	}
	// Spinning again after the hold: quiet spans end the sharing.
	span(0.3, 100) // the span of the last nap
	if span(0.01, 0) || span(0.01, 0) || span(0.01, 0) {
		t.Fatal("still shared after the hold ran out")
	}
	// Busy spans while spinning: shared again.
	for range shareSpans {
		span(0.5, 0)
	}
	if !at.Before(c.until) {
		t.Fatal("50% run delay while spinning not counted as shared")
	}
}
