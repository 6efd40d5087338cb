//go:build linux

package compare

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/internal/lab/cpustat"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
)

func TestParsePaths(t *testing.T) {
	got, err := ParsePaths(" tc-drop,xdp-drop,tc-drop ,,xsk-drop")
	if err != nil {
		t.Fatal(err)
	}
	// Table order, no duplicates, blanks ignored.
	if want := []string{"xdp-drop", "tc-drop", "xsk-drop"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("ParsePaths = %v, want %v", got, want)
	}
	for _, bad := range []string{"xdp-drop,nosuch", "xsk-forward", ""} {
		_, err := ParsePaths(bad)
		if err == nil {
			t.Fatalf("ParsePaths(%q) accepted", bad)
		}
		// The error lists every valid path, so the user can pick one.
		for _, p := range Paths("") {
			if !strings.Contains(err.Error(), p.Name) {
				t.Errorf("ParsePaths(%q) error %q does not list %s", bad, err, p.Name)
			}
		}
	}
}

func TestCheckRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"unknown path", Config{Testbed: true, Paths: []string{"nosuch"}, Duration: time.Second}, "valid paths are"},
		{"no target", Config{Duration: time.Second}, "no interface"},
		{"both", Config{Testbed: true, Interface: "eth0", Duration: time.Second}, "not both"},
		{"short", Config{Testbed: true, Duration: 10 * time.Millisecond}, "too short"},
		{"forward on a NIC", Config{Interface: "lo", Paths: []string{"bridge"}, Duration: time.Second}, "--testbed"},
		{"layout", Config{Testbed: true, Layout: "C", Duration: time.Second}, "layout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Check()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// Check changes nothing in the config it checks; Resolve fills in the
// defaults.
func TestCheckIsPure(t *testing.T) {
	c := Config{Testbed: true, Duration: time.Second}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	if c.Paths != nil || c.FrameSize != 0 || c.Queues != 0 || c.Layout != "" || c.GenCPUs != nil || c.DUTCPUs != nil {
		t.Fatalf("Check changed the config: %+v", c)
	}
	if err := c.Resolve(); err != nil {
		t.Fatal(err)
	}
	if len(c.Paths) == 0 || c.FrameSize != 64 || c.Queues != 1 || c.Layout != LayoutA || len(c.GenCPUs) != 1 || len(c.DUTCPUs) != 1 {
		t.Fatalf("Resolve left defaults unset: %+v", c)
	}
	l := LatencyConfig{Config: Config{Testbed: true, Duration: time.Second}}
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
	if l.Paths != nil || l.Rate != 0 || l.Waits != nil {
		t.Fatalf("LatencyConfig.Check changed the config: %+v", l)
	}
}

func TestNeedLinks(t *testing.T) {
	for _, tc := range []struct {
		paths []string
		want  int
	}{
		{[]string{"xdp-drop", "xsk-l2fwd"}, 1},
		{[]string{"xdp-drop", "bridge"}, 2},
		{[]string{"xdp-redirect", "xdp-redirect-multi"}, 3},
	} {
		if got := needLinks(tc.paths); got != tc.want {
			t.Errorf("needLinks(%v) = %d, want %d", tc.paths, got, tc.want)
		}
	}
}

func TestReceiverCPU(t *testing.T) {
	const stat = `cpu  1 2 3 4 5 6 7 8 0 0
cpu0 100 0 300 100 0 0 200 0 0 0
cpu1 50 0 50 400 0 0 0 0 0 0
intr 1 2 3
`
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "stat"), []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	before, err := cpustat.ReadFrom(root)
	if err != nil {
		t.Fatal(err)
	}
	after := cpuStat{
		// The generator CPU: 60 ticks system (the generator), 30 softirq
		// (the DUT's NAPI), 10 idle.
		0: {User: 100, System: 360, Idle: 110, SoftIRQ: 230},
		// The receiver CPU: 40 user + 20 system + 40 idle.
		1: {User: 90, System: 70, Idle: 440},
	}
	ns, use := receiverCPU(before, after, []int{1}, []int{0}, false)
	// softirq of CPU 0 (30) + busy of CPU 1 (60) = 90 ticks of 10 ms.
	if want := 90 * 1e7; ns != want {
		t.Errorf("receiver CPU = %v ns, want %v", ns, want)
	}
	if len(use) != 2 || use[0].Role != "gen" || use[1].Role != "dut" {
		t.Fatalf("roles: %+v", use)
	}
	if use[0].Busy != 90 || use[0].SoftIRQ != 30 || use[1].Busy != 60 {
		t.Errorf("percentages: %+v", use)
	}
	// A relayed generator in layout B: CPU 0's softirq is its relay's.
	if ns, _ := receiverCPU(before, after, []int{1}, []int{0}, true); ns != 60*1e7 {
		t.Errorf("receiver CPU without the generator CPU = %v ns, want %v", ns, 60*1e7)
	}
}

