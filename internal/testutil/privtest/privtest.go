// Package privtest decides what a test that needs privilege does where it
// cannot have it, for every package of the module: the one place that checks
// for root, raises RLIMIT_MEMLOCK, and counts what was skipped.
//
// By default a privileged test that cannot run is skipped with the reason.
// With XDPENG_REQUIRE_PRIV=1 (set by `make test`, and so by CI) it fails
// instead, with the same reason: there a skipped integration test would let
// the suite pass while checking nothing. Only a kernel or machine that lacks
// a feature (Unsupported) is a skip in both cases.
//
// A package with privileged tests runs them through Main, which prints how
// many ran and how many were skipped and why, and appends that line to the
// file named by XDPENG_PRIV_REPORT, if set, so that `make test` can show the
// total of every package.
package privtest

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cilium/ebpf/rlimit"
)

const (
	// RequireEnv, set to 1, makes a privileged test that cannot run fail
	// rather than skip.
	RequireEnv = "XDPENG_REQUIRE_PRIV"
	// ReportEnv names a file to which Main appends its summary line.
	ReportEnv = "XDPENG_PRIV_REPORT"
)

// Required reports whether XDPENG_REQUIRE_PRIV=1 is set.
func Required() bool { return os.Getenv(RequireEnv) == "1" }

var (
	memlockOnce sync.Once
	memlockErr  error

	mu          sync.Mutex
	ran         = map[string]bool{}   // tests that got their privilege
	skipped     = map[string]string{} // test -> why it was skipped
	unsupported = map[string]string{} // test -> the feature it lacks
)

// Root lets the test go on only as root with RLIMIT_MEMLOCK raised (BPF maps
// and UMEMs are charged to it on kernels before 5.11); otherwise it skips or
// fails the test (see the package comment).
func Root(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		Unavailable(tb, "needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_BPF, CAP_NET_RAW): run as root, e.g. sudo make test")
		return
	}
	memlockOnce.Do(func() { memlockErr = rlimit.RemoveMemlock() })
	if memlockErr != nil {
		Unavailable(tb, "cannot raise RLIMIT_MEMLOCK: %v", memlockErr)
		return
	}
	mu.Lock()
	ran[tb.Name()] = true
	mu.Unlock()
}

// Unavailable ends a privileged test that cannot have what it needs (root,
// network namespaces, permission to make them): a skip with the reason, or
// under XDPENG_REQUIRE_PRIV=1 a failure.
func Unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	why := fmt.Sprintf(format, args...)
	if Required() {
		tb.Fatalf("%s (%s=1: a privileged test that cannot run is a failure)", why, RequireEnv)
		return
	}
	mu.Lock()
	delete(ran, tb.Name())
	skipped[tb.Name()] = why
	mu.Unlock()
	tb.Skip(why)
}

// Unsupported skips a test because the kernel or the machine lacks a
// feature it checks (TCX, live frames, a second CPU): not something the
// person running the tests can grant, so a skip even under
// XDPENG_REQUIRE_PRIV=1. It is counted and reported apart.
func Unsupported(tb testing.TB, format string, args ...any) {
	tb.Helper()
	why := fmt.Sprintf(format, args...)
	mu.Lock()
	delete(ran, tb.Name())
	unsupported[tb.Name()] = why
	mu.Unlock()
	tb.Skip("not supported here: " + why)
}

// Main runs the package's tests and returns the exit code for os.Exit,
// after printing a line like
//
//	privtest engine: 31 privileged tests ran, 0 skipped, 0 not supported here
//
// followed by each reason for a skip and how many it skipped. A fuzzing run
// (go test -fuzz, make fuzz) runs no privileged test and prints nothing.
func Main(m *testing.M) int {
	code := m.Run()
	if fuzzing() {
		return code
	}
	line := summary(filepath.Base(os.Args[0]))
	fmt.Print(line)
	if path := os.Getenv(ReportEnv); path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err == nil {
			_, err = f.WriteString(line)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "privtest: write %s: %v\n", path, err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// fuzzing reports whether the test binary runs a fuzz target (-test.fuzz),
// or is one of the fuzzing engine's workers (-test.fuzzworker).
func fuzzing() bool {
	for _, name := range []string{"test.fuzz", "test.fuzzworker"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" && f.Value.String() != "false" {
			return true
		}
	}
	return false
}

func summary(binary string) string {
	mu.Lock()
	defer mu.Unlock()
	pkg := strings.TrimSuffix(binary, ".test")
	var b strings.Builder
	fmt.Fprintf(&b, "privtest %s: %d privileged tests ran, %d skipped, %d not supported here\n",
		pkg, len(ran), len(skipped), len(unsupported))
	for _, set := range []struct {
		what string
		m    map[string]string
	}{{"skipped", skipped}, {"not supported", unsupported}} {
		count := map[string]int{}
		for _, why := range set.m {
			count[why]++
		}
		for _, why := range slices.Sorted(maps.Keys(count)) {
			fmt.Fprintf(&b, "privtest %s:   %d %s: %s\n", pkg, count[why], set.what, why)
		}
	}
	return b.String()
}
