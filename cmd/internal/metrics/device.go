package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/xdpeng/xdpeng/internal/netdev"
)

// netdevFields are the netdev statistics (rtnl_link_stats64) as
// netdev.DevStats names them, each a counter of its own.
var netdevFields = []string{
	"rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_errors", "tx_errors", "rx_dropped", "tx_dropped",
	"multicast", "collisions", "rx_length_errors", "rx_over_errors", "rx_crc_errors", "rx_frame_errors",
	"rx_fifo_errors", "rx_missed_errors", "tx_aborted_errors", "tx_carrier_errors", "tx_fifo_errors",
	"tx_heartbeat_errors", "tx_window_errors", "rx_compressed", "tx_compressed",
}

var (
	netdevFamilies = func() map[string]family {
		m := map[string]family{}
		for _, f := range netdevFields {
			m[f] = newCounter("xdpeng_netdev_"+f+"_total", "The device's netdev statistic "+f+" (rtnl_link_stats64, what ip -s link shows).", "interface")
		}
		return m
	}()
	// The driver's counters vary by driver and are not all counters (some
	// are gauges, such as a queue's current length), so they are one
	// untyped metric with the counter's name as a label, as ethtool -S
	// prints them.
	ethtoolStat = newFamily("xdpeng_ethtool_stat", "A counter of the device's driver, as ethtool -S names it (stat).", prometheus.UntypedValue, "interface", "stat")
)

// Devices exports every netdev statistic and driver counter of some
// devices, read at every scrape: the values the kernel holds, counted from
// the device's creation (or the driver's last reset), as node_exporter
// exports its counters.
type Devices struct {
	Names []string
	// Read reads a device's counters: netdev.ReadDevStats.
	Read func(name string) (netdev.DevStats, error)
}

// Describe sends the descriptions of the devices' metrics.
func (d *Devices) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range netdevFields {
		ch <- netdevFamilies[f].desc
	}
	ch <- ethtoolStat.desc
}

// Collect reads every device's counters.
func (d *Devices) Collect(ch chan<- prometheus.Metric) {
	for _, name := range d.Names {
		s, err := d.Read(name)
		if err != nil {
			invalid(ch, ethtoolStat, err)
			return
		}
		for _, f := range netdevFields {
			if v, ok := s.Netdev[f]; ok {
				netdevFamilies[f].emit(ch, v, name)
			}
		}
		for stat, v := range s.Ethtool {
			ethtoolStat.emit(ch, v, name, stat)
		}
	}
}
