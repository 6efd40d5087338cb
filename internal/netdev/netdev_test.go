//go:build linux

package netdev

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/safchain/ethtool"
	"github.com/xdpeng/xdpeng/internal/testutil/difftest"
	"golang.org/x/sys/unix"
)

func TestParseVethQueues(t *testing.T) {
	// What `ethtool -S` gives for a 2-queue veth on Linux 6.18, plus a
	// counter from the future that must be ignored.
	stats := map[string]uint64{
		"peer_ifindex":               2,
		"rx_queue_0_xdp_packets":     10,
		"rx_queue_0_xdp_bytes":       600,
		"rx_queue_0_drops":           1,
		"rx_queue_0_xdp_redirect":    7,
		"rx_queue_0_xdp_drops":       2,
		"rx_queue_0_xdp_tx":          0,
		"rx_queue_0_xdp_tx_errors":   0,
		"rx_queue_1_xdp_packets":     5,
		"rx_queue_1_xdp_bytes":       300,
		"rx_queue_1_drops":           0,
		"rx_queue_1_xdp_redirect":    5,
		"rx_queue_1_xdp_drops":       0,
		"rx_queue_1_xdp_tx":          3,
		"rx_queue_1_xdp_tx_errors":   1,
		"rx_queue_1_xdp_future":      99,
		"tx_queue_0_xdp_xmit":        8,
		"tx_queue_0_xdp_xmit_errors": 4,
		"tx_queue_1_xdp_xmit":        6,
		"tx_queue_1_xdp_xmit_errors": 0,
	}
	got, err := ParseVethQueues(stats)
	if err != nil {
		t.Fatal(err)
	}
	want := []VethQueue{
		{Queue: 0, RxPackets: 10, RxBytes: 600, RxDrops: 1, RxXDPRedirect: 7, RxXDPDrops: 2, TxXDPXmit: 8, TxXDPXmitErrors: 4},
		{Queue: 1, RxPackets: 5, RxBytes: 300, RxXDPRedirect: 5, RxXDPTx: 3, RxXDPTxErrors: 1, TxXDPXmit: 6},
	}
	if diff := difftest.Diff(want, got); diff != "" {
		t.Errorf("ParseVethQueues (-want +got):\n%s", diff)
	}
	sum := SumVethQueues(got)
	if sum.Queue != -1 || sum.RxPackets != 15 || sum.TxXDPXmitErrors != 4 || sum.RxXDPTx != 3 {
		t.Errorf("SumVethQueues = %+v", sum)
	}
}

func TestParseVethQueuesOtherNames(t *testing.T) {
	// Kernels that name the packet counters without the xdp_ prefix.
	got, err := ParseVethQueues(map[string]uint64{"rx_queue_3_packets": 4, "rx_queue_3_bytes": 240})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Queue != 3 || got[0].RxPackets != 4 || got[0].RxBytes != 240 {
		t.Errorf("got %+v", got)
	}
}

func TestParseVethQueuesNotVeth(t *testing.T) {
	_, err := ParseVethQueues(map[string]uint64{"rx_packets": 1, "tx_queue_x_xdp_xmit": 2, "rx_queue_-1_drops": 3})
	if !errors.Is(err, ErrNoQueueCounters) {
		t.Errorf("err = %v, want ErrNoQueueCounters", err)
	}
}

func TestChannelQueues(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ch     ethtool.Channels
		rx, tx int
	}{
		{"veth", ethtool.Channels{RxCount: 2, TxCount: 2, MaxRx: 2, MaxTx: 2}, 2, 2},
		{"nic combined", ethtool.Channels{CombinedCount: 4, MaxCombined: 64}, 4, 4},
		{"nic combined+rx", ethtool.Channels{CombinedCount: 4, RxCount: 2}, 6, 4},
		{"nothing reported", ethtool.Channels{}, 8, 8},
	} {
		rx, tx := channelQueues(tc.ch, 8, 8)
		if rx != tc.rx || tx != tc.tx {
			t.Errorf("%s: got %d/%d, want %d/%d", tc.name, rx, tx, tc.rx, tc.tx)
		}
	}
}