func TestBar(t *testing.T) {
	for _, tc := range []struct {
		v, top float64
		want   string
	}{
		{4, 4, "████"},
		{1, 4, "█"},
		{1.5, 4, "█▌"},
		{0, 4, ""},
		{1, 0, ""},
	} {
		if got := bar(tc.v, tc.top, 4); got != tc.want {
			t.Errorf("bar(%v, %v) = %q, want %q", tc.v, tc.top, got, tc.want)
		}
	}
}

func sampleResult() *Result {
	return &Result{
		Setup: Setup{Mode: "testbed", Bed: "b", Layout: LayoutA, Queues: 1, FrameSize: 64, GenCPUs: []int{0}, DUTCPUs: []int{1}, DurationS: 3},
		Rows: []Row{
			{Path: "xdp-drop", Family: Drop, Mpps: 5.5, NsPerPacket: 90, Sent: 100, Copies: 1, Received: 100,
				Reasons: map[string]uint64{}, CPUPercent: map[string]float64{"0": 100, "1": 2},
				CPU: []CPUUse{{CPU: 0, Role: "gen", Busy: 100}, {CPU: 1, Role: "dut", Busy: 2}}, WindowS: 2.4, WindowPackets: 10},
			{Path: "xsk-drop", Family: Drop, Mpps: 3, NsPerPacket: 300, Sent: 100, Copies: 1, Received: 90, Dropped: 10,
				Reasons: map[string]uint64{"socket_drops": 10}, CPUPercent: map[string]float64{"0": 99, "1": 100}, WindowS: 2.4, WindowPackets: 10},
		},
	}
}

