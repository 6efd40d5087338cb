package ndr

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// VerifyConfig says how Verify checks an answer.
type VerifyConfig struct {
	// Rate is the answer to verify, in frames per second (> 0).
	Rate uint64
	// Trials is the trials at each rate verified (>= 1).
	Trials int
	// Step is how far below a rate that failed verification the next one
	// is (>= 1): the search's resolution.
	Step uint64
	// MaxSteps bounds the steps down (>= 0).
	MaxSteps int
	// Lower is the lowest rate that may be verified (>= 1): the search's
	// lower bound.
	Lower uint64
	// LossLimit is the search's: each trial must be within it.
	LossLimit float64
}

func (c VerifyConfig) validate() error {
	switch {
	case c.Rate == 0:
		return errors.New("ndr: verify a rate of 0 pps: give the search's answer")
	case c.Trials < 1:
		return fmt.Errorf("ndr: %d verification trials: give at least 1", c.Trials)
	case c.Step == 0:
		return errors.New("ndr: a verification step of 0 pps: give the resolution, at least 1")
	case c.MaxSteps < 0:
		return fmt.Errorf("ndr: at most %d steps down: give 0 or more", c.MaxSteps)
	case c.Lower == 0:
		return errors.New("ndr: the lower bound is 0 pps: give a positive rate")
	case !(c.LossLimit >= 0 && c.LossLimit < 1):
		return fmt.Errorf("ndr: loss limit %v is outside [0, 1)", c.LossLimit)
	}
	return nil
}

// Round is the verification trials at one rate.
type Round struct {
	Rate uint64
	// Trials are the round's trials, numbered from 1 within it (Step.N);
	// PassRate and FailRate are left 0.
	Trials []Step
	// Held is the number of trials that passed.
	Held int
}

// Pass tells whether every trial of the round passed.
func (r Round) Pass() bool { return r.Held == len(r.Trials) }

// Verification is the outcome of Verify.
type Verification struct {
	// Rate is the highest rate at which every trial passed: the answer
	// or a lower rate; 0 if no rate held within MaxSteps.
	Rate uint64
	// StepsDown is how many steps below the answer Rate is (or, when no
	// rate held, how many were taken).
	StepsDown int
	// Rounds are the rates verified, from the answer down.
	Rounds []Round
}

// Verify runs c.Trials trials at c.Rate; if any fails, it steps c.Step
// lower and runs them again there, until a round passes in full, c.MaxSteps
// steps were taken, or the next rate would be below c.Lower. Every trial of
// a round runs even after one failed: the spread is part of the answer. On
// an error from a trial it returns what it has with the error.
func Verify(t Trial, c VerifyConfig, step func(Round, Step)) (Verification, error) {
	if err := c.validate(); err != nil {
		return Verification{}, err
	}
	var v Verification
	for rate := c.Rate; ; rate -= c.Step {
		r := Round{Rate: rate}
		for i := range c.Trials {
			o, err := run(t, rate, i+1)
			if err != nil {
				v.Rounds = append(v.Rounds, r)
				return v, fmt.Errorf("verify: %w", err)
			}
			s := Step{N: i + 1, Rate: rate, Sent: o.Sent, Lost: o.Lost, Short: o.Short, Pass: !o.Short && Passes(o.Sent, o.Lost, c.LossLimit)}
			if s.Pass {
				r.Held++
			}
			r.Trials = append(r.Trials, s)
			if step != nil {
				step(r, s)
			}
		}
		v.Rounds = append(v.Rounds, r)
		if r.Pass() {
			v.Rate = rate
			return v, nil
		}
		if v.StepsDown == c.MaxSteps || rate < c.Lower+c.Step {
			return v, nil
		}
		v.StepsDown++
	}
}

// Confidence says in words how well a search's answer holds: "held 3 of 3
// at 0.550 Mpps; 0.561 lost 0.02% in 1 of 3". The second part is the
// lowest rate above the verified one that any trial failed at, from the
// search or the verification, with the share of its trials that failed
// and what they lost.
func Confidence(res Result, v Verification) string {
	var parts []string
	if v.Rate != 0 {
		last := v.Rounds[len(v.Rounds)-1]
		s := fmt.Sprintf("held %d of %d at %s Mpps", last.Held, len(last.Trials), mpps(v.Rate))
		if v.StepsDown > 0 {
			s += fmt.Sprintf(", %d %s below the search's %s", v.StepsDown, plural(v.StepsDown, "step"), mpps(v.Rounds[0].Rate))
		}
		parts = append(parts, s)
	} else if len(v.Rounds) > 0 {
		parts = append(parts, fmt.Sprintf("held at no rate from %s down to %s Mpps (%d %s down)",
			mpps(v.Rounds[0].Rate), mpps(v.Rounds[len(v.Rounds)-1].Rate), v.StepsDown, plural(v.StepsDown, "step")))
	}
	// Every trial at or above the verified rate, by rate.
	byRate := map[uint64][]Step{}
	for _, s := range res.Steps {
		byRate[s.Rate] = append(byRate[s.Rate], s)
	}
	for _, r := range v.Rounds {
		byRate[r.Rate] = append(byRate[r.Rate], r.Trials...)
	}
	var above uint64
	for rate, steps := range byRate {
		if rate < v.Rate || (rate == v.Rate && v.Rate != 0) {
			continue
		}
		for _, s := range steps {
			if !s.Pass && (above == 0 || rate < above) {
				above = rate
			}
		}
	}
	if above != 0 {
		steps := byRate[above]
		var failed, short int
		var sent, lost uint64
		for _, s := range steps {
			if s.Pass {
				continue
			}
			failed++
			if s.Short {
				short++
			}
			sent, lost = sent+s.Sent, lost+s.Lost
		}
		what := fmt.Sprintf("lost %s%%", pct(lost, sent))
		if lost == 0 {
			what = "was not offered in full"
		} else if short > 0 {
			what += fmt.Sprintf(" (not offered in full in %d)", short)
		}
		parts = append(parts, fmt.Sprintf("%s %s in %d of %d", mpps(above), what, failed, len(steps)))
	}
	return strings.Join(parts, "; ")
}

func mpps(pps uint64) string { return fmt.Sprintf("%.3f", float64(pps)/1e6) }

// pct is lost/sent in percent with two significant digits, never in
// exponent form and without trailing zeros: "0.4", "0.023", "12".
func pct(lost, sent uint64) string {
	if sent == 0 || lost == 0 {
		return "0"
	}
	p := 100 * float64(lost) / float64(sent)
	decimals := max(0, 1-int(math.Floor(math.Log10(p))))
	s := strconv.FormatFloat(p, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
