//go:build linux

package compare

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/xdpeng/xdpeng/internal/hook"
	"github.com/xdpeng/xdpeng/internal/lab/ndr"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// checkSearch checks what holds of any search whatever the machine's load:
// every trial's accounting closed, its verdict follows from what it lost
// and whether it was offered in full, and the rate found passed and is
// not above the full-load rate.
func checkSearch(t *testing.T, row Row, sr *Search) {
	t.Helper()
	if sr == nil {
		t.Fatalf("%s: no search", row.Path)
	}
	for _, st := range append(append([]Trial(nil), sr.Steps...), sr.Checks...) {
		if st.Unexplained != 0 {
			t.Errorf("%s trial %+v: %d frames unexplained", row.Path, st, st.Unexplained)
		}
		if st.Pass != (!st.Short && st.Lost == 0) && sr.LossPct == 0 {
			t.Errorf("%s trial %+v: verdict does not follow from the loss", row.Path, st)
		}
	}
	if sr.Error != "" {
		return
	}
	if sr.RatePPS == 0 || float64(sr.RatePPS) > row.Mpps*1e6/float64(max(row.Copies, 1)) {
		t.Errorf("%s: rate found %d pps, full load %.3f Mpps", row.Path, sr.RatePPS, row.Mpps)
	}
	passed := false
	for _, st := range sr.Steps {
		passed = passed || (st.RatePPS == sr.RatePPS && st.Pass)
	}
	if !passed {
		t.Errorf("%s: rate found %d pps, but no trial passed there: %+v", row.Path, sr.RatePPS, sr.Steps)
	}
	checkVerified(t, row.Path, sr, DefaultVerify)
}

// checkVerified checks a search's verification: n trials at each rate
// verified, from the answer down by the resolution; the verified rate is
// the first whose every trial passed, and only that rate had all pass.
func checkVerified(t *testing.T, path string, sr *Search, n int) {
	t.Helper()
	byRate := map[uint64][]Trial{}
	var rates []uint64
	for _, st := range sr.Checks {
		if st.Check != "verify" {
			continue
		}
		if _, ok := byRate[st.RatePPS]; !ok {
			rates = append(rates, st.RatePPS)
		}
		byRate[st.RatePPS] = append(byRate[st.RatePPS], st)
	}
	if len(rates) != sr.StepsDown+1 || len(rates) == 0 || rates[0] != sr.RatePPS {
		t.Fatalf("%s: verified rates %v after %d steps down, want %d from the answer %d", path, rates, sr.StepsDown, sr.StepsDown+1, sr.RatePPS)
	}
	for i, rate := range rates {
		all := true
		for _, st := range byRate[rate] {
			all = all && st.Pass
		}
		if len(byRate[rate]) != n || rate != sr.RatePPS-uint64(i)*sr.ResolutionPPS || all != (rate == sr.VerifiedPPS) {
			t.Errorf("%s: verification at %d pps (step %d): %d trials, all passed %v; want %d, %d pps, verified %d", path, rate, i,
				len(byRate[rate]), all, n, sr.RatePPS-uint64(i)*sr.ResolutionPPS, sr.VerifiedPPS)
		}
	}
	if sr.VerifiedPPS != 0 && !strings.HasPrefix(sr.Confidence, "held ") {
		t.Errorf("%s: confidence %q", path, sr.Confidence)
	}
}

// TestNDREnginePaths runs compare --ndr for xdp-drop and xsk-drop. What is
// checked holds on any machine: the accounting of every trial closes, the
// NDR is a rate a trial passed at, at or below the full-load rate. Whether
// the check at the NDR loses nothing and the one 10% above loses some is a
// measured property of the bed (a 2-CPU VM, where a thread of the host or
// another test can take the receiver's CPU for milliseconds, and where the
// generator shares CPU 0 with the DUT's softirq, so the generator's own
// ceiling is often what stops xdp-drop): it is logged here and shown in the
// README; TestNDRKnownCapacity checks both exactly on a path whose
// capacity is set by construction.
func TestNDREnginePaths(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{Bed: bed, Paths: []string{"xdp-drop", "xsk-drop"}, Duration: time.Second,
		NDR: &NDRConfig{Trial: 500 * time.Millisecond, Resolution: 0.05}})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range res.Rows {
		if row.Error != "" {
			t.Fatalf("%s: %s", row.Path, row.Error)
		}
		sr := row.NDR
		t.Logf("%s: full load %.3f Mpps, NDR %d pps (fail %d, limit %q), verified %d pps (%s) in %d trials; checks %+v", row.Path, row.Mpps,
			sr.RatePPS, sr.FailPPS, sr.Limit, sr.VerifiedPPS, sr.Confidence, row.Trials, sr.Checks)
		checkSearch(t, row, sr)
		if row.Trials != len(sr.Steps)+len(sr.Checks) || (sr.VerifiedPPS > 0) != (row.NDRMpps != nil) {
			t.Errorf("%s: trials %d, steps %d, checks %d, ndr_mpps %v", row.Path, row.Trials, len(sr.Steps), len(sr.Checks), row.NDRMpps)
		}
		if sr.VerifiedPPS > 0 && sr.Checks[len(sr.Checks)-1].Check != "above" {
			t.Errorf("%s: the last check %+v is not the one above the verified rate", row.Path, sr.Checks[len(sr.Checks)-1])
		}
	}
	checkClean(t, bed)
}

