//go:build linux

package compare

import (
	"encoding/csv"
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
	labenv "github.com/xdpeng/xdpeng/internal/lab/env"
)

// WriteTable prints the setup, one line per path and the footer that says
// what the figures include; an interrupted run's table says so first.
func WriteTable(w io.Writer, r *Result) {
	writeInterrupted(w, len(r.Rows), r.Unfinished)
	s := r.Setup
	switch s.Mode {
	case "testbed":
		fmt.Fprintf(w, "test bed %s, layout %s: generator on CPU %s, receiver on CPU %s, DUT NAPI %s; %d queue(s), %d-byte frames, %.1fs per path, offered load %s; Linux %s\n",
			s.Bed, s.Layout, cpuset.Format(s.GenCPUs), cpuset.Format(s.DUTCPUs), s.NAPI, s.Queues, s.FrameSize, s.DurationS, offered(s.Rate), s.Kernel)
	case "remote":
		fmt.Fprintf(w, "two hosts: %s; generator here on CPU %s, receiver on the DUT's CPU %s; %d queue(s), %d-byte frames, %.1fs per path, offered load %s; DUT Linux %s\n",
			s.hosts(), cpuset.Format(s.GenCPUs), cpuset.Format(s.DUTCPUs), s.Queues, s.FrameSize, s.DurationS, offered(s.Rate), s.Kernel)
	default:
		fmt.Fprintf(w, "interface %s: whatever traffic arrives, %.1fs per path, %d queue(s), receiver on CPU %s; Linux %s\n",
			s.Interface, s.DurationS, s.Queues, cpuset.Format(s.DUTCPUs), s.Kernel)
	}
	writeEnv(w, s.Env)
	fmt.Fprintln(w)
	cpus := cpuColumns(r)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	bound := r.GeneratorBound != ""
	if bound {
		fmt.Fprintf(w, "GENERATOR-BOUND: %s.\n\n", r.GeneratorBound)
	}
	head := []string{fmt.Sprintf("%-20s", "path"), "Mpps", "ns/pkt"}
	if bound {
		head[1], head[2] = head[2], head[1]
	}
	for _, c := range cpus {
		head = append(head, "cpu"+c.label)
	}
	head = append(head, "sent", "received", "dropped", "")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	starred := false
	for _, row := range r.Rows {
		cells := []string{fmt.Sprintf("%-20s", row.Path)}
		if row.Error != "" {
			cells = append(cells, "-", "-")
			for range cpus {
				cells = append(cells, "-")
			}
			cells = append(cells, "-", "-", "-", "")
			fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
			continue
		}
		mpps := fmt.Sprintf("%.3f", row.Mpps)
		// In layout A the offer follows the path (the DUT's softirq
		// shares the generator's CPU): no star there.
		if row.OfferBound && !bound && s.Layout != LayoutA {
			mpps += "*"
			starred = true
		}
		if bound {
			cells = append(cells, nsCell(row), mpps)
		} else {
			cells = append(cells, mpps, nsCell(row))
		}
		for _, c := range cpus {
			cells = append(cells, fmt.Sprintf("%.1f%%", row.CPUPercent[c.key]))
		}
		sent := "-"
		if s.generated() {
			sent = strconv.FormatUint(row.Sent*uint64(row.Copies), 10)
			if row.Copies > 1 {
				sent += fmt.Sprintf(" (%dx)", row.Copies)
			}
		}
		cells = append(cells, sent, strconv.FormatUint(row.Received, 10), strconv.FormatUint(row.Dropped, 10), "")
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	tw.Flush()

	fmt.Fprintln(w)
	for _, row := range r.Rows {
		switch {
		case row.Error != "":
			fmt.Fprintf(w, "  %-20s FAILED: %s\n", row.Path, row.Error)
		case s.generated():
			// Every row: "unexplained 0" is what says the count closed.
			fmt.Fprintf(w, "  %-20s lost %d: %s\n", row.Path, row.Dropped, reasonList(row, true))
		case len(row.Reasons) > 0:
			// Without a generator nothing is known to be sent, so there
			// is nothing to explain: only the counted drops.
			fmt.Fprintf(w, "  %-20s dropped %d: %s\n", row.Path, row.Dropped, reasonList(row, false))
		}
	}
	writeSearches(w, r)
	fmt.Fprintln(w, "\nnotes:")
	fmt.Fprintf(w, "  Mpps: frames received in the measurement window (%s) / its length, counted where each path counts:\n", windowText(r))
	for _, row := range r.Rows {
		if row.CountedAt != "" {
			fmt.Fprintf(w, "    %-20s %s\n", row.Path, row.CountedAt)
		}
	}
	if starred {
		fmt.Fprintf(w, "  Mpps*: the path carried all the generator offered (at most %.0f%% lost, %.0f%% where no receiver CPU was %.0f%% busy): the figure is the generator's rate, a lower bound of the path's.\n",
			OfferBoundLoss*100, OfferBoundIdleLoss*100, DUTBusy)
	}
	fmt.Fprintf(w, "  XDP mode: %s.\n", xdpModes(r.Rows))
	if s.PacketOp != "" {
		var touched []string
		for _, row := range r.Rows {
			if slices.Contains(PacketOpPaths, row.Path) {
				touched = append(touched, row.Path)
			}
		}
		fmt.Fprintf(w, "  packet operation: %s did %s to each frame before the verdict, reading it by %s (xdpeng kern -p and -l, as xdp-bench's).\n",
			strings.Join(touched, ", "), s.PacketOp, s.LoadMode)
	}
	fmt.Fprintf(w, "  cpuN: busy %% of each CPU in the window (%s).\n", cpuRoles(cpus))
	fmt.Fprintf(w, "  ns/pkt: %s.\n", s.CPUNote)
	if s.generated() {
		fmt.Fprintln(w, "  sent = received + dropped; lost lists each counter that explains a drop over the whole run, \"unexplained\" what none does.")
	}
	if s.Mode == "remote" {
		fmt.Fprintf(w, "  two hosts: sent is the tester's generator's count, received and the drops the DUT's own counters (or, for frames that come back, the tester's);\n"+
			"  %s is what the tester's port sent that the DUT's port never counted (the two devices' counters).\n", LostOnWire)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  %s\n", n)
	}
}

// generated tells whether the run drove its own traffic (a test bed, two
// hosts), so that what was sent is known.
func (s Setup) generated() bool { return s.Mode == "testbed" || s.Mode == "remote" }

// hosts names the two hosts of a remote run and their ports: "DUT
// ssh://root@198.18.1.2, its dut0 cabled to the tester's gen0".
func (s Setup) hosts() string {
	var pairs []string
	for i := range s.DUTInterfaces {
		pairs = append(pairs, fmt.Sprintf("%s to the tester's %s", s.DUTInterfaces[i], s.GenInterfaces[i]))
	}
	return fmt.Sprintf("DUT %s, its %s", s.DUT, strings.Join(pairs, ", "))
}

// writeEnv prints the environment of a run, each line indented, as the
// head of a report.
func writeEnv(w io.Writer, e labenv.Env) {
	for _, l := range strings.Split(strings.TrimRight(e.Header(), "\n"), "\n") {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

// xdpModes lists each row's XDP mode: "xdp-drop native, tc-drop none (tc
// ingress), ...".
func xdpModes(rows []Row) string {
	var parts []string
	for _, row := range rows {
		if row.Env.XDPMode != "" {
			parts = append(parts, row.Path+" "+row.Env.XDPMode)
		}
	}
	return strings.Join(parts, "; ")
}

// writeSearches prints the NDR (and PDR) of each row that has them: the
// verified rates in a table, then each search's confidence, its marginal
// rates and every verification trial.
func writeSearches(w io.Writer, r *Result) {
	var first *Search
	for _, row := range r.Rows {
		if row.NDR != nil && first == nil {
			first = row.NDR
		}
	}
	if first == nil {
		return
	}
	pdr := slices.ContainsFunc(r.Rows, func(row Row) bool { return row.PDR != nil })
	fmt.Fprintf(w, "\nzero-loss throughput (RFC 2544): trials of %.1fs from the full-load rate down, loss counted exactly, resolution %s\n",
		first.TrialS, resolutionText(r.Rows))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{fmt.Sprintf("%-20s", "path"), "full load", "NDR Mpps", "limit", "verified"}
	if pdr {
		head = append(head, fmt.Sprintf("PDR Mpps (%g%%)", r.Rows[slices.IndexFunc(r.Rows, func(row Row) bool { return row.PDR != nil })].PDR.LossPct), "limit", "verified")
	}
	head = append(head, "trials", fmt.Sprintf("check at +%.0f%%", checkAbove*100), "")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, row := range r.Rows {
		if row.NDR == nil {
			continue
		}
		cells := []string{fmt.Sprintf("%-20s", row.Path), fmt.Sprintf("%.3f", row.Mpps), rateCell(row.NDR), limitCell(row.NDR), verifiedCell(row.NDR)}
		if pdr {
			if row.PDR != nil {
				cells = append(cells, rateCell(row.PDR), limitCell(row.PDR), verifiedCell(row.PDR))
			} else {
				cells = append(cells, "-", "-", "-")
			}
		}
		above := "-"
		for _, t := range row.NDR.Checks {
			if t.Check == "above" {
				above = checkCell(t)
			}
		}
		cells = append(cells, strconv.Itoa(row.Trials), above, "")
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	tw.Flush()
	for _, row := range r.Rows {
		for _, sr := range []*Search{row.NDR, row.PDR} {
			if sr == nil {
				continue
			}
			label := "NDR"
			if sr.LossPct > 0 {
				label = fmt.Sprintf("PDR (%g%%)", sr.LossPct)
			}
			if sr.Error != "" {
				fmt.Fprintf(w, "  %-20s %s: %s\n", row.Path, label, sr.Error)
				continue
			}
			if sr.Confidence != "" {
				fmt.Fprintf(w, "  %-20s %s: %s\n", row.Path, label, sr.Confidence)
			}
			for _, m := range sr.MarginalPPS {
				fmt.Fprintf(w, "    marginal: %.3f Mpps failed once and passed when repeated\n", float64(m)/1e6)
			}
			for i, t := range sr.Checks {
				if t.Check == "verify" {
					fmt.Fprintf(w, "    verify %d: %s\n", i+1, trialText(t))
				}
			}
		}
	}
	fmt.Fprintln(w, "  limit: what failed just above the rate found: loss (the path lost frames), generator (it could not keep the rate), or - (the full-load rate passed).")
	fmt.Fprintf(w, "  verified: the search's answer stands only if each of its verification trials passes; else the rate a resolution lower is verified, up to %d steps.\n", maxStepsDown)
}

// verifiedCell is how a search's answer held: "3/3", "3/3, 2 steps down",
// "none held (5 steps)", or "-" when there was nothing to verify.
func verifiedCell(sr *Search) string {
	var held, of int
	for _, t := range sr.Checks {
		if t.Check == "verify" && t.RatePPS == sr.VerifiedPPS {
			of++
			if t.Pass {
				held++
			}
		}
	}
	steps := fmt.Sprintf("%d step", sr.StepsDown)
	if sr.StepsDown != 1 {
		steps += "s"
	}
	switch {
	case sr.RatePPS == 0:
		return "-"
	case sr.VerifiedPPS == 0:
		return fmt.Sprintf("none held (%s)", steps)
	case sr.StepsDown > 0:
		return fmt.Sprintf("%d/%d, %s down", held, of, steps)
	}
	return fmt.Sprintf("%d/%d", held, of)
}

func resolutionText(rows []Row) string {
	for _, row := range rows {
		if row.NDR != nil && row.NDR.UpperPPS > 0 {
			return fmt.Sprintf("%.1f%% of the full-load rate", 100*float64(row.NDR.ResolutionPPS)/float64(row.NDR.UpperPPS))
		}
	}
	return "-"
}

// rateCell is a search's verified rate in Mpps, or "none".
func rateCell(sr *Search) string {
	if sr.VerifiedPPS == 0 {
		return "none"
	}
	return fmt.Sprintf("%.3f", float64(sr.VerifiedPPS)/1e6)
}

func limitCell(sr *Search) string {
	if sr.Limit == "" {
		return "-"
	}
	return sr.Limit
}

// checkCell is a check trial: "lost 0", "lost 1234", or "gen behind,
// lost 0".
func checkCell(t Trial) string {
	if t.Short {
		return fmt.Sprintf("gen behind, lost %d", t.Lost)
	}
	return fmt.Sprintf("lost %d", t.Lost)
}

func offered(rate uint64) string {
	if rate == 0 {
		return "as fast as the generator goes"
	}
	return fmt.Sprintf("%d pps", rate)
}

func windowText(r *Result) string {
	var lo, hi float64
	measured := 0
	for _, row := range r.Rows {
		if row.Error != "" {
			continue
		}
		if measured == 0 || row.WindowS < lo {
			lo = row.WindowS
		}
		hi = max(hi, row.WindowS)
		measured++
	}
	if measured == 0 {
		return "none: no row measured"
	}
	if lo == hi {
		return fmt.Sprintf("%.2fs", lo)
	}
	return fmt.Sprintf("%.2f-%.2fs", lo, hi)
}

// nsCell shows ns/packet, or "-" when nothing was received.
func nsCell(row Row) string {
	if row.WindowPackets == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", row.NsPerPacket)
}

type cpuColumn struct{ key, label, role string }

// cpuColumns are the CPUs of the rows, in order, with their roles.
func cpuColumns(r *Result) []cpuColumn {
	seen := map[int]string{}
	for _, row := range r.Rows {
		for _, u := range row.CPU {
			seen[u.CPU] = u.Role
		}
	}
	var out []cpuColumn
	for _, c := range slices.Sorted(maps.Keys(seen)) {
		out = append(out, cpuColumn{key: strconv.Itoa(c), label: strconv.Itoa(c), role: seen[c]})
	}
	return out
}

func cpuRoles(cpus []cpuColumn) string {
	var parts []string
	for _, c := range cpus {
		role := c.role
		if role == "" {
			role = "other"
		}
		parts = append(parts, "cpu"+c.label+" "+role)
	}
	return strings.Join(parts, ", ")
}

// reasonList is "xmit_errors 12, socket_drops 3, unexplained 0"; the
// unexplained frames only where the sent frames are known (a test bed).
func reasonList(row Row, unexplained bool) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(row.Reasons)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, row.Reasons[k]))
	}
	if unexplained {
		parts = append(parts, fmt.Sprintf("unexplained %d", row.Unexplained))
	}
	return strings.Join(parts, ", ")
}

