//go:build linux

package netdev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// LinkWatch reports changes of the state of some devices, from the kernel's
// link notifications (RTNLGRP_LINK) in one network namespace.
type LinkWatch struct {
	fd     int // netlink socket, bound to RTNLGRP_LINK
	wake   int // eventfd that ends the reader
	events chan LinkEvent
	names  map[int]string
	stop   chan struct{} // closed by Close
	done   chan struct{} // closed when the reader has ended
	once   sync.Once
	errMu  sync.Mutex
	err    error // why the reader ended, set before events is closed
}

// linkState is what the watch knows about a device.
type linkState struct {
	adminUp, carrier bool
}

func (s linkState) up() bool { return s.adminUp && s.carrier }

// WatchLinks starts watching the devices in the network namespace of the
// calling thread; names maps each one's index to its name. Events arrive on
// Events as the kernel sends them, usually within a millisecond; a device
// already gone when the watch starts is reported gone at once. The watch
// lasts until Close, in whatever thread it is read from: its socket stays
// in the namespace it was opened in.
//
// Where the kernel drops notifications because the watch fell behind
// (ENOBUFS), the watch asks for every device's state again, so no change
// that lasts is missed; a down and up again in between may be.
func WatchLinks(names map[int]string) (*LinkWatch, error) {
	if len(names) == 0 {
		return nil, errors.New("watch links: no device given")
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("watch links: open netlink socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: unix.RTMGRP_LINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("watch links: subscribe to link notifications: %w", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("watch links: eventfd: %w", err)
	}
	w := &LinkWatch{fd: fd, wake: wake, events: make(chan LinkEvent, 16), names: map[int]string{}, stop: make(chan struct{}), done: make(chan struct{})}
	for i, n := range names {
		w.names[i] = n
	}
	// Subscribed first, then asked: a device deleted before the subscription
	// answers ENODEV here, one deleted after it is in the notifications.
	if err := w.query(); err != nil {
		w.closeFDs()
		return nil, err
	}
	go w.read()
	return w, nil
}

// Events are the changes in the order the kernel reported them; a device's
// going down is held back for 50 ms, and not reported at all when the
// device is deleted within them (the kernel sets a device down before it
// deletes it). The channel is closed after Close (what it still holds may
// be read first), and when reading the socket failed (see Err); not when
// the devices go away.
func (w *LinkWatch) Events() <-chan LinkEvent { return w.events }

// Err is why the watch ended by itself: the error that reading the kernel's
// notifications failed with, once Events is closed; nil while the watch
// runs and after Close.
func (w *LinkWatch) Err() error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	return w.err
}

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
		var one [8]byte
		binary.NativeEndian.PutUint64(one[:], 1)
		unix.Write(w.wake, one[:])
		<-w.done
		w.closeFDs()
	})
	return nil
}

func (w *LinkWatch) closeFDs() {
	unix.Close(w.fd)
	unix.Close(w.wake)
}

// query asks for the state of every watched device; the replies come on the
// watch's socket with the notifications, each with the device's index as
// its sequence number.
func (w *LinkWatch) query() error {
	for idx := range w.names {
		req := make([]byte, unix.NLMSG_HDRLEN+unix.SizeofIfInfomsg)
		binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
		binary.NativeEndian.PutUint16(req[4:], unix.RTM_GETLINK)
		binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST)
		binary.NativeEndian.PutUint32(req[8:], uint32(idx))
		binary.NativeEndian.PutUint32(req[unix.NLMSG_HDRLEN+4:], uint32(idx)) // ifi_index
		if err := unix.Sendto(w.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			return fmt.Errorf("watch links: ask for interface index %d: %w", idx, err)
		}
	}
	return nil
}

// holdDown is how long a device's going down is held back to see whether
// its deletion follows: the kernel sets a device down before it deletes it,
// in notifications that may arrive apart.
const holdDown = 50 * time.Millisecond

// read delivers the events until Close.
func (w *LinkWatch) read() {
	defer close(w.done)
	defer close(w.events)
	state := map[int]*linkState{} // a device's entry appears with its first reply or notification
	var held []LinkEvent          // downs waiting for holdDown
	buf := make([]byte, 64<<10)
	fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}, {Fd: int32(w.wake), Events: unix.POLLIN}}
	for {
		timeout := -1
		if len(held) > 0 {
			timeout = max(int(time.Until(held[0].Time.Add(holdDown)).Milliseconds()), 0)
		}
		n, err := unix.Poll(fds, timeout)
		if err != nil && !errors.Is(err, unix.EINTR) {
			w.fail(fmt.Errorf("watch links: poll: %w", err))
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		var changes []LinkEvent
		if n > 0 && fds[0].Revents != 0 {
			if changes, err = w.receive(buf, state); err != nil {
				w.fail(err)
				return
			}
		}
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
	}
}

// receive reads one batch of messages and returns the changes they make,
// or why the socket failed.
func (w *LinkWatch) receive(buf []byte, state map[int]*linkState) ([]LinkEvent, error) {
	n, _, err := unix.Recvfrom(w.fd, buf, unix.MSG_DONTWAIT)
	switch {
	case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
		return nil, nil
	case errors.Is(err, unix.ENOBUFS):
		// Notifications were dropped: ask again.
		return nil, w.query()
	case err != nil:
		return nil, fmt.Errorf("watch links: read notifications: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return nil, nil
	}
	return linkChanges(msgs, w.names, state), nil
}

// linkChanges turns netlink messages into the changes of the watched
// devices, updating state.
func linkChanges(msgs []syscall.NetlinkMessage, names map[int]string, state map[int]*linkState) []LinkEvent {
	var out []LinkEvent
	for _, m := range msgs {
		var idx int
		var gone bool
		var st linkState
		switch m.Header.Type {
		case unix.NLMSG_ERROR:
			// The reply to a query for a device that no longer exists.
			if len(m.Data) < 4 || int32(binary.NativeEndian.Uint32(m.Data)) != -int32(unix.ENODEV) {
				continue
			}
			idx, gone = int(m.Header.Seq), true
		case unix.RTM_NEWLINK, unix.RTM_DELLINK:
			if len(m.Data) < unix.SizeofIfInfomsg {
				continue
			}
			// A bridge reports its ports with family AF_BRIDGE, and
			// RTM_DELLINK when a port leaves it: the device stays.
			if m.Data[0] != unix.AF_UNSPEC {
				continue
			}
			idx = int(int32(binary.NativeEndian.Uint32(m.Data[4:])))
			flags := binary.NativeEndian.Uint32(m.Data[8:])
			gone = m.Header.Type == unix.RTM_DELLINK
			st = linkState{adminUp: flags&unix.IFF_UP != 0, carrier: flags&unix.IFF_LOWER_UP != 0}
		default:
			continue
		}
		name, watched := names[idx]
		if !watched {
			continue
		}
		if gone {
			delete(names, idx)
			delete(state, idx)
			out = append(out, LinkEvent{Kind: LinkGone, Index: idx, Name: name})
			continue
		}
		prev, known := state[idx]
		state[idx] = &st
		if !known || prev.up() == st.up() {
			continue
		}
		kind := LinkUp
		if !st.up() {
			kind = LinkDown
		}
		out = append(out, LinkEvent{Kind: kind, Index: idx, Name: name, AdminUp: st.adminUp, Carrier: st.carrier})
	}
	return out
}
