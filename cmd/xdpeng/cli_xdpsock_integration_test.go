package main

// The options an xdpsock or xdp-bench user types without reading: bare
// seconds, -n, -C, -s (FCS counted), -G/-H, -V/-J/-K, -P, -m, -B, -Q.

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
)

// TestCLIXdpsockInvocation: `rxdrop -i dut0 -q 0 -d 5 -n 1` runs 5 s with
// an interval line a second, and counts gen -C 1000 -s 128 exactly: 1000
// frames of 124 bytes (128 with the FCS).
func TestCLIXdpsockInvocation(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	p := startIn(t, bed.DUTNS, bin, "rxdrop", "-i", "dut0", "-q", "0", "-d", "5", "-n", "1", "--json")
	if !p.waitOutput(10*time.Second, false, func(s string) bool { return len(jsonLines(s, "interval")) > 0 }) {
		t.Fatalf("no interval line:\n%s", p.wait(t))
	}
	g := runIn(t, 30*time.Second, bed.GenNS, bin, "gen", "-i", "gen0", "-C", "1000", "-s", "128", "-Q", "--json")
	if g.code != 0 || len(jsonLines(g.stdout, "interval")) != 0 {
		t.Fatalf("gen -Q:\n%s", g)
	}
	var gs struct {
		TxPackets  uint64 `json:"tx_packets"`
		TxBytes    uint64 `json:"tx_bytes"`
		FrameSize  int    `json:"frame_size"`
		FrameBytes int    `json:"frame_bytes"`
	}
	summaryLine(t, g.stdout, &gs)
	if gs.TxPackets != 1000 || gs.FrameSize != 128 || gs.FrameBytes != 124 || gs.TxBytes != 124000 {
		t.Errorf("gen -C 1000 -s 128: %+v", gs)
	}
	r := p.wait(t)
	if r.code != 0 {
		t.Fatalf("%s", r)
	}
	var sum struct {
		RxPackets uint64  `json:"rx_packets"`
		RxBytes   uint64  `json:"rx_bytes"`
		DurationS float64 `json:"duration_s"`
		Queues    []int   `json:"queues"`
	}
	summaryLine(t, r.stdout, &sum)
	if sum.RxPackets != 1000 || sum.RxBytes != 124000 || len(sum.Queues) != 1 || sum.Queues[0] != 0 {
		t.Errorf("rxdrop -q 0: %+v, want 1000 frames of 124 bytes on queue 0", sum)
	}
	if n := len(jsonLines(r.stdout, "interval")); n < 4 {
		t.Errorf("%d interval lines in a 5 s run with -n 1:\n%s", n, r.stdout)
	}
	if sum.DurationS < 5 {
		t.Errorf("ran %.3f s with -d 5", sum.DurationS)
	}
}

// TestCLITxonlyFrameFlags sends with xdpsock's frame letters and reads the
// frames on the peer with tcpdump: the MACs, the VLAN tag and priority,
// the size with the FCS, the pattern.
func TestCLITxonlyFrameFlags(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	if _, err := exec.LookPath("tcpdump"); err != nil {
		t.Fatalf("tcpdump is needed (apt-get install tcpdump): %v", err)
	}
	dump := startCmd(t, exec.Command("ip", "netns", "exec", bed.DUTNS, "tcpdump", "-i", "dut0", "-e", "-nn", "-x", "-c", "10", "-l", "udp or vlan"))
	if !dump.waitOutput(10*time.Second, true, func(s string) bool { return strings.Contains(s, "listening on") }) {
		t.Fatalf("tcpdump did not start:\n%s", dump.wait(t))
	}
	r := runIn(t, 30*time.Second, bed.GenNS, bin, "txonly", "-i", "gen0", "-q", "0", "-C", "10", "-s", "72",
		"-H", "02:00:00:00:00:aa", "-G", "02:78:64:00:00:02", "-V", "-J", "7", "-K", "3", "-P", "12345678", "-Q")
	if r.code != 0 || strings.Contains(r.stdout, "[") {
		t.Fatalf("txonly (-Q: no interval lines):\n%s", r)
	}
	d := dump.wait(t)
	out := d.stdout
	for _, w := range []string{
		"02:00:00:00:00:aa > 02:78:64:00:00:02", "vlan 7, p 3", "length 68", // 72 with the FCS
		"1234 5678 1234 5678",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("the frames lack %q:\n%s", w, out)
		}
	}
}

