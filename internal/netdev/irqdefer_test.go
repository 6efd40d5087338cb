//go:build linux

package netdev

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestIRQDeferral(t *testing.T) {
	root := t.TempDir()
	write := func(dev, file, v string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(root, dev), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, dev, file), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("eth0", "napi_defer_hard_irqs", "2\n")
	write("eth0", "gro_flush_timeout", "200000\n")
	write("veth0", "napi_defer_hard_irqs", "0\n")
	write("veth0", "gro_flush_timeout", "0\n")
	write("bad0", "napi_defer_hard_irqs", "two\n")
	write("bad0", "gro_flush_timeout", "0\n")

	d, err := irqDeferralIn(root, "eth0")
	if err != nil || d != (IRQDeferral{DeferHardIRQs: 2, GROFlushTimeout: 200 * time.Microsecond}) || !d.Deferring() {
		t.Errorf("eth0: %+v, %v; want 2 polls of 200µs, deferring", d, err)
	}
	d, err = irqDeferralIn(root, "veth0")
	if err != nil || d.Deferring() {
		t.Errorf("veth0: %+v, %v; want not deferring", d, err)
	}
	if _, err := irqDeferralIn(root, "bad0"); err == nil {
		t.Error("bad0: no error for a value that is not a number")
	}
	if _, err := irqDeferralIn(root, "gone0"); err == nil {
		t.Error("gone0: no error for a device that is not there")
	}
}
