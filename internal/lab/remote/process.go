package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Line is one line of a remote command's stdout: a JSON object with a
// "type" field, as every xdpeng command prints with --json.
type Line struct {
	Type string          // the "type" field
	JSON json.RawMessage // the whole object, to unmarshal into the caller's type
}

// LineError is a stdout line that is not a JSON object with a string
// "type", or is longer than MaxLine. The line is skipped and the command
// stopped; Wait reports the first one.
type LineError struct {
	N    int    // line number, counted from 1 after the start marker
	Text string // the line, cut to 200 bytes
	Err  error
}

func (e *LineError) Error() string {
	text := e.Text
	if len(text) > 64 {
		text = text[:64] + "..."
	}
	return fmt.Sprintf("stdout line %d %q: %v", e.N, text, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// MaxLine bounds one stdout line of a started command, and what may come
// before its start marker; xdpeng's longest lines are a few KiB.
const MaxLine = 1 << 20

// startScript prints "xdpeng-pid PID STARTTIME" (STARTTIME from
// /proc/PID/stat, so that Stop signals this process and not a later one
// with the same PID), then execs the command: the PID is the command's.
// exec, rather than a child, keeps SIGINT as the command's own (a
// non-interactive shell starts background children with SIGINT ignored).
const startScript = startMarker + `
exec "$@"`

// startMarker prints "xdpeng-pid PID STARTTIME" of the shell that runs it.
const startMarker = `echo "xdpeng-pid $$ $(sed 's/.*) //' /proc/$$/stat 2>/dev/null | cut -d' ' -f20)"`

// signalScript sends signal $3 to process $1 if it is still the process
// that started at $2, and prints whether it did.
const signalScript = `if [ -n "$2" ]; then
	now=$(sed 's/.*) //' /proc/"$1"/stat 2>/dev/null | cut -d' ' -f20)
	if [ "$now" != "$2" ]; then echo xdpeng-gone; exit 0; fi
fi
if kill -s "$3" "$1" 2>/dev/null; then echo xdpeng-signalled; else echo xdpeng-gone; fi`

// Process is a command running on the DUT, started by Start.
type Process struct {
	r    *Runner
	args []string // the remote command, with --duration
	cmd  *exec.Cmd

	pid   int    // on the DUT
	start string // its start time in /proc/PID/stat, "" if unknown

	out    *lineWriter
	stderr *tail

	done chan struct{} // closed when ssh has exited and stdout is read
	err  error         // valid after done

	stopOnce sync.Once
	stopped  chan struct{} // closed when Stop has finished
	stopErr  error

	classify func(error) error // StartBinary's refusals; nil for Start
}

// Start runs args (args[0] is the program, e.g. the Path CheckBinary
// returned) on the DUT with --duration=duration added, and calls onLine
// with each JSON line of its stdout, in order, on one goroutine, as the
// lines come; every call has returned when Wait returns. onLine must not
// block for long: while it runs, the remote's output waits. Start returns
// once the remote process exists.
//
// duration must be positive: it is what ends the remote command when
// nothing else can, i.e. when the tester is killed or the connection is
// lost. Stop (or cancelling ctx, which calls Stop) ends it earlier. A
// lost connection is noticed by ssh after the Runner's keep-alives, and
// ends the Process with ErrConnectionLost. The remote command then ends
// by its duration at the latest; a write to the session's closed pipe may
// end it sooner (SIGPIPE).
//
// stdin is empty and no pty is allocated, so the command's output comes
// byte for byte. Its stderr is kept (the last 64 KiB) for errors.
func (r *Runner) Start(ctx context.Context, args []string, duration time.Duration, onLine func(Line)) (*Process, error) {
	if len(args) == 0 {
		return nil, errors.New("no remote command")
	}
	return r.startProcess(ctx, args, duration, onLine, func(full []string) []string {
		return append([]string{"sh", "-c", startScript, "sh"}, full...)
	}, nil)
}

// StartBinary is Start for b (as CheckBinary or Install returned it) with
// args: b is checked and run as RunBinary checks and runs it, in the same
// remote command, and the Process starts only if it passes. A refusal is
// Start's error: an *UnsafeError, a *MismatchError, ErrNotFound.
func (r *Runner) StartBinary(ctx context.Context, b Binary, args []string, duration time.Duration, onLine func(Line)) (*Process, error) {
	if err := checkBinary(b); err != nil {
		return nil, err
	}
	classify := func(err error) error { return r.binaryError(err, b) }
	p, err := r.startProcess(ctx, append([]string{b.Path}, args...), duration, onLine, func(full []string) []string {
		return binaryCommand(b, startMarker, full[1:])
	}, classify)
	return p, classify(err)
}

// startProcess starts the command full (args with --duration), run on the
// DUT as remote(full) says, which prints startMarker first; classify, if
// not nil, turns the remote command's errors into the caller's.
func (r *Runner) startProcess(ctx context.Context, args []string, duration time.Duration, onLine func(Line),
	remote func(full []string) []string, classify func(error) error) (*Process, error) {
	if duration <= 0 {
		return nil, fmt.Errorf("remote %s: a duration is required (got %s): it is what ends the remote run if the tester dies", QuoteCommand(args), duration)
	}
	full := append(append([]string(nil), args...), "--duration="+duration.String())
	p := &Process{
		r:        r,
		args:     full,
		stderr:   newTail(maxStderr),
		done:     make(chan struct{}),
		stopped:  make(chan struct{}),
		classify: classify,
	}
	p.out = &lineWriter{onLine: onLine, started: make(chan struct{}), bad: make(chan struct{})}
	// Not ctx: cancelling it stops the remote command (Stop), which killing
	// ssh would not.
	p.cmd = r.cmd(context.Background(), remote(full))
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.stderr
	if err := r.start(p.cmd); err != nil {
		return nil, err
	}
	go func() {
		err := p.cmd.Wait()
		p.err = p.exitError(err)
		close(p.done)
	}()

	select {
	case <-p.out.started:
	case <-p.done:
		select {
		case <-p.out.started: // started and already ended
		default:
			if p.err != nil {
				return nil, p.err
			}
			return nil, fmt.Errorf("on %s: %s ended before it started (no start marker on stdout)", r.Target, QuoteCommand(full))
		}
	case <-p.out.bad:
		if !p.out.isStarted() { // endless output before the marker
			p.cmd.Process.Kill()
			<-p.done
			return nil, fmt.Errorf("start %s on %s: %w", QuoteCommand(full), r.Target, p.out.firstErr())
		}
	case <-ctx.Done():
		p.cmd.Process.Kill()
		<-p.done
		return nil, fmt.Errorf("start %s on %s: %w", QuoteCommand(full), r.Target, ctx.Err())
	}
	p.pid, p.start = p.out.pid, p.out.startTime
	go func() {
		// A bad line ends the command: what it says can no longer be
		// trusted to be what it counts.
		select {
		case <-ctx.Done():
			p.Stop()
		case <-p.out.bad:
			p.Stop()
		case <-p.done:
		}
	}()
	return p, nil
}

// PID returns the remote process's id on the DUT.
func (p *Process) PID() int { return p.pid }

// Args returns the remote command as run, --duration included.
func (p *Process) Args() []string { return append([]string(nil), p.args...) }

// Stderr returns what the remote command printed on stderr so far (the
// last 64 KiB), with ssh's own messages.
func (p *Process) Stderr() string { return p.stderr.String() }

// Done is closed when the command has ended and all its output was read.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for the command to end and returns nil if it exited with
// status 0 and every stdout line was a JSON object with a type; else an
// *ExitError (with its stderr), an *SSHError (e.g. ErrConnectionLost), or
// a *LineError. The first bad line (not such an object, or longer than
// MaxLine) stops the command (Stop) and is reported here.
func (p *Process) Wait() error {
	<-p.done
	return p.err
}

func (p *Process) exitError(err error) error {
	err = p.r.exitError(err, p.args, p.stderr.String())
	var se *SSHError
	if errors.As(err, &se) && se.Kind == ErrSSH {
		// The session was up (there was a start marker), so an exit
		// status of 255 with no message ssh recognises is the command's:
		// ssh reports a command killed by a signal as 255.
		err = &ExitError{Target: p.r.Target, Args: p.args, Code: -1, Stderr: se.Stderr}
	}
	if p.classify != nil && !p.out.isStarted() {
		err = p.classify(err)
	}
	if lerr := p.out.firstErr(); lerr != nil {
		err = errors.Join(lerr, err) // the cause first: the bad line stopped it
	}
	return err
}

// Stop ends the command: SIGINT first (xdpeng then ends as on Ctrl-C,
// with its summary), and SIGKILL if it has not ended after the Runner's
// StopGrace. The signals go over a second ssh connection, to the process
// Start started only (checked by its start time, so a reused PID is left
// alone). Stop returns when the command has ended and its output has been
// read, with Wait's error, or ErrKilled if it had to be killed. If the DUT
// cannot be reached to signal it, Stop closes the local ssh and returns
// that error: the remote command then ends when its duration is up. Stop
// may be called more than once and from several goroutines; all return
// the same.
func (p *Process) Stop() error {
	p.stopOnce.Do(func() {
		defer close(p.stopped)
		p.stopErr = p.stop()
	})
	<-p.stopped
	return p.stopErr
}

func (p *Process) stop() error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	grace := p.r.stopGrace()
	if err := p.signal("INT"); err != nil {
		return p.abandon(err)
	}
	select {
	case <-p.done:
		return p.err
	case <-time.After(grace):
	}
	if err := p.signal("KILL"); err != nil {
		return p.abandon(err)
	}
	select {
	case <-p.done:
		return fmt.Errorf("on %s: %s did not end within %s of SIGINT: %w", p.r.Target, QuoteCommand(p.args), grace, ErrKilled)
	case <-time.After(grace):
		return p.abandon(fmt.Errorf("on %s: %s (PID %d) was sent SIGKILL and did not end within %s", p.r.Target, QuoteCommand(p.args), p.pid, grace))
	}
}

// abandon kills the local ssh after err, waits for it, and returns err
// with what Wait returns.
func (p *Process) abandon(err error) error {
	p.cmd.Process.Kill()
	<-p.done
	return errors.Join(err, fmt.Errorf("on %s: %s (PID %d) is left to end by its duration", p.r.Target, QuoteCommand(p.args), p.pid))
}

// signal sends sig to the remote process over its own connection, bounded
// by the connect timeout plus the grace period.
func (p *Process) signal(sig string) error {
	ctx, cancel := context.WithTimeout(context.Background(), p.r.connectTimeout()+p.r.stopGrace())
	defer cancel()
	_, err := p.r.Run(ctx, "sh", "-c", signalScript, "sh", strconv.Itoa(p.pid), p.start, sig)
	if err != nil {
		return fmt.Errorf("send SIG%s to %s (PID %d): %w", sig, QuoteCommand(p.args), p.pid, err)
	}
	return nil
}

// lineWriter is the command's stdout: it finds the start marker, then
// splits the rest into lines and hands each JSON line to onLine. Lines
// before the marker (a login shell's noise) are dropped.
type lineWriter struct {
	onLine func(Line)

	started   chan struct{} // closed at the marker
	pid       int
	startTime string

	buf      []byte
	skipping bool // the current line is too long and is dropped
	n        int  // lines after the marker
	early    int  // bytes before the marker

	bad chan struct{} // closed at the first bad line; nil: never
	mu  sync.Mutex
	err *LineError // the first bad line
}

func (w *lineWriter) isStarted() bool {
	select {
	case <-w.started:
		return true
	default:
		return false
	}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	total := len(p)
	if !w.isStarted() {
		if w.early += len(p); w.early > MaxLine {
			w.fail(nil, fmt.Errorf("more than %d bytes before the start marker", MaxLine))
		}
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if !w.skipping {
				w.buf = append(w.buf, p...)
				if len(w.buf) > MaxLine {
					w.tooLong()
				}
			}
			break
		}
		switch {
		case w.skipping:
			w.skipping = false
		case len(w.buf)+i > MaxLine:
			w.tooLong()
			w.skipping = false
		default:
			w.buf = append(w.buf, p[:i]...)
			w.line(w.buf)
		}
		w.buf = w.buf[:0]
		p = p[i+1:]
	}
	return total, nil
}

