//go:build linux

package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/xdpeng/xdpeng/internal/cpuset"
)

// WriteLatencyTable prints a latency run: the setup and environment, a
// row per path and wait mode with the frames' fate and the delay
// percentiles, a picture of each row's distribution, and what the figures
// include.
func WriteLatencyTable(w io.Writer, r *LatencyResult) {
	writeInterrupted(w, len(r.Rows), r.Unfinished)
	s := r.Setup
	if s.Mode == "remote" {
		fmt.Fprintf(w, "two hosts: %s; generator here on CPU %s, receiver on the DUT's CPU %s; %d queue(s), %d-byte frames; %d stamped frames per row at %d pps (%.1fs)\n",
			s.hosts(), cpuset.Format(s.GenCPUs), cpuset.Format(s.DUTCPUs), s.Queues, s.FrameSize, r.Frames, s.Rate, s.DurationS)
	} else {
		fmt.Fprintf(w, "test bed %s, layout %s: generator on CPU %s, receiver on CPU %s, DUT NAPI %s; %d queue(s), %d-byte frames; %d stamped frames per row at %d pps (%.1fs)\n",
			s.Bed, s.Layout, cpuset.Format(s.GenCPUs), cpuset.Format(s.DUTCPUs), s.NAPI, s.Queues, s.FrameSize, r.Frames, s.Rate, s.DurationS)
	}
	writeEnv(w, s.Env)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{fmt.Sprintf("%-28s", "path"), "sent", "received", "lost", "reordered", "duplicated", "min", "p50", "p90", "p99", "p99.9", "max", ""}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, row := range r.Rows {
		cells := []string{fmt.Sprintf("%-28s", row.Name())}
		if row.Error != "" && row.Sent == 0 {
			for range head[1 : len(head)-1] {
				cells = append(cells, "-")
			}
		} else {
			l := row.Latency
			cells = append(cells, u(row.Sent), u(row.Received), u(row.Lost), u(row.Reordered), u(row.Duplicated),
				NsText(l.Min), NsText(l.P50), NsText(l.P90), NsText(l.P99), NsText(l.P999), NsText(l.Max))
		}
		fmt.Fprintln(tw, strings.Join(append(cells, ""), "\t")+"\t")
	}
	tw.Flush()

	fmt.Fprintln(w)
	WriteLatencyPicture(w, r.Rows)

	fmt.Fprintln(w)
	for _, row := range r.Rows {
		if row.Error != "" {
			fmt.Fprintf(w, "  %-28s FAILED: %s\n", row.Name(), row.Error)
			continue
		}
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(row.Reasons)) {
			parts = append(parts, fmt.Sprintf("%s %d", k, row.Reasons[k]))
		}
		parts = append(parts, fmt.Sprintf("unexplained %d", row.Unexplained))
		fmt.Fprintf(w, "  %-28s lost %d: %s\n", row.Name(), row.Lost, strings.Join(parts, ", "))
	}
	fmt.Fprintln(w, "\nnotes:")
	fmt.Fprintln(w, "  delay: bpf_ktime_get_ns (CLOCK_MONOTONIC) in the receiver program where the frame comes back, minus the same clock")
	fmt.Fprintln(w, "  read by the generator's program just before it handed the frame to gen0; percentiles are bucket upper bounds (<= 3.1% over), min and max exact.")
	if s.Mode == "remote" {
		fmt.Fprintln(w, "  two hosts: both clock readings are the tester's (stamped at send, read on return), so the DUT's clock need not agree with it;")
		fmt.Fprintln(w, "  the delay includes both cables (or the switch) and the tester's ports.")
	}
	fmt.Fprintln(w, "  lost, reordered, duplicated: by sequence number, exact; lost lists the path's own counters that explain the loss.")
	for _, row := range r.Rows {
		if row.Error == "" {
			fmt.Fprintf(w, "  %-28s taken back at %s; XDP mode %s\n", row.Name(), row.Receiver, row.Env.XDPMode)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  %s\n", n)
	}
}

func u(v uint64) string { return strconv.FormatUint(v, 10) }

