// Package testbedtest gives tests of any package a throwaway test bed, and
// the probe that tells what is attached to an interface. New needs root
// and network namespaces: where it cannot have them it skips the test with
// the reason, or fails it under XDPENG_REQUIRE_PRIV=1 (see privtest). The bed
// is removed when the test ends.
package testbedtest

import (
	"errors"
	"os"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/testutil/hooktest"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// New creates a bed with a unique name, queues queues and links links, NAPI
// in softirq (layout A), and removes it when the test and its subtests end.
func New(tb testing.TB, queues, links int) *testbed.Bed {
	tb.Helper()
	return NewConfig(tb, testbed.Config{Queues: queues, Links: links})
}

// NewConfig is New with a full Config; an empty Name is replaced by a unique one.
func NewConfig(tb testing.TB, cfg testbed.Config) *testbed.Bed {
	tb.Helper()
	privtest.Root(tb)
	if _, err := os.Stat("/proc/self/ns/net"); err != nil {
		privtest.Unavailable(tb, "network namespaces not supported: %v", err)
	}
	if cfg.Name == "" {
		cfg.Name = testbed.UniqueName("t")
	}
	bed, err := testbed.Up(cfg)
	if err != nil {
		if errors.Is(err, unix.EPERM) {
			privtest.Unavailable(tb, "cannot create network namespaces here: %v", err)
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

// Hooks is hooktest.Hooks: every program attached to an interface.
type Hooks = hooktest.Hooks

// ReadHooks is hooktest.ReadHooks, for the lab's tests.
func ReadHooks(ifindex int) (Hooks, error) { return hooktest.ReadHooks(ifindex) }

// ReadHooksIn is ReadHooks of the interface called dev in the named
// namespace ns, failing the test if the probe fails.
func ReadHooksIn(tb testing.TB, ns, dev string) Hooks {
	tb.Helper()
	var h Hooks
	err := testbed.Do(ns, func() error {
		l, err := netlink.LinkByName(dev)
		if err != nil {
			return err
		}
		h, err = ReadHooks(l.Attrs().Index)
		return err
	})
	if err != nil {
		tb.Fatalf("read the hooks of %s in %s: %v", dev, ns, err)
	}
	return h
}
