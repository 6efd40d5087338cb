//go:build linux

package compare

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/peerstest"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// peersDir is where the tests find the peer tools (peerstest.Dir).
func peersDir(t *testing.T) string {
	t.Helper()
	return peerstest.Dir(t)
}

// plantXDP attaches an XDP_PASS program to the device ifindex of the
// calling thread's namespace through netlink, in native mode, as libxdp
// does for xdp-bench and xdpsock: it stays when the process that attached
// it ends. It returns the program's id; the program's fd is closed.
func plantXDP(t *testing.T, ifindex int) uint32 {
	t.Helper()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "planted", Type: ebpf.XDP, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2 /* XDP_PASS */), asm.Return()},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	l, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetXdpFdWithFlags(l, prog.FD(), unix.XDP_FLAGS_DRV_MODE); err != nil {
		t.Fatal(err)
	}
	info, err := prog.Info()
	if err != nil {
		t.Fatal(err)
	}
	id, _ := info.ID()
	return uint32(id)
}

// unplantXDP removes what plantXDP attached, if still there, so that a
// failed test leaves nothing on the bed.
func unplantXDP(bed *testbed.Bed) {
	bed.InDUT(func() error {
		l, err := netlink.LinkByIndex(bed.Links[0].DUTIndex)
		if err == nil {
			netlink.LinkSetXdpFdWithFlags(l, -1, unix.XDP_FLAGS_DRV_MODE)
		}
		return nil
	})
}

