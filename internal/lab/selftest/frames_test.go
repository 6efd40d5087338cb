package selftest

import (
	"net"
	"strings"
	"testing"
)

var (
	macA = net.HardwareAddr{2, 0, 0, 0, 0, 1}
	macB = net.HardwareAddr{2, 0, 0, 0, 0, 2}
)

func TestFrameRoundTrip(t *testing.T) {
	for _, n := range []int{minFrameLen, 65, 66, 67, 1024, 9000} {
		b := make([]byte, n)
		for i := range b {
			b[i] = 0xaa // a dirty buffer
		}
		writeFrame(b, macB, macA, 7)
		if m := checkFrame(b, n, macB, macA, 7); m != nil {
			t.Errorf("%d bytes: a frame as written fails: %+v", n, *m)
		}
	}
}

// TestFrameMismatches: every kind of damage is found and named.
func TestFrameMismatches(t *testing.T) {
	const n = 130 // 28 words and two bytes past them
	good := make([]byte, n)
	writeFrame(good, macB, macA, 5)
	for _, tc := range []struct {
		name   string
		damage func(b []byte) []byte
		nb     uint32
		what   string
		got    string
	}{
		{"short", func(b []byte) []byte { return b[:n-4] }, 5, "length", "126 bytes"},
		{"short, of another frame", func(b []byte) []byte { return b[:n-4] }, 4, "length", "126 bytes (frame 5)"},
		{"destination", func(b []byte) []byte { b[5] ^= 1; return b }, 5, "destination MAC", "02:00:00:00:00:03"},
		{"source", func(b []byte) []byte { b[11] ^= 1; return b }, 5, "source MAC", ""},
		{"EtherType", func(b []byte) []byte { b[12] = 8; return b }, 5, "EtherType", "0x0800"},
		{"first word", func(b []byte) []byte { b[headerLen+3] ^= 1; return b }, 5, "payload word 0", "frame 5 word 1"},
		{"last word", func(b []byte) []byte { b[headerLen+4*27] ^= 0x10; return b }, 5, "payload word 27", ""},
		{"tail byte", func(b []byte) []byte { b[n-1] = 1; return b }, 5, "byte 129", ""},
		{"another frame", func(b []byte) []byte { return b }, 6, "payload word 0", "frame 5 word 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.damage(append([]byte(nil), good...))
			m := checkFrame(b, n, macB, macA, tc.nb)
			if m == nil {
				t.Fatal("the damage was not found")
			}
			if m.What != tc.what || !strings.Contains(m.Got, tc.got) {
				t.Errorf("found %+v, want %q with got containing %q", *m, tc.what, tc.got)
			}
		})
	}
}
