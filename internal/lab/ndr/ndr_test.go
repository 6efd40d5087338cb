package ndr

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// path is a fake path: a trial at rate offers rate frames (a one-second
// trial) and the path carries capacity of them, plus noise drawn uniformly
// from [-noise, +noise] per trial; the rest are lost.
type path struct {
	capacity, noise uint64
	r               *rand.Rand
	trials          []uint64
}

func (p *path) Trial(rate uint64) (Outcome, error) {
	p.trials = append(p.trials, rate)
	c := p.capacity
	if p.noise > 0 {
		c = c - p.noise + p.r.Uint64N(2*p.noise+1)
	}
	if rate <= c {
		return Outcome{Sent: rate}, nil
	}
	return Outcome{Sent: rate, Lost: rate - c}, nil
}

func TestSearchFindsCapacity(t *testing.T) {
	for _, tc := range []struct {
		capacity, lower, upper, res uint64
	}{
		{1_234_567, 1000, 10_000_000, 1000},
		{1_234_567, 1000, 10_000_000, 1},
		{999, 1, 1000, 1},
		{1000, 1, 1000, 1}, // the upper bound passes: one trial
		{5000, 5000, 5000, 10},
		{1, 1, 3, 1},
		{7_000_000, 100_000, 7_000_001, 5000}, // just below the upper bound
		{100_001, 100_000, 14_000_000, 10_000},
	} {
		p := &path{capacity: tc.capacity}
		c := Config{Lower: tc.lower, Upper: tc.upper, Resolution: tc.res}
		var steps []Step
		r, err := Search(p, c, func(s Step) { steps = append(steps, s) })
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		if r.Rate > tc.capacity {
			t.Errorf("%+v: rate %d is above the capacity", tc, r.Rate)
		}
		if r.FailRate == 0 {
			if r.Rate != tc.upper {
				t.Errorf("%+v: nothing failed but the rate is %d, not the upper bound", tc, r.Rate)
			}
		} else if r.FailRate <= tc.capacity || r.FailRate-r.Rate > tc.res {
			t.Errorf("%+v: interval [%d, %d) does not hold the capacity within the resolution", tc, r.Rate, r.FailRate)
		}
		if r.Trials != len(p.trials) || r.Trials != len(r.Steps) || len(steps) != r.Trials || r.Trials > c.MaxTrials() {
			t.Errorf("%+v: %d trials run, %d in the result, %d steps, %d reported; at most %d", tc, len(p.trials), r.Trials, len(r.Steps), len(steps), c.MaxTrials())
		}
		checkSteps(t, steps, c)
	}
}

// checkSteps checks that the reported steps tell the search as it went:
// numbered, verdicts matching the losses, the interval as it narrowed.
func checkSteps(t *testing.T, steps []Step, c Config) {
	t.Helper()
	var pass, fail uint64
	for i, s := range steps {
		if s.N != i+1 || s.Rate < c.Lower || s.Rate > c.Upper {
			t.Errorf("step %d: %+v", i, s)
		}
		if s.Pass != (!s.Short && Passes(s.Sent, s.Lost, c.LossLimit)) {
			t.Errorf("step %d: pass %v with %d of %d lost (short %v)", i, s.Pass, s.Lost, s.Sent, s.Short)
		}
		// A repeat follows a failed trial at the same rate.
		if s.Repeat > 0 && (i == 0 || steps[i-1].Rate != s.Rate || steps[i-1].Pass || steps[i-1].Repeat != s.Repeat-1) {
			t.Errorf("step %d: repeat %d of %+v", i, s.Repeat, steps[max(i-1, 0)])
		}
		switch {
		case s.Pass:
			pass = s.Rate
		case s.Repeat == c.Repeats: // a failure to be repeated is not the rate's verdict
			fail = s.Rate
		}
		if s.PassRate != pass || s.FailRate != fail {
			t.Errorf("step %d: interval [%d, %d), want [%d, %d)", i, s.PassRate, s.FailRate, pass, fail)
		}
	}
}

