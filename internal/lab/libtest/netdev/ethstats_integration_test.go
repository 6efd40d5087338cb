//go:build linux

package netdev_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// TestDevStatsCountFrames sends n frames into dut0 and finds them in both
// views of its counters: veth's per-queue ethtool counter and the netdev
// statistics.
func TestDevStatsCountFrames(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	read := func(dev string) netdev.DevStats {
		t.Helper()
		var s netdev.DevStats
		if err := bed.InDUT(func() (err error) { s, err = netdev.ReadDevStats(dev); return err }); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := read(l.DUT)
	if _, ok := before.Ethtool["rx_queue_0_xdp_packets"]; !ok || before.Netdev == nil {
		t.Fatalf("%s: ethtool %v, netdev %v; want veth's queue counters and netdev statistics", l.DUT, before.Ethtool, before.Netdev)
	}

	const n = 2000
	err := bed.InGen(func() error {
		st, err := gen.Run(context.Background(), gen.Config{
			Ifindex: l.GenIndex, Count: n, Threads: 1,
			Frame: packet.UDPConfig{
				SrcMAC: l.GenMAC, DstMAC: l.DUTMAC,
				SrcIP: netip.MustParseAddr(l.GenIP.String()), DstIP: netip.MustParseAddr(l.DUTIP.String()),
				SrcPort: 1234, DstPort: 9, Size: 64,
			},
		}, nil)
		if err == nil && st.Sent != n {
			t.Errorf("generator sent %d, want %d", st.Sent, n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// NAPI may still be delivering when the generator returns.
	var r netdev.DevRates
	rate := func(list []netdev.CounterRate, name string) netdev.CounterRate {
		for _, c := range list {
			if c.Name == name {
				return c
			}
		}
		return netdev.CounterRate{}
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		if r, err = read(l.DUT).Since(before); err != nil {
			t.Fatal(err)
		}
		if rate(r.Netdev, "rx_packets").Delta >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range []netdev.CounterRate{rate(r.Ethtool, "rx_queue_0_xdp_packets"), rate(r.Netdev, "rx_packets")} {
		if c.Delta != n || c.PerSec <= 0 {
			t.Errorf("counter %+v, want %d more (all rates: %+v)", c, n, r)
		}
	}
	if c := rate(r.Netdev, "rx_bytes"); c.Delta != n*64 {
		t.Errorf("rx_bytes rose by %d, want %d", c.Delta, n*64)
	}

	// The loopback device has no driver statistics; a missing device is
	// a NoInterfaceError.
	if lo := read("lo"); lo.Ethtool != nil || lo.Netdev == nil {
		t.Errorf("lo: ethtool %v, netdev %v; want only netdev statistics", lo.Ethtool, lo.Netdev)
	}
	err = bed.InDUT(func() error { _, err := netdev.ReadDevStats(l.Gen); return err })
	var ne *netdev.NoInterfaceError
	if !errors.As(err, &ne) {
		t.Errorf("ReadDevStats(%s) in the DUT namespace = %v, want a NoInterfaceError", l.Gen, err)
	}
}
