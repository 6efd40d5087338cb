//go:build linux

package compare

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	labenv "github.com/xdpeng/xdpeng/internal/lab/env"
	"github.com/xdpeng/xdpeng/internal/lab/ndr"
)

// NDRConfig asks compare for the highest rate each path carries without
// loss (the throughput of RFC 2544, NDR) and, with LossPct, the highest at
// which it loses at most that share (PDR). After the full-load trial that
// gives a row its Mpps, a binary search (package ndr) runs trials of Trial
// each between Resolution and the path's full-load rate, on the path as it
// is set up, and counts every trial's loss exactly as a row's (sent =
// received + every counted drop, after the counters came to rest). A
// trial whose generator could not keep the rate fails, whatever it lost:
// its threads fell behind their pacing and skipped more than 1% of the
// frames the rate asks for (gen.Stats.Skipped), so the path was not shown
// to carry the rate. A trial that fails is run once more at its rate; if
// the repeat passes, the rate passes and is reported as marginal. Then
// Verify trials run at the rate found: it stands only if every one passes
// (loses nothing; for the PDR, no more than LossPct); if one fails, the
// rate one resolution lower is verified, up to maxStepsDown steps. Last,
// for the NDR, one trial 10% above the verified rate shows what lies
// beyond it.
type NDRConfig struct {
	// Trial is the length of each trial, at least 500 ms.
	Trial time.Duration
	// Resolution ends a search once the highest passing and the lowest
	// failing rate are this share of the upper bound apart: (0, 0.5].
	Resolution float64
	// LossPct, if above 0, adds a PDR search that lets a trial lose this
	// percentage of its frames, below 100.
	LossPct float64
	// Verify is the number of trials at the answer, 1..MaxVerify; 0 means
	// DefaultVerify.
	Verify int
}

// DefaultNDR is the search compare --ndr runs by default.
var DefaultNDR = NDRConfig{Trial: time.Second, Resolution: 0.01, Verify: DefaultVerify}

// Verification trials: how many by default and at most.
const (
	DefaultVerify = 3
	MaxVerify     = 100
)

// maxStepsDown bounds the steps of one resolution below the search's
// answer that verification takes before it gives up.
const maxStepsDown = 5

// searchRepeats is how many times a failing search trial is repeated.
const searchRepeats = 1

func (c *NDRConfig) verifyTrials() int {
	if c.Verify == 0 {
		return DefaultVerify
	}
	return c.Verify
}

// checkAbove is how far above the verified rate the last check trial runs.
const checkAbove = 0.10

// shortShare is the share of the frames a trial's rate asks for that its
// generator may skip (gen.Stats.Skipped) and still count as offering the
// rate: a rate within 1% of the one asked.
const shortShare = 0.01

func (c *NDRConfig) check() error {
	switch {
	case c.Trial < 500*time.Millisecond:
		return fmt.Errorf("trial length %v is too short: use at least 500ms", c.Trial)
	case !(c.Resolution > 0 && c.Resolution <= 0.5):
		return fmt.Errorf("resolution %v%% of the upper bound: use more than 0 and at most 50", c.Resolution*100)
	case !(c.LossPct >= 0 && c.LossPct < 100):
		return fmt.Errorf("loss limit %v%%: use at least 0 and less than 100", c.LossPct)
	case c.Verify < 0 || c.Verify > MaxVerify:
		return fmt.Errorf("%d verification trials: use 1 to %d", c.Verify, MaxVerify)
	}
	return nil
}

