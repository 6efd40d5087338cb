package main

import (
	"errors"
	"fmt"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// advise adds to an error of the engine what to do about it on the command
// line: the library says what is wrong, the CLI which flag or command fixes
// it.
func advise(err error) error {
	var (
		de *engine.DeviceError
		oq *engine.OutputQueueError
		qe *engine.QueueError
		me *engine.MTUError
		ae *engine.AttachedError
		fe *netdev.ForeignXDPError
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &de):
		return fmt.Errorf("%w (list them with: ip link)", err)
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
// one attached through netlink may be replaced with --force, one a running
// process holds through a bpf_link never is.
func foreignAdvice(err error, dev string, linkID uint32, ownerPID int) error {
	if linkID == 0 {
		return fmt.Errorf("%w: detach it (ip link set dev %s xdp off), or pass --force to replace it", err, dev)
	}
	if ownerPID != 0 {
		return fmt.Errorf("%w: it is not replaced even with --force; stop that process", err)
	}
	return fmt.Errorf("%w: it is not replaced even with --force; stop that process (bpftool link show id %d shows its pid)", err, linkID)
}

// mtuHint says how to make a device's frames fit the UMEM frames: a larger
// frame size, or a smaller MTU where even 4096-byte frames are too small.
func mtuHint(e *engine.MTUError) string {
	const largest = 4096
	max4096 := e.MaxMTU + int(largest-e.FrameSize)
	if e.MTU <= max4096 {
		return "use --frame-size 4096"
	}
	hint := fmt.Sprintf("lower it to at most %d (ip link set %s mtu %d)", max4096, e.Device, max4096)
	if e.FrameSize < largest {
		hint += " and use --frame-size 4096"
	}
	return hint
}
