package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// lines collects what onLine gets.
type lines struct {
	mu  sync.Mutex
	got []Line
}

func (l *lines) add(x Line) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, x)
}

func (l *lines) types() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var t []string
	for _, x := range l.got {
		t = append(t, x.Type)
	}
	return t
}

// alive reports whether pid is a process that has not ended (a zombie has).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// gone waits until pid has ended, for at most limit.
func gone(pid int, limit time.Duration) bool {
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if !alive(pid) {
			return true
		}
	}
	return !alive(pid)
}

func TestStartReadsLines(t *testing.T) {
	r := fakeRunner(t)
	var l lines
	// Noise before the marker (a chatty login shell would print it) is
	// not a JSON line; --duration arrives as the script's $1.
	script := `echo '{"type":"interval","i":1}'; sleep 0.05; echo '{"type":"interval","i":2}'
printf '{"type":"summary","d":"%s"}\n' "$1"`
	p, err := r.Start(context.Background(), []string{"sh", "-c", script, "sh"}, 1500*time.Millisecond, l.add)
	if err != nil {
		t.Fatal(err)
	}
	if p.PID() <= 0 {
		t.Errorf("PID = %d", p.PID())
	}
	if err := p.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if diff := cmp.Diff([]string{"interval", "interval", "summary"}, l.types()); diff != "" {
		t.Errorf("line types (-want +got):\n%s", diff)
	}
	var sum struct{ D string }
	if err := json.Unmarshal(l.got[2].JSON, &sum); err != nil || sum.D != "--duration=1.5s" {
		t.Errorf("summary %s: %+v, %v; want the duration flag passed", l.got[2].JSON, sum, err)
	}
	if got := p.Args(); got[len(got)-1] != "--duration=1.5s" {
		t.Errorf("Args = %q", got)
	}
	// Stop after the end gives Wait's result.
	if err := p.Stop(); err != nil {
		t.Errorf("Stop after the end: %v", err)
	}
}

