package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// runDeps runs the checkout's .ci/deps with args and the environment env
// added, and returns its output and whether it succeeded.
func runDeps(t *testing.T, env []string, args ...string) (string, bool) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", append([]string{filepath.Join(root, ".ci", "deps")}, args...)...)
	// The Go that runs this test, wherever PATH has (or lacks) one.
	cmd.Env = append(append(os.Environ(), "GO="+filepath.Join(runtime.GOROOT(), "bin", "go")), env...)
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return string(out), err == nil
}

func writeList(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "packages")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDeps checks make deps' installer without installing anything: what
// it does with a list that is all present, a bad list, a need apt cannot
// meet, a machine without apt and a Go older than go.work's.
func TestDeps(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	apt := true
	for _, c := range []string{"apt-get", "apt-cache", "dpkg-query"} {
		if _, err := exec.LookPath(c); err != nil {
			apt = false
		}
	}
	t.Run("project list", func(t *testing.T) {
		// Every line of .ci/packages parses, and a dry run changes nothing.
		out, ok := runDeps(t, nil, "-n")
		if !ok || !strings.HasPrefix(out, "deps: ") {
			t.Fatalf(".ci/deps -n: %v\n%s", ok, out)
		}
	})
	t.Run("all present", func(t *testing.T) {
		if !apt {
			t.Skip("no apt here")
		}
		// bash is Essential in Debian and Ubuntu: always installed.
		out, ok := runDeps(t, nil, writeList(t, "# a comment\n\nbash   # the shell\nbash|xdpeng-no-such-package no-recommends\n"))
		if !ok || !strings.Contains(out, "nothing to install") || !strings.Contains(out, "2 packages") {
			t.Fatalf("want nothing to install, 2 packages: %v\n%s", ok, out)
		}
	})
	t.Run("bad option", func(t *testing.T) {
		out, ok := runDeps(t, nil, writeList(t, "bash sometimes\n"))
		if ok || !strings.Contains(out, `unknown option "sometimes" after bash`) {
			t.Fatalf("want the option named: %v\n%s", ok, out)
		}
	})
	t.Run("none available", func(t *testing.T) {
		if !apt {
			t.Skip("no apt here")
		}
		out, ok := runDeps(t, nil, "-n", writeList(t, "xdpeng-no-such-a|xdpeng-no-such-b\n"))
		if ok || !strings.Contains(out, "apt has none of xdpeng-no-such-a|xdpeng-no-such-b") {
			t.Fatalf("want the need apt cannot meet named: %v\n%s", ok, out)
		}
	})
	t.Run("no apt", func(t *testing.T) {
		// A PATH with Go and what the script uses, without apt and dpkg.
		bin := t.TempDir()
		for _, c := range []string{"go", "sed", "sort", "head", "grep", "id", "dirname"} {
			p, err := exec.LookPath(c)
			if err != nil {
				t.Skipf("no %s", c)
			}
			if err := os.Symlink(p, filepath.Join(bin, c)); err != nil {
				t.Fatal(err)
			}
		}
		out, ok := runDeps(t, []string{"PATH=" + bin}, writeList(t, "clang\ndpdk-dev no-recommends\n"))
		if !ok || !strings.Contains(out, "no apt here") || !strings.Contains(out, "clang dpdk-dev") {
			t.Fatalf("want the list to install by other means, and success: %v\n%s", ok, out)
		}
	})
	t.Run("old Go", func(t *testing.T) {
		fake := filepath.Join(t.TempDir(), "go")
		if err := os.WriteFile(fake, []byte("#!/bin/sh\necho go1.20.1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		out, ok := runDeps(t, []string{"GO=" + fake}, writeList(t, "bash\n"))
		if ok || !strings.Contains(out, "Go 1.20.1 is older than go.work's") {
			t.Fatalf("want the old Go refused: %v\n%s", ok, out)
		}
	})
}
