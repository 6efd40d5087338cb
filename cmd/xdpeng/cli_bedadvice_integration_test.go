package main

import (
	"strings"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
)

// TestCLIDeviceInBed: a device asked for in the wrong namespace that a
// test bed has is named with the bed's namespace and the command to run
// there, for the engine's error (rxdrop) and netdev's (probe, gen).
func TestCLIDeviceInBed(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	for _, c := range []struct {
		ns, other string
		args      []string
	}{
		{bed.GenNS, bed.DUTNS, []string{"rxdrop", "-i", "dut0", "-d", "1"}},
		{bed.GenNS, bed.DUTNS, []string{"probe", "-i", "dut0"}},
		{bed.DUTNS, bed.GenNS, []string{"gen", "-i", "gen0", "-d", "0.1"}},
	} {
		r := runIn(t, 30*time.Second, c.ns, append([]string{bin}, c.args...)...)
		dev := c.args[2]
		want := "xdpeng: " + dev + " is in test bed " + bed.Name + "'s namespace " + c.other + ": ip netns exec " + c.other + " xdpeng " + strings.Join(c.args, " ")
		if r.code != 1 || !strings.Contains(r.stderr, `interface "`+dev+`" not found`) || !strings.Contains(r.stderr, want) {
			t.Errorf("%s in %s: want exit 1 and\n%s\n%v", c.args, c.ns, want, r)
		}
	}
}
