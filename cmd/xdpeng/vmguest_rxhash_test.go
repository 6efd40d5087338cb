//go:build vmguest

package main

// The kernel matrix's guest test of a driver that fills the XDP RX hash:
// virtio_net under QEMU's hash report (the bed's Hash option), where QEMU
// computes each frame's Toeplitz hash with the key the guest's driver set.

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// virtioNetFHashReport is VIRTIO_NET_F_HASH_REPORT, a bit of the device's
// negotiated features.
const virtioNetFHashReport = 57

// TestGuestRxHash: count --by rxhash on the port under test, while txonly
// sends guestFrames frames over hashFlows UDP flows (destination ports
// 9..9+hashFlows-1). QEMU hashes each one (UDPv4: the addresses and the
// ports) and virtio_net hands the hash to the XDP program: every frame has
// one (no frame counted without), each flow's frames count under exactly
// one hash, and that hash is the Toeplitz hash of the flow's 4-tuple under
// the key the driver reports (ethtool -x), so it is the device's, not a
// constant or another flow's.
func TestGuestRxHash(t *testing.T) {
	g := newGuest(t)
	// The netdev family reports the device's XDP receive metadata from
	// Linux 6.8; virtio_net's RX hash (virtnet_xdp_rx_hash) came after,
	// and is there only on a device with the hash report.
	if kinds := rxMetadata(t, g); !slices.Contains(kinds, "hash") {
		if g.atLeast(6, 12) && !hashReport(t, g.rx) {
			privtest.Unavailable(t, "%s has no virtio-net hash report (VIRTIO_NET_F_HASH_REPORT): the bed is up without it (testbed up --vm KERNEL --hash; the matrix offers it)", g.rx)
		}
		privtest.Unsupported(t, "virtio_net of Linux %d.%d gives XDP no RX hash (its xdp-rx-metadata features: %v; 6.12's has it)", g.kernel[0], g.kernel[1], kinds)
	}
	if !hashReport(t, g.rx) {
		t.Fatalf("probe lists the RX hash on %s, which has no virtio-net hash report", g.rx)
	}
	key := rssKey(t, g.rx)
	// virtio_net hands XDP the hash only while receive hashing is on.
	rxhash(t, g.rx, "on")
	t.Cleanup(func() { rxhash(t, g.rx, "off") })

	const hashFlows, srcPort, dstPort = 8, 1234, 9
	src, dst := netip.MustParseAddr("198.18.0.10"), netip.MustParseAddr("198.18.0.20")
	p := g.start(t, "count", "-i", g.rx, "--by", "rxhash", "--top", "0", "--json", "-n", "200ms")
	running(t, p, "count --by rxhash")
	g.send(t, "--src-ip", src.String(), "--dst-ip", dst.String(), "--src-port", strconv.Itoa(srcPort),
		"--dst-port", strconv.Itoa(dstPort), "--ports", strconv.Itoa(hashFlows))
	var s flowSummary
	r := stop(t, p, "count --by rxhash", &s)
	counted(t, "count --by rxhash", s.RxPackets, s.XDPStats.Drops())
	t.Logf("count --by rxhash: %v, %d without a hash, key %x", s.ByRxHash, s.Unhashed, key)
	if s.Unhashed != 0 || s.Overflow != 0 {
		t.Errorf("%d frames without a hash, %d beyond the counted flows: want 0 and 0 (QEMU hashes every UDP frame)", s.Unhashed, s.Overflow)
	}
	// The frames of each flow are txonly's to share among the queues:
	// the hashes, and that they add up, are checked, not how many each.
	want := map[string]bool{}
	for k := range hashFlows {
		want[fmt.Sprintf("0x%08x", toeplitzUDP4(key, src, dst, srcPort, uint16(dstPort+k)))] = true
	}
	var sum uint64
	for h, n := range s.ByRxHash {
		sum += n
		if !want[h] {
			t.Errorf("%d frames under RX hash %s, which is none of the flows' Toeplitz hashes %v", n, h, want)
		}
	}
	if len(s.ByRxHash) != hashFlows || sum != s.RxPackets {
		t.Errorf("%d RX hashes counting %d frames, want the %d flows' (%v) counting all %d received:\n%s", len(s.ByRxHash), sum, hashFlows, want, s.RxPackets, r.stdout)
	}
}

// hashReport reports whether dev's virtio device negotiated the hash
// report (its features file is one 0 or 1 per feature bit, bit 0 first).
func hashReport(t *testing.T, dev string) bool {
	t.Helper()
	b, err := os.ReadFile("/sys/class/net/" + dev + "/device/features")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.TrimSpace(string(b))
	return len(f) > virtioNetFHashReport && f[virtioNetFHashReport] == '1'
}

// rxMetadata is the kinds of XDP receive metadata probe says the port
// under test gives.
func rxMetadata(t *testing.T, g *guest) []string {
	t.Helper()
	r := g.run(t, time.Minute, "probe", "-i", g.rx, "--json")
	var p struct {
		RxMetadata []string `json:"xdp_rx_metadata"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &p) != nil {
		t.Fatalf("probe:\n%s", r)
	}
	return p.RxMetadata
}

// rssKey is dev's RSS hash key, as ethtool -x prints it.
func rssKey(t *testing.T, dev string) []byte {
	t.Helper()
	out, err := exec.Command("ethtool", "-x", dev).CombinedOutput()
	if err != nil {
		t.Fatalf("ethtool -x %s: %v:\n%s", dev, err, out)
	}
	_, rest, ok := strings.Cut(string(out), "RSS hash key:\n")
	line, _, _ := strings.Cut(rest, "\n")
	key, err := hex.DecodeString(strings.ReplaceAll(strings.TrimSpace(line), ":", ""))
	if !ok || err != nil || len(key) < 16 {
		t.Fatalf("ethtool -x %s: no RSS hash key (%v):\n%s", dev, err, out)
	}
	return key
}

// rxhash turns dev's receive hashing (ethtool -K DEV rxhash) on or off.
func rxhash(t *testing.T, dev, state string) {
	t.Helper()
	out, err := exec.Command("ethtool", "-K", dev, "rxhash", state).CombinedOutput()
	if err != nil {
		t.Errorf("ethtool -K %s rxhash %s: %v:\n%s", dev, state, err, out)
	}
	time.Sleep(100 * time.Millisecond) // the device takes the new configuration over its control queue
}

// toeplitzUDP4 is the Toeplitz hash (Microsoft's RSS) of a UDP/IPv4 flow:
// over the source and destination addresses and ports, in network order,
// each input bit that is set adding the 32 key bits that start at its
// position.
func toeplitzUDP4(key []byte, src, dst netip.Addr, sport, dport uint16) uint32 {
	var in [12]byte
	s, d := src.As4(), dst.As4()
	copy(in[0:], s[:])
	copy(in[4:], d[:])
	binary.BigEndian.PutUint16(in[8:], sport)
	binary.BigEndian.PutUint16(in[10:], dport)
	var h uint32
	window := binary.BigEndian.Uint32(key) // key bits i..i+31
	for i, b := range in {
		next := key[i+4]
		for bit := 7; bit >= 0; bit-- {
			if b&(1<<bit) != 0 {
				h ^= window
			}
			window = window<<1 | uint32(next>>bit&1)
		}
	}
	return h
}
