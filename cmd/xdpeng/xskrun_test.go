package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// fixedRunner is a runner whose run started at start.
type fixedRunner struct{ start time.Time }

func (r fixedRunner) Run(context.Context) error       { return nil }
func (r fixedRunner) Stats() (engine.Snapshot, error) { return engine.Snapshot{}, nil }
func (r fixedRunner) Started() time.Time              { return r.start }

// TestIntervalJSON: an AF_XDP mode's interval lines name the interface, as
// gen's do.
func TestIntervalJSON(t *testing.T) {
	start := time.Now()
	var out bytes.Buffer
	p := &xskPrinter{w: &out, mode: "rxdrop", f: &xskFlags{iface: "dut0", json: true}, run: fixedRunner{start}}
	q := engine.QueueStats{Queue: 0, CPU: 1}
	prev := engine.Snapshot{Time: start, Queues: []engine.QueueStats{q}}
	q.RxPackets = 1000
	p.interval(prev, engine.Snapshot{Time: start.Add(time.Second), Queues: []engine.QueueStats{q}})
	var line struct {
		Type      string  `json:"type"`
		Interface string  `json:"interface"`
		RxPPS     float64 `json:"rx_pps"`
	}
	if err := json.Unmarshal(out.Bytes(), &line); err != nil || line.Type != "interval" || line.Interface != "dut0" || line.RxPPS != 1000 {
		t.Errorf("interval line %s (%v): want interface dut0, rx_pps 1000", out.String(), err)
	}
}

// TestPerQueueJSON: each queue of a JSON summary has handler_dropped, and
// dropped, its old name, until the next release.
func TestPerQueueJSON(t *testing.T) {
	b, err := json.Marshal(queuesJSON([]engine.QueueStats{{Queue: 1, CPU: 0, RxPackets: 10, Dropped: 7}}))
	if err != nil {
		t.Fatal(err)
	}
	var qs []map[string]any
	if err := json.Unmarshal(b, &qs); err != nil {
		t.Fatal(err)
	}
	if len(qs) != 1 || qs[0]["handler_dropped"] != 7.0 || qs[0]["dropped"] != 7.0 || qs[0]["queue"] != 1.0 || qs[0]["rx_packets"] != 10.0 {
		t.Errorf("per_queue %s: want queue 1, rx_packets 10, handler_dropped and dropped 7", b)
	}
}

// TestBusyPollAdvice: the advice on interrupt deferral is given for a
// device an interrupt drives that does not defer it, and only then.
func TestBusyPollAdvice(t *testing.T) {
	off := netdev.IRQDeferral{}
	on := netdev.IRQDeferral{DeferHardIRQs: 2, GROFlushTimeout: 200 * time.Microsecond}
	got := busyPollAdvice("eth1", off, true)
	for _, w := range []string{"eth1 does not defer its interrupts (napi_defer_hard_irqs 0, gro_flush_timeout 0 ns)",
		"echo 2 > /sys/class/net/eth1/napi_defer_hard_irqs", "echo 200000 > /sys/class/net/eth1/gro_flush_timeout"} {
		if !strings.Contains(got, w) {
			t.Errorf("advice lacks %q:\n%s", w, got)
		}
	}
	if got := busyPollAdvice("eth1", on, true); got != "" {
		t.Errorf("advice for a deferring device: %q", got)
	}
	if got := busyPollAdvice("veth0", off, false); got != "" {
		t.Errorf("advice for a device without an interrupt: %q", got)
	}
}
