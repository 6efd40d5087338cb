package main

// The transmit helper of gen and txonly (--xdp-pass), and the refusal of a
// veth whose peer would drop every frame.

import (
	"os/exec"
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
