package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/xdpeng/xdpeng/internal/lab/compare"
	labenv "github.com/xdpeng/xdpeng/internal/lab/env"
	"github.com/xdpeng/xdpeng/internal/lab/progbench"
)

func TestTargets(t *testing.T) {
	r := &Result{
		Paths: []PathResult{
			{Scenario: "A", Path: "xsk-drop", MedianMpps: 5, Mpps: []float64{5, 4.5}},
			{Scenario: "A", Path: "asavie-drop", MedianMpps: 4, Mpps: []float64{4, 3}},
			{Scenario: "A", Path: "xdp-drop", MedianMpps: 7.5},
			{Scenario: "A", Path: "dpdk-af-xdp-nobusy", MedianMpps: 4.5},
			{Scenario: "B", Path: "xsk-drop", MedianMpps: 0.99, NsPerPacket: 150},
			{Scenario: "B", Path: "xsk-drop-busy-poll", MedianMpps: 0.97, NsPerPacket: 130},
			{Scenario: "B", Path: "asavie-drop", MedianMpps: 0.99, NsPerPacket: 240},
			{Scenario: "B", Path: "dpdk-af-xdp-nobusy", MedianMpps: 0.95, NsPerPacket: 180},
			{Scenario: "B", Path: "dpdk-af-xdp", MedianMpps: 0.9, NsPerPacket: 1000},
			{Scenario: "B", Path: "xdp-drop", MedianMpps: 0.99, OfferedMpps: 1},
			{Scenario: "B-full", Path: "xdp-drop", MedianMpps: 6, OfferedMpps: 10},
			{Scenario: "L", Path: "xsk-l2fwd", MedianMpps: 1},
			{Scenario: "L-rps", Path: "xsk-l2fwd", MedianMpps: 1.1},
			{Scenario: "L", Path: "dpdk-l2fwd-nobusy", MedianMpps: 0.8},
			{Scenario: "L", Path: "xsk-fwd", MedianMpps: 2},
			{Scenario: "L-rps", Path: "xsk-fwd", MedianMpps: 2.2},
			{Scenario: "L", Path: "xdpsock-l2fwd", MedianMpps: 0.5},
			{Scenario: "L", Path: "xdp-bench-xsk-tx", MedianMpps: 0.8},
			{Scenario: "B-full", Path: "xsk-drop", MedianMpps: 4},
			{Scenario: "B-full", Path: "xdp-trafficgen-udp", MedianMpps: 5},
			{Scenario: "B-full", Path: "xdpsock-drop-poll", MedianMpps: 3.2},
			{Scenario: "B-full", Path: "xdp-bench-xsk-drop-poll", MedianMpps: 2},
		},
		// Lower quartiles 22.1 and 28.1: +6.
		ProgBench: []progbench.Result{
			{Program: progbench.Drop, Size: 64, Ns: 27, Rounds: []float64{27, 22, 30, 22, 28, 22, 27},
				UserRounds: []float64{27.2, 22.1, 30.3, 22.1, 28.4, 22.2, 27.5}},
			{Program: progbench.XskRedirect, Size: 64, Ns: 36, Rounds: []float64{36, 28, 37, 28, 36, 28, 36},
				UserRounds: []float64{36.2, 28.1, 37.3, 28.1, 36.4, 28.2, 36.5}},
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
	check("xsk-drop / DPDK AF_XDP, busy_budget=0 (A)", 5/4.5, true)
	// The best peer in poll mode is DPDK's at 180 ns a frame, not
	// asavie/xdp's 240.
	check("DUT CPU per frame, the best peer's poll mode / xsk-drop (B)", 1.2, true)
	check("DUT CPU per frame, DPDK AF_XDP with preferred busy polling / xsk-drop (B)", 1000.0/150, true)
	check("--busy-poll / the default wait, frames received (B)", 0.97/0.99, false)
	check("xsk-l2fwd / DPDK macswap, busy_budget=0 (L)", 1.25, false)
	for _, name := range []string{"xsk-l2fwd, after / before (L-rps / L)", "xsk-fwd, after / before (L-rps / L)"} {
		if _, ok := got[name]; ok {
			t.Errorf("target %q: L-rps and L are two arrangements of the bed, not a before and after", name)
		}
	}
	// Against the best peer of the same run: xdp-bench's 0.8 in L,
	// xdpsock -p's 3.2 in B-full; no peer row in A, so no target there.
	check("xsk-l2fwd / the best peer l2fwd, xdpsock -l or xdp-bench xsk-tx (L)", 1.25, true)
	check("xsk-drop / the best peer poll mode, xdpsock -p, -B -p or xdp-bench -p (B-full)", 1.25, true)
	if _, ok := got["xsk-drop / the best peer rxdrop, xdpsock -r or xdp-bench xsk-drop (A)"]; ok {
		t.Error("a target against peers that did not run was reported")
	}
	check("generator, one thread, receiver on its own CPU (B-full)", 10, true)
	check("generator: xdpeng's / xdp-trafficgen udp's, frames into XDP_DROP (B-full)", 6.0/5, false)
	check("steering program cost over XDP_DROP", 6, true)
	if _, ok := got["xsk-drop, 2 queues, one process"]; ok {
		t.Error("a target without its scenario was reported")
	}
}

func TestScenarioCommands(t *testing.T) {
	const wantA = "xdpeng compare --testbed --layout A --bed-queues 1 --size 64 --gen-cpus 0 --dut-cpus 1 --paths xdp-drop,xsk-drop,asavie-drop,dpdk-af-xdp,dpdk-af-xdp-nobusy,xdpsock-drop,xdp-bench-xsk-drop"
	if got := Scenarios()[0].Command; got != wantA {
		t.Errorf("scenario A's command = %q, want %q", got, wantA)
	}
	// Scenarios that compare's flags cannot express name bench itself.
	for _, s := range Scenarios() {
		if s.GenRPS && s.Command != "xdpeng bench --scenarios "+s.Name {
			t.Errorf("scenario %s: command %q, want bench's", s.Name, s.Command)
		}
		for _, p := range s.Paths {
			if _, ok := compare.LookupPath(p); !ok {
				t.Errorf("scenario %s: unknown path %s", s.Name, p)
			}
		}
	}
	for _, s := range Scenarios() {
		if s.Command == "" || len(s.Paths) == 0 || s.Describe == "" {
			t.Errorf("scenario %s incomplete: %+v", s.Name, s)
		}
	}
}

func TestCPU0Costs(t *testing.T) {
	r := &Result{Scenarios: Scenarios()}
	r.Paths = []PathResult{
		{Scenario: "A", Path: "xdp-drop", MedianMpps: 8},      // 125 ns
		{Scenario: "A", Path: "xsk-drop", MedianMpps: 5},      // 200 ns
		{Scenario: "A", Path: "asavie-drop", MedianMpps: 4},   // 250 ns
		{Scenario: "A", Path: "xsk-l2fwd", MedianMpps: 1},     // not a drop path
		{Scenario: "B", Path: "xdp-drop", MedianMpps: 6},      // layout B: CPU 0 is not the limit
		{Scenario: "B", Path: "xsk-drop", MedianMpps: 3},      //
		{Scenario: "A-1500", Path: "xdp-drop", MedianMpps: 8}, // 125 ns
		{Scenario: "A-1500", Path: "xsk-drop", MedianMpps: 4}, // 250 ns
		{Scenario: "1q", Path: "xdp-drop", MedianMpps: 8},     // 125 ns
		{Scenario: "1q", Path: "xsk-drop", MedianMpps: 4, LossPct: 12},
	}
	type key struct{ sc, path, over string }
	want := map[key]float64{
		{"A", "xdp-drop", "A xdp-drop"}:           0,
		{"A", "xsk-drop", "A xdp-drop"}:           75,
		{"A", "asavie-drop", "A xdp-drop"}:        125,
		{"A-1500", "xdp-drop", "A-1500 xdp-drop"}: 0,
		{"A-1500", "xsk-drop", "A-1500 xdp-drop"}: 125,
		{"A-1500", "xsk-drop", "A xsk-drop"}:      50,
		{"1q", "xdp-drop", "1q xdp-drop"}:         0,
		{"1q", "xsk-drop", "1q xdp-drop"}:         125,
	}
	got := CPU0Costs(r)
	if len(got) != len(want) {
		t.Fatalf("got %d costs, want %d: %+v", len(got), len(want), got)
	}
	for _, c := range got {
		w, ok := want[key{c.Scenario, c.Path, c.OverScenario + " " + c.OverPath}]
		if !ok {
			t.Errorf("unexpected cost %+v", c)
			continue
		}
		if d := c.Over - w; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s %s over %s %s = %v ns, want %v", c.Scenario, c.Path, c.OverScenario, c.OverPath, c.Over, w)
		}
		// 1q runs the receiver on CPU 0 as well; its lossy run says so.
		if c.WithReceiver != (c.Scenario == "1q") {
			t.Errorf("%s %s: WithReceiver %v", c.Scenario, c.Path, c.WithReceiver)
		}
		if c.Scenario == "1q" && c.Path == "xsk-drop" && c.LossPct != 12 {
			t.Errorf("1q xsk-drop: loss %v%%, want 12", c.LossPct)
		}
	}
}

// TestWriteJSON: bench --json is JSON lines, each an object with a type:
// setup, a row per scenario and path, summary.
func TestWriteJSON(t *testing.T) {
	r := &Result{Runs: 3, DurationS: 3, Scenarios: Scenarios()[:1],
		Paths: []PathResult{
			{Scenario: "A", Path: "xdp-drop", MedianMpps: 7.4, Mpps: []float64{7.4, 7.3, 7.5}},
			{Scenario: "A", Path: "xsk-drop", MedianMpps: 5.2, Mpps: []float64{5.2, 5.1, 5.3}},
		},
		Targets: []Target{{Name: "t", Value: 1, Goal: 1, Met: true}},
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		typ, _ := obj["type"].(string)
		types = append(types, typ)
		switch typ {
		case "setup":
			if obj["runs"] != 3.0 || obj["scenarios"] == nil {
				t.Errorf("setup line %v", obj)
			}
		case "row":
			if obj["scenario"] != "A" || obj["mpps"] == nil || obj["path"] == nil {
				t.Errorf("row line %v", obj)
			}
		case "summary":
			if obj["targets"] == nil {
				t.Errorf("summary line %v", obj)
			}
		}
	}
	if got := strings.Join(types, ","); got != "setup,row,row,summary" {
		t.Errorf("line types %s, want setup,row,row,summary:\n%s", got, b.String())
	}
}

// TestRowsCarryEnv: a bench row carries the environment its compare rows
// were taken in, and the JSON line has it as one "env" object whose
// mitigation state is the machine's.
func TestRowsCarryEnv(t *testing.T) {
	e := labenv.Collect()
	e.Layout, e.Driver, e.XDPMode = "A", "veth", "native"
	p := summarize("A", "xdp-drop", []compare.Row{{Path: "xdp-drop", Mpps: 7, Env: e}, {Path: "xdp-drop", Mpps: 8, Env: e}})
	if p.Env.SpectreV2 != e.SpectreV2 || p.Env.Layout != "A" || p.Env.XDPMode != "native" {
		t.Errorf("summarized env %+v, want %+v", p.Env, e)
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, &Result{Env: labenv.Collect(), Paths: []PathResult{p}}); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("/sys/devices/system/cpu/vulnerabilities/spectre_v2")
	if err != nil {
		t.Skipf("no spectre_v2 here: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		var obj struct {
			Type string `json:"type"`
			Env  struct {
				SpectreV2 string `json:"spectre_v2"`
			} `json:"env"`
		}
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Fatal(err)
		}
		if obj.Type != "summary" && obj.Env.SpectreV2 != strings.TrimSpace(string(want)) {
			t.Errorf("%s line: env.spectre_v2 %q, the machine's is %q", obj.Type, obj.Env.SpectreV2, want)
		}
	}
}

// TestLatencyTarget: the latency scenario's target is the ratio of the
// median p50s, met only when XDP_TX's is strictly lower.
func TestLatencyTarget(t *testing.T) {
	for _, tc := range []struct {
		kern, user uint64
		want       float64
		met        bool
	}{
		{300, 3000, 10, true},
		{500, 500, 1, false},
		{900, 600, 600.0 / 900, false},
	} {
		r := &Result{Paths: []PathResult{
			{Scenario: "lat", Path: "xdp-tx", P50Ns: tc.kern},
			{Scenario: "lat", Path: "xsk-l2fwd", P50Ns: tc.user},
		}}
		var got *Target
		for _, tg := range targets(r) {
			if strings.HasPrefix(tg.Name, "in-kernel XDP_TX's p50") {
				got = &tg
			}
		}
		if got == nil || got.Value != tc.want || got.Met != tc.met {
			t.Errorf("p50 %d / %d: target %+v, want value %v met %v", tc.user, tc.kern, got, tc.want, tc.met)
		}
	}
	if sc := Scenarios()[len(Scenarios())-1]; !sc.Latency || !strings.HasPrefix(sc.Command, "xdpeng latency ") {
		t.Errorf("the last scenario %+v is not the latency one", sc)
	}
}
