//go:build linux

package netdev

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// fakeLinks stands in for the kernel: the test sends notifications on each
// subscription and ends it when it likes; state answers from states.
type fakeLinks struct {
	mu     sync.Mutex
	states map[int]linkState // a device not in it is gone
	subErr error             // what subscribing fails with, if anything
	subs   chan *fakeSub     // each subscription, as it starts
	closed bool
}

type fakeSub struct {
	ch    chan<- netlink.LinkUpdate
	done  <-chan struct{}
	onErr func(error)
	once  sync.Once
}

// endWith ends the subscription by itself, as a receive error does.
func (s *fakeSub) endWith(err error) {
	s.onErr(err)
	s.once.Do(func() { close(s.ch) })
}

func newFakeLinks(states map[int]linkState) *fakeLinks {
	return &fakeLinks{states: states, subs: make(chan *fakeSub, 8)}
}

func (f *fakeLinks) subscribe(ch chan<- netlink.LinkUpdate, done <-chan struct{}, onErr func(error)) error {
	f.mu.Lock()
	err := f.subErr
	f.mu.Unlock()
	if err != nil {
		return err
	}
	s := &fakeSub{ch: ch, done: done, onErr: onErr}
	go func() {
		<-done
		s.once.Do(func() { close(ch) })
	}()
	f.subs <- s
	return nil
}

func (f *fakeLinks) state(index int) (linkState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.states[index]
	if !ok {
		return linkState{}, errLinkGone
	}
	return st, nil
}

func (f *fakeLinks) close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
}

func (f *fakeLinks) set(index int, st *linkState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st == nil {
		delete(f.states, index)
	} else {
		f.states[index] = *st
	}
}

func nextSub(t *testing.T, f *fakeLinks) *fakeSub {
	t.Helper()
	select {
	case s := <-f.subs:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not subscribe")
	}
	panic("unreachable")
}

func next(t *testing.T, w *LinkWatch) LinkEvent {
	t.Helper()
	select {
	case ev, ok := <-w.Events():
		if !ok {
			t.Fatalf("the watch ended: %v", w.Err())
		}
		ev.Time = time.Time{}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no link event")
	}
	panic("unreachable")
}

var running = linkState{adminUp: true, carrier: true}

// A device gone before the watch starts is reported gone at once; the
// others are not reported until they change.
func TestLinkWatchGoneAtStart(t *testing.T) {
	f := newFakeLinks(map[int]linkState{5: running})
	w, err := startWatch(map[int]string{5: "dut0", 6: "dut1"}, f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	nextSub(t, f)
	if ev := next(t, w); ev != (LinkEvent{Kind: LinkGone, Index: 6, Name: "dut1"}) {
		t.Fatalf("first event %+v, want dut1 gone", ev)
	}
	w.Close()
	for ev := range w.Events() {
		t.Errorf("event %+v after Close", ev)
	}
	if !f.closed {
		t.Error("Close left the kernel's sockets open")
	}
}

// When notifications are lost (the subscription ends with ENOBUFS), the
// watch subscribes again, asks for every device's state and reports what
// changed meanwhile; then it goes on as before.
func TestLinkWatchResyncs(t *testing.T) {
	f := newFakeLinks(map[int]linkState{5: running, 6: running})
	w, err := startWatch(map[int]string{5: "dut0", 6: "dut1"}, f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	s1 := nextSub(t, f)
	s1.ch <- linkUpdate(unix.RTM_NEWLINK, unix.AF_UNSPEC, 5, 0)
	if ev := next(t, w); ev != (LinkEvent{Kind: LinkDown, Index: 5, Name: "dut0"}) {
		t.Fatalf("event %+v, want dut0 down", ev)
	}

	// Meanwhile, unheard: dut0 comes up again, dut1 goes away.
	f.set(5, &running)
	f.set(6, nil)
	s1.endWith(unix.ENOBUFS)
	s2 := nextSub(t, f)
	got := map[LinkEvent]bool{next(t, w): true, next(t, w): true}
	for _, want := range []LinkEvent{{Kind: LinkUp, Index: 5, Name: "dut0", AdminUp: true, Carrier: true}, {Kind: LinkGone, Index: 6, Name: "dut1"}} {
		if !got[want] {
			t.Errorf("after the resync: %v, want %+v among them", got, want)
		}
	}
	if n := w.Resyncs(); n != 1 {
		t.Errorf("Resyncs = %d, want 1", n)
	}
	select {
	case <-s1.done:
	default:
		t.Error("the first subscription was not ended")
	}

	s2.ch <- linkUpdate(unix.RTM_DELLINK, unix.AF_UNSPEC, 5, 0)
	if ev := next(t, w); ev != (LinkEvent{Kind: LinkGone, Index: 5, Name: "dut0"}) {
		t.Fatalf("event %+v, want dut0 gone", ev)
	}
	if err := w.Err(); err != nil {
		t.Errorf("Err of a running watch = %v", err)
	}
}

// A watch whose notifications keep failing ends, closes Events and says
// why in Err, rather than ending silently or trying for ever.
func TestLinkWatchReportsReadError(t *testing.T) {
	f := newFakeLinks(map[int]linkState{1: running})
	w, err := startWatch(map[int]string{1: "lo"}, f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	broken := errors.New("socket broken")
	go func() {
		for s := range f.subs {
			s.endWith(broken)
		}
	}()
	for ev := range w.Events() {
		t.Errorf("event %+v from a socket that fails", ev)
	}
	if err := w.Err(); !errors.Is(err, broken) {
		t.Fatalf("Err after the notifications kept failing = %v, want %v", err, broken)
	}
}

// A watch that cannot subscribe again ends with that error.
func TestLinkWatchReportsSubscribeError(t *testing.T) {
	f := newFakeLinks(map[int]linkState{1: running})
	w, err := startWatch(map[int]string{1: "lo"}, f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	refused := errors.New("subscription refused")
	f.mu.Lock()
	f.subErr = refused
	f.mu.Unlock()
	nextSub(t, f).endWith(unix.ENOBUFS)
	for ev := range w.Events() {
		t.Errorf("event %+v", ev)
	}
	if err := w.Err(); !errors.Is(err, refused) || !errors.Is(err, unix.ENOBUFS) {
		t.Fatalf("Err = %v, want both %v and ENOBUFS", err, refused)
	}
}
