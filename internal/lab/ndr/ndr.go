// Package ndr finds the highest rate a path carries without loss (NDR, the
// "throughput" of RFC 2544 section 26.1) or with at most a given share of
// its frames lost (PDR), by a binary search over trials of a fixed length.
//
// A trial offers frames at one rate for a fixed time and counts exactly how
// many were sent and how many were lost; how is the caller's (Trial). A
// trial that could not offer the rate (the generator fell short) fails
// whatever it lost: it did not show that the path carries that rate. The
// search first tries the upper bound; if that loses too much it halves the
// interval between the highest rate known to pass and the lowest known to
// fail until the two are at most Resolution apart, and if no rate passed on
// the way it tries the lower bound last. The answer is the highest rate a
// trial passed at: the path's true limit lies between it and the lowest
// failing rate (Result.Rate, Result.FailRate).
//
// A binary search assumes that a path which passes at a rate passes at
// every lower one. A noisy path breaks that: on a shared or virtual
// machine a trial that loses a few frames may say more about the host than
// about the path. Two things guard against it. In the search, a failing
// trial can be run again at its rate (Config.Repeats): a repeat that
// passes makes the rate pass, and the rate is reported as marginal
// (Result.Marginal), so that one bad trial does not send the search below
// the path's capacity. After the search, Verify runs several trials at the
// answer (RFC 2544 asks for repeated measurements): the answer stands only
// if every one passes; if one fails it steps down by the resolution and
// verifies again, up to a bound, and says how many steps it took.
// Confidence puts the spread in words: "held 3 of 3 at 0.550 Mpps; 0.561
// lost 0.02% in 1 of 3".
package ndr

import (
	"errors"
	"fmt"
)

// Outcome is what one trial found.
type Outcome struct {
	// Sent is the frames offered, Lost how many of them were lost.
	Sent, Lost uint64
	// Short says the trial offered fewer frames than the rate asks for
	// (the generator could not keep up): it fails, whatever it lost.
	Short bool
}

// Trial runs one trial at rate frames per second and reports how many
// frames were sent, how many of those were lost, and whether the rate
// was offered in full. An error ends the search.
type Trial interface {
	Trial(rate uint64) (Outcome, error)
}

// TrialFunc adapts a function to Trial.
type TrialFunc func(rate uint64) (Outcome, error)

// Trial calls f.
func (f TrialFunc) Trial(rate uint64) (Outcome, error) { return f(rate) }

// Config bounds a search.
type Config struct {
	// Lower and Upper bound the rates tried, in frames per second:
	// 0 < Lower <= Upper.
	Lower, Upper uint64
	// Resolution is when to stop: once the highest passing rate and the
	// lowest failing one are at most Resolution apart (>= 1).
	Resolution uint64
	// LossLimit is the share of sent frames a trial may lose and still
	// pass, in [0, 1): 0 for NDR, e.g. 0.005 for a PDR at 0.5%.
	LossLimit float64
	// Repeats is how many times a failing trial is run again at its rate
	// before the rate counts as failing (>= 0); a repeat that passes makes
	// the rate pass, and the rate marginal.
	Repeats int
}

// Validate checks c.
func (c Config) Validate() error {
	switch {
	case c.Lower == 0:
		return errors.New("ndr: the lower bound is 0 pps: give a positive rate")
	case c.Upper < c.Lower:
		return fmt.Errorf("ndr: the upper bound %d pps is below the lower bound %d pps", c.Upper, c.Lower)
	case c.Resolution == 0:
		return errors.New("ndr: the resolution is 0 pps: give at least 1")
	case !(c.LossLimit >= 0 && c.LossLimit < 1):
		return fmt.Errorf("ndr: loss limit %v is outside [0, 1)", c.LossLimit)
	case c.Repeats < 0:
		return fmt.Errorf("ndr: %d repeats of a failing trial: give 0 or more", c.Repeats)
	}
	return nil
}

// MaxTrials is the most trials a search under c can take: at each rate
// tried (the upper bound, the halvings, and the lower bound when no
// halving passed) one trial and, if it fails, up to Repeats more.
func (c Config) MaxTrials() int { return (1 + c.Repeats) * c.maxRates() }

// maxRates is the most rates a search under c can try.
func (c Config) maxRates() int {
	if c.Upper == c.Lower {
		return 1
	}
	// A passing trial leaves the upper half of the interval, rounded up;
	// a failing one the lower half, rounded down. Either every halving
	// passes (the most halvings, no trial at the lower bound) or none
	// does (fewer halvings, then the lower bound).
	halvings := func(next func(uint64) uint64) int {
		n := 0
		for span := c.Upper - c.Lower; span > c.Resolution; span = next(span) {
			n++
		}
		return n
	}
	allPass := 1 + halvings(func(s uint64) uint64 { return s - s/2 })
	allFail := 2 + halvings(func(s uint64) uint64 { return s / 2 })
	return max(allPass, allFail)
}

// Step is one trial of a search, as reported while it runs.
type Step struct {
	// N counts the trials of the search from 1.
	N          int
	Rate       uint64
	Sent, Lost uint64
	// Short says the rate was not offered in full (see Outcome).
	Short bool
	Pass  bool
	// Repeat counts the trials at this rate before this one, each of
	// which failed: 0 for the first.
	Repeat int
	// PassRate and FailRate are the interval after this trial: the
	// highest rate that passed so far (0 if none) and the lowest that
	// failed (0 if none). A failing trial that is to be repeated leaves
	// them as they were.
	PassRate, FailRate uint64
}

