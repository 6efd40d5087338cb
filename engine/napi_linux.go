package engine

import (
	"errors"
	"fmt"
	"os"

	"github.com/xdpeng/xdpeng/internal/netdev"
)

// setupNAPI gives the NAPI of each queue served Config.BusyPollNAPI, for
// busy polling, recording what was there for Close (and telling
// Config.NAPIGuard first). Where the kernel has no settings of a NAPI's
// own, or no NAPI is linked to a queue, it changes nothing there and says
// why in e.napiNote. An error leaves e.napi as far as it got, for Close to
// put back.
func (e *Engine) setupNAPI() error {
	cfg := &e.cfg
	if cfg.Wait == WaitThreadedBusyPoll {
		return e.setupThreadedBusyPoll()
	}
	if cfg.Wait != WaitBusyPoll || cfg.BusyPollNAPI == (NAPIConfig{}) {
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
	for _, q := range cfg.Queues {
		rq, err := netdev.RxQueueInfo(e.dev.Index, q)
		if errors.Is(err, netdev.ErrNoQueueInfo) {
			return e.holdDeviceDeferral(err.Error())
		}
		if err != nil {
			return err
		}
		if rq.NAPIID == 0 {
			return e.holdDeviceDeferral(fmt.Sprintf("%s links no NAPI to queue %d (netdev queue-get)", e.dev.Name, q))
		}
		_, before, err := netdev.NAPIByID(rq.NAPIID)
		if err != nil {
			return err
		}
		if before == nil {
			return e.holdDeviceDeferral(netdev.ErrNoNAPIConfig.Error())
		}
		targets = append(targets, target{q, rq.NAPIID, NAPIConfig(*before)})
	}
	want := netdev.NAPIConfig(cfg.BusyPollNAPI)
	for _, t := range targets {
		c := NAPIChange{Queue: t.queue, NAPIID: t.id, Before: t.before, After: cfg.BusyPollNAPI}
		if err := e.napiChanging(c); err != nil {
			return err
		}
		if err := netdev.SetNAPI(t.id, want); err != nil {
			e.napiUnchanged(c)
			if errors.Is(err, os.ErrPermission) {
				// A worker without CAP_NET_ADMIN (Config.XSKMap)
				// busy-polls all the same.
				e.napiNote = fmt.Sprintf("not allowed to set the queues' NAPIs (napi-set needs CAP_NET_ADMIN): %v", err)
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

// setupThreadedBusyPoll puts the NAPI of each queue served in threaded
// busy-poll mode, recording the mode it had for Close (and telling
// Config.NAPIGuard first). An error leaves e.napi as far as it got.
func (e *Engine) setupThreadedBusyPoll() error {
	type target struct {
		queue int
		napi  netdev.NAPI
	}
	var targets []target
	for _, q := range e.cfg.Queues {
		rq, err := netdev.RxQueueInfo(e.dev.Index, q)
		if err != nil {
			return fmt.Errorf("threaded busy polling: %w", err)
		}
		if rq.NAPIID == 0 {
			return fmt.Errorf("threaded busy polling: %s links no NAPI to queue %d (netdev queue-get), so there is no NAPI thread to poll it: %w",
				e.dev.Name, q, errors.ErrUnsupported)
		}
		n, _, err := netdev.NAPIByID(rq.NAPIID)
		if err != nil {
			return fmt.Errorf("threaded busy polling: %w", err)
		}
		if !n.ThreadedKnown {
			return fmt.Errorf("threaded busy polling: NAPI %d: the kernel does not report its threaded mode: %w", n.ID, ErrNoThreadedBusyPoll)
		}
		targets = append(targets, target{q, n})
	}
	for _, t := range targets {
		c := NAPIChange{Queue: t.queue, NAPIID: t.napi.ID, Threaded: true, ThreadedBefore: NAPIThreaded(t.napi.Threaded)}
		if err := e.napiChanging(c); err != nil {
			return err
		}
		if err := netdev.SetNAPIThreaded(t.napi.ID, netdev.NAPIThreadedBusyPoll); err != nil {
			e.napiUnchanged(c)
			return fmt.Errorf("threaded busy polling: queue %d: %w", t.queue, err)
		}
		// The kernel made the thread, if it had none.
		if n, _, err := netdev.NAPIByID(t.napi.ID); err == nil {
			e.napi[len(e.napi)-1].ThreadPID = n.PID
		}
	}
	return nil
}

// napiUnchanged forgets c, the last change napiChanging recorded, which
// was not made after all.
func (e *Engine) napiUnchanged(c NAPIChange) {
	e.napi = e.napi[:len(e.napi)-1]
	if g := e.cfg.NAPIGuard; g != nil {
		g.Restored(c)
	}
}

// napiChanging tells Config.NAPIGuard of c and records it for Close.
func (e *Engine) napiChanging(c NAPIChange) error {
	if g := e.cfg.NAPIGuard; g != nil {
		if err := g.Changing(c); err != nil {
			return fmt.Errorf("busy polling: %w", err)
		}
	}
	e.napi = append(e.napi, c)
	return nil
}

// holdDeviceDeferral sets the device-wide deferral where a queue's own
// NAPI cannot be set (why), held with the device's other holders; not on
// veth, whose NAPIs no interrupt runs.
func (e *Engine) holdDeviceDeferral(why string) error {
	if e.dev.Driver == "veth" {
		e.napiNote = fmt.Sprintf("%s; a veth's NAPI no interrupt runs: nothing to defer", why)
		return nil
	}
	holder, err := netdev.NewHolder()
	if err != nil {
		return fmt.Errorf("busy polling: %w", err)
	}
	b := netdev.IRQDeferral{DeferHardIRQs: uint64(e.cfg.BusyPollNAPI.DeferHardIRQs), GROFlushTimeout: e.cfg.BusyPollNAPI.GROFlushTimeout}
	cur, err := netdev.IRQDeferralOf(e.dev.Name)
	if err != nil {
		// sysfs mounted for another network namespace, or none.
		e.napiNote = fmt.Sprintf("%s, and the device-wide values cannot be read: %v", why, err)
		return nil
	}
	c := NAPIChange{Queue: -1, Device: true, After: NAPIConfig{DeferHardIRQs: e.cfg.BusyPollNAPI.DeferHardIRQs, GROFlushTimeout: e.cfg.BusyPollNAPI.GROFlushTimeout},
		Before: NAPIConfig{DeferHardIRQs: uint32(cur.DeferHardIRQs), GROFlushTimeout: cur.GROFlushTimeout}}
	if err := e.napiChanging(c); err != nil {
		return err
	}
	before, err := netdev.HoldIRQDeferral(e.dev.Name, e.dev.Index, b, holder)
	if err != nil {
		e.napiUnchanged(c)
		if errors.Is(err, os.ErrPermission) {
			e.napiNote = fmt.Sprintf("%s, and setting the device-wide values needs root: %v", why, err)
			return nil
		}
		return fmt.Errorf("busy polling: %w", err)
	}
	e.napi[len(e.napi)-1].Before = NAPIConfig{DeferHardIRQs: uint32(before.DeferHardIRQs), GROFlushTimeout: before.GROFlushTimeout}
	e.napiHolder = holder
	e.napiNote = fmt.Sprintf("%s: the device-wide values set, which every NAPI of %s shares", why, e.dev.Name)
	return nil
}

// restoreNAPI puts back what setupNAPI changed, telling Config.NAPIGuard.
func (e *Engine) restoreNAPI() error {
	var errs []error
	for _, c := range e.napi {
		var err error
		switch {
		case c.Device:
			err = netdev.ReleaseIRQDeferral(e.dev.Index, e.napiHolder)
		case c.Threaded:
			err = netdev.SetNAPIThreaded(c.NAPIID, netdev.NAPIThreaded(c.ThreadedBefore))
		default:
			err = netdev.SetNAPI(c.NAPIID, netdev.NAPIConfig(c.Before))
		}
		if err != nil {
			what := fmt.Sprintf("queue %d's NAPI", c.Queue)
			if c.Device {
				what = e.dev.Name + "'s interrupt deferral"
			}
			errs = append(errs, fmt.Errorf("put back %s: %w", what, err))
			continue
		}
		if e.cfg.NAPIGuard != nil {
			e.cfg.NAPIGuard.Restored(c)
		}
	}
	e.napi = nil
	return errors.Join(errs...)
}
