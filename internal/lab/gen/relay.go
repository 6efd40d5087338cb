package gen

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"

	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// The relay's two veth ends. They live in a network namespace of the
// relay's own, so the names never clash.
const (
	relayIn  = "xg0" // the senders transmit into this end
	relayOut = "xg1" // the generator's program runs here and redirects
)

// relay is a veth pair in a network namespace that no other process sees
// (unnamed: it lives while the relay's thread and handle do, so the kernel
// removes it, veths and program included, when the process dies, kill -9
// too). Senders transmit skbs into relayIn; the generator's program,
// attached to relayOut in native mode, counts, rewrites and stamps each
// frame as it does for live frames and redirects it through its devmap to
// the device, which receives an xdp_frame by ndo_xdp_xmit, as from live
// frames.
//
// veth runs relayOut's receive (NAPI) on the CPU that transmitted, and the
// receive queue is the transmit queue of relayIn: a sender on CPU c uses
// queue c, so each CPU's frames are relayed on that CPU, counted in its
// entry of the program's state and sent on to the device's queue that CPU
// feeds.
type relay struct {
	calls  chan func()
	done   chan struct{}
	ns     netns.NsHandle
	in     int // ifindex of relayIn in the relay's namespace
	queues int
	xdp    link.Link
}

// newRelay makes the relay's namespace and veth pair (queues queues each
// way, MTU mtu) and attaches prog to relayOut.
func newRelay(prog *program, queues, mtu int) (_ *relay, err error) {
	r := &relay{calls: make(chan func()), done: make(chan struct{}), queues: queues}
	ready := make(chan error, 1)
	go r.thread(ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	err = r.do(func() error {
		// No IPv6: no router solicitation or DAD frame to relay.
		for _, p := range []string{"/proc/sys/net/ipv6/conf/default/disable_ipv6", "/proc/sys/net/ipv6/conf/all/disable_ipv6"} {
			if err := os.WriteFile(p, []byte("1"), 0o644); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("disable IPv6: %w", err)
			}
		}
		veth := &netlink.Veth{
			LinkAttrs: netlink.LinkAttrs{Name: relayIn, MTU: mtu, NumTxQueues: queues, NumRxQueues: queues},
			PeerName:  relayOut, PeerNumTxQueues: uint32(queues), PeerNumRxQueues: uint32(queues),
		}
		if err := netlink.LinkAdd(veth); err != nil {
			return fmt.Errorf("create veth pair %s/%s: %w", relayIn, relayOut, err)
		}
		var out netlink.Link
		for _, name := range []string{relayOut, relayIn} {
			l, err := netlink.LinkByName(name)
			if err != nil {
				return fmt.Errorf("find %s: %w", name, err)
			}
			if l.Attrs().MTU != mtu {
				if err := netlink.LinkSetMTU(l, mtu); err != nil {
					return fmt.Errorf("set the MTU of %s to %d: %w", name, mtu, err)
				}
			}
			if err := netlink.LinkSetUp(l); err != nil {
				return fmt.Errorf("bring %s up: %w", name, err)
			}
			if name == relayOut {
				out = l
			} else {
				r.in = l.Attrs().Index
			}
		}
		// A queueing discipline on relayIn: where veth has one it stops
		// the queue while relayOut's ring is full (Linux 6.17 and later)
		// and the sender retries, rather than drop the frame. Best
		// effort: the senders count what was refused either way.
		_ = netlink.QdiscAdd(&netlink.GenericQdisc{
			QdiscAttrs: netlink.QdiscAttrs{LinkIndex: r.in, Parent: netlink.HANDLE_ROOT, Handle: netlink.MakeHandle(1, 0)},
			QdiscType:  "pfifo",
		})
		l, err := link.AttachXDP(link.XDPOptions{Program: prog.objs.XdpGen, Interface: out.Attrs().Index, Flags: link.XDPDriverMode})
		if err != nil {
			return fmt.Errorf("attach the relay program to %s: %w", relayOut, err)
		}
		r.xdp = l
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("gen: relay: %w", err)
	}
	return r, nil
}

// thread is the relay's own OS thread, moved into a new network namespace:
// it runs r.do's functions there until close, then goes back to the
// namespace it came from and is unlocked. Where going back fails it ends
// locked, so that Go ends the thread rather than reuse it elsewhere; Go
// does not end the process's main thread but parks it, and a parked main
// thread would keep the namespace alive and be what /proc/PID/ns/net names.
func (r *relay) thread(ready chan<- error) {
	runtime.LockOSThread()
	defer close(r.done)
	orig, err := netns.Get()
	if err != nil {
		ready <- fmt.Errorf("gen: relay: the current network namespace: %w", err)
		return
	}
	defer orig.Close()
	ns, err := netns.New()
	if err != nil {
		ready <- fmt.Errorf("gen: relay: new network namespace: %w", err)
		return
	}
	r.ns = ns
	ready <- nil
	for fn := range r.calls {
		fn()
	}
	if netns.Set(orig) == nil {
		runtime.UnlockOSThread()
	}
}

// do runs fn on the relay's thread, in its namespace: sockets opened there
// belong to it.
func (r *relay) do(fn func() error) error {
	res := make(chan error, 1)
	r.calls <- func() { res <- fn() }
	return <-res
}

// close detaches the program, removes the veth pair and lets the namespace
// go.
func (r *relay) close() error {
	var errs []error
	if r.xdp != nil {
		errs = append(errs, r.xdp.Close())
	}
	errs = append(errs, r.do(func() error {
		l, err := netlink.LinkByName(relayIn)
		if err != nil {
			var nf netlink.LinkNotFoundError
			if errors.As(err, &nf) {
				return nil
			}
			return err
		}
		return netlink.LinkDel(l)
	}))
	close(r.calls)
	<-r.done
	if r.ns.IsOpen() {
		errs = append(errs, r.ns.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("gen: relay: %w", err)
	}
	return nil
}
