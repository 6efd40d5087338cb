package engine

import (
	"testing"
	"time"
)

// TestCyclePacer: a batch at the start of every cycle, none between; a
// wake 2.3 cycles late skips two cycles, sends at once and counts 0.3 of
// a cycle late, and the cycles stay on their grid.
func TestCyclePacer(t *testing.T) {
	const cycle = time.Millisecond
	p := newCyclePacer(cycle, 64)
	t0 := time.Unix(1000, 0)
	step := func(at time.Duration, want uint32) {
		t.Helper()
		got := p.allow(t0.Add(at), 100)
		if got != want {
			t.Errorf("at %v: %d may go, want %d", at, got, want)
		}
		p.spend(got)
	}
	step(0, 64)
	step(10*time.Microsecond, 0)
	if d := p.wait(t0.Add(400 * time.Microsecond)); d != 600*time.Microsecond {
		t.Errorf("wait at 0.4 ms: %v, want 600µs", d)
	}
	step(cycle, 64)                        // on time
	step(cycle+5*time.Microsecond, 0)      // the rest of that cycle
	step(4*cycle+300*time.Microsecond, 64) // the cycles at 2 and 3 ms missed
	if d := p.wait(t0.Add(4*cycle + 400*time.Microsecond)); d != 600*time.Microsecond {
		t.Errorf("wait after the late cycle: %v, want 600µs (the grid kept)", d)
	}
	step(5*cycle+20*time.Microsecond, 64)
	c := p.cyc
	if n, m := c.cycles.Load(), c.missed.Load(); n != 4 || m != 2 {
		t.Errorf("%d cycles, %d missed; want 4, 2", n, m)
	}
	if lo, hi, sum := c.lateMin.Load(), c.lateMax.Load(), c.lateSum.Load(); lo != 0 || hi != uint64(300*time.Microsecond) || sum != uint64(320*time.Microsecond) {
		t.Errorf("late min %d, max %d, sum %d ns; want 0, 300000, 320000", lo, hi, sum)
	}
}
