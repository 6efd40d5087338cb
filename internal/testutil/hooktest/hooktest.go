// Package hooktest reads every program attached to an interface, for tests
// that check what was attached and that it was all taken away.
package hooktest

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"

	"github.com/xdpeng/xdpeng/internal/netdev"
)

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