// LossRatio is Lost / Sent.
func (s Step) LossRatio() float64 {
	if s.Sent == 0 {
		return 0
	}
	return float64(s.Lost) / float64(s.Sent)
}

// Result is the outcome of a search.
type Result struct {
	// Rate is the highest rate a trial passed at.
	Rate uint64
	// FailRate is the lowest rate a trial failed at, 0 if none did (the
	// upper bound passed): the limit lies in [Rate, FailRate).
	FailRate uint64
	// LossLimit is the search's Config.LossLimit.
	LossLimit float64
	// Trials is the number of trials run, len(Steps).
	Trials int
	Steps  []Step
	// Marginal are the rates, in the order tried, whose first trial
	// failed and a repeat passed.
	Marginal []uint64
}

// ErrLossAtLower is returned (wrapped) when even the lower bound loses more
// than the limit, or is not offered in full (then the error also is
// ErrShortAtLower).
var ErrLossAtLower = errors.New("loses frames even at the lower bound")

// ErrShortAtLower is returned (wrapped, with ErrLossAtLower) when the lowest
// rate tried failed only because it was not offered in full (Outcome.Short)
// and lost no more than the limit: the generator, not the path, is what
// failed there.
var ErrShortAtLower = errors.New("was not offered even the lower bound's rate in full")

// Search runs trials through t as c says and returns the highest passing
// rate. step, if not nil, is called after each trial, so that the search
// can be shown as it goes. On an error from a trial, or when even the lower
// bound fails (ErrLossAtLower), it returns the result so far with the error.
func Search(t Trial, c Config, step func(Step)) (Result, error) {
	if err := c.Validate(); err != nil {
		return Result{}, err
	}
	res := Result{LossLimit: c.LossLimit}
	// shortOnly says the last rate that failed failed only by being short.
	shortOnly := false
	try := func(rate uint64) (bool, error) {
		for repeat := 0; ; repeat++ {
			o, err := run(t, rate, len(res.Steps)+1)
			if err != nil {
				return false, err
			}
			pass := !o.Short && Passes(o.Sent, o.Lost, c.LossLimit)
			final := pass || repeat == c.Repeats
			if final && pass {
				res.Rate = rate
			} else if final {
				res.FailRate = rate
				shortOnly = o.Short && Passes(o.Sent, o.Lost, c.LossLimit)
			}
			s := Step{N: len(res.Steps) + 1, Rate: rate, Sent: o.Sent, Lost: o.Lost, Short: o.Short, Pass: pass, Repeat: repeat,
				PassRate: res.Rate, FailRate: res.FailRate}
			res.Steps = append(res.Steps, s)
			res.Trials = len(res.Steps)
			if step != nil {
				step(s)
			}
			if pass && repeat > 0 {
				res.Marginal = append(res.Marginal, rate)
			}
			if final {
				return pass, nil
			}
		}
	}

	pass, err := try(c.Upper)
	if err != nil || pass {
		return res, err
	}
	lo, hi := c.Lower, c.Upper // hi failed; lo is not known to pass yet
	for hi-lo > c.Resolution {
		mid := lo + (hi-lo)/2
		pass, err := try(mid)
		if err != nil {
			return res, err
		}
		if pass {
			lo = mid
		} else {
			hi = mid
		}
	}
	if res.Rate != 0 {
		return res, nil
	}
	if lo < hi {
		if pass, err := try(lo); err != nil || pass {
			return res, err
		}
	}
	if shortOnly {
		return res, fmt.Errorf("ndr: the path %w (%d pps; it lost no more than the limit %v there): %w", ErrShortAtLower, res.FailRate, c.LossLimit, ErrLossAtLower)
	}
	return res, fmt.Errorf("ndr: the path %w (%d pps, loss limit %v)", ErrLossAtLower, c.Lower, c.LossLimit)
}

// run runs trial n at rate and checks what it says.
func run(t Trial, rate uint64, n int) (Outcome, error) {
	o, err := t.Trial(rate)
	switch {
	case err != nil:
		return o, fmt.Errorf("ndr: trial %d at %d pps: %w", n, rate, err)
	case o.Sent == 0:
		return o, fmt.Errorf("ndr: trial %d at %d pps sent no frame", n, rate)
	case o.Lost > o.Sent:
		return o, fmt.Errorf("ndr: trial %d at %d pps lost %d of %d frames: more than it sent", n, rate, o.Lost, o.Sent)
	}
	return o, nil
}

// Passes tells whether losing lost of sent frames is within limit (a
// share), exactly for limit 0 (no frame may be lost).
func Passes(sent, lost uint64, limit float64) bool {
	if lost == 0 {
		return true
	}
	if limit == 0 {
		return false
	}
	// lost <= limit*sent, with room for the rounding of the product
	// (0.005*1000 need not come out as 5 exactly); lost is a whole
	// number, so the room admits no extra frame.
	allowed := limit * float64(sent)
	return float64(lost) <= allowed+allowed*1e-12+1e-9
}
