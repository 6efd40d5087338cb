package selftest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

func TestSelect(t *testing.T) {
	all, err := Select(nil)
	if err != nil || len(all) != len(catalogue) {
		t.Fatalf("Select(nil) = %d tests, %v; want all %d", len(all), err, len(catalogue))
	}
	got, err := Select([]string{"poll_rx", " SEND_RECEIVE "})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tt := range got {
		names = append(names, tt.Name)
	}
	if want := []string{"SEND_RECEIVE", "POLL_RX"}; !slices.Equal(names, want) {
		t.Errorf("Select = %v, want %v (catalogue order)", names, want)
	}
	if _, err := Select([]string{"SEND_RECEIVE", "BOGUS"}); err == nil || !strings.Contains(err.Error(), "BOGUS") {
		t.Errorf("an unknown name: %v, want an error naming it", err)
	}
}

func TestCatalogueNames(t *testing.T) {
	seen := map[string]bool{}
	for _, tt := range catalogue {
		if seen[tt.Name] {
			t.Errorf("%s twice", tt.Name)
		}
		seen[tt.Name] = true
		if tt.Name != strings.ToUpper(tt.Name) || tt.Checks == "" || tt.run == nil {
			t.Errorf("%s: a name in capitals, what it checks and a function are needed", tt.Name)
		}
	}
}

func TestParseMode(t *testing.T) {
	for _, m := range Modes {
		if got, err := ParseMode(strings.ToUpper(m.String())); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m, got, err)
		}
	}
	if _, err := ParseMode("native"); err == nil {
		t.Error("ParseMode(native): no error")
	}
}

// TestResultOutcomes: runOne turns a test's outcome into a result, a
// failure with the frame it is about.
func TestResultOutcomes(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status Status
		frame  bool
	}{
		{nil, Pass, false},
		{skipf("no zero-copy"), Skip, false},
		{&Failure{Check: "frame length", Expected: "64 bytes", Got: "65 bytes", Frame: 9}, Fail, true},
		{&Failure{Check: "rx_dropped", Expected: "1", Got: "0", Frame: -1}, Fail, false},
		{fmt.Errorf("wrapped: %w", skipf("old kernel")), Skip, false},
		{errors.New("attach: EPERM"), Fail, false},
	} {
		tt := Test{Name: "X", run: func(*tcase) (string, error) { return "checked", tc.err }}
		r := runOne(t.Context(), Pair{}, SKB, tt, nil, nil)
		if r.Status != tc.status || (r.Frame != nil) != tc.frame {
			t.Errorf("%v: result %+v, want %s, frame %v", tc.err, r, tc.status, tc.frame)
		}
		if tc.frame && *r.Frame != 9 {
			t.Errorf("frame %d, want 9", *r.Frame)
		}
	}
}

func TestResultJSON(t *testing.T) {
	n := 3
	b, err := json.Marshal(Result{Test: "SEND_RECEIVE", Mode: "skb", Status: Fail, Detail: "frame length", Expected: "64 bytes", Got: "65 bytes", Frame: &n})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"test", "mode", "result", "detail", "expected", "got", "frame", "seconds"} {
		if _, ok := m[k]; !ok {
			t.Errorf("%s: no %q", b, k)
		}
	}
}

// TestDocsListEveryTest: the manual's table names every test offered.
func TestDocsListEveryTest(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/selftest.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range catalogue {
		if !strings.Contains(string(doc), "| `"+tt.Name+"` | "+tt.Checks+" |") {
			t.Errorf("docs/selftest.md has no row for %s with what it checks", tt.Name)
		}
	}
}

