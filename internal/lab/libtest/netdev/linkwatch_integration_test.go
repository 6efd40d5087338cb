//go:build linux

package netdev_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// ip runs `ip ARGS...` and fails the test if it fails.
func ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %v: %v\n%s", args, err, out)
	}
}

// nextEvent waits for the watch's next event; the bound only guards against
// a hang.
func nextEvent(t *testing.T, w *netdev.LinkWatch) netdev.LinkEvent {
	t.Helper()
	select {
	case ev, ok := <-w.Events():
		if !ok {
			t.Fatal("the watch ended")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no link event")
	}
	panic("unreachable")
}

func checkEvent(t *testing.T, got netdev.LinkEvent, want netdev.LinkEvent) {
	t.Helper()
	if got.Time.IsZero() {
		t.Errorf("event %+v has no time", got)
	}
	got.Time = time.Time{}
	if got != want {
		t.Errorf("event %+v, want %+v", got, want)
	}
}

// TestWatchLinks sets a device down and up, takes its peer's carrier away
// and back, and deletes devices both ways they go: ip link del, and the
// peer's namespace removed (a veth pair goes with either end).
func TestWatchLinks(t *testing.T) {
	bed := testbedtest.New(t, 1, 2)
	l0, l1 := bed.Links[0], bed.Links[1]
	var w *netdev.LinkWatch
	err := bed.InDUT(func() (err error) {
		w, err = netdev.WatchLinks(map[int]string{l0.DUTIndex: l0.DUT, l1.DUTIndex: l1.DUT})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	ip(t, "-n", bed.DUTNS, "link", "set", l0.DUT, "down")
	checkEvent(t, nextEvent(t, w), netdev.LinkEvent{Kind: netdev.LinkDown, Index: l0.DUTIndex, Name: l0.DUT})
	ip(t, "-n", bed.DUTNS, "link", "set", l0.DUT, "up")
	checkEvent(t, nextEvent(t, w), netdev.LinkEvent{Kind: netdev.LinkUp, Index: l0.DUTIndex, Name: l0.DUT, AdminUp: true, Carrier: true})

	ip(t, "-n", bed.GenNS, "link", "set", l0.Gen, "down")
	checkEvent(t, nextEvent(t, w), netdev.LinkEvent{Kind: netdev.LinkDown, Index: l0.DUTIndex, Name: l0.DUT, AdminUp: true})
	ip(t, "-n", bed.GenNS, "link", "set", l0.Gen, "up")
	checkEvent(t, nextEvent(t, w), netdev.LinkEvent{Kind: netdev.LinkUp, Index: l0.DUTIndex, Name: l0.DUT, AdminUp: true, Carrier: true})

	ip(t, "-n", bed.DUTNS, "link", "del", l1.DUT)
	checkEvent(t, nextEvent(t, w), netdev.LinkEvent{Kind: netdev.LinkGone, Index: l1.DUTIndex, Name: l1.DUT})

	ip(t, "netns", "del", bed.GenNS)
	checkEvent(t, nextEvent(t, w), netdev.LinkEvent{Kind: netdev.LinkGone, Index: l0.DUTIndex, Name: l0.DUT})
	select {
	case ev := <-w.Events():
		t.Errorf("an event after every device went: %+v", ev)
	case <-time.After(100 * time.Millisecond):
	}
	if err := w.Close(); err != nil {
		t.Error(err)
	}
	for ev := range w.Events() { // closed by Close
		t.Errorf("an event after every device went: %+v", ev)
	}
}

// TestWatchLinksGoneBefore: a device deleted before the watch started is
// reported gone at once.
func TestWatchLinksGoneBefore(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	ip(t, "-n", bed.DUTNS, "link", "del", l.DUT)
	var w *netdev.LinkWatch
	err := bed.InDUT(func() (err error) {
		w, err = netdev.WatchLinks(map[int]string{l.DUTIndex: l.DUT})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	checkEvent(t, nextEvent(t, w), netdev.LinkEvent{Kind: netdev.LinkGone, Index: l.DUTIndex, Name: l.DUT})
}

// TestWatchLinksAfterLostNotifications: while nobody reads the watch, a
// flood of changes overflows its socket and the kernel drops notifications
// (ENOBUFS). The watch subscribes again and asks, so the device's last state
// is the last one reported, and it goes on reporting. Two floods, one
// ending down and one up: what the watch heard last before its socket
// overflowed is either, so a watch that did not ask again would mostly be
// right in one and wrong in the other.
func TestWatchLinksAfterLostNotifications(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	var w *netdev.LinkWatch
	err := bed.InDUT(func() (err error) {
		w, err = netdev.WatchLinks(map[int]string{l.DUTIndex: l.DUT})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	down := netdev.LinkEvent{Kind: netdev.LinkDown, Index: l.DUTIndex, Name: l.DUT}
	up := netdev.LinkEvent{Kind: netdev.LinkUp, Index: l.DUTIndex, Name: l.DUT, AdminUp: true, Carrier: true}
	for _, flood := range []struct {
		first, then string
		want        netdev.LinkEvent
	}{{"down", "up", down}, {"up", "down", up}} {
		resyncs := w.Resyncs()
		batch := filepath.Join(t.TempDir(), "flaps")
		var b strings.Builder
		for range 3000 {
			fmt.Fprintf(&b, "link set %s %s\nlink set %s %s\n", l.DUT, flood.first, l.DUT, flood.then)
		}
		fmt.Fprintf(&b, "link set %s %s\n", l.DUT, flood.first)
		if err := os.WriteFile(batch, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		ip(t, "-n", bed.DUTNS, "-batch", batch)

		var last netdev.LinkEvent
		n := 0
		for quiet := false; !quiet; {
			select {
			case ev, ok := <-w.Events():
				if !ok {
					t.Fatalf("the watch ended: %v", w.Err())
				}
				last = ev
				n++
			case <-time.After(500 * time.Millisecond):
				quiet = true
			}
		}
		if w.Resyncs() == resyncs {
			t.Fatalf("flood ending %s: no notification was lost in %d events: the test did not overflow the watch", flood.first, n)
		}
		checkEvent(t, last, flood.want)
		t.Logf("flood ending %s: %d events, %d resyncs", flood.first, n, w.Resyncs()-resyncs)
	}
	ip(t, "-n", bed.DUTNS, "link", "set", l.DUT, "down")
	checkEvent(t, nextEvent(t, w), down)
}
