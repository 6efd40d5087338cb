// Package kfeat finds out, by trying each, which kernel features xdpeng
// uses the running kernel grants: a kernel's version says little where
// features are backported, filtered by a security policy or refused by a
// hardened build. Each probe is a real use, as small as it gets: a program
// loaded or run once, a socket opened, a link attached to the loopback
// device of a network namespace of the probe's own (which goes with the
// probing thread). Nothing is left behind.
package kfeat

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// Feature is one kernel feature and the kernel's answer to trying it.
type Feature struct {
	// Name names the feature as the kernel's documentation does.
	Name string `json:"name"`
	// Tried says what the probe did.
	Tried string `json:"tried"`
	// Err is the kernel's answer when it refused; nil when it granted.
	Err error `json:"-"`
	// Needs says which of xdpeng's commands and options use it.
	Needs string `json:"needs"`
	// Instead says what works without it.
	Instead string `json:"instead"`
}

// Granted reports whether the kernel granted the feature.
func (f Feature) Granted() bool { return f.Err == nil }

// The features, by name.
const (
	LiveFrames = "live frames"
	AFXDP      = "AF_XDP sockets"
	TestRun    = "BPF_PROG_TEST_RUN"
	AdjustMeta = "bpf_xdp_adjust_meta"
	RxKfuncs   = "XDP RX metadata kfuncs"
	XDPLink    = "bpf_link for XDP"
	TCX        = "TCX (bpf_link for tc)"
	Frags      = "multi-buffer XDP programs"
	BusyPoll   = "busy polling"
	// ThreadedBusyPoll is a NAPI's thread polling it without stopping.
	ThreadedBusyPoll = "threaded busy polling"
	Devmap           = "devmap redirect"
)

var (
	once  sync.Once
	found []Feature
)

// Probe tries every feature once per process and returns the answers, in
// a fixed order. It needs CAP_BPF and CAP_NET_ADMIN for an answer that
// means anything: without them every BPF probe reads as refused.
func Probe() []Feature {
	once.Do(func() { found = probeAll() })
	return append([]Feature(nil), found...)
}

// Lookup returns the named feature's answer.
func Lookup(name string) (Feature, bool) {
	for _, f := range Probe() {
		if f.Name == name {
			return f, true
		}
	}
	return Feature{}, false
}

// Refused is the one line a command prints before it starts without a
// feature it would use: the feature, the kernel's answer and what it uses
// instead.
func (f Feature) Refused() string {
	return fmt.Sprintf("%s refused by this kernel (%v): %s", f.Name, f.Err, f.Instead)
}

func probeAll() []Feature {
	fs := []Feature{
		{Name: LiveFrames, Tried: "BPF_PROG_TEST_RUN with BPF_F_TEST_XDP_LIVE_FRAMES, one frame dropped",
			Needs: "gen --method live (the fastest sender; auto picks it where granted)", Instead: "gen sends with --method xsk or packet through a veth relay (auto does)",
			Err: tryLiveFrames()},
		{Name: AFXDP, Tried: "socket(AF_XDP)", Needs: "every AF_XDP command: rxdrop, count, l2fwd, fwd, txonly, selftest; gen --method xsk",
			Instead: "the in-kernel paths (kern, compare's xdp-*/tc-* paths) and gen --method packet", Err: tryAFXDP()},
		{Name: TestRun, Tried: "BPF_PROG_TEST_RUN of an XDP program, once", Needs: "progbench",
			Instead: "none for progbench: compare measures the programs in place", Err: tryTestRun()},
		{Name: AdjustMeta, Tried: "load an XDP program that calls bpf_xdp_adjust_meta",
			Needs:   "receive metadata: engine.Config.RxMetadata, count --by rxhash, selftest XDP_METADATA_COPY*",
			Instead: "none here: count by port (--by port); everything else works", Err: bpf.CheckAdjustMeta()},
		{Name: RxKfuncs, Tried: "look up bpf_xdp_metadata_rx_hash, _rx_timestamp and _rx_vlan_tag in the kernel's BTF",
			Needs: "receive metadata (RxHash, RxTimestamp, RxVLAN), count --by rxhash", Instead: "count by port (--by port)",
			Err: bpf.CheckKfuncs(bpf.KfuncRxHash, bpf.KfuncRxTimestamp, bpf.KfuncRxVLANTag)},
		{Name: Frags, Tried: "load an XDP program with BPF_F_XDP_HAS_FRAGS", Needs: "-F (multi-buffer frames), selftest's 9K tests",
			Instead: "frames that fit one UMEM frame (an MTU up to about 3.5 KB with 4 KiB frames)", Err: tryFrags()},
		{Name: BusyPoll, Tried: "SO_PREFER_BUSY_POLL and SO_BUSY_POLL_BUDGET on a UDP socket", Needs: "--busy-poll",
			Instead: "the adaptive wait (the default) or -p (poll)", Err: tryBusyPoll()},
		{Name: ThreadedBusyPoll, Tried: "netdev napi-set threaded busy-poll on a NAPI ID no NAPI has (a kernel without the mode refuses the value before it looks)",
			Needs: "--threaded-busy-poll", Instead: "--busy-poll (the worker drives the NAPI) or the adaptive wait", Err: netdev.ProbeThreadedBusyPoll()},
	}
	var xdpErr, tcxErr, devmapErr error
	inPrivateNetns(func() {
		xdpErr, tcxErr, devmapErr = tryLinks()
	}, func(err error) { xdpErr, tcxErr, devmapErr = err, err, err })
	fs = append(fs,
		Feature{Name: XDPLink, Tried: "attach an XDP program to lo (generic) with a bpf_link, in a network namespace of the probe's own",
			Needs: "every XDP attachment, removed by the kernel when xdpeng dies", Instead: "netlink attachment, detached on every exit path (but not after kill -9)", Err: xdpErr},
		Feature{Name: TCX, Tried: "attach a tc ingress program to lo with TCX, in a network namespace of the probe's own",
			Needs: "kern drop --hook tc, compare's tc-drop", Instead: "clsact through netlink (done by itself)", Err: tcxErr},
		Feature{Name: Devmap, Tried: "create a devmap and put lo in it",
			Needs: "kern redirect, gen --method xsk/packet (the relay)", Instead: "gen --method live where granted", Err: devmapErr},
	)
	return fs
}

