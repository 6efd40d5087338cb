//go:build linux

// Package hook attaches XDP and tc programs to interfaces so that nothing is
// left behind: through a bpf_link wherever the kernel has one, so the kernel
// detaches the program when the last file descriptor goes (the process exits,
// even on kill -9), and through netlink only where links are missing, in
// which case Close detaches and a killed process does leave the program.
//
// It never replaces a program someone else attached unless asked to (force),
// and never one held by another process's bpf_link: that process is alive,
// owns the attachment and would not notice it had been taken away.
//
// All interface indexes are in the calling thread's network namespace.
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

	"github.com/xdpeng/xdpeng/internal/netdev"
)

// XDPMode is where in the receive path an XDP program runs.
type XDPMode int

const (
	// Native runs the program in the driver, before an skb exists
	// (XDP_FLAGS_DRV_MODE). veth supports it.
	Native XDPMode = iota
	// Generic runs the program on the skb, after the driver: it works on
	// every interface, more slowly (XDP_FLAGS_SKB_MODE).
	Generic
)

// String returns "native" or "generic".
func (m XDPMode) String() string {
	switch m {
	case Native:
		return "native"
	case Generic:
		return "generic"
	}
	return fmt.Sprintf("XDPMode(%d)", int(m))
}

func (m XDPMode) linkFlags() link.XDPAttachFlags {
	if m == Generic {
		return link.XDPGenericMode
	}
	return link.XDPDriverMode
}

func (m XDPMode) netlinkFlags() int {
	if m == Generic {
		return unix.XDP_FLAGS_SKB_MODE
	}
	return unix.XDP_FLAGS_DRV_MODE
}

// attached describes the XDP program already on an interface.
type attached struct {
	progID uint32
	mode   string // as netlink reports it: native, generic, offload, multi
	linkID uint32 // the bpf_link that holds it, 0 if attached through netlink
}

func (a attached) String() string {
	return fmt.Sprintf("XDP program id %d (%s mode)", a.progID, a.mode)
}

// AttachXDP attaches prog to the interface ifindex in mode and returns what
// detaches it.
//
// If a program is already attached (in any mode) it refuses with a
// *netdev.ForeignXDPError naming the program, how it is attached and the
// process that holds it, unless replace lets it go (netdev.Replace): a
// program attached through netlink (ip link, libxdp, older tools) is then
// detached through netlink first. A program held by a bpf_link is refused
// always, because a live process owns that link (bpftool link show names
// it).
//
// The attachment is a bpf_link; on kernels without XDP links (before 5.9) it
// falls back to netlink, and then the program stays if the process is killed
// before Close.
func AttachXDP(prog *ebpf.Program, ifindex int, mode XDPMode, replace netdev.Replace) (io.Closer, error) {
	if mode != Native && mode != Generic {
		return nil, fmt.Errorf("attach XDP: invalid mode %v", mode)
	}
	dev, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		return nil, fmt.Errorf("attach XDP: interface index %d: %w", ifindex, err)
	}
	name := dev.Attrs().Name
	if cur, ok := currentXDP(dev); ok {
		if err := takeOver(dev, cur, replace); err != nil {
			return nil, err
		}
	}

	l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifindex, Flags: mode.linkFlags()})
	if err == nil {
		return &xdpLink{link: l, name: name}, nil
	}
	// Without bpf_link at all cilium/ebpf says ErrNotSupported; kernels
	// with links but before XDP links (5.7, 5.8) say EINVAL.
	if errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, unix.EINVAL) {
		c, nlErr := attachXDPNetlink(prog, dev, mode)
		if nlErr == nil {
			return c, nil
		}
		err = fmt.Errorf("%w (netlink fallback: %w)", err, nlErr)
	}
	return nil, explainXDP(err, dev, mode)
}

// currentXDP reports the XDP program attached to dev, and the bpf_link that
// holds it if there is one.
func currentXDP(dev netlink.Link) (attached, bool) {
	x := dev.Attrs().Xdp
	if x == nil || !x.Attached || x.ProgId == 0 {
		return attached{}, false
	}
	a := attached{progID: x.ProgId, mode: netdev.XDPModeName(x.AttachMode)}
	a.linkID = netdev.XDPLinkID(dev.Attrs().Index, x.ProgId)
	return a, true
}

// takeOver refuses or, as replace lets it, removes the program cur on dev.
func takeOver(dev netlink.Link, cur attached, replace netdev.Replace) error {
	name := dev.Attrs().Name
	a := netdev.XDPAttachment{XDPState: netdev.XDPState{ProgID: cur.progID, Mode: cur.mode}, LinkID: cur.linkID}
	if full, err := netdev.XDPAttachmentOf(dev.Attrs().Index); err == nil && full.ProgID == cur.progID {
		a = full // with its name and the process that holds it
	}
	if err := a.Refusal(name, replace); err != nil {
		return err
	}
	if err := detachNetlinkAll(dev); err != nil {
		return fmt.Errorf("replace %s on %s: %w", cur, name, err)
	}
	return nil
}