// fakeBench writes an xdp-bench into a new directory that answers
// --version as 1.6.3, then, run, writes a file "started" beside it, waits
// for a file "go", prints a statistics line and sleeps for a minute with
// SIGINT ignored: a tool that does not end on SIGINT.
func fakeBench(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script := fmt.Sprintf(`#!/bin/sh
case "$2" in --version) echo "xdp-bench version 1.6.3 using libbpf version 1.5.0"; exit 0;; esac
trap '' INT
: > %[1]s/started
while [ ! -e %[1]s/go ]; do sleep 0.02; done
echo "dut0:0              0 rx/s"
exec sleep 60
`, dir)
	if err := os.WriteFile(filepath.Join(dir, XdpBench), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPeerKilledAndItsProgramRemoved runs a peer path on a tool that
// ignores SIGINT and leaves an XDP program attached through netlink (one
// attached while it starts, as libxdp attaches xdp-bench's): stop ends it
// with SIGKILL after the bound, removes the program, and says both; the
// bed is left clean.
func TestPeerKilledAndItsProgramRemoved(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	defer unplantXDP(bed)
	dir := fakeBench(t)
	cfg := Config{Bed: bed, Paths: []string{"xdp-bench-xsk-drop"}, Duration: time.Second, Peers: dir}
	if err := cfg.Resolve(); err != nil {
		t.Fatal(err)
	}
	e, _, teardown := prepared(t, &cfg)
	defer teardown()
	r, err := newRunner("xdp-bench-xsk-drop", e, pathOpts{})
	if err != nil {
		t.Fatal(err)
	}
	pr := r.(*peerRunner)
	started := make(chan error, 1)
	go func() { started <- pr.start(context.Background()) }()
	for deadline := time.Now().Add(20 * time.Second); ; {
		if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the tool did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var id uint32
	if err := bed.InDUT(func() error { id = plantXDP(t, e.dutIndex); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-started; err != nil {
		r.stop()
		t.Fatalf("start: %v", err)
	}
	if pr.progID != id {
		t.Errorf("the runner took program %d for the tool's; the tool's is %d", pr.progID, id)
	}
	pid := pr.proc.cmd.Process.Pid
	if err := r.stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if err := unix.Kill(pid, 0); err == nil {
		t.Errorf("the tool (pid %d) is still running", pid)
	}
	got := pr.ended()
	t.Logf("ended: %s", got)
	for _, want := range []string{"did not end within 5s of SIGINT: SIGKILL", fmt.Sprintf("XDP program id %d", id), "netlink attachment", "removed"} {
		if !strings.Contains(got, want) {
			t.Errorf("ended() = %q; want it to say %q", got, want)
		}
	}
	checkClean(t, bed)
}

// TestLeftoverRemoved plants what a killed tool leaves (an XDP program
// attached through netlink, a clsact qdisc with a filter) and checks that
// the cleanup removes each and says so, and that it leaves alone a program
// that was there before.
func TestLeftoverRemoved(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	defer unplantXDP(bed)
	idx := bed.Links[0].DUTIndex
	err := bed.InDUT(func() error {
		before, err := readDevHooks(idx)
		if err != nil {
			return err
		}
		id := plantXDP(t, idx)
		l, err := netlink.LinkByIndex(idx)
		if err != nil {
			return err
		}
		q := &netlink.GenericQdisc{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: idx, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT}, QdiscType: "clsact"}
		if err := netlink.QdiscAdd(q); err != nil {
			return fmt.Errorf("add a clsact qdisc: %w", err)
		}
		cls, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Name: "planted_tc", Type: ebpf.SchedCLS, License: "GPL",
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0 /* TC_ACT_OK */), asm.Return()},
		})
		if err != nil {
			netlink.QdiscDel(q)
			return err
		}
		defer cls.Close()
		f := &netlink.BpfFilter{FilterAttrs: netlink.FilterAttrs{LinkIndex: idx, Parent: netlink.HANDLE_MIN_INGRESS, Handle: 1, Priority: 1, Protocol: unix.ETH_P_ALL},
			Fd: cls.FD(), Name: "planted_tc", DirectAction: true}
		if err := netlink.FilterAdd(f); err != nil {
			netlink.QdiscDel(q)
			return fmt.Errorf("add a tc filter: %w", err)
		}
		removed, err := removeLeftovers(idx, before, id)
		if err != nil {
			return fmt.Errorf("removeLeftovers: %w", err)
		}
		got := strings.Join(removed, "; ")
		t.Logf("removed: %s", got)
		if !strings.Contains(got, fmt.Sprintf("XDP program id %d", id)) || !strings.Contains(got, "clsact qdisc with 1 tc filter") {
			t.Errorf("removed %q; want the XDP program %d and the clsact qdisc with its filter", got, id)
		}
		// A program that was there before the tool is someone else's.
		other := plantXDP(t, idx)
		had, err := readDevHooks(idx)
		if err != nil {
			return err
		}
		removed, err = removeLeftovers(idx, had, 0)
		if err != nil || len(removed) != 0 {
			t.Errorf("with program %d there before: removed %q, %v; want nothing removed", other, removed, err)
		}
		if cur, _ := readDevHooks(idx); cur.xdp.ProgID != other {
			t.Errorf("program %d was removed", other)
		}
		netlink.LinkSetXdpFdWithFlags(l, -1, unix.XDP_FLAGS_DRV_MODE)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkClean(t, bed)
}

// TestPeerPaths runs the peer tools beside xdpeng's engine on a bed: a row
// each, every frame accounted for at the device, each tool ended and what
// it took said, and nothing left behind.
func TestPeerPaths(t *testing.T) {
	dir := peersDir(t)
	bed := testbedtest.New(t, 1, 1)
	paths := []string{"xdp-drop", "xsk-drop", "xdpsock-drop", "xdpsock-l2fwd", "xdp-bench-xsk-drop", "xdp-bench-xsk-tx", "xdp-trafficgen-udp"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{Bed: bed, Paths: paths, Duration: time.Second, Peers: dir})
	if err != nil {
		t.Fatal(err)
	}
	if lf := gen.ProbeLiveFrames(); lf != nil {
		// xdp-trafficgen sends live frames only: its row is left out
		// with the kernel's answer, and the others run.
		paths = paths[:len(paths)-1]
		want := "xdp-trafficgen-udp skipped: " + XdpTrafficgen + " sends live frames only, and " + lf.Error()
		if !slices.Contains(res.Notes, want) {
			t.Errorf("notes %q: want %q", res.Notes, want)
		}
	}
	if len(res.Rows) != len(paths) {
		t.Fatalf("%d rows, notes %q: want %d", len(res.Rows), res.Notes, len(paths))
	}
	for _, row := range res.Rows {
		t.Logf("%-20s %6.3f Mpps sent %d received %d reasons %v unexplained %d; %s; %s", row.Path, row.Mpps, row.Sent, row.Received,
			row.Reasons, row.Unexplained, row.Env.XDPMode, row.Cleanup)
		if row.Error != "" {
			t.Errorf("%s: %s", row.Path, row.Error)
			continue
		}
		if row.Received == 0 || row.Unexplained != 0 {
			t.Errorf("%s: received %d, unexplained %d", row.Path, row.Received, row.Unexplained)
		}
		if _, peer := peerPaths[row.Path]; (peer || row.Path == "xdp-trafficgen-udp") && !strings.Contains(row.Cleanup, "ended on SIGINT") && !strings.Contains(row.Cleanup, "SIGKILL") {
			t.Errorf("%s: cleanup %q does not say how the tool ended", row.Path, row.Cleanup)
		}
	}
	checkEnv(t, res)
	checkClean(t, bed)
}

// TestRealPeerKilled kills xdp-bench with SIGKILL in the middle of a run:
// it cannot remove its XDP program (a netlink attachment) then, and stop
// does, and says so.
func TestRealPeerKilled(t *testing.T) {
	dir := peersDir(t)
	bed := testbedtest.New(t, 1, 1)
	cfg := Config{Bed: bed, Paths: []string{"xdp-bench-xsk-drop"}, Duration: time.Second, Peers: dir}
	if err := cfg.Resolve(); err != nil {
		t.Fatal(err)
	}
	e, _, teardown := prepared(t, &cfg)
	defer teardown()
	r, _ := newRunner("xdp-bench-xsk-drop", e, pathOpts{})
	pr := r.(*peerRunner)
	if err := r.start(context.Background()); err != nil {
		r.stop()
		t.Fatal(err)
	}
	id := pr.progID
	if err := pr.proc.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-pr.proc.exited
	pr.proc = nil // ended here, not by stop
	var left uint32
	bed.InDUT(func() error { h, err := readDevHooks(e.dutIndex); left = h.xdp.ProgID; return err })
	if err := r.stop(); err != nil {
		t.Errorf("stop after SIGKILL: %v", err)
	}
	t.Logf("program %d left after SIGKILL: %d; ended: %s", id, left, pr.ended())
	if left == id && !strings.Contains(pr.ended(), fmt.Sprintf("XDP program id %d", id)) {
		t.Errorf("ended() = %q; want it to say program %d was removed", pr.ended(), id)
	}
	checkClean(t, bed)
}

// TestTrafgenPath measures netsniff-ng's trafgen as the generator into
// xdp-drop's XDP_DROP: the row closes (sent = received, nothing
// unexplained), trafgen and the worker it forked end on SIGINT to its
// process group, and its configuration file is removed.
func TestTrafgenPath(t *testing.T) {
	privtest.Root(t)
	if _, err := findPeer(Trafgen, ""); err != nil {
		privtest.Unsupported(t, "%v", err)
	}
	bed := testbedtest.New(t, 1, 1)
	confs, _ := filepath.Glob(filepath.Join(os.TempDir(), "xdpeng-trafgen-*.cfg"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{Bed: bed, Paths: []string{"xdp-drop", "trafgen-udp"}, Duration: time.Second, GenCPUs: []int{0}})
	if err != nil {
		t.Fatal(err)
	}
	row, ok := res.Row("trafgen-udp")
	if !ok {
		t.Fatalf("no trafgen-udp row; notes %q", res.Notes)
	}
	t.Logf("trafgen-udp %.3f Mpps sent %d received %d reasons %v; %s; %s", row.Mpps, row.Sent, row.Received, row.Reasons, row.Env.XDPMode, row.Cleanup)
	if row.Error != "" || row.Received == 0 || row.Unexplained != 0 || row.Sent != row.Received+row.Dropped {
		t.Errorf("trafgen-udp: error %q, sent %d, received %d, dropped %d, unexplained %d", row.Error, row.Sent, row.Received, row.Dropped, row.Unexplained)
	}
	if !strings.Contains(row.Cleanup, "trafgen ended on SIGINT") {
		t.Errorf("cleanup %q: trafgen did not end on SIGINT", row.Cleanup)
	}
	if row.OfferBound || res.GeneratorBound != "" && strings.Contains(res.GeneratorBound, "trafgen") {
		t.Errorf("trafgen's row is offer-bound (%v) or named in generator_bound %q: it is another generator", row.OfferBound, res.GeneratorBound)
	}
	if out, err := exec.Command("pgrep", "-x", Trafgen).Output(); err == nil {
		t.Errorf("trafgen still running after the row: pids %s", out)
	}
	if now, _ := filepath.Glob(filepath.Join(os.TempDir(), "xdpeng-trafgen-*.cfg")); len(now) > len(confs) {
		t.Errorf("configuration files left: %v (before: %v)", now, confs)
	}
	checkClean(t, bed)
}