// TestSearchTrialBound drives the search to every possible place of the
// capacity in small ranges: it never takes more than MaxTrials, and some
// place takes that many.
func TestSearchTrialBound(t *testing.T) {
	for lower := uint64(1); lower < 6; lower++ {
		for upper := lower; upper < 70; upper++ {
			for res := uint64(1); res < 5; res++ {
				c := Config{Lower: lower, Upper: upper, Resolution: res}
				most := 0
				for capacity := lower - 1; capacity <= upper; capacity++ {
					r, err := Search(&path{capacity: capacity}, c, nil)
					if capacity < lower {
						if !errors.Is(err, ErrLossAtLower) {
							t.Fatalf("%+v capacity %d: err %v, want ErrLossAtLower", c, capacity, err)
						}
					} else if err != nil || r.Rate > capacity || (r.FailRate != 0 && r.FailRate-r.Rate > res) {
						t.Fatalf("%+v capacity %d: %+v, %v", c, capacity, r, err)
					}
					if r.Trials > c.MaxTrials() {
						t.Fatalf("%+v capacity %d: %d trials, more than %d", c, capacity, r.Trials, c.MaxTrials())
					}
					most = max(most, r.Trials)
				}
				if most != c.MaxTrials() {
					t.Fatalf("%+v: at most %d trials for any capacity, MaxTrials says %d", c, most, c.MaxTrials())
				}
			}
		}
	}
}

// flaky fails the first trial at every rate (it loses a frame) and then
// behaves as p: a host that disturbs every trial it can.
type flaky struct {
	p    *path
	seen map[uint64]bool
}

func (f *flaky) Trial(rate uint64) (Outcome, error) {
	o, err := f.p.Trial(rate)
	if !f.seen[rate] {
		f.seen[rate] = true
		o.Lost = max(o.Lost, 1)
	}
	return o, err
}

// TestSearchRepeatsBound: with Repeats, a path that fails every rate's
// first trial takes the most trials MaxTrials allows for some capacity,
// never more, and still finds the capacity; every rate that passed is
// marginal.
func TestSearchRepeatsBound(t *testing.T) {
	for upper := uint64(1); upper < 70; upper++ {
		for res := uint64(1); res < 5; res++ {
			c := Config{Lower: 1, Upper: upper, Resolution: res, Repeats: 1}
			most := 0
			for capacity := uint64(1); capacity <= upper; capacity++ {
				var steps []Step
				r, err := Search(&flaky{p: &path{capacity: capacity}, seen: map[uint64]bool{}}, c, func(s Step) { steps = append(steps, s) })
				if err != nil || r.Rate > capacity || (r.FailRate != 0 && r.FailRate-r.Rate > res) || r.Trials > c.MaxTrials() {
					t.Fatalf("%+v capacity %d: %+v, %v (at most %d trials)", c, capacity, r, err, c.MaxTrials())
				}
				passed := 0
				for _, s := range steps {
					if s.Pass {
						passed++
					}
				}
				if len(r.Marginal) != passed {
					t.Fatalf("%+v capacity %d: %d rates passed, marginal %v", c, capacity, passed, r.Marginal)
				}
				checkSteps(t, steps, c)
				most = max(most, r.Trials)
			}
			if most != c.MaxTrials() {
				t.Fatalf("%+v: at most %d trials for any capacity, MaxTrials says %d", c, most, c.MaxTrials())
			}
		}
	}
}

// TestSearchOneBadTrial: a single trial that loses frames at a rate the
// path carries (trial k, for every k the search can reach) does not end
// the search lower than the capacity by more than the resolution when it
// is repeated: its rate is reported as marginal. Without the repeat some
// k does send it lower, which is what the repeat is for.
func TestSearchOneBadTrial(t *testing.T) {
	for _, tc := range []struct{ capacity, lower, upper, res uint64 }{
		{200_000, 4000, 1_500_000, 30_000},
		{1_234_567, 1000, 10_000_000, 1000},
		{550_000, 11_000, 12_000_000, 120_000},
	} {
		lowered := false
		for _, repeats := range []int{1, 0} {
			c := Config{Lower: tc.lower, Upper: tc.upper, Resolution: tc.res, Repeats: repeats}
			for k := 1; k <= c.MaxTrials(); k++ {
				n, badRate := 0, uint64(0)
				trial := TrialFunc(func(rate uint64) (Outcome, error) {
					o, _ := (&path{capacity: tc.capacity}).Trial(rate)
					if n++; n == k && o.Lost == 0 {
						o.Lost, badRate = 3, rate
					}
					return o, nil
				})
				var steps []Step
				r, err := Search(trial, c, func(s Step) { steps = append(steps, s) })
				if err != nil || r.Rate > tc.capacity {
					t.Fatalf("%+v repeats %d, bad trial %d: %+v, %v", tc, repeats, k, r, err)
				}
				checkSteps(t, steps, c)
				low := r.Rate+tc.res < tc.capacity
				if repeats == 0 {
					lowered = lowered || low
					continue
				}
				if low {
					t.Errorf("%+v: bad trial %d at %d pps: the search ended at %d pps, more than the resolution below the capacity", tc, k, badRate, r.Rate)
				}
				if badRate != 0 && (len(r.Marginal) != 1 || r.Marginal[0] != badRate) {
					t.Errorf("%+v: bad trial %d at %d pps: marginal %v, want that rate", tc, k, badRate, r.Marginal)
				}
			}
		}
		if !lowered {
			t.Errorf("%+v: without repeats no bad trial sent the search lower: the case tests nothing", tc)
		}
	}
}

