//go:build linux

package netdev

import (
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/xdpeng/xdpeng/internal/testutil/difftest"
)

func TestDevStatsSince(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	prev := DevStats{Name: "dut0", Time: t0,
		Ethtool: map[string]uint64{
			"rx_queue_0_xdp_packets": 1000, "rx_queue_0_drops": 7, "peer_ifindex": 2, "tx_queue_0_xdp_xmit": 50, "gone": 1,
		},
		Netdev: map[string]uint64{"rx_packets": 1000, "rx_bytes": 64000, "tx_packets": 3},
	}
	cur := DevStats{Name: "dut0", Time: t0.Add(2 * time.Second),
		Ethtool: map[string]uint64{
			"rx_queue_0_xdp_packets": 5000, "rx_queue_0_drops": 7, "peer_ifindex": 2,
			"tx_queue_0_xdp_xmit": 10, // went down: the driver reset it
			"new_counter":         99, // not in the first read: no rate
		},
		Netdev: map[string]uint64{"rx_packets": 5000, "rx_bytes": 320000, "tx_packets": 3},
	}
	got, err := cur.Since(prev)
	if err != nil {
		t.Fatal(err)
	}
	want := DevRates{
		Name:     "dut0",
		Interval: 2 * time.Second,
		Ethtool: []CounterRate{
			{Name: "rx_queue_0_xdp_packets", Delta: 4000, PerSec: 2000},
			{Name: "tx_queue_0_xdp_xmit", Delta: 10, PerSec: 5, Reset: true},
		},
		Netdev: []CounterRate{
			{Name: "rx_bytes", Delta: 256000, PerSec: 128000},
			{Name: "rx_packets", Delta: 4000, PerSec: 2000},
		},
	}
	if diff := difftest.Diff(want, got); diff != "" {
		t.Errorf("Since (-want +got):\n%s", diff)
	}

	if _, err := prev.Since(cur); err == nil {
		t.Error("reads in the wrong order accepted")
	}
	other := cur
	other.Name = "dut1"
	if _, err := other.Since(prev); err == nil {
		t.Error("reads of two devices accepted")
	}
	// A driver without ethtool statistics: only netdev counters.
	prev.Ethtool, cur.Ethtool = nil, nil
	if got, err := cur.Since(prev); err != nil || got.Ethtool != nil || len(got.Netdev) != 2 {
		t.Errorf("without ethtool statistics: %+v, %v", got, err)
	}
}

func TestNetdevCounterNames(t *testing.T) {
	m := netdevCounters(&netlink.LinkStatistics{RxPackets: 1, TxDropped: 2, RxMissedErrors: 3})
	if m["rx_packets"] != 1 || m["tx_dropped"] != 2 || m["rx_missed_errors"] != 3 || len(m) != 23 {
		t.Errorf("netdev counters %v", m)
	}
}