// TestInvalidReadings: the outcomes each kernel reading gives the streams
// of the invalid multi-buffer tests, worked out by hand from the rules.
func TestInvalidReadings(t *testing.T) {
	at := func(k uint32) uint64 { return uint64(1024+k) * defaultFrameSize }
	const end = 2048 * defaultFrameSize
	type outcome struct {
		completions []uint64
		txInvalid   uint64
		frames      []uint32
	}
	frames := func(r reading) []uint32 {
		var nb []uint32
		for _, w := range r.want {
			nb = append(nb, w.nb)
		}
		return nb
	}
	addrs := func(ks ...uint32) []uint64 {
		var a []uint64
		for _, k := range ks {
			a = append(a, at(k))
		}
		return a
	}
	// The descriptors' addresses, in order: frame k's, but 5 past the
	// UMEM and 13 straddling frames 13 and 14.
	all := append(addrs(0, 1, 2, 3, 4), end)
	all = append(all, addrs(6, 7, 8, 9, 10, 11, 12)...)
	all = append(all, at(14)-minFrameLen/2)
	all = append(all, addrs(15, 16, 17)...)
	for _, tc := range []struct {
		name                   string
		pkts                   []txPkt
		drain, before, partial outcome
	}{
		{"ALIGNED_INV_DESC_MULTI_BUFF", invalidMBStream(at, end, false),
			// Dropped: 1-3, 4-11 (5's XDP_PKT_CONTD runs to 11), 12-13.
			outcome{all, 13, []uint32{0, 7, 8}},
			// Dropped: 1-3, 4-5, 6-7, 8-9, 12-13.
			outcome{addrs(0, 10, 11, 15, 16, 17), 11, []uint32{0, 5, 7, 8}},
			// As measured on 6.12.117: 1-2, 4 and 12 never come back.
			outcome{pick(all, 0, 3, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16), 13, []uint32{0, 7, 8}}},
		{"UNALIGNED_INV_DESC_MULTI_BUFF", invalidMBStream(at, end, true),
			outcome{all, 11, []uint32{0, 6, 7, 8}},
			outcome{append(append(addrs(0, 10, 11, 12), at(14)-minFrameLen/2), addrs(15, 16, 17)...), 9, []uint32{0, 5, 6, 7, 8}},
			outcome{pick(all, 0, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16), 11, []uint32{0, 6, 7, 8}}},
	} {
		r := invalidReadings(tc.pkts, 18)
		for i, want := range []outcome{tc.drain, tc.before, tc.partial} {
			got := outcome{r[i].completions, r[i].txInvalid, frames(r[i])}
			if !slices.Equal(got.completions, want.completions) || got.txInvalid != want.txInvalid || !slices.Equal(got.frames, want.frames) {
				t.Errorf("%s, %s:\n got %#x, tx_invalid_descs %d, frames %v\nwant %#x, tx_invalid_descs %d, frames %v",
					tc.name, r[i].name, got.completions, got.txInvalid, got.frames, want.completions, want.txInvalid, want.frames)
			}
		}
	}

	// TOO_MANY_FRAGS with MAX_SKB_FRAGS 17: the second packet of 18
	// descriptors says it goes on, so the reclaim series drops the frame
	// after it with it; the kernels before drop it at its 18th.
	pkts := tooManyFragsStream(at, 18)
	var every, valid []uint64
	for k := range uint32(38) {
		every = append(every, at(k))
		if k <= 18 || k == 37 {
			valid = append(valid, at(k))
		}
	}
	r := invalidReadings(pkts, 18)
	if got := (outcome{r[0].completions, r[0].txInvalid, frames(r[0])}); !slices.Equal(got.completions, every) || got.txInvalid != 19 || !slices.Equal(got.frames, []uint32{0, 1}) {
		t.Errorf("TOO_MANY_FRAGS, %s: %d completions, tx_invalid_descs %d, frames %v; want 38, 19, [0 1]", r[0].name, len(got.completions), got.txInvalid, got.frames)
	}
	if got := (outcome{r[1].completions, r[1].txInvalid, frames(r[1])}); !slices.Equal(got.completions, valid) || got.txInvalid != 18 || !slices.Equal(got.frames, []uint32{0, 1, 3}) {
		t.Errorf("TOO_MANY_FRAGS, %s: completions %#x, tx_invalid_descs %d, frames %v; want descriptors 0-18 and 37, 18, [0 1 3]", r[1].name, got.completions, got.txInvalid, got.frames)
	}
	// Debian 13's 6.12.117: the 19 of the long packet and the frame after
	// it counted, none returned.
	if got := (outcome{r[2].completions, r[2].txInvalid, frames(r[2])}); !slices.Equal(got.completions, valid[:19]) || got.txInvalid != 19 || r[2].leaked != 19 || !slices.Equal(got.frames, []uint32{0, 1}) {
		t.Errorf("TOO_MANY_FRAGS, %s: completions %#x, tx_invalid_descs %d (%d never returned), frames %v; want descriptors 0-18, 19 (19), [0 1]", r[2].name, got.completions, got.txInvalid, r[2].leaked, got.frames)
	}
	if l := r[0].want[1].len; l != 18*minFrameLen {
		t.Errorf("TOO_MANY_FRAGS: the long frame is %d bytes, want %d", l, 18*minFrameLen)
	}
}

// pick is the elements of a at the indices.
func pick(a []uint64, indices ...int) []uint64 {
	var out []uint64
	for _, i := range indices {
		out = append(out, a[i])
	}
	return out
}

func TestDescList(t *testing.T) {
	f := &flow{sentAddrs: []uint64{0x1000, 0x2000, 0x3000, 0x4000, 0x5000}}
	for _, tc := range []struct {
		addrs []uint64
		want  string
	}{
		{nil, "no descriptor"},
		{[]uint64{0x2000}, "descriptor 1"},
		{[]uint64{0x1000, 0x2000, 0x3000, 0x5000}, "descriptors 0-2, 4"},
		{[]uint64{0x3000, 0x2000, 0x9000, 0x4000}, "descriptors 2, 1, address 0x9000, 3"},
	} {
		if got := f.descList(tc.addrs); got != tc.want {
			t.Errorf("descList(%#x) = %q, want %q", tc.addrs, got, tc.want)
		}
	}
}

func TestReadingMatches(t *testing.T) {
	// Descriptors 1 and 2 dropped, 0 and 3 sent.
	r := reading{completions: []uint64{0, 1, 2, 3}, dropped: map[uint64]bool{1: true, 2: true}}
	for _, tc := range []struct {
		got  []uint64
		want bool
	}{
		{[]uint64{0, 1, 2, 3}, true},
		{[]uint64{1, 0, 2, 3}, true},  // a dropped one back before a sent one read before it
		{[]uint64{1, 2, 0, 3}, true},  // both
		{[]uint64{1, 0, 3, 2}, false}, // 3 was sent after 2 was dropped: 2 comes first
		{[]uint64{0, 2, 1, 3}, false}, // dropped ones out of their order
		{[]uint64{3, 0, 1, 2}, false}, // sent ones out of theirs
		{[]uint64{0, 1, 2}, false},
		{[]uint64{0, 1, 2, 3, 3}, false},
	} {
		if got := r.matches(tc.got); got != tc.want {
			t.Errorf("matches(%v) = %v, want %v", tc.got, got, tc.want)
		}
	}
	strict := reading{completions: []uint64{0, 1}}
	if strict.matches([]uint64{1, 0}) {
		t.Error("a reading that drops nothing took completions out of order")
	}
}
