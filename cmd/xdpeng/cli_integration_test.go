package main

// The CLI's failure behaviour, tested on the built binary in a test bed:
// bad input is refused with a message that names the problem and the fix,
// before anything is attached; every exit path (normal end, Ctrl-C,
// SIGTERM, kill -9) leaves the interface as it was found; another's XDP
// program is not replaced without --force; a busy queue is explained; and
// under overload every frame is counted.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/internal/cpuset"
	"github.com/xdpeng/xdpeng/internal/lab/peerstest"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// TestCLIBadInput runs the bad input that only a device can show wrong
// through the binary in a test bed and checks the exit status, the message,
// and that nothing was attached.
func TestCLIBadInput(t *testing.T) {
	bed := testbedtest.New(t, 2, 2)
	bin := buildCLI(t)
	online, err := cpuset.Online()
	if err != nil {
		t.Fatal(err)
	}
	// The cases that need the bed's interfaces, or root; those refused
	// from the flags alone are in TestCLIFlagErrors.
	cases := []badInput{
		{name: "no such interface", args: []string{"rxdrop", "-i", "nosuch0", "-d", "1s"},
			want: []string{`interface "nosuch0" not found`, "ip link"}},
		{name: "queue beyond the channels", args: []string{"rxdrop", "-i", "dut0", "-q", "5", "-d", "1s"},
			want: []string{"queue 5 does not exist on dut0", "it has 2 receive queues (0-1)", "xdpeng testbed up --queues 6"}},
		{name: "offline CPU", args: []string{"rxdrop", "-i", "dut0", "-q", "0", "--cpus", "4000", "-d", "1s"},
			want: []string{"CPU 4000 is not online", "online: " + cpuset.Format(online)}},
		{name: "zero-copy on veth", args: []string{"rxdrop", "-i", "dut0", "-z", "-d", "1s"},
			want: []string{"dut0 (veth) has no AF_XDP zero-copy: the kernel does not report xsk-zerocopy", "use -c for copy mode, or leave the default auto"}},
		{name: "txonly zero-copy on veth", args: []string{"txonly", "-i", "dut0", "-z", "--count", "10"},
			want: []string{"dut0 (veth) has no AF_XDP zero-copy", "use -c for copy mode"}},
		{name: "native XDP on lo", args: []string{"rxdrop", "-i", "lo", "-N", "-d", "1"},
			want: []string{"lo has no native XDP: the kernel does not report the basic XDP feature for it", "use -S for generic mode"}},
		{name: "kern native XDP on lo", args: []string{"kern", "drop", "-i", "lo", "-N", "-d", "1"},
			want: []string{"lo: the driver has no native XDP support: the kernel does not report the basic XDP feature", "generic mode (-S)"}},
		{name: "kern native XDP on lo, old spelling", args: []string{"kern", "drop", "-i", "lo", "-m", "native", "-d", "1"},
			want: []string{"lo: the driver has no native XDP support"}},
		{name: "probe no such interface", args: []string{"probe", "-i", "nosuch0"},
			want: []string{`-i: interface "nosuch0" not found`, "ip link"}},
		{name: "kern no such interface", args: []string{"kern", "drop", "-i", "nosuch0", "-d", "1s"},
			want: []string{`interface "nosuch0" not found`}},
		{name: "kern redirect to itself", args: []string{"kern", "redirect", "-i", "dut0", "-o", "dut0", "-d", "1s"},
			want: []string{"must differ from -i"}},
		{name: "gen rate below a frame per thread", gen: true, args: []string{"gen", "-i", "gen0", "--count", "10", "--threads", "2", "--rate", "1"},
			want: []string{"--rate", "less than 1 pps per thread"}},
		{name: "gen out of lo", gen: true, args: []string{"gen", "-i", "lo", "--count", "10", "-G", "02:00:00:00:00:01", "-H", "02:00:00:00:00:02"},
			want: []string{"lo (no driver) takes no XDP frames (ndo-xmit is not among its XDP features", "txonly can, in copy mode"}},
		// Before it asks for a destination MAC, which lo has none of.
		{name: "gen out of lo, no MAC given", gen: true, args: []string{"gen", "-i", "lo", "-C", "10"},
			want: []string{"xdpeng: lo (no driver) takes no XDP frames"}},
		{name: "txonly out of lo without -H", gen: true, args: []string{"txonly", "-i", "lo", "-C", "10", "-G", "02:00:00:00:00:01"},
			want: []string{"xdpeng: lo has no MAC address to send from: give one with -H/--src-mac"}},
		{name: "gen no such interface", gen: true, args: []string{"gen", "-i", "nosuch0", "--count", "10"},
			want: []string{`interface "nosuch0" not found`}},
		// kern looks up -i before it checks for root.
		{name: "kern not root", user: true, args: []string{"kern", "drop", "-i", "dut0", "-d", "1s"},
			want: []string{"needs root", "sudo"}},
		{name: "count queue", args: []string{"count", "-i", "dut0", "-q", "9", "-d", "1s"},
			want: []string{"queue 9 does not exist on dut0"}},
		{name: "fwd no such output", args: []string{"fwd", "-i", "dut0", "-o", "nosuch0", "-d", "1s"},
			want: []string{`"nosuch0" not found`}},
	}

	ifaces := []struct{ ns, dev string }{
		{bed.DUTNS, "dut0"}, {bed.DUTNS, "dut1"}, {bed.GenNS, "gen0"}, {bed.GenNS, "gen1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var before []testbedtest.Hooks
			for _, i := range ifaces {
				before = append(before, readHooks(t, i.ns, i.dev))
			}
			ns := bed.DUTNS
			if tc.gen {
				ns = bed.GenNS
			}
			argv := append([]string{bin}, tc.args...)
			if tc.user {
				argv = append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"}, argv...)
			}
			checkRefused(t, runIn(t, 20*time.Second, ns, argv...), tc)
			for i, in := range ifaces {
				if h := readHooks(t, in.ns, in.dev); !h.Equal(before[i]) {
					t.Errorf("%s: hooks %+v after a refused command, %+v before", in.dev, h, before[i])
				}
			}
		})
	}
}

