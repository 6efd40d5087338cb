package engine

import (
	"errors"
	"fmt"
	"os"

	"github.com/xdpeng/xdpeng/internal/netdev"
)

// setup gives the NAPI of each of queues want, for busy polling (wait
// WaitBusyPoll), or puts it in threaded busy-poll mode
// (WaitThreadedBusyPoll), recording what was there for restore (and
// telling the guard first). For busy polling, where the kernel has no
// settings of a NAPI's own, or no NAPI is linked to a queue, it changes
// nothing there and says why in n.note. An error leaves n.changes as far
// as it got, for restore to put back.
func (n *napiState) setup(wait WaitMode, want NAPIConfig, queues []int) error {
	if wait == WaitThreadedBusyPoll {
		return n.setupThreaded(queues)
	}
	if wait != WaitBusyPoll || want == (NAPIConfig{}) {
		return nil
	}
	// Each queue's own NAPI where the kernel has per-NAPI settings and
	// the driver links every queue served to its NAPI; else the device's
	// values, which all its NAPIs share.
	type target struct {
		queue  int
		id     uint32
		before NAPIConfig
	}
	var targets []target
	for _, q := range queues {
		if q >= n.dev.RxQueues {
			// A generator's queue beyond the receive queues.
			return n.holdDeviceDeferral(fmt.Sprintf("%s has no receive queue %d, whose NAPI a socket on queue %d would busy-poll", n.dev.Name, q, q), want)
		}
		rq, err := netdev.RxQueueInfo(n.dev.Index, q)
		if errors.Is(err, netdev.ErrNoQueueInfo) {
			return n.holdDeviceDeferral(err.Error(), want)
		}
		if err != nil {
			return err
		}
		if rq.NAPIID == 0 {
			return n.holdDeviceDeferral(fmt.Sprintf("%s links no NAPI to queue %d (netdev queue-get)", n.dev.Name, q), want)
		}
		_, before, err := netdev.NAPIByID(rq.NAPIID)
		if err != nil {
			return err
		}
		if before == nil {
			return n.holdDeviceDeferral(netdev.ErrNoNAPIConfig.Error(), want)
		}
		targets = append(targets, target{q, rq.NAPIID, NAPIConfig(*before)})
	}
	for _, t := range targets {
		c := NAPIChange{Queue: t.queue, NAPIID: t.id, Before: t.before, After: want}
		if err := n.changing(c); err != nil {
			return err
		}
		if err := netdev.SetNAPI(t.id, netdev.NAPIConfig(want)); err != nil {
			n.unchanged(c)
			if errors.Is(err, os.ErrPermission) {
				// A worker without CAP_NET_ADMIN (Config.XSKMap)
				// busy-polls all the same.
				n.note = fmt.Sprintf("not allowed to set the queues' NAPIs (napi-set needs CAP_NET_ADMIN): %v", err)
				return nil
			}
			return fmt.Errorf("busy polling: queue %d: %w", t.queue, err)
		}
	}
	return nil
}

// checkThreadedBusyPoll refuses WaitThreadedBusyPoll, before anything is
// set up, on a kernel without it or to a process that may not set it.
func checkThreadedBusyPoll(w WaitMode) error {
	if w != WaitThreadedBusyPoll {
		return nil
	}
	err := netdev.ProbeThreadedBusyPoll()
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("threaded busy polling: setting a NAPI's threaded mode (napi-set) needs CAP_NET_ADMIN: %w", err)
	}
	return err // ErrNoThreadedBusyPoll says what is missing
}

// setupThreaded puts the NAPI of each of queues in threaded busy-poll
// mode, recording the mode it had for restore (and telling the guard
// first). An error leaves n.changes as far as it got.
func (n *napiState) setupThreaded(queues []int) error {
	type target struct {
		queue int
		napi  netdev.NAPI
	}
	var targets []target
	for _, q := range queues {
		rq, err := netdev.RxQueueInfo(n.dev.Index, q)
		if err != nil {
			return fmt.Errorf("threaded busy polling: %w", err)
		}
		if rq.NAPIID == 0 {
			return fmt.Errorf("threaded busy polling: %s links no NAPI to queue %d (netdev queue-get), so there is no NAPI thread to poll it: %w",
				n.dev.Name, q, errors.ErrUnsupported)
		}
		info, _, err := netdev.NAPIByID(rq.NAPIID)
		if err != nil {
			return fmt.Errorf("threaded busy polling: %w", err)
		}
		if !info.ThreadedKnown {
			return fmt.Errorf("threaded busy polling: NAPI %d: the kernel does not report its threaded mode: %w", info.ID, ErrNoThreadedBusyPoll)
		}
		targets = append(targets, target{q, info})
	}
	for _, t := range targets {
		c := NAPIChange{Queue: t.queue, NAPIID: t.napi.ID, Threaded: true, ThreadedBefore: NAPIThreaded(t.napi.Threaded)}
		if err := n.changing(c); err != nil {
			return err
		}
		if err := netdev.SetNAPIThreaded(t.napi.ID, netdev.NAPIThreadedBusyPoll); err != nil {
			n.unchanged(c)
			return fmt.Errorf("threaded busy polling: queue %d: %w", t.queue, err)
		}
		// The kernel made the thread, if it had none.
		if info, _, err := netdev.NAPIByID(t.napi.ID); err == nil {
			n.changes[len(n.changes)-1].ThreadPID = info.PID
		}
	}
	return nil
}

