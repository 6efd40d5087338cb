//go:build linux

package compare

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/xdpeng/xdpeng/internal/lab/latency"
)

func TestNsText(t *testing.T) {
	for ns, want := range map[uint64]string{
		0: "0ns", 850: "850ns", 1000: "1.00µs", 3210: "3.21µs", 42_000: "42.0µs", 420_000: "420µs",
		1_050_000: "1.05ms", 42_000_000: "42.0ms", 420_000_000: "420ms", 1_000_000_000: "1.00s",
	} {
		if got := NsText(ns); got != want {
			t.Errorf("NsText(%d) = %q, want %q", ns, got, want)
		}
	}
}

// latencyRowOf makes a latency row whose histogram holds delays.
func latencyRowOf(name string, delays ...uint64) LatencyRow {
	var h latency.Histogram
	for _, d := range delays {
		h.Add(d)
	}
	r := LatencyRow{Path: name, Result: latency.Result{Sent: uint64(len(delays)), Received: h.Count, Latency: h.Summary(), Histogram: h}}
	for _, b := range h.NonEmpty() {
		r.Buckets = append(r.Buckets, [3]uint64{b.Lo, b.Hi, b.Count})
	}
	return r
}

// TestLatencyPicture: one line per row on a shared log axis, 8 columns a
// decade; the fullest column is a full block, the others in proportion,
// and a row's blocks sit where its delays are.
func TestLatencyPicture(t *testing.T) {
	fast := latencyRowOf("fast", 300, 300, 300, 300, 310, 5000)
	slow := latencyRowOf("slow", 200_000, 200_000, 210_000)
	var b bytes.Buffer
	WriteLatencyPicture(&b, []LatencyRow{fast, slow})
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("picture:\n%s", b.String())
	}
	axis, f, s := lines[1], []rune(lines[2]), []rune(lines[3])
	// Decades from 100 ns (the fastest row's minimum) to 1 ms (past the
	// slowest maximum): 4 decades, 32 columns after the 31-character label.
	if !strings.Contains(axis, "100ns") || !strings.Contains(axis, "1.00ms") {
		t.Errorf("axis %q", axis)
	}
	const label = 31 // "  " and the 28-character name and a space
	col := func(ns float64) int { return label + int(math.Floor((math.Log10(ns)-2)*pictureCols)) }
	// 5 frames at about 300 ns, one at 5 µs: 1/5 of the full height,
	// rounded to 2 of 8 eighths.
	if f[col(300)] != '█' || f[col(5000)] != '▂' {
		t.Errorf("fast row %q: want a full block at 300 ns and a low one at 5 µs", string(f))
	}
	if s[col(200_000)] != '█' || strings.ContainsAny(string(s[:col(100_000)]), "▁▂▃▄▅▆▇█") {
		t.Errorf("slow row %q: want its blocks at 200 µs and none below 100 µs", string(s))
	}
}

// TestWriteLatencyJSON: setup, a row per path and wait mode with the
// percentiles and the histogram's buckets, summary.
func TestWriteLatencyJSON(t *testing.T) {
	r := &LatencyResult{Frames: 6, Rows: []LatencyRow{latencyRowOf("xdp-tx", 300, 300, 300, 300, 310, 5000)}}
	r.Rows = append(r.Rows, LatencyRow{Path: "xsk-l2fwd", Wait: "busy", Error: "boom"})
	var b bytes.Buffer
	if err := WriteLatencyJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines:\n%s", len(lines), b.String())
	}
	var row struct {
		Type      string            `json:"type"`
		Path      string            `json:"path"`
		Sent      uint64            `json:"sent"`
		LatencyNs map[string]uint64 `json:"latency_ns"`
		Histogram [][3]uint64       `json:"histogram"`
		Env       map[string]any    `json:"env"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &row); err != nil {
		t.Fatal(err)
	}
	if row.Type != "row" || row.Path != "xdp-tx" || row.Sent != 6 || row.LatencyNs["p50"] == 0 || row.LatencyNs["max"] != 5000 ||
		len(row.Histogram) != 3 || row.Env == nil {
		t.Errorf("row line %s", lines[1])
	}
	var sum SummaryLine
	if err := json.Unmarshal([]byte(lines[3]), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Type != "summary" || len(sum.Paths) != 2 || sum.Paths[1] != "xsk-l2fwd busy" || len(sum.Failed) != 1 {
		t.Errorf("summary %+v", sum)
	}
}