// NsText formats a delay in ns with three significant figures: "850ns",
// "3.21µs", "42.0µs", "1.05ms", "1.00s".
func NsText(ns uint64) string {
	v := float64(ns)
	switch {
	case ns < 1000:
		return fmt.Sprintf("%dns", ns)
	case v < 10e3:
		return fmt.Sprintf("%.2fµs", v/1e3)
	case v < 100e3:
		return fmt.Sprintf("%.1fµs", v/1e3)
	case v < 1e6:
		return fmt.Sprintf("%.0fµs", v/1e3)
	case v < 10e6:
		return fmt.Sprintf("%.2fms", v/1e6)
	case v < 100e6:
		return fmt.Sprintf("%.1fms", v/1e6)
	case v < 1e9:
		return fmt.Sprintf("%.0fms", v/1e6)
	}
	return fmt.Sprintf("%.2fs", v/1e9)
}

// pictureCols is the columns of the delay picture per decade.
const pictureCols = 8

// WriteLatencyPicture draws each row's delay distribution on one line, on
// a shared log scale of pictureCols columns per decade: a column's height
// is its share of the row's frames, relative to the row's fullest column
// (any frame at all shows at least the lowest block).
func WriteLatencyPicture(w io.Writer, rows []LatencyRow) {
	lo, hi := math.MaxFloat64, 0.0
	for _, row := range rows {
		if row.Received == 0 || row.Latency.Max == 0 {
			continue
		}
		lo = min(lo, float64(max(row.Latency.Min, 1)))
		hi = max(hi, float64(row.Latency.Max))
	}
	if hi == 0 {
		return
	}
	d0 := int(math.Floor(math.Log10(lo)))
	d1 := int(math.Floor(math.Log10(hi))) + 1
	cols := (d1 - d0) * pictureCols
	fmt.Fprintf(w, "delay, log scale (%d columns a decade; height: share of the row's frames)\n", pictureCols)
	axis := []rune(strings.Repeat(" ", cols+8))
	for d := d0; d <= d1; d++ {
		label := []rune(NsText(uint64(math.Pow10(d))))
		at := (d - d0) * pictureCols
		for i, c := range label {
			if at+i < len(axis) {
				axis[at+i] = c
			}
		}
	}
	fmt.Fprintf(w, "  %-28s %s\n", "", strings.TrimRight(string(axis), " "))
	blocks := []rune(" ▁▂▃▄▅▆▇█")
	for _, row := range rows {
		if row.Received == 0 {
			continue
		}
		counts := make([]uint64, cols)
		var top uint64
		for _, b := range row.Buckets {
			mid := (float64(b[0]) + float64(b[1])) / 2
			c := int(math.Floor((math.Log10(max(mid, 1)) - float64(d0)) * pictureCols))
			c = min(max(c, 0), cols-1)
			counts[c] += b[2]
			top = max(top, counts[c])
		}
		line := make([]rune, cols)
		for i, n := range counts {
			h := 0
			if n > 0 {
				h = max(1, int(math.Round(float64(n)/float64(top)*8)))
			}
			line[i] = blocks[h]
		}
		fmt.Fprintf(w, "  %-28s %s\n", row.Name(), strings.TrimRight(string(line), " "))
	}
}

// LatencySetupLine, LatencyRowLine and LatencySummaryLine are the JSON
// lines of WriteLatencyJSON, in compare's shape.
type (
	LatencySetupLine struct {
		Type string `json:"type"` // "setup"
		Setup
		Frames uint64 `json:"frames_per_row"`
	}
	LatencyRowLine struct {
		Type string `json:"type"` // "row"
		LatencyRow
	}
)

// WriteLatencyJSON writes r as JSON lines as compare --json does: a
// "setup" line, a "row" line per path and wait mode, a "summary" line.
func WriteLatencyJSON(w io.Writer, r *LatencyResult) error {
	enc := json.NewEncoder(w)
	lines := []any{LatencySetupLine{Type: "setup", Setup: r.Setup, Frames: r.Frames}}
	paths := make([]string, 0, len(r.Rows))
	for _, row := range r.Rows {
		lines = append(lines, LatencyRowLine{Type: "row", LatencyRow: row})
		paths = append(paths, row.Name())
	}
	failed := r.Failed()
	if failed == nil {
		failed = []string{}
	}
	lines = append(lines, SummaryLine{Type: "summary", Paths: paths, Failed: failed, Notes: r.Notes, Interrupted: r.Interrupted(), Unfinished: r.Unfinished})
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			return fmt.Errorf("encode JSON: %w", err)
		}
	}
	return nil
}
