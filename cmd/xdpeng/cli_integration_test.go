package main

// The CLI's failure behaviour, tested on the built binary in a test bed:
// bad input is refused with a message that names the problem and the fix,
// before anything is attached; every exit path (normal end, Ctrl-C,
// SIGTERM, kill -9) leaves the interface as it was found; another's XDP
// program is not replaced without --force; a busy queue is explained; and
// under overload every frame is counted.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/internal/cpuset"
	"github.com/xdpeng/xdpeng/internal/testbed"
	"github.com/xdpeng/xdpeng/internal/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// hasCommand reports whether the binary has the subcommand path (others
// are being added while these tests are written).
func hasCommand(bin string, path ...string) bool {
	out, err := exec.Command(bin, append(path, "--help")...).CombinedOutput()
	return err == nil && !strings.Contains(string(out), "Available Commands:\n  completion")
}

type badInput struct {
	name string
	gen  bool     // run in the generator namespace
	user bool     // run as nobody, without capabilities
	args []string // after the binary
	want []string // every one must be in stderr
	// ideal are further words the message must have; issue says what it
	// means when one is missing.
	ideal []string
	issue string
}

// TestCLIBadInput runs every kind of bad input through the binary and
// checks the exit status, the message, and that nothing was attached.
func TestCLIBadInput(t *testing.T) {
	bed := testbedtest.New(t, 2, 2)
	bin := buildCLI(t)
	online, err := cpuset.Online()
	if err != nil {
		t.Fatal(err)
	}
	cases := []badInput{
		{name: "no such interface", args: []string{"rxdrop", "-i", "nosuch0", "-d", "1s"},
			want: []string{`interface "nosuch0" not found`, "ip link"}},
		{name: "no interface", args: []string{"rxdrop", "-d", "1s"}, want: []string{"no interface given: use -i DEV"}},
		{name: "queue beyond the channels", args: []string{"rxdrop", "-i", "dut0", "-q", "5", "-d", "1s"},
			want: []string{"queue 5 does not exist on dut0", "it has 2 receive queues (0-1)", "xdpeng testbed up --queues 6"}},
		{name: "empty queue list", args: []string{"rxdrop", "-i", "dut0", "-q", "", "-d", "1s"},
			want:  []string{"empty queue list"},
			issue: `-q "" is taken as "all queues" (xskFlags.config tests f.queues != "" instead of whether -q was given)`},
		{name: "open queue range", args: []string{"rxdrop", "-i", "dut0", "-q", "1-", "-d", "1s"},
			want: []string{`queue list "1-"`, "use ids like 0, 0-3 or 0,2"}},
		{name: "queue not a number", args: []string{"rxdrop", "-i", "dut0", "-q", "a", "-d", "1s"},
			want: []string{`"a" is not a non-negative number`}},
		{name: "malformed CPU list", args: []string{"rxdrop", "-i", "dut0", "-q", "0", "--cpus", "1-", "-d", "1s"},
			want: []string{`CPU list "1-"`, "use ids like"}},
		{name: "offline CPU", args: []string{"rxdrop", "-i", "dut0", "-q", "0", "--cpus", "4000", "-d", "1s"},
			want: []string{"CPU 4000 is not online", "online: " + cpuset.Format(online)}},
		{name: "CPUs and queues differ", args: []string{"rxdrop", "-i", "dut0", "-q", "0-1", "--cpus", "1", "-d", "1s"},
			want: []string{"1 CPU(s) for 2 queue(s): give one CPU per queue"}},
		{name: "frame size", args: []string{"rxdrop", "-i", "dut0", "--frame-size", "3000", "-d", "1s"},
			want: []string{"frame size 3000: must be 2048 or 4096"}},
		{name: "ring not a power of two", args: []string{"rxdrop", "-i", "dut0", "--ring-size", "1000", "-d", "1s"},
			want: []string{"ring size 1000: must be a power of two between 1 and 65536"}},
		{name: "ring too large", args: []string{"rxdrop", "-i", "dut0", "--ring-size", "131072", "-d", "1s"},
			want: []string{"ring size 131072: must be a power of two between 1 and 65536"}},
		{name: "one ring wrong", args: []string{"rxdrop", "-i", "dut0", "--fill-size", "3", "-d", "1s"},
			want: []string{"fill ring size 3"}},
		{name: "batch larger than the ring", args: []string{"rxdrop", "-i", "dut0", "-b", "128", "--ring-size", "64", "-d", "1s"},
			want: []string{"batch size 128 is larger than the rx ring (64)", "a batch must fit in the rings"}},
		{name: "batch zero", args: []string{"rxdrop", "-i", "dut0", "-b", "0", "-d", "1s"},
			want: []string{"batch size 0: must be between 1 and"}},
		{name: "zero-copy on veth", args: []string{"rxdrop", "-i", "dut0", "-z", "-d", "1s"},
			want: []string{"bind AF_XDP socket to dut0 queue 0", "does not support zero-copy", "use -c for copy mode, or leave the default auto"}},
		{name: "copy and zero-copy", args: []string{"rxdrop", "-i", "dut0", "-c", "-z", "-d", "1s"},
			want: []string{"-c (copy) and -z (zero-copy) exclude each other"}},
		{name: "interval", args: []string{"rxdrop", "-i", "dut0", "-I", "0s", "-d", "1s"}, want: []string{"must be positive"}},
		{name: "rxdrop not root", user: true, args: []string{"rxdrop", "-i", "dut0", "-d", "1s"},
			want: []string{"xdpeng: rxdrop needs root", "CAP_NET_ADMIN", "run it with sudo"}},
		{name: "unknown flag", args: []string{"rxdrop", "-i", "dut0", "--bogus"}, want: []string{"unknown flag: --bogus"},
			ideal: []string{"--help"}, issue: "flag errors must point to --help"},
		{name: "unknown command", args: []string{"bogus"}, want: []string{`unknown command "bogus" for "xdpeng"`}},
		{name: "unknown kern path", args: []string{"kern", "bogus"}, want: []string{`unknown subcommand "bogus"`, "drop, pass"},
			issue: "`xdpeng kern bogus` (and `testbed bogus`) print the help and exit 0: the parent commands accept any argument"},

		{name: "kern no such interface", args: []string{"kern", "drop", "-i", "nosuch0", "-d", "1s"},
			want: []string{`interface "nosuch0" not found`}},
		{name: "kern mode", args: []string{"kern", "drop", "-i", "dut0", "-m", "bogus", "-d", "1s"},
			want: []string{`unknown XDP mode "bogus" (want native or generic)`}},
		{name: "kern hook", args: []string{"kern", "drop", "-i", "dut0", "--hook", "bogus", "-d", "1s"},
			want: []string{`--hook "bogus": want xdp or tc`}},
		{name: "kern redirect without -o", args: []string{"kern", "redirect", "-i", "dut0", "-d", "1s"},
			want: []string{"redirect needs -o OUT"}},
		{name: "kern redirect to itself", args: []string{"kern", "redirect", "-i", "dut0", "-o", "dut0", "-d", "1s"},
			want: []string{"must differ from -i"}},
		{name: "kern not root", user: true, args: []string{"kern", "drop", "-i", "dut0", "-d", "1s"},
			want: []string{"needs root", "sudo"}},

		{name: "gen bad MAC", gen: true, args: []string{"gen", "-i", "gen0", "--count", "10", "--dst-mac", "zz"},
			want: []string{`--dst-mac: "zz" is not an Ethernet address like 02:00:00:00:00:01`}},
		{name: "gen IP outside the benchmark range", gen: true, args: []string{"gen", "-i", "gen0", "--count", "10", "--dst-ip", "10.1.1.1"},
			want: []string{"--dst-ip 10.1.1.1 is outside 198.18.0.0/15"}},
		{name: "gen bad source IP", gen: true, args: []string{"gen", "-i", "gen0", "--count", "10", "--src-ip", "nope"},
			want: []string{`--src-ip "nope" is not an IP address`}},
		{name: "gen bad port", gen: true, args: []string{"gen", "-i", "gen0", "--count", "10", "--dst-port", "70000"},
			want: []string{`invalid argument "70000" for "--dst-port"`}},
		{name: "gen size", gen: true, args: []string{"gen", "-i", "gen0", "--count", "10", "--size", "10"},
			want: []string{"--size", "60..1514"}},
		{name: "gen rate below a frame per thread", gen: true, args: []string{"gen", "-i", "gen0", "--count", "10", "--threads", "2", "--rate", "1"},
			want: []string{"--rate", "less than 1 pps per thread"}},
		{name: "gen ports", gen: true, args: []string{"gen", "-i", "gen0", "--count", "10", "--ports", "0"},
			want: []string{"--ports 0: need at least 1"}},
		{name: "gen unbounded", gen: true, args: []string{"gen", "-i", "gen0"},
			want: []string{"gen needs a bound: give --count N or --duration D"}},
		{name: "gen no such interface", gen: true, args: []string{"gen", "-i", "nosuch0", "--count", "10"},
			want: []string{`interface "nosuch0" not found`}},
		{name: "gen not root", gen: true, user: true, args: []string{"gen", "-i", "gen0", "--count", "10"},
			want: []string{"needs root", "sudo"}},
	}
	// Commands other engineers add; their cases run when they exist.
	if hasCommand(bin, "count") {
		cases = append(cases,
			badInput{name: "count queue", args: []string{"count", "-i", "dut0", "-q", "9", "-d", "1s"},
				want: []string{"queue 9 does not exist on dut0"}},
			badInput{name: "count top", args: []string{"count", "-i", "dut0", "--top", "-1", "-d", "1s"},
				want: []string{"--top -1"}})
	}
	if hasCommand(bin, "l2fwd") {
		cases = append(cases, badInput{name: "l2fwd frame size", args: []string{"l2fwd", "-i", "dut0", "--frame-size", "1000", "-d", "1s"},
			want: []string{"frame size 1000"}})
	}
	if hasCommand(bin, "txonly") {
		cases = append(cases,
			badInput{name: "txonly unbounded", gen: true, args: []string{"txonly", "-i", "gen0"},
				want: []string{"txonly needs a bound"}},
			badInput{name: "txonly IP outside the benchmark range", gen: true, args: []string{"txonly", "-i", "gen0", "--count", "10", "--dst-ip", "10.1.1.1"},
				want: []string{"--dst-ip 10.1.1.1 is outside 198.18.0.0/15"}},
			badInput{name: "txonly with a receive-only flag", gen: true, args: []string{"txonly", "-i", "gen0", "--count", "10", "--udp-port", "9"},
				want: []string{"--udp-port does not apply to txonly: it receives nothing"}},
			badInput{name: "txonly with an XDP mode", gen: true, args: []string{"txonly", "-i", "gen0", "--count", "10", "-S"},
				want: []string{"--generic does not apply to txonly: it attaches no XDP program"}})
	}
	if hasCommand(bin, "fwd") {
		cases = append(cases,
			badInput{name: "fwd to itself", args: []string{"fwd", "-i", "dut0", "-o", "dut0", "-d", "1s"},
				want: []string{"both dut0", "l2fwd"}},
			badInput{name: "fwd no such output", args: []string{"fwd", "-i", "dut0", "-o", "nosuch0", "-d", "1s"},
				want: []string{`"nosuch0" not found`}},
			badInput{name: "fwd without -o", args: []string{"fwd", "-i", "dut0", "-d", "1s"},
				want: []string{"no output interface given: use -o DEV"}})
	}
	if hasCommand(bin, "compare") {
		cases = append(cases, badInput{name: "compare bogus path", args: []string{"compare", "-i", "dut0", "--paths", "bogus", "--duration", "1s"},
			want: []string{"bogus"}})
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
			r := runIn(t, 20*time.Second, ns, argv...)
			msg := r.stderr
			switch {
			case r.code == 0:
				t.Fatalf("accepted:\n%s", r)
			case r.signal != 0:
				t.Fatalf("killed:\n%s", r)
			}
			if !strings.HasPrefix(msg, "xdpeng: ") {
				t.Errorf("stderr does not start with \"xdpeng: \":\n%s", r)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message does not contain %q:\n%s", w, msg)
				}
			}
			if strings.Contains(msg, "xdpeng: xdpeng") {
				t.Errorf("the program name is repeated: %s", strings.TrimSpace(msg))
			}
			if strings.Contains(msg, "panic") || strings.Contains(msg, "goroutine ") {
				t.Errorf("crashed:\n%s", msg)
			}
			for i, in := range ifaces {
				if h := readHooks(t, in.ns, in.dev); !h.Equal(before[i]) {
					t.Errorf("%s: hooks %+v after a refused command, %+v before", in.dev, h, before[i])
				}
			}
			var missing []string
			for _, w := range tc.ideal {
				if !strings.Contains(msg, w) {
					missing = append(missing, w)
				}
			}
			if len(missing) > 0 {
				t.Errorf("%s (message lacks %q): %s", tc.issue, missing, strings.TrimSpace(msg))
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
	k, err := bpf.LoadKern(bpf.Pass, bpf.KernOptions{})
	if err != nil {
		t.Fatalf("load XDP_PASS: %v", err)
	}
	defer k.Close() // the netlink attachment holds its own reference
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
// netlink) is refused without --force and left untouched; --force
// replaces it, and at exit the interface has no program at all: --force
// does not restore what it replaced.
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
			for _, w := range []string{fmt.Sprintf("XDP program id %d", id), "someone else", "--force"} {
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
			if h, ok := waitHooks(t, ns, "dut0", testbedtest.Hooks.Empty); !ok {
				t.Errorf("after a --force run the interface has %+v, want nothing (the replaced program %d is not restored)", h, id)
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
		{"rxdrop", "rxdrop on dut0:", []string{"rxdrop", "-i", "dut0"}},
		{"kern-drop", "kern-drop on dut0:", []string{"kern", "drop", "-i", "dut0"}},
		{"kern-drop-tc", "kern-drop on dut0:", []string{"kern", "drop", "-i", "dut0", "--hook", "tc"}},
	} {
		for _, end := range []struct {
			name string
			sig  syscall.Signal // 0: the duration ends
		}{{"normal", 0}, {"SIGINT", syscall.SIGINT}, {"SIGTERM", syscall.SIGTERM}, {"SIGKILL", syscall.SIGKILL}} {
			t.Run(cmd.name+"/"+end.name, func(t *testing.T) {
				before := readHooks(t, ns, "dut0")
				args := append([]string{bin}, cmd.args...)
				if end.sig == 0 {
					args = append(args, "-d", "1500ms")
				}
				p := startIn(t, ns, args...)
				if _, ok := waitHooks(t, ns, "dut0", func(h testbedtest.Hooks) bool { return !h.Equal(before) }); !ok {
					p.signal(t, syscall.SIGKILL)
					t.Fatalf("nothing attached:\n%s", p.wait(t))
				}
				traffic := startIn(t, bed.GenNS, bin, "gen", "-i", "gen0", "-d", "3s", "--rate", "200000")
				time.Sleep(500 * time.Millisecond)
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
				case !strings.Contains(r.stdout, cmd.summary):
					t.Errorf("no final totals (%q):\n%s", cmd.summary, r)
				}
				if h, ok := waitHooks(t, ns, "dut0", before.Equal); !ok {
					t.Errorf("hooks %+v after the process ended, %+v before", h, before)
				}
				if err := queuesFree(ns, "dut0", 0, 1); err != nil {
					t.Error(err)
				}
				traffic.cmd.Process.Signal(syscall.SIGINT)
				traffic.wait(t)
			})
		}
	}
}

// TestCLITestbedInterrupted stops `xdpeng testbed up` part-way with Ctrl-C
// or kill -9. It cannot clean up after either (testbed up does not catch
// signals), so a half-made bed may remain: `testbed status` must list it
// and `testbed down --name` must remove it completely.
func TestCLITestbedInterrupted(t *testing.T) {
	privtest.Root(t)
	bin := buildCLI(t)
	leftovers := 0
	for i, delay := range []time.Duration{2 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond} {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
			name := testbed.UniqueName("ti")
			t.Cleanup(func() { testbed.Down(name) })
			p := startCmd(t, exec.Command(bin, "testbed", "up", "--name", name, "--queues", "2"))
			time.Sleep(delay)
			p.cmd.Process.Signal(sig) // it may have finished already
			p.wait(t)
			if !nsLeft(name) {
				continue
			}
			leftovers++
			out, err := exec.Command(bin, "testbed", "status").CombinedOutput()
			if !strings.Contains(string(out), name) {
				t.Errorf("case %d: half-made bed %s not listed by testbed status (%v):\n%s", i, name, err, out)
			}
			out, err = exec.Command(bin, "testbed", "down", "--name", name).CombinedOutput()
			if nsLeft(name) {
				t.Errorf("namespaces of %s remain after testbed down (%v):\n%s", name, err, out)
			} else if err != nil {
				// The bed is gone, but down said it failed: a namespace
				// file created and not yet bind-mounted when the process
				// died is not a namespace, and removeNS cannot enter it.
				t.Errorf("testbed down --name %s removed the half-made bed but exited with %v: %s", name, err, strings.TrimSpace(string(out)))
			}
		}
	}
	t.Logf("%d of 8 interrupted testbed up runs left a (partial) bed, each removed by testbed down", leftovers)
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

// TestCLIDemoInterrupted stops `xdpeng demo` mid-way. On Ctrl-C and
// SIGTERM it removes its test bed itself; kill -9 leaves the bed, which
// `testbed status` lists and `testbed down --name` removes.
func TestCLIDemoInterrupted(t *testing.T) {
	privtest.Root(t)
	bin := buildCLI(t)
	if !hasCommand(bin, "demo") {
		t.Skip("no demo command yet")
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			p := startCmd(t, exec.Command(bin, "demo", "-d", "500ms", "--quiet"))
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
			time.Sleep(1500 * time.Millisecond) // into the measurements
			p.signal(t, sig)
			r := p.wait(t)
			if strings.Contains(r.stderr, "panic") {
				t.Errorf("demo crashed:\n%s", r)
			}
			left := demoBeds(t, pid)
			if sig != syscall.SIGKILL {
				if r.signal != 0 {
					t.Errorf("demo did not catch %v:\n%s", sig, r)
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
