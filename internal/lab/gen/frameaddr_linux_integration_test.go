package gen

import (
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// TestResolveAddrs: out of gen0 of a bed, what is not given comes from the
// device (its MAC, its address in 198.18.0.0/15, the veth peer's MAC) and
// the test-bed plan (the other host of the link); what is given is kept.
func TestResolveAddrs(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	genIP, dutIP := netip.MustParseAddr(l.GenIP.String()), netip.MustParseAddr(l.DUTIP.String())
	given := net.HardwareAddr{2, 0, 0, 0, 0, 0x42}
	for _, tc := range []struct {
		name      string
		in, want  packet.UDPConfig
		wantError error
	}{
		{name: "nothing given",
			want: packet.UDPConfig{SrcMAC: l.GenMAC, DstMAC: l.DUTMAC, SrcIP: genIP, DstIP: dutIP}},
		{name: "addresses given",
			in:   packet.UDPConfig{SrcMAC: given, DstMAC: given, SrcIP: netip.MustParseAddr("198.18.7.9"), DstIP: netip.MustParseAddr("198.18.8.8")},
			want: packet.UDPConfig{SrcMAC: given, DstMAC: given, SrcIP: netip.MustParseAddr("198.18.7.9"), DstIP: netip.MustParseAddr("198.18.8.8")}},
		{name: "IPv6 destination",
			in:   packet.UDPConfig{DstIP: netip.MustParseAddr("2001:2::2")},
			want: packet.UDPConfig{SrcMAC: l.GenMAC, DstMAC: l.DUTMAC, SrcIP: netip.MustParseAddr("2001:2::1"), DstIP: netip.MustParseAddr("2001:2::2")}},
		{name: "source given, not on a link",
			in:   packet.UDPConfig{SrcIP: netip.MustParseAddr("198.18.5.5")},
			want: packet.UDPConfig{SrcMAC: l.GenMAC, DstMAC: l.DUTMAC, SrcIP: netip.MustParseAddr("198.18.5.5"), DstIP: netip.MustParseAddr("198.18.0.2")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := bed.InGen(func() error {
				got, info, err := ResolveAddrs(l.Gen, tc.in)
				if err != nil {
					return err
				}
				if info.Index != l.GenIndex {
					t.Errorf("info %+v, want index %d", info, l.GenIndex)
				}
				if got.SrcMAC.String() != tc.want.SrcMAC.String() || got.DstMAC.String() != tc.want.DstMAC.String() ||
					got.SrcIP != tc.want.SrcIP || got.DstIP != tc.want.DstIP {
					t.Errorf("got %s %s -> %s %s, want %s %s -> %s %s", got.SrcMAC, got.SrcIP, got.DstMAC, got.DstIP,
						tc.want.SrcMAC, tc.want.SrcIP, tc.want.DstMAC, tc.want.DstIP)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
	err := bed.InGen(func() error {
		if _, _, err := ResolveAddrs("nosuch0", packet.UDPConfig{}); !errors.As(err, new(*netdev.NoInterfaceError)) {
			t.Errorf("missing interface: %v, want a *netdev.NoInterfaceError", err)
		}
		// lo is no veth and has no neighbours: nothing to send to.
		if _, _, err := ResolveAddrs("lo", packet.UDPConfig{}); !errors.Is(err, netdev.ErrNoDstMAC) {
			t.Errorf("lo: %v, want ErrNoDstMAC", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