// tooLong drops the line being read: after the marker it is an error.
func (w *lineWriter) tooLong() {
	select {
	case <-w.started:
		w.n++
		w.fail(w.buf, fmt.Errorf("longer than %d bytes", MaxLine))
	default:
	}
	w.buf, w.skipping = w.buf[:0], true
}

func (w *lineWriter) line(b []byte) {
	select {
	case <-w.started:
	default:
		if rest, ok := strings.CutPrefix(string(b), "xdpeng-pid "); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				if pid, err := strconv.Atoi(f[0]); err == nil && pid > 0 {
					w.pid = pid
					if len(f) >= 2 {
						w.startTime = f[1]
					}
					close(w.started)
				}
			}
		}
		return
	}
	w.n++
	if len(bytes.TrimSpace(b)) == 0 || w.firstErr() != nil {
		// After a bad line, nothing the command says is taken.
		return
	}
	var head struct {
		Type *string `json:"type"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		w.fail(b, fmt.Errorf("not a JSON object: %w", err))
		return
	}
	if head.Type == nil || *head.Type == "" {
		w.fail(b, errors.New(`no "type" field`))
		return
	}
	if w.onLine != nil {
		w.onLine(Line{Type: *head.Type, JSON: json.RawMessage(bytes.Clone(b))})
	}
}

func (w *lineWriter) fail(b []byte, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		text := string(b)
		if len(text) > 200 {
			text = text[:200]
		}
		w.err = &LineError{N: w.n, Text: text, Err: err}
		if w.bad != nil {
			close(w.bad)
		}
	}
}

func (w *lineWriter) firstErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		return nil
	}
	return w.err
}
