package main

import (
	"encoding/binary"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/testutil/xskmaptest"
)

// TestCLIXskMapAndProgram: rxdrop beside a program of the caller's. With
// --xsk-map the sockets go into a pinned XSKMAP that the caller's own
// program (attached by the test) redirects to, and the program stays after
// rxdrop ends; with --program rxdrop attaches an object's XDP program with
// its XSKMAP, and detaches it at exit. Every frame sent is received.
func TestCLIXskMapAndProgram(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	const count = 20000
	receive := func(t *testing.T, args ...string) {
		t.Helper()
		p := startIn(t, bed.DUTNS, append([]string{bin, "rxdrop", "-i", "dut0", "--json"}, args...)...)
		if _, ok := waitHooks(t, bed.DUTNS, "dut0", func(h testbedtest.Hooks) bool { return h.XDPProg != 0 }); !ok {
			p.signal(t, syscall.SIGKILL)
			t.Fatalf("no program on dut0:\n%s", p.wait(t))
		}
		time.Sleep(300 * time.Millisecond) // the sockets are in the map once the header is out
		if g := runIn(t, 30*time.Second, bed.GenNS, bin, "gen", "-i", "gen0", "--count", strconv.Itoa(count), "--rate", "200000"); g.code != 0 {
			p.signal(t, syscall.SIGKILL)
			t.Fatalf("gen:\n%s", g)
		}
		time.Sleep(300 * time.Millisecond)
		p.signal(t, syscall.SIGINT)
		r := p.wait(t)
		if r.code != 0 {
			t.Fatalf("rxdrop %s:\n%s", strings.Join(args, " "), r)
		}
		var s xskSummary
		summaryLine(t, r.stdout, &s)
		if s.RxPackets != count {
			t.Errorf("rxdrop %s received %d of %d", strings.Join(args, " "), s.RxPackets, count)
		}
	}

	t.Run("xsk-map", func(t *testing.T) {
		m, prog := xskmaptest.New(t, 4)
		// A bpffs of the test's own, which the CLI's namespace sees too.
		fs := t.TempDir()
		if err := unix.Mount("bpf", fs, "bpf", 0, ""); err != nil {
			t.Fatalf("mount a bpffs: %v", err)
		}
		t.Cleanup(func() { unix.Unmount(fs, unix.MNT_DETACH) })
		pin := filepath.Join(fs, "xsks")
		if err := m.Pin(pin); err != nil {
			t.Fatalf("pin the XSKMAP: %v", err)
		}
		// Before the caller's program is on: rxdrop says that nothing
		// reaches its sockets yet.
		if r := runIn(t, 20*time.Second, bed.DUTNS, bin, "rxdrop", "-i", "dut0", "--xsk-map", pin, "-d", "500ms"); r.code != 0 || !strings.Contains(r.stdout, "dut0 has no XDP program yet") {
			t.Errorf("rxdrop --xsk-map with no program on dut0: want a note that frames wait for one:\n%s", r)
		}
		var lk link.Link
		if err := testbed.Do(bed.DUTNS, func() (err error) {
			lk, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: bed.Links[0].DUTIndex})
			return err
		}); err != nil {
			t.Fatalf("attach the caller's program: %v", err)
		}
		defer lk.Close()
		before := readHooks(t, bed.DUTNS, "dut0").XDPProg
		receive(t, "--xsk-map", pin)
		if h := readHooks(t, bed.DUTNS, "dut0"); h.XDPProg != before {
			t.Errorf("after rxdrop dut0 has program %d, want the caller's %d, untouched", h.XDPProg, before)
		}
	})

	t.Run("program", func(t *testing.T) {
		obj := "xskredirect_bpfel.o"
		if binary.NativeEndian.Uint16([]byte{0, 1}) == 1 {
			obj = "xskredirect_bpfeb.o"
		}
		receive(t, "--program", filepath.Join("..", "..", "bpf", obj)+":xsk_redirect")
		if h, ok := waitHooks(t, bed.DUTNS, "dut0", testbedtest.Hooks.Empty); !ok {
			t.Errorf("after rxdrop --program dut0 has %+v, want nothing", h)
		}
	})
}
