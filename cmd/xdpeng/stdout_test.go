package main

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"
)

// failingWriter fails every write as a pipe without a reader does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.EPIPE }

// TestClosedStdoutCancels: the first failed write to stdout cancels the
// run's context with errStdoutClosed; a working stdout leaves it alone.
func TestClosedStdoutCancels(t *testing.T) {
	var good okWriter
	ok := newOutputWatch(&good)
	ctx, cancel := watchContext(ok)
	if _, err := ok.Write([]byte("line\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
		t.Fatalf("cancelled by a write that worked: %v", context.Cause(ctx))
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	if ok.closed() {
		t.Error("a stdout whose writes worked is said to be closed")
	}

	bad := newOutputWatch(failingWriter{})
	ctx, cancel = watchContext(bad)
	defer cancel()
	if _, err := bad.Write([]byte("line\n")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("write: %v, want EPIPE passed on", err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a failed write to stdout did not cancel the run")
	}
	if !errors.Is(context.Cause(ctx), errStdoutClosed) || !bad.closed() {
		t.Errorf("cause %v, closed %v; want errStdoutClosed", context.Cause(ctx), bad.closed())
	}
	// Later writes fail too, and nothing panics on a second failure.
	if _, err := bad.Write([]byte("more\n")); err == nil {
		t.Error("a second write to a closed stdout worked")
	}
}

type okWriter struct{ n int }

func (w *okWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }
