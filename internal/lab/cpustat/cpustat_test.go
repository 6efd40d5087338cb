package cpustat

import (
	"os"
	"path/filepath"
	"testing"
)

// parse reads text as the stat file of a proc file system.
func parse(t *testing.T, text string) (Stat, error) {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "stat"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return ReadFrom(root)
}

func TestParse(t *testing.T) {
	st, err := parse(t, `cpu  1 2 3 4 5 6 7 8 0 0
cpu0 100 1 300 100 2 3 200 4 0 0
cpu1 50 0 50 400 0 0 0 0 0 0
intr 1 2 3
`)
	if err != nil {
		t.Fatal(err)
	}
	want := Stat{0: {User: 100, Nice: 1, System: 300, Idle: 100, IOWait: 2, IRQ: 3, SoftIRQ: 200, Steal: 4}, 1: {User: 50, System: 50, Idle: 400}}
	if len(st) != 2 || st[0] != want[0] || st[1] != want[1] {
		t.Errorf("Parse = %+v, want %+v", st, want)
	}
	if b, tot := st[0].Busy(), st[0].Total(); b != 604 || tot != 710 {
		t.Errorf("busy %d, total %d; want 604, 710", b, tot)
	}
	for _, bad := range []string{"intr 1 2\n", "cpu0 1 2 x 4 5 6 7 8\n"} {
		if _, err := parse(t, bad); err == nil {
			t.Errorf("parse(%q) accepted", bad)
		}
	}
}

func TestSubAndShare(t *testing.T) {
	before := Times{User: 10, System: 10, Idle: 100, SoftIRQ: 5}
	after := Times{User: 40, System: 30, Idle: 90, SoftIRQ: 25} // idle went back: clamped
	d := after.Sub(before)
	if d != (Times{User: 30, System: 20, SoftIRQ: 20}) {
		t.Fatalf("Sub = %+v", d)
	}
	s := ShareOf(3, Times{User: 30, System: 20, SoftIRQ: 20, Idle: 30})
	if s != (Share{CPU: 3, Busy: 70, User: 30, System: 20, SoftIRQ: 20}) {
		t.Errorf("ShareOf = %+v", s)
	}
	if s := ShareOf(1, Times{}); s.Busy != 0 {
		t.Errorf("empty window: %+v", s)
	}
}

// TestTicksExact: the seconds procfs gives come back as the ticks written,
// up to counts far beyond any uptime (2^50 ticks is 357,000 years).
func TestTicksExact(t *testing.T) {
	for _, n := range []uint64{0, 1, 3, 99, 100, 101, 123456789, 1<<32 + 7, 1<<50 - 1} {
		if got := ticks(float64(n) / UserHZ); got != n {
			t.Errorf("ticks(%d / 100) = %d", n, got)
		}
	}
}

// TestReadHere reads this machine's /proc/stat: a CPU 0 with some time.
func TestReadHere(t *testing.T) {
	st, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := st[0]; !ok || c.Total() == 0 {
		t.Errorf("CPU 0: %+v (present %v), want some ticks", c, ok)
	}
}
