//go:build linux

package xdperr

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/safchain/ethtool"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/hook"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// helperEnv makes the test binary, re-executed, start a Watcher, print its
// link and program ids and sleep (see helperWatch) instead of running tests.
const helperEnv = "XDPENG_XDPERR_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		if err := helperWatch(); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(privtest.Main(m))
}

func helperWatch() error {
	w, err := Start()
	if err != nil {
		return err
	}
	ids, err := attachedIDs(w)
	if err != nil {
		return err
	}
	fmt.Println(ids)
	time.Sleep(time.Minute) // bounded, in case the parent dies without killing us
	return nil
}

// attachedIDs lists "link:program" id pairs of w's links.
func attachedIDs(w *Watcher) (string, error) {
	var pairs []string
	for _, l := range w.links {
		info, err := l.Info()
		if err != nil {
			return "", err
		}
		pairs = append(pairs, fmt.Sprintf("%d:%d", info.ID, info.Program))
	}
	return strings.Join(pairs, " "), nil
}

// linkAlive reports whether link id still exists and holds program prog
// (ids are reused only after the id space wraps, but check the program too).
func linkAlive(id link.ID, prog ebpf.ProgramID) bool {
	l, err := link.NewFromID(id)
	if err != nil {
		return false
	}
	defer l.Close()
	info, err := l.Info()
	return err == nil && info.Program == prog
}

func start(t *testing.T) *Watcher {
	t.Helper()
	privtest.Root(t)
	w, err := Start()
	if errors.Is(err, ErrNoBTF) {
		privtest.Unsupported(t, "cannot count xdp tracepoints here: %v", err)
	}
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	t.Logf("attached %v; missing %v", w.Attached(), w.Missing())
	return w
}

// The tracepoint names here and in bpf/xdperr.c's loader are the same list.
func TestTracepointList(t *testing.T) {
	var names []string
	for _, tp := range tracepoints {
		names = append(names, tp.name)
	}
	if !slices.Equal(names, bpf.XDPErrTracepoints) {
		t.Errorf("xdperr checks %v, bpf loads %v", names, bpf.XDPErrTracepoints)
	}
}

// scenario is one way to lose (or not lose) the generator's frames on the
// DUT end of link 0, with link 1 as a redirect target.
type scenario struct {
	name string
	// setup returns the program to attach to dut0; it may change the bed
	// (it is the test's own).
	setup func(t *testing.T, bed *testbed.Bed) *ebpf.Program
	// want checks what the tracepoints counted on dut0 for n frames.
	want func(t *testing.T, got Snapshot, d dut, n uint64)
}

// dut is what a scenario's check needs to know about the DUT end.
type dut struct {
	cookie     uint64
	ifindex    int
	progID     uint32
	to         int    // dut1's ifindex
	vethDrops  uint64 // dut0's rx_queue_N_drops during the run
	programSaw uint64 // frames the kern program counted, 0 for others
}