// attachForeign attaches an XDP_PASS program to dev in ns through netlink,
// as `ip link set dev DEV xdp obj ...` would: someone else's program, not
// held by any process. It returns the program id; the test's cleanup
// detaches it if it is still there.
func attachForeign(t *testing.T, ns, dev string) uint32 {
	t.Helper()
	return attachForeignHeld(t, ns, dev, false)
}

// attachForeignHeld is attachForeign, and with hold the test process keeps
// the program open until the test ends, as a loader that stays running
// (xdp-bench) does: a program in use.
func attachForeignHeld(t *testing.T, ns, dev string, hold bool) uint32 {
	t.Helper()
	k, err := bpf.LoadKern(bpf.Pass, bpf.KernOptions{})
	if err != nil {
		t.Fatalf("load XDP_PASS: %v", err)
	}
	if hold {
		t.Cleanup(func() { k.Close() })
	} else {
		defer k.Close() // the netlink attachment holds its own reference
	}
	err = testbed.Do(ns, func() error {
		l, err := netlink.LinkByName(dev)
		if err != nil {
			return err
		}
		return netlink.LinkSetXdpFdWithFlags(l, k.Program.FD(), unix.XDP_FLAGS_DRV_MODE)
	})
	if err != nil {
		t.Fatalf("attach XDP_PASS to %s through netlink: %v", dev, err)
	}
	h := readHooks(t, ns, dev)
	if h.XDPProg == 0 {
		t.Fatal("no program after the netlink attach")
	}
	t.Cleanup(func() {
		err := testbed.Do(ns, func() error {
			l, err := netlink.LinkByName(dev)
			if err != nil {
				return err
			}
			return netlink.LinkSetXdpFdWithFlags(l, -1, unix.XDP_FLAGS_DRV_MODE)
		})
		if err != nil {
			t.Errorf("detach the foreign program from %s: %v", dev, err)
		}
	})
	return h.XDPProg
}