// Search is one rate search of a path, as rows carry it.
type Search struct {
	// LossPct is the loss a trial may have and pass: 0 for NDR.
	LossPct float64 `json:"loss_pct"`
	// LowerPPS and UpperPPS bound the rates tried; UpperPPS is the rate
	// the path carried at full load (its Mpps, per copy).
	LowerPPS      uint64  `json:"lower_pps"`
	UpperPPS      uint64  `json:"upper_pps"`
	ResolutionPPS uint64  `json:"resolution_pps"`
	TrialS        float64 `json:"trial_s"`
	// RatePPS is the highest rate a trial passed at (0 if none did);
	// FailPPS the lowest it failed at (0 if none did): the limit lies in
	// between.
	RatePPS uint64 `json:"rate_pps"`
	FailPPS uint64 `json:"fail_pps"`
	// Limit says what failed at FailPPS: "loss" (the path lost frames),
	// "generator" (the rate could not be offered in full), or "" when
	// the upper bound passed.
	Limit string  `json:"limit"`
	Steps []Trial `json:"steps"`
	// MarginalPPS are the rates whose first trial failed and whose repeat
	// passed.
	MarginalPPS []uint64 `json:"marginal_pps,omitempty"`
	// VerifiedPPS is the highest rate at which every verification trial
	// passed: RatePPS, or StepsDown resolutions below it; 0 if none did
	// within maxStepsDown steps. The row's NDR (PDR) is this rate.
	VerifiedPPS uint64 `json:"verified_pps"`
	StepsDown   int    `json:"steps_down"`
	// Confidence says in words how the rate held: "held 3 of 3 at
	// 0.550 Mpps; 0.561 lost 0.02% in 1 of 3".
	Confidence string `json:"confidence,omitempty"`
	// Checks are the trials after the search: the verification trials
	// (Check "verify"), rate by rate from RatePPS down, and for the NDR
	// one 10% above VerifiedPPS (Check "above").
	Checks []Trial `json:"checks,omitempty"`
	// Error says why the search has no answer (even the lower bound
	// lost frames).
	Error string `json:"error,omitempty"`
}

// Trial is one trial of a search.
type Trial struct {
	N       int    `json:"n"`
	RatePPS uint64 `json:"rate_pps"`
	// OfferedPPS is the frames the generator sent over the trial's
	// length: a little under the rate even when it kept it, as its
	// threads start some milliseconds into the trial.
	OfferedPPS float64 `json:"offered_pps"`
	// Sent and Lost are frames, Sent times the path's copies.
	Sent    uint64            `json:"sent"`
	Lost    uint64            `json:"lost"`
	Reasons map[string]uint64 `json:"drop_reasons"`
	// Unexplained is lost frames no counter accounts for.
	Unexplained int64 `json:"unexplained"`
	// Skipped is the frames the generator owed the rate and did not send
	// (gen.Stats.Skipped); Short says they were more than 1% of Sent +
	// Skipped: the generator did not keep the rate.
	Skipped uint64 `json:"gen_skipped"`
	Short   bool   `json:"short"`
	Pass    bool   `json:"pass"`
	// Repeat says the trial repeats a failed one at its rate (a search
	// step).
	Repeat bool `json:"repeat,omitempty"`
	// Check is "verify" or "above" for a trial after the search, "" for a
	// search step.
	Check string `json:"check,omitempty"`
}

// LossPct is Lost as a percentage of Sent.
func (t Trial) LossPct() float64 {
	if t.Sent == 0 {
		return 0
	}
	return 100 * float64(t.Lost) / float64(t.Sent)
}

// rateTrialFunc runs one trial at rate pps with loss limit limit (a
// share); n numbers it in what it prints.
type rateTrialFunc func(ctx context.Context, cfg *Config, rate uint64, limit float64, n int) (Trial, error)

// searchRates runs the NDR (and PDR) search of cfg.NDR on the session's
// path, after the full-load trial that filled row, verifies the answers
// and adds the results to row. A search that finds no rate is not an
// error of the row (its Search says why); a trial that fails to run is.
func (s *session) searchRates(ctx context.Context, cfg *Config, row *Row) error {
	return s.searchRatesWith(ctx, cfg, row, s.rateTrial)
}