// TestLosses sends n frames into dut0 for each scenario and checks the
// counts of the tracepoints exactly.
func TestLosses(t *testing.T) {
	const n = 5000
	var devmapID uint32
	loadKern := func(t *testing.T, p bpf.KernProgram) *bpf.KernObjects {
		k, err := bpf.LoadKern(p, bpf.KernOptions{Counters: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { k.Close() })
		return k
	}
	var kern *bpf.KernObjects
	for _, sc := range []scenario{{
		// Every frame is a redirect error ENETDOWN, of the redirecting
		// program, on dut0, towards dut1; veth counts each as a drop.
		name: "redirect to a device that is down",
		setup: func(t *testing.T, bed *testbed.Bed) *ebpf.Program {
			kern = loadKern(t, bpf.Redirect)
			_, devmapID = ids(t, kern.Program, kern.TxPorts)
			err := bed.InDUT(func() error {
				if err := kern.SetPorts(bed.Links[1].DUTIndex); err != nil {
					return err
				}
				return setLink(bed.Links[1].DUT, false)
			})
			if err != nil {
				t.Fatal(err)
			}
			return kern.Program
		},
		want: func(t *testing.T, got Snapshot, d dut, n uint64) {
			want := []RedirectError{{
				Netns: d.cookie, Ifindex: d.ifindex, ProgID: d.progID, Errno: unix.ENETDOWN,
				ToIfindex: d.to, MapType: ebpf.DevMap, MapID: devmapID, Frames: n,
			}}
			if diff := cmp.Diff(want, got.RedirectErrors); diff != "" {
				t.Errorf("redirect errors (-want +got):\n%s", diff)
			}
			wantReasons(t, got, Reason{Tracepoint: "xdp_redirect_err", Detail: "ENETDOWN", Frames: n})
			if d.vethDrops != n || d.programSaw != n {
				t.Errorf("the program saw %d frames and veth dropped %d, want %d each", d.programSaw, d.vethDrops, n)
			}
		},
	}, {
		// Nothing lost: the devmap flushes every frame to dut1.
		name: "redirect delivered",
		setup: func(t *testing.T, bed *testbed.Bed) *ebpf.Program {
			kern = loadKern(t, bpf.Redirect)
			if err := bed.InDUT(func() error { return kern.SetPorts(bed.Links[1].DUTIndex) }); err != nil {
				t.Fatal(err)
			}
			return kern.Program
		},
		want: func(t *testing.T, got Snapshot, d dut, n uint64) {
			wantReasons(t, got)
			var sent uint64
			for _, x := range got.DevmapXmit {
				if x.ToIfindex != d.to || x.Errno != 0 || x.Drops != 0 {
					t.Errorf("devmap flush %+v, want to ifindex %d without error or drop", x, d.to)
				}
				sent += x.Sent
			}
			if sent != n {
				t.Errorf("devmap flushes sent %d frames, want %d (%+v)", sent, n, got.DevmapXmit)
			}
		},
	}, {
		// A program returning XDP_ABORTED: one exception per frame.
		name: "aborted",
		setup: func(t *testing.T, bed *testbed.Bed) *ebpf.Program {
			kern = nil
			p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
				Type:         ebpf.XDP,
				Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, int32(Aborted)), asm.Return()},
				License:      "GPL",
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			return p
		},
		want: func(t *testing.T, got Snapshot, d dut, n uint64) {
			want := []Exception{{Netns: d.cookie, Ifindex: d.ifindex, ProgID: d.progID, Action: Aborted, Frames: n}}
			if diff := cmp.Diff(want, got.Exceptions); diff != "" {
				t.Errorf("exceptions (-want +got):\n%s", diff)
			}
			wantReasons(t, got, Reason{Tracepoint: "xdp_exception", Detail: "XDP_ABORTED", Frames: n})
		},
	}, {
		// XDP_TX back to gen0, which has neither GRO nor an XDP program, so
		// no NAPI to take the frames: veth's flushes drop them all (ENXIO).
		name: "XDP_TX to a peer without NAPI",
		setup: func(t *testing.T, bed *testbed.Bed) *ebpf.Program {
			kern = loadKern(t, bpf.TX)
			err := bed.InGen(func() error {
				et, err := ethtool.NewEthtool()
				if err != nil {
					return err
				}
				defer et.Close()
				return et.Change(bed.Links[0].Gen, map[string]bool{"rx-gro": false})
			})
			if err != nil {
				t.Fatalf("turn GRO off on %s: %v", bed.Links[0].Gen, err)
			}
			return kern.Program
		},
		want: func(t *testing.T, got Snapshot, d dut, n uint64) {
			var drops uint64
			for _, x := range got.BulkTx {
				if x.Ifindex != d.ifindex || x.Errno != unix.ENXIO || x.Sent != 0 {
					t.Errorf("XDP_TX flush %+v, want from ifindex %d, nothing sent, ENXIO", x, d.ifindex)
				}
				drops += x.Drops
			}
			if drops != n {
				t.Errorf("XDP_TX flushes dropped %d frames, want %d (%+v)", drops, n, got.BulkTx)
			}
			wantReasons(t, got, Reason{Tracepoint: "xdp_bulk_tx", Detail: "ENXIO", Frames: n})
		},
	}} {
		t.Run(sc.name, func(t *testing.T) {
			bed := testbedtest.New(t, 1, 2)
			w := start(t)
			in := bed.Links[0]
			prog := sc.setup(t, bed)
			var cookie uint64
			err := bed.InDUT(func() error {
				c, err := hook.AttachXDP(prog, in.DUTIndex, hook.Native, netdev.ReplaceNone)
				if err != nil {
					return err
				}
				t.Cleanup(func() { bed.InDUT(c.Close) })
				cookie, err = NetnsCookie()
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range w.Missing() {
				t.Logf("not counted here: %v", m)
			}
			pi, err := prog.Info()
			if err != nil {
				t.Fatal(err)
			}
			progID, _ := pi.ID()

			before, err := w.Read()
			if err != nil {
				t.Fatal(err)
			}
			vethBefore := vethCounters(t, bed.InDUT, in.DUT)
			st := send(t, bed.InGen, gen.Config{
				Ifindex: in.GenIndex, Count: n, Threads: 1,
				Frame: packet.UDPConfig{
					SrcMAC: in.GenMAC, DstMAC: in.DUTMAC,
					SrcIP: netip.MustParseAddr(in.GenIP.String()), DstIP: netip.MustParseAddr(in.DUTIP.String()),
					SrcPort: 1234, DstPort: 9, Size: 64,
				},
			})
			if st.Sent != n {
				t.Fatalf("generator sent %d, want %d", st.Sent, n)
			}
			// NAPI may still be running the program when the generator
			// returns: wait until veth has counted every frame.
			var veth netdev.VethQueue
			for deadline := time.Now().Add(5 * time.Second); ; {
				veth = vethCounters(t, bed.InDUT, in.DUT)
				if veth.RxPackets-vethBefore.RxPackets >= n || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if got := veth.RxPackets - vethBefore.RxPackets; got != n {
				t.Fatalf("%s received %d frames, want %d", in.DUT, got, n)
			}
			now, err := w.Read()
			if err != nil {
				t.Fatal(err)
			}
			got := now.Sub(before).ForDevice(cookie, in.DUTIndex)
			d := dut{cookie: cookie, ifindex: in.DUTIndex, progID: uint32(progID), to: bed.Links[1].DUTIndex,
				vethDrops: veth.RxDrops - vethBefore.RxDrops}
			if kern != nil {
				stats, err := kern.ReadStats()
				if err != nil {
					t.Fatal(err)
				}
				d.programSaw, _ = stats.Total()
			}
			sc.want(t, got, d, n)
			if t.Failed() {
				t.Logf("counted on %s: %+v", in.DUT, got)
			}
		})
	}
}

// setLink sets dev (in the calling thread's namespace) up or down.
func setLink(dev string, up bool) error {
	l, err := netlink.LinkByName(dev)
	if err == nil {
		if up {
			err = netlink.LinkSetUp(l)
		} else {
			err = netlink.LinkSetDown(l)
		}
	}
	if err != nil {
		return fmt.Errorf("set %s up=%v: %w", dev, up, err)
	}
	return nil
}

// wantReasons checks that got's reasons are exactly want.
func wantReasons(t *testing.T, got Snapshot, want ...Reason) {
	t.Helper()
	if diff := cmp.Diff(want, got.Reasons(), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("reasons (-want +got):\n%s", diff)
	}
}

// TestCloseDetaches checks that Close leaves no link behind, and that a
// process killed with SIGKILL leaves none either.
func TestCloseDetaches(t *testing.T) {
	w := start(t)
	ids, err := attachedIDs(w)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range parseIDs(t, ids) {
		if linkAlive(p.link, p.prog) {
			t.Errorf("link %d (program %d) still exists after Close", p.link, p.prog)
		}
	}

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("helper: %q, %v", line, err)
	}
	pairs := parseIDs(t, strings.TrimSpace(line))
	for _, p := range pairs {
		if !linkAlive(p.link, p.prog) {
			t.Fatalf("helper's link %d not found while it runs", p.link)
		}
	}
	if err := cmd.Process.Signal(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	// The links go with the process's files; the release may trail the exit.
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range pairs {
		for linkAlive(p.link, p.prog) {
			if time.Now().After(deadline) {
				t.Fatalf("link %d (program %d) still exists 5s after kill -9", p.link, p.prog)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

type idPair struct {
	link link.ID
	prog ebpf.ProgramID
}

func parseIDs(t *testing.T, s string) []idPair {
	t.Helper()
	var out []idPair
	for _, f := range strings.Fields(s) {
		l, p, ok := strings.Cut(f, ":")
		li, err1 := strconv.ParseUint(l, 10, 32)
		pi, err2 := strconv.ParseUint(p, 10, 32)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("bad link:program pair %q", f)
		}
		out = append(out, idPair{link.ID(li), ebpf.ProgramID(pi)})
	}
	if len(out) != len(tracepoints)-countMissing(t) {
		t.Fatalf("%d links in %q, want one per attached tracepoint", len(out), s)
	}
	return out
}

func countMissing(t *testing.T) int {
	t.Helper()
	kernel, err := btf.LoadKernelSpec()
	if err != nil {
		t.Fatal(err)
	}
	_, missing, err := checkTracepoints(kernel)
	if err != nil {
		t.Fatal(err)
	}
	return len(missing)
}

// ids returns the kernel ids of the program and the map.
func ids(t *testing.T, p *ebpf.Program, m *ebpf.Map) (uint32, uint32) {
	t.Helper()
	pi, err := p.Info()
	if err != nil {
		t.Fatal(err)
	}
	mi, err := m.Info()
	if err != nil {
		t.Fatal(err)
	}
	pid, ok1 := pi.ID()
	mid, ok2 := mi.ID()
	if !ok1 || !ok2 {
		t.Fatal("the kernel gave no program or map id")
	}
	return uint32(pid), uint32(mid)
}

// send runs the generator in the namespace that in enters.
func send(t *testing.T, in func(func() error) error, cfg gen.Config) gen.Stats {
	t.Helper()
	var st gen.Stats
	if err := in(func() (err error) {
		st, err = gen.Run(context.Background(), cfg, nil)
		return err
	}); err != nil {
		t.Fatalf("gen.Run: %v", err)
	}
	return st
}

func vethCounters(t *testing.T, in func(func() error) error, dev string) netdev.VethQueue {
	t.Helper()
	var qs []netdev.VethQueue
	if err := in(func() (err error) { qs, err = netdev.VethQueueCounters(dev); return err }); err != nil {
		t.Fatal(err)
	}
	return netdev.SumVethQueues(qs)
}
