package main

// A run whose standard output goes away ends as on Ctrl-C. The reader of a
// pipe may exit before xdpeng does (`xdpeng rxdrop --json | head -3`), and
// on a remote DUT (compare --dut) the ssh session that carries stdout may
// die with the tester. By default Go ends a program by SIGPIPE at its next
// write to a closed stdout, which skips every deferred cleanup: a program
// attached through netlink (the fallback where bpf_link is missing, or
// tc's clsact) would stay. Instead the write fails, the run's context is
// cancelled, and the command takes its usual way out.

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// stdout is the commands' standard output (rootCmd.SetOut in main).
var stdout = newOutputWatch(os.Stdout)

// errStdoutClosed is the cause of a run's context cancelled by stdout.
var errStdoutClosed = errors.New("standard output closed")

// outputWatch passes writes to w and notices the first that fails.
type outputWatch struct {
	w      io.Writer
	once   sync.Once
	broken chan struct{} // closed at the first failed write
}

func newOutputWatch(w io.Writer) *outputWatch {
	return &outputWatch{w: w, broken: make(chan struct{})}
}

func (o *outputWatch) Write(p []byte) (int, error) {
	n, err := o.w.Write(p)
	if err != nil {
		o.once.Do(func() { close(o.broken) })
	}
	return n, err
}

// closed reports whether a write has failed.
func (o *outputWatch) closed() bool {
	select {
	case <-o.broken:
		return true
	default:
		return false
	}
}

// catchSIGPIPE makes a write to a closed stdout or stderr return EPIPE
// instead of ending the process: a signal that Notify asks for is not
// fatal. Children still get the default action (a handler is reset on
// exec, unlike an ignored signal).
func catchSIGPIPE() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}

// sigpipeStatus is the exit status of a run stopped by a closed stdout: a
// shell's status of a process killed by SIGPIPE, as other tools end.
const sigpipeStatus = 128 + int(syscall.SIGPIPE)

// signalContext is cancelled by Ctrl-C or SIGTERM, or when a write to
// stdout fails, so that long-running commands stop cleanly and print their
// totals.
func signalContext() (context.Context, context.CancelFunc) {
	return watchContext(stdout)
}

func watchContext(out *outputWatch) (context.Context, context.CancelFunc) {
	sig, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancelCause(sig)
	go func() {
		select {
		case <-out.broken:
			cancel(errStdoutClosed)
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		cancel(context.Canceled)
		stop()
	}
}
