package main

import (
	"bytes"
	"strings"
	"testing"
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