// chartWidth is the length of the longest bar, in character cells.
const chartWidth = 48

// WriteChart draws the Mpps column as horizontal bars, in eighths of a
// character cell; when the generator was the bound (GeneratorBound), the
// ns/pkt column instead, which then tells the paths apart. A failed row
// gets no bar, and with no row measured there is no chart.
func WriteChart(w io.Writer, r *Result) {
	value, unit := func(row Row) float64 { return row.Mpps }, "Mpps received"
	if r.GeneratorBound != "" {
		value, unit = func(row Row) float64 { return row.NsPerPacket }, "ns per frame on the receiving CPU at the generator's rate (fewer is better)"
	}
	var top float64
	measured := 0
	for _, row := range r.Rows {
		if row.Error == "" {
			top = max(top, value(row))
			measured++
		}
	}
	if measured == 0 {
		fmt.Fprintln(w, "no chart: no row measured (each says why above)")
		return
	}
	fmt.Fprintln(w, unit)
	for _, row := range r.Rows {
		if row.Error != "" {
			fmt.Fprintf(w, "  %-20s FAILED\n", row.Path)
			continue
		}
		fmt.Fprintf(w, "  %-20s %s %.2f\n", row.Path, bar(value(row), top, chartWidth), value(row))
	}
}

// bar is a bar of v/top*width cells.
func bar(v, top float64, width int) string {
	if top <= 0 || v <= 0 || math.IsNaN(v) {
		return ""
	}
	eighths := int(math.Round(v / top * float64(width) * 8))
	partial := []string{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}
	return strings.Repeat("█", eighths/8) + partial[eighths%8]
}

