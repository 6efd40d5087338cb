//go:build linux

package netdev

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// A watch whose socket fails ends, closes Events and says why in Err,
// rather than ending silently.
func TestLinkWatchReportsReadError(t *testing.T) {
	// An eventfd that is readable stands in for the netlink socket: poll
	// says it has data, and recvfrom fails on it (ENOTSOCK).
	sock, err := unix.Eventfd(1, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(sock)
		t.Fatal(err)
	}
	w := &LinkWatch{fd: sock, wake: wake, events: make(chan LinkEvent, 16), names: map[int]string{1: "lo"},
		stop: make(chan struct{}), done: make(chan struct{})}
	t.Cleanup(func() { w.Close() })
	if err := w.Err(); err != nil {
		t.Fatalf("Err before the watch ran = %v, want nil", err)
	}
	go w.read()
	for ev := range w.Events() {
		t.Errorf("event %+v from a socket that fails", ev)
	}
	if err := w.Err(); !errors.Is(err, unix.ENOTSOCK) {
		t.Fatalf("Err after the reader failed = %v, want ENOTSOCK", err)
	}
}