func TestSearchNoisyPath(t *testing.T) {
	const capacity, noise, res = 2_000_000, 50_000, 10_000
	for seed := range uint64(50) {
		p := &path{capacity: capacity, noise: noise, r: rand.New(rand.NewPCG(seed, 7))}
		c := Config{Lower: 10_000, Upper: 10_000_000, Resolution: res}
		var steps []Step
		r, err := Search(p, c, func(s Step) { steps = append(steps, s) })
		if err != nil {
			t.Fatal(err)
		}
		// The answer passed once, so it is within the noise of the
		// capacity; it can be below by the noise and the resolution.
		if r.Rate > capacity+noise || r.Rate+noise+res < capacity {
			t.Errorf("seed %d: rate %d, capacity %d +- %d", seed, r.Rate, capacity, noise)
		}
		checkSteps(t, steps, c)
	}
}

func TestSearchPDR(t *testing.T) {
	// The path loses 1% of everything above 1 Mpps, and everything above
	// 3 Mpps: a PDR at 1% is 3 Mpps, the NDR 1 Mpps.
	lossy := TrialFunc(func(rate uint64) (Outcome, error) {
		switch {
		case rate <= 1_000_000:
			return Outcome{Sent: rate}, nil
		case rate <= 3_000_000:
			return Outcome{Sent: rate, Lost: rate / 100}, nil
		}
		return Outcome{Sent: rate, Lost: rate / 100 * 2}, nil
	})
	c := Config{Lower: 1000, Upper: 10_000_000, Resolution: 1000}
	ndr, err := Search(lossy, c, nil)
	if err != nil || ndr.Rate > 1_000_000 || ndr.Rate+1000 < 1_000_000 {
		t.Errorf("NDR %d, %v; want 1 Mpps within 1000", ndr.Rate, err)
	}
	c.LossLimit = 0.01
	c.Lower = ndr.Rate // a PDR is never below the NDR
	pdr, err := Search(lossy, c, nil)
	if err != nil || pdr.Rate > 3_000_000 || pdr.Rate+1000 < 3_000_000 || pdr.LossLimit != 0.01 {
		t.Errorf("PDR %d, %v; want 3 Mpps within 1000", pdr.Rate, err)
	}
}

// TestSearchShortGenerator: a generator that cannot offer more than
// ceiling pps makes every trial above it short, which fails even without
// loss: the answer is the lower of the path's capacity and the ceiling,
// and no short trial passes.
func TestSearchShortGenerator(t *testing.T) {
	for _, tc := range []struct{ capacity, ceiling, want uint64 }{
		{5_000_000, 3_000_000, 3_000_000}, // the generator is the limit
		{2_000_000, 3_000_000, 2_000_000}, // the path is
	} {
		trial := TrialFunc(func(rate uint64) (Outcome, error) {
			o := Outcome{Sent: min(rate, tc.ceiling)}
			o.Short = rate > tc.ceiling
			if o.Sent > tc.capacity {
				o.Lost = o.Sent - tc.capacity
			}
			return o, nil
		})
		c := Config{Lower: 10_000, Upper: 10_000_000, Resolution: 1000}
		var steps []Step
		r, err := Search(trial, c, func(s Step) { steps = append(steps, s) })
		if err != nil || r.Rate > tc.want || r.Rate+c.Resolution < tc.want {
			t.Errorf("%+v: rate %d, %v; want %d within %d", tc, r.Rate, err, tc.want, c.Resolution)
		}
		for _, s := range steps {
			if s.Short && s.Pass {
				t.Errorf("%+v: short step passed: %+v", tc, s)
			}
		}
		checkSteps(t, steps, c)
	}
}

