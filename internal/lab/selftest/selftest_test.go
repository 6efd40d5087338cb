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
