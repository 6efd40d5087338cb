package hook

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"runtime"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/xdpeng/xdpeng/internal/netdev"
)

// The tests make their own throwaway namespace with veth pairs (unique names,
// removed in t.Cleanup), so they run beside anything else on the machine.

// testNS is a named network namespace for one test.
type testNS struct {
	name string
	ns   netns.NsHandle
}

func randomSuffix() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// newNS creates a network namespace, deleted (with its veths) at cleanup.
func newNS(t *testing.T) *testNS {
	t.Helper()
	name := "xdpeng-hook-" + randomSuffix()
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatalf("get current netns: %v", err)
	}
	// NewNamed moves this thread into the new namespace; move back.
	ns, err := netns.NewNamed(name)
	if serr := netns.Set(orig); serr != nil {
		t.Fatalf("return to original netns: %v", serr) // thread stays locked: it dies with the goroutine
	}
	orig.Close()
	runtime.UnlockOSThread()
	if err != nil {
		t.Fatalf("create netns %s: %v", name, err)
	}
	n := &testNS{name: name, ns: ns}
	// No IPv6 on the veths: their neighbour discovery would add frames
	// to the exact counts the tests check.
	n.mustDo(t, func() error {
		for _, conf := range []string{"all", "default"} {
			path := "/proc/sys/net/ipv6/conf/" + conf + "/disable_ipv6"
			if err := os.WriteFile(path, []byte("1"), 0); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("disable IPv6 in %s: %w", name, err)
			}
		}
		return nil
	})
	t.Cleanup(func() {
		ns.Close()
		if err := netns.DeleteNamed(name); err != nil {
			t.Errorf("delete netns %s: %v", name, err)
		}
	})
	return n
}

// do runs fn on a locked OS thread inside the namespace. Everything that
// names an interface by index (netlink, bpf_link, BPF_PROG_TEST_RUN's
// redirect) uses the calling thread's namespace.
func (n *testNS) do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		if err := netns.Set(n.ns); err != nil {
			errc <- fmt.Errorf("enter netns %s: %w", n.name, err)
			return
		}
		err = fn()
		if serr := netns.Set(orig); serr != nil {
			// Leave the thread locked: Go ends it with the goroutine
			// rather than reuse it in the wrong namespace.
			errc <- fmt.Errorf("leave netns %s: %w", n.name, serr)
			return
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	return <-errc
}

func (n *testNS) mustDo(t *testing.T, fn func() error) {
	t.Helper()
	if err := n.do(fn); err != nil {
		t.Fatal(err)
	}
}

// vethEnd is one end of a veth pair in a testNS.
type vethEnd struct {
	Name  string
	Index int
	MAC   net.HardwareAddr
}

// veth creates a veth pair with queues rx/tx queues per end, both ends up.
func (n *testNS) veth(t *testing.T, queues int) (a, b vethEnd) {
	t.Helper()
	suffix := randomSuffix()[:6]
	a.Name, b.Name = "xa"+suffix, "xb"+suffix
	n.mustDo(t, func() error {
		v := &netlink.Veth{
			LinkAttrs: netlink.LinkAttrs{Name: a.Name, NumTxQueues: queues, NumRxQueues: queues},
			PeerName:  b.Name,
		}
		if err := netlink.LinkAdd(v); err != nil {
			return fmt.Errorf("add veth %s/%s: %w", a.Name, b.Name, err)
		}
		for _, e := range []*vethEnd{&a, &b} {
			l, err := netlink.LinkByName(e.Name)
			if err != nil {
				return err
			}
			if err := netlink.LinkSetUp(l); err != nil {
				return fmt.Errorf("set %s up: %w", e.Name, err)
			}
			e.Index, e.MAC = l.Attrs().Index, l.Attrs().HardwareAddr
		}
		return nil
	})
	return a, b
}

// xdpState is what netlink says is attached to ifindex in n.
func (n *testNS) xdpState(t *testing.T, ifindex int) (progID uint32, mode string) {
	t.Helper()
	n.mustDo(t, func() error {
		l, err := netlink.LinkByIndex(ifindex)
		if err != nil {
			return err
		}
		if x := l.Attrs().Xdp; x != nil && x.Attached {
			progID, mode = x.ProgId, netdev.XDPModeName(x.AttachMode)
		}
		return nil
	})
	return progID, mode
}
