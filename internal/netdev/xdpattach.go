package netdev

import "fmt"

// XDPState says which XDP program, if any, is attached to an interface.
type XDPState struct {
	ProgID uint32 // 0 when nothing is attached
	// Mode is "native", "generic", "offload", "multi" (programs in more than
	// one mode) or "" when nothing is attached.
	Mode string
}

// XDPAttachment says which XDP program is attached to a device and how.
type XDPAttachment struct {
	XDPState        // program id and mode; zero when nothing is attached
	ProgName string // "" when the program cannot be read
	// LinkID is the bpf_link that holds the program: the kernel detaches it
	// when the link's last file descriptor closes. 0 means the program was
	// attached through netlink (ip link, libxdp) and stays after its loader
	// exits.
	LinkID uint32
	// OwnerPID and OwnerComm name a process that holds LinkID open or,
	// for a program attached through netlink, another process that holds
	// the program open (a loader still running: xdp-bench, a daemon), as
	// far as /proc shows: 0 and "" when none is visible.
	OwnerPID  int
	OwnerComm string
}

// InUse reports whether a program attached through netlink is held open
// by a running process, which would lose the device without noticing if
// it were replaced.
func (a XDPAttachment) InUse() bool { return a.LinkID == 0 && a.OwnerPID != 0 }

// How says how the program is attached, and who holds it, for a message:
// "through bpf_link id 7, held by pid 12 (xdpeng)", "through netlink,
// held open by pid 40 (xdp-bench)", "through netlink, held by no running
// process".
func (a XDPAttachment) How() string {
	var s string
	switch {
	case a.LinkID != 0:
		s = fmt.Sprintf("through bpf_link id %d, held by a running process", a.LinkID)
		if a.OwnerPID != 0 {
			s += fmt.Sprintf(" (pid %d, %s)", a.OwnerPID, a.OwnerComm)
		}
	case a.OwnerPID != 0:
		s = fmt.Sprintf("through netlink, held open by a running process (pid %d, %s)", a.OwnerPID, a.OwnerComm)
	default:
		s = "through netlink, held by no running process"
	}
	return s
}

// ForeignXDPError reports that an interface already has an XDP program
// someone else attached, which the caller does not replace.
type ForeignXDPError struct {
	Interface string
	XDPAttachment
	// Forced is set when the caller asked to replace programs attached
	// through netlink and this one was refused all the same: a running
	// process holds it (a bpf_link, or the program open and Replace short
	// of ReplaceInUse).
	Forced bool
}

// Replace says which XDP program someone else attached may be replaced.
// One held by a bpf_link never is: a live process owns the link.
type Replace int

const (
	// ReplaceNone replaces nothing.
	ReplaceNone Replace = iota
	// ReplaceUnused replaces a program attached through netlink that no
	// running process holds open (ip link, xdp-loader, a loader gone).
	ReplaceUnused
	// ReplaceInUse replaces also one a running process holds open, which
	// then loses the device without noticing.
	ReplaceInUse
)

// ReplaceOf is what a Force flag, and one for programs in use with it,
// let an attachment replace.
func ReplaceOf(force, inUse bool) Replace {
	switch {
	case force && inUse:
		return ReplaceInUse
	case force:
		return ReplaceUnused
	}
	return ReplaceNone
}

// Refusal is the *ForeignXDPError that keeps a, on interface dev, from
// being replaced under r; nil when r lets it be replaced, or nothing is
// attached.
func (a XDPAttachment) Refusal(dev string, r Replace) error {
	if a.ProgID == 0 {
		return nil
	}
	fe := &ForeignXDPError{Interface: dev, XDPAttachment: a, Forced: r != ReplaceNone}
	switch {
	case a.LinkID != 0, r == ReplaceNone, a.InUse() && r < ReplaceInUse:
		return fe
	}
	return nil
}

// Held reports whether a bpf_link holds the program: a running process owns
// the attachment and would not notice it had been taken away, so it is not
// replaced even when the caller would replace one attached through netlink.
func (e *ForeignXDPError) Held() bool { return e.LinkID != 0 }

func (e *ForeignXDPError) Error() string {
	name := ""
	if e.ProgName != "" {
		name = " " + e.ProgName
	}
	msg := fmt.Sprintf("interface %s already has XDP program id %d%s (%s mode) attached by someone else %s", e.Interface, e.ProgID, name, e.Mode, e.How())
	if e.Forced && e.InUse() {
		msg += ": a program in use is replaced only when that is asked for too"
	}
	return msg
}
