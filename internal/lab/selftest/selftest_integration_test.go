package selftest

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

func TestMain(m *testing.M) {
	GuardMain()
	os.Exit(privtest.Main(m))
}

// TestSelftestOnBed runs every test in skb and drv mode on a veth bed:
// each passes, and leaves nothing attached.
func TestSelftestOnBed(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	p := BedPair(bed)
	var results []Result
	sums, err := Run(t.Context(), Config{Pair: p, Modes: []Mode{SKB, DRV}, Tests: Tests(),
		OnResult: func(r Result) { results = append(results, r) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2*len(catalogue) || len(sums) != 2 {
		t.Fatalf("%d results and %d summaries, want %d and 2", len(results), len(sums), 2*len(catalogue))
	}
	failed, skipped := map[string]int{}, map[string]int{}
	for _, r := range results {
		if r.Status == Skip {
			skipped[r.Mode]++
		}
		// Where bpf_xdp_adjust_tail cannot resize a frame depends on
		// the driver and mode (veth: not grow fragments; in native
		// mode, not frames without tailroom): those tests skip.
		if r.Status == Skip && strings.HasPrefix(r.Test, "XDP_ADJUST_TAIL_GROW") && strings.HasPrefix(r.Detail, "bpf_xdp_adjust_tail by") {
			t.Logf("%s %s: skip: %s", r.Mode, r.Test, r.Detail)
			continue
		}
		// A kernel that clears bit 0 of odd completion addresses (the
		// host's 6.18 among them) skips the tests that send from odd
		// addresses, naming it.
		// veth has no ring parameters for the HW_SW tests to set.
		if r.Status == Skip && strings.HasPrefix(r.Test, "HW_SW_") && strings.HasSuffix(r.Detail, errNoRingParams.Error()) {
			t.Logf("%s %s: skip: %s", r.Mode, r.Test, r.Detail)
			continue
		}
		// A kernel that refuses bpf_xdp_adjust_meta says the metadata
		// tests are not supported here, with its answer.
		if r.Status == Skip && strings.HasPrefix(r.Test, "XDP_METADATA_COPY") && bpf.CheckAdjustMeta() != nil &&
			strings.HasPrefix(r.Detail, "not supported here: ") {
			t.Logf("%s %s: skip: %s", r.Mode, r.Test, r.Detail)
			continue
		}
		if r.Status == Skip && strings.HasPrefix(r.Detail, oddClearedSkip) {
			t.Logf("%s %s: skip: %s", r.Mode, r.Test, r.Detail)
			continue
		}
		if r.Status != Pass {
			t.Errorf("%s %s: %s: %s (expected %s, got %s, frame %v)", r.Mode, r.Test, r.Status, r.Detail, r.Expected, r.Got, r.Frame)
		}
		if r.Status == Fail {
			failed[r.Mode]++
		}
	}
	for _, s := range sums {
		if s.Passed+s.Failed+s.Skipped != len(catalogue) || s.Failed != failed[s.Mode] || s.Skipped != skipped[s.Mode] {
			t.Errorf("summary %+v: does not add up to the %d results (%d failed)", s, len(catalogue), failed[s.Mode])
		}
	}
	for _, l := range []struct{ ns, dev string }{{bed.GenNS, p.Tx.Name}, {bed.DUTNS, p.Rx.Name}} {
		if h := testbedtest.ReadHooksIn(t, l.ns, l.dev); !h.Empty() {
			t.Errorf("%s: left attached: %+v", l.dev, h)
		}
		err := testbed.Do(l.ns, func() error {
			link, err := netlink.LinkByName(l.dev)
			if err == nil && link.Attrs().MTU != 1500 {
				err = fmt.Errorf("MTU %d, want 1500 as the bed was made", link.Attrs().MTU)
			}
			return err
		})
		if err != nil {
			t.Errorf("%s: %v", l.dev, err)
		}
	}
}

// TestBrokenExpectations: the checker fails a flow whose expectation is
// wrong, naming the check and the frame, for a frame's content, the
// frames' count and a counter.
func TestBrokenExpectations(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	for _, tc := range []struct {
		name   string
		opts   bpf.SelftestOptions
		break_ func(f *flow)
		check  string
		frame  int
	}{
		{"frames missing", bpf.SelftestOptions{DropHalf: true}, func(f *flow) { f.progWant = bpf.SelftestCounts{Redirected: 32, Dropped: 32} }, "frames received on dut0", 1},
		{"length", bpf.SelftestOptions{}, func(f *flow) { f.want[5].len = 65 }, "frame length", 5},
		{"order", bpf.SelftestOptions{}, func(f *flow) { f.want[7], f.want[8] = f.want[8], f.want[7] }, "frame payload word 0", 8},
		{"a frame too many", bpf.SelftestOptions{}, func(f *flow) { f.want = f.want[:len(f.want)-1] }, "frames received", -1},
		{"headroom", bpf.SelftestOptions{}, func(f *flow) { f.to.spec.headroom = 64 }, "offset of the data in its buffer", 0},
		{"counter", bpf.SelftestOptions{}, func(f *flow) { f.rxStats.RxDropped = 1 }, "XDP_STATISTICS of the receiving socket", -1},
		{"program count", bpf.SelftestOptions{}, func(f *flow) { f.progWant.Redirected++ }, "steering program counts on dut0", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tcs := &tcase{ctx: t.Context(), pair: BedPair(bed), mode: SKB}
			t.Cleanup(func() {
				if err := tcs.close(); err != nil {
					t.Error(err)
				}
			})
			tx, rx, st, err := tcs.openPair(sockSpec{}, sockSpec{}, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			f := tcs.newFlow(tx, rx, st, stream(64, minFrameLen), nil)
			f.want = expected(f.pkts)
			tc.break_(f)
			_, err = tcs.run(f)
			fl, ok := err.(*Failure)
			if !ok {
				t.Fatalf("run: %v, want a *Failure", err)
			}
			if !strings.HasPrefix(fl.Check, tc.check) || fl.Frame != tc.frame {
				t.Errorf("failure %q at frame %d (expected %s, got %s), want %q at frame %d", fl.Check, fl.Frame, fl.Expected, fl.Got, tc.check, tc.frame)
			}
			t.Logf("%v", fl)
		})
	}
}

// TestBrokenReadings: a flow with kernel readings fails when none of them
// is what happened: the completions, tx_invalid_descs or the frames.
func TestBrokenReadings(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	for _, tc := range []struct {
		name   string
		break_ func(rs []reading)
		check  string
	}{
		{"completions", func(rs []reading) {
			for i := range rs {
				rs[i].completions = rs[i].completions[1:]
			}
		}, "completion ring"},
		{"tx_invalid_descs", func(rs []reading) {
			for i := range rs {
				rs[i].txInvalid++
			}
		}, "XDP_STATISTICS of the sending socket"},
		{"frames", func(rs []reading) {
			for i := range rs {
				rs[i].want[1].len++
			}
		}, "frame length"},
		{"frames of the other reading", func(rs []reading) { rs[0].want = rs[1].want }, "frames received"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tcs := &tcase{ctx: t.Context(), pair: BedPair(bed), mode: SKB}
			t.Cleanup(func() {
				if err := tcs.close(); err != nil {
					t.Error(err)
				}
			})
			if err := tcs.needMTU(jumboMTU); err != nil {
				t.Fatal(err)
			}
			spec := sockSpec{sg: true}
			tx, rx, st, err := tcs.openPair(spec, spec, bpf.SelftestOptions{Frags: true})
			if err != nil {
				t.Fatal(err)
			}
			pkts := invalidMBStream(tx.txBase, tx.umemSize(), false)
			f := tcs.newFlow(tx, rx, st, pkts, func(f *flow) { f.readings = invalidReadings(pkts, 18) })
			tc.break_(f.readings)
			_, err = tcs.run(f)
			fl, ok := err.(*Failure)
			if !ok {
				t.Fatalf("run: %v, want a *Failure", err)
			}
			if !strings.HasPrefix(fl.Check, tc.check) {
				t.Errorf("failure %q (expected %s, got %s), want %q", fl.Check, fl.Expected, fl.Got, tc.check)
			}
			t.Logf("%v", fl)
		})
	}
}
