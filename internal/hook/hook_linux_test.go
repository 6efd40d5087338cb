package hook

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/internal/testutil/hooktest"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// helperEnv makes the test binary, re-executed, attach a program and sleep
// (see helperAttach) instead of running tests.
const helperEnv = "XDPENG_HOOK_HELPER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(helperEnv); spec != "" {
		if err := helperAttach(spec); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(privtest.Main(m))
}

// helperAttach enters namespace ns, attaches drop (XDP, native) or tc-drop
// to ifindex, says "attached" on stdout and sleeps until killed.
// spec is "ns,ifindex,xdp|tc".
func helperAttach(spec string) error {
	parts := strings.Split(spec, ",")
	if len(parts) != 3 {
		return fmt.Errorf("bad spec %q", spec)
	}
	ifindex, err := strconv.Atoi(parts[1])
	if err != nil {
		return err
	}
	runtime.LockOSThread()
	ns, err := netns.GetFromName(parts[0])
	if err != nil {
		return err
	}
	if err := netns.Set(ns); err != nil {
		return err
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return err
	}
	kind := bpf.Drop
	if parts[2] == "tc" {
		kind = bpf.TCDrop
	}
	k, err := bpf.LoadKern(kind, bpf.KernOptions{})
	if err != nil {
		return err
	}
	if kind == bpf.TCDrop {
		_, err = AttachTCIngress(k.Program, ifindex)
	} else {
		_, err = AttachXDP(k.Program, ifindex, Native, netdev.ReplaceNone)
	}
	if err != nil {
		return err
	}
	fmt.Println("attached")
	time.Sleep(time.Minute) // bounded, in case the parent dies without killing us
	return nil
}

