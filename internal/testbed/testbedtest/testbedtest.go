// Package testbedtest gives tests of any package a throwaway test bed: New
// skips the test, with the reason, where a bed cannot be made (not root, no
// network namespaces) and removes the bed when the test ends.
package testbedtest

import (
	"errors"
	"os"
	"testing"

	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/internal/testbed"
)

// memlockErr is why raising RLIMIT_MEMLOCK failed, if it did; kernels from 5.11
// account BPF memory to cgroups and do not need it.
var memlockErr error

func init() {
	// Once for every test binary that uses a bed, as BPF maps and AF_XDP
	// UMEMs are charged to RLIMIT_MEMLOCK on older kernels.
	memlockErr = rlimit.RemoveMemlock()
}

// RequireRoot skips the test unless it runs as root.
func RequireRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_BPF): run with sudo go test")
	}
}

// MemlockErr returns the error from raising RLIMIT_MEMLOCK at start-up, nil
// if it worked; tests that load BPF objects may report it.
func MemlockErr() error { return memlockErr }

// New creates a bed with a unique name, queues queues and links links, NAPI
// in softirq (layout A), and removes it when the test and its subtests end. It skips the
// test when not root or when network namespaces are not supported.
func New(tb testing.TB, queues, links int) *testbed.Bed {
	tb.Helper()
	return NewConfig(tb, testbed.Config{Queues: queues, Links: links})
}

// NewConfig is New with a full Config; an empty Name is replaced by a unique one.
func NewConfig(tb testing.TB, cfg testbed.Config) *testbed.Bed {
	tb.Helper()
	RequireRoot(tb)
	if _, err := os.Stat("/proc/self/ns/net"); err != nil {
		tb.Skipf("network namespaces not supported: %v", err)
	}
	if cfg.Name == "" {
		cfg.Name = testbed.UniqueName("t")
	}
	bed, err := testbed.Up(cfg)
	if err != nil {
		if errors.Is(err, unix.EPERM) {
			tb.Skipf("cannot create network namespaces here: %v", err)
		}
		tb.Fatalf("create test bed: %v", err)
	}
	tb.Cleanup(func() {
		if err := bed.Down(); err != nil {
			tb.Errorf("remove test bed: %v", err)
		}
	})
	return bed
}
