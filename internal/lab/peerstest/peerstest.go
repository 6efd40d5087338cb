// Package peerstest finds the peer tools (xdpsock, xdp-bench) for the tests
// that run them beside xdpeng. Nothing depends on them being there: where
// they are not, such a test is skipped as not supported here.
package peerstest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// Env names the directory of the peer tools.
const Env = "XDPENG_PEERS"

// Dir returns the directory of the peer tools: $XDPENG_PEERS (which must
// hold xdpsock), else ../shared/peers/bin beside the repository's top (where
// go.work is), where CI keeps them. Where neither has them the test is skipped as not
// supported here (privtest.Unsupported).
func Dir(tb testing.TB) string {
	tb.Helper()
	if d := os.Getenv(Env); d != "" {
		if _, err := os.Stat(filepath.Join(d, "xdpsock")); err != nil {
			tb.Fatalf("%s=%s: %v", Env, d, err)
		}
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for ; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			break
		}
		if dir == filepath.Dir(dir) {
			tb.Fatal("no go.work above the test's directory")
		}
	}
	d := filepath.Join(dir, "..", "shared", "peers", "bin")
	if _, err := os.Stat(filepath.Join(d, "xdpsock")); err != nil {
		privtest.Unsupported(tb, "the peer tools are not here: set %s to the directory of xdpsock and xdp-bench (no %s)", Env, d)
	}
	return d
}