// searchRatesWith is searchRates with its trials run by trial.
func (s *session) searchRatesWith(ctx context.Context, cfg *Config, row *Row, trial rateTrialFunc) error {
	nc := cfg.NDR
	copies := uint64(max(row.Copies, 1))
	upper := uint64(row.Mpps * 1e6 / float64(copies))
	res := max(1, uint64(float64(upper)*nc.Resolution))
	lower := max(res, uint64(len(s.e.genCPUs)))
	if upper < lower {
		row.NDR = &Search{UpperPPS: upper, LowerPPS: lower, Error: fmt.Sprintf(
			"the path carried %d pps at full load, below the lowest rate searched (%d pps)", upper, lower)}
		return nil
	}
	run := func(label string, limit float64, from uint64) (*Search, error) {
		sr := &Search{LossPct: limit * 100, LowerPPS: from, UpperPPS: upper, ResolutionPPS: res, TrialS: nc.Trial.Seconds()}
		cfg.progress("%-20s %s search: trials of %v from %.3f to %.3f Mpps, resolution %.3f Mpps", s.info.Name, label, nc.Trial,
			float64(from)/1e6, float64(upper)/1e6, float64(res)/1e6)
		tr := ndr.TrialFunc(func(rate uint64) (ndr.Outcome, error) {
			t, err := trial(ctx, cfg, rate, limit, len(sr.Steps)+1)
			if err != nil {
				return ndr.Outcome{}, err
			}
			sr.Steps = append(sr.Steps, t)
			return ndr.Outcome{Sent: t.Sent, Lost: t.Lost, Short: t.Short}, nil
		})
		r, err := ndr.Search(tr, ndr.Config{Lower: from, Upper: upper, Resolution: res, LossLimit: limit, Repeats: searchRepeats}, func(st ndr.Step) {
			t := &sr.Steps[len(sr.Steps)-1]
			t.Repeat = st.Repeat > 0
			again := ""
			if t.Repeat {
				again = " (repeated)"
			}
			cfg.progress("%-20s %s trial %d%s: %s; now [%s, %s) Mpps", s.info.Name, label, st.N, again, trialText(*t),
				mppsText(st.PassRate), mppsText(st.FailRate))
		})
		sr.RatePPS, sr.FailPPS, sr.MarginalPPS = r.Rate, r.FailRate, r.Marginal
		for _, t := range sr.Steps {
			if r.FailRate != 0 && t.RatePPS == r.FailRate && !t.Pass {
				sr.Limit = "loss"
				if t.Short {
					sr.Limit = "generator"
				}
			}
		}
		if errors.Is(err, ndr.ErrLossAtLower) {
			sr.Error = err.Error()
			return sr, nil
		}
		if err != nil || sr.RatePPS == 0 {
			return sr, err
		}
		return sr, s.verify(ctx, cfg, label, sr, r, limit, trial)
	}

	nd, err := run("NDR", 0, lower)
	row.NDR = nd
	row.Trials += len(nd.Steps) + len(nd.Checks)
	if err != nil {
		return err
	}
	if nd.VerifiedPPS > 0 {
		v := round3(float64(nd.VerifiedPPS) / 1e6)
		row.NDRMpps = &v
		rate := uint64(math.Round(float64(nd.VerifiedPPS) * (1 + checkAbove)))
		t, err := trial(ctx, cfg, rate, 0, 1)
		if err != nil {
			return err
		}
		t.Check = "above"
		nd.Checks = append(nd.Checks, t)
		row.Trials++
		cfg.progress("%-20s NDR check %.0f%% above: %s", s.info.Name, checkAbove*100, trialText(t))
	}
	if nc.LossPct > 0 {
		// A rate that loses nothing passes any loss limit: the PDR is
		// never below the NDR.
		pd, err := run("PDR", nc.LossPct/100, max(lower, nd.VerifiedPPS))
		row.PDR = pd
		row.Trials += len(pd.Steps) + len(pd.Checks)
		if err != nil {
			return err
		}
		if pd.VerifiedPPS > 0 {
			v := round3(float64(pd.VerifiedPPS) / 1e6)
			row.PDRMpps = &v
		}
	}
	return nil
}

