//go:build linux

package netdev

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// DevStats is one read of all of a device's counters: the driver's
// (`ethtool -S`, from Counters) and the kernel's netdev statistics
// (rtnl_link_stats64, what `ip -s link` shows).
type DevStats struct {
	Name string
	Time time.Time
	// Ethtool holds the driver's counters by name; nil when the driver
	// has none (the loopback device, for one). On a real NIC this is where
	// the per-queue and XDP counters live (rx_xdp_drop, xdp_tx_err, ...);
	// veth has its per-queue XDP counters here (see VethQueue).
	Ethtool map[string]uint64
	// Netdev holds the netdev statistics by their field names in
	// rtnl_link_stats64 ("rx_packets", "rx_dropped", "rx_missed_errors").
	Netdev map[string]uint64
}

// ReadDevStats reads the counters of the interface called name, in the
// calling thread's network namespace. A missing interface is a
// *NoInterfaceError.
func ReadDevStats(name string) (DevStats, error) {
	s := DevStats{Name: name}
	link, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) || errors.Is(err, unix.ENODEV) {
			return DevStats{}, &NoInterfaceError{Name: name}
		}
		return DevStats{}, fmt.Errorf("read netdev statistics of %s: %w", name, err)
	}
	st := link.Attrs().Statistics
	if st == nil {
		return DevStats{}, fmt.Errorf("read netdev statistics of %s: the kernel sent none", name)
	}
	s.Netdev = netdevCounters(st)
	s.Ethtool, err = Counters(name)
	if errors.Is(err, unix.EOPNOTSUPP) {
		s.Ethtool, err = nil, nil
	}
	if err != nil {
		return DevStats{}, err
	}
	s.Time = time.Now()
	return s, nil
}

// netdevCounters names the fields of rtnl_link_stats64 as the kernel does.
func netdevCounters(st *netlink.LinkStatistics) map[string]uint64 {
	return map[string]uint64{
		"rx_packets":          st.RxPackets,
		"tx_packets":          st.TxPackets,
		"rx_bytes":            st.RxBytes,
		"tx_bytes":            st.TxBytes,
		"rx_errors":           st.RxErrors,
		"tx_errors":           st.TxErrors,
		"rx_dropped":          st.RxDropped,
		"tx_dropped":          st.TxDropped,
		"multicast":           st.Multicast,
		"collisions":          st.Collisions,
		"rx_length_errors":    st.RxLengthErrors,
		"rx_over_errors":      st.RxOverErrors,
		"rx_crc_errors":       st.RxCrcErrors,
		"rx_frame_errors":     st.RxFrameErrors,
		"rx_fifo_errors":      st.RxFifoErrors,
		"rx_missed_errors":    st.RxMissedErrors,
		"tx_aborted_errors":   st.TxAbortedErrors,
		"tx_carrier_errors":   st.TxCarrierErrors,
		"tx_fifo_errors":      st.TxFifoErrors,
		"tx_heartbeat_errors": st.TxHeartbeatErrors,
		"tx_window_errors":    st.TxWindowErrors,
		"rx_compressed":       st.RxCompressed,
		"tx_compressed":       st.TxCompressed,
	}
}

// CounterRate is how one counter changed between two reads.
type CounterRate struct {
	Name   string  `json:"name"`
	Delta  uint64  `json:"delta"`
	PerSec float64 `json:"per_sec"`
	// Reset is set when the counter went down (the driver reset its
	// statistics): Delta is then its value, counted from zero.
	Reset bool `json:"reset,omitempty"`
}

// DevRates are the counters of a device that changed between two reads.
type DevRates struct {
	Name     string        `json:"name"`
	Interval time.Duration `json:"interval"`
	// Ethtool and Netdev hold the counters that changed, sorted by name.
	Ethtool []CounterRate `json:"ethtool"`
	Netdev  []CounterRate `json:"netdev"`
}

// Since returns what changed from prev, an earlier read of the same
// device, to s, as per-second rates (the ethtool_stats.pl view). A counter
// in only one of the reads is left out.
func (s DevStats) Since(prev DevStats) (DevRates, error) {
	if s.Name != prev.Name {
		return DevRates{}, fmt.Errorf("counters of %s and %s: not the same device", prev.Name, s.Name)
	}
	dt := s.Time.Sub(prev.Time)
	if dt <= 0 {
		return DevRates{}, fmt.Errorf("counters of %s read at %v and %v: the second is not later", s.Name, prev.Time, s.Time)
	}
	return DevRates{
		Name:     s.Name,
		Interval: dt,
		Ethtool:  changed(prev.Ethtool, s.Ethtool, dt),
		Netdev:   changed(prev.Netdev, s.Netdev, dt),
	}, nil
}

func changed(prev, cur map[string]uint64, dt time.Duration) []CounterRate {
	var out []CounterRate
	for name, v := range cur {
		p, ok := prev[name]
		if !ok || p == v {
			continue
		}
		r := CounterRate{Name: name, Delta: v - p}
		if v < p {
			r.Delta, r.Reset = v, true
		}
		r.PerSec = float64(r.Delta) / dt.Seconds()
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b CounterRate) int { return strings.Compare(a.Name, b.Name) })
	return out
}
