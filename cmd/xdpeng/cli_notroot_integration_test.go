package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// TestCLINotRoot runs every command that needs privilege as nobody: each
// says, in one line, that the command the user typed needs root and to use
// sudo, before it touches anything.
func TestCLINotRoot(t *testing.T) {
	privtest.Root(t) // to become nobody
	bin := buildCLI(t)
	for _, args := range [][]string{
		{"testbed", "status"},
		{"testbed", "status", "--name", "t1"},
		{"testbed", "up", "--name", "t1"},
		{"testbed", "down", "--name", "t1"},
		{"demo"},
		{"compare", "--testbed"},
		{"compare", "-i", "lo", "--force"},
		{"bench"},
		{"progbench"},
		{"rxdrop", "-i", "lo"},
		{"count", "-i", "lo"},
		{"l2fwd", "-i", "lo"},
		{"txonly", "-i", "lo", "--count", "1"},
		{"fwd", "-i", "lo", "-o", "eth0"},
		{"gen", "-i", "lo", "--count", "1"},
		{"kern", "drop", "-i", "lo"},
		{"kern", "tx", "-i", "lo"},
	} {
		name := strings.Join(args, " ")
		t.Run(name, func(t *testing.T) {
			argv := append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", bin}, args...)
			out, err := exec.Command("setpriv", argv...).CombinedOutput()
			if err == nil {
				t.Fatalf("accepted without root:\n%s", out)
			}
			cmd := strings.Join(args[:1], "")
			if args[0] == "testbed" || args[0] == "kern" {
				cmd = args[0] + " " + args[1]
			}
			want := "xdpeng: " + cmd + " needs root (missing "
			if msg := strings.TrimSpace(string(out)); !strings.HasPrefix(msg, want) || !strings.HasSuffix(msg, "run it with sudo") || strings.Contains(msg, "\n") {
				t.Errorf("message %q, want one line %q... \"run it with sudo\"", msg, want)
			}
		})
	}
}