func TestWriters(t *testing.T) {
	r := sampleResult()
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	// JSON lines: setup, a row per path, summary; each line one object
	// with a type.
	var types []string
	var rows []map[string]any
	var summary map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		typ, _ := obj["type"].(string)
		types = append(types, typ)
		switch typ {
		case "row":
			rows = append(rows, obj)
		case "summary":
			summary = obj
		case "setup":
			if obj["layout"] != "A" || obj["testbed"] != "b" {
				t.Errorf("setup line %v", obj)
			}
		}
	}
	if got := strings.Join(types, ","); got != "setup,row,row,summary" {
		t.Fatalf("line types %s, want setup,row,row,summary:\n%s", got, b.String())
	}
	for _, f := range []string{"path", "mpps", "ns_per_packet", "sent", "received", "dropped", "drop_reasons", "unexplained", "cpu_percent"} {
		if _, ok := rows[1][f]; !ok {
			t.Errorf("JSON row has no %q: %v", f, rows[1])
		}
	}
	if fmt.Sprint(summary["paths"]) != "[xdp-drop xsk-drop]" || fmt.Sprint(summary["failed"]) != "[]" {
		t.Errorf("summary line %v", summary)
	}

	b.Reset()
	if err := WriteCSV(&b, r); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[2][0] != "xsk-drop" || !strings.Contains(strings.Join(recs[2], ","), "socket_drops=10") {
		t.Errorf("CSV: %q", recs)
	}

	b.Reset()
	WriteTable(&b, r)
	WriteChart(&b, r)
	out := b.String()
	for _, want := range []string{"layout A", "generator on CPU 0", "receiver on CPU 1", "64-byte frames", "ns/pkt", "█",
		"xdp-drop             lost 0: unexplained 0", "xsk-drop             lost 10: socket_drops 10, unexplained 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// TestSettleRace feeds the race of issue 16: the socket's drop count read
// a moment after veth's rx drops, which include it, so the part is larger
// than the whole. No figure may wrap, in the row or in its JSON.
func TestSettleRace(t *testing.T) {
	includes := map[string][]string{"veth_rx_drops": {"socket_drops"}}
	base := sample{received: 100, reasons: map[string]uint64{"socket_drops": 10, "veth_rx_drops": 10}, includes: includes}
	for _, tc := range []struct {
		name      string
		final     sample
		g         *gen.Stats
		wantVeth  uint64
		wantDrops uint64
	}{
		{"veth behind the socket, interface", sample{received: 5100, reasons: map[string]uint64{"socket_drops": 2127, "veth_rx_drops": 1010}, includes: includes},
			nil, 0, 2117},
		{"veth behind, and behind its own base", sample{received: 5100, reasons: map[string]uint64{"socket_drops": 2127, "veth_rx_drops": 5}, includes: includes},
			nil, 0, 2117},
		{"veth counts 3 drops besides the socket's", sample{received: 5100, reasons: map[string]uint64{"socket_drops": 2127, "veth_rx_drops": 2130}, includes: includes},
			&gen.Stats{Sent: 7120}, 3, 2120},
		{"received read behind its base", sample{received: 90, reasons: map[string]uint64{"socket_drops": 10, "veth_rx_drops": 10}, includes: includes},
			&gen.Stats{Sent: 0}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := Row{Copies: 1}
			row.settle(base, tc.final, tc.g)
			if got := row.Reasons["veth_rx_drops"]; got != tc.wantVeth {
				t.Errorf("veth_rx_drops %d, want %d (reasons %v)", got, tc.wantVeth, row.Reasons)
			}
			if row.Dropped != tc.wantDrops {
				t.Errorf("dropped %d, want %d", row.Dropped, tc.wantDrops)
			}
			b, err := json.Marshal(row)
			if err != nil {
				t.Fatal(err)
			}
			checkNoWrapped(t, b)
		})
	}
	// Exact accounting when the counters agree: 5000 received + 2117 at
	// the socket + 3 more at veth = 7120 sent.
	row := Row{Copies: 1}
	row.settle(base, sample{received: 5100, reasons: map[string]uint64{"socket_drops": 2127, "veth_rx_drops": 2130}, includes: includes}, &gen.Stats{Sent: 7120})
	if row.Unexplained != 0 || row.Received != 5000 {
		t.Errorf("received %d, unexplained %d (reasons %v), want 5000 and 0", row.Received, row.Unexplained, row.Reasons)
	}
	// More counted than sent is reported as a negative figure, not a
	// wrapped one.
	row = Row{Copies: 1}
	row.settle(base, sample{received: 5102, reasons: base.reasons, includes: includes}, &gen.Stats{Sent: 5000})
	if row.Unexplained != -2 || row.Dropped != 0 {
		t.Errorf("unexplained %d, dropped %d; want -2 and 0", row.Unexplained, row.Dropped)
	}
}

