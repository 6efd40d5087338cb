package engine

import (
	"errors"
	"fmt"
	"os"
	"strings"

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
	if cfg.Wait != WaitBusyPoll || cfg.BusyPollNAPI == (NAPIConfig{}) {
		return nil
	}
	want := netdev.NAPIConfig(cfg.BusyPollNAPI)
	var unlinked []string
	for _, q := range cfg.Queues {
		rq, err := netdev.RxQueueInfo(e.dev.Index, q)
		if errors.Is(err, netdev.ErrNoQueueInfo) {
			return e.holdDeviceDeferral(err)
		}
		if err != nil {
			return err
		}
		if rq.NAPIID == 0 {
			unlinked = append(unlinked, fmt.Sprint(q))
			continue
		}
		_, before, err := netdev.NAPIByID(rq.NAPIID)
		if err != nil {
			return err
		}
		if before == nil {
			return e.holdDeviceDeferral(netdev.ErrNoNAPIConfig)
		}
		c := NAPIChange{Queue: q, NAPIID: rq.NAPIID, Before: NAPIConfig(*before), After: cfg.BusyPollNAPI}
		if err := e.napiChanging(c); err != nil {
			return err
		}
		if err := netdev.SetNAPI(rq.NAPIID, want); err != nil {
			return fmt.Errorf("busy polling: queue %d: %w", q, err)
		}
	}
	if len(unlinked) > 0 {
		e.napiNote = fmt.Sprintf("%s links no NAPI to queue %s (netdev queue-get): nothing to set there", e.dev.Name, strings.Join(unlinked, ", "))
	}
	return nil
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

// holdDeviceDeferral sets the device-wide deferral where the kernel has no
// settings of a NAPI's own (why), held with the device's other holders;
// not on veth, whose NAPIs no interrupt runs.
func (e *Engine) holdDeviceDeferral(why error) error {
	if e.dev.Driver == "veth" {
		e.napiNote = fmt.Sprintf("%v; %s is a veth, whose NAPI no interrupt runs: nothing to defer", why, e.dev.Name)
		return nil
	}
	holder, err := netdev.Holder(os.Getpid())
	if err != nil {
		return fmt.Errorf("busy polling: %w", err)
	}
	b := netdev.IRQDeferral{DeferHardIRQs: uint64(e.cfg.BusyPollNAPI.DeferHardIRQs), GROFlushTimeout: e.cfg.BusyPollNAPI.GROFlushTimeout}
	cur, err := netdev.IRQDeferralOf(e.dev.Name)
	if err != nil {
		return fmt.Errorf("busy polling: %w", err)
	}
	c := NAPIChange{Queue: -1, Device: true, After: NAPIConfig{DeferHardIRQs: e.cfg.BusyPollNAPI.DeferHardIRQs, GROFlushTimeout: e.cfg.BusyPollNAPI.GROFlushTimeout},
		Before: NAPIConfig{DeferHardIRQs: uint32(cur.DeferHardIRQs), GROFlushTimeout: cur.GROFlushTimeout}}
	if err := e.napiChanging(c); err != nil {
		return err
	}
	before, err := netdev.HoldIRQDeferral(e.dev.Name, e.dev.Index, b, holder)
	if err != nil {
		e.napi = e.napi[:len(e.napi)-1]
		if g := e.cfg.NAPIGuard; g != nil {
			g.Restored(c)
		}
		return fmt.Errorf("busy polling: %w", err)
	}
	e.napi[len(e.napi)-1].Before = NAPIConfig{DeferHardIRQs: uint32(before.DeferHardIRQs), GROFlushTimeout: before.GROFlushTimeout}
	e.napiHolder = holder
	e.napiNote = fmt.Sprintf("%v: the device-wide values set, which every NAPI of %s shares", why, e.dev.Name)
	return nil
}

// restoreNAPI puts back what setupNAPI changed, telling Config.NAPIGuard.
func (e *Engine) restoreNAPI() error {
	var errs []error
	for _, c := range e.napi {
		var err error
		if c.Device {
			err = netdev.ReleaseIRQDeferral(e.dev.Index, e.napiHolder)
		} else {
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