// TestCLIQuietAndKnobs: -Q leaves only the summary; -m and -B turn
// need_wakeup off and busy polling on, as the header says.
func TestCLIQuietAndKnobs(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	r := runIn(t, 30*time.Second, bed.DUTNS, bin, "rxdrop", "-i", "dut0", "-m", "-B", "-Q", "-d", "1.5", "-n", "0.2")
	if r.code != 0 || !strings.Contains(r.stdout, "need_wakeup false, wait busy-poll") || strings.Contains(r.stdout, "rx pps") {
		t.Errorf("rxdrop -m -B -Q:\n%s", r)
	}
	r = runIn(t, 30*time.Second, bed.DUTNS, bin, "kern", "drop", "-i", "dut0", "-Q", "-d", "1", "-n", "0.2", "--json")
	if r.code != 0 || len(jsonLines(r.stdout, "interval")) != 0 || len(jsonLines(r.stdout, "summary")) != 1 {
		t.Errorf("kern drop -Q:\n%s", r)
	}
}

// TestCLIBusyPollInert: where the socket has no NAPI to busy-poll (veth in
// Linux 6.18), rxdrop -B says so once while it runs and in its summary; where
// it has one, it says neither. The JSON summary's busy_poll_inert decides.
func TestCLIBusyPollInert(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	var inert bool // from the JSON run, which comes first
	for _, asJSON := range []bool{true, false} {
		args := []string{"rxdrop", "-i", "dut0", "-B", "-d", "2.5", "-n", "0.5"}
		if asJSON {
			args = append(args, "--json")
		}
		p := startAttached(t, bed.DUTNS, append([]string{bin}, args...)...)
		if g := runIn(t, 30*time.Second, bed.GenNS, bin, "gen", "-i", "gen0", "-d", "1", "--rate", "20000"); g.code != 0 {
			t.Fatalf("gen:\n%s", g)
		}
		r := p.wait(t)
		if r.code != 0 {
			t.Fatalf("rxdrop -B:\n%s", r)
		}
		const once = "busy-poll: the sockets on dut0 have NAPI ID 0, nothing to busy-poll"
		if asJSON {
			var sum struct {
				PerQueue []struct {
					BusyPollInert bool `json:"busy_poll_inert"`
				} `json:"per_queue"`
			}
			summaryLine(t, r.stdout, &sum)
			if len(sum.PerQueue) != 1 {
				t.Fatalf("summary per_queue: %+v\n%s", sum, r)
			}
			inert = sum.PerQueue[0].BusyPollInert
			if strings.Contains(r.stderr, once) != inert {
				t.Errorf("busy_poll_inert %v, but the note while running is there: %v\n%s", inert, !inert, r)
			}
			continue
		}
		said := strings.Contains(r.stdout, "busy-poll: the sockets on dut0 had NAPI ID 0")
		if said != inert || strings.Contains(r.stderr, once) != inert {
			t.Errorf("busy_poll_inert %v, but the summary says so: %v, the note while running: %v\n%s", inert, said, strings.Contains(r.stderr, once), r)
		}
	}
}

// TestCLITxonlyTxCycle: txonly -T (xdpsock's, in microseconds) sends a
// batch a cycle: 800 frames in batches of 8 take 100 cycles or more (a
// batch the ring could not take at once finishes in a later one), and the
// summary says how late each went out.
func TestCLITxonlyTxCycle(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	r := runIn(t, 30*time.Second, bed.GenNS, bin, "txonly", "-i", "gen0", "-q", "0", "-C", "800", "-b", "8", "-T", "2000", "--json")
	var s txOnlySummary
	summaryLine(t, r.stdout, &s)
	if r.code != 0 || s.TxPackets != 800 || s.TxCycleNs != 2e6 || len(s.TxCycle) != 1 {
		t.Fatalf("txonly -T 2000: sent %d, cycle %d ns, cycles %+v:\n%s", s.TxPackets, s.TxCycleNs, s.TxCycle, r)
	}
	if c := s.TxCycle[0]; c.Cycles < 100 || c.LateMax < c.LateAvg || c.LateAvg < c.LateMin || c.LateMax >= 2*time.Millisecond {
		t.Errorf("txonly -T 2000, 800 frames in batches of 8: %+v; want 100 cycles or more, late min <= avg <= max < the cycle", c)
	}
}