// unchanged forgets c, the last change changing recorded, which was not
// made after all.
func (n *napiState) unchanged(c NAPIChange) {
	n.changes = n.changes[:len(n.changes)-1]
	if n.guard != nil {
		n.guard.Restored(c)
	}
}

// changing tells the guard of c and records it for restore.
func (n *napiState) changing(c NAPIChange) error {
	if n.guard != nil {
		if err := n.guard.Changing(c); err != nil {
			return fmt.Errorf("busy polling: %w", err)
		}
	}
	n.changes = append(n.changes, c)
	return nil
}

// holdDeviceDeferral sets the device-wide deferral where a queue's own
// NAPI cannot be set (why), held with the device's other holders; not on
// veth, whose NAPIs no interrupt runs.
func (n *napiState) holdDeviceDeferral(why string, want NAPIConfig) error {
	if n.dev.Driver == "veth" {
		n.note = fmt.Sprintf("%s; a veth's NAPI no interrupt runs: nothing to defer", why)
		return nil
	}
	holder, err := netdev.NewHolder()
	if err != nil {
		return fmt.Errorf("busy polling: %w", err)
	}
	b := netdev.IRQDeferral{DeferHardIRQs: uint64(want.DeferHardIRQs), GROFlushTimeout: want.GROFlushTimeout}
	cur, err := netdev.IRQDeferralOf(n.dev.Name)
	if err != nil {
		// sysfs mounted for another network namespace, or none.
		n.note = fmt.Sprintf("%s, and the device-wide values cannot be read: %v", why, err)
		return nil
	}
	c := NAPIChange{Queue: -1, Device: true, After: NAPIConfig{DeferHardIRQs: want.DeferHardIRQs, GROFlushTimeout: want.GROFlushTimeout},
		Before: NAPIConfig{DeferHardIRQs: uint32(cur.DeferHardIRQs), GROFlushTimeout: cur.GROFlushTimeout}}
	if err := n.changing(c); err != nil {
		return err
	}
	before, err := netdev.HoldIRQDeferral(n.dev.Name, n.dev.Index, b, holder)
	if err != nil {
		n.unchanged(c)
		if errors.Is(err, os.ErrPermission) {
			n.note = fmt.Sprintf("%s, and setting the device-wide values needs root: %v", why, err)
			return nil
		}
		return fmt.Errorf("busy polling: %w", err)
	}
	n.changes[len(n.changes)-1].Before = NAPIConfig{DeferHardIRQs: uint32(before.DeferHardIRQs), GROFlushTimeout: before.GROFlushTimeout}
	n.holder = holder
	n.note = fmt.Sprintf("%s: the device-wide values set, which every NAPI of %s shares", why, n.dev.Name)
	return nil
}

// restore puts back what setup changed, telling the guard.
func (n *napiState) restore() error {
	var errs []error
	for _, c := range n.changes {
		var err error
		switch {
		case c.Device:
			err = netdev.ReleaseIRQDeferral(n.dev.Index, n.holder)
		case c.Threaded:
			err = netdev.SetNAPIThreaded(c.NAPIID, netdev.NAPIThreaded(c.ThreadedBefore))
		default:
			err = netdev.SetNAPI(c.NAPIID, netdev.NAPIConfig(c.Before))
		}
		if err != nil {
			what := fmt.Sprintf("queue %d's NAPI", c.Queue)
			if c.Device {
				what = n.dev.Name + "'s interrupt deferral"
			}
			errs = append(errs, fmt.Errorf("put back %s: %w", what, err))
			continue
		}
		if n.guard != nil {
			n.guard.Restored(c)
		}
	}
	n.changes = nil
	return errors.Join(errs...)
}