// gcra is a path whose capacity is set by construction: an XDP program on
// dut0 that lets through (counts as received) at most one frame per
// interval on average, with a burst allowance of 512 intervals (the
// generic cell rate algorithm: a frame passes if its theoretical arrival
// time is no more than the allowance ahead of now), and drops the rest,
// counting them. 512 frames is more than the bed can bunch together: the
// veth ring holds 256, and the generator catches up at most 256 frames on
// the wire after a delay (a relayed sender's few frames, copied). So a trial at a rate at or below the capacity loses
// nothing, and one above it loses, for over a trial of length d at most
// capacity*(d + the frames' spread in time) + 513 frames pass. inject
// makes it drop the next n frames whatever their rate, counted as
// "injected": a trial that fails at a rate the path carries.
type gcra struct {
	e        *env
	interval uint64 // ns
	m        *ebpf.Map
	prog     *ebpf.Program
	att      io.Closer
}

func (g *gcra) start(context.Context) (err error) {
	// tat (theoretical arrival time), passed, dropped, frames still to
	// drop (inject), injected.
	g.m, err = ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 40, MaxEntries: 1})
	if err != nil {
		return err
	}
	allowance := int32(512 * g.interval)
	g.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{
		Type: ebpf.XDP, License: "GPL",
		Instructions: asm.Instructions{
			asm.StoreImm(asm.R10, -4, 0, asm.Word),
			asm.LoadMapPtr(asm.R1, g.m.FD()),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.Mov.Reg(asm.R7, asm.R0),
			asm.LoadMem(asm.R1, asm.R7, 24, asm.DWord), // to drop
			asm.JEq.Imm(asm.R1, 0, "gcra"),
			asm.Sub.Imm(asm.R1, 1),
			asm.StoreMem(asm.R7, 24, asm.R1, asm.DWord),
			asm.LoadMem(asm.R1, asm.R7, 32, asm.DWord),
			asm.Add.Imm(asm.R1, 1),
			asm.StoreMem(asm.R7, 32, asm.R1, asm.DWord),
			asm.Ja.Label("out"),
			asm.FnKtimeGetNs.Call().WithSymbol("gcra"),
			asm.LoadMem(asm.R8, asm.R7, 0, asm.DWord), // tat
			asm.JGE.Reg(asm.R8, asm.R0, "ahead"),
			asm.Mov.Reg(asm.R8, asm.R0), // tat = max(tat, now)
			asm.Mov.Reg(asm.R9, asm.R8).WithSymbol("ahead"),
			asm.Sub.Reg(asm.R9, asm.R0), // tat - now
			asm.JGT.Imm(asm.R9, allowance, "over"),
			asm.Add.Imm(asm.R8, int32(g.interval)),
			asm.StoreMem(asm.R7, 0, asm.R8, asm.DWord),
			asm.LoadMem(asm.R1, asm.R7, 8, asm.DWord),
			asm.Add.Imm(asm.R1, 1),
			asm.StoreMem(asm.R7, 8, asm.R1, asm.DWord),
			asm.Ja.Label("out"),
			asm.LoadMem(asm.R1, asm.R7, 16, asm.DWord).WithSymbol("over"),
			asm.Add.Imm(asm.R1, 1),
			asm.StoreMem(asm.R7, 16, asm.R1, asm.DWord),
			asm.Mov.Imm(asm.R0, 1).WithSymbol("out"), // XDP_DROP
			asm.Return(),
		},
	})
	if err != nil {
		return fmt.Errorf("load the rate-limiting program: %w", err)
	}
	return g.e.inDUT(func() (err error) {
		g.att, err = hook.AttachXDP(g.prog, g.e.dutIndex, hook.Native, netdev.ReplaceNone)
		return err
	})
}

