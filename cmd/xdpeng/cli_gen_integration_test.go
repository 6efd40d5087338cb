package main

// gen's methods without live frames, ended every way, through the binary.

import (
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"

	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/testutil/linktest"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// rxPackets reads dev's rx_packets in namespace ns.
func rxPackets(t *testing.T, ns, dev string) uint64 {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", ns, "cat", "/sys/class/net/"+dev+"/statistics/rx_packets").Output()
	if err != nil {
		t.Fatalf("read rx_packets of %s in %s: %v", dev, ns, err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCLIGenRelayLeavesNothing ends gen, in each method that sends
// through its relay (xsk, packet), with Ctrl-C, SIGTERM and kill -9 while
// it sends: the relay's XDP link goes with it (the kernel's list of XDP
// links is as before), gen0 keeps the hooks it had, and no frame reaches
// dut0 after it. Ctrl-C and SIGTERM end it with exit status 0 and a
// summary that names the method.
func TestCLIGenRelayLeavesNothing(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	for _, m := range []gen.Method{gen.XSK, gen.Packet} {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
			t.Run(m.String()+"/"+sig.String(), func(t *testing.T) {
				privtest.Root(t)
				links := linktest.XDP(t)
				hooks := readHooks(t, bed.GenNS, "gen0")
				p := startIn(t, bed.GenNS, bin, "gen", "-i", "gen0", "--method", m.String(), "-d", "60s", "--rate", "100000", "--json", "-n", "0.1")
				if !p.waitOutput(15*time.Second, false, func(out string) bool { return countedSome(out, "tx_packets") }) {
					p.signal(t, syscall.SIGKILL)
					t.Fatalf("gen --method %s sent nothing:\n%s", m, p.wait(t))
				}
				if now := linktest.XDP(t); len(now) <= len(links) {
					t.Errorf("XDP links while gen --method %s runs: %v, before %v: where is the relay's?", m, now, links)
				}
				p.signal(t, sig)
				r := p.wait(t)
				if sig == syscall.SIGKILL {
					if r.signal != syscall.SIGKILL {
						t.Errorf("not killed:\n%s", r)
					}
				} else {
					var sum struct {
						Type      string `json:"type"`
						Method    string `json:"method"`
						TxPackets uint64 `json:"tx_packets"`
					}
					summaryLine(t, r.stdout, &sum)
					if r.code != 0 || sum.Method != m.String() || sum.TxPackets == 0 {
						t.Errorf("exit status %d, summary %+v; want 0 and a summary of method %s with frames sent:\n%s", r.code, sum, m, r)
					}
				}
				var now []link.ID
				for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
					if now = linktest.XDP(t); slices.Equal(now, links) || time.Now().After(deadline) {
						break
					}
				}
				if !slices.Equal(now, links) {
					t.Errorf("XDP links %v after gen ended by %v, %v before", now, sig, links)
				}
				if h := readHooks(t, bed.GenNS, "gen0"); !h.Equal(hooks) {
					t.Errorf("gen0's hooks %+v after gen ended, %+v before", h, hooks)
				}
				a := rxPackets(t, bed.DUTNS, "dut0")
				time.Sleep(300 * time.Millisecond)
				if b := rxPackets(t, bed.DUTNS, "dut0"); b != a {
					t.Errorf("dut0 received %d frames in the 300 ms after gen ended by %v", b-a, sig)
				}
			})
		}
	}
}
