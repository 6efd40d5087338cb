// Package testbedtest gives tests of any package a throwaway test bed, and
// the probe that tells what is attached to an interface. New needs root
// and network namespaces: where it cannot have them it skips the test with
// the reason, or fails it under XDPENG_REQUIRE_PRIV=1 (see privtest). The bed
// is removed when the test ends.
package testbedtest

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/netdev"
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

// Hooks is every program attached to an interface: XDP (netlink sees
// bpf_link attachments too), TCX ingress and egress, and classic tc
// filters on a clsact or ingress qdisc.
type Hooks struct {
	XDPProg    uint32
	TCXIngress []ebpf.ProgramID
	TCXEgress  []ebpf.ProgramID
	TCFilters  int
}

// Equal reports whether h and o show the same programs.
func (h Hooks) Equal(o Hooks) bool {
	return h.XDPProg == o.XDPProg && slices.Equal(h.TCXIngress, o.TCXIngress) &&
		slices.Equal(h.TCXEgress, o.TCXEgress) && h.TCFilters == o.TCFilters
}

// Empty reports whether nothing is attached.
func (h Hooks) Empty() bool { return h.Equal(Hooks{}) }

// ReadHooks reads what is attached to the interface ifindex of the calling
// thread's network namespace. Every query that fails is an error: a probe
// must not read as "nothing attached" because it could not look. The one
// exception is a kernel without TCX (before 6.6), where nothing can be
// attached there.
func ReadHooks(ifindex int) (Hooks, error) {
	var h Hooks
	l, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		return h, fmt.Errorf("interface index %d: %w", ifindex, err)
	}
	name := l.Attrs().Name
	st, err := netdev.XDPAttached(ifindex)
	if err != nil {
		return h, fmt.Errorf("%s: read the XDP program: %w", name, err)
	}
	h.XDPProg = st.ProgID
	for _, a := range []struct {
		typ ebpf.AttachType
		ids *[]ebpf.ProgramID
	}{{ebpf.AttachTCXIngress, &h.TCXIngress}, {ebpf.AttachTCXEgress, &h.TCXEgress}} {
		r, err := link.QueryPrograms(link.QueryOptions{Target: ifindex, Attach: a.typ})
		if errors.Is(err, ebpf.ErrNotSupported) {
			continue // no TCX on this kernel: nothing can be attached there
		}
		if err != nil {
			return h, fmt.Errorf("%s: query %v programs: %w", name, a.typ, err)
		}
		for _, p := range r.Programs {
			*a.ids = append(*a.ids, p.ID)
		}
	}
	// Listing filters on a hook without a qdisc fails (EINVAL); so look for
	// the qdisc first, and then a failed listing is a failed probe.
	qdiscs, err := netlink.QdiscList(l)
	if err != nil {
		return h, fmt.Errorf("%s: list qdiscs: %w", name, err)
	}
	var parents []uint32
	for _, q := range qdiscs {
		switch q.Type() {
		case "clsact":
			parents = append(parents, netlink.HANDLE_MIN_INGRESS, netlink.HANDLE_MIN_EGRESS)
		case "ingress":
			parents = append(parents, netlink.HANDLE_MIN_INGRESS)
		}
	}
	for _, parent := range parents {
		fs, err := netlink.FilterList(l, parent)
		if err != nil {
			return h, fmt.Errorf("%s: list tc filters: %w", name, err)
		}
		h.TCFilters += len(fs)
	}
	return h, nil
}

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