func (g *gcra) sample() (s sample, err error) {
	var v [5]uint64
	if err := g.m.Lookup(uint32(0), &v); err != nil {
		return s, err
	}
	return sample{received: v[1], reasons: map[string]uint64{"over_rate": v[2], "injected": v[4]}}, nil
}

// inject makes the program drop the next n frames. Call it between
// trials, while no frame arrives: it rewrites the whole value.
func (g *gcra) inject(n uint64) error {
	var v [5]uint64
	if err := g.m.Lookup(uint32(0), &v); err != nil {
		return err
	}
	v[3] = n
	return g.m.Update(uint32(0), &v, ebpf.UpdateExist)
}

func (g *gcra) stop() error {
	for _, c := range []io.Closer{g.att, g.prog, g.m} {
		if c != nil {
			c.Close()
		}
	}
	g.att, g.prog, g.m = nil, nil, nil
	return nil
}

func (g *gcra) countedAt() string { return "the rate-limiting program's pass count" }
func (g *gcra) copies() int       { return 1 }
func (g *gcra) xdpMode() string   { return "native" }

// onlyGenerator checks that every verification trial at or below the
// capacity of TestNDRKnownCapacity that failed did so because the
// generator could not keep the rate, not for a loss.
func onlyGenerator(t *testing.T, sr *Search) {
	t.Helper()
	for _, st := range sr.Checks {
		if st.Check == "verify" && st.RatePPS <= 200_000 && !st.Pass && !st.Short {
			t.Errorf("verification trial at %d pps, at or below the capacity, failed offered in full: %s", st.RatePPS, trialText(st))
		}
	}
}

