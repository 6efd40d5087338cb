package main

import (
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// What napiGuard tells the guard reads back as the settings to put back;
// what is not a NAPI's is refused.
func TestNAPIGuardLines(t *testing.T) {
	want := netdev.NAPIConfig{DeferHardIRQs: 3, GROFlushTimeout: 50 * time.Microsecond, IRQSuspendTimeout: 20 * time.Millisecond}
	c := engine.NAPIChange{NAPIID: 8193, Before: engine.NAPIConfig(want)}
	value := fmtNAPIValue(c.Before)
	id, got, err := parseNAPIGuard(napiKey(c.NAPIID), value)
	if err != nil || id != 8193 || got != want {
		t.Errorf("parse %q %q = %d, %v, %v; want 8193, %v", napiKey(c.NAPIID), value, id, got, err, want)
	}
	for _, bad := range [][2]string{{"napi/x", "0 0 0"}, {"rings/3", "0 0 0"}, {"napi/7", "0 0"}, {"napi/7", "4294967296 0 0"}, {"napi/7", "1 -5 0"}} {
		if _, _, err := parseNAPIGuard(bad[0], bad[1]); err == nil {
			t.Errorf("parse %q %q: no error", bad[0], bad[1])
		}
	}
}