// verify runs the verification trials of sr's answer (the search r) and
// records them in sr: the verified rate, the steps down and the
// confidence.
func (s *session) verify(ctx context.Context, cfg *Config, label string, sr *Search, r ndr.Result, limit float64, trial rateTrialFunc) error {
	n := cfg.NDR.verifyTrials()
	cfg.progress("%-20s %s verify: %d trials at %.3f Mpps, each to lose %s", s.info.Name, label, n, float64(sr.RatePPS)/1e6, lossText(limit))
	tr := ndr.TrialFunc(func(rate uint64) (ndr.Outcome, error) {
		t, err := trial(ctx, cfg, rate, limit, len(sr.Checks)+1)
		if err != nil {
			return ndr.Outcome{}, err
		}
		t.Check = "verify"
		sr.Checks = append(sr.Checks, t)
		return ndr.Outcome{Sent: t.Sent, Lost: t.Lost, Short: t.Short}, nil
	})
	v, err := ndr.Verify(tr, ndr.VerifyConfig{Rate: sr.RatePPS, Trials: n, Step: sr.ResolutionPPS, MaxSteps: maxStepsDown,
		Lower: sr.LowerPPS, LossLimit: limit}, func(round ndr.Round, st ndr.Step) {
		t := sr.Checks[len(sr.Checks)-1]
		cfg.progress("%-20s %s verify %d/%d: %s", s.info.Name, label, st.N, n, trialText(t))
	})
	sr.VerifiedPPS, sr.StepsDown, sr.Confidence = v.Rate, v.StepsDown, ndr.Confidence(r, v)
	if err == nil {
		cfg.progress("%-20s %s: %s", s.info.Name, label, sr.Confidence)
	}
	return err
}

// lossText is a loss limit in words: "nothing", "at most 0.1%".
func lossText(limit float64) string {
	if limit == 0 {
		return "nothing"
	}
	return fmt.Sprintf("at most %g%%", limit*100)
}

// rateTrial offers rate pps for the configured trial length and counts the
// loss exactly; it passes if the generator kept the rate and the loss is
// within limit (a share of the frames sent).
func (s *session) rateTrial(ctx context.Context, cfg *Config, rate uint64, limit float64, n int) (Trial, error) {
	g := s.e.genConfig(s.info.Family, cfg)
	g.Rate, g.Duration = rate, cfg.NDR.Trial
	tr := newRow(s.info, labenv.Env{})
	tr.Copies = s.r.copies()
	gs, err := s.trial(ctx, &g, g.Duration, &tr)
	if err != nil {
		return Trial{}, err
	}
	copies := uint64(max(tr.Copies, 1))
	t := Trial{
		N: n, RatePPS: rate, Sent: tr.Sent * copies, Lost: tr.Dropped,
		OfferedPPS:  math.Round(float64(tr.Sent) / g.Duration.Seconds()),
		Skipped:     gs.Skipped,
		Reasons:     tr.Reasons,
		Unexplained: tr.Unexplained,
	}
	t.Short = float64(gs.Skipped) > shortShare*float64(gs.Sent+gs.Skipped)
	t.Pass = !t.Short && ndr.Passes(t.Sent, t.Lost, limit)
	return t, nil
}

// trialText is a trial in a line: "5.000 Mpps: sent 5000000, lost 0
// (0.0000%) -> pass", with the drop reasons of what was lost:
// "lost 372 (0.0227%: rx_queue_0_xdp_drops 372) -> fail".
func trialText(t Trial) string {
	verdict := "fail"
	if t.Pass {
		verdict = "pass"
	}
	s := fmt.Sprintf("%.3f Mpps: sent %d, lost %d (%.4f%%%s)", float64(t.RatePPS)/1e6, t.Sent, t.Lost, t.LossPct(), lostTo(t))
	if t.Short {
		s += fmt.Sprintf(", the generator fell behind (%.3f Mpps)", t.OfferedPPS/1e6)
	}
	return s + " -> " + verdict
}

// mppsText is a rate in Mpps, or "-" for 0 (none yet).
func mppsText(pps uint64) string {
	if pps == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", float64(pps)/1e6)
}
