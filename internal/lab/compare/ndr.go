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
// to carry the rate. Then two checks run: a trial at the rate found, and
// one 10% above it.
type NDRConfig struct {
	// Trial is the length of each trial, at least 500 ms.
	Trial time.Duration
	// Resolution ends a search once the highest passing and the lowest
	// failing rate are this share of the upper bound apart: (0, 0.5].
	Resolution float64
	// LossPct, if above 0, adds a PDR search that lets a trial lose this
	// percentage of its frames, below 100.
	LossPct float64
}

// DefaultNDR is the search compare --ndr runs by default.
var DefaultNDR = NDRConfig{Trial: time.Second, Resolution: 0.01}

// checkAbove is how far above the rate found the second check trial runs.
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
	// Checks are the trials after an NDR search: at RatePPS, and 10%
	// above it.
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
}

// LossPct is Lost as a percentage of Sent.
func (t Trial) LossPct() float64 {
	if t.Sent == 0 {
		return 0
	}
	return 100 * float64(t.Lost) / float64(t.Sent)
}

// searchRates runs the NDR (and PDR) search of cfg.NDR on the session's
// path, after the full-load trial that filled row, and adds the results
// to row. A search that finds no rate is not an error of the row (its
// Search says why); a trial that fails to run is.
func (s *session) searchRates(ctx context.Context, cfg *Config, row *Row) error {
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
			t, err := s.rateTrial(ctx, cfg, rate, limit, len(sr.Steps)+1)
			if err != nil {
				return ndr.Outcome{}, err
			}
			sr.Steps = append(sr.Steps, t)
			return ndr.Outcome{Sent: t.Sent, Lost: t.Lost, Short: t.Short}, nil
		})
		r, err := ndr.Search(tr, ndr.Config{Lower: from, Upper: upper, Resolution: res, LossLimit: limit}, func(st ndr.Step) {
			t := sr.Steps[len(sr.Steps)-1]
			cfg.progress("%-20s %s trial %d: %s; now [%s, %s) Mpps", s.info.Name, label, st.N, trialText(t),
				mppsText(st.PassRate), mppsText(st.FailRate))
		})
		sr.RatePPS, sr.FailPPS = r.Rate, r.FailRate
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
		return sr, err
	}

	nd, err := run("NDR", 0, lower)
	row.NDR = nd
	row.Trials += len(nd.Steps)
	if err != nil {
		return err
	}
	if nd.RatePPS > 0 {
		v := round3(float64(nd.RatePPS) / 1e6)
		row.NDRMpps = &v
		for i, rate := range []uint64{nd.RatePPS, uint64(math.Round(float64(nd.RatePPS) * (1 + checkAbove)))} {
			t, err := s.rateTrial(ctx, cfg, rate, 0, i+1)
			if err != nil {
				return err
			}
			nd.Checks = append(nd.Checks, t)
			cfg.progress("%-20s NDR check %d: %s", s.info.Name, i+1, trialText(t))
		}
	}
	if nc.LossPct > 0 {
		// A rate that loses nothing passes any loss limit: the PDR is
		// never below the NDR.
		pd, err := run("PDR", nc.LossPct/100, max(lower, nd.RatePPS))
		row.PDR = pd
		row.Trials += len(pd.Steps)
		if err != nil {
			return err
		}
		if pd.RatePPS > 0 {
			v := round3(float64(pd.RatePPS) / 1e6)
			row.PDRMpps = &v
		}
	}
	return nil
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

// trialText is a trial in a line: "5.000 Mpps: sent 5000000, lost 0 -> pass".
func trialText(t Trial) string {
	verdict := "fail"
	if t.Pass {
		verdict = "pass"
	}
	s := fmt.Sprintf("%.3f Mpps: sent %d, lost %d (%.4f%%)", float64(t.RatePPS)/1e6, t.Sent, t.Lost, t.LossPct())
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
