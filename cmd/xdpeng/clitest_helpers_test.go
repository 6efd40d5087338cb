package main

// Helpers of the CLI integration tests: build the binary, run it inside a
// test bed's namespaces, and read what is attached to an interface.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
	"github.com/xdpeng/xdpeng/xsk"
)

func TestMain(m *testing.M) {
	napiGuardMain() // TestNAPIGuardPutsBack starts this binary as the guard
	os.Exit(privtest.Main(m))
}

// buildCLI builds xdpeng into a temporary directory that other users may
// enter (the not-root cases run it as nobody) and returns its path.
func buildCLI(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "xdpeng")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// result is how a run of the binary ended.
type result struct {
	code           int // exit status; -1 if killed by a signal
	signal         syscall.Signal
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d (signal %v)\nstdout:\n%s\nstderr:\n%s", r.code, r.signal, r.stdout, r.stderr)
}

// nsCommand makes `ip netns exec NS argv...`.
func nsCommand(ctx context.Context, ns string, argv ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns}, argv...)...)
}

// runIn runs argv in namespace ns and waits, at most timeout.
func runIn(t *testing.T, timeout time.Duration, ns string, argv ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	p := startCmd(t, nsCommand(ctx, ns, argv...))
	return p.wait(t)
}

// proc is a command started in the background.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	done           chan struct{}
	res            result
}

// syncBuffer is a buffer that a test may read while the command writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startCmd(t *testing.T, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{cmd: cmd, stdout: new(syncBuffer), stderr: new(syncBuffer), done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", cmd.Args, err)
	}
	go func() {
		err := cmd.Wait()
		p.res = result{stdout: p.stdout.String(), stderr: p.stderr.String()}
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			p.res.code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				p.res.signal = ws.Signal()
			}
		default:
			p.res.code = -2
			p.res.stderr += "\n(wait: " + err.Error() + ")"
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// startIn starts argv in namespace ns. `ip netns exec` execs the command
// in its own process, so signals sent to p reach xdpeng itself.
func startIn(t *testing.T, ns string, argv ...string) *proc {
	t.Helper()
	return startCmd(t, nsCommand(context.Background(), ns, argv...))
}

// exited reports whether the command has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitOutput waits until the command's stdout (or stderr) satisfies ok, or
// the command ends, at most timeout (a guard against a hang, not a
// measure); it reports whether ok was met.
func (p *proc) waitOutput(timeout time.Duration, stderr bool, ok func(string) bool) bool {
	out := p.stdout
	if stderr {
		out = p.stderr
	}
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if ok(out.String()) {
			return true
		}
		if p.exited() {
			return ok(out.String())
		}
	}
	return false
}

func (p *proc) wait(t *testing.T) result {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("%v did not end within 30 s", p.cmd.Args)
	}
	return p.res
}

func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("send %v: %v", sig, err)
	}
}

// readHooks reads the hooks of dev in namespace ns; a failed probe fails
// the test.
func readHooks(t *testing.T, ns, dev string) testbedtest.Hooks {
	t.Helper()
	return testbedtest.ReadHooksIn(t, ns, dev)
}

// waitHooks waits up to 5 s for dev's hooks to satisfy ok and returns the
// last state read.
func waitHooks(t *testing.T, ns, dev string, ok func(testbedtest.Hooks) bool) (testbedtest.Hooks, bool) {
	t.Helper()
	var h testbedtest.Hooks
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if h = readHooks(t, ns, dev); ok(h) {
			return h, true
		}
	}
	return h, false
}

// queuesFree binds a fresh AF_XDP socket to each queue of dev in ns and
// closes it: EBUSY means a socket was left bound.
func queuesFree(ns, dev string, queues ...int) error {
	return testbed.Do(ns, func() error {
		info, err := netdev.Lookup(dev)
		if err != nil {
			return err
		}
		for _, q := range queues {
			u, err := xsk.NewUmem(xsk.UmemConfig{FrameSize: 2048, NumFrames: 64})
			if err != nil {
				return err
			}
			s, err := xsk.NewSocket(u, xsk.SocketConfig{Ifindex: info.Index, Queue: q, FillSize: 32, CompletionSize: 32, RxSize: 32, Mode: xsk.Copy})
			if err != nil {
				u.Close()
				return fmt.Errorf("queue %d of %s is not free: %w", q, dev, err)
			}
			s.Close()
			u.Close()
		}
		return nil
	})
}
