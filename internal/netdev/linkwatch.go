//go:build linux

package netdev

import (
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// LinkWatch reports changes of the state of some devices, from the kernel's
// link notifications (RTNLGRP_LINK) in one network namespace.
type LinkWatch struct {
	src     linkSource
	names   map[int]string // the devices still watched; the reader's after start
	events  chan LinkEvent
	stop    chan struct{} // closed by Close
	done    chan struct{} // closed when the reader has ended
	once    sync.Once
	errMu   sync.Mutex
	err     error // why the reader ended, set before events is closed
	resyncs atomic.Uint64
}

// linkSource is where a watch hears from the kernel: netlink in one network
// namespace (nsLinks), or a test's stand-in.
type linkSource interface {
	// subscribe starts the kernel's link notifications on ch until done is
	// closed; the subscription closes ch when it ends, by itself (a
	// receive error, ENOBUFS included) or after done. onErr hears every
	// error the subscription meets.
	subscribe(ch chan<- netlink.LinkUpdate, done <-chan struct{}, onErr func(error)) error
	// state asks for a device's state now; errLinkGone when it is not in
	// the namespace.
	state(index int) (linkState, error)
	close()
}

var errLinkGone = errors.New("no such device")

// linkState is what the watch knows about a device.
type linkState struct {
	adminUp, carrier bool
}

func (s linkState) up() bool { return s.adminUp && s.carrier }

func stateOfFlags(flags uint32) linkState {
	return linkState{adminUp: flags&unix.IFF_UP != 0, carrier: flags&unix.IFF_LOWER_UP != 0}
}

// nsLinks is the kernel's netlink in one network namespace.
type nsLinks struct {
	ns netns.NsHandle
	h  *netlink.Handle
}

// subscribe subscribes in the watched namespace. From a thread already in
// it, it opens the socket there without entering it (setns), which needs
// CAP_SYS_ADMIN even into the namespace a thread is in, and a worker
// without root (Config.XSKMap) does not have.
func (s *nsLinks) subscribe(ch chan<- netlink.LinkUpdate, done <-chan struct{}, onErr func(error)) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	opts := netlink.LinkSubscribeOptions{ErrorCallback: onErr}
	cur, err := netns.Get()
	if err != nil {
		return fmt.Errorf("open the thread's network namespace: %w", err)
	}
	defer cur.Close()
	if !cur.Equal(s.ns) {
		opts.Namespace = &s.ns
	}
	return netlink.LinkSubscribeWithOptions(ch, done, opts)
}

func (s *nsLinks) state(index int) (linkState, error) {
	l, err := s.h.LinkByIndex(index)
	if err != nil {
		if errors.As(err, &netlink.LinkNotFoundError{}) || errors.Is(err, unix.ENODEV) {
			return linkState{}, errLinkGone
		}
		return linkState{}, fmt.Errorf("watch links: ask for interface index %d: %w", index, err)
	}
	return stateOfFlags(l.Attrs().RawFlags), nil
}

func (s *nsLinks) close() {
	s.h.Close()
	s.ns.Close()
}

// WatchLinks starts watching the devices in the network namespace of the
// calling thread; names maps each one's index to its name. Events arrive on
// Events as the kernel sends them, usually within a millisecond; a device
// already gone when the watch starts is reported gone at once. The watch
// lasts until Close, in whatever thread it is read from: it stays in the
// namespace it was started in.
//
// Where the kernel drops notifications because the watch fell behind
// (ENOBUFS), the watch subscribes again and asks for every device's state,
// so no change that lasts is missed; a down and up again in between may be.
func WatchLinks(names map[int]string) (*LinkWatch, error) {
	if len(names) == 0 {
		return nil, errors.New("watch links: no device given")
	}
	// The namespace, the handle and the first subscription: all this
	// thread's.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ns, err := netns.Get()
	if err != nil {
		return nil, fmt.Errorf("watch links: open the network namespace: %w", err)
	}
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE) // in this thread's namespace, ns
	if err != nil {
		ns.Close()
		return nil, fmt.Errorf("watch links: open netlink socket: %w", err)
	}
	if err := h.SetSocketTimeout(5 * time.Second); err != nil {
		h.Close()
		ns.Close()
		return nil, fmt.Errorf("watch links: set netlink timeout: %w", err)
	}
	return startWatch(names, &nsLinks{ns: ns, h: h})
}

