//go:build linux

package engine_test

import (
	"bufio"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/internal/engineview"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
)

// soakDefault is how long TestSoak runs without XDPENG_SOAK: long enough
// for three idle/moderate/overload cycles, short enough for `make test`.
const soakDefault = 10 * time.Second

// soakDuration is XDPENG_SOAK as a duration (`make soak` sets 60s), or
// soakDefault.
func soakDuration(t *testing.T) time.Duration {
	v := os.Getenv("XDPENG_SOAK")
	if v == "" {
		if testing.Short() {
			t.Skip("soak test skipped in -short mode; XDPENG_SOAK=60s runs the long one")
		}
		return soakDefault
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 3*time.Second {
		t.Fatalf("XDPENG_SOAK=%q: want a duration of at least 3s, like 60s", v)
	}
	return d
}

// vmRSS is the process's resident set size in KiB.
func vmRSS(t *testing.T) int {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatalf("parse VmRSS %q: %v", rest, err)
			}
			return kb
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// TestSoak runs one engine for XDPENG_SOAK (default 10 s) while the load
// switches between idle, moderate and overload every few seconds. It
// checks that every frame is counted, in each moderate phase and in all,
// that frames are received again after each overload, that memory and
// goroutines do not grow, and that no UMEM frame is lost by the end. How
// much of a moderate load is taken depends on the machine and is not
// checked: a rate is a measurement, not a test.
func TestSoak(t *testing.T) {
	total := soakDuration(t)
	bed := testbedtest.New(t, 2, 1)
	cfg := rxdropConfig(bed)
	cfg.FillSize, cfg.RxSize, cfg.CompletionSize, cfg.TxSize = 1024, 1024, 1024, 1024
	cfg.NumFrames = 2048
	// A handler that reads every frame, so the general path (rxHandle,
	// verdicts, the free stack) runs, not the rxdrop shortcut.
	cfg.Handler = func(int) engine.Handler {
		var sum byte
		return engine.HandlerFunc(func(b *engine.Batch) {
			for i := 0; i < b.Len(); i++ {
				sum += b.Frame(i)[0]
			}
		})
	}
	r := start(t, bed, cfg)

	// The generator paces frame by frame (a bpf_loop waits until each
	// frame is due), so a moderate rate arrives without bursts.
	const moderateRate = 20_000
	cycles := 3
	phase := total / time.Duration(3*cycles+1)
	t.Logf("soak for %v: %d cycles of idle, moderate (%d pps) and overload, %v each, then moderate", total, cycles, moderateRate, phase)

	var sent, xmitErrors, lost uint64
	settle := func(want uint64) engine.QueueStats {
		// Wait until everything sent so far is received or dropped.
		var tot engine.QueueStats
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			s, err := r.eng.Stats()
			if err != nil {
				t.Fatal(err)
			}
			if tot = s.Total(); tot.RxPackets+tot.XDP.Drops() >= want {
				break
			}
		}
		return tot
	}
	moderate := func(what string) {
		before := settle(sent - xmitErrors - lost)
		st := send(t, bed, 0, gen.Config{Duration: phase, Rate: moderateRate, Threads: 1})
		sent, xmitErrors, lost = sent+st.Sent, xmitErrors+st.Errors, lost+st.Unaccounted()
		after := settle(sent - xmitErrors - lost)
		got := after.RxPackets - before.RxPackets
		drops := after.XDP.Drops() - before.XDP.Drops()
		t.Logf("%s: sent %d, received %d, socket drops %d, xmit errors %d", what, st.Sent, got, drops, st.Errors)
		if sum := got + drops + st.Errors + st.Unaccounted(); sum != st.Sent {
			t.Errorf("%s: sent %d != received %d + socket drops %d + veth xmit errors %d + unaccounted %d = %d",
				what, st.Sent, got, drops, st.Errors, st.Unaccounted(), sum)
		}
		if got == 0 {
			t.Errorf("%s: received none of %d frames at %d pps: the engine did not recover", what, st.Sent, moderateRate)
		}
	}
	type sample struct{ rss, goroutines int }
	measure := func() sample {
		runtime.GC()
		debug.FreeOSMemory()
		return sample{vmRSS(t), runtime.NumGoroutine()}
	}
	var samples []sample
	for c := 0; c < cycles; c++ {
		time.Sleep(phase) // idle: the workers sleep in poll()
		moderate("cycle " + strconv.Itoa(c) + " moderate")
		st := send(t, bed, 0, gen.Config{Duration: phase, Threads: 2})
		sent, xmitErrors, lost = sent+st.Sent, xmitErrors+st.Errors, lost+st.Unaccounted()
		t.Logf("cycle %d overload: sent %d, xmit errors %d", c, st.Sent, st.Errors)
		samples = append(samples, measure())
	}
	moderate("final moderate")
	samples = append(samples, measure())

	s := r.finish(sent)
	tot := s.Total()
	t.Logf("sent %d: received %d, socket drops %d (%+v), veth xmit errors %d, unaccounted %d",
		sent, tot.RxPackets, tot.XDP.Drops(), tot.XDP, xmitErrors, lost)
	if got := tot.RxPackets + tot.XDP.Drops() + xmitErrors + lost; got != sent {
		t.Errorf("sent %d != received %d + socket drops %d + veth xmit errors %d + unaccounted %d = %d",
			sent, tot.RxPackets, tot.XDP.Drops(), xmitErrors, lost, got)
	}
	if lost != 0 {
		t.Errorf("%d frames vanished before the veth counted them", lost)
	}
	for i, sock := range engineview.Sockets(r.eng) {
		c := sock.CountFrames()
		if err := c.Check(); err != nil {
			t.Errorf("queue %d: %v", r.eng.Config().Queues[i], err)
		}
	}
	// The first cycle is the warm-up (first generator load, first
	// overload); after it, memory and goroutines must stay flat.
	t.Logf("RSS (KiB) and goroutines after each cycle: %v", samples)
	base, last := samples[0], samples[len(samples)-1]
	const rssSlackKiB = 8 << 10
	if last.rss > base.rss+rssSlackKiB {
		t.Errorf("RSS grew from %d KiB to %d KiB over the soak", base.rss, last.rss)
	}
	if last.goroutines > base.goroutines+2 {
		t.Errorf("goroutines grew from %d to %d over the soak", base.goroutines, last.goroutines)
	}
}