func TestNoInterfaceError(t *testing.T) {
	want := `interface "eth9" not found in this network namespace`
	if got := (&NoInterfaceError{Name: "eth9"}).Error(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestAttachMode(t *testing.T) {
	for m, want := range map[uint32]string{0: "", 1: "native", 2: "generic", 3: "offload", 4: "multi"} {
		if got := XDPModeName(m); got != want {
			t.Errorf("XDPModeName(%d) = %q, want %q", m, got, want)
		}
	}
}

func TestParseNAPI(t *testing.T) {
	// genl header, then ID 342, ifindex 3, pid 13178 as netlink attributes.
	msg := []byte{
		11, 1, 0, 0,
		8, 0, 2, 0, 0x56, 0x01, 0, 0,
		8, 0, 1, 0, 3, 0, 0, 0,
		8, 0, 4, 0, 0x7a, 0x33, 0, 0,
	}
	n, c, err := parseNAPI(msg)
	if err != nil {
		t.Fatal(err)
	}
	if want := (NAPI{ID: 342, IfIndex: 3, PID: 13178}); n != want || c != nil {
		t.Errorf("parseNAPI = %+v, %v; want %+v and no settings", n, c, want)
	}
	// With settings (Linux 6.13): defer-hard-irqs 2 (u32), gro-flush-timeout
	// 200000 ns as 8 bytes, irq-suspend-timeout 0 as 4.
	msg = append(msg,
		8, 0, 5, 0, 2, 0, 0, 0,
		12, 0, 6, 0, 0x40, 0x0d, 0x03, 0, 0, 0, 0, 0,
		8, 0, 7, 0, 0, 0, 0, 0)
	if _, c, err = parseNAPI(msg); err != nil || c == nil || *c != (NAPIConfig{DeferHardIRQs: 2, GROFlushTimeout: 200 * time.Microsecond}) {
		t.Errorf("parseNAPI with settings: %+v, %v", c, err)
	}
	// With its threaded mode: busy-poll.
	msg = append(msg, 8, 0, 8, 0, 2, 0, 0, 0)
	if n, _, err = parseNAPI(msg); err != nil || !n.ThreadedKnown || n.Threaded != NAPIThreadedBusyPoll {
		t.Errorf("parseNAPI with a threaded mode: %+v, %v; want busy-poll", n, err)
	}
	if _, _, err := parseNAPI([]byte{1}); err == nil {
		t.Error("short message accepted")
	}
}

// TestThreadedProbeAnswer: napi-set's answers to the probe, kernel by
// kernel: no such NAPI (the mode exists), the value or the attribute
// refused, no netdev family or no napi-set (whose ENOENT is not the NAPI's),
// not allowed.
func TestThreadedProbeAnswer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer error
		want   error // nil: the mode is there
	}{
		{"no such NAPI", unix.ENOENT, nil},
		{"value out of range (6.18)", unix.ERANGE, ErrNoThreadedBusyPoll},
		{"unknown attribute", unix.EINVAL, ErrNoThreadedBusyPoll},
		{"no netdev family (6.1)", fmt.Errorf("%w: %w", ErrNoThreadedBusyPoll, unix.ENOENT), ErrNoThreadedBusyPoll},
		{"no napi-set (6.12)", fmt.Errorf("%w: %w", ErrNoThreadedBusyPoll, unix.EOPNOTSUPP), ErrNoThreadedBusyPoll},
		{"not allowed", unix.EPERM, unix.EPERM},
	} {
		got := threadedProbeAnswer(tc.answer)
		if (tc.want == nil) != (got == nil) || (tc.want != nil && !errors.Is(got, tc.want)) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