// TestCLIForeignXDPProgram: a program someone else attached (through
// netlink) is refused without --force and left untouched; --force says
// what it replaces, then replaces it, and at exit the interface has no
// program at all: --force does not restore what it replaced. A program a
// running process (here the test) holds open is refused with one --force,
// naming that process, and replaced with two.
func TestCLIForeignXDPProgram(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	ns := bed.DUTNS
	for _, cmd := range [][]string{{"rxdrop", "-i", "dut0"}, {"kern", "drop", "-i", "dut0"}} {
		t.Run(cmd[0], func(t *testing.T) {
			id := attachForeign(t, ns, "dut0")
			r := runIn(t, 20*time.Second, ns, append(append([]string{bin}, cmd...), "-d", "1s")...)
			if r.code == 0 {
				t.Fatalf("replaced another's program without --force:\n%s", r)
			}
			for _, w := range []string{fmt.Sprintf("XDP program id %d", id), "someone else", "through netlink, held by no running process", "--force"} {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("message lacks %q: %s", w, r.stderr)
				}
			}
			if !strings.Contains(r.stderr, "ip link set dev dut0 xdp off") {
				t.Errorf("the message does not say how to detach (ip link set dev dut0 xdp off): %s", strings.TrimSpace(r.stderr))
			}
			if h := readHooks(t, ns, "dut0"); h.XDPProg != id {
				t.Fatalf("program %d replaced by %d after a refusal", id, h.XDPProg)
			}
			r = runIn(t, 20*time.Second, ns, append(append([]string{bin}, cmd...), "-d", "1s", "--force")...)
			if r.code != 0 {
				t.Fatalf("--force did not replace the program:\n%s", r)
			}
			if w := fmt.Sprintf("--force: replacing XDP program id %d xdp_pass (native mode) on dut0, attached through netlink, held by no running process", id); !strings.Contains(r.stderr, w) {
				t.Errorf("--force did not say what it replaced (%q): %s", w, r.stderr)
			}
			if h, ok := waitHooks(t, ns, "dut0", testbedtest.Hooks.Empty); !ok {
				t.Errorf("after a --force run the interface has %+v, want nothing (the replaced program %d is not restored)", h, id)
			}
		})
		t.Run(cmd[0]+" held open", func(t *testing.T) {
			id := attachForeignHeld(t, ns, "dut0", true)
			holder := fmt.Sprintf("held open by a running process (pid %d, ", os.Getpid())
			for _, force := range [][]string{nil, {"--force"}} {
				r := runIn(t, 20*time.Second, ns, append(append(append([]string{bin}, cmd...), "-d", "1s"), force...)...)
				if r.code == 0 {
					t.Fatalf("%v replaced a program in use:\n%s", force, r)
				}
				for _, w := range []string{fmt.Sprintf("XDP program id %d", id), holder, "--force twice"} {
					if !strings.Contains(r.stderr, w) {
						t.Errorf("%v: message lacks %q: %s", force, w, r.stderr)
					}
				}
				if h := readHooks(t, ns, "dut0"); h.XDPProg != id {
					t.Fatalf("program %d replaced by %d after a refusal", id, h.XDPProg)
				}
			}
			r := runIn(t, 20*time.Second, ns, append(append([]string{bin}, cmd...), "-d", "1s", "--force", "--force")...)
			if r.code != 0 {
				t.Fatalf("--force twice did not replace the program:\n%s", r)
			}
			if w := fmt.Sprintf("--force: replacing XDP program id %d xdp_pass (native mode) on dut0, attached through netlink, %s", id, holder); !strings.Contains(r.stderr, w) {
				t.Errorf("--force twice did not say what it replaced (%q): %s", w, r.stderr)
			}
			if h, ok := waitHooks(t, ns, "dut0", testbedtest.Hooks.Empty); !ok {
				t.Errorf("after a --force --force run the interface has %+v, want nothing", h)
			}
		})
	}
}

// TestCLIQueueBusy runs a second rxdrop beside a first one: it is refused
// with a message about the real problem and the first keeps running.
func TestCLIQueueBusy(t *testing.T) {
	bed := testbedtest.New(t, 2, 1)
	bin := buildCLI(t)
	ns := bed.DUTNS
	before := readHooks(t, ns, "dut0")
	first := startIn(t, ns, bin, "rxdrop", "-i", "dut0", "-q", "0")
	held, ok := waitHooks(t, ns, "dut0", func(h testbedtest.Hooks) bool { return h.XDPProg != 0 })
	if !ok {
		first.signal(t, syscall.SIGINT)
		t.Fatalf("the first rxdrop attached nothing:\n%s", first.wait(t))
	}
	for _, tc := range []struct {
		name  string
		args  []string
		want  []string
		ideal string
	}{
		{"same queue", []string{"-q", "0"}, []string{"already has XDP program", "someone else"}, "bpf_link"},
		{"same queue forced", []string{"-q", "0", "--force"}, []string{"bpf_link", "not replaced even with --force", "stop that process"}, ""},
		{"other queue forced", []string{"-q", "1", "--force"}, []string{"bpf_link", "not replaced even with --force", "stop that process"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runIn(t, 20*time.Second, ns, append([]string{bin, "rxdrop", "-i", "dut0", "-d", "1s"}, tc.args...)...)
			if r.code == 0 {
				t.Fatalf("second rxdrop accepted:\n%s", r)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("message lacks %q: %s", w, r.stderr)
				}
			}
			if tc.ideal != "" && !strings.Contains(r.stderr, tc.ideal) {
				t.Errorf("the message does not say that --force cannot replace a program held by another process's bpf_link: %s", strings.TrimSpace(r.stderr))
			}
			if h := readHooks(t, ns, "dut0"); h.XDPProg != held.XDPProg {
				t.Errorf("the first rxdrop's program %d became %d", held.XDPProg, h.XDPProg)
			}
		})
	}
	first.signal(t, syscall.SIGINT)
	r := first.wait(t)
	if r.code != 0 || !strings.Contains(r.stdout, "rxdrop on dut0") {
		t.Errorf("the first rxdrop did not end cleanly:\n%s", r)
	}
	if h, ok := waitHooks(t, ns, "dut0", before.Equal); !ok {
		t.Errorf("hooks %+v after both ended, %+v before", h, before)
	}
	if err := queuesFree(ns, "dut0", 0, 1); err != nil {
		t.Error(err)
	}
}

