package units

import "testing"

func TestPPS(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0, "0 pps"}, {999, "999 pps"}, {1500, "1.5 Kpps"}, {19596362, "19.60 Mpps"}, {2.5e9, "2.50 Gpps"},
	} {
		if got := PPS(tc.v); got != tc.want {
			t.Errorf("PPS(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
	if got := BPS(9.87e9); got != "9.87 Gbps" {
		t.Errorf("BPS = %q", got)
	}
}

func TestMpps(t *testing.T) {
	if got := Mpps(5_000_000, 2); got != 2.5 {
		t.Errorf("Mpps = %v, want 2.5", got)
	}
	if got := Mpps(5, 0); got != 0 {
		t.Errorf("Mpps over no time = %v, want 0", got)
	}
	if got := WireBits(64); got != 88*8 {
		t.Errorf("WireBits(64) = %d, want %d", got, 88*8)
	}
}
