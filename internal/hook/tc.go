//go:build linux

package hook

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// AttachTCIngress attaches the tc (SCHED_CLS) program prog to the ingress
// hook of the interface ifindex and returns what detaches it.
//
// TCX (Linux 6.6+) holds several programs in order, so nothing of anyone
// else's is replaced; prog runs after those already there. Its bpf_link is
// released by the kernel when the process exits. On older kernels it falls
// back to a clsact qdisc with a direct-action bpf filter; Close removes the
// filter, and the qdisc only if this call created it. That fallback survives
// a kill -9.
func AttachTCIngress(prog *ebpf.Program, ifindex int) (io.Closer, error) {
	dev, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		return nil, fmt.Errorf("attach tc ingress: interface index %d: %w", ifindex, err)
	}
	name := dev.Attrs().Name
	l, err := link.AttachTCX(link.TCXOptions{Program: prog, Interface: ifindex, Attach: ebpf.AttachTCXIngress})
	if err == nil {
		return &tcxLink{link: l, name: name}, nil
	}
	if !errors.Is(err, ebpf.ErrNotSupported) {
		return nil, fmt.Errorf("attach tc ingress to %s with TCX: %w", name, err)
	}
	c, nlErr := attachTCNetlink(prog, dev)
	if nlErr != nil {
		return nil, fmt.Errorf("attach tc ingress to %s (no TCX: %v): %w", name, err, nlErr)
	}
	return c, nil
}

// TCVia says how the attachment c that AttachTCIngress returned holds its
// program: "tcx", or "clsact" (the fallback before Linux 6.6: a bpf filter
// on a clsact qdisc, which a kill -9 leaves behind); "" for any other.
func TCVia(c io.Closer) string {
	switch c.(type) {
	case *tcxLink:
		return "tcx"
	case *tcNetlink:
		return "clsact"
	}
	return ""
}

// tcxLink is a tc attachment through TCX.
type tcxLink struct {
	link link.Link
	name string
	once sync.Once
	err  error
}

// Close detaches the program; later calls return the first result.
func (t *tcxLink) Close() error {
	t.once.Do(func() {
		if err := t.link.Close(); err != nil {
			t.err = fmt.Errorf("detach tc ingress from %s: %w", t.name, err)
		}
	})
	return t.err
}

// tcFilterName marks our filters in `tc filter show` output.
const tcFilterName = "xdpeng"

// attachTCNetlink attaches prog as a direct-action bpf filter on the clsact
// ingress hook, creating the qdisc if there is none. It takes a priority no
// other filter uses, so that Close can delete exactly its own filter.
func attachTCNetlink(prog *ebpf.Program, dev netlink.Link) (io.Closer, error) {
	attrs := dev.Attrs()
	t := &tcNetlink{ifindex: attrs.Index, name: attrs.Name}

	qdiscs, err := netlink.QdiscList(dev)
	if err != nil {
		return nil, fmt.Errorf("list qdiscs: %w", err)
	}
	haveClsact := false
	for _, q := range qdiscs {
		if q.Type() == "clsact" {
			haveClsact = true
		}
	}
	if !haveClsact {
		if err := netlink.QdiscAdd(clsact(attrs.Index)); err != nil {
			return nil, fmt.Errorf("add clsact qdisc: %w", err)
		}
		t.createdQdisc = true
	}

	filters, err := netlink.FilterList(dev, netlink.HANDLE_MIN_INGRESS)
	if err != nil {
		t.Close()
		return nil, fmt.Errorf("list ingress filters: %w", err)
	}
	t.priority = 1
	for _, f := range filters {
		if p := f.Attrs().Priority; p >= t.priority {
			t.priority = p + 1
		}
	}
	filter := &netlink.BpfFilter{
		FilterAttrs: netlink.FilterAttrs{
			LinkIndex: attrs.Index,
			Parent:    netlink.HANDLE_MIN_INGRESS,
			Handle:    1,
			Protocol:  unix.ETH_P_ALL,
			Priority:  t.priority,
		},
		Fd:           prog.FD(),
		Name:         tcFilterName,
		DirectAction: true,
	}
	if err := netlink.FilterAdd(filter); err != nil {
		t.Close()
		return nil, fmt.Errorf("add bpf filter: %w", err)
	}
	t.filter = filter
	return t, nil
}

func clsact(ifindex int) *netlink.GenericQdisc {
	return &netlink.GenericQdisc{
		QdiscAttrs: netlink.QdiscAttrs{
			LinkIndex: ifindex,
			Handle:    netlink.MakeHandle(0xffff, 0),
			Parent:    netlink.HANDLE_CLSACT,
		},
		QdiscType: "clsact",
	}
}

// tcNetlink is a tc attachment through a clsact qdisc and a bpf filter.
type tcNetlink struct {
	ifindex      int
	name         string
	priority     uint16
	filter       *netlink.BpfFilter
	createdQdisc bool
	once         sync.Once
	err          error
}

// Close removes the filter, and the qdisc if we created it.
func (t *tcNetlink) Close() error {
	t.once.Do(func() {
		if _, err := netlink.LinkByIndex(t.ifindex); err != nil {
			return // the interface is gone, and its qdiscs with it
		}
		var errs []error
		if t.filter != nil {
			if err := netlink.FilterDel(t.filter); err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("delete bpf filter: %w", err))
			}
		}
		if t.createdQdisc {
			if err := netlink.QdiscDel(clsact(t.ifindex)); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) {
				errs = append(errs, fmt.Errorf("delete clsact qdisc: %w", err))
			}
		}
		if err := errors.Join(errs...); err != nil {
			t.err = fmt.Errorf("detach tc ingress from %s: %w", t.name, err)
		}
	})
	return t.err
}
