//go:build linux

// Package netdev answers questions about one network interface in the calling
// thread's network namespace: its index, MAC, driver, MTU and how many queues it
// really has, which XDP program is attached, the XDP features the kernel
// reports for it, the driver's `ethtool -S` counters (veth's per-queue XDP
// counters close xdpeng's packet accounting), the NAPI instances that serve
// it, its addresses and the MAC address of whoever receives what it sends
// (AddrIn, DstMAC). Probe gathers the facts that decide how xdpeng runs on a device, and
// Facts.Plan derives those decisions.
//
// Every function works in the network namespace of the calling OS thread. To ask
// about an interface inside a test bed namespace, call it from
// testbed.Do(ns, ...); the ethtool and netlink sockets used here are opened and
// closed inside each call, so they never outlive the namespace switch.
package netdev

import (
	"errors"
	"fmt"

	"github.com/safchain/ethtool"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Lookup returns the facts about the interface called name in the current
// network namespace. A missing interface is a *NoInterfaceError.
func Lookup(name string) (*Info, error) {
	if name == "" {
		return nil, errors.New("no interface name given")
	}
	if len(name) >= unix.IFNAMSIZ {
		return nil, fmt.Errorf("interface name %q is longer than %d characters", name, unix.IFNAMSIZ-1)
	}
	link, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) || errors.Is(err, unix.ENODEV) {
			return nil, &NoInterfaceError{Name: name}
		}
		return nil, fmt.Errorf("look up interface %s: %w", name, err)
	}
	attrs := link.Attrs()
	info := &Info{
		Name:     attrs.Name,
		Index:    attrs.Index,
		MAC:      attrs.HardwareAddr,
		Driver:   linkKind(link),
		MTU:      attrs.MTU,
		RxQueues: attrs.NumRxQueues,
		TxQueues: attrs.NumTxQueues,
	}

	et, err := ethtool.NewEthtool()
	if err != nil {
		return nil, fmt.Errorf("open ethtool socket for %s: %w", name, err)
	}
	defer et.Close()
	// Not every device answers ethtool (lo, some virtual links): the netlink
	// facts above stay as they are then.
	if drv, err := et.DriverName(name); err == nil && drv != "" {
		info.Driver = drv
	}
	if ch, err := et.GetChannels(name); err == nil {
		info.RxQueues, info.TxQueues = channelQueues(ch, info.RxQueues, info.TxQueues)
	}
	return info, nil
}

// LinkState reads whether device index is set up (IFF_UP) and has its
// carrier (IFF_LOWER_UP: its link, or its veth peer, is up); it passes
// frames when both are true.
func LinkState(index int) (adminUp, carrier bool, err error) {
	l, err := netlink.LinkByIndex(index)
	if err != nil {
		return false, false, fmt.Errorf("read the state of interface index %d: %w", index, err)
	}
	f := l.Attrs().RawFlags
	return f&unix.IFF_UP != 0, f&unix.IFF_LOWER_UP != 0, nil
}

// linkKind is the device's netlink link kind ("veth", "bridge"), "" for a
// device without one (lo): netlink's generic "device" is no kind.
func linkKind(l netlink.Link) string {
	if t := l.Type(); t != "device" {
		return t
	}
	return ""
}

// DriverLabel names the driver for a message: Driver, or "no driver" where
// the device reports none.
func (i *Info) DriverLabel() string {
	if i.Driver == "" {
		return "no driver"
	}
	return i.Driver
}

// channelQueues turns ethtool channels into queue counts. NICs usually report
// combined channels (one rx and one tx queue each) and sometimes extra rx-only
// or tx-only ones; veth reports rx and tx. netlink's counts are the allocated
// maximum, kept when the driver reports nothing.
func channelQueues(ch ethtool.Channels, rx, tx int) (int, int) {
	r := int(ch.CombinedCount + ch.RxCount)
	t := int(ch.CombinedCount + ch.TxCount)
	if r > 0 {
		rx = r
	}
	if t > 0 {
		tx = t
	}
	return rx, tx
}
