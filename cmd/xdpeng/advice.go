package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// advise adds to an error of the engine what to do about it on the command
// line: the library says what is wrong, the CLI which flag or command fixes
// it. A device that does not exist is taken for -i's (see inputOrOutput
// for a command with outputs).
func advise(err error) error {
	var (
		de *engine.DeviceError
		oq *engine.OutputQueueError
		qe *engine.QueueError
		me *engine.MTUError
		ae *engine.AttachedError
		fe *netdev.ForeignXDPError
		mb *engine.MultiBufferError
		hp *engine.HugePagesError
		tl *engine.FrameTooLongError
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &de):
		return deviceFlag(err)
	case errors.As(err, &oq):
		return fmt.Errorf("%w, so bind fewer queues with -q or give %s more queues", err, oq.Output)
	case errors.As(err, &qe):
		want := qe.Queue + 1
		if qe.Driver == "veth" {
			// veth queue counts are fixed when the pair is created.
			return fmt.Errorf("%w; veth queues are set at creation: recreate the pair with numrxqueues %d numtxqueues %d "+
				"(for the test bed: xdpeng testbed up --queues %d)", err, want, want, want)
		}
		return fmt.Errorf("%w; add queues with: ethtool -L %s combined %d", err, qe.Device, want)
	case errors.As(err, &me):
		return fmt.Errorf("%w: %s", err, mtuHint(me))
	case errors.As(err, &mb) && mb.NoRxSG:
		return fmt.Errorf("%w: use -S (generic XDP takes multi-buffer frames on any device), or leave out -F", err)
	case errors.As(err, &mb):
		if largest := uint32(os.Getpagesize()); mb.FrameSize < largest {
			return fmt.Errorf("%w: use --frame-size %d, or lower the MTU (ip link set %s mtu %d)", err, largest, mb.Device, mb.MaxMTU)
		}
		return fmt.Errorf("%w: lower the MTU (ip link set %s mtu %d)", err, mb.Device, mb.MaxMTU)
	case errors.Is(err, engine.ErrTxMetadata):
		return fmt.Errorf("%w (--tx-checksum, --tx-timestamp, --launch-delay: leave out -F and -u; --tx-timestamp is for copy mode, -c; with -z the device must list tx-checksum, and for --launch-delay tx-launch-time-fifo, among its AF_XDP transmit metadata: xdpeng probe -i DEV)", err)
	case errors.Is(err, engine.ErrRxMetadataRefused):
		return fmt.Errorf("%w (no program can write receive metadata on this kernel, in any mode: count by port, --by port, works here)", err)
	case errors.Is(err, engine.ErrRxMetadata):
		return fmt.Errorf("%w (--by rxhash needs native XDP, without -S; xdpeng probe -i DEV lists the device's XDP receive metadata)", err)
	case errors.As(err, &hp):
		return fmt.Errorf("%w; or leave --huge-pages at auto (with -u the UMEM then goes into normal pages when there are none)", err)
	case errors.As(err, &tl):
		return fmt.Errorf("%w: send smaller frames (--size %d, counting the FCS), or raise the MTU (ip link set %s mtu %d; a test bed: xdpeng testbed up --mtu %d)",
			err, wireSize(tl.Max), tl.Device, tl.Length-(tl.Max-tl.MTU), tl.Length-(tl.Max-tl.MTU))
	case errors.As(err, &ae):
		return foreignAdvice(err, ae.Device, ae.LinkID, ae.OwnerPID)
	case errors.As(err, &fe):
		return foreignAdvice(err, fe.Interface, fe.LinkID, fe.OwnerPID)
	case errors.Is(err, engine.ErrQueueBusy):
		return fmt.Errorf("%w: stop it, or choose other queues with -q", err)
	case errors.Is(err, engine.ErrNoZeroCopy):
		return fmt.Errorf("%w: use -c for copy mode, or leave the default auto (xdpeng probe -i DEV shows what a device has)", err)
	case errors.Is(err, engine.ErrNoNativeXDP):
		return fmt.Errorf("%w: use -S for generic mode, which works on every interface, or leave -N out to get it where native is missing (xdpeng probe -i DEV shows what a device has)", err)
	}
	return err
}

// foreignAdvice says what to do about someone else's XDP program on dev:
// one attached through netlink may be replaced with --force, or with
// --force twice if a running process holds it open; one a running process
// holds through a bpf_link never is.
func foreignAdvice(err error, dev string, linkID uint32, ownerPID int) error {
	if linkID == 0 && ownerPID != 0 {
		return fmt.Errorf("%w: stop that process, or pass --force twice (--force --force) to replace it anyway: it then loses %s without noticing", err, dev)
	}
	if linkID == 0 {
		return fmt.Errorf("%w: detach it (ip link set dev %s xdp off), or pass --force to replace it", err, dev)
	}
	if ownerPID != 0 {
		return fmt.Errorf("%w: it is not replaced even with --force; stop that process", err)
	}
	return fmt.Errorf("%w: it is not replaced even with --force; stop that process (bpftool link show id %d shows its pid)", err, linkID)
}