func loadDrop(t *testing.T) *bpf.KernObjects {
	t.Helper()
	k, err := bpf.LoadKern(bpf.Drop, bpf.KernOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

func progID(t *testing.T, p *ebpf.Program) uint32 {
	t.Helper()
	info, err := p.Info()
	if err != nil {
		t.Fatal(err)
	}
	id, ok := info.ID()
	if !ok {
		t.Fatal("the kernel gave no program ID")
	}
	return uint32(id)
}

func TestAttachXDPCloseLeavesNothing(t *testing.T) {
	privtest.Root(t)
	ns := newNS(t)
	a, _ := ns.veth(t, 1)
	k := loadDrop(t)
	for _, mode := range []XDPMode{Native, Generic} {
		t.Run(mode.String(), func(t *testing.T) {
			var c interface{ Close() error }
			ns.mustDo(t, func() (err error) {
				c, err = AttachXDP(k.Program, a.Index, mode, netdev.ReplaceNone)
				return err
			})
			id, got := ns.xdpState(t, a.Index)
			if id != progID(t, k.Program) || got != mode.String() {
				t.Fatalf("attached: prog %d mode %q, want prog %d mode %q", id, got, progID(t, k.Program), mode)
			}
			ns.mustDo(t, c.Close)
			if id, got := ns.xdpState(t, a.Index); id != 0 {
				t.Fatalf("after Close: prog %d (%s) still attached", id, got)
			}
			if err := c.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
		})
	}
}

func TestAttachXDPRefusesAndForcesNetlinkProgram(t *testing.T) {
	privtest.Root(t)
	ns := newNS(t)
	a, _ := ns.veth(t, 1)
	theirs, ours := loadDrop(t), loadDrop(t)

	// "Someone else" attaches the way ip link does.
	ns.mustDo(t, func() error {
		l, err := netlink.LinkByIndex(a.Index)
		if err != nil {
			return err
		}
		return netlink.LinkSetXdpFdWithFlags(l, theirs.Program.FD(), unix.XDP_FLAGS_DRV_MODE)
	})
	t.Cleanup(func() {
		err := ns.do(func() error {
			l, err := netlink.LinkByIndex(a.Index)
			if err != nil {
				return err
			}
			return netlink.LinkSetXdpFdWithFlags(l, -1, unix.XDP_FLAGS_DRV_MODE)
		})
		if err != nil {
			t.Errorf("detach their program: %v", err)
		}
	})

	for _, mode := range []XDPMode{Native, Generic} {
		err := ns.do(func() error {
			c, err := AttachXDP(ours.Program, a.Index, mode, netdev.ReplaceNone)
			if err == nil {
				c.Close()
			}
			return err
		})
		var fe *netdev.ForeignXDPError
		if !errors.As(err, &fe) || fe.Held() || fe.ProgID != progID(t, theirs.Program) || fe.Interface != a.Name {
			t.Errorf("%s mode without force: error %#v, want a *netdev.ForeignXDPError naming %s and program %d, not held",
				mode, fe, a.Name, progID(t, theirs.Program))
		}
	}

	var c interface{ Close() error }
	ns.mustDo(t, func() (err error) {
		c, err = AttachXDP(ours.Program, a.Index, Generic, netdev.ReplaceUnused)
		return err
	})
	if id, mode := ns.xdpState(t, a.Index); id != progID(t, ours.Program) || mode != "generic" {
		t.Fatalf("after force: prog %d (%s), want ours %d (generic)", id, mode, progID(t, ours.Program))
	}
	ns.mustDo(t, c.Close)
	if id, _ := ns.xdpState(t, a.Index); id != 0 {
		t.Fatalf("after Close: prog %d still attached", id)
	}
}

func TestAttachXDPRefusesForeignLinkEvenWithForce(t *testing.T) {
	privtest.Root(t)
	ns := newNS(t)
	a, _ := ns.veth(t, 1)
	theirs, ours := loadDrop(t), loadDrop(t)
	var l link.Link
	ns.mustDo(t, func() (err error) {
		l, err = link.AttachXDP(link.XDPOptions{Program: theirs.Program, Interface: a.Index, Flags: link.XDPDriverMode})
		return err
	})
	defer l.Close()
	err := ns.do(func() error {
		c, err := AttachXDP(ours.Program, a.Index, Native, netdev.ReplaceUnused)
		if err == nil {
			c.Close()
		}
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "through bpf_link id") {
		t.Fatalf("got %v, want a refusal naming the bpf_link", err)
	}
	var fe *netdev.ForeignXDPError
	if !errors.As(err, &fe) || !fe.Held() || fe.ProgID != progID(t, theirs.Program) || fe.LinkID == 0 {
		t.Errorf("error %#v, want a *netdev.ForeignXDPError of program %d held by a bpf_link", fe, progID(t, theirs.Program))
	}
	// This process holds the link, and /proc shows it.
	if fe != nil && fe.OwnerPID != os.Getpid() {
		t.Errorf("owner pid %d (%s), want this process, %d", fe.OwnerPID, fe.OwnerComm, os.Getpid())
	}
	t.Log(err)
	if id, _ := ns.xdpState(t, a.Index); id != progID(t, theirs.Program) {
		t.Fatalf("their program was replaced: now %d", id)
	}
}

func TestAttachXDPNetlinkFallbackCloses(t *testing.T) {
	privtest.Root(t)
	ns := newNS(t)
	a, _ := ns.veth(t, 1)
	k := loadDrop(t)
	var c interface{ Close() error }
	ns.mustDo(t, func() error {
		l, err := netlink.LinkByIndex(a.Index)
		if err != nil {
			return err
		}
		c, err = attachXDPNetlink(k.Program, l, Native)
		return err
	})
	if id, mode := ns.xdpState(t, a.Index); id != progID(t, k.Program) || mode != "native" {
		t.Fatalf("attached: %d (%s)", id, mode)
	}
	// Our own netlink attachment is "someone else's" to a second caller.
	err := ns.do(func() error { _, err := AttachXDP(k.Program, a.Index, Native, netdev.ReplaceNone); return err })
	if err == nil || !strings.Contains(err.Error(), "already has XDP program") {
		t.Fatalf("second attach: got %v, want refusal", err)
	}
	ns.mustDo(t, c.Close)
	if id, _ := ns.xdpState(t, a.Index); id != 0 {
		t.Fatalf("after Close: prog %d still attached", id)
	}
}

func TestAttachXDPBadInterface(t *testing.T) {
	privtest.Root(t)
	ns := newNS(t)
	k := loadDrop(t)
	err := ns.do(func() error { _, err := AttachXDP(k.Program, 4242, Native, netdev.ReplaceNone); return err })
	if err == nil || !strings.Contains(err.Error(), "interface index 4242") {
		t.Fatalf("got %v", err)
	}
}

// TestKill9LeavesNothing attaches from a child process, kills it with
// SIGKILL (no chance to clean up) and checks the kernel released the hook.
func TestKill9LeavesNothing(t *testing.T) {
	privtest.Root(t)
	for _, hook := range []string{"xdp", "tc"} {
		t.Run(hook, func(t *testing.T) {
			ns := newNS(t)
			a, _ := ns.veth(t, 1)
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%d,%s", helperEnv, ns.name, a.Index, hook))
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil || line != "attached\n" {
				t.Fatalf("helper: %q, %v", line, err)
			}
			if n := ns.hookCount(t, a.Index, hook); n != 1 {
				t.Fatalf("helper attached, but %d %s programs seen", n, hook)
			}
			if err := cmd.Process.Signal(unix.SIGKILL); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			// The link's last reference goes with the process's files; the
			// release may trail the exit a little.
			deadline := time.Now().Add(5 * time.Second)
			for ns.hookCount(t, a.Index, hook) != 0 {
				if time.Now().After(deadline) {
					t.Fatalf("%s program still attached 5s after kill -9", hook)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// hookCount is how many programs are on ifindex's XDP or tc hooks (TCX
// and classic filters); a probe that fails fails the test.
func (n *testNS) hookCount(t *testing.T, ifindex int, hook string) int {
	t.Helper()
	var h hooktest.Hooks
	n.mustDo(t, func() (err error) {
		h, err = hooktest.ReadHooks(ifindex)
		return err
	})
	if hook == "xdp" {
		if h.XDPProg != 0 {
			return 1
		}
		return 0
	}
	return len(h.TCXIngress) + len(h.TCXEgress) + h.TCFilters
}

func TestAttachTCIngress(t *testing.T) {
	privtest.Root(t)
	ns := newNS(t)
	a, _ := ns.veth(t, 1)
	k, err := bpf.LoadKern(bpf.TCDrop, bpf.KernOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	k2, err := bpf.LoadKern(bpf.TCDrop, bpf.KernOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer k2.Close()

	t.Run("tcx", func(t *testing.T) {
		var c1, c2 interface{ Close() error }
		ns.mustDo(t, func() (err error) {
			if c1, err = AttachTCIngress(k.Program, a.Index); err != nil {
				return err
			}
			t.Cleanup(func() { closeIn(t, ns, c1) })
			// TCX keeps several programs: a second attach adds, not
			// replaces (the same program twice is EEXIST).
			c2, err = AttachTCIngress(k2.Program, a.Index)
			if err == nil {
				t.Cleanup(func() { closeIn(t, ns, c2) })
			}
			return err
		})
		if n := ns.hookCount(t, a.Index, "tc"); n != 2 {
			t.Fatalf("%d tc programs attached, want 2", n)
		}
		ns.mustDo(t, c1.Close)
		ns.mustDo(t, c2.Close)
		if n := ns.hookCount(t, a.Index, "tc"); n != 0 {
			t.Fatalf("%d tc programs left after Close", n)
		}
	})

	t.Run("netlink", func(t *testing.T) {
		var c interface{ Close() error }
		ns.mustDo(t, func() error {
			l, err := netlink.LinkByIndex(a.Index)
			if err != nil {
				return err
			}
			c, err = attachTCNetlink(k.Program, l)
			return err
		})
		if n := ns.hookCount(t, a.Index, "tc"); n != 1 {
			t.Fatalf("%d tc filters attached, want 1", n)
		}
		if !ns.hasClsact(t, a.Index) {
			t.Fatal("no clsact qdisc after netlink attach")
		}
		ns.mustDo(t, c.Close)
		if n := ns.hookCount(t, a.Index, "tc"); n != 0 {
			t.Fatalf("%d tc filters left after Close", n)
		}
		if ns.hasClsact(t, a.Index) {
			t.Fatal("the clsact qdisc we created is still there")
		}
	})

	t.Run("netlink-keeps-existing-qdisc", func(t *testing.T) {
		ns.mustDo(t, func() error { return netlink.QdiscAdd(clsact(a.Index)) })
		var c interface{ Close() error }
		ns.mustDo(t, func() error {
			l, err := netlink.LinkByIndex(a.Index)
			if err != nil {
				return err
			}
			c, err = attachTCNetlink(k.Program, l)
			return err
		})
		ns.mustDo(t, c.Close)
		if !ns.hasClsact(t, a.Index) {
			t.Fatal("Close removed a clsact qdisc it did not create")
		}
		ns.mustDo(t, func() error { return netlink.QdiscDel(clsact(a.Index)) })
	})
}

// closeIn closes c inside ns at the end of a test (again, if the test
// closed it already: a second Close returns the first one's result).
func closeIn(t *testing.T, ns *testNS, c interface{ Close() error }) {
	t.Helper()
	if err := ns.do(c.Close); err != nil {
		t.Errorf("detach at cleanup: %v", err)
	}
}

func (n *testNS) hasClsact(t *testing.T, ifindex int) bool {
	t.Helper()
	found := false
	n.mustDo(t, func() error {
		l, err := netlink.LinkByIndex(ifindex)
		if err != nil {
			return err
		}
		qs, err := netlink.QdiscList(l)
		for _, q := range qs {
			if q.Type() == "clsact" {
				found = true
			}
		}
		return err
	})
	return found
}