// TestCLILeaveNoTrace ends rxdrop and kern drop every way a process can
// end, with traffic flowing, and checks that the interface is left as it
// was and no socket stays bound.
func TestCLILeaveNoTrace(t *testing.T) {
	bed := testbedtest.New(t, 2, 1)
	bin := buildCLI(t)
	ns := bed.DUTNS
	for _, cmd := range []struct {
		name, summary string
		args          []string
	}{
		{"rxdrop", "rxdrop", []string{"rxdrop", "-i", "dut0"}},
		{"kern-drop", "kern-drop", []string{"kern", "drop", "-i", "dut0"}},
		{"kern-drop-tc", "kern-drop", []string{"kern", "drop", "-i", "dut0", "--hook", "tc"}},
	} {
		for _, end := range []struct {
			name string
			sig  syscall.Signal // 0: the duration ends
		}{{"normal", 0}, {"SIGINT", syscall.SIGINT}, {"SIGTERM", syscall.SIGTERM}, {"SIGKILL", syscall.SIGKILL}} {
			t.Run(cmd.name+"/"+end.name, func(t *testing.T) {
				before := readHooks(t, ns, "dut0")
				args := append(append([]string{bin}, cmd.args...), "--json", "-n", "0.1")
				if end.sig == 0 {
					args = append(args, "-d", "1500ms")
				}
				p := startIn(t, ns, args...)
				if _, ok := waitHooks(t, ns, "dut0", func(h testbedtest.Hooks) bool { return !h.Equal(before) }); !ok {
					p.signal(t, syscall.SIGKILL)
					t.Fatalf("nothing attached:\n%s", p.wait(t))
				}
				traffic := startIn(t, bed.GenNS, bin, "gen", "-i", "gen0", "-d", "3s", "--rate", "200000", "--json")
				// The end is only tested under traffic: wait until the
				// command has counted frames.
				if !p.waitOutput(10*time.Second, false, receivedSome) {
					p.signal(t, syscall.SIGKILL)
					t.Fatalf("%s counted no frame while the generator ran:\n%s", cmd.name, p.wait(t))
				}
				if end.sig != 0 {
					p.signal(t, end.sig)
				}
				r := p.wait(t)
				switch {
				case end.sig == syscall.SIGKILL:
					if r.signal != syscall.SIGKILL {
						t.Errorf("not killed:\n%s", r)
					}
				case r.code != 0:
					t.Errorf("exit status %d:\n%s", r.code, r)
				default:
					var sum struct {
						Type      string `json:"type"`
						Mode      string `json:"mode"`
						RxPackets uint64 `json:"rx_packets"`
					}
					summaryLine(t, r.stdout, &sum)
					if sum.Type != "summary" || sum.Mode != cmd.summary || sum.RxPackets == 0 {
						t.Errorf("final totals %+v, want a %s summary with the frames received:\n%s", sum, cmd.summary, r)
					}
				}
				if h, ok := waitHooks(t, ns, "dut0", before.Equal); !ok {
					t.Errorf("hooks %+v after the process ended, %+v before", h, before)
				}
				if err := queuesFree(ns, "dut0", 0, 1); err != nil {
					t.Error(err)
				}
				traffic.signal(t, syscall.SIGINT)
				g := traffic.wait(t)
				var gs genSummary
				summaryLine(t, g.stdout, &gs)
				if g.code != 0 || gs.TxPackets == 0 {
					t.Errorf("the generator sent %d frames, exit status %d:\n%s", gs.TxPackets, g.code, g)
				}
			})
		}
	}
}

// receivedSome reports whether JSON output shows frames received: an
// interval (or the summary) with rx_packets above 0.
func receivedSome(out string) bool { return countedSome(out, "rx_packets") }

// countedSome reports whether a JSON line of out has the number field
// above 0.
func countedSome(out, field string) bool {
	for _, line := range strings.Split(out, "\n") {
		var v map[string]any
		if json.Unmarshal([]byte(line), &v) == nil {
			if n, ok := v[field].(float64); ok && n > 0 {
				return true
			}
		}
	}
	return false
}

