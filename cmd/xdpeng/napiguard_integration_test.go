package main

import (
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// TestNAPIGuardPutsBack: the guard, a process of its own, puts back the
// settings of a NAPI it was told of when its input ends without
// "restored", as when xdpeng is killed; and leaves one said restored. On
// a veth of a test bed (whose NAPIs take settings of their own from Linux
// 6.13).
func TestNAPIGuardPutsBack(t *testing.T) {
	bed := testbedtest.New(t, 2, 1)
	l := bed.Links[0]
	unsupported := false
	err := bed.InDUT(func() error {
		napis, err := netdev.NAPIs(l.DUTIndex)
		if err != nil {
			return err
		}
		if len(napis) != 2 {
			t.Errorf("%s has NAPIs %+v, want 2", l.DUT, napis)
			return nil
		}
		_, own, err := netdev.NAPIByID(napis[0].ID)
		if err != nil {
			return err
		}
		if own == nil {
			unsupported = true
			return nil
		}
		busy := netdev.NAPIConfig{DeferHardIRQs: 2, GROFlushTimeout: 200 * time.Microsecond}
		g := newNAPIGuard(l.DUT)
		for _, n := range napis {
			if err := g.Changing(engine.NAPIChange{NAPIID: n.ID, Before: engine.NAPIConfig(*own)}); err != nil {
				return err
			}
			if err := netdev.SetNAPI(n.ID, busy); err != nil {
				return err
			}
		}
		// The second put back by "xdpeng", the first left to the guard.
		if err := netdev.SetNAPI(napis[1].ID, *own); err != nil {
			return err
		}
		g.Restored(engine.NAPIChange{NAPIID: napis[1].ID})
		if err := netdev.SetNAPI(napis[1].ID, netdev.NAPIConfig{DeferHardIRQs: 7}); err != nil {
			return err
		}
		if err := g.close(); err != nil {
			return err
		}
		if _, c, err := netdev.NAPIByID(napis[0].ID); err != nil || *c != *own {
			t.Errorf("NAPI %d after the guard: %v (%v), want %v back", napis[0].ID, c, err, *own)
		}
		if _, c, err := netdev.NAPIByID(napis[1].ID); err != nil || c.DeferHardIRQs != 7 {
			t.Errorf("NAPI %d, said restored, then changed: the guard set it to %v (%v)", napis[1].ID, c, err)
		}
		return netdev.SetNAPI(napis[1].ID, *own)
	})
	if err != nil {
		t.Fatal(err)
	}
	if unsupported {
		privtest.Unsupported(t, "%v", netdev.ErrNoNAPIConfig)
	}
}

// TestNAPIGuardPutsBackThreaded: the guard puts back a NAPI's threaded
// mode it was told of (--threaded-busy-poll's change) when its input ends
// without "restored". On a veth NAPI, with the threaded mode a kernel
// without threaded busy polling has too (enabled).
func TestNAPIGuardPutsBackThreaded(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	unsupported := false
	err := bed.InDUT(func() error {
		napis, err := netdev.NAPIs(l.DUTIndex)
		if err != nil {
			return err
		}
		if len(napis) != 1 {
			t.Errorf("%s has NAPIs %+v, want 1", l.DUT, napis)
			return nil
		}
		n := napis[0]
		if !n.ThreadedKnown {
			unsupported = true
			return nil
		}
		g := newNAPIGuard(l.DUT)
		if err := g.Changing(engine.NAPIChange{NAPIID: n.ID, Threaded: true, ThreadedBefore: engine.NAPIThreaded(n.Threaded)}); err != nil {
			return err
		}
		if err := netdev.SetNAPIThreaded(n.ID, netdev.NAPIThreadedEnabled); err != nil {
			return err
		}
		if err := g.close(); err != nil {
			return err
		}
		if got, _, err := netdev.NAPIByID(n.ID); err != nil || got.Threaded != n.Threaded {
			t.Errorf("NAPI %d after the guard: threaded %v (%v), want %v back", n.ID, got.Threaded, err, n.Threaded)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if unsupported {
		privtest.Unsupported(t, "the kernel does not report a NAPI's threaded mode")
	}
}
