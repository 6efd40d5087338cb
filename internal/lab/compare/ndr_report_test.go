//go:build linux

package compare

import (
	"bytes"
	"strings"
	"testing"
)

// TestWriteSearches: the text of a verified search has the verified rate
// in the table, how it held, the confidence, the marginal rates and each
// verification trial with its drop reasons.
func TestWriteSearches(t *testing.T) {
	nd := &Search{UpperPPS: 1_000_000, ResolutionPPS: 10_000, TrialS: 1, RatePPS: 560_000, FailPPS: 570_000, Limit: "loss",
		MarginalPPS: []uint64{540_000}, VerifiedPPS: 550_000, StepsDown: 1,
		Confidence: "held 3 of 3 at 0.550 Mpps, 1 step below the search's 0.560; 0.560 lost 0.023% in 1 of 4",
		Steps:      []Trial{{N: 1, RatePPS: 1_000_000, Sent: 1_000_000, Lost: 4000}},
		Checks: []Trial{
			{N: 1, RatePPS: 560_000, Sent: 560_000, Pass: true, Check: "verify"},
			{N: 2, RatePPS: 560_000, Sent: 560_000, Lost: 129, Reasons: map[string]uint64{"rx_ring_full": 129, "xmit_errors": 0}, Check: "verify"},
			{N: 3, RatePPS: 560_000, Sent: 560_000, Pass: true, Check: "verify"},
			{N: 4, RatePPS: 550_000, Sent: 550_000, Pass: true, Check: "verify"},
			{N: 5, RatePPS: 550_000, Sent: 550_000, Pass: true, Check: "verify"},
			{N: 6, RatePPS: 550_000, Sent: 550_000, Pass: true, Check: "verify"},
			{N: 1, RatePPS: 605_000, Sent: 605_000, Lost: 4521, Check: "above"},
		}}
	none := &Search{UpperPPS: 1_000_000, ResolutionPPS: 10_000, TrialS: 1, RatePPS: 20_000, StepsDown: 1,
		Confidence: "held at no rate from 0.020 down to 0.010 Mpps (1 step down); 0.010 lost 1% in 1 of 3",
		Checks:     []Trial{{RatePPS: 20_000, Sent: 20_000, Lost: 5, Check: "verify"}}}
	v := 0.55
	res := &Result{Rows: []Row{
		{Path: "xsk-drop", Mpps: 12.66, NDRMpps: &v, NDR: nd, Trials: 8},
		{Path: "xdp-drop", Mpps: 20.9, NDR: none, Trials: 4},
	}}
	var b bytes.Buffer
	writeSearches(&b, res)
	out := b.String()
	for _, want := range []string{
		"0.550", "3/3, 1 step down", "lost 4521", "none held (1 step)",
		"xsk-drop             NDR: held 3 of 3 at 0.550 Mpps, 1 step below the search's 0.560; 0.560 lost 0.023% in 1 of 4",
		"marginal: 0.540 Mpps failed once and passed when repeated",
		"verify 2: 0.560 Mpps: sent 560000, lost 129 (0.0230%: rx_ring_full 129) -> fail",
		"verify 6: 0.550 Mpps: sent 550000, lost 0 (0.0000%) -> pass",
		"xdp-drop             NDR: held at no rate",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the text lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "12.660") && (!strings.Contains(line, " 0.550 ") || strings.Contains(line, "0.560")) {
			t.Errorf("the table shows %q: want the verified rate, not the search's answer", line)
		}
	}
}