// TestCLITestbedInterrupted stops `xdpeng testbed up` while it makes a
// bed, as soon as the bed's first namespace exists. On Ctrl-C or SIGTERM
// it finishes, removes everything and says so; after kill -9 a half-made
// bed is left, which `testbed status` must list and `testbed down --name`
// remove. A run that ended before the signal reached it tests nothing: it
// is made again, and the test fails if no run was interrupted half-way.
func TestCLITestbedInterrupted(t *testing.T) {
	privtest.Root(t)
	bin := buildCLI(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			const attempts = 5
			for i := range attempts {
				name := testbed.UniqueName("ti")
				t.Cleanup(func() {
					if err := testbed.Down(name); err != nil {
						t.Errorf("remove %s: %v", name, err)
					}
				})
				p := startCmd(t, exec.Command(bin, "testbed", "up", "--name", name, "--queues", "2"))
				for !nsLeft(name) && !p.exited() {
					time.Sleep(100 * time.Microsecond)
				}
				if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
					t.Fatalf("send %v: %v", sig, err)
				}
				r := p.wait(t)
				if sig != syscall.SIGKILL {
					if r.code != 1 || !strings.Contains(r.stderr, "interrupted") {
						t.Logf("attempt %d: testbed up was not interrupted while making the bed:\n%s", i, r)
						continue
					}
					if nsLeft(name) {
						t.Errorf("testbed up interrupted by %v left namespaces of %s:\n%s", sig, name, r)
					}
					return
				}
				if r.signal != syscall.SIGKILL {
					t.Logf("attempt %d: testbed up ended before kill -9:\n%s", i, r)
					continue
				}
				if _, err := testbed.Open(name); err == nil {
					t.Logf("attempt %d: kill -9 came after the bed was complete", i)
					continue
				} else {
					t.Logf("attempt %d: half-made bed %s (Open: %v)", i, name, err)
				}
				out, err := exec.Command(bin, "testbed", "status").CombinedOutput()
				if !strings.Contains(string(out), name) {
					t.Errorf("half-made bed %s not listed by testbed status (%v):\n%s", name, err, out)
				}
				out, err = exec.Command(bin, "testbed", "down", "--name", name).CombinedOutput()
				if nsLeft(name) {
					t.Errorf("namespaces of %s remain after testbed down (%v):\n%s", name, err, out)
				} else if err != nil {
					t.Errorf("testbed down --name %s removed the half-made bed but exited with %v: %s", name, err, strings.TrimSpace(string(out)))
				}
				// Once more: there is nothing left, and it says so.
				out, err = exec.Command(bin, "testbed", "down", "--name", name).CombinedOutput()
				if err != nil || !strings.Contains(string(out), "no test bed "+name) || !strings.Contains(string(out), "nothing to remove") {
					t.Errorf("testbed down --name %s of a bed already removed (%v): %s", name, err, out)
				}
				return
			}
			t.Fatalf("in %d attempts testbed up was never stopped by %v while it made the bed", attempts, sig)
		})
	}
}

func nsLeft(name string) bool {
	for _, ns := range []string{testbed.GenNS(name), testbed.DUTNS(name)} {
		if _, err := os.Stat("/var/run/netns/" + ns); err == nil {
			return true
		}
	}
	return false
}

// summaryLine returns the last JSON object of out, decoded into v.
func summaryLine(t *testing.T, out string, v any) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	if err := json.Unmarshal([]byte(last), v); err != nil {
		t.Fatalf("decode %q: %v\n%s", last, err, out)
	}
}

type genSummary struct {
	TxPackets  uint64  `json:"tx_packets"`
	DeviceXmit *uint64 `json:"device_xmit"`
	XmitErrors *uint64 `json:"xmit_errors"`
	Lost       *uint64 `json:"lost_before_driver"`
}

// TestCLIOverloadAccounting drives rxdrop (small rings) and kern drop
// with an unbounded generator through the CLI and checks that the
// printed totals close: sent = received + every counted drop.
func TestCLIOverloadAccounting(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"rxdrop", []string{"rxdrop", "-i", "dut0", "--ring-size", "64", "--frames", "128", "--json"}},
		{"kern-drop", []string{"kern", "drop", "-i", "dut0", "--json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startIn(t, bed.DUTNS, append([]string{bin}, tc.args...)...)
			if _, ok := waitHooks(t, bed.DUTNS, "dut0", func(h testbedtest.Hooks) bool { return h.XDPProg != 0 }); !ok {
				p.signal(t, syscall.SIGKILL)
				t.Fatalf("nothing attached:\n%s", p.wait(t))
			}
			g := runIn(t, 30*time.Second, bed.GenNS, bin, "gen", "-i", "gen0", "-d", "1500ms", "--json")
			if g.code != 0 {
				t.Fatalf("gen:\n%s", g)
			}
			var gs genSummary
			summaryLine(t, g.stdout, &gs)
			if gs.DeviceXmit == nil || gs.XmitErrors == nil || gs.Lost == nil {
				t.Fatalf("gen printed no device counters: %s", g.stdout)
			}
			time.Sleep(300 * time.Millisecond) // let the last frames arrive
			p.signal(t, syscall.SIGINT)
			r := p.wait(t)
			if r.code != 0 {
				t.Fatalf("%s:\n%s", tc.name, r)
			}
			var got, drops uint64
			if tc.name == "rxdrop" {
				var s xskSummary
				summaryLine(t, r.stdout, &s)
				got, drops = s.RxPackets, s.XDPStats.Drops()
				t.Logf("rxdrop: rx %d, xdp stats %+v", s.RxPackets, s.XDPStats)
			} else {
				var s kernSummary
				summaryLine(t, r.stdout, &s)
				got = s.RxPackets
			}
			t.Logf("gen sent %d (device accepted %d, xmit errors %d, lost %d); %s received %d, socket drops %d",
				gs.TxPackets, *gs.DeviceXmit, *gs.XmitErrors, *gs.Lost, tc.name, got, drops)
			if sum := got + drops + *gs.XmitErrors + *gs.Lost; sum != gs.TxPackets {
				t.Errorf("sent %d != received %d + socket drops %d + xmit errors %d + lost %d = %d",
					gs.TxPackets, got, drops, *gs.XmitErrors, *gs.Lost, sum)
			}
			if *gs.Lost != 0 {
				t.Errorf("%d frames lost before the driver", *gs.Lost)
			}
		})
	}
}