// TestStartQuickExit: a command that ends as soon as it starts is started,
// not "ended before it started", however the two events race.
func TestStartQuickExit(t *testing.T) {
	r := fakeRunner(t)
	for range 20 {
		p, err := r.Start(context.Background(), []string{"true"}, time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStartNeedsDuration(t *testing.T) {
	r := fakeRunner(t)
	for _, d := range []time.Duration{0, -time.Second} {
		_, err := r.Start(context.Background(), []string{"xdpeng", "rxdrop"}, d, nil)
		if err == nil || !strings.Contains(err.Error(), "a duration is required") {
			t.Errorf("Start with duration %s: %v", d, err)
		}
	}
	if _, err := r.Start(context.Background(), nil, time.Second, nil); err == nil {
		t.Error("Start with no command: no error")
	}
}

func TestStartBadLines(t *testing.T) {
	r := fakeRunner(t)
	var l lines
	script := `echo '{"type":"interval"}'; echo 'not json'; echo '{"no":"type"}'; echo '[1]'; echo; echo '{"type":"summary"}'`
	p, err := r.Start(context.Background(), []string{"sh", "-c", script, "sh"}, time.Second, l.add)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Wait()
	var le *LineError
	if !errors.As(err, &le) || le.N != 2 || le.Text != "not json" {
		t.Errorf("Wait: %#v, want a LineError for line 2", err)
	}
	// Nothing after the bad line is taken.
	if diff := cmp.Diff([]string{"interval"}, l.types()); diff != "" {
		t.Errorf("line types (-want +got):\n%s", diff)
	}
}

// TestStartHostileOutput: a command whose output is not what xdpeng
// prints (an endless line, endless noise before the start marker, a line
// that is not JSON) is stopped, with an error, in bounded memory; no line
// after the bad one reaches onLine.
func TestStartHostileOutput(t *testing.T) {
	ctx := context.Background()
	r := fakeRunner(t)
	for _, tc := range []struct {
		name, script string
		want         string
	}{
		{"endless line", `echo '{"type":"interval"}'; exec tr -d '\n' < /dev/zero`, "longer than"},
		{"not JSON, then more", `echo '{"type":"interval"}'; echo '{"type":'; exec yes '{"type":"interval"}'`, "not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l lines
			// An hour: only the bad line can end it within the test.
			p, err := r.Start(ctx, []string{"sh", "-c", tc.script, "sh"}, time.Hour, l.add)
			if err != nil {
				t.Fatal(err)
			}
			err = p.Wait()
			var le *LineError
			if !errors.As(err, &le) || !strings.Contains(le.Error(), tc.want) || le.N != 2 || len(le.Text) > 200 {
				t.Errorf("Wait: %v, want a LineError of line 2 (%s)", err, tc.want)
			}
			if diff := cmp.Diff([]string{"interval"}, l.types()); diff != "" {
				t.Errorf("line types (-want +got):\n%s", diff)
			}
			if !gone(p.PID(), 10*time.Second) {
				t.Errorf("PID %d runs on", p.PID())
			}
		})
	}
	// Endless output before the marker: Start fails, and ends it.
	noisy := fakeRunner(t)
	noisy.SSH = []string{"sh", "-c", `exec yes "login noise"`}
	if _, err := noisy.Start(ctx, []string{"xdpeng"}, time.Hour, nil); err == nil || !strings.Contains(err.Error(), "before the start marker") {
		t.Errorf("noise before the marker: %v", err)
	}
	// Run keeps a bounded output.
	if _, err := r.Run(ctx, "yes"); err == nil || !strings.Contains(err.Error(), "printed more than") {
		t.Errorf("Run of endless output: %v", err)
	}
}

func TestStartFails(t *testing.T) {
	ctx := context.Background()
	_, err := failingSSH(t, "ssh: connect to host fake port 22: Connection refused", "255").Start(ctx, []string{"xdpeng"}, time.Second, nil)
	if !errors.Is(err, ErrUnreachable) {
		t.Errorf("unreachable: %v", err)
	}
	// The marker comes from the wrapper, so a missing program shows in Wait.
	p, err := fakeRunner(t).Start(ctx, []string{"/nonexistent/xdpeng", "rxdrop"}, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing program: Wait = %v, want ErrNotFound", err)
	}
	p, err = fakeRunner(t).Start(ctx, []string{"sh", "-c", "echo bad >&2; exit 4"}, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ee *ExitError
	if err := p.Wait(); !errors.As(err, &ee) || ee.Code != 4 || ee.Stderr != "bad" || p.Stderr() != "bad" {
		t.Errorf("exit 4: Wait = %#v, Stderr = %q", err, p.Stderr())
	}
	// A remote that never prints the marker: ctx ends the wait.
	r := fakeRunner(t)
	r.SSH = []string{"sh", "-c", "sleep 1"}
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := r.Start(cctx, []string{"xdpeng"}, time.Second, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("no marker: %v", err)
	}
	r.SSH = []string{"sh", "-c", "true"}
	if _, err := r.Start(ctx, []string{"xdpeng"}, time.Second, nil); err == nil || !strings.Contains(err.Error(), "ended before it started") {
		t.Errorf("ssh that exits at once: %v", err)
	}
}

// A command that prints its summary on SIGINT, as xdpeng does on Ctrl-C.
const untilInt = `trap 'echo "{\"type\":\"summary\"}"; exit 0' INT
echo '{"type":"interval"}'
while :; do sleep 0.05; done`

func TestStop(t *testing.T) {
	r := fakeRunner(t)
	var l lines
	p, err := r.Start(context.Background(), []string{"sh", "-c", untilInt, "sh"}, time.Minute, l.add)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if diff := cmp.Diff([]string{"interval", "summary"}, l.types()); diff != "" {
		t.Errorf("line types (-want +got):\n%s", diff)
	}
	if !gone(p.PID(), 5*time.Second) {
		t.Errorf("PID %d still runs after Stop", p.PID())
	}
	if err := p.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestStopKills(t *testing.T) {
	r := fakeRunner(t)
	r.StopGrace = 200 * time.Millisecond
	p, err := r.Start(context.Background(), []string{"sh", "-c", `trap '' INT; while :; do sleep 0.05; done`, "sh"}, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); !errors.Is(err, ErrKilled) {
		t.Errorf("Stop of a command that ignores SIGINT: %v, want ErrKilled", err)
	}
	if !gone(p.PID(), 5*time.Second) {
		t.Errorf("PID %d still runs after Stop", p.PID())
	}
}

func TestStopByContext(t *testing.T) {
	r := fakeRunner(t)
	ctx, cancel := context.WithCancel(context.Background())
	var l lines
	p, err := r.Start(ctx, []string{"sh", "-c", untilInt, "sh"}, time.Minute, l.add)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := p.Wait(); err != nil {
		t.Fatalf("Wait after cancel: %v", err)
	}
	if diff := cmp.Diff([]string{"interval", "summary"}, l.types()); diff != "" {
		t.Errorf("line types (-want +got):\n%s", diff)
	}
	// Concurrent Stops agree.
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := p.Stop(); err != nil {
				t.Errorf("Stop: %v", err)
			}
		})
	}
	wg.Wait()
}

// TestSignalScript: the signal goes by PID only to a process with the
// start time the wrapper printed, so a reused PID is left alone.
func TestSignalScript(t *testing.T) {
	r := fakeRunner(t)
	sleep := exec.Command("sleep", "10")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleep.Process.Kill()
	waited := make(chan error, 1)
	go func() { waited <- sleep.Wait() }()
	pid := strconv.Itoa(sleep.Process.Pid)
	signal := func(start string) string {
		t.Helper()
		out, err := r.Run(context.Background(), "sh", "-c", signalScript, "sh", pid, start, "INT")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	if got := signal("1"); got != "xdpeng-gone" {
		t.Errorf("wrong start time: %q, want xdpeng-gone", got)
	}
	select {
	case err := <-waited:
		t.Fatalf("sleep ended after a signal to another start time: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
	if got := signal(fields[19]); got != "xdpeng-signalled" {
		t.Errorf("right start time: %q, want xdpeng-signalled", got)
	}
	if err := <-waited; err == nil || !strings.Contains(err.Error(), "interrupt") {
		t.Errorf("sleep after SIGINT: %v", err)
	}
	if got := signal(fields[19]); got != "xdpeng-gone" {
		t.Errorf("after the end: %q, want xdpeng-gone", got)
	}
}

func TestLineWriter(t *testing.T) {
	var l lines
	w := &lineWriter{onLine: l.add, started: make(chan struct{})}
	input := "motd noise\n{\"type\":\"early\"}\nxdpeng-pid 42 777\n{\"type\":\"a\",\"x\":1}\n" +
		"{\"type\":\"b\"}\n" + strings.Repeat("x", MaxLine+10) + "\n{\"type\":\"c\"}\n{\"type\":\"partial"
	for i := 0; i < len(input); i += 7 { // in small pieces, as a pipe may deliver it
		w.Write([]byte(input[i:min(i+7, len(input))]))
	}
	if w.pid != 42 || w.startTime != "777" {
		t.Errorf("marker: pid %d start %q", w.pid, w.startTime)
	}
	if diff := cmp.Diff([]string{"a", "b"}, l.types()); diff != "" {
		t.Errorf("line types (-want +got):\n%s", diff)
	}
	if string(l.got[0].JSON) != `{"type":"a","x":1}` {
		t.Errorf("line JSON = %s", l.got[0].JSON)
	}
	var le *LineError
	if err := w.firstErr(); !errors.As(err, &le) || le.N != 3 || !strings.Contains(le.Error(), "longer than") {
		t.Errorf("long line: %v", err)
	}
}
