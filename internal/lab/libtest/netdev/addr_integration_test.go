//go:build linux

package netdev_test

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// TestDstMACFindsPeerInOtherNamespace: from gen0, whose veth peer dut0
// lives in the DUT namespace, DstMAC reads the peer's address without
// entering that namespace; lo has neither a peer nor neighbours.
func TestDstMACFindsPeerInOtherNamespace(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	err := bed.InGen(func() error {
		mac, how, err := netdev.DstMAC(l.GenIndex, netip.MustParseAddr(l.DUTIP.String()))
		if err != nil {
			return err
		}
		if mac.String() != l.DUTMAC.String() || how != "veth peer" {
			t.Errorf("DstMAC = %s (%s), want dut0's %s (veth peer)", mac, how, l.DUTMAC)
		}
		lo, err := netdev.Lookup("lo")
		if err != nil {
			return err
		}
		if mac, _, err := netdev.DstMAC(lo.Index, netip.MustParseAddr("198.18.9.9")); !errors.Is(err, netdev.ErrNoDstMAC) {
			t.Errorf("DstMAC from lo = %s, %v; want ErrNoDstMAC", mac, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAddrIn: gen0 has 198.18.0.1/24 and nothing in 10.0.0.0/8 or in
// the IPv6 benchmarking range (the bed turns IPv6 off).
func TestAddrIn(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	err := bed.InGen(func() error {
		for _, tc := range []struct {
			prefix string
			want   netip.Addr
		}{
			{"198.18.0.0/15", netip.MustParseAddr(l.GenIP.String())},
			{"10.0.0.0/8", netip.Addr{}},
			{"2001:2::/48", netip.Addr{}},
		} {
			got, ok, err := netdev.AddrIn(l.GenIndex, netip.MustParsePrefix(tc.prefix))
			if err != nil {
				return err
			}
			if got != tc.want || ok != tc.want.IsValid() {
				t.Errorf("AddrIn(%s, %s) = %v, %v; want %v", l.Gen, tc.prefix, got, ok, tc.want)
			}
		}
		if _, _, err := netdev.AddrIn(1<<30, netip.MustParsePrefix("198.18.0.0/15")); err == nil {
			t.Error("AddrIn of a missing interface index: no error")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
