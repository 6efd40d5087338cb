//go:build linux

package netdev

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Two holders of a device's deferral: the first sets it, the second finds
// it set, the old value comes back only when both let go; a holder that
// died is not counted, and the value the device had before it is what the
// last one puts back.
func TestHoldIRQDeferral(t *testing.T) {
	sysfsNet, DeferralDir = t.TempDir(), filepath.Join(t.TempDir(), "records")
	t.Cleanup(func() { sysfsNet, DeferralDir = "/sys/class/net", "/run/xdpeng/irq-deferral" })
	if err := os.MkdirAll(filepath.Join(sysfsNet, "eth0"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := IRQDeferral{DeferHardIRQs: 0, GROFlushTimeout: 20 * time.Microsecond}
	if err := setIRQDeferral(sysfsNet, "eth0", old); err != nil {
		t.Fatal(err)
	}
	now := func() IRQDeferral {
		t.Helper()
		d, err := irqDeferralIn(sysfsNet, "eth0")
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	// Another process to hold it: one that lives, then dies.
	other := exec.Command("sleep", "30")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	me, err := Holder(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	them, err := Holder(other.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	want := IRQDeferral{DeferHardIRQs: 2, GROFlushTimeout: 200 * time.Microsecond}
	const index = 7
	if b, err := HoldIRQDeferral("eth0", index, want, me); err != nil || b != old || now() != want {
		t.Fatalf("first hold: before %v (%v), now %v; want %v, %v", b, err, now(), old, want)
	}
	if b, err := HoldIRQDeferral("eth0", index, want, them); err != nil || b != old {
		t.Fatalf("second hold: before %v (%v), want the device's own %v", b, err, old)
	}
	if err := ReleaseIRQDeferral(index, me); err != nil || now() != want {
		t.Fatalf("first let go: %v, now %v; want it held for the other", err, now())
	}
	if err := ReleaseIRQDeferral(index, them); err != nil || now() != old {
		t.Fatalf("last let go: %v, now %v; want %v back", err, now(), old)
	}
	if entries, _ := os.ReadDir(DeferralDir); len(entries) != 0 {
		t.Errorf("records left: %v", entries)
	}
	// A holder that dies without letting go: the next hold does not count
	// it, and keeps the value from before it.
	if _, err := HoldIRQDeferral("eth0", index, want, them); err != nil {
		t.Fatal(err)
	}
	other.Process.Kill()
	other.Wait()
	if b, err := HoldIRQDeferral("eth0", index, want, me); err != nil || b != old {
		t.Fatalf("hold after a holder died: before %v (%v), want %v", b, err, old)
	}
	if err := ReleaseIRQDeferral(index, me); err != nil || now() != old {
		t.Fatalf("let go, the dead holder not counted: %v, now %v; want %v back", err, now(), old)
	}
	if err := ReleaseIRQDeferral(index, me); err != nil {
		t.Errorf("let go of nothing held: %v", err)
	}
	// Two holds of this process (two engines on two queues): the first to
	// let go leaves the other's; the process let go of (as its guard does)
	// lets go of both.
	h1, err1 := NewHolder()
	h2, err2 := NewHolder()
	if err1 != nil || err2 != nil || h1 == h2 {
		t.Fatalf("NewHolder: %q %v, %q %v", h1, err1, h2, err2)
	}
	for _, h := range []string{h1, h2} {
		if _, err := HoldIRQDeferral("eth0", index, want, h); err != nil {
			t.Fatal(err)
		}
	}
	if err := ReleaseIRQDeferral(index, h1); err != nil || now() != want {
		t.Fatalf("one of two holds of a process let go: %v, now %v; want %v held", err, now(), want)
	}
	if _, err := HoldIRQDeferral("eth0", index, want, h1); err != nil {
		t.Fatal(err)
	}
	if err := ReleaseIRQDeferral(index, me); err != nil || now() != old {
		t.Fatalf("the process let go of: %v, now %v; want %v back", err, now(), old)
	}
}
