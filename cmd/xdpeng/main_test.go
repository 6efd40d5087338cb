package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/xdpeng/xdpeng/internal/cpuset"
	"github.com/xdpeng/xdpeng/internal/lab/cpustat"
)

// TestUsageUnderFlagErrors: an error about the command line's flags (one
// missing, one that does not parse) has the command's usage line under
// it; other errors do not.
func TestUsageUnderFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" for no usage line
	}{
		{[]string{"gen", "--dst-mac", "zz"}, "usage: xdpeng gen -i DEV (--count N | --duration D) [flags]"},
		{[]string{"gen", "-i", "gen0"}, "usage: xdpeng gen -i DEV (--count N | --duration D) [flags]"},
		{[]string{"rxdrop", "--bogus"}, "usage: xdpeng rxdrop -i DEV [flags]"},
		{[]string{"rxdrop"}, "usage: xdpeng rxdrop -i DEV [flags]"},
		{[]string{"kern", "drop"}, "usage: xdpeng kern drop -i DEV [flags]"},
		{[]string{"testbed", "up", "--queues", "x"}, "usage: xdpeng testbed up [flags]"},
		{[]string{"rxdrop", "-i", "dut0", "-c", "-z"}, ""},
	} {
		var stderr bytes.Buffer
		code := run(tc.args, &stderr)
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if code != 1 || !strings.HasPrefix(lines[0], "xdpeng: ") {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, stderr.String())
			continue
		}
		switch {
		case tc.want == "" && len(lines) != 1:
			t.Errorf("%v: a usage line under a non-flag error: %q", tc.args, stderr.String())
		case tc.want != "" && (len(lines) != 2 || lines[1] != tc.want):
			t.Errorf("%v: stderr %q, want %q under the error", tc.args, stderr.String(), tc.want)
		}
	}
}

// TestFwdCopyOutAlias: --no-shared-umem, fwd's old name of --copy-out,
// still sets it.
func TestFwdCopyOutAlias(t *testing.T) {
	// The alias first: flags keep their values between runs of rootCmd.
	for _, flag := range []string{"--no-shared-umem", "--copy-out"} {
		var stderr bytes.Buffer
		run([]string{"fwd", "-i", "lo", "-o", "eth0", "--shared-umem", flag}, &stderr)
		if want := "--shared-umem (one UMEM for all of IN's queues) and --copy-out"; !strings.Contains(stderr.String(), want) {
			t.Errorf("fwd --shared-umem %s: %q, want %q", flag, stderr.String(), want)
		}
	}
}

// TestStatsSeconds: stats takes durations and intervals as every command
// does, in bare seconds or Go's units, the interval as -n (-I DURATION
// still sets it, with a note on stderr).
func TestStatsSeconds(t *testing.T) {
	for _, args := range [][]string{{"-d", "0.3", "-n", "100ms"}, {"-d", "300ms", "-n", "0.1"}, {"-d", "0.3", "-I", "0.1"}} {
		var out bytes.Buffer
		c := newStatsCmd()
		c.SetArgs(append([]string{"-i", "lo"}, args...))
		c.SetOut(&out)
		c.SilenceErrors, c.SilenceUsage = true, true
		if err := c.Execute(); err != nil {
			t.Errorf("stats -i lo %v: %v", args, err)
			continue
		}
		if !strings.Contains(out.String(), "every 100ms") || !strings.Contains(out.String(), "for 300ms (Ctrl-C stops sooner)") ||
			!strings.Contains(out.String(), "] lo: ") {
			t.Errorf("stats -i lo %v printed:\n%s", args, out.String())
		}
	}
}

// TestHelpOneDefault: a flag whose help says its default in words
// ("default: until Ctrl-C") does not get pflag's "(default 0s)" too.
func TestHelpOneDefault(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, line := range strings.Split(c.LocalFlags().FlagUsages(), "\n") {
			if strings.Contains(line, "default:") && strings.Contains(line, "(default ") {
				t.Errorf("%s: two defaults: %s", c.CommandPath(), strings.TrimSpace(line))
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(rootCmd)
}

// TestEveryCommandHasExamples: every command that runs has examples in its
// --help.
func TestEveryCommandHasExamples(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() == "help" || c.Name() == "completion" { // cobra's own
			return
		}
		if c.Runnable() && c.HasParent() && c.Example == "" && !c.HasSubCommands() {
			t.Errorf("%s --help has no examples", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(rootCmd)
}

// TestStatsCPU: stats --cpu adds each online CPU's share to every line
// and its times since boot, growing from line to line.
func TestStatsCPU(t *testing.T) {
	var out bytes.Buffer
	c := newStatsCmd()
	c.SetArgs([]string{"-i", "lo", "--cpu", "--json", "-n", "0.1", "-d", "0.35"})
	c.SetOut(&out)
	c.SilenceErrors, c.SilenceUsage = true, true
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	online, err := cpuset.Online()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 2 {
		t.Fatalf("want intervals and a summary:\n%s", out.String())
	}
	var prevTotal uint64
	for i, l := range lines {
		var v struct {
			Type  string                `json:"type"`
			CPU   []cpustat.Share       `json:"cpu"`
			Times map[int]cpustat.Times `json:"cpu_times"`
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, l)
		}
		if len(v.CPU) != len(online) || len(v.Times) != len(online) {
			t.Errorf("line %d: %d shares, %d times for %d CPUs: %s", i, len(v.CPU), len(v.Times), len(online), l)
		}
		var total uint64
		for _, tm := range v.Times {
			total += tm.Total()
		}
		if total < prevTotal {
			t.Errorf("line %d: CPU times went back: %d after %d", i, total, prevTotal)
		}
		prevTotal = total
		if want := i == len(lines)-1; (v.Type == "summary") != want {
			t.Errorf("line %d is a %s", i, v.Type)
		}
	}
}

// TestEveryDurationTakesSeconds: every duration and interval flag of every
// command takes bare seconds as well as Go's units (parseSeconds), so none
// is a plain pflag duration, which refuses "5" with "missing unit".
func TestEveryDurationTakesSeconds(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			switch f.Value.Type() {
			case "duration":
				t.Errorf("%s --%s is a pflag duration, which refuses bare seconds: define it with secondsVarP", c.CommandPath(), f.Name)
			case "seconds":
				defer func() { _ = f.Value.Set(f.DefValue) }()
				for in, want := range map[string]string{"2": "2s", "0.25": "250ms", "1m": "1m0s"} {
					if err := f.Value.Set(in); err != nil || f.Value.String() != want {
						t.Errorf("%s --%s %s: %q, %v; want %s", c.CommandPath(), f.Name, in, f.Value.String(), err, want)
					}
				}
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(rootCmd)
}
