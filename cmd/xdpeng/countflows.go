package main

import (
	"fmt"
	"io"

	"github.com/xdpeng/xdpeng/engine/handler"
)

// flowSummary is count --by rxhash's JSON summary: rxdrop's, plus the
// counts by RX hash.
type flowSummary struct {
	xskSummary
	ByRxHash map[string]uint64 `json:"by_rxhash"`
	Unhashed uint64            `json:"unhashed"`
	Overflow uint64            `json:"overflow"`
}

// flowHooks print the busiest RX hashes of each interval and the exact
// counts at the end.
func flowHooks(g *handler.FlowGroup, top int) xskHooks {
	var prev handler.FlowStats
	rates := func(dt float64) (flows []countEntry, unhashed uint64) {
		cur := g.Stats()
		d := delta(hashCounts(cur), hashCounts(prev))
		for k, v := range d {
			d[k] = uint64(float64(v)/dt + 0.5)
		}
		unhashed = uint64(float64(cur.Unhashed-prev.Unhashed)/dt + 0.5)
		prev = cur
		return topN(d, top), unhashed
	}
	return xskHooks{
		intervalText: func(w io.Writer, dt float64) {
			flows, unhashed := rates(dt)
			for _, e := range flows {
				fmt.Fprintf(w, "%10s %-24s %12d pkt/s\n", "", "rxhash "+e.Key, e.Count)
			}
			if unhashed > 0 {
				fmt.Fprintf(w, "%10s %-24s %12d pkt/s\n", "", "no rxhash", unhashed)
			}
		},
		intervalJSON: func(obj map[string]any, dt float64) {
			flows, unhashed := rates(dt)
			obj["by_rxhash_pps"] = entryMap(flows)
			obj["unhashed_pps"] = unhashed
		},
		summaryText: func(w io.Writer) {
			s := g.Stats()
			fmt.Fprintf(w, "  counted %d frames: %d flow(s) by RX hash, %d frame(s) without a hash", s.Frames, len(s.ByHash), s.Unhashed)
			if s.Overflow > 0 {
				fmt.Fprintf(w, ", %d of flows beyond the %d counted per queue", s.Overflow, handler.MaxFlows)
			}
			fmt.Fprintln(w)
			for _, e := range topN(hashCounts(s), top) {
				fmt.Fprintf(w, "    %-24s %14d\n", "rxhash "+e.Key, e.Count)
			}
			if n := len(s.ByHash); top > 0 && n > top {
				fmt.Fprintf(w, "    (%d more flows: --top 0 or --json shows them all)\n", n-top)
			}
		},
		summaryJSON: func(sum xskSummary) any {
			s := g.Stats()
			return flowSummary{xskSummary: sum, ByRxHash: hashCounts(s), Unhashed: s.Unhashed, Overflow: s.Overflow}
		},
	}
}
