//go:build linux

package netdev

import "testing"

func TestParseMTULimits(t *testing.T) {
	// ifinfomsg, then IFLA_MTU 1500, IFLA_MIN_MTU 68, IFLA_MAX_MTU 65535.
	msg := make([]byte, 16)
	msg = append(msg,
		8, 0, 4, 0, 0xdc, 0x05, 0, 0,
		8, 0, 50, 0, 68, 0, 0, 0,
		8, 0, 51, 0, 0xff, 0xff, 0, 0,
	)
	lo, hi, err := parseMTULimits(msg)
	if err != nil || lo != 68 || hi != 65535 {
		t.Errorf("parseMTULimits = %d, %d, %v; want 68, 65535", lo, hi, err)
	}
	if _, _, err := parseMTULimits(msg[:10]); err == nil {
		t.Error("short message accepted")
	}
}
