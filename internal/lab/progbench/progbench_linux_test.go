package progbench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

func TestMain(m *testing.M) { os.Exit(privtest.Main(m)) }

func TestRun(t *testing.T) {
	privtest.Root(t)
	// What each program costs is a measurement (xdpeng progbench, bench),
	// not a test: here every program must load, run at every size and
	// give one positive figure per round.
	cfg := Config{Programs: Programs, Sizes: []int{64, 1500}, Repeat: 1000, Rounds: 3, CPU: -1}
	res, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(cfg.Programs)*len(cfg.Sizes) {
		t.Fatalf("%d results, want %d", len(res), len(cfg.Programs)*len(cfg.Sizes))
	}
	seen := map[string]bool{}
	for _, r := range res {
		seen[fmt.Sprintf("%s/%d", r.Program, r.Size)] = true
		if len(r.Rounds) != cfg.Rounds || len(r.UserRounds) != cfg.Rounds || r.Ns <= 0 || slices.Min(r.UserRounds) <= 0 {
			t.Errorf("%s at %d B: %v ns per run, rounds %v (kernel %v); want %d positive rounds", r.Program, r.Size, r.Ns, r.UserRounds, r.Rounds, cfg.Rounds)
		}
	}
	for _, p := range cfg.Programs {
		for _, size := range cfg.Sizes {
			if !seen[fmt.Sprintf("%s/%d", p, size)] {
				t.Errorf("no result for %s at %d B", p, size)
			}
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{Programs: []string{"nope"}},
		{Sizes: []int{20}},
		{Sizes: []int{9000}},
		{Repeat: -1},
		{Rounds: -2},
		{PacketOps: []string{"touch-all"}},
		{PacketOps: []string{"no-touch"}, LoadBytes: true},
		{Programs: []string{CountProto}, PacketOps: []string{"parse-ip"}},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	var c Config
	if err := c.Validate(); err != nil || c.Repeat != DefaultRepeat || len(c.Sizes) != 2 || len(c.Programs) != len(Programs) {
		t.Errorf("defaults: %+v, %v", c, err)
	}
}

// TestRunPacketOps: with packet operations, each program that takes one is
// measured once per operation (and load mode), each with its verdict (tx
// under swap-macs still XDP_TX), the others once; each is compared with
// the bare drop, not with itself.
func TestRunPacketOps(t *testing.T) {
	privtest.Root(t)
	cfg := Config{Programs: []string{Drop, TX, TCDrop}, Sizes: []int{64}, Repeat: 1000, Rounds: 1, CPU: -1,
		PacketOps: []string{"no-touch", "parse-ip", "swap-macs"}, LoadBytes: true}
	res, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res {
		got = append(got, r.Label()+" "+r.VerdictName)
	}
	want := []string{
		"drop -p no-touch XDP_DROP", "drop -p parse-ip XDP_DROP", "drop -p parse-ip -l load-bytes XDP_DROP",
		"drop -p swap-macs XDP_DROP", "drop -p swap-macs -l load-bytes XDP_DROP",
		"tx -p no-touch XDP_TX", "tx -p parse-ip XDP_TX", "tx -p parse-ip -l load-bytes XDP_TX",
		"tx -p swap-macs XDP_TX", "tx -p swap-macs -l load-bytes XDP_TX",
		"tc-drop TC_ACT_SHOT",
	}
	if !slices.Equal(got, want) {
		t.Errorf("measured\n%q\nwant\n%q", got, want)
	}
	if l := cfg.Labels(); len(l) != len(want) {
		t.Errorf("Labels() = %q: %d, want %d", l, len(l), len(want))
	}
	for _, d := range OverDrop(res) {
		if d.Label() == "drop -p no-touch" {
			t.Error("the bare drop compared with itself")
		}
	}
	if n := len(OverDrop(res)); n != len(want)-1 {
		t.Errorf("%d differences over drop, want %d", n, len(want)-1)
	}
}