// A redirect error that veth also counted as an rx drop is listed once,
// by errno, and veth_rx_drops keeps only the rest; the sum still closes.
func TestSettleRedirectErrorsCountedOnce(t *testing.T) {
	sm := func(received, vethDrops, enetdown, socket uint64) sample {
		s := sample{received: received, reasons: map[string]uint64{
			"socket_drops": socket, "veth_rx_drops": vethDrops, "xdp_redirect_err_ENETDOWN": enetdown}}
		s.include("veth_rx_drops", "socket_drops")
		s.include("veth_rx_drops", "xdp_redirect_err_ENETDOWN")
		return s
	}
	row := Row{Copies: 1}
	// 1000 sent: 900 received, 60 refused by the socket and 30 failed
	// redirects (both in veth's 100 rx drops), 10 more veth drops.
	row.settle(sm(0, 0, 0, 0), sm(900, 100, 30, 60), &gen.Stats{Sent: 1000})
	want := map[string]uint64{"socket_drops": 60, "xdp_redirect_err_ENETDOWN": 30, "veth_rx_drops": 10}
	if !maps.Equal(row.Reasons, want) || row.Unexplained != 0 || row.Dropped != 100 {
		t.Errorf("reasons %v, dropped %d, unexplained %d; want %v, 100, 0", row.Reasons, row.Dropped, row.Unexplained, want)
	}
}

// checkNoWrapped fails if any number in the JSON document b is at or
// above 2^63: a counter difference that wrapped.
func checkNoWrapped(t *testing.T, b []byte) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(path+"."+k, e)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		case json.Number:
			if f, err := x.Float64(); err == nil && f >= 1<<63 {
				t.Errorf("%s = %s: a wrapped counter", path, x)
			}
		}
	}
	walk("", v)
}

// TestGeneratorBound: a path that lost at most OfferBoundLoss of what was
// sent is bound by the offer; when every measured row is, at about one
// rate, the table leads with ns/pkt, says so first, and the chart draws
// ns/pkt. One row that lost more (xsk-drop's 10%) leaves the table as it
// is, with the bound rows' Mpps starred in layout B (not in A, where the
// offer follows the path); rates far apart are bound by the paths.
func TestGeneratorBound(t *testing.T) {
	r := sampleResult()
	r.Setup.Layout = LayoutB
	markOfferBound(r)
	if !r.Rows[0].OfferBound || r.Rows[1].OfferBound || r.GeneratorBound != "" {
		t.Fatalf("offer bound %v %v, generator bound %q; want true false \"\"", r.Rows[0].OfferBound, r.Rows[1].OfferBound, r.GeneratorBound)
	}
	var b bytes.Buffer
	WriteTable(&b, r)
	WriteChart(&b, r)
	out := b.String()
	for _, want := range []string{"5.500*", "Mpps*: the path carried all", "Mpps received"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "GENERATOR-BOUND") {
		t.Errorf("table says generator-bound with a row that lost 10%%:\n%s", out)
	}

	r = sampleResult()
	markOfferBound(r)
	b.Reset()
	WriteTable(&b, r)
	if strings.Contains(b.String(), "5.500*") {
		t.Errorf("a star in layout A:\n%s", b.String())
	}

	// Both rows carry all but 1%, at rates far apart: in layout A bound
	// by the paths, in B by the generator.
	r = sampleResult()
	r.Rows[1].Received, r.Rows[1].Dropped = 99, 1
	markOfferBound(r)
	if !r.Rows[1].OfferBound || r.GeneratorBound != "" {
		t.Fatalf("layout A: offer bound %v, generator bound %q; want true and none (5.5 and 3 Mpps)", r.Rows[1].OfferBound, r.GeneratorBound)
	}
	r.Setup.Layout = LayoutB
	markOfferBound(r)
	if r.GeneratorBound == "" {
		t.Fatal("layout B, every row offer-bound: not generator-bound")
	}

	// ... at about one rate: generator-bound.
	r = sampleResult()
	r.Rows[1].Received, r.Rows[1].Dropped, r.Rows[1].Mpps = 99, 1, 5.1
	m := gen.XSK
	r.Setup.GenMethod = &m
	markOfferBound(r)
	if !r.Rows[1].OfferBound || !strings.Contains(r.GeneratorBound, "5.10-5.50 Mpps, method xsk") {
		t.Fatalf("offer bound %v, generator bound %q", r.Rows[1].OfferBound, r.GeneratorBound)
	}
	b.Reset()
	WriteTable(&b, r)
	WriteChart(&b, r)
	out = b.String()
	for _, want := range []string{"GENERATOR-BOUND: every path carried", "ns per frame on the receiving CPU"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	header := false
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "path ") {
			header = true
			if i, j := strings.Index(l, "ns/pkt"), strings.Index(l, "Mpps"); i < 0 || j < 0 || i > j {
				t.Errorf("ns/pkt does not lead the table: %q", l)
			}
		}
	}
	if !header {
		t.Errorf("no header line:\n%s", out)
	}
	if strings.Contains(out, "*") {
		t.Errorf("rows starred in a generator-bound table:\n%s", out)
	}
	b.Reset()
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"generator_bound":"every path carried`) || !strings.Contains(b.String(), `"offer_bound":true`) {
		t.Errorf("JSON lacks generator_bound or offer_bound:\n%s", b.String())
	}

	// 3% lost: bound where the receiver CPU had time to spare, not where
	// it was saturated.
	for _, tc := range []struct {
		busy  float64
		bound bool
	}{{50, true}, {95, false}} {
		r := sampleResult()
		r.Rows[1].Received, r.Rows[1].Dropped = 97, 3
		r.Rows[1].CPU = []CPUUse{{CPU: 0, Role: "gen", Busy: 100}, {CPU: 1, Role: "dut", Busy: tc.busy}}
		markOfferBound(r)
		if r.Rows[1].OfferBound != tc.bound {
			t.Errorf("3%% lost, receiver CPU %.0f%% busy: offer bound %v, want %v", tc.busy, r.Rows[1].OfferBound, tc.bound)
		}
	}

	// An offered rate is named as such; a run on an interface has no
	// offer to be bound by.
	r.Setup.Rate = 100000
	markOfferBound(r)
	if !strings.Contains(r.GeneratorBound, "the offered rate (100000 pps)") {
		t.Errorf("generator bound %q", r.GeneratorBound)
	}
	r = sampleResult()
	r.Setup.Mode = "interface"
	markOfferBound(r)
	if r.Rows[0].OfferBound || r.GeneratorBound != "" {
		t.Errorf("interface run: offer bound %v, generator bound %q", r.Rows[0].OfferBound, r.GeneratorBound)
	}
}