// demoBeds lists the test beds a demo process with this pid made
// (compare names them cmp<pid in base 36>-N).
func demoBeds(t *testing.T, pid int) []string {
	t.Helper()
	names, err := testbed.List()
	if err != nil {
		t.Fatal(err)
	}
	prefix := "cmp" + strconv.FormatInt(int64(pid), 36) + "-"
	var mine []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			mine = append(mine, n)
		}
	}
	return mine
}

// TestCLIDemoInterrupted stops `xdpeng demo` once it measures its first
// path. On Ctrl-C and SIGTERM it removes its test bed itself and exits 130
// (or prints the rows that finished, marked interrupted, and exits 0);
// kill -9 leaves the bed, which `testbed status` lists and `testbed down
// --name` removes.
func TestCLIDemoInterrupted(t *testing.T) {
	privtest.Root(t)
	bin := buildCLI(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			p := startCmd(t, exec.Command(bin, "demo", "-d", "500ms"))
			pid := p.cmd.Process.Pid
			t.Cleanup(func() {
				for _, n := range demoBeds(t, pid) {
					testbed.Down(n)
				}
			})
			var beds []string
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && len(beds) == 0; time.Sleep(20 * time.Millisecond) {
				beds = demoBeds(t, pid)
			}
			if len(beds) == 0 {
				p.cmd.Process.Kill()
				t.Fatalf("demo made no test bed:\n%s", p.wait(t))
			}
			// Into the measurements: the first path's progress line.
			if !p.waitOutput(time.Minute, true, func(s string) bool { return strings.Contains(s, "measuring for") }) {
				p.cmd.Process.Kill()
				t.Fatalf("demo measured nothing:\n%s", p.wait(t))
			}
			p.signal(t, sig)
			r := p.wait(t)
			if strings.Contains(r.stderr, "panic") {
				t.Errorf("demo crashed:\n%s", r)
			}
			left := demoBeds(t, pid)
			if sig != syscall.SIGKILL {
				// 130 is a comparison interrupted before a path
				// finished; 0 with INTERRUPTED one stopped after (the
				// first path may finish before the signal arrives); a
				// demo that had finished would exit 0 without it and
				// test nothing.
				stopped := r.code == 130 || r.code == 0 && strings.Contains(r.stdout, "INTERRUPTED")
				if r.signal != 0 || !stopped {
					t.Errorf("demo did not stop on %v mid-way (exit %d, signal %v):\n%s", sig, r.code, r.signal, r)
				}
				if len(left) > 0 {
					t.Errorf("demo left test beds %v after %v:\n%s", left, sig, r)
				}
				return
			}
			if len(left) == 0 {
				t.Fatalf("no bed left after kill -9: was it removed before the signal?\n%s", r)
			}
			for _, n := range left {
				out, err := exec.Command(bin, "testbed", "status").CombinedOutput()
				if !strings.Contains(string(out), n) {
					t.Errorf("testbed status does not list the leftover %s (%v):\n%s", n, err, out)
				}
				if out, err := exec.Command(bin, "testbed", "down", "--name", n).CombinedOutput(); err != nil {
					t.Errorf("testbed down --name %s: %v\n%s", n, err, out)
				}
			}
			if left := demoBeds(t, pid); len(left) > 0 {
				t.Errorf("beds %v remain after testbed down", left)
			}
		})
	}
}

