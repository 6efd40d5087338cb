package progbench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

func TestMain(m *testing.M) { os.Exit(privtest.Main(m)) }

func TestRun(t *testing.T) {
	privtest.Root(t)
	// The figures are whole nanoseconds and the machine may be busy with
	// other tests: compare each program's best round, allow a nanosecond,
	// and measure again before calling an inversion real.
	var problems []string
	for attempt := range 3 {
		res, err := Run(context.Background(), Config{Sizes: []int{64}, Repeat: 200_000, Rounds: 5, CPU: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != len(Programs) {
			t.Fatalf("%d results, want %d", len(res), len(Programs))
		}
		best := map[string]float64{}
		for _, r := range res {
			t.Logf("attempt %d: %-22s %4d B %6.1f ns/run %v", attempt, r.Program, r.Size, r.NsPerRun, r.Rounds)
			if r.NsPerRun <= 0 {
				t.Fatalf("%s: %v ns per run, want > 0", r.Program, r.NsPerRun)
			}
			best[r.Program] = slices.Min(r.Rounds)
		}
		problems = nil
		for p, ns := range best {
			if ns+1 < best[Drop] {
				problems = append(problems, fmt.Sprintf("%s (%v ns) is cheaper than plain XDP_DROP (%v ns)", p, ns, best[Drop]))
			}
		}
		if len(problems) == 0 {
			return
		}
	}
	t.Error(strings.Join(problems, "; "))
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{Programs: []string{"nope"}},
		{Sizes: []int{20}},
		{Sizes: []int{9000}},
		{Repeat: -1},
		{Rounds: -2},
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
