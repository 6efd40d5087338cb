// Package selftest checks that AF_XDP works correctly on a pair of devices:
// the conformance tests of the kernel's own suite (xskxceiver, in
// tools/testing/selftests/bpf), under the same names, written on xdpeng's
// sockets, rings and steering program.
//
// Every test sends frames from one device's AF_XDP socket and receives them
// on the other's; the receiver checks each frame whole (length, headers,
// every payload word, its order in the stream, where in its buffer the
// kernel put it), the sender checks every completion, and both compare each
// XDP_STATISTICS counter with what the test arranged, exactly. A test ends
// pass, fail (what was expected, what came, at which frame) or skip (what
// the device or kernel lacks).
//
// Each test attaches what it needs when it starts and removes it when it
// ends; the steering program is held by a bpf_link, so the kernel detaches
// it also when the process is killed.
package selftest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/internal/hook"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/xsk"
)

// Mode is how the sockets are bound and the steering program attached.
type Mode int

const (
	// SKB: generic XDP, copy mode (xskxceiver's SKB).
	SKB Mode = iota
	// DRV: native XDP in the driver, copy mode (DRV).
	DRV
	// ZC: native XDP, zero-copy (ZC).
	ZC
)

// Modes are all modes, in the order they run.
var Modes = []Mode{SKB, DRV, ZC}

// String returns skb, drv or zc.
func (m Mode) String() string {
	switch m {
	case SKB:
		return "skb"
	case DRV:
		return "drv"
	case ZC:
		return "zc"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode reads skb, drv or zc (any case).
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if strings.EqualFold(s, m.String()) {
			return m, nil
		}
	}
	return 0, fmt.Errorf("unknown mode %q: use skb, drv or zc", s)
}

func (m Mode) xdpMode() hook.XDPMode {
	if m == SKB {
		return hook.Generic
	}
	return hook.Native
}

func (m Mode) bindMode() xsk.BindMode {
	if m == ZC {
		return xsk.ZeroCopy
	}
	return xsk.Copy
}

// End is one device of the pair.
type End struct {
	Name string
	// NS is the named network namespace the device is in, "" for the
	// caller's.
	NS    string
	Index int
	MAC   net.HardwareAddr
}

// do runs fn in the end's network namespace.
func (e End) do(fn func() error) error {
	if e.NS == "" {
		return fn()
	}
	return testbed.Do(e.NS, fn)
}

// Pair is the two devices a run uses: frames go from Tx to Rx (and back in
// BIDIRECTIONAL), on queue 0 of each.
type Pair struct {
	Tx, Rx End
	// Own says the devices are the run's own (a test bed it made): a
	// test may change their MTU. A run never changes the MTU of a device
	// it did not make; a test that needs another skips.
	Own bool
}

// Status is a test's outcome.
type Status string

// The outcomes.
const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Result is one test in one mode.
type Result struct {
	Test   string `json:"test"`
	Mode   string `json:"mode"`
	Status Status `json:"result"`
	// Detail says what a passing test checked, why a test was skipped, or
	// what failed.
	Detail string `json:"detail,omitempty"`
	// Expected and Got are what a failed check wanted and found.
	Expected string `json:"expected,omitempty"`
	Got      string `json:"got,omitempty"`
	// Frame is the number of the frame in the test's stream a failure is
	// about, nil when it is about no one frame.
	Frame   *int    `json:"frame,omitempty"`
	Seconds float64 `json:"seconds"`
}

// Summary counts one mode's results.
type Summary struct {
	Mode    string  `json:"mode"`
	Passed  int     `json:"pass"`
	Failed  int     `json:"fail"`
	Skipped int     `json:"skip"`
	Seconds float64 `json:"seconds"`
}

// Failure is a check that did not hold.
type Failure struct {
	// Check names what was checked ("frame content", "rx_dropped", ...).
	Check          string
	Expected, Got  string
	Frame          int // the frame's number in the stream; -1 for none
	DeviceCounters string
}

func (f *Failure) Error() string {
	s := f.Check
	if f.Frame >= 0 {
		s = fmt.Sprintf("frame %d: %s", f.Frame, s)
	}
	s += fmt.Sprintf(": expected %s, got %s", f.Expected, f.Got)
	if f.DeviceCounters != "" {
		s += " (" + f.DeviceCounters + ")"
	}
	return s
}

// Skipped says why a test cannot run here.
type Skipped struct{ Reason string }

func (s *Skipped) Error() string { return "skipped: " + s.Reason }

func skipf(format string, args ...any) error { return &Skipped{fmt.Sprintf(format, args...)} }

// Test is one test of the catalogue.
type Test struct {
	Name string
	// Checks says what the test checks, for --list and the manual.
	Checks string
	run    func(t *tcase) (string, error)
}

// Tests returns the catalogue, in the order the tests run.
func Tests() []Test { return slices.Clone(catalogue) }

