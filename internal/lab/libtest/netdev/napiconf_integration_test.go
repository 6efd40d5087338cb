package netdev_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// TestNAPIConfig: queue-get answers for each receive queue of a veth
// (veth links no NAPI to its queues in Linux 6.18: an ID of 0, or one of
// the device's); napi-get by a NAPI's id names the device, and where the
// kernel has settings of a NAPI's own, napi-set changes them and the old
// values go back, the device's other NAPI keeping its own.
func TestNAPIConfig(t *testing.T) {
	bed := testbedtest.New(t, 2, 1)
	l := bed.Links[0]
	unsupported := ""
	err := bed.InDUT(func() error {
		napis, err := netdev.NAPIs(l.DUTIndex)
		if err != nil {
			return err
		}
		if len(napis) != 2 {
			return fmt.Errorf("NAPIs(%s) = %+v, want 2", l.DUT, napis)
		}
		for q := range 2 {
			rq, err := netdev.RxQueueInfo(l.DUTIndex, q)
			if errors.Is(err, netdev.ErrNoQueueInfo) {
				unsupported = err.Error()
				break
			}
			if err != nil {
				return err
			}
			if rq.XSK || (rq.NAPIID != 0 && rq.NAPIID != napis[0].ID && rq.NAPIID != napis[1].ID) {
				t.Errorf("queue %d: %+v, want no socket and no NAPI or one of %+v", q, rq, napis)
			}
		}
		if _, err := netdev.RxQueueInfo(l.DUTIndex, 2); err == nil {
			t.Errorf("queue 2 of a device with 2: no error")
		}
		q0, q1 := struct{ NAPIID uint32 }{napis[0].ID}, struct{ NAPIID uint32 }{napis[1].ID}
		n, before, err := netdev.NAPIByID(q0.NAPIID)
		if err != nil {
			return err
		}
		if n.ID != q0.NAPIID || n.IfIndex != l.DUTIndex {
			t.Errorf("NAPIByID(%d) = %+v, want the NAPI of %s", q0.NAPIID, n, l.DUT)
		}
		if before == nil {
			if err := netdev.SetNAPI(q0.NAPIID, netdev.NAPIConfig{}); !errors.Is(err, netdev.ErrNoNAPIConfig) {
				t.Errorf("napi-get reports no settings, but napi-set says %v", err)
			}
			unsupported = netdev.ErrNoNAPIConfig.Error()
			return nil
		}
		_, other, err := netdev.NAPIByID(q1.NAPIID)
		if err != nil {
			return err
		}
		want := netdev.NAPIConfig{DeferHardIRQs: 2, GROFlushTimeout: 200 * time.Microsecond, IRQSuspendTimeout: 20 * time.Millisecond}
		if err := netdev.SetNAPI(q0.NAPIID, want); err != nil {
			return err
		}
		_, got, err := netdev.NAPIByID(q0.NAPIID)
		if err != nil {
			return err
		}
		if *got != want {
			t.Errorf("after napi-set %v: %v", want, *got)
		}
		if _, o, err := netdev.NAPIByID(q1.NAPIID); err != nil || *o != *other {
			t.Errorf("queue 1's NAPI went from %v to %v (%v): want it untouched", *other, o, err)
		}
		if err := netdev.SetNAPI(q0.NAPIID, *before); err != nil {
			return err
		}
		if _, got, err = netdev.NAPIByID(q0.NAPIID); err != nil || *got != *before {
			t.Errorf("put back %v: %v (%v)", *before, got, err)
		}
		t.Logf("NAPI %d: %v, set to %v and back", q0.NAPIID, *before, want)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if unsupported != "" {
		privtest.Unsupported(t, "%s", unsupported)
	}
}

// TestNAPIThreaded: a veth NAPI's threaded mode goes to enabled, with a
// thread, and back, as napi-get reports it; threaded busy polling is taken
// exactly where ProbeThreadedBusyPoll says the kernel has it, and refused
// with ErrNoThreadedBusyPoll, the NAPI unchanged, where it says not.
func TestNAPIThreaded(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	unsupported := ""
	err := bed.InDUT(func() error {
		napis, err := netdev.NAPIs(l.DUTIndex)
		if err != nil {
			return err
		}
		if len(napis) != 1 {
			return fmt.Errorf("NAPIs(%s) = %+v, want 1", l.DUT, napis)
		}
		n := napis[0]
		if !n.ThreadedKnown {
			unsupported = "the kernel does not report a NAPI's threaded mode"
			return nil
		}
		if n.Threaded != netdev.NAPIThreadedDisabled || n.PID != 0 {
			return fmt.Errorf("a new veth's NAPI: %+v, want threaded disabled, no thread", n)
		}
		mode := func() netdev.NAPI {
			got, _, err := netdev.NAPIByID(n.ID)
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		if err := netdev.SetNAPIThreaded(n.ID, netdev.NAPIThreadedEnabled); err != nil {
			return err
		}
		if got := mode(); got.Threaded != netdev.NAPIThreadedEnabled || got.PID == 0 {
			t.Errorf("after napi-set threaded enabled: %+v, want enabled with a thread", got)
		}
		probe := netdev.ProbeThreadedBusyPoll()
		err = netdev.SetNAPIThreaded(n.ID, netdev.NAPIThreadedBusyPoll)
		switch {
		case probe == nil && err != nil:
			t.Errorf("the probe found threaded busy polling, and setting it failed: %v", err)
		case probe == nil:
			if got := mode(); got.Threaded != netdev.NAPIThreadedBusyPoll {
				t.Errorf("after napi-set threaded busy-poll: %+v", got)
			}
		case !errors.Is(probe, netdev.ErrNoThreadedBusyPoll):
			return fmt.Errorf("probe: %w", probe)
		case !errors.Is(err, netdev.ErrNoThreadedBusyPoll):
			t.Errorf("the probe found no threaded busy polling (%v), and setting it gave %v", probe, err)
		default:
			if got := mode(); got.Threaded != netdev.NAPIThreadedEnabled {
				t.Errorf("after a refused napi-set threaded busy-poll: %+v, want it unchanged", got)
			}
			unsupported = probe.Error()
		}
		if err := netdev.SetNAPIThreaded(n.ID, netdev.NAPIThreadedDisabled); err != nil {
			return err
		}
		if got := mode(); got.Threaded != netdev.NAPIThreadedDisabled {
			t.Errorf("after napi-set threaded disabled: %+v", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if unsupported != "" {
		privtest.Unsupported(t, "threaded busy polling: %s", unsupported)
	}
}