// SetupLine, RowLine and SummaryLine are the JSON lines of WriteJSON, each
// with its "type".
type (
	SetupLine struct {
		Type string `json:"type"` // "setup"
		Setup
	}
	RowLine struct {
		Type string `json:"type"` // "row"
		Row
	}
	SummaryLine struct {
		Type string `json:"type"` // "summary"
		// Paths are the rows' paths in order, Failed those with an error.
		Paths  []string `json:"paths"`
		Failed []string `json:"failed"`
		Notes  []string `json:"notes,omitempty"`
		// Interrupted says Ctrl-C or SIGTERM stopped the run: the rows
		// are those that finished, Unfinished the rest.
		Interrupted bool     `json:"interrupted"`
		Unfinished  []string `json:"unfinished,omitempty"`
		// GeneratorBound is Result.GeneratorBound.
		GeneratorBound string `json:"generator_bound,omitempty"`
	}
)

// writeInterrupted says, first in a table of an interrupted run, that the
// rows below are those that finished, n of them, and which did not.
func writeInterrupted(w io.Writer, n int, unfinished []string) {
	if len(unfinished) > 0 {
		fmt.Fprintf(w, "INTERRUPTED (Ctrl-C or SIGTERM): the %d row(s) below finished; not finished: %s\n", n, strings.Join(unfinished, ", "))
	}
}

