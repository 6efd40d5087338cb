//go:build linux

package compare

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/xdpeng/xdpeng/internal/hook"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
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
		t.Logf("%s: full load %.3f Mpps, NDR %d pps (fail %d, limit %q) in %d trials; checks %+v", row.Path, row.Mpps,
			sr.RatePPS, sr.FailPPS, sr.Limit, row.Trials, sr.Checks)
		checkSearch(t, row, sr)
		if row.Trials != len(sr.Steps) || (sr.RatePPS > 0) != (row.NDRMpps != nil) {
			t.Errorf("%s: trials %d, steps %d, ndr_mpps %v", row.Path, row.Trials, len(sr.Steps), row.NDRMpps)
		}
		if sr.RatePPS > 0 && len(sr.Checks) != 2 {
			t.Errorf("%s: %d checks after the search, want 2", row.Path, len(sr.Checks))
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
// veth ring holds 256, and the generator catches up at most 64 frames
// after a delay. So a trial at a rate at or below the capacity loses
// nothing, and one above it loses, for over a trial of length d at most
// capacity*(d + the frames' spread in time) + 513 frames pass.
type gcra struct {
	e        *env
	interval uint64 // ns
	m        *ebpf.Map
	prog     *ebpf.Program
	att      io.Closer
}

func (g *gcra) start(context.Context) (err error) {
	// tat (theoretical arrival time), passed, dropped.
	g.m, err = ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 24, MaxEntries: 1})
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
			asm.FnKtimeGetNs.Call(),
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
		g.att, err = hook.AttachXDP(g.prog, g.e.dutIndex, hook.Native, false)
		return err
	})
}

func (g *gcra) sample() (s sample, err error) {
	var v [3]uint64
	if err := g.m.Lookup(uint32(0), &v); err != nil {
		return s, err
	}
	return sample{received: v[1], reasons: map[string]uint64{"over_rate": v[2]}}, nil
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

// TestNDRKnownCapacity searches the zero-loss rate of a path whose
// capacity is 200,000 pps by construction (gcra). What holds exactly:
// every trial at or below the capacity lost nothing, and every trial
// offered in full at 1% or more above it lost frames, so the NDR is a rate
// at or below the capacity; the check at the NDR lost nothing, and the
// check 10% above, if offered in full and above the capacity, lost frames.
// How close the NDR comes to the capacity depends on whether the
// generator could offer the rates near it in full (a trial it could not
// fails) and on the rate carried at full load, the search's ceiling: on a
// quiet machine it is within the resolution, and the check 10% above
// loses.
func TestNDRKnownCapacity(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	const capacity = 200_000
	cfg := Config{Bed: bed, Paths: []string{"xdp-drop"}, Duration: time.Second, NDR: &NDRConfig{Trial: time.Second, Resolution: 0.02}}
	if err := cfg.Resolve(); err != nil {
		t.Fatal(err)
	}
	e, setup, teardown := prepared(t, &cfg)
	defer teardown()
	info := PathInfo{Name: "gcra", Family: Drop}
	s := &session{e: e, info: info, r: &gcra{e: e, interval: 1e9 / capacity}}
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
	g := e.genConfig(Drop, &cfg)
	if _, err := s.trial(ctx, &g, cfg.Duration, &row); err != nil {
		t.Fatal(err)
	}
	if err := s.searchRates(ctx, &cfg, &row); err != nil {
		t.Fatal(err)
	}
	sr := row.NDR
	t.Logf("full load %.3f Mpps (sent %d, lost %d); NDR %d pps (fail %d, limit %q); checks:", row.Mpps, row.Sent, row.Dropped, sr.RatePPS, sr.FailPPS, sr.Limit)
	for _, st := range append(append([]Trial(nil), sr.Steps...), sr.Checks...) {
		t.Logf("  %s", trialText(st))
		if st.RatePPS <= capacity && st.Lost != 0 {
			t.Errorf("trial at %d pps, at or below the capacity, lost %d frames", st.RatePPS, st.Lost)
		}
		if st.RatePPS >= capacity*101/100 && !st.Short && st.Lost == 0 {
			t.Errorf("trial at %d pps, offered in full above the capacity, lost nothing", st.RatePPS)
		}
	}
	checkSearch(t, row, sr)
	if sr.RatePPS > capacity*101/100 {
		t.Errorf("NDR %d pps is above the capacity %d", sr.RatePPS, capacity)
	}
	if len(sr.Checks) != 2 || sr.Checks[0].RatePPS != sr.RatePPS || sr.Checks[0].Lost != 0 {
		t.Fatalf("checks %+v: want two, the first at the NDR and lossless", sr.Checks)
	}
	if above := sr.Checks[1]; above.RatePPS >= capacity*101/100 && !above.Short && above.Lost == 0 {
		t.Errorf("the check 10%% above the NDR (%d pps) lost nothing", above.RatePPS)
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
		t.Errorf("NDR %d pps is more than the resolution below the capacity, and not for the generator's sake (limit %q)", sr.RatePPS, sr.Limit)
	}
}