// TestSearchShortAtLower: a generator that cannot offer even the lower
// bound fails every trial without loss; the error says the generator fell
// short, not that the path lost frames. A path that loses at the lower
// bound says that.
func TestSearchShortAtLower(t *testing.T) {
	c := Config{Lower: 10_000, Upper: 1_000_000, Resolution: 10_000}
	short := TrialFunc(func(rate uint64) (Outcome, error) {
		return Outcome{Sent: min(rate, 5_000), Short: true}, nil
	})
	_, err := Search(short, c, nil)
	if !errors.Is(err, ErrShortAtLower) || !errors.Is(err, ErrLossAtLower) {
		t.Fatalf("short generator: %v, want ErrShortAtLower and ErrLossAtLower", err)
	}
	if want := "was not offered even the lower bound's rate in full (10000 pps"; !strings.Contains(err.Error(), want) {
		t.Errorf("short generator: %q, want it to contain %q", err, want)
	}
	lossy := TrialFunc(func(rate uint64) (Outcome, error) {
		return Outcome{Sent: rate, Lost: 1}, nil
	})
	_, err = Search(lossy, c, nil)
	if !errors.Is(err, ErrLossAtLower) || errors.Is(err, ErrShortAtLower) {
		t.Fatalf("lossy path: %v, want ErrLossAtLower only", err)
	}
	// Short and losing more than the limit: the loss is what is reported.
	both := TrialFunc(func(rate uint64) (Outcome, error) {
		return Outcome{Sent: rate / 2, Lost: 3, Short: true}, nil
	})
	if _, err = Search(both, c, nil); errors.Is(err, ErrShortAtLower) {
		t.Fatalf("short and lossy: %v, want loss reported", err)
	}
}

func TestPassesAtTheLimit(t *testing.T) {
	for _, tc := range []struct {
		sent, lost uint64
		limit      float64
		want       bool
	}{
		{1000, 0, 0, true},
		{1000, 1, 0, false},
		{1000, 5, 0.005, true}, // 0.005*1000 is not exactly 5 in binary
		{1000, 6, 0.005, false},
		{1_000_000_000, 100_000, 0.0001, true},
		{1_000_000_000, 100_001, 0.0001, false},
		{3, 1, 1.0 / 3, true},
	} {
		if got := Passes(tc.sent, tc.lost, tc.limit); got != tc.want {
			t.Errorf("Passes(%d, %d, %v) = %v", tc.sent, tc.lost, tc.limit, got)
		}
	}
}

func TestSearchErrors(t *testing.T) {
	for _, tc := range []struct {
		c   Config
		msg string
	}{
		{Config{Lower: 0, Upper: 10, Resolution: 1}, "lower bound is 0"},
		{Config{Lower: 10, Upper: 5, Resolution: 1}, "below the lower bound"},
		{Config{Lower: 1, Upper: 5, Resolution: 0}, "resolution is 0"},
		{Config{Lower: 1, Upper: 5, Resolution: 1, LossLimit: 1}, "outside [0, 1)"},
		{Config{Lower: 1, Upper: 5, Resolution: 1, LossLimit: -0.1}, "outside [0, 1)"},
		{Config{Lower: 1, Upper: 5, Resolution: 1, Repeats: -1}, "repeats"},
	} {
		called := false
		_, err := Search(TrialFunc(func(uint64) (Outcome, error) { called = true; return Outcome{Sent: 1}, nil }), tc.c, nil)
		if err == nil || !strings.Contains(err.Error(), tc.msg) || called {
			t.Errorf("%+v: err %v (trial run: %v), want %q before any trial", tc.c, err, called, tc.msg)
		}
	}

	c := Config{Lower: 1000, Upper: 100_000, Resolution: 100}
	boom := errors.New("generator fell short")
	n := 0
	r, err := Search(TrialFunc(func(rate uint64) (Outcome, error) {
		if n++; n == 3 {
			return Outcome{}, boom
		}
		return Outcome{Sent: rate, Lost: rate / 2}, nil
	}), c, nil)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "trial 3 at") || r.Trials != 2 {
		t.Errorf("failing trial: %v, %d trials in the result", err, r.Trials)
	}
	for _, bad := range []TrialFunc{
		func(uint64) (Outcome, error) { return Outcome{}, nil },
		func(uint64) (Outcome, error) { return Outcome{Sent: 5, Lost: 6}, nil },
	} {
		if _, err := Search(bad, c, nil); err == nil {
			t.Error("a trial that sent nothing or lost more than it sent: no error")
		}
	}
}
