//go:build linux

package progbench

import (
	"reflect"
	"strings"
	"testing"
)

func TestOverDrop(t *testing.T) {
	res := []Result{
		// A slow phase in rounds 1-3, one lucky truncation in drop.
		{Program: XskRedirect, Size: 64, Rounds: []float64{37, 36, 36, 28, 28, 29, 28, 30, 28},
			UserRounds: []float64{37.2, 36.5, 36.1, 28.31, 28.4, 29.1, 28.33, 30.2, 28.5}},
		{Program: Drop, Size: 64, Rounds: []float64{27, 28, 28, 22, 21, 22, 22, 22, 23},
			UserRounds: []float64{27.4, 28.1, 28.2, 22.2, 21.9, 22.5, 22.4, 22.3, 23.1}},
		{Program: Pass, Size: 64, Rounds: []float64{23, 24}, UserRounds: []float64{23.44, 24.1}},
		{Program: XskRedirect, Size: 1500, Rounds: []float64{40}, UserRounds: []float64{40.2}}, // no drop at 1500: left out
	}
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{5}, 5}, {[]float64{9, 1, 5, 3}, 1}, {[]float64{9, 1, 5, 3, 7}, 3}} {
		if got := quartile(tc.in); got != tc.want {
			t.Errorf("quartile(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(tc.in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	got := OverDrop(res)
	// Lower quartiles: xsk-redirect 28.4 and 28, drop 22.3 and 22, pass
	// 23.44 and 23; the userspace differences to a tenth.
	want := []Delta{{Program: XskRedirect, Size: 64, Ns: 6.1, KernelNs: 6}, {Program: Pass, Size: 64, Ns: 1.1, KernelNs: 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("OverDrop = %+v, want %+v", got, want)
	}
}

func TestVerdictName(t *testing.T) {
	for _, tc := range []struct {
		program string
		v       uint32
		want    string
	}{{Drop, 1, "XDP_DROP"}, {XskRedirect, 2, "XDP_PASS"}, {TX, 3, "XDP_TX"}, {TCDrop, 2, "TC_ACT_SHOT"}, {Drop, 99, "99"}} {
		if got := VerdictName(tc.program, tc.v); got != tc.want {
			t.Errorf("VerdictName(%s, %d) = %q, want %q", tc.program, tc.v, got, tc.want)
		}
	}
	cfg := Config{Programs: []string{"bogus"}}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `unknown program "bogus" (known: `+strings.Join(Programs, ", ")+")") {
		t.Errorf("Validate: %v", err)
	}
}
