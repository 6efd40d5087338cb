//go:build vmguest

package main

// More of the kernel matrix's guest tests (see cli_vm_guest_test.go): count,
// stats, and fwd from one virtio-net NIC out of another.

import (
	"net"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// guestThirdEnv names a third looped port, which fwd sends to: fwd takes
// frames in on the port under test and out of the sender's port, and a
// frame it sent to either of those two would come back to it, forever.
const guestThirdEnv = "XDPENG_GUEST_THIRD"

// TestGuestCount: count parses every frame txonly sent (UDP, to port 9)
// and counts it by protocol and port; the totals close exactly.
func TestGuestCount(t *testing.T) {
	g := newGuest(t)
	p := g.start(t, "count", "-i", g.rx, "--json", "-n", "200ms")
	running(t, p, "count")
	g.send(t)
	var s countSummary
	r := stop(t, p, "count", &s)
	counted(t, "count", s.RxPackets, s.XDPStats.Drops())
	t.Logf("count: by protocol %v, by port %v, by EtherType %v, malformed %d", s.ByProtocol, s.ByPort, s.ByEtherType, s.Malformed)
	var protos uint64
	for _, n := range s.ByProtocol {
		protos += n
	}
	var other uint64
	for _, n := range s.ByEtherType {
		other += n
	}
	if protos+other+s.Malformed != s.RxPackets {
		t.Errorf("count: by protocol %d + other EtherTypes %d + malformed %d != received %d:\n%s", protos, other, s.Malformed, s.RxPackets, r.stdout)
	}
	if s.ByProtocol["udp"] != s.RxPackets {
		t.Errorf("count: %d UDP frames of the %d received (txonly sends UDP): %v", s.ByProtocol["udp"], s.RxPackets, s.ByProtocol)
	}
}

// TestGuestStats: stats reads virtio-net's counters while kern drop takes
// what txonly sends: the sender's netdev tx_packets and the receiver's
// rx_packets and XDP drops (ethtool -S, per queue) each moved by exactly
// the frames sent.
func TestGuestStats(t *testing.T) {
	g := newGuest(t)
	drop := g.start(t, "kern", "drop", "-i", g.rx, "--json", "-n", "200ms")
	running(t, drop, "kern drop")
	st := g.start(t, "stats", "-i", g.rx+","+g.tx, "--json", "-n", "200ms")
	running(t, st, "stats")
	g.send(t)
	var s struct {
		Devices []devRatesJSON `json:"devices"`
	}
	// virtio-net's per-queue counters, rx_queue_0_xdp_drops (older) or
	// rx0_xdp_drops; its totals beside them are not summed again.
	perQueue := regexp.MustCompile(`^rx(_queue_)?[0-9]+_`)
	r := stop(t, st, "stats", &s)
	var k kernSummary
	stop(t, drop, "kern drop", &k)
	counted(t, "kern drop", k.RxPackets, 0)
	delta := func(d devRatesJSON, netdevName, ethtoolSuffix string) (n uint64, found bool) {
		if netdevName != "" {
			for _, c := range d.Netdev {
				if c.Name == netdevName {
					return c.Delta, true
				}
			}
			return 0, false
		}
		for _, c := range d.Ethtool {
			if strings.HasSuffix(c.Name, ethtoolSuffix) {
				t.Logf("stats: %s ethtool %s moved by %d", d.Interface, c.Name, c.Delta)
				if perQueue.MatchString(c.Name) {
					n, found = n+c.Delta, true
				}
			}
		}
		return n, found
	}
	devs := map[string]devRatesJSON{}
	for _, d := range s.Devices {
		devs[d.Interface] = d
	}
	rx, tx := devs[g.rx], devs[g.tx]
	if rx.Interface == "" || tx.Interface == "" {
		t.Fatalf("stats summary lacks %s or %s:\n%s", g.rx, g.tx, r.stdout)
	}
	for _, c := range []struct {
		what          string
		d             devRatesJSON
		netdev, suffx string
	}{
		{g.tx + " netdev tx_packets", tx, "tx_packets", ""},
		{g.rx + " netdev rx_packets", rx, "rx_packets", ""},
		{g.rx + " ethtool *xdp_drops", rx, "", "xdp_drops"},
	} {
		n, ok := delta(c.d, c.netdev, c.suffx)
		if !ok {
			t.Errorf("stats: no %s in the summary:\n%s", c.what, r.stdout)
			continue
		}
		t.Logf("stats: %s moved by %d", c.what, n)
		if n != guestFrames {
			t.Errorf("stats: %s moved by %d, want the %d frames sent", c.what, n, guestFrames)
		}
	}
}

// TestGuestFwd: fwd takes the frames txonly sends in on the port under
// test and sends them out of the third port, to the sender's MAC, where
// kern drop counts them (the sender's port cannot be fwd's output: txonly's
// socket takes its queues). The loop's bridge must know where each MAC is
// before the count, or it floods a frame to every port: one frame from each
// port first (to a MAC no one has) teaches it. txonly's frames carry a
// source MAC no port has, so that fwd's, sent out of another port with it,
// do not move what the bridge knows.
func TestGuestFwd(t *testing.T) {
	g := newGuest(t)
	third := os.Getenv(guestThirdEnv)
	if third == "" {
		t.Fatalf("%s is not set: the kernel matrix names the bed's third port there", guestThirdEnv)
	}
	txIf, err := net.InterfaceByName(g.tx)
	if err != nil {
		t.Fatal(err)
	}
	for _, port := range []string{g.rx, g.tx} {
		r := g.run(t, time.Minute, "txonly", "-i", port, "-G", "02:00:00:00:00:99", "-c", "--xdp-pass", "never", "--count", "1", "-Q")
		if r.code != 0 {
			t.Fatalf("txonly on %s, for the bridge to learn its MAC:\n%s", port, r)
		}
	}
	sink := g.start(t, "kern", "drop", "-i", g.tx, "--json", "-n", "200ms")
	running(t, sink, "kern drop on "+g.tx)
	fwd := g.start(t, "fwd", "-i", g.rx, "-o", third, "-G", txIf.HardwareAddr.String(), "--json", "-n", "200ms")
	running(t, fwd, "fwd")
	g.send(t, "-H", "02:00:00:00:00:98")
	var f fwdSummary
	r := stop(t, fwd, "fwd", &f)
	var k kernSummary
	stop(t, sink, "kern drop on "+g.tx, &k)
	counted(t, "fwd", f.RxPackets, f.InXDPStats.Drops())
	// What fwd took in and did not send: its drops but IN's kernel ones
	// (in_rx_*, counted above).
	var drops uint64
	for reason, n := range f.Drops {
		if !strings.HasPrefix(reason, "in_rx_") {
			drops += n
		}
	}
	t.Logf("fwd %s -> %s: received %d, sent %d, drops %v, umem %s", g.rx, third, f.RxPackets, f.TxPackets, f.Drops, f.Umem)
	if f.TxPackets+drops != f.RxPackets {
		t.Errorf("fwd received %d, sent %d out of %s, drops %v: the count does not close:\n%s", f.RxPackets, f.TxPackets, third, f.Drops, r.stdout)
	}
	if k.RxPackets != f.TxPackets {
		t.Errorf("kern drop on %s counted %d of the %d frames fwd sent to it", g.tx, k.RxPackets, f.TxPackets)
	}
}