// mtuHint says how to make a device's frames fit the UMEM frames: a larger
// frame size (up to the page size), a smaller MTU where even the largest
// frames are too small, or multi-buffer, which spreads a frame over several.
func mtuHint(e *engine.MTUError) string {
	largest := uint32(os.Getpagesize())
	maxLargest := e.MaxMTU + int(largest-e.FrameSize)
	if e.MTU <= maxLargest {
		return fmt.Sprintf("use --frame-size %d, or -F (multi-buffer: a frame in several UMEM frames)", largest)
	}
	hint := fmt.Sprintf("use -F (multi-buffer: a frame in several UMEM frames), or lower it to at most %d (ip link set %s mtu %d)", maxLargest, e.Device, maxLargest)
	if e.FrameSize < largest {
		hint += fmt.Sprintf(" and use --frame-size %d", largest)
	}
	return hint
}

// bedAdvice is, for an error about a device missing from this namespace
// that a test bed's namespace has, where it is and the command line args
// run there: "dut0 is in test bed t1's namespace t1-dut: ip netns exec
// t1-dut xdpeng rxdrop -i dut0". A bed the caller runs in comes first;
// other beds that have one are named after it. "" for other errors, or
// when no bed has the device.
func bedAdvice(err error, args []string) string {
	var (
		ni  *netdev.NoInterfaceError
		de  *engine.DeviceError
		dev string
	)
	switch {
	case errors.As(err, &ni):
		dev = ni.Name
	case errors.As(err, &de):
		dev = de.Name
	default:
		return ""
	}
	places, _ := testbed.FindInterface(dev)
	if len(places) == 0 {
		return ""
	}
	for i, p := range places {
		if p.SameBed {
			places[0], places[i] = places[i], places[0]
			break
		}
	}
	p := places[0]
	s := fmt.Sprintf("%s is in test bed %s's namespace %s: ip netns exec %s xdpeng %s", dev, p.Bed, p.Namespace, p.Namespace, shellJoin(args))
	if len(places) > 1 {
		var others []string
		for _, o := range places[1:] {
			others = append(others, o.Namespace)
		}
		if len(others) > 3 {
			others = append(others[:3], fmt.Sprintf("%d more", len(others)-3))
		}
		s += fmt.Sprintf(" (%s is also in %s)", dev, strings.Join(others, ", "))
	}
	return s
}

// shellJoin quotes the words that a shell would split or expand.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

// deviceFlag is the error of a device that does not exist as every
// command says it: the flag first, "-i: interface "x" not found in this
// network namespace (list them with: ip link)". The flag is -i unless err
// already names one ("-o: ...").
func deviceFlag(err error) error {
	if strings.HasPrefix(err.Error(), "-") {
		return fmt.Errorf("%w (list them with: ip link)", err)
	}
	return fmt.Errorf("-i: %w (list them with: ip link)", err)
}

// inputOrOutput names the flag of a device that does not exist in the
// error of a command that reads in and sends to outputs: -o for an output,
// -i for in; other errors are returned as they are.
func inputOrOutput(err error, in string) error {
	var (
		ni *netdev.NoInterfaceError
		de *engine.DeviceError
	)
	name := ""
	switch {
	case errors.As(err, &ni):
		name = ni.Name
	case errors.As(err, &de):
		name = de.Name
	default:
		return err
	}
	if name != in && !strings.HasPrefix(err.Error(), "-") {
		return fmt.Errorf("-o: %w", err)
	}
	return err
}

// forceFlag registers --force, counted: once replaces an XDP program
// attached through netlink that no running process holds open, twice also
// one a running process holds open.
func forceFlag(fs *pflag.FlagSet, n *int) {
	fs.CountVar(n, "force", "replace an XDP program someone else attached through netlink (it says which first); give it twice to replace one a running process holds open (that process loses the device); never one held by a bpf_link")
}

// forceNote says, before a run with --force, which XDP program on dev it
// is about to replace, and how that one is attached and held; nothing when
// there is none, or when it will be refused.
func forceNote(w io.Writer, dev string, force int) {
	if force == 0 {
		return
	}
	info, err := netdev.Lookup(dev)
	if err != nil {
		return
	}
	a, err := netdev.XDPAttachmentOf(info.Index)
	if err != nil || a.ProgID == 0 || a.Refusal(dev, netdev.ReplaceOf(true, force > 1)) != nil {
		return
	}
	name := ""
	if a.ProgName != "" {
		name = " " + a.ProgName
	}
	fmt.Fprintf(w, "xdpeng: --force: replacing XDP program id %d%s (%s mode) on %s, attached %s\n", a.ProgID, name, a.Mode, dev, a.How())
}
