//go:build vmguest

package main

// The kernel matrix's guest test of --busy-poll's NAPI settings (issue 38),
// on virtio-net, whose queues have a NAPI with an interrupt each.

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// TestGuestBusyPollNAPI: rxdrop -B gives queue 0's NAPI what preferred
// busy polling needs (defer-hard-irqs 2, gro-flush-timeout 200 µs) where
// the kernel has settings of a NAPI's own, and says so; every frame sent is
// counted; the old settings are back after Ctrl-C, and after kill -9 (the
// guard puts them back). Where the kernel has no such settings (before
// 6.13) or cannot say which NAPI serves a queue (before 6.8), rxdrop -B
// says it changed nothing, and the test is not supported here.
func TestGuestBusyPollNAPI(t *testing.T) {
	g := newGuest(t)
	if !g.atLeast(5, 11) {
		privtest.Unsupported(t, "preferred busy polling needs Linux 5.11")
	}
	ifi, err := net.InterfaceByName(g.rx)
	if err != nil {
		t.Fatal(err)
	}
	rq, err := netdev.RxQueueInfo(ifi.Index, 0)
	var before *netdev.NAPIConfig
	if err == nil && rq.NAPIID != 0 {
		_, before, err = netdev.NAPIByID(rq.NAPIID)
	}
	if errors.Is(err, netdev.ErrNoQueueInfo) || errors.Is(err, netdev.ErrNoNAPIInfo) || (err == nil && before == nil) {
		r := g.run(t, time.Minute, "rxdrop", "-i", g.rx, "-q", "0", "-B", "-d", "1s")
		if r.code != 0 || !strings.Contains(r.stdout, "busy-poll: ") || strings.Contains(r.stdout, "put back on exit") {
			t.Fatalf("rxdrop -B where the NAPI has no settings of its own: want it to say it changed nothing:\n%s", r)
		}
		note := "no per-NAPI settings here"
		if err != nil {
			note = err.Error()
		}
		privtest.Unsupported(t, "%s (rxdrop -B says so)", note)
	}
	if err != nil {
		t.Fatal(err)
	}
	if rq.NAPIID == 0 {
		t.Fatalf("virtio_net links no NAPI to queue 0 of %s", g.rx)
	}
	want := netdev.NAPIConfig{DeferHardIRQs: 2, GROFlushTimeout: 200 * time.Microsecond, IRQSuspendTimeout: before.IRQSuspendTimeout}
	if *before == want {
		t.Fatalf("queue 0's NAPI has busy polling's settings already (%v): the test cannot tell a change", *before)
	}
	now := func() netdev.NAPIConfig {
		t.Helper()
		_, c, err := netdev.NAPIByID(rq.NAPIID)
		if err != nil || c == nil {
			t.Fatalf("NAPI %d: %v, %v", rq.NAPIID, c, err)
		}
		return *c
	}
	softirqs := func() uint64 { return netRxSoftirqs(t) }

	// Ctrl-C.
	p := g.start(t, "rxdrop", "-i", g.rx, "-q", "0", "-B", "-n", "200ms")
	if !p.waitOutput(60*time.Second, false, func(s string) bool { return strings.Contains(s, "queue cpu") }) {
		p.cmd.Process.Kill()
		t.Fatalf("rxdrop -B did not start:\n%s", p.wait(t))
	}
	if got := now(); got != want {
		t.Errorf("while rxdrop -B runs, queue 0's NAPI has %v, want %v", got, want)
	}
	// probe shows the queue's NAPI, its interrupt, its settings and (from
	// Linux 6.14) the socket bound to it.
	pr := g.run(t, time.Minute, "probe", "-i", g.rx, "--json")
	var pj probeJSON
	if err := json.Unmarshal([]byte(pr.stdout), &pj); err != nil || pr.code != 0 {
		t.Fatalf("probe: %v\n%s", err, pr)
	}
	if len(pj.NAPIs) == 0 || pj.NAPIs[0].NAPIID != rq.NAPIID || pj.NAPIs[0].IRQ <= 0 || pj.NAPIs[0].Settings == nil ||
		pj.NAPIs[0].Settings.DeferHardIRQs != 2 || (g.atLeast(6, 14) && !pj.NAPIs[0].XSK) {
		p.cmd.Process.Kill()
		t.Fatalf("probe's queue 0 while rxdrop -B runs: %+v, want NAPI %d with an IRQ, defer-hard-irqs 2 and (Linux 6.14) the socket", pj.NAPIs, rq.NAPIID)
	}
	t.Logf("probe: %+v, settings %+v", pj.NAPIs[0], *pj.NAPIs[0].Settings)
	s0 := softirqs()
	g.send(t)
	s1 := softirqs()
	time.Sleep(500 * time.Millisecond)
	p.signal(t, syscall.SIGINT)
	r := p.wait(t)
	if r.code != 0 || !strings.Contains(r.stdout, "queue 0's NAPI") || !strings.Contains(r.stdout, "put back on exit") {
		t.Errorf("rxdrop -B: want exit 0 and the NAPI change said:\n%s", r)
	}
	if got := now(); got != *before {
		t.Errorf("after Ctrl-C, queue 0's NAPI has %v, want %v back", got, *before)
	}

	// The same frames without -B, for the softirqs they cost.
	q := g.start(t, "rxdrop", "-i", g.rx, "-q", "0", "-n", "200ms")
	if !q.waitOutput(60*time.Second, false, func(s string) bool { return strings.Contains(s, "queue cpu") }) {
		q.cmd.Process.Kill()
		t.Fatalf("rxdrop did not start:\n%s", q.wait(t))
	}
	s2 := softirqs()
	g.send(t)
	s3 := softirqs()
	q.signal(t, syscall.SIGINT)
	q.wait(t)
	t.Logf("NET_RX softirqs while %d frames arrived: %d with -B and queue 0's NAPI at %v, %d without", guestFrames, s1-s0, want, s3-s2)

	// kill -9: the guard puts the settings back.
	k := g.start(t, "rxdrop", "-i", g.rx, "-q", "0", "-B", "-n", "200ms")
	if !k.waitOutput(60*time.Second, false, func(s string) bool { return strings.Contains(s, "queue cpu") }) {
		k.cmd.Process.Kill()
		t.Fatalf("rxdrop -B did not start:\n%s", k.wait(t))
	}
	if got := now(); got != want {
		t.Errorf("while the second rxdrop -B runs, queue 0's NAPI has %v, want %v", got, want)
	}
	k.signal(t, syscall.SIGKILL)
	k.wait(t)
	deadline := time.Now().Add(10 * time.Second)
	for now() != *before && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if got := now(); got != *before {
		t.Errorf("10 s after kill -9, queue 0's NAPI has %v, want %v back (the guard)", got, *before)
	}
}

// netRxSoftirqs sums NET_RX of /proc/softirqs over the CPUs.
func netRxSoftirqs(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/softirqs")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && f[0] == "NET_RX:" {
			var sum uint64
			for _, v := range f[1:] {
				var n uint64
				for _, c := range v {
					n = n*10 + uint64(c-'0')
				}
				sum += n
			}
			return sum
		}
	}
	t.Fatal("no NET_RX in /proc/softirqs")
	return 0
}