// TestCLILatencyAndCompareJSON runs latency and compare with --json on
// their own beds: setup, rows and summary lines, and every row's env says
// what the machine's spectre_v2 file says.
func TestCLILatencyAndCompareJSON(t *testing.T) {
	privtest.Root(t)
	bin := buildCLI(t)
	mitigation, err := os.ReadFile("/sys/devices/system/cpu/vulnerabilities/spectre_v2")
	if err != nil {
		privtest.Unsupported(t, "no spectre_v2 file: %v", err)
	}
	for _, argv := range [][]string{
		{"latency", "--paths", "xdp-tx", "--rate", "10000", "-d", "500ms", "--json", "--quiet"},
		{"compare", "--testbed", "--paths", "xdp-drop", "-d", "500ms", "--json", "--quiet"},
	} {
		t.Run(argv[0], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r := startCmd(t, exec.CommandContext(ctx, bin, argv...)).wait(t)
			if r.code != 0 {
				t.Fatalf("%v:\n%s", argv, r)
			}
			var types []string
			for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				var obj struct {
					Type string `json:"type"`
					Env  struct {
						SpectreV2 string `json:"spectre_v2"`
					} `json:"env"`
					Sent      uint64 `json:"sent"`
					Lost      uint64 `json:"lost"`
					LatencyNs struct {
						P50 uint64 `json:"p50"`
					} `json:"latency_ns"`
				}
				if err := json.Unmarshal([]byte(line), &obj); err != nil {
					t.Fatalf("line %q: %v", line, err)
				}
				types = append(types, obj.Type)
				if obj.Type == "row" {
					if obj.Env.SpectreV2 != strings.TrimSpace(string(mitigation)) {
						t.Errorf("row env spectre_v2 %q, the machine's %q", obj.Env.SpectreV2, mitigation)
					}
					if argv[0] == "latency" && (obj.Sent != 5000 || obj.Lost != 0 || obj.LatencyNs.P50 == 0) {
						t.Errorf("latency row: sent %d lost %d p50 %d, want 5000, 0, above 0", obj.Sent, obj.Lost, obj.LatencyNs.P50)
					}
				}
			}
			if got := strings.Join(types, ","); got != "setup,row,summary" {
				t.Errorf("line types %s:\n%s", got, r.stdout)
			}
		})
	}
}

// dpdkChildren lists the dpdk-testpmd processes a process with this pid
// started (compare gives EAL the file prefix xdpeng<pid>-N).
func dpdkChildren(t *testing.T, pid int) []int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, d := range dirs {
		p, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if strings.Contains(string(cmdline), "xdpeng"+strconv.Itoa(pid)+"-") && strings.Contains(string(cmdline), "testpmd") {
			out = append(out, p)
		}
	}
	return out
}

// TestCLIDPDKEndsWithCompare kills compare with SIGKILL while
// dpdk-testpmd runs under it: testpmd must end too (it polls its CPU for
// as long as it lives).
func TestCLIDPDKEndsWithCompare(t *testing.T) {
	privtest.Root(t)
	if _, err := exec.LookPath("dpdk-testpmd"); err != nil {
		privtest.Unsupported(t, "dpdk-testpmd is not installed")
	}
	bin := buildCLI(t)
	// libxdp makes its lock directory there when no bpffs is mounted, and
	// testpmd, ending on its own after compare's kill -9, leaves it.
	const runXDP = "/run/xdp"
	_, err := os.Stat(runXDP)
	hadRunXDP := err == nil
	p := startCmd(t, exec.Command(bin, "compare", "--testbed", "--paths", "dpdk-af-xdp", "-d", "30s"))
	pid := p.cmd.Process.Pid
	t.Cleanup(func() {
		for _, n := range demoBeds(t, pid) {
			testbed.Down(n)
		}
		if !hadRunXDP {
			os.Remove(runXDP) // only if empty
		}
		// EAL's runtime directory, which compare could not remove.
		left, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("xdpeng-dpdk-%d-*", pid)))
		for _, d := range left {
			os.RemoveAll(d)
		}
	})
	if !p.waitOutput(time.Minute, true, func(s string) bool { return strings.Contains(s, "measuring for") }) {
		p.cmd.Process.Kill()
		t.Fatalf("compare did not start:\n%s", p.wait(t))
	}
	var children []int
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && len(children) == 0; time.Sleep(50 * time.Millisecond) {
		children = dpdkChildren(t, pid)
	}
	if len(children) == 0 {
		p.cmd.Process.Kill()
		t.Fatalf("no dpdk-testpmd started:\n%s", p.wait(t))
	}
	p.signal(t, syscall.SIGKILL)
	p.wait(t)
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline) && len(dpdkChildren(t, pid)) > 0; {
		time.Sleep(50 * time.Millisecond)
	}
	if left := dpdkChildren(t, pid); len(left) > 0 {
		for _, c := range left {
			syscall.Kill(c, syscall.SIGKILL)
		}
		t.Fatalf("dpdk-testpmd %v outlived compare's kill -9", left)
	}
}

// childrenNamed lists the processes whose parent is pid and whose command
// line contains name.
func childrenNamed(t *testing.T, pid int, name string) []int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, d := range dirs {
		p, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		cmdline, err2 := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if err != nil || err2 != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so after ')'.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) && strings.Contains(string(cmdline), name) {
			out = append(out, p)
		}
	}
	return out
}

// alive reports which of pids still run name.
func alive(pids []int, name string) []int {
	var out []int
	for _, p := range pids {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); err == nil && strings.Contains(string(b), name) {
			out = append(out, p)
		}
	}
	return out
}

