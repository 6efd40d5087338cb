package main

import (
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/internal/cpuset"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
)

// TestCLIKernTxNote: kern tx on a veth says why frames failed only as it
// applies: with no XDP program on the peer, that one is needed there (and
// the command, in the peer's namespace); with one (kern pass on gen0),
// never that, and every frame that did not fail was taken by the peer.
func TestCLIKernTxNote(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	header := func(s string) bool { return strings.Contains(s, "Ctrl-C to stop") }
	noProgram := "gen0 has no XDP program"
	run := func(t *testing.T) result {
		t.Helper()
		tx := startIn(t, bed.DUTNS, bin, "kern", "tx", "-i", "dut0", "-Q")
		if !tx.waitOutput(20*time.Second, false, header) {
			t.Fatalf("kern tx did not start: %v", tx.wait(t))
		}
		if r := runIn(t, 30*time.Second, bed.GenNS, bin, "gen", "-i", "gen0", "--count", "1000", "--rate", "10000", "-Q"); r.code != 0 {
			t.Fatalf("gen: %v", r)
		}
		tx.signal(t, syscall.SIGINT)
		return tx.wait(t)
	}

	t.Run("no program on the peer", func(t *testing.T) {
		r := run(t)
		want := "attach one there, e.g. ip netns exec " + bed.GenNS + " xdpeng kern pass -i gen0"
		if r.code != 0 || !strings.Contains(r.stdout, "failed") || !strings.Contains(r.stdout, noProgram) || !strings.Contains(r.stdout, want) {
			t.Errorf("want %q and %q:\n%v", noProgram, want, r)
		}
	})
	t.Run("kern pass on the peer", func(t *testing.T) {
		pass := startIn(t, bed.GenNS, bin, "kern", "pass", "-i", "gen0", "-Q")
		if !pass.waitOutput(20*time.Second, false, header) {
			t.Fatalf("kern pass did not start: %v", pass.wait(t))
		}
		r := run(t)
		pass.signal(t, syscall.SIGINT)
		pr := pass.wait(t)
		if r.code != 0 || strings.Contains(r.stdout, noProgram) || !strings.Contains(r.stdout, "sent back (put on the veth peer's receive ring)") {
			t.Errorf("kern tx with kern pass on gen0: want no %q:\n%v", noProgram, r)
		}
		if strings.Contains(r.stdout, ", 0 failed") == strings.Contains(r.stdout, "receive ring full") {
			t.Errorf("kern tx: a note on a full ring exactly when frames failed:\n%v", r)
		}
		if pr.code != 0 {
			t.Errorf("kern pass: %v", pr)
		}
		// What tx put on gen0's ring, gen0's program took (and what an
		// earlier run left there besides).
		sent := regexp.MustCompile(`xdp_tx: (\d+) sent back`).FindStringSubmatch(r.stdout)
		got := regexp.MustCompile(`kern-pass on gen0: \S+ s, rx (\d+) packets`).FindStringSubmatch(pr.stdout)
		if sent == nil || got == nil {
			t.Fatalf("no counts in\n%v\n%v", r, pr)
		}
		s, _ := strconv.Atoi(sent[1])
		n, _ := strconv.Atoi(got[1])
		if s == 0 || n < s {
			t.Errorf("kern tx sent back %s, kern pass on gen0 received %s: want all of them", sent[1], got[1])
		}
	})
}

// TestCLIKernTCQueues: on a two-queue veth, which records no rx queue in
// the skb, kern drop --hook tc counts every frame as of no known queue
// ("queue ?", queue_unrecorded in JSON), never as queue 0, and its total
// is every frame sent.
func TestCLIKernTCQueues(t *testing.T) {
	bed := testbedtest.New(t, 1, 2)
	bin := buildCLI(t)
	const count = 4000
	s, _ := kernAround(t, bed, bin, count, "drop", "-i", "dut0", "--hook", "tc")
	if s.RxPackets != count || len(s.PerQueue) != 1 || !s.PerQueue[0].QueueUnrecorded || s.PerQueue[0].Queue != nil || s.PerQueue[0].Packets != count {
		t.Errorf("kern drop --hook tc counted %d of %d frames, per queue %+v: want all of them as of no known queue", s.RxPackets, count, s.PerQueue)
	}
}

// TestCLIKernPacketOps: kern drop with each packet operation that reads the
// frame, in both load modes, drops every frame the generator sent (sound
// frames: none aborted), and its summary says what it did to them.
func TestCLIKernPacketOps(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	const count = 2000
	for _, tc := range [][]string{{"read-data", "dpa"}, {"parse-ip", "load-bytes"}, {"swap-macs", "load-bytes"}} {
		t.Run(tc[0]+"/"+tc[1], func(t *testing.T) {
			s, r := kernAround(t, bed, bin, count, "drop", "-i", "dut0", "-p", tc[0], "-l", tc[1], "-e")
			if s.RxPackets != count || s.PacketOp != tc[0] || s.LoadMode != tc[1] {
				t.Errorf("counted %d of %d frames, packet operation %q, load mode %q; want all, %s, %s", s.RxPackets, count, s.PacketOp, s.LoadMode, tc[0], tc[1])
			}
			if strings.Contains(r.stdout, "XDP_ABORTED") {
				t.Errorf("sound frames aborted:\n%s", r.stdout)
			}
		})
	}
}

// TestCLIKernRedirectCPU: kern redirect-cpu sends every frame to the CPU
// named, where the CPUMAP's program counts and drops it: at a rate its
// queue takes, each frame the generator sent reached that CPU.
func TestCLIKernRedirectCPU(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	online, err := cpuset.Online()
	if err != nil {
		t.Fatal(err)
	}
	cpu := online[len(online)-1]
	const count = 4000
	s, _ := kernAround(t, bed, bin, count, "redirect-cpu", "-i", "dut0", "-c", strconv.Itoa(cpu))
	if s.RxPackets != count || s.RemotePackets != count || len(s.Remote) != 1 || *s.Remote[0].CPU != cpu {
		t.Errorf("kern redirect-cpu -c %d: received %d, reached the CPU %d (%+v); want %d, all on CPU %d", cpu, s.RxPackets, s.RemotePackets, s.Remote, count, cpu)
	}
}

// kernAround runs `kern ARGS --json` in the bed's DUT namespace while gen
// sends count frames at 100000 a second over 16 ports, stops it with
// SIGINT once they are in, and returns its summary and output.
func kernAround(t *testing.T, bed *testbed.Bed, bin string, count int, args ...string) (kernSummary, result) {
	t.Helper()
	p := startIn(t, bed.DUTNS, append(append([]string{bin, "kern"}, args...), "--json", "-n", "200ms")...)
	if !p.waitOutput(20*time.Second, false, func(s string) bool { return strings.Contains(s, `"type":"interval"`) }) {
		p.signal(t, syscall.SIGKILL)
		t.Fatalf("kern %v did not start: %v", args, p.wait(t))
	}
	if r := runIn(t, 30*time.Second, bed.GenNS, bin, "gen", "-i", "gen0", "--count", strconv.Itoa(count), "--rate", "100000", "--ports", "16", "-Q"); r.code != 0 {
		t.Fatalf("gen: %v", r)
	}
	time.Sleep(300 * time.Millisecond)
	p.signal(t, syscall.SIGINT)
	r := p.wait(t)
	var s kernSummary
	summaryLine(t, r.stdout, &s)
	return s, r
}
