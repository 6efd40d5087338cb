package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// Defaults of the Runner's fields.
const (
	DefaultConnectTimeout = 10 * time.Second
	// A connection is given up after AliveCountMax unanswered keep-alives
	// sent AliveInterval apart: 15 s by default.
	DefaultAliveInterval = 5 * time.Second
	DefaultAliveCountMax = 3
	// DefaultStopGrace is how long Stop waits after SIGINT before SIGKILL.
	DefaultStopGrace = 5 * time.Second
)

// Runner runs commands on one DUT through ssh. Set the fields before the
// first use; a Runner may then be used from several goroutines.
type Runner struct {
	Target Target
	// SSH is the ssh command and its own arguments, e.g. {"ssh", "-F",
	// "lab.conf"}; nil means {"ssh"}. Options given here take precedence
	// over the Runner's (ssh keeps the first value of each option).
	SSH []string
	// ConnectTimeout, AliveInterval and AliveCountMax set ssh's
	// ConnectTimeout, ServerAliveInterval and ServerAliveCountMax; zero
	// means the Default.
	ConnectTimeout time.Duration
	AliveInterval  time.Duration
	AliveCountMax  int
	// StopGrace is how long Stop (and a cancelled Start) waits for a
	// command to end after SIGINT before it sends SIGKILL; zero means
	// DefaultStopGrace.
	StopGrace time.Duration
	// StartCmd starts each ssh process; nil means (*exec.Cmd).Start. Tests
	// use it to start ssh inside a network namespace.
	StartCmd func(*exec.Cmd) error
}

// NewRunner returns a Runner for target that runs sshCommand, split with
// SplitCommand; "" means "ssh".
func NewRunner(target Target, sshCommand string) (*Runner, error) {
	r := &Runner{Target: target}
	if sshCommand != "" {
		words, err := SplitCommand(sshCommand)
		if err != nil {
			return nil, err
		}
		r.SSH = words
	}
	return r, nil
}

func (r *Runner) connectTimeout() time.Duration {
	return orDefault(r.ConnectTimeout, DefaultConnectTimeout)
}

func (r *Runner) stopGrace() time.Duration { return orDefault(r.StopGrace, DefaultStopGrace) }

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// seconds formats d for ssh, which takes whole seconds (at least 1).
func seconds(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	return strconv.FormatInt(max(s, 1), 10)
}

// Command returns the ssh command line that runs args on the DUT: the ssh
// command, the Runner's options, the target, and args quoted into one
// string for the remote shell.
func (r *Runner) Command(args []string) []string {
	ssh := r.SSH
	if len(ssh) == 0 {
		ssh = []string{"ssh"}
	}
	count := r.AliveCountMax
	if count <= 0 {
		count = DefaultAliveCountMax
	}
	line := append([]string(nil), ssh...)
	line = append(line,
		"-T",                  // no pty: stdout stays a byte stream, and Ctrl-C is ours
		"-x",                  // no X11 forwarding
		"-a",                  // no agent forwarding
		"-o", "BatchMode=yes", // never ask for a password or a passphrase
		"-o", "ConnectTimeout="+seconds(r.connectTimeout()),
		"-o", "ServerAliveInterval="+seconds(orDefault(r.AliveInterval, DefaultAliveInterval)),
		"-o", "ServerAliveCountMax="+strconv.Itoa(count),
		// A forwarding in the user's config for this host must not fail
		// our sessions, nor must a ControlPersist master hold our pipes.
		"-o", "ClearAllForwardings=yes",
		"-o", "ControlMaster=no",
	)
	if r.Target.User != "" {
		line = append(line, "-l", r.Target.User)
	}
	if r.Target.Port != 0 {
		line = append(line, "-p", strconv.Itoa(r.Target.Port))
	}
	return append(line, "--", r.Target.Host, QuoteCommand(args))
}

// cmd prepares the ssh process that runs args on the DUT.
func (r *Runner) cmd(ctx context.Context, args []string) *exec.Cmd {
	line := r.Command(args)
	c := exec.CommandContext(ctx, line[0], line[1:]...)
	// A ControlPersist master started by the user's own config may keep
	// our pipes open after ssh has exited; do not wait for it.
	c.WaitDelay = 2 * time.Second
	return c
}

func (r *Runner) start(c *exec.Cmd) error {
	var err error
	if r.StartCmd != nil {
		err = r.StartCmd(c)
	} else {
		err = c.Start()
	}
	if err != nil {
		return fmt.Errorf("start ssh (%s): %w", c.Path, err)
	}
	return nil
}

// MaxOutput bounds what Run keeps of a command's stdout: a command that
// prints more is an error, and its ssh is ended.
const MaxOutput = 4 << 20

// Run runs args on the DUT and returns what it printed on stdout (at most
// MaxOutput bytes). Its stdin is empty. ctx bounds the whole run; when it
// ends, the local ssh is killed (meant for short commands: see Start for
// long ones).
func (r *Runner) Run(ctx context.Context, args ...string) ([]byte, error) {
	return r.run(ctx, nil, args, nil)
}

// run runs args; shown is the command as errors name it (nil: args).
func (r *Runner) run(ctx context.Context, stdin io.Reader, args, shown []string) ([]byte, error) {
	if len(args) == 0 {
		return nil, errors.New("no remote command")
	}
	if shown == nil {
		shown = args
	}
	c := r.cmd(ctx, args)
	stdout := &capped{max: MaxOutput}
	stderr := newTail(maxStderr)
	c.Stdin, c.Stdout, c.Stderr = stdin, stdout, stderr
	if err := r.start(c); err != nil {
		return nil, err
	}
	err := c.Wait()
	switch {
	case stdout.over:
		return nil, fmt.Errorf("on %s: %s printed more than %d bytes: not what it should print", r.Target, QuoteCommand(shown), MaxOutput)
	case err != nil && ctx.Err() != nil:
		return stdout.buf.Bytes(), fmt.Errorf("on %s: %s: %w", r.Target, QuoteCommand(shown), ctx.Err())
	}
	return stdout.buf.Bytes(), r.exitError(err, shown, stderr.String())
}

// errTooMuch ends the copy of a command's output past its bound.
var errTooMuch = errors.New("output too long")

// capped keeps up to max bytes; a write past them fails, which closes the
// pipe from ssh, so that ssh ends.
type capped struct {
	max  int
	buf  bytes.Buffer
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if c.buf.Len()+len(p) > c.max {
		c.over = true
		return 0, errTooMuch
	}
	return c.buf.Write(p)
}

// exitError turns ssh's exit into this package's errors: nil for success,
// an *SSHError for 255, an *ExitError for any other status.
func (r *Runner) exitError(err error, args []string, stderr string) error {
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return fmt.Errorf("ssh to %s: %w", r.Target, err)
	}
	switch code := ee.ExitCode(); code {
	case 255:
		if stderr == "" {
			// ssh says why it failed; silence is the remote command's
			// own 255, or its death by a signal.
			return &ExitError{Target: r.Target, Args: args, Code: -1}
		}
		return &SSHError{Target: r.Target, Kind: classifySSH(stderr), Stderr: stderr}
	case -1:
		// The local ssh was killed.
		return fmt.Errorf("ssh to %s: %w", r.Target, err)
	default:
		return &ExitError{Target: r.Target, Args: args, Code: code, Stderr: stderr}
	}
}

// maxStderr is how much of a remote command's stderr is kept for errors.
const maxStderr = 64 << 10

// tail is an io.Writer that keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}
