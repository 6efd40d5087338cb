package bench

import (
	"strings"
	"testing"

	"github.com/xdpeng/xdpeng/internal/progbench"
)

func TestTargets(t *testing.T) {
	r := &Result{
		Paths: []PathResult{
			{Scenario: "A", Path: "xsk-drop", MedianMpps: 5, Mpps: []float64{5, 4.5}},
			{Scenario: "A", Path: "asavie-drop", MedianMpps: 4, Mpps: []float64{4, 3}},
			{Scenario: "A", Path: "xdp-drop", MedianMpps: 7.5},
			{Scenario: "A", Path: "xsk-l2fwd", MedianMpps: 0.9},
			{Scenario: "B", Path: "xsk-drop", MedianMpps: 3},
			{Scenario: "B", Path: "xdp-drop", MedianMpps: 6, OfferedMpps: 10},
		},
		// Medians 27 and 36 (+9), lower quartiles 22 and 28: +6.
		ProgBench: []progbench.Result{
			{Program: progbench.Drop, Size: 64, NsPerRun: 27, Rounds: []float64{27, 22, 30, 22, 28, 22, 27}},
			{Program: progbench.XskRedirect, Size: 64, NsPerRun: 36, Rounds: []float64{36, 28, 37, 28, 36, 28, 36}},
		},
	}
	got := map[string]Target{}
	for _, tg := range targets(r) {
		got[tg.Name] = tg
	}
	check := func(name string, value float64, met bool) {
		t.Helper()
		tg, ok := got[name]
		if !ok {
			t.Fatalf("no target %q in %v", name, got)
		}
		if d := tg.Value - value; d > 1e-9 || d < -1e-9 || tg.Met != met {
			t.Errorf("%s = %v (met %v), want %v (met %v)", name, tg.Value, tg.Met, value, met)
		}
	}
	check("xsk-drop / asavie-drop (A)", 1.25, false)
	if m := got["xsk-drop / asavie-drop (A)"].Measured; !strings.HasSuffix(m, "run by run 1.250 1.500") {
		t.Errorf("measured %q: no ratios run by run", m)
	}
	check("xsk-drop / xdp-drop (A)", 5/7.5, false)
	check("xsk-l2fwd (A)", 0.9, true)
	check("xsk-drop, one core for all DUT work (B)", 3, true)
	check("generator, one thread, receiver on its own CPU (B)", 10, true)
	check("steering program cost over XDP_DROP", 6, true)
	if _, ok := got["xsk-drop, 2 queues, one process"]; ok {
		t.Error("a target without its scenario was reported")
	}
}

func TestScenarioCommands(t *testing.T) {
	for _, s := range Scenarios() {
		if s.Command == "" || len(s.Paths) == 0 || s.Describe == "" {
			t.Errorf("scenario %s incomplete: %+v", s.Name, s)
		}
	}
}
