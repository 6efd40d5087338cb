package vm

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestMirrorIn(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		deb822     bool
		want       string
	}{
		{"one-line", "# c\ndeb http://deb.debian.org/debian-security bookworm-security main\ndeb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian bookworm main\n", false, "http://mirror.example/debian"},
		{"one-line deb-src only", "deb-src http://deb.debian.org/debian bookworm main\n", false, ""},
		{"deb822", "Types: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\n\nTypes: deb\n# x\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\n", true, "http://deb.debian.org/debian"},
		{"deb822 not Debian", "Types: deb\nURIs: https://deb.nodesource.com/node_20.x\nSuites: nodistro\n", true, ""},
	} {
		if got := mirrorIn(tc.text, tc.deb822); got != tc.want {
			t.Errorf("%s: mirrorIn = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"eth0": "eth0", "": "''", "a b": "'a b'", "it's": `'it'\''s'`, "-q": "-q", "$HOME": "'$HOME'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestSSHArgs(t *testing.T) {
	b := &Bed{Name: "v", GenNS: "v-gen", Dir: "/s", MgmtIP: "198.19.255.2"}
	more := []string{"-o", "ControlMaster=no", "--", "uname -r"}
	args := b.sshArgs(more...)
	i := slices.Index(args, "root@198.19.255.2")
	if i < 0 || args[i+1] != "uname -r" || len(args) != i+2 || !slices.Contains(args[:i], "ControlMaster=no") {
		t.Fatalf("sshArgs = %q", args)
	}
	if !slices.Equal(more, []string{"-o", "ControlMaster=no", "--", "uname -r"}) {
		t.Errorf("sshArgs changed its argument: %q", more)
	}
}

// TestCpioReadable checks the initramfs format against cpio's own reader
// where one is installed (busybox's applet).
func TestCpioReadable(t *testing.T) {
	if _, err := os.Stat(Busybox); err != nil {
		t.Skipf("no %s to read the archive with", Busybox)
	}
	w := &cpioWriter{}
	w.dir("d")
	w.file("d/a", 0o644, []byte("hello"))
	w.file("b", 0o755, []byte("x"))
	dir := t.TempDir()
	arc := filepath.Join(dir, "a.cpio")
	if err := os.WriteFile(arc, w.close(), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)
	cmd := exec.Command(Busybox, "sh", "-c", Busybox+" cpio -id < "+arc)
	cmd.Dir = out
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cpio -id: %v: %s", err, b)
	}
	if b, err := os.ReadFile(filepath.Join(out, "d", "a")); err != nil || !bytes.Equal(b, []byte("hello")) {
		t.Errorf("d/a = %q, %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(out, "b")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("b: %v %v", fi, err)
	}
}

func TestConfigDefaults(t *testing.T) {
	if _, err := (Config{Name: "v", Kernel: "4.19"}).withDefaults(); err == nil {
		t.Error("kernel 4.19 accepted")
	}
	if _, err := (Config{Name: "v", Kernel: "6.1", Links: 1, Loop: true}).withDefaults(); err == nil {
		t.Error("a loop of one link accepted")
	}
	c, err := (Config{Name: "v", Kernel: "6.12"}).withDefaults()
	if err != nil || c.Queues != 1 || c.Links != 1 || c.CPUs != 2 {
		t.Errorf("defaults: %+v, %v", c, err)
	}
}

func TestFailures(t *testing.T) {
	out := `=== RUN   TestA
    a_test.go:1: a passing log
--- PASS: TestA (0.01s)
=== RUN   TestB
    b_test.go:2: what B saw
    --- PASS: TestB/sub (0.00s)
    b_test.go:3: B's error
--- FAIL: TestB (0.02s)
=== RUN   TestC
    c_test.go:4: why C skipped
--- SKIP: TestC (0.00s)
FAIL
privtest x: 3 privileged tests ran
`
	want := `    b_test.go:2: what B saw
    --- PASS: TestB/sub (0.00s)
    b_test.go:3: B's error
--- FAIL: TestB (0.02s)
    c_test.go:4: why C skipped
--- SKIP: TestC (0.00s)
FAIL
privtest x: 3 privileged tests ran
`
	if got := failures([]byte(out)); got != want {
		t.Errorf("failures:\n%s\nwant:\n%s", got, want)
	}
	if got := output([]byte(out)); strings.Contains(got, "=== ") || !strings.Contains(got, "a passing log") {
		t.Errorf("output kept a RUN line or lost a log:\n%s", got)
	}
}
