package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
)

// TestCompleteValue: one word, or the element of a list after its last
// comma, with the words already in the list left out.
func TestCompleteValue(t *testing.T) {
	values := []string{"skb", "drv\tdriver", "zc"}
	for _, tc := range []struct {
		in   string
		list bool
		want []string
	}{
		{"", false, []string{"skb", "drv\tdriver", "zc"}},
		{"d", false, []string{"drv\tdriver"}},
		{"skb,", true, []string{"skb,drv\tdriver", "skb,zc"}},
		{"skb,zc,d", true, []string{"skb,zc,drv\tdriver"}},
		{"x", true, nil},
	} {
		got, dir := completeValue(values, tc.in, tc.list)
		if !slices.Equal(got, tc.want) {
			t.Errorf("completeValue(%q, list %v) = %q, want %q", tc.in, tc.list, got, tc.want)
		}
		if dir&cobra.ShellCompDirectiveNoFileComp == 0 || (dir&cobra.ShellCompDirectiveNoSpace != 0) != tc.list {
			t.Errorf("completeValue(%q, list %v): directive %v", tc.in, tc.list, dir)
		}
	}
}

// TestCLIFlagValueCompletion: on the built binary (as the shells' scripts
// ask it), every flag valueCompletions names completes words, not file
// names, on every command that has it; devices include the test bed's,
// described by their namespace, and testbed down --name the beds.
func TestCLIFlagValueCompletion(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	complete := func(args ...string) (lines []string, directive string) {
		t.Helper()
		out, err := exec.Command(bin, append([]string{"__complete"}, args...)...).Output()
		if err != nil {
			t.Fatalf("__complete %q: %v", args, err)
		}
		lines = strings.Split(strings.TrimSpace(string(out)), "\n")
		return lines[:len(lines)-1], lines[len(lines)-1]
	}
	for _, c := range documented(rootCmd) {
		path := strings.Fields(c.CommandPath())[1:]
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if _, ok := valueCompletions[f.Name]; !ok || f.Hidden {
				return
			}
			if _, dir := complete(append(path, "--"+f.Name, "")...); dir != ":4" && dir != ":6" {
				t.Errorf("%s --%s completes with directive %s, want no file names (:4, or :6 for a list)", c.CommandPath(), f.Name, dir)
			}
		})
	}
	dut := bed.Links[0].DUT
	if got, _ := complete("rxdrop", "-i", ""); !slices.Contains(got, dut+"\tin "+bed.DUTNS+": ip netns exec "+bed.DUTNS+" xdpeng ...") {
		t.Errorf("rxdrop -i offers %q, not %s of %s", got, dut, bed.DUTNS)
	}
	if got, _ := complete("testbed", "down", "--name", ""); !slices.Contains(got, bed.Name) {
		t.Errorf("testbed down --name offers %q, not the bed %s", got, bed.Name)
	}
	if got, _ := complete("selftest", "--modes", "drv,"); !slices.Equal(got, []string{"drv,skb", "drv,zc"}) {
		t.Errorf("selftest --modes drv, offers %q", got)
	}
	if got, _ := complete("kern", "drop", "--hook", ""); !slices.Equal(got, []string{"xdp", "tc"}) {
		t.Errorf("kern drop --hook offers %q", got)
	}
}
