package engine

import (
	"errors"
	"fmt"
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
			e.napiNote = err.Error()
			return nil
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
			e.napiNote = netdev.ErrNoNAPIConfig.Error()
			return nil
		}
		c := NAPIChange{Queue: q, NAPIID: rq.NAPIID, Before: NAPIConfig(*before), After: cfg.BusyPollNAPI}
		if cfg.NAPIGuard != nil {
			if err := cfg.NAPIGuard.Changing(c); err != nil {
				return fmt.Errorf("busy polling: queue %d's NAPI %d: %w", q, rq.NAPIID, err)
			}
		}
		e.napi = append(e.napi, c)
		if err := netdev.SetNAPI(rq.NAPIID, want); err != nil {
			return fmt.Errorf("busy polling: queue %d: %w", q, err)
		}
	}
	if len(unlinked) > 0 {
		e.napiNote = fmt.Sprintf("%s links no NAPI to queue %s (netdev queue-get): nothing to set there", e.dev.Name, strings.Join(unlinked, ", "))
	}
	return nil
}

// restoreNAPI puts back what setupNAPI changed, telling Config.NAPIGuard.
func (e *Engine) restoreNAPI() error {
	var errs []error
	for _, c := range e.napi {
		if err := netdev.SetNAPI(c.NAPIID, netdev.NAPIConfig(c.Before)); err != nil {
			errs = append(errs, fmt.Errorf("put back queue %d's NAPI: %w", c.Queue, err))
			continue
		}
		if e.cfg.NAPIGuard != nil {
			e.cfg.NAPIGuard.Restored(c)
		}
	}
	e.napi = nil
	return errors.Join(errs...)
}
