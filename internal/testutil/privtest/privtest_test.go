package privtest

import (
	"flag"
	"fmt"
	"strings"
	"testing"
)

// fakeTB records what the gate does to a test instead of ending it.
type fakeTB struct {
	testing.TB
	name          string
	skip, fatal   string
	skips, fatals int
}

func (f *fakeTB) Helper()      {}
func (f *fakeTB) Name() string { return f.name }
func (f *fakeTB) Skip(args ...any) {
	f.skips++
	f.skip = fmt.Sprint(args...)
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatals++
	f.fatal = fmt.Sprintf(format, args...)
}

func reset() {
	mu.Lock()
	defer mu.Unlock()
	clear(ran)
	clear(skipped)
	clear(unsupported)
}

func TestUnavailableSkipsOrFails(t *testing.T) {
	reset()
	t.Cleanup(reset)
	t.Setenv(RequireEnv, "")
	a := &fakeTB{name: "TestA"}
	Unavailable(a, "needs %s", "root")
	if a.skips != 1 || a.fatals != 0 || a.skip != "needs root" {
		t.Errorf("without %s: %d skips (%q), %d failures; want one skip with the reason", RequireEnv, a.skips, a.skip, a.fatals)
	}

	t.Setenv(RequireEnv, "1")
	b := &fakeTB{name: "TestB"}
	Unavailable(b, "needs root")
	if b.fatals != 1 || b.skips != 0 || !strings.HasPrefix(b.fatal, "needs root (") || !strings.Contains(b.fatal, RequireEnv+"=1") {
		t.Errorf("with %s=1: %d failures (%q), %d skips; want one failure with the reason", RequireEnv, b.fatals, b.fatal, b.skips)
	}

	// A missing kernel feature is a skip either way.
	c := &fakeTB{name: "TestC"}
	Unsupported(c, "no TCX")
	if c.skips != 1 || c.fatals != 0 || !strings.Contains(c.skip, "no TCX") {
		t.Errorf("Unsupported with %s=1: %d skips (%q), %d failures; want one skip", RequireEnv, c.skips, c.skip, c.fatals)
	}

	want := "privtest x: 0 privileged tests ran, 1 skipped, 1 not supported here\n" +
		"privtest x:   1 skipped: needs root\n" +
		"privtest x:   1 not supported: no TCX\n"
	if got := summary("x.test"); got != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}
}

func TestSummaryGroupsReasons(t *testing.T) {
	reset()
	t.Cleanup(reset)
	t.Setenv(RequireEnv, "")
	for _, n := range []string{"T1", "T2", "T3"} {
		Unavailable(&fakeTB{name: n}, "needs root")
	}
	mu.Lock()
	ran["T4"], ran["T5"] = true, true
	mu.Unlock()
	want := "privtest p: 2 privileged tests ran, 3 skipped, 0 not supported here\n" +
		"privtest p:   3 skipped: needs root\n"
	if got := summary("p.test"); got != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}
}

// TestFuzzingPrintsNothing: Main leaves out its summary in a fuzzing run,
// where no privileged test runs (make fuzz printed "privtest remote: 0
// privileged tests ran" among the fuzzer's lines).
func TestFuzzingPrintsNothing(t *testing.T) {
	if fuzzing() {
		t.Fatal("a plain test run is taken for fuzzing")
	}
	old := flag.Lookup("test.fuzz").Value.String()
	t.Cleanup(func() { flag.Set("test.fuzz", old) })
	if err := flag.Set("test.fuzz", "^FuzzX$"); err != nil {
		t.Fatal(err)
	}
	if !fuzzing() {
		t.Error("-test.fuzz set is not taken for fuzzing")
	}
}