// Select returns the tests called names, in catalogue order; every name
// must be known. No names selects all.
func Select(names []string) ([]Test, error) {
	if len(names) == 0 {
		return Tests(), nil
	}
	var unknown []string
	want := map[string]bool{}
	for _, n := range names {
		n = strings.ToUpper(strings.TrimSpace(n))
		if !slices.ContainsFunc(catalogue, func(t Test) bool { return t.Name == n }) {
			unknown = append(unknown, n)
		}
		want[n] = true
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown test %s (the list shows them all)", strings.Join(unknown, ", "))
	}
	var out []Test
	for _, t := range catalogue {
		if want[t.Name] {
			out = append(out, t)
		}
	}
	return out, nil
}

// Config is what Run runs.
type Config struct {
	Pair  Pair
	Modes []Mode
	Tests []Test
	// OnResult and OnSummary, if set, get each result and each mode's
	// summary as they come.
	OnResult  func(Result)
	OnSummary func(Summary)
}

// Run runs every test in every mode and returns the summaries. It stops
// early, with ctx's error, when ctx is done; what a test attached or
// changed is removed or put back before it returns either way. Ring sizes
// a test changes are also put back if the process is killed, by a guard
// process (see GuardMain).
func Run(ctx context.Context, cfg Config) (sums []Summary, err error) {
	if len(cfg.Modes) == 0 || len(cfg.Tests) == 0 {
		return nil, errors.New("selftest: no modes or no tests to run")
	}
	g := newGuard()
	defer func() {
		if gerr := g.close(); gerr != nil {
			err = errors.Join(err, gerr)
		}
	}()
	for _, m := range cfg.Modes {
		sum := Summary{Mode: m.String()}
		start := time.Now()
		modeSkip := probeMode(cfg.Pair, m)
		for _, t := range cfg.Tests {
			if err := ctx.Err(); err != nil {
				return sums, err
			}
			r := runOne(ctx, cfg.Pair, m, t, modeSkip, g)
			if ctx.Err() != nil && r.Status == Fail {
				return sums, ctx.Err()
			}
			switch r.Status {
			case Pass:
				sum.Passed++
			case Fail:
				sum.Failed++
			case Skip:
				sum.Skipped++
			}
			if cfg.OnResult != nil {
				cfg.OnResult(r)
			}
		}
		sum.Seconds = seconds(time.Since(start))
		sums = append(sums, sum)
		if cfg.OnSummary != nil {
			cfg.OnSummary(sum)
		}
	}
	return sums, nil
}

// runOne runs t in mode m and turns its outcome into a Result.
func runOne(ctx context.Context, p Pair, m Mode, t Test, modeSkip error, g *guard) Result {
	r := Result{Test: t.Name, Mode: m.String()}
	start := time.Now()
	var detail string
	err := modeSkip
	if err == nil {
		tc := &tcase{ctx: ctx, pair: p, mode: m, guard: g}
		detail, err = t.run(tc)
		if cerr := tc.close(); cerr != nil && err == nil {
			err = fmt.Errorf("clean up: %w", cerr)
		}
	}
	r.Seconds = seconds(time.Since(start))
	var sk *Skipped
	var f *Failure
	switch {
	case err == nil:
		r.Status, r.Detail = Pass, detail
	case errors.As(err, &sk):
		r.Status, r.Detail = Skip, sk.Reason
	case errors.Is(err, bpf.ErrNoAdjustMeta):
		// The kernel refuses what the test needs: not a failure.
		r.Status, r.Detail = Skip, "not supported here: "+err.Error()
	case errors.As(err, &f):
		r.Status, r.Detail, r.Expected, r.Got = Fail, f.Check, f.Expected, f.Got
		if f.DeviceCounters != "" {
			r.Detail += " (" + f.DeviceCounters + ")"
		}
		if f.Frame >= 0 {
			n := f.Frame
			r.Frame = &n
		}
	default:
		r.Status, r.Detail = Fail, err.Error()
	}
	return r
}

// BedPair is the pair of a test bed's first link: frames go from the
// generator end to the DUT end.
func BedPair(b *testbed.Bed) Pair {
	l := b.Links[0]
	return Pair{
		Tx:  End{Name: l.Gen, NS: b.GenNS, Index: l.GenIndex, MAC: l.GenMAC},
		Rx:  End{Name: l.DUT, NS: b.DUTNS, Index: l.DUTIndex, MAC: l.DUTMAC},
		Own: true,
	}
}

// LocalPair is the pair of devices dev (the one under test, which
// receives) and peer (which sends to it: its veth peer, or the other port
// of a cable loop), both in the caller's network namespace.
func LocalPair(dev, peer string) (Pair, error) {
	if dev == peer {
		return Pair{}, fmt.Errorf("the device under test and its peer are both %s: they must be two ends of one link", dev)
	}
	var p Pair
	for _, e := range []struct {
		name string
		end  *End
	}{{dev, &p.Rx}, {peer, &p.Tx}} {
		info, err := netdev.Lookup(e.name)
		if err != nil {
			return Pair{}, err
		}
		*e.end = End{Name: info.Name, Index: info.Index, MAC: info.MAC}
	}
	return p, nil
}

// seconds is d in seconds, to the millisecond.
func seconds(d time.Duration) float64 { return math.Round(d.Seconds()*1000) / 1000 }