func xdpProgram(flags uint32) (*ebpf.Program, error) {
	return ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:         ebpf.XDP,
		License:      "Dual BSD/GPL",
		Flags:        flags,
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()}, // XDP_PASS
	})
}

func tryLiveFrames() error {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:         ebpf.XDP,
		License:      "Dual BSD/GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 1), asm.Return()}, // XDP_DROP
	})
	if err != nil {
		return err
	}
	defer prog.Close()
	_, err = prog.Run(&ebpf.RunOptions{Data: make([]byte, 64), Repeat: 1, Flags: unix.BPF_F_TEST_XDP_LIVE_FRAMES})
	return err
}

func tryTestRun() error {
	prog, err := xdpProgram(0)
	if err != nil {
		return err
	}
	defer prog.Close()
	_, err = prog.Run(&ebpf.RunOptions{Data: make([]byte, 64), Repeat: 1})
	return err
}

func tryAFXDP() error {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket(AF_XDP): %w", err)
	}
	return unix.Close(fd)
}

func tryFrags() error {
	prog, err := xdpProgram(unix.BPF_F_XDP_HAS_FRAGS)
	if err != nil {
		return err
	}
	return prog.Close()
}

func tryBusyPoll() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("UDP socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PREFER_BUSY_POLL, 1); err != nil {
		return fmt.Errorf("SO_PREFER_BUSY_POLL: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_BUSY_POLL_BUDGET, 64); err != nil {
		return fmt.Errorf("SO_BUSY_POLL_BUDGET: %w", err)
	}
	return nil
}

// tryLinks runs in a network namespace of its own, whose lo is the probes'
// device.
func tryLinks() (xdpErr, tcxErr, devmapErr error) {
	const lo = 1 // lo's index in every network namespace
	prog, err := xdpProgram(0)
	if err != nil {
		return err, err, err
	}
	defer prog.Close()
	if l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: lo, Flags: link.XDPGenericMode}); err != nil {
		xdpErr = err
	} else {
		l.Close()
	}
	tc, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:         ebpf.SchedCLS,
		License:      "Dual BSD/GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, -1), asm.Return()}, // TCX_NEXT
	})
	if err != nil {
		tcxErr = err
	} else {
		defer tc.Close()
		if l, err := link.AttachTCX(link.TCXOptions{Program: tc, Interface: lo, Attach: ebpf.AttachTCXIngress}); err != nil {
			tcxErr = err
		} else {
			l.Close()
		}
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.DevMap, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		return xdpErr, tcxErr, err
	}
	defer m.Close()
	if err := m.Put(uint32(0), uint32(lo)); err != nil {
		devmapErr = err
	}
	return xdpErr, tcxErr, devmapErr
}

// inPrivateNetns runs fn on a thread moved into a new network namespace,
// then moves the thread back, and the namespace goes with its last user.
// failed gets the error when there is no such namespace.
func inPrivateNetns(fn func(), failed func(error)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The thread goes back to its namespace when done; where that
		// fails it stays locked and Go ends it (or parks it, the main
		// thread) with this goroutine.
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			failed(fmt.Errorf("the current network namespace: %w", err))
			return
		}
		defer orig.Close()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			failed(fmt.Errorf("a network namespace to probe in: %w", err))
			return
		}
		fn()
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
	}()
	<-done
}
