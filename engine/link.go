package engine

// What an engine or a generator does when its devices go down, come back or
// go away while it runs: it watches the kernel's link notifications
// (netdev.LinkWatch), tells the caller of a device going down or up again
// (Config.OnLinkChange) and keeps running and counting, and stops with a
// *DeviceGoneError when a device is deleted.

import (
	"errors"
	"fmt"
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

// linkEvents is where run reads the watch's events from: nil (never ready)
// without a watch.
func (c *core) linkEvents() <-chan netdev.LinkEvent {
	if c.links == nil {
		return nil
	}
	return c.links.Events()
}

// onLink handles one link event while run runs: a *DeviceGoneError for a
// device gone, nil otherwise (after telling c.onLinkChange).
func (c *core) onLink(ev netdev.LinkEvent, ok bool) error {
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
	if ev.Kind == netdev.LinkGone {
		return &DeviceGoneError{Device: ev.Name, Time: ev.Time}
	}
	if c.onLinkChange != nil {
		c.onLinkChange(LinkChange{Device: ev.Name, Time: ev.Time, Up: ev.Kind == netdev.LinkUp, AdminUp: ev.AdminUp, Carrier: ev.Carrier})
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
		case ev, ok := <-c.linkEvents():
			if !ok {
				return nil
			}
			if err := c.onLink(ev, true); err != nil {
				return err
			}
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