// TestNDRKnownCapacity searches the zero-loss rate of a path whose
// capacity is 200,000 pps by construction (gcra), with one bad trial
// planted in the search: the first trial at a rate the path carries loses
// 1000 frames (gcra.inject). What holds exactly: every trial at or below
// the capacity lost nothing but what was planted, and every trial offered
// in full at 1% or more above it lost frames; the planted trial's repeat
// passed, so its rate is marginal and the search goes on above it; the
// NDR is a rate at or below the capacity, verified by three lossless
// trials. Then an answer planted 5% above the capacity is verified: every
// trial there loses, and the verification steps down to a rate at most
// one step below the capacity, unless the generator could not offer the
// rates there in full (then the verified rate is lower, or none). How close the search comes to the capacity
// depends on whether the generator could offer the rates near it in full
// (a trial it could not fails) and on the rate carried at full load, the
// search's ceiling: on a quiet machine it is within the resolution, and
// the check 10% above loses.
func TestNDRKnownCapacity(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	const capacity, planted = 200_000, 1000
	cfg := Config{Bed: bed, Paths: []string{"xdp-drop"}, Duration: time.Second, NDR: &NDRConfig{Trial: time.Second, Resolution: 0.02}}
	if err := cfg.Resolve(); err != nil {
		t.Fatal(err)
	}
	e, setup, teardown := prepared(t, &cfg)
	defer teardown()
	info := PathInfo{Name: "gcra", Family: Drop}
	g := &gcra{e: e, interval: 1e9 / capacity}
	s := &session{e: e, info: info, r: g}
	defer func() {
		if err := s.close(); err != nil {
			t.Error(err)
		}
	}()
	ctx := context.Background()
	if err := s.r.start(ctx); err != nil {
		t.Fatal(err)
	}
	row := newRow(info, setup.Env)
	s.describe(&row)
	gc := e.genConfig(Drop, &cfg)
	if _, err := s.trial(ctx, &gc, cfg.Duration, &row); err != nil {
		t.Fatal(err)
	}
	var badRate uint64
	trial := func(ctx context.Context, cfg *Config, rate uint64, limit float64, n int) (Trial, error) {
		if badRate == 0 && rate <= capacity {
			badRate = rate
			if err := g.inject(planted); err != nil {
				return Trial{}, err
			}
		}
		return s.rateTrial(ctx, cfg, rate, limit, n)
	}
	if err := s.searchRatesWith(ctx, &cfg, &row, trial); err != nil {
		t.Fatal(err)
	}
	sr := row.NDR
	t.Logf("full load %.3f Mpps (sent %d, lost %d); NDR %d pps (fail %d, limit %q), marginal %v, verified %d: %s; trials:", row.Mpps,
		row.Sent, row.Dropped, sr.RatePPS, sr.FailPPS, sr.Limit, sr.MarginalPPS, sr.VerifiedPPS, sr.Confidence)
	for _, st := range append(append([]Trial(nil), sr.Steps...), sr.Checks...) {
		t.Logf("  %-6s %s", st.Check, trialText(st))
		if st.RatePPS <= capacity && st.Lost != st.Reasons["injected"] {
			t.Errorf("trial at %d pps, at or below the capacity, lost %d frames, %d of them planted", st.RatePPS, st.Lost, st.Reasons["injected"])
		}
		if st.RatePPS >= capacity*101/100 && !st.Short && st.Lost == 0 {
			t.Errorf("trial at %d pps, offered in full above the capacity, lost nothing", st.RatePPS)
		}
	}
	checkSearch(t, row, sr)
	if sr.RatePPS > capacity*101/100 {
		t.Errorf("NDR %d pps is above the capacity %d", sr.RatePPS, capacity)
	}
	// The planted trial failed, its repeat passed (if offered in full):
	// the rate is marginal. (A search whose every trial was above the
	// capacity plants it in the verification instead, which then steps
	// down.)
	if i := slices.IndexFunc(sr.Steps, func(st Trial) bool { return st.RatePPS == badRate }); badRate == 0 || i < 0 {
		t.Logf("no search trial at or below the capacity; planted at %d pps", badRate)
	} else {
		if i+1 >= len(sr.Steps) || sr.Steps[i].Lost != planted || sr.Steps[i].Pass || !sr.Steps[i+1].Repeat || sr.Steps[i+1].Pass == sr.Steps[i+1].Short {
			t.Errorf("the trial planted at %d pps and its repeat: %+v", badRate, sr.Steps[i:min(i+2, len(sr.Steps))])
		}
		if i+1 < len(sr.Steps) && sr.Steps[i+1].Pass && !slices.Contains(sr.MarginalPPS, badRate) {
			t.Errorf("marginal %v, want the planted trial's rate %d", sr.MarginalPPS, badRate)
		}
	}
	if sr.VerifiedPPS > capacity*101/100 || (sr.VerifiedPPS > 0) != (row.NDRMpps != nil) || (row.NDRMpps != nil && *row.NDRMpps != round3(float64(sr.VerifiedPPS)/1e6)) {
		t.Errorf("verified %d pps, ndr_mpps %v: want a rate at or below the capacity", sr.VerifiedPPS, row.NDRMpps)
	}
	onlyGenerator(t, sr)
	if sr.VerifiedPPS == 0 {
		t.Logf("no rate verified: the generator did not keep the rates (%s)", sr.Confidence)
	} else if above := sr.Checks[len(sr.Checks)-1]; above.Check != "above" || (above.RatePPS >= capacity*101/100 && !above.Short && above.Lost == 0) {
		t.Errorf("the check 10%% above the NDR: %+v", above)
	}
	switch {
	case sr.Limit == "":
		// Every trial passed up to the search's ceiling, the rate the path
		// carried at full load: on a busy machine that can be below the
		// capacity, and then nothing above it was tried.
		if sr.RatePPS != sr.UpperPPS {
			t.Errorf("no trial failed, yet the NDR %d pps is not the search's ceiling %d pps", sr.RatePPS, sr.UpperPPS)
		}
	case sr.RatePPS+sr.ResolutionPPS < capacity && sr.Limit != "generator":
		t.Errorf("NDR %d pps is more than the resolution below the capacity, despite the planted trial's repeat (limit %q)", sr.RatePPS, sr.Limit)
	}

	// An answer planted 5% too high: the verification catches it.
	const step = capacity / 50
	high := &Search{RatePPS: capacity * 105 / 100, ResolutionPPS: step, LowerPPS: step, TrialS: 1}
	if err := s.verify(ctx, &cfg, "NDR", high, ndr.Result{Rate: high.RatePPS}, 0, s.rateTrial); err != nil {
		t.Fatal(err)
	}
	t.Logf("planted %d pps: verified %d pps after %d steps: %s", high.RatePPS, high.VerifiedPPS, high.StepsDown, high.Confidence)
	for _, st := range high.Checks {
		t.Logf("  %s", trialText(st))
	}
	checkVerified(t, "planted", high, DefaultVerify)
	// Below the capacity only the generator may fail a round (then the
	// verified rate is further down); above it, every trial offered in
	// full lost frames.
	onlyGenerator(t, high)
	if high.StepsDown == 0 || high.VerifiedPPS > capacity*101/100 {
		t.Errorf("an answer planted at %d pps verified at %d pps after %d steps: want at most the capacity %d",
			high.RatePPS, high.VerifiedPPS, high.StepsDown, capacity)
	}
	for _, st := range high.Checks {
		if st.RatePPS == high.RatePPS && st.Pass || st.RatePPS >= capacity*101/100 && !st.Short && st.Lost == 0 {
			t.Errorf("a verification trial at %d pps, above the capacity, passed or lost nothing: %s", st.RatePPS, trialText(st))
		}
	}
}
