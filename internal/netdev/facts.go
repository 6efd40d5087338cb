//go:build linux

package netdev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/safchain/ethtool"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Facts are what xdpeng needs to know about one device to decide how to run
// there. Probe gathers them; Plan and MTULimit derive decisions from them
// without asking the kernel again.
type Facts struct {
	Info
	// MinMTU and MaxMTU bound the MTU the device takes (IFLA_MIN_MTU,
	// IFLA_MAX_MTU); MaxMTU is 0 where the driver sets no maximum.
	MinMTU, MaxMTU int
	// Channels are the queue counts of `ethtool -l`, nil where the driver
	// does not report them (lo and other virtual devices).
	Channels *Channels
	// Features are the device's XDP features, nil where the kernel does not
	// report them (before Linux 6.3).
	Features *DevFeatures
	// XDP is the XDP program attached to the device, if any.
	XDP XDPAttachment
}

// Channels are a device's queue counts as `ethtool -l` shows them: in use,
// and the most the driver allows. A combined channel is one receive and one
// transmit queue; Other channels serve no packet queue (link interrupts).
type Channels struct {
	Combined, Rx, Tx, Other             int
	MaxCombined, MaxRx, MaxTx, MaxOther int
}

// Probe gathers the Facts about the interface called name in the current
// network namespace. A missing interface is a *NoInterfaceError. Where the
// kernel does not report XDP features, Features is nil and Probe succeeds.
func Probe(name string) (*Facts, error) {
	info, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	f := &Facts{Info: *info}
	if f.MinMTU, f.MaxMTU, err = mtuLimits(info.Index); err != nil {
		return nil, err
	}
	if f.Channels, err = channels(name); err != nil {
		return nil, err
	}
	feat, err := Features(info.Index)
	switch {
	case err == nil:
		f.Features = &feat
	case !errors.Is(err, ErrNoXDPFeatures):
		return nil, err
	}
	if f.XDP, err = XDPAttachmentOf(info.Index); err != nil {
		return nil, err
	}
	return f, nil
}

// channels reads `ethtool -l name`; nil without error where the driver has
// no channel settings.
func channels(name string) (*Channels, error) {
	et, err := ethtool.NewEthtool()
	if err != nil {
		return nil, fmt.Errorf("open ethtool socket for %s: %w", name, err)
	}
	defer et.Close()
	ch, err := et.GetChannels(name)
	if errors.Is(err, unix.EOPNOTSUPP) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read channels of %s: %w", name, err)
	}
	return &Channels{
		Combined: int(ch.CombinedCount), Rx: int(ch.RxCount), Tx: int(ch.TxCount), Other: int(ch.OtherCount),
		MaxCombined: int(ch.MaxCombined), MaxRx: int(ch.MaxRx), MaxTx: int(ch.MaxTx), MaxOther: int(ch.MaxOther),
	}, nil
}

// mtuLimits reads IFLA_MIN_MTU and IFLA_MAX_MTU, which the netlink package
// does not decode.
func mtuLimits(ifindex int) (minMTU, maxMTU int, err error) {
	req := nl.NewNetlinkRequest(unix.RTM_GETLINK, 0)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(ifindex)
	req.AddData(msg)
	msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWLINK)
	if err != nil {
		return 0, 0, fmt.Errorf("read MTU limits of interface index %d: %w", ifindex, err)
	}
	if len(msgs) != 1 {
		return 0, 0, fmt.Errorf("read MTU limits of interface index %d: %d replies, want 1", ifindex, len(msgs))
	}
	return parseMTULimits(msgs[0])
}

// parseMTULimits decodes the MTU limits from an RTM_NEWLINK payload.
func parseMTULimits(msg []byte) (minMTU, maxMTU int, err error) {
	if len(msg) < unix.SizeofIfInfomsg {
		return 0, 0, fmt.Errorf("short RTM_NEWLINK message (%d bytes)", len(msg))
	}
	attrs, err := nl.ParseRouteAttr(msg[unix.SizeofIfInfomsg:])
	if err != nil {
		return 0, 0, fmt.Errorf("parse RTM_NEWLINK message: %w", err)
	}
	for _, a := range attrs {
		if len(a.Value) < 4 {
			continue
		}
		switch a.Attr.Type {
		case unix.IFLA_MIN_MTU:
			minMTU = int(binary.NativeEndian.Uint32(a.Value))
		case unix.IFLA_MAX_MTU:
			maxMTU = int(binary.NativeEndian.Uint32(a.Value))
		}
	}
	return minMTU, maxMTU, nil
}

// XDPAttachmentOf describes the XDP program attached to the interface with
// index ifindex in the current network namespace: the zero value when there
// is none. Finding the bpf_link and its owner needs CAP_SYS_ADMIN; without it
// LinkID stays 0.
func XDPAttachmentOf(ifindex int) (XDPAttachment, error) {
	st, err := XDPAttached(ifindex)
	if err != nil || st.ProgID == 0 {
		return XDPAttachment{XDPState: st}, err
	}
	a := XDPAttachment{XDPState: st}
	if prog, err := ebpf.NewProgramFromID(ebpf.ProgramID(st.ProgID)); err == nil {
		if info, err := prog.Info(); err == nil {
			a.ProgName = info.Name
		}
		prog.Close()
	}
	a.LinkID = XDPLinkID(ifindex, st.ProgID)
	if a.LinkID != 0 {
		a.OwnerPID, a.OwnerComm, _ = LinkOwner(a.LinkID)
	} else {
		a.OwnerPID, a.OwnerComm, _ = ProgHolder(st.ProgID)
	}
	return a, nil
}

// XDPLinkID returns the id of the XDP bpf_link that holds program progID on
// ifindex, or 0 if there is none (the program was attached through netlink).
// Link ifindexes are per namespace; the program id, which is global, tells
// two devices with the same index apart.
func XDPLinkID(ifindex int, progID uint32) uint32 {
	var it link.Iterator
	defer it.Close()
	for it.Next() {
		info, err := it.Link.Info()
		if err != nil || info.Type != link.XDPType || uint32(info.Program) != progID {
			continue
		}
		if x := info.XDP(); x != nil && int(x.Ifindex) == ifindex {
			return uint32(it.ID)
		}
	}
	return 0
}

// LinkOwner finds a process that holds bpf_link id open: the link's fdinfo
// says "link_id:". It reads /proc, so it sees only the processes this one may
// inspect.
func LinkOwner(id uint32) (pid int, comm string, ok bool) {
	return fdHolder(fmt.Sprintf("link_id:\t%d\n", id), -1)
}

// ProgHolder finds a process other than this one that holds BPF program
// id open (its fdinfo says "prog_id:"), as LinkOwner does for links.
func ProgHolder(id uint32) (pid int, comm string, ok bool) {
	return fdHolder(fmt.Sprintf("prog_id:\t%d\n", id), os.Getpid())
}

// fdHolder finds a process, not skip, with a file descriptor whose fdinfo
// holds want.
func fdHolder(want string, skip int) (pid int, comm string, ok bool) {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		n, err := strconv.Atoi(p.Name())
		if err != nil || n == skip {
			continue
		}
		fdinfo := filepath.Join("/proc", p.Name(), "fdinfo")
		fds, _ := os.ReadDir(fdinfo)
		for _, fd := range fds {
			b, err := os.ReadFile(filepath.Join(fdinfo, fd.Name()))
			if err == nil && strings.Contains(string(b), want) {
				c, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "comm"))
				return n, strings.TrimSpace(string(c)), true
			}
		}
	}
	return 0, "", false
}
