package xsk

import (
	"errors"
	"os"
	"testing"
)

// A closed socket answers os.ErrClosed to every system call, never the
// in-memory socket's "ready" or a silent success.
func TestClosedSocketFails(t *testing.T) {
	s := newTestSocket(t, 64, 16)
	if ready, err := s.Poll(0, true); err != nil || !ready {
		t.Fatalf("open in-memory socket: Poll = %v, %v; want ready", ready, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if ready, err := s.Poll(0, true); !errors.Is(err, os.ErrClosed) || ready {
		t.Errorf("Poll after Close = %v, %v; want false, os.ErrClosed", ready, err)
	}
	for name, call := range map[string]func() error{
		"WakeRx":      s.WakeRx,
		"WakeTx":      s.WakeTx,
		"SetBusyPoll": func() error { return s.SetBusyPoll(20, 64) },
		"NAPIID":      func() error { _, err := s.NAPIID(); return err },
		"Statistics":  func() error { _, err := s.Statistics(); return err },
	} {
		if err := call(); !errors.Is(err, os.ErrClosed) {
			t.Errorf("%s after Close = %v, want os.ErrClosed", name, err)
		}
	}
}