// WriteJSON writes r as JSON lines, one object per line as the other
// commands print them: a "setup" line, a "row" line per path, then a
// "summary" line.
func WriteJSON(w io.Writer, r *Result) error {
	enc := json.NewEncoder(w) // one line per Encode
	lines := []any{SetupLine{Type: "setup", Setup: r.Setup}}
	paths := make([]string, 0, len(r.Rows))
	for _, row := range r.Rows {
		lines = append(lines, RowLine{Type: "row", Row: row})
		paths = append(paths, row.Path)
	}
	failed := r.Failed()
	if failed == nil {
		failed = []string{}
	}
	lines = append(lines, SummaryLine{Type: "summary", Paths: paths, Failed: failed, Notes: r.Notes, Interrupted: r.Interrupted(), Unfinished: r.Unfinished, GeneratorBound: r.GeneratorBound})
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			return fmt.Errorf("encode JSON: %w", err)
		}
	}
	return nil
}

// WriteCSV writes one header line and one line per path; drop reasons are
// "name=count" pairs separated by ';'.
func WriteCSV(w io.Writer, r *Result) error {
	cpus := cpuColumns(r)
	cw := csv.NewWriter(w)
	head := []string{"path", "family", "mpps", "ns_per_packet", "sent", "copies", "received", "dropped", "unexplained"}
	for _, c := range cpus {
		head = append(head, "cpu"+c.label+"_percent")
	}
	head = append(head, "drop_reasons", "window_s", "ndr_mpps", "pdr_mpps", "trials", "offer_bound", "error")
	if err := cw.Write(head); err != nil {
		return fmt.Errorf("write CSV: %w", err)
	}
	for _, row := range r.Rows {
		rec := []string{row.Path, string(row.Family), ftoa(row.Mpps), ftoa(row.NsPerPacket),
			strconv.FormatUint(row.Sent, 10), strconv.Itoa(row.Copies), strconv.FormatUint(row.Received, 10),
			strconv.FormatUint(row.Dropped, 10), strconv.FormatInt(row.Unexplained, 10)}
		for _, c := range cpus {
			rec = append(rec, ftoa(row.CPUPercent[c.key]))
		}
		var reasons []string
		for _, k := range slices.Sorted(maps.Keys(row.Reasons)) {
			reasons = append(reasons, fmt.Sprintf("%s=%d", k, row.Reasons[k]))
		}
		rec = append(rec, strings.Join(reasons, ";"), ftoa(row.WindowS), optional(row.NDRMpps), optional(row.PDRMpps), strconv.Itoa(row.Trials), strconv.FormatBool(row.OfferBound), row.Error)
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("write CSV: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write CSV: %w", err)
	}
	return nil
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// optional is *v, or "" for nil.
func optional(v *float64) string {
	if v == nil {
		return ""
	}
	return ftoa(*v)
}

// lostTo is where a trial's lost frames went, for trialText: ": over_rate
// 12, unexplained 1", or "" when it lost none.
func lostTo(t Trial) string {
	if t.Lost == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(t.Reasons)) {
		if t.Reasons[k] != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, t.Reasons[k]))
		}
	}
	if t.Unexplained != 0 {
		parts = append(parts, fmt.Sprintf("unexplained %d", t.Unexplained))
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, ", ")
}
