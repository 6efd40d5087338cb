package main

// The transmit helper of gen and txonly (--xdp-pass), and the refusal of a
// veth whose peer would drop every frame.

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
)

// TestCLIXDPPass: with --xdp-pass always, gen and txonly hold XDP_PASS on
// their device while they run, say so, and leave nothing; by default a
// veth, which needs none, gets none.
func TestCLIXDPPass(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	for _, tc := range []struct {
		name   string
		args   []string
		attach bool
	}{
		{"gen always", []string{"gen", "-i", "gen0", "-d", "2", "--rate", "1000", "--xdp-pass", "always"}, true},
		{"txonly always", []string{"txonly", "-i", "gen0", "-d", "2", "--rate", "1000", "--xdp-pass", "always"}, true},
		{"gen auto", []string{"gen", "-i", "gen0", "-d", "1", "--rate", "1000"}, false},
		{"txonly never", []string{"txonly", "-i", "gen0", "-d", "1", "--rate", "1000", "--xdp-pass", "never"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startIn(t, bed.GenNS, append([]string{bin}, tc.args...)...)
			h, held := waitHooks(t, bed.GenNS, "gen0", func(h testbedtest.Hooks) bool { return h.XDPProg != 0 })
			r := p.wait(t)
			if r.code != 0 {
				t.Fatalf("%s", r)
			}
			said := strings.Contains(r.stdout, "XDP_PASS attached to gen0 (native mode, bpf_link) for the run")
			if held != tc.attach || said != tc.attach {
				t.Errorf("program held during the run: %v (%+v), said so: %v; want %v:\n%s", held, h, said, tc.attach, r)
			}
			if h := readHooks(t, bed.GenNS, "gen0"); !h.Empty() {
				t.Errorf("gen0 has %+v after the run", h)
			}
		})
	}
}

// TestCLIPeerWithoutGRO: gen out of a veth whose peer has neither GRO nor
// an XDP program is refused with the reason before it sends anything.
func TestCLIPeerWithoutGRO(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	if out, err := exec.Command("ip", "netns", "exec", bed.DUTNS, "ethtool", "-K", "dut0", "gro", "off").CombinedOutput(); err != nil {
		t.Fatalf("ethtool -K dut0 gro off: %v\n%s", err, out)
	}
	checkRefused(t, runIn(t, 20*time.Second, bed.GenNS, bin, "gen", "-i", "gen0", "--count", "10"), badInput{
		want: []string{"gen0 takes no XDP frames now", "its peer has neither", "ethtool -K PEER gro on", "xdpeng kern pass -i PEER"},
	})
	if h := readHooks(t, bed.GenNS, "gen0"); !h.Empty() {
		t.Errorf("gen0 has %+v after the refusal", h)
	}
}

// TestCLITxTimestamp: txonly --tx-timestamp prints the send -> completion
// times of every frame it sent (copy mode on veth: the kernel stamps each
// completion), and --launch-delay is refused on veth, which has no launch
// time, before anything is sent.
func TestCLITxTimestamp(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	const count = 2000
	r := runIn(t, time.Minute, bed.GenNS, bin, "txonly", "-i", "gen0", "--tx-timestamp", "--count", strconv.Itoa(count), "--rate", "20000", "--json")
	if r.code != 0 {
		t.Fatalf("txonly --tx-timestamp:\n%s", r)
	}
	var s txOnlySummary
	summaryLine(t, r.stdout, &s)
	c := s.TxCompletion
	if c == nil {
		t.Fatalf("no tx_completion in the summary:\n%s", r.stdout)
	}
	t.Logf("tx_completion: %+v", *c)
	if s.ZeroCopy || c.Clock != "CLOCK_TAI" || c.Frames != count || c.NoTimestamp != 0 || c.Early != 0 || c.MinNs > c.P50Ns || c.P50Ns > c.P99Ns || c.P99Ns > c.MaxNs {
		t.Errorf("tx_completion %+v (zero-copy %v): want %d frames in CLOCK_TAI, copy mode, none without a timestamp or early, min <= p50 <= p99 <= max", *c, s.ZeroCopy, count)
	}
	r = runIn(t, time.Minute, bed.GenNS, bin, "txonly", "-i", "gen0", "--launch-delay", "100us", "--count", "10")
	if r.code == 0 || !strings.Contains(r.stderr, "without tx-launch-time-fifo") || strings.Contains(r.stdout, "txonly on gen0") {
		t.Errorf("txonly --launch-delay on veth: want a refusal naming tx-launch-time-fifo before it starts:\n%s", r)
	}
}
