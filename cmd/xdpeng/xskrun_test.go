package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/handler"
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

// keyOrder returns the top-level keys of the JSON object b in the order
// they are written.
func keyOrder(t *testing.T, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%s: not an object (%v)", b, err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
	}
	return keys
}

// TestIntervalKeyOrder: an interval line's keys come in the order of its
// summary's fields ("type" first, "t" where the summary has duration_s),
// for rxdrop, count's extra keys and txonly, which has no receive keys; the
// text lines name the XDP statistics as the summary does.
func TestIntervalKeyOrder(t *testing.T) {
	start := time.Now()
	for _, c := range []struct {
		mode    string
		summary any
		hooks   xskHooks
	}{
		{"rxdrop", xskSummary{}, xskHooks{}},
		{"count", countSummary{}, xskHooks{summary: countSummary{}, intervalJSON: func(obj map[string]any, _ float64) {
			obj["by_protocol_pps"], obj["by_port_pps"] = map[string]uint64{}, map[string]uint64{}
		}}},
		{"txonly", txOnlySummary{}, xskHooks{}},
	} {
		var out bytes.Buffer
		p := &xskPrinter{w: &out, mode: c.mode, f: &xskFlags{iface: "dut0", json: true, extraStats: true, appStats: true}, run: fixedRunner{start}, hooks: c.hooks}
		if c.mode == "txonly" {
			p.summaryOf = txOnlySummary{}
		}
		q := engine.QueueStats{Queue: 0, CPU: 1}
		p.interval(engine.Snapshot{Time: start, Queues: []engine.QueueStats{q}}, engine.Snapshot{Time: start.Add(time.Second), Queues: []engine.QueueStats{q}})
		keys := keyOrder(t, out.Bytes())
		fields := jsonFields(c.summary)
		last := -1
		for _, k := range keys {
			like := map[string]string{"t": "duration_s", "by_protocol_pps": "by_protocol", "by_port_pps": "by_port"}[k]
			i := slices.Index(fields, k)
			if i < 0 {
				i = slices.Index(fields, like)
			}
			if i < 0 {
				t.Errorf("%s: interval key %s is not in the summary (%v)", c.mode, k, fields)
				continue
			}
			if i < last {
				t.Errorf("%s: interval keys %v are not in the summary's order %v", c.mode, keys, fields)
			}
			last = i
		}
		if keys[0] != "type" {
			t.Errorf("%s: interval keys %v: want type first", c.mode, keys)
		}
		if s := out.String(); c.mode == "txonly" && (strings.Contains(s, `"rx_pps"`) || strings.Contains(s, `"rx_packets"`) || strings.Contains(s, `"rx_bps"`) || strings.Contains(s, `"rx_wakeups`)) {
			t.Errorf("txonly's interval line has receive keys: %s", out.String())
		}

		out.Reset()
		p.f.json = false
		p.interval(engine.Snapshot{Time: start, Queues: []engine.QueueStats{q}}, engine.Snapshot{Time: start.Add(time.Second), Queues: []engine.QueueStats{q}})
		if !strings.Contains(out.String(), "rx_invalid_descs 0 tx_invalid_descs 0 rx_ring_full 0 rx_fill_ring_empty_descs 0 tx_ring_empty_descs 0") {
			t.Errorf("%s -x: want the summary's names of the XDP statistics:\n%s", c.mode, out.String())
		}
		if rx := strings.Contains(out.String(), "rx pps") || strings.Contains(out.String(), "rx_wakeups"); rx == (c.mode == "txonly") {
			t.Errorf("%s: receive columns %v in\n%s", c.mode, rx, out.String())
		}
	}
}

// TestJSONFields: the JSON names of a struct's fields, in order, those of
// an embedded struct in place, without the ones left out.
func TestJSONFields(t *testing.T) {
	type inner struct {
		B int `json:"b,omitempty"`
		C int
	}
	type outer struct {
		A int `json:"a"`
		inner
		D int `json:"-"`
		E int `json:"e"`
		f int
	}
	_ = outer{}.f
	if got := jsonFields(outer{}); !slices.Equal(got, []string{"a", "b", "C", "e"}) {
		t.Errorf("jsonFields = %v, want a b C e", got)
	}
}

// TestRxDroppedReason: rx_dropped comes with what it counts, in the JSON
// always (inside xdp_stats) and in the text where it is not zero; with -F
// it names the frames whose segments the fill ring did not hold.
func TestRxDroppedReason(t *testing.T) {
	mb := engine.DefaultConfig()
	mb.MultiBuffer = true
	x := xdpStatsOf(engine.SocketStats{RxDropped: 1164, RxRingFull: 3}, mb)
	b, err := json.Marshal(x)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got["rx_dropped"] != 1164.0 || got["rx_ring_full"] != 3.0 || got["rx_dropped_reason"] != rxDropReason(mb) ||
		!strings.Contains(rxDropReason(mb), "segments") {
		t.Errorf("xdp_stats with -F: %s", b)
	}
	if got, want := rxDroppedText(x), "1164 ("+rxDropReason(mb)+")"; got != want {
		t.Errorf("text with -F: %q, want %q", got, want)
	}
	plain := xdpStatsOf(engine.SocketStats{RxDropped: 5}, engine.DefaultConfig())
	if got, want := rxDroppedText(plain), "5 (no buffer in the fill ring)"; got != want {
		t.Errorf("text without -F: %q, want %q", got, want)
	}
	if got := rxDroppedText(xdpStatsOf(engine.SocketStats{}, mb)); got != "0" {
		t.Errorf("text of no drops: %q, want 0", got)
	}
}

// The reasons a handler gave its drops: named in JSON (and the engine's
// array by number left out), and in the text.
func TestDropReasonsNamed(t *testing.T) {
	var q engine.QueueStats
	q.Dropped, q.DroppedFor[handler.ReasonTooShort], q.DroppedFor[7] = 9, 5, 1
	b, err := json.Marshal(queuesJSON([]engine.QueueStats{q})[0])
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got["dropped_for"]; ok || fmt.Sprint(got["handler_dropped_for"]) != "map[reason_7:1 too_short:5]" {
		t.Errorf("queue JSON: %s", b)
	}
	if got, want := dropReasonsText(q.DroppedFor), " (5 shorter than an Ethernet header, 1 for reason 7)"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	b, _ = json.Marshal(queuesJSON([]engine.QueueStats{{Dropped: 3}})[0])
	if strings.Contains(string(b), "dropped_for") || dropReasonsText([engine.MaxDropReasons + 1]uint64{}) != "" {
		t.Errorf("no reasons given: %s", b)
	}
}
