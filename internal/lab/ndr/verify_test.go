package ndr

import (
	"strings"
	"testing"
)

// TestVerifyCatchesPlantedAnswer: an answer planted 5% above the path's
// capacity fails its verification in every trial, and Verify steps down
// by the resolution to the first rate at or below the capacity, saying how
// many steps it took.
func TestVerifyCatchesPlantedAnswer(t *testing.T) {
	const capacity, res = 200_000, 2000
	p := &path{capacity: capacity}
	c := VerifyConfig{Rate: capacity * 105 / 100, Trials: 3, Step: res, MaxSteps: 10, Lower: res}
	var seen []Step
	v, err := Verify(p, c, func(_ Round, s Step) { seen = append(seen, s) })
	if err != nil {
		t.Fatal(err)
	}
	if v.Rate != capacity || v.StepsDown != 5 || len(v.Rounds) != 6 {
		t.Fatalf("verified %d pps after %d steps in %d rounds; want %d after 5 steps in 6", v.Rate, v.StepsDown, len(v.Rounds), capacity)
	}
	if r := v.Rounds[0]; r.Rate != c.Rate || r.Held != 0 || len(r.Trials) != 3 || r.Pass() {
		t.Errorf("the planted answer's round: %+v, want 0 of 3 held", r)
	}
	if last := v.Rounds[5]; !last.Pass() || last.Held != 3 {
		t.Errorf("the last round: %+v, want 3 of 3 held", last)
	}
	if len(seen) != 18 || len(p.trials) != 18 {
		t.Errorf("%d trials reported, %d run; want every trial of 6 rounds of 3", len(seen), len(p.trials))
	}
	want := "held 3 of 3 at 0.200 Mpps, 5 steps below the search's 0.210; 0.202 lost 0.99% in 3 of 3"
	if got := Confidence(Result{}, v); got != want {
		t.Errorf("Confidence:\n got %s\nwant %s", got, want)
	}

	// The bound: two steps are not enough, and no rate is verified.
	c.MaxSteps = 2
	v, err = Verify(&path{capacity: capacity}, c, nil)
	if err != nil || v.Rate != 0 || v.StepsDown != 2 || len(v.Rounds) != 3 {
		t.Errorf("MaxSteps 2: %+v, %v; want no rate after 2 steps in 3 rounds", v, err)
	}
	if got := Confidence(Result{}, v); !strings.HasPrefix(got, "held at no rate from 0.210 down to 0.206 Mpps (2 steps down); 0.206 lost") {
		t.Errorf("Confidence: %s", got)
	}
	// The lower bound stops it too.
	c.MaxSteps, c.Lower = 10, capacity+3*res
	if v, err := Verify(&path{capacity: capacity}, c, nil); err != nil || v.Rate != 0 || v.Rounds[len(v.Rounds)-1].Rate < c.Lower {
		t.Errorf("lower bound %d: %+v, %v", c.Lower, v, err)
	}
}

// TestVerifyOneFailure: a single failing trial among three at the answer
// is enough to step down; the rate below holds and the spread is said.
func TestVerifyOneFailure(t *testing.T) {
	n := 0
	trial := TrialFunc(func(rate uint64) (Outcome, error) {
		n++
		if n == 2 {
			return Outcome{Sent: rate, Lost: rate / 250}, nil // 0.4%
		}
		return Outcome{Sent: rate}, nil
	})
	search := Result{Rate: 610_000, FailRate: 620_000, Steps: []Step{
		{N: 1, Rate: 1_000_000, Sent: 1_000_000, Lost: 5000}, {N: 2, Rate: 610_000, Sent: 610_000, Pass: true}, {N: 3, Rate: 620_000, Sent: 620_000, Lost: 2},
	}}
	v, err := Verify(trial, VerifyConfig{Rate: 610_000, Trials: 3, Step: 60_000, MaxSteps: 3, Lower: 10_000}, nil)
	if err != nil || v.Rate != 550_000 || v.StepsDown != 1 {
		t.Fatalf("%+v, %v; want 550000 after a step", v, err)
	}
	if r := v.Rounds[0]; r.Held != 2 || r.Trials[1].Pass || r.Trials[1].Lost != 2440 {
		t.Errorf("first round %+v: want the second trial failed, 2 of 3 held", r)
	}
	want := "held 3 of 3 at 0.550 Mpps, 1 step below the search's 0.610; 0.610 lost 0.4% in 1 of 4"
	if got := Confidence(search, v); got != want {
		t.Errorf("Confidence:\n got %s\nwant %s", got, want)
	}

	// The answer holds: the rate above it that failed is the search's.
	v, err = Verify(TrialFunc(func(rate uint64) (Outcome, error) { return Outcome{Sent: rate}, nil }),
		VerifyConfig{Rate: 610_000, Trials: 3, Step: 60_000, Lower: 10_000}, nil)
	if err != nil || v.Rate != 610_000 || v.StepsDown != 0 {
		t.Fatalf("%+v, %v", v, err)
	}
	if got, want := Confidence(search, v), "held 3 of 3 at 0.610 Mpps; 0.620 lost 0.00032% in 1 of 1"; got != want {
		t.Errorf("Confidence:\n got %s\nwant %s", got, want)
	}
	// A short trial says so.
	search.Steps[2] = Step{N: 3, Rate: 620_000, Sent: 600_000, Short: true}
	if got, want := Confidence(search, v), "held 3 of 3 at 0.610 Mpps; 0.620 was not offered in full in 1 of 1"; got != want {
		t.Errorf("Confidence:\n got %s\nwant %s", got, want)
	}
}

func TestVerifyRefuses(t *testing.T) {
	ok := VerifyConfig{Rate: 1000, Trials: 3, Step: 10, Lower: 10}
	for _, tc := range []struct {
		mod  func(*VerifyConfig)
		want string
	}{
		{func(c *VerifyConfig) { c.Rate = 0 }, "rate of 0"},
		{func(c *VerifyConfig) { c.Trials = 0 }, "0 verification trials"},
		{func(c *VerifyConfig) { c.Step = 0 }, "step of 0"},
		{func(c *VerifyConfig) { c.MaxSteps = -1 }, "steps down"},
		{func(c *VerifyConfig) { c.Lower = 0 }, "lower bound"},
		{func(c *VerifyConfig) { c.LossLimit = 1 }, "loss limit"},
	} {
		c := ok
		tc.mod(&c)
		called := false
		_, err := Verify(TrialFunc(func(uint64) (Outcome, error) { called = true; return Outcome{Sent: 1}, nil }), c, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || called {
			t.Errorf("%+v: %v (trial run: %v), want %q before any trial", c, err, called, tc.want)
		}
	}
	_, err := Verify(TrialFunc(func(uint64) (Outcome, error) { return Outcome{}, nil }), ok, nil)
	if err == nil || !strings.Contains(err.Error(), "sent no frame") {
		t.Errorf("a trial that sent nothing: %v", err)
	}
}

func TestPct(t *testing.T) {
	for _, tc := range []struct {
		lost, sent uint64
		want       string
	}{
		{4, 1000, "0.4"}, {372, 1_638_065, "0.023"}, {12, 100, "12"}, {1, 1, "100"}, {0, 5, "0"}, {1, 10_000_000, "0.00001"}, {15, 1000, "1.5"},
	} {
		if got := pct(tc.lost, tc.sent); got != tc.want {
			t.Errorf("pct(%d, %d) = %s, want %s", tc.lost, tc.sent, got, tc.want)
		}
	}
}