// startWatch subscribes to src and asks for each device's state: subscribed
// first, then asked, so a device deleted before the subscription is gone in
// the answer and one deleted after it is in the notifications.
func startWatch(names map[int]string, src linkSource) (*LinkWatch, error) {
	w := &LinkWatch{src: src, names: map[int]string{}, events: make(chan LinkEvent, 16),
		stop: make(chan struct{}), done: make(chan struct{})}
	for i, n := range names {
		w.names[i] = n
	}
	sub, err := w.subscribe()
	if err != nil {
		src.close()
		return nil, err
	}
	state := map[int]*linkState{}
	first, err := w.sync(state)
	if err != nil {
		sub.end()
		src.close()
		return nil, err
	}
	go w.read(sub, state, first)
	return w, nil
}

// Events are the changes in the order the kernel reported them; a device's
// going down is held back for 50 ms, and not reported at all when the
// device is deleted within them (the kernel sets a device down before it
// deletes it). The channel is closed after Close (what it still holds may
// be read first), and when the kernel's notifications failed (see Err); not
// when the devices go away.
func (w *LinkWatch) Events() <-chan LinkEvent { return w.events }

// Err is why the watch ended by itself: why the kernel's notifications
// failed, once Events is closed; nil while the watch runs and after Close.
func (w *LinkWatch) Err() error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	return w.err
}

// Resyncs counts the times notifications were lost (the kernel's ENOBUFS)
// and the watch subscribed again and asked for every device's state.
func (w *LinkWatch) Resyncs() uint64 { return w.resyncs.Load() }

// fail records why the reader ends.
func (w *LinkWatch) fail(err error) {
	w.errMu.Lock()
	w.err = err
	w.errMu.Unlock()
}

// Close stops the watch and closes Events. It is safe to call more than
// once.
func (w *LinkWatch) Close() error {
	w.once.Do(func() {
		close(w.stop)
		<-w.done
		w.src.close()
	})
	return nil
}

// subscription is one subscription to the kernel's link notifications.
type subscription struct {
	updates chan netlink.LinkUpdate
	done    chan struct{}
	once    sync.Once
	mu      sync.Mutex
	err     error // the last error the subscription met
}

// end stops the subscription and waits for it to close updates.
func (s *subscription) end() {
	s.once.Do(func() { close(s.done) })
	for range s.updates {
	}
}

func (s *subscription) lastErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (w *LinkWatch) subscribe() (*subscription, error) {
	s := &subscription{updates: make(chan netlink.LinkUpdate, 64), done: make(chan struct{})}
	onErr := func(err error) {
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
	}
	if err := w.src.subscribe(s.updates, s.done, onErr); err != nil {
		return nil, fmt.Errorf("watch links: subscribe to link notifications: %w", err)
	}
	return s, nil
}

// sync asks for the state of every watched device and returns the changes
// from what state held.
func (w *LinkWatch) sync(state map[int]*linkState) ([]LinkEvent, error) {
	var out []LinkEvent
	for _, idx := range slices.Sorted(maps.Keys(w.names)) {
		st, err := w.src.state(idx)
		gone := errors.Is(err, errLinkGone)
		if err != nil && !gone {
			return nil, err
		}
		if ev, ok := linkChange(w.names, state, linkNote{index: idx, gone: gone, st: st}); ok {
			out = append(out, ev)
		}
	}
	return out, nil
}

// maxFruitless is how many subscriptions in a row may end having delivered
// nothing before the watch gives up.
const maxFruitless = 3

// holdDown is how long a device's going down is held back to see whether
// its deletion follows: the kernel sets a device down before it deletes it,
// in notifications that may arrive apart.
const holdDown = 50 * time.Millisecond