// TestReportNothingMeasured: with every row failed, neither the notes nor
// the chart print placeholders (a window of 0.00s, bars of 0.00).
func TestReportNothingMeasured(t *testing.T) {
	r := &Result{Rows: []Row{{Path: "xdp-drop", Error: "generator: refused"}, {Path: "xsk-drop", Error: "generator: refused"}}}
	var b strings.Builder
	WriteTable(&b, r)
	WriteChart(&b, r)
	out := b.String()
	for _, bad := range []string{"(0.00s)", "0.00\n"} {
		if strings.Contains(out, bad) {
			t.Errorf("output has %q:\n%s", bad, out)
		}
	}
	for _, want := range []string{"measurement window (none: no row measured)", "no chart: no row measured"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestCheckPacketOp: a packet operation is one kern knows, load-bytes
// comes with one that reads the frame, and at least one path takes it.
func TestCheckPacketOp(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{Paths: []string{"xsk-drop"}}, ""},
		{Config{Paths: []string{"xdp-drop", "xsk-drop"}, PacketOp: "parse-ip", LoadBytes: true}, ""},
		{Config{Paths: []string{"xdp-tx"}, PacketOp: "no-touch"}, ""},
		{Config{Paths: []string{"xdp-drop"}, PacketOp: "parse"}, "unknown packet operation"},
		{Config{Paths: []string{"xdp-drop"}, LoadBytes: true}, "name one that reads it"},
		{Config{Paths: []string{"xdp-drop"}, PacketOp: "no-touch", LoadBytes: true}, "name one that reads it"},
		{Config{Paths: []string{"xsk-drop", "tc-drop"}, PacketOp: "read-data"}, "none of them runs"},
	} {
		err := tc.c.checkPacketOp()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.c, err, tc.want)
		}
	}
}