// detachNetlinkAll removes netlink-attached XDP programs in every mode: the
// "multi" state (native and offload at once) does not say which are set.
func detachNetlinkAll(dev netlink.Link) error {
	var errs []error
	for _, flags := range []int{unix.XDP_FLAGS_DRV_MODE, unix.XDP_FLAGS_SKB_MODE, unix.XDP_FLAGS_HW_MODE} {
		// Removing from a mode with nothing attached is a no-op, and a
		// driver without that mode says EOPNOTSUPP: neither matters here.
		err := netlink.LinkSetXdpFdWithFlags(dev, -1, flags)
		if err != nil && !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("detach XDP through netlink: %w", err)
	}
	return nil
}

// Reasons AttachXDP fails for, wrapped into its error.
var (
	// ErrNoNativeXDP: the driver has no native XDP; generic mode works on
	// every interface.
	ErrNoNativeXDP = netdev.ErrNoNativeXDP
	// ErrMTUTooLarge: the driver takes no XDP program at this MTU in this
	// mode.
	ErrMTUTooLarge = errors.New("the MTU is too large for XDP on this driver")
)

// explainXDP says what the kernel's errno means for this attachment;
// ErrNoNativeXDP and ErrMTUTooLarge let a caller tell the cases apart.
func explainXDP(err error, dev netlink.Link, mode XDPMode) error {
	name := dev.Attrs().Name
	switch {
	case errors.Is(err, unix.EOPNOTSUPP) && mode == Native:
		return fmt.Errorf("attach XDP to %s: %w (generic mode works on every interface): %w", name, ErrNoNativeXDP, err)
	case errors.Is(err, unix.EBUSY), errors.Is(err, unix.EEXIST):
		// Someone attached in between, or holds the other mode (native
		// and generic cannot be active at once).
		who := "another program"
		if fresh, lerr := netlink.LinkByIndex(dev.Attrs().Index); lerr == nil {
			if cur, ok := currentXDP(fresh); ok {
				who = cur.String()
				if cur.linkID != 0 {
					who += fmt.Sprintf(" held by bpf_link id %d", cur.linkID)
				}
			}
		}
		return fmt.Errorf("attach XDP to %s: %s is attached (ip link show dev %s; bpftool net): %w", name, who, name, err)
	case errors.Is(err, unix.ERANGE), errors.Is(err, unix.E2BIG):
		return fmt.Errorf("attach XDP to %s in %s mode: %w (lower it, or use generic mode): %w", name, mode, ErrMTUTooLarge, err)
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("attach XDP to %s: permission denied (needs CAP_BPF and CAP_NET_ADMIN): %w", name, err)
	}
	return fmt.Errorf("attach XDP to %s in %s mode: %w", name, mode, err)
}

// xdpLink is an XDP attachment through bpf_link.
type xdpLink struct {
	link link.Link
	name string
	once sync.Once
	err  error
}

// Close detaches the program; later calls return the first result.
func (x *xdpLink) Close() error {
	x.once.Do(func() {
		if err := x.link.Close(); err != nil {
			x.err = fmt.Errorf("detach XDP from %s: %w", x.name, err)
		}
	})
	return x.err
}

// attachXDPNetlink attaches prog through netlink, refusing to replace
// anything (XDP_FLAGS_UPDATE_IF_NOEXIST) so that a program attached between
// our check and now is not lost.
func attachXDPNetlink(prog *ebpf.Program, dev netlink.Link, mode XDPMode) (io.Closer, error) {
	info, err := prog.Info()
	if err != nil {
		return nil, fmt.Errorf("program info: %w", err)
	}
	id, _ := info.ID()
	flags := mode.netlinkFlags() | unix.XDP_FLAGS_UPDATE_IF_NOEXIST
	if err := netlink.LinkSetXdpFdWithFlags(dev, prog.FD(), flags); err != nil {
		return nil, fmt.Errorf("netlink attach: %w", err)
	}
	return &xdpNetlink{ifindex: dev.Attrs().Index, name: dev.Attrs().Name, mode: mode, progID: uint32(id)}, nil
}

// xdpNetlink is an XDP attachment through netlink.
type xdpNetlink struct {
	ifindex int
	name    string
	mode    XDPMode
	progID  uint32
	once    sync.Once
	err     error
}

// Close detaches the program if it is still ours: if someone replaced it
// meanwhile, theirs stays.
func (x *xdpNetlink) Close() error {
	x.once.Do(func() {
		dev, err := netlink.LinkByIndex(x.ifindex)
		if err != nil {
			// The interface is gone, and its program with it.
			return
		}
		if cur, ok := currentXDP(dev); !ok || cur.progID != x.progID {
			return
		}
		if err := netlink.LinkSetXdpFdWithFlags(dev, -1, x.mode.netlinkFlags()); err != nil {
			x.err = fmt.Errorf("detach XDP from %s through netlink: %w", x.name, err)
		}
	})
	return x.err
}
