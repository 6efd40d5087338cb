//go:build linux

package engine_test

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
)

// NextHopMAC finds a veth's peer, across namespaces, as fwd does; a device
// that is no veth and has no neighbour entry is ErrNoNextHop, a missing one
// ErrNoDevice.
func TestNextHopMAC(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	if err := bed.InDUT(func() error {
		mac, err := engine.NextHopMAC(l.DUT, netip.Addr{})
		if err != nil {
			t.Errorf("NextHopMAC(%s): %v", l.DUT, err)
		} else if !bytes.Equal(mac, l.GenMAC) {
			t.Errorf("NextHopMAC(%s) = %v, want the peer's %v", l.DUT, mac, l.GenMAC)
		}
		if _, err := engine.NextHopMAC("lo", netip.MustParseAddr("198.18.0.250")); !errors.Is(err, engine.ErrNoNextHop) {
			t.Errorf("NextHopMAC(lo) = %v, want ErrNoNextHop", err)
		}
		if _, err := engine.NextHopMAC("nosuch0", netip.Addr{}); !errors.Is(err, engine.ErrNoDevice) {
			t.Errorf("NextHopMAC(nosuch0) = %v, want ErrNoDevice", err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
