package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
)

// TestRateNote: a run that sent under 95% of --rate says so, in the text
// and the JSON summary; one that kept it, or had no rate, says nothing.
func TestRateNote(t *testing.T) {
	for _, tc := range []struct {
		asked uint64
		sent  float64
		want  string
	}{
		{0, 1e6, ""},
		{1000000, 960000, ""},
		{2000000, 1020000, "asked 2.00 Mpps, sent 1.02 Mpps (51%): the sending CPU was busy"},
	} {
		if got := rateNote(tc.asked, tc.sent); (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
			t.Errorf("rateNote(%d, %.0f) = %q, want %q", tc.asked, tc.sent, got, tc.want)
		}
	}
	for _, asJSON := range []bool{false, true} {
		var out bytes.Buffer
		p := &genPrinter{w: &out, json: asJSON, iface: "gen0", size: 60, rate: 100}
		p.summary(gen.Stats{Sent: 51, Bytes: 51 * 60, Duration: time.Second, PerThread: []gen.ThreadStats{{CPU: 0, Sent: 51}}})
		want := "asked 100 pps, sent 51 pps (51%)"
		if asJSON {
			var sum genSummaryJSON
			if err := json.Unmarshal(out.Bytes(), &sum); err != nil || sum.Rate != 100 || !strings.HasPrefix(sum.RateNote, want) {
				t.Errorf("JSON summary %s (%v): want rate 100 and a rate_note %q", out.String(), err, want)
			}
		} else if !strings.Contains(out.String(), "  "+want+": the sending CPU was busy") {
			t.Errorf("text summary:\n%s\nwant %q", out.String(), want)
		}
	}
}

// TestFrameFlagsFill: --fill, which gen and txonly both take, fills the
// payload; with -P it is refused.
func TestFrameFlagsFill(t *testing.T) {
	var f frameFlags
	fs := pflag.NewFlagSet("gen", pflag.ContinueOnError)
	f.register(fs)
	if err := fs.Parse([]string{"--fill", "7"}); err != nil {
		t.Fatal(err)
	}
	var frame packet.UDPConfig
	if err := f.apply(&frame, false); err != nil || frame.Fill != 7 || frame.Pattern != 0 {
		t.Errorf("apply: %v, frame %+v: want Fill 7", err, frame)
	}
	if err := fs.Parse([]string{"-P", "12345678"}); err != nil {
		t.Fatal(err)
	}
	if err := f.apply(&frame, false); err == nil || !strings.Contains(err.Error(), "--fill and -P/--pattern both fill the payload") {
		t.Errorf("--fill with -P: %v", err)
	}
}

func TestFrameExtras(t *testing.T) {
	for _, tc := range []struct {
		c    packet.UDPConfig
		want string
	}{
		{packet.UDPConfig{}, ""},
		{packet.UDPConfig{VLAN: 7, VLANPriority: 3}, ", VLAN 7 priority 3"},
		{packet.UDPConfig{Pattern: 0x12345678}, ", payload pattern 12345678"},
		{packet.UDPConfig{VLAN: 1, Fill: 7}, ", VLAN 1 priority 0, payload bytes 0x07"},
		{packet.UDPConfig{Pattern: 0xab, Fill: 7, VLAN: 4094}, ", VLAN 4094 priority 0, payload pattern 000000ab"},
	} {
		if got := frameExtras(tc.c); got != tc.want {
			t.Errorf("frameExtras(%+v) = %q, want %q", tc.c, got, tc.want)
		}
	}
}

// TestGenSummaryRates: short runs' rates are scaled (not 0.000 Mpps), and
// a thread's rate is over the time it sent, not the whole run.
func TestGenSummaryRates(t *testing.T) {
	var out bytes.Buffer
	p := &genPrinter{w: &out, iface: "gen0", size: 60}
	p.summary(gen.Stats{Sent: 300, Bytes: 300 * 60, Duration: time.Second, PerThread: []gen.ThreadStats{
		{CPU: 0, Sent: 100, Duration: 500 * time.Millisecond}, {CPU: 1, Sent: 200, Duration: time.Second}}})
	for _, want := range []string{"in 1.000s: 300 pps,", "cpu 0: 100 frames in 0.500s, 200 pps", "cpu 1: 200 frames in 1.000s, 200 pps"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary does not say %q:\n%s", want, out.String())
		}
	}
}