// read delivers the events until Close; first are the changes found when
// the watch started.
func (w *LinkWatch) read(sub *subscription, state map[int]*linkState, first []LinkEvent) {
	defer close(w.done)
	defer close(w.events)
	defer func() { sub.end() }()
	var held []LinkEvent // downs waiting for holdDown
	fruitless := 0       // subscriptions in a row that ended having delivered nothing
	delivered := false   // by the current subscription
	changes := first
	for {
		now := time.Now()
		var out []LinkEvent
		for _, ev := range changes {
			ev.Time = now
			if ev.Kind == LinkGone {
				held = slices.DeleteFunc(held, func(h LinkEvent) bool { return h.Index == ev.Index })
			}
			if ev.Kind == LinkDown {
				held = append(held, ev)
				continue
			}
			if i := slices.IndexFunc(held, func(h LinkEvent) bool { return h.Index == ev.Index }); i >= 0 {
				// Down and up again within holdDown: both are said.
				out = append(out, held[i])
				held = slices.Delete(held, i, i+1)
			}
			out = append(out, ev)
		}
		for len(held) > 0 && !now.Before(held[0].Time.Add(holdDown)) {
			out = append(out, held[0])
			held = held[1:]
		}
		for _, ev := range out {
			select {
			case w.events <- ev:
			case <-w.stop:
				return
			}
		}

		changes = nil
		var timer <-chan time.Time
		if len(held) > 0 {
			timer = time.After(time.Until(held[0].Time.Add(holdDown)))
		}
		select {
		case <-w.stop:
			return
		case <-timer:
		case u, ok := <-sub.updates:
			if ok {
				delivered = true
				if n, about := noteOf(u); about {
					if ev, changed := linkChange(w.names, state, n); changed {
						changes = append(changes, ev)
					}
				}
				continue
			}
			// The subscription ended by itself: notifications were lost.
			why := sub.lastErr()
			if why == nil {
				why = errors.New("the subscription ended")
			}
			sub.end()
			if delivered {
				fruitless = 0
			} else if fruitless++; fruitless >= maxFruitless {
				w.fail(fmt.Errorf("watch links: notifications ended %d times in a row: %w", fruitless, why))
				return
			}
			next, err := w.subscribe()
			if err != nil {
				w.fail(fmt.Errorf("%w (after %w)", err, why))
				return
			}
			sub, delivered = next, false
			w.resyncs.Add(1)
			if changes, err = w.sync(state); err != nil {
				w.fail(err)
				return
			}
		}
	}
}

// linkNote is what one notification or answer says about a device.
type linkNote struct {
	index int
	gone  bool
	st    linkState
}

// noteOf reads a notification; false when it is not about a device's own
// state.
func noteOf(u netlink.LinkUpdate) (linkNote, bool) {
	if u.Header.Type != unix.RTM_NEWLINK && u.Header.Type != unix.RTM_DELLINK {
		return linkNote{}, false
	}
	// A bridge reports its ports with family AF_BRIDGE, and RTM_DELLINK
	// when a port leaves it: the device stays.
	if u.Family != unix.AF_UNSPEC {
		return linkNote{}, false
	}
	return linkNote{index: int(u.Index), gone: u.Header.Type == unix.RTM_DELLINK, st: stateOfFlags(u.Flags)}, true
}

// linkChange applies a note to state and returns the change it makes to a
// watched device, if any. A device's first state is no change.
func linkChange(names map[int]string, state map[int]*linkState, n linkNote) (LinkEvent, bool) {
	name, watched := names[n.index]
	if !watched {
		return LinkEvent{}, false
	}
	if n.gone {
		delete(names, n.index)
		delete(state, n.index)
		return LinkEvent{Kind: LinkGone, Index: n.index, Name: name}, true
	}
	prev, known := state[n.index]
	st := n.st
	state[n.index] = &st
	if !known || prev.up() == st.up() {
		return LinkEvent{}, false
	}
	kind := LinkUp
	if !st.up() {
		kind = LinkDown
	}
	return LinkEvent{Kind: kind, Index: n.index, Name: name, AdminUp: st.adminUp, Carrier: st.carrier}, true
}
