package engine

// What an engine or a generator does when its devices go down, come back or
// go away while it runs: it watches the kernel's link notifications
// (netdev.LinkWatch), tells the caller of a device going down or up again
// (Config.OnLinkChange) and keeps running and counting, and stops with a
// *DeviceGoneError when a device is deleted.

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/xdpeng/xdpeng/internal/netdev"
)

// ErrDeviceGone: a device the engine or generator used was deleted, or left
// its network namespace, while it ran (*DeviceGoneError).
var ErrDeviceGone = errors.New("device gone")

// DeviceGoneError is a device that went away while Run ran: Run stopped
// the workers as soon as the kernel said so. The counters up to then stay
// readable (Stats); Close still closes everything.
type DeviceGoneError struct {
	// Device is the device that went: the engine's own, or an output.
	Device string
	// Time is when the kernel's notification was read.
	Time time.Time
}

func (e *DeviceGoneError) Error() string {
	return fmt.Sprintf("%s was deleted, or left this network namespace, at %s", e.Device, e.Time.Format("15:04:05.000"))
}

// Is makes errors.Is(err, ErrDeviceGone) true.
func (e *DeviceGoneError) Is(target error) bool { return target == ErrDeviceGone }

// LinkChange is a device of a running engine or generator going down or
// coming back up. The run goes on through it: nothing arrives or leaves
// while the device is down, and what does before and after is counted as
// always.
type LinkChange struct {
	// Device is the device: the engine's own, or an output.
	Device string
	// Time is when the kernel's notification was read.
	Time time.Time
	// Up says the device passes frames again; otherwise it stopped.
	Up bool
	// AdminUp is false when the device was set down (ip link set DEV
	// down); Carrier is false when its link is down (a cable, a switch
	// port, a veth peer that is down or gone).
	AdminUp, Carrier bool
}

// linkSource is a watch of the devices' links: netdev.LinkWatch.
type linkSource interface {
	Events() <-chan netdev.LinkEvent
	Err() error
	Close() error
}

// LinkWatcher watches devices' links as an Engine or a Generator does
// while it runs, for a program that runs neither (an in-kernel XDP path,
// say): a device going down or coming back comes on Changes, one deleted
// or gone from the network namespace on Gone. Start one with WatchLinks;
// Close it when done.
type LinkWatcher struct {
	src     linkSource
	changes chan LinkChange
	gone    chan *DeviceGoneError
	stop    chan struct{} // closed by Close
	done    chan struct{} // closed when forward has ended
	once    sync.Once
}

// newLinkWatcher starts handing on src's events.
func newLinkWatcher(src linkSource) *LinkWatcher {
	w := &LinkWatcher{src: src, changes: make(chan LinkChange, 16), gone: make(chan *DeviceGoneError, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	go w.forward()
	return w
}

func (w *LinkWatcher) forward() {
	defer close(w.done)
	defer close(w.changes)
	for ev := range w.src.Events() {
		if ev.Kind == netdev.LinkGone {
			select {
			case w.gone <- &DeviceGoneError{Device: ev.Name, Time: ev.Time}:
			default: // a device gone before was not read yet: the first is what counts
			}
			continue
		}
		select {
		case w.changes <- LinkChange{Device: ev.Name, Time: ev.Time, Up: ev.Kind == netdev.LinkUp, AdminUp: ev.AdminUp, Carrier: ev.Carrier}:
		case <-w.stop:
			return
		}
	}
}

// Changes are the devices going down and coming back, in the order the
// kernel said them; a device's going down is held back for 50 ms and not
// told when the device is deleted within them. The channel is closed when
// the watch ends: after Close, or when reading the kernel's notifications
// failed (Err says why).
func (w *LinkWatcher) Changes() <-chan LinkChange { return w.changes }

// Gone has the first watched device that was deleted, or left the network
// namespace; nothing more comes on it.
func (w *LinkWatcher) Gone() <-chan *DeviceGoneError { return w.gone }

// Err is why the watch ended by itself (reading the kernel's notifications
// failed), once Changes is closed; nil while it runs and after Close.
func (w *LinkWatcher) Err() error { return w.src.Err() }

// Close ends the watch and closes Changes. It is safe to call more than
// once.
func (w *LinkWatcher) Close() error {
	var err error
	w.once.Do(func() {
		close(w.stop)
		err = w.src.Close()
		<-w.done
	})
	return err
}

// linkChanges and linkGone are where run reads the watch from: nil (never
// ready) without a watch.
func (c *core) linkChanges() <-chan LinkChange {
	if c.links == nil {
		return nil
	}
	return c.links.Changes()
}

func (c *core) linkGone() <-chan *DeviceGoneError {
	if c.links == nil {
		return nil
	}
	return c.links.Gone()
}

// onLink handles one link change while run runs (ok false: the watch
// ended), telling c.onLinkChange.
func (c *core) onLink(ch LinkChange, ok bool) error {
	if !ok {
		// The watch failed: without it, a device deleted now would go
		// unnoticed, so the run ends with the watch's error.
		err := c.links.Err()
		c.links = nil
		if err != nil {
			return fmt.Errorf("watch the devices' links: %w", err)
		}
		return nil
	}
	if c.onLinkChange != nil {
		c.onLinkChange(ch)
	}
	return nil
}

// goneAfterError is called when a worker failed: a device going away makes
// its sockets fail (ENXIO) just before the kernel says that it went, so a
// worker's error is reported as the device gone if the watch says so
// within a moment.
func (c *core) goneAfterError() error {
	if c.links == nil {
		return nil
	}
	timeout := time.After(time.Second)
	for {
		select {
		case ch, ok := <-c.linkChanges():
			if err := c.onLink(ch, ok); err != nil || !ok {
				return nil
			}
		case g := <-c.linkGone():
			return g
		case <-timeout:
			return nil
		}
	}
}

// closeLinks ends the watch.
func (c *core) closeLinks() {
	if c.links != nil {
		c.links.Close()
		c.links = nil
	}
}
