//go:build linux

package netdev_test

import (
	"net"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// TestCarriesDefaultRoute: in the DUT namespace of a bed (no default
// route), no link carries one; with a default route via dut0, dut0 does
// and dut1 does not, also when the route is in another table.
func TestCarriesDefaultRoute(t *testing.T) {
	bed := testbedtest.New(t, 1, 2)
	check := func(when string, want0 bool) {
		t.Helper()
		for i, want := range []bool{want0, false} {
			got, err := netdev.CarriesDefaultRoute(bed.Links[i].DUTIndex)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%s: %s carries the default route: %v, want %v", when, bed.Links[i].DUT, got, want)
			}
		}
	}
	err := bed.InDUT(func() error {
		check("no default route", false)
		for _, table := range []int{0 /* main */, 100} {
			r := &netlink.Route{LinkIndex: bed.Links[0].DUTIndex, Gw: bed.Links[0].GenIP, Table: table,
				Dst: &net.IPNet{IP: net.IPv4zero, Mask: net.CIDRMask(0, 32)}}
			if err := netlink.RouteAdd(r); err != nil {
				return err
			}
			check("default route via dut0", true)
			if err := netlink.RouteDel(r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
