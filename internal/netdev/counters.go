//go:build linux

package netdev

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/safchain/ethtool"
	"github.com/vishvananda/netlink"
)

// Counters returns the driver statistics of the interface called name, what
// `ethtool -S name` prints.
func Counters(name string) (map[string]uint64, error) {
	et, err := ethtool.NewEthtool()
	if err != nil {
		return nil, fmt.Errorf("open ethtool socket for %s: %w", name, err)
	}
	defer et.Close()
	stats, err := et.Stats(name)
	if err != nil {
		return nil, fmt.Errorf("read ethtool statistics of %s: %w", name, err)
	}
	return stats, nil
}

// VethQueue holds veth's per-queue XDP counters for one queue, as `ethtool -S`
// prints them (rx_queue_N_* and tx_queue_N_*).
//
// On the receiving end (the DUT), every frame queued to queue N by the peer
// (its transmit path or its ndo_xdp_xmit) is handled by NAPI and counted in
// RxPackets; frames refused before that are counted in the sender's
// TxXDPXmitErrors. Of RxPackets, the XDP program's verdicts are split into
// RxXDPRedirect (successful redirects, AF_XDP included), RxXDPDrops
// (XDP_DROP, XDP_ABORTED) and RxXDPTx; a redirect or XDP_TX that fails is
// counted in RxDrops. A redirect to an AF_XDP socket whose rx ring is full is
// such a failure: it is in RxDrops here and in the socket's XDP_STATISTICS
// rx_dropped too, so add only one of them when closing the accounting.
type VethQueue struct {
	Queue int

	RxPackets     uint64 // rx_queue_N_xdp_packets: frames NAPI processed on this queue
	RxBytes       uint64 // rx_queue_N_xdp_bytes
	RxDrops       uint64 // rx_queue_N_drops: failed redirects and XDP_TX, no memory for an skb
	RxXDPRedirect uint64 // rx_queue_N_xdp_redirect: successful redirects, AF_XDP included
	RxXDPDrops    uint64 // rx_queue_N_xdp_drops: XDP_DROP and XDP_ABORTED
	RxXDPTx       uint64 // rx_queue_N_xdp_tx: XDP_TX verdicts
	RxXDPTxErrors uint64 // rx_queue_N_xdp_tx_errors: XDP_TX frames the peer did not take

	// TxXDPXmit counts frames handed to this device by ndo_xdp_xmit (an
	// XDP_REDIRECT into it, e.g. the live-frames generator) and queued towards
	// the peer's queue N; TxXDPXmitErrors those refused (peer ring full, or the
	// peer has neither an XDP program nor GRO, so no NAPI to deliver them).
	TxXDPXmit       uint64 // tx_queue_N_xdp_xmit
	TxXDPXmitErrors uint64 // tx_queue_N_xdp_xmit_errors
}

// VethQueueCounters reads veth's per-queue counters of the interface called
// name, sorted by queue.
func VethQueueCounters(name string) ([]VethQueue, error) {
	stats, err := Counters(name)
	if err != nil {
		return nil, err
	}
	qs, err := ParseVethQueues(stats)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return qs, nil
}

// ErrNoQueueCounters is returned by ParseVethQueues when the statistics hold
// no per-queue counters, e.g. because the device is not a veth.
var ErrNoQueueCounters = errors.New("no per-queue counters (rx_queue_N_*) in ethtool statistics: not a veth?")

// ParseVethQueues picks veth's per-queue counters out of `ethtool -S`
// statistics. Counters it does not know are ignored, so that a kernel adding
// one does not break it; the names of kernels that dropped the "xdp_" prefix
// of packets and bytes are understood too.
func ParseVethQueues(stats map[string]uint64) ([]VethQueue, error) {
	byQueue := make(map[int]*VethQueue)
	for key, v := range stats {
		dir, rest, ok := strings.Cut(key, "_queue_")
		if !ok || (dir != "rx" && dir != "tx") {
			continue
		}
		num, field, ok := strings.Cut(rest, "_")
		if !ok {
			continue
		}
		q, err := strconv.Atoi(num)
		if err != nil || q < 0 {
			continue
		}
		ptr := vethField(dir, field, byQueue, q)
		if ptr != nil {
			*ptr = v
		}
	}
	if len(byQueue) == 0 {
		return nil, ErrNoQueueCounters
	}
	qs := make([]VethQueue, 0, len(byQueue))
	for _, q := range byQueue {
		qs = append(qs, *q)
	}
	sort.Slice(qs, func(a, b int) bool { return qs[a].Queue < qs[b].Queue })
	return qs, nil
}

// vethField returns where the counter dir_queue_q_field goes, or nil when the
// name is not one we know.
func vethField(dir, field string, byQueue map[int]*VethQueue, q int) *uint64 {
	get := func() *VethQueue {
		vq := byQueue[q]
		if vq == nil {
			vq = &VethQueue{Queue: q}
			byQueue[q] = vq
		}
		return vq
	}
	if dir == "tx" {
		switch field {
		case "xdp_xmit":
			return &get().TxXDPXmit
		case "xdp_xmit_errors":
			return &get().TxXDPXmitErrors
		}
		return nil
	}
	switch field {
	case "xdp_packets", "packets":
		return &get().RxPackets
	case "xdp_bytes", "bytes":
		return &get().RxBytes
	case "drops":
		return &get().RxDrops
	case "xdp_redirect":
		return &get().RxXDPRedirect
	case "xdp_drops":
		return &get().RxXDPDrops
	case "xdp_tx":
		return &get().RxXDPTx
	case "xdp_tx_errors":
		return &get().RxXDPTxErrors
	}
	return nil
}

// SumVethQueues adds up the counters of all queues; the Queue field of the
// result is -1.
func SumVethQueues(qs []VethQueue) VethQueue {
	s := VethQueue{Queue: -1}
	for _, q := range qs {
		s.RxPackets += q.RxPackets
		s.RxBytes += q.RxBytes
		s.RxDrops += q.RxDrops
		s.RxXDPRedirect += q.RxXDPRedirect
		s.RxXDPDrops += q.RxXDPDrops
		s.RxXDPTx += q.RxXDPTx
		s.RxXDPTxErrors += q.RxXDPTxErrors
		s.TxXDPXmit += q.TxXDPXmit
		s.TxXDPXmitErrors += q.TxXDPXmitErrors
	}
	return s
}

// LinkStats are the generic counters the kernel keeps for every interface
// (`ip -s link`), those xdpeng reads. They count from when the interface was
// created.
type LinkStats struct {
	TxPackets uint64 // frames the interface sent
	TxDropped uint64 // frames its transmit path dropped
}

// ReadLinkStats reads the generic counters of the interface with index
// ifindex.
func ReadLinkStats(ifindex int) (LinkStats, error) {
	link, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		return LinkStats{}, fmt.Errorf("read the counters of interface index %d: %w", ifindex, err)
	}
	st := link.Attrs().Statistics
	if st == nil {
		return LinkStats{}, fmt.Errorf("read the counters of %s: the kernel sent none", link.Attrs().Name)
	}
	return LinkStats{TxPackets: st.TxPackets, TxDropped: st.TxDropped}, nil
}