// TestCLIPeerEndsWithCompare kills compare with SIGKILL while xdp-bench
// runs under it as a peer path: the tool must end too (it busy-polls its
// CPU for as long as it lives).
func TestCLIPeerEndsWithCompare(t *testing.T) {
	privtest.Root(t)
	dir := peerstest.Dir(t)
	bin := buildCLI(t)
	const runXDP = "/run/xdp" // libxdp's lock directory, without bpffs
	_, err := os.Stat(runXDP)
	hadRunXDP := err == nil
	p := startCmd(t, exec.Command(bin, "compare", "--testbed", "--peers", dir, "--paths", "xdp-bench-xsk-drop", "-d", "30s"))
	pid := p.cmd.Process.Pid
	t.Cleanup(func() {
		for _, n := range demoBeds(t, pid) {
			testbed.Down(n) // with the program the killed tool left on its dut0
		}
		if !hadRunXDP {
			os.Remove(runXDP) // only if empty
		}
	})
	if !p.waitOutput(time.Minute, true, func(s string) bool { return strings.Contains(s, "measuring for") }) {
		p.cmd.Process.Kill()
		t.Fatalf("compare did not start:\n%s", p.wait(t))
	}
	var children []int
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && len(children) == 0; time.Sleep(50 * time.Millisecond) {
		children = childrenNamed(t, pid, "xdp-bench")
	}
	if len(children) == 0 {
		p.cmd.Process.Kill()
		t.Fatalf("no xdp-bench started:\n%s", p.wait(t))
	}
	p.signal(t, syscall.SIGKILL)
	p.wait(t)
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline) && len(alive(children, "xdp-bench")) > 0; {
		time.Sleep(50 * time.Millisecond)
	}
	if left := alive(children, "xdp-bench"); len(left) > 0 {
		for _, c := range left {
			syscall.Kill(c, syscall.SIGKILL)
		}
		t.Fatalf("xdp-bench %v outlived compare's kill -9", left)
	}
}

// TestCLIStdoutClosed: a run whose stdout reader goes away (| head -1, or
// a remote run's ssh session that died) ends through its cleanup at its
// next interval, long before its duration, with a SIGPIPE'd tool's status
// (141), not killed by SIGPIPE; and leaves nothing attached.
func TestCLIStdoutClosed(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	ns := bed.DUTNS
	for _, args := range [][]string{
		{"rxdrop", "-i", "dut0"},
		{"kern", "drop", "-i", "dut0", "--hook", "tc"},
		{"stats", "-i", "dut0"},
	} {
		t.Run(args[0], func(t *testing.T) {
			before := readHooks(t, ns, "dut0")
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd := nsCommand(context.Background(), ns, append(append([]string{bin}, args...), "--json", "-n", "0.1", "-d", "60")...)
			var stderr syncBuffer
			cmd.Stdout, cmd.Stderr = w, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close()
			line, err := bufio.NewReader(r).ReadString('\n')
			r.Close() // the reader goes: the next write fails
			if err != nil {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("no first line: %v; stderr %s", err, stderr.String())
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var werr error
			select {
			case werr = <-done:
			case <-time.After(20 * time.Second): // a bound for the test, well under -d 60
				cmd.Process.Kill()
				<-done
				t.Fatalf("still running 20 s after its stdout closed (first line %s); stderr %s", line, stderr.String())
			}
			var ee *exec.ExitError
			if !errors.As(werr, &ee) || ee.ExitCode() != 141 {
				t.Errorf("ended with %v, want exit status 141 (a clean exit, not death by SIGPIPE); stderr %s", werr, stderr.String())
			}
			if h, ok := waitHooks(t, ns, "dut0", before.Equal); !ok {
				t.Errorf("hooks %+v after the run ended, %+v before", h, before)
			}
		})
	}
}

// TestCLIWorkerSchedPolicy: -W and -U (xdpsock's) give the worker thread
// that scheduling policy and real-time priority, as /proc shows them.
func TestCLIWorkerSchedPolicy(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	p := startIn(t, bed.DUTNS, bin, "rxdrop", "-i", "dut0", "-W", "SCHED_RR", "-U", "7", "--json", "-n", "200ms")
	if !p.waitOutput(20*time.Second, false, func(s string) bool { return strings.Contains(s, `"type":"interval"`) }) {
		p.signal(t, syscall.SIGKILL)
		t.Fatalf("rxdrop -W SCHED_RR -U 7 did not start: %v", p.wait(t))
	}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", p.cmd.Process.Pid))
	found := false
	for _, task := range tasks {
		comm, _ := os.ReadFile(task + "/comm")
		if strings.TrimSpace(string(comm)) != "xdpeng-q0" {
			continue
		}
		found = true
		stat, err := os.ReadFile(task + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		// After the ")" that ends comm, field 3 is the first: rt_priority
		// is field 40 and policy 41.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if prio, policy := f[40-3], f[41-3]; prio != "7" || policy != "2" {
			t.Errorf("worker thread: policy %s, priority %s; want 2 (SCHED_RR), 7", policy, prio)
		}
	}
	if !found {
		t.Errorf("no thread xdpeng-q0 among %v", tasks)
	}
	p.signal(t, syscall.SIGINT)
	if r := p.wait(t); r.code != 0 {
		t.Errorf("rxdrop -W SCHED_RR: %v", r)
	}
}
