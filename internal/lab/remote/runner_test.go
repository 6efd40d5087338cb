package remote

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeSSH stands in for ssh in unit tests: it skips every option up to
// "--" and the destination, and runs the remote command line with sh in
// $HOME, as sshd hands it to a login shell. So the tests go through the
// same quoting as a real DUT, on this machine, without privileges.
const fakeSSH = `while [ $# -gt 0 ]; do a=$1; shift; [ "$a" = "--" ] && break; done
shift
cd "$HOME" || exit 1
exec sh -c "$1"`

// fakeRunner returns a Runner whose "DUT" is this machine via fakeSSH.
func fakeRunner(t *testing.T) *Runner {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skipf("no sh: %v", err)
	}
	return &Runner{
		Target:    Target{User: "root", Host: "fake"},
		SSH:       []string{"sh", "-c", fakeSSH, "fakessh"},
		StopGrace: 2 * time.Second,
	}
}

// failingSSH returns a Runner whose ssh prints msg and exits with code.
func failingSSH(t *testing.T, msg string, code string) *Runner {
	t.Helper()
	r := fakeRunner(t)
	r.SSH = []string{"sh", "-c", `printf '%s\n' "$0" >&2; exit ` + code, msg}
	return r
}

func TestCommandLine(t *testing.T) {
	r := &Runner{Target: Target{User: "root", Host: "2001:db8::2", Port: 2222}, SSH: []string{"ssh", "-F", "lab.conf"},
		ConnectTimeout: 1500 * time.Millisecond}
	want := []string{"ssh", "-F", "lab.conf", "-T", "-x", "-a",
		"-o", "BatchMode=yes", "-o", "ConnectTimeout=2", "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3",
		"-o", "ClearAllForwardings=yes", "-o", "ControlMaster=no",
		"-l", "root", "-p", "2222", "--", "2001:db8::2", "xdpeng rxdrop -i dut0 '--label=a b'"}
	got := r.Command([]string{"xdpeng", "rxdrop", "-i", "dut0", "--label=a b"})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Command (-want +got):\n%s", diff)
	}
	// No user or port: ssh's config decides.
	got = (&Runner{Target: Target{Host: "dut"}}).Command([]string{"true"})
	if got[0] != "ssh" || slices.Contains(got, "-l") || slices.Contains(got, "-p") || got[len(got)-2] != "dut" {
		t.Errorf("Command without user and port = %q", got)
	}
}

func TestNewRunner(t *testing.T) {
	r, err := NewRunner(Target{Host: "dut"}, `ssh -F "lab conf"`)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ssh", "-F", "lab conf"}, r.SSH); diff != "" {
		t.Errorf("SSH (-want +got):\n%s", diff)
	}
	if _, err := NewRunner(Target{Host: "dut"}, "ssh | cat"); err == nil {
		t.Error("NewRunner with a pipe in the ssh command: no error")
	}
}

func TestRunQuotes(t *testing.T) {
	r := fakeRunner(t)
	out, err := r.Run(context.Background(), append([]string{"printf", `%s\0`}, quoteCases...)...)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if diff := cmp.Diff(quoteCases, got); diff != "" {
		t.Errorf("arguments as the remote shell got them (-want +got):\n%s", diff)
	}
}

func TestRunErrors(t *testing.T) {
	ctx := context.Background()
	r := fakeRunner(t)
	_, err := r.Run(ctx, "sh", "-c", "echo on stdout; echo broken >&2; exit 3")
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 3 || ee.Stderr != "broken" {
		t.Fatalf("exit 3: got %#v", err)
	}
	if !strings.Contains(err.Error(), "exited with status 3: broken") || !strings.Contains(err.Error(), "ssh://root@fake") {
		t.Errorf("exit 3: message %q", err)
	}
	if errors.Is(err, ErrNotFound) {
		t.Error("exit 3 matches ErrNotFound")
	}
	_, err = r.Run(ctx, "no-such-command-xdpeng-test")
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("missing command: %v, want ErrNotFound", err)
	}
	if _, err := r.Run(ctx); err == nil {
		t.Error("Run with no command: no error")
	}

	// What ssh itself says, and exit status 255 (OpenSSH 9's messages).
	for _, tc := range []struct {
		msg  string
		kind error
	}{
		{"ssh: connect to host 198.18.0.3 port 22: Connection refused", ErrUnreachable},
		{"ssh: connect to host 198.18.0.3 port 22: Connection timed out", ErrUnreachable},
		{"ssh: connect to host 198.18.0.3 port 22: No route to host", ErrUnreachable},
		{"ssh: Could not resolve hostname nodut: Name or service not known", ErrUnreachable},
		{"kex_exchange_identification: Connection closed by remote host", ErrUnreachable},
		{"Connection timed out during banner exchange", ErrUnreachable},
		{"root@198.18.0.2: Permission denied (publickey).", ErrAuth},
		{"Host key verification failed.", ErrHostKey},
		{"No ED25519 host key is known for 198.18.0.2 and you have requested strict checking.\nHost key verification failed.", ErrHostKey},
		{"Timeout, server 198.18.0.2 not responding.", ErrConnectionLost},
		{"Connection to 198.18.0.2 closed by remote host.", ErrConnectionLost},
		{"client_loop: send disconnect: Broken pipe", ErrConnectionLost},
		{"/root/lab.conf: line 3: Bad configuration option: hots", ErrSSH},
	} {
		_, err := failingSSH(t, tc.msg, "255").Run(ctx, "true")
		var se *SSHError
		if !errors.As(err, &se) || !errors.Is(err, tc.kind) {
			t.Errorf("ssh says %q: got %v, want an SSHError of %v", tc.msg, err, tc.kind)
			continue
		}
		if !strings.Contains(err.Error(), tc.kind.Error()) {
			t.Errorf("ssh says %q: message %q does not name %q", tc.msg, err, tc.kind)
		}
	}

	// ssh missing locally.
	r = fakeRunner(t)
	r.SSH = []string{"/nonexistent/ssh"}
	if _, err := r.Run(ctx, "true"); err == nil || !strings.Contains(err.Error(), "start ssh") {
		t.Errorf("missing ssh: %v", err)
	}

	// ctx ends a hanging command.
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := fakeRunner(t).Run(cctx, "sleep", "1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run past its deadline: %v", err)
	}
}

func TestStartCmdHook(t *testing.T) {
	r := fakeRunner(t)
	var started []string
	r.StartCmd = func(c *exec.Cmd) error {
		started = append(started, c.Args[len(c.Args)-1])
		return c.Start()
	}
	if _, err := r.Run(context.Background(), "true"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"true"}, started); diff != "" {
		t.Errorf("StartCmd saw (-want +got):\n%s", diff)
	}
}

// writeExe writes an executable shell script and returns its path.
func writeExe(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPrintable: what the DUT prints reaches this host's terminal only as
// text: escape sequences, carriage returns and invalid UTF-8 are replaced.
func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ütf-8\tand a tab": "plain text, ütf-8\tand a tab",
		"\x1b]0;owned\a":               "\ufffd]0;owned\ufffd",
		"ok\rfake":                     "ok\ufffdfake",
		"\u009b31m\x7f":                "\ufffd31m\ufffd",
		"bad \xff byte":                "bad \ufffd byte",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
	_, err := fakeRunner(t).Run(context.Background(), "sh", "-c", `printf 'evil \033[2J\n' >&2; exit 3`)
	if err == nil || strings.Contains(err.Error(), "\x1b") || !strings.Contains(err.Error(), "evil \ufffd[2J") {
		t.Errorf("an ExitError with an escape sequence on stderr: %q", err)
	}
}
