package main

// xdpeng selftest: --list, --json, flag errors, the -i/--peer path and its
// exit status, and that an interrupted or killed run leaves nothing behind.

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/internal/lab/selftest"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

func TestSelftestList(t *testing.T) {
	var out strings.Builder
	printTestList(&out, selftest.Tests(), true)
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	n := 0
	for sc.Scan() {
		var l struct{ Type, Test, Checks string }
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.Type != "list" || l.Test == "" || l.Checks == "" {
			t.Errorf("line %q: %v, want type list, test and checks", sc.Text(), err)
		}
		n++
	}
	if n != len(selftest.Tests()) {
		t.Errorf("%d lines for %d tests", n, len(selftest.Tests()))
	}
}

func TestSelftestFlagErrors(t *testing.T) {
	bin := buildCLI(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--modes", "native"}, `--modes: unknown mode "native": use skb, drv or zc`},
		{[]string{"--tests", "SEND_RECEIVE,BOGUS"}, "--tests: unknown test BOGUS"},
		{[]string{"-i", "lo"}, "-i needs --peer DEV2"},
		{[]string{"--peer", "lo"}, "--peer needs -i DEV"},
		{[]string{"--modes", ""}, "--modes: give at least one of skb, drv, zc"},
	} {
		out, err := exec.Command(bin, append([]string{"selftest"}, tc.args...)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), "usage: xdpeng selftest") {
			t.Errorf("selftest %v: %v\n%s\nwant an error with %q and the usage", tc.args, err, out, tc.want)
		}
	}
	if os.Geteuid() == 0 {
		p := startCmd(t, exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", bin, "selftest", "--modes", "skb"))
		checkRefused(t, p.wait(t), badInput{want: []string{"selftest needs root", "CAP_SYS_ADMIN", "sudo"}})
	}
}

// selftestLines parses selftest --json output.
func selftestLines(t *testing.T, out string) (tests []selftest.Result, sums []selftest.Summary) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var kind struct{ Type string }
		if err := json.Unmarshal([]byte(line), &kind); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		switch kind.Type {
		case "test":
			var r selftest.Result
			json.Unmarshal([]byte(line), &r)
			tests = append(tests, r)
		case "summary":
			var s selftest.Summary
			json.Unmarshal([]byte(line), &s)
			sums = append(sums, s)
		default:
			t.Errorf("line %q: type %q, want test or summary", line, kind.Type)
		}
	}
	return tests, sums
}

// vethNS makes a namespace holding a veth pair sta <-> stb, both up, and
// removes it when the test ends.
func vethNS(t *testing.T) string {
	t.Helper()
	privtest.Root(t)
	ns := testbed.UniqueName("tst")
	for _, args := range [][]string{
		{"netns", "add", ns},
		{"-n", ns, "link", "add", "name", "sta", "type", "veth", "peer", "name", "stb"},
		{"-n", ns, "link", "set", "sta", "up"},
		{"-n", ns, "link", "set", "stb", "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			exec.Command("ip", "netns", "del", ns).Run()
			t.Fatalf("ip %v: %v\n%s", args, err, out)
		}
		if args[0] == "netns" {
			t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
		}
	}
	return ns
}

// TestSelftestOnPair: -i/--peer in one namespace, JSON lines, exit 0; the
// pair keeps its IPv6 neighbour discovery running, which the program
// leaves alone. With another program on the device every test fails,
// saying so, that program stays, and the exit status is 1.
func TestSelftestOnPair(t *testing.T) {
	bin := buildCLI(t)
	ns := vethNS(t)
	args := []string{bin, "selftest", "-i", "stb", "--peer", "sta", "--modes", "skb,drv",
		"--tests", "SEND_RECEIVE,BIDIRECTIONAL,XDP_DROP_HALF,ALIGNED_INV_DESC", "--json"}
	r := runIn(t, 60*time.Second, ns, args...)
	tests, sums := selftestLines(t, r.stdout)
	if len(tests) != 8 || len(sums) != 2 || r.code != 0 {
		t.Fatalf("%d tests and %d summaries, exit %d; want 8, 2, 0\n%v", len(tests), len(sums), r.code, r)
	}
	for _, tr := range tests {
		if tr.Status != selftest.Pass {
			t.Errorf("%s %s: %s %s", tr.Mode, tr.Test, tr.Status, tr.Detail)
		}
	}
	for _, dev := range []string{"sta", "stb"} {
		if h := readHooks(t, ns, dev); !h.Empty() {
			t.Errorf("%s: left attached: %+v", dev, h)
		}
	}

	theirs := startIn(t, ns, bin, "kern", "pass", "-i", "stb", "-m", "generic", "-d", "30s")
	h, ok := waitHooks(t, ns, "stb", func(h testbedtest.Hooks) bool { return !h.Empty() })
	if !ok {
		t.Fatalf("kern pass attached nothing\n%v", theirs.wait(t))
	}
	r = runIn(t, 60*time.Second, ns, args...)
	tests, sums = selftestLines(t, r.stdout)
	if r.code != 1 || len(sums) != 2 || sums[0].Failed != 4 || sums[1].Failed != 4 {
		t.Errorf("with another program attached: exit %d, summaries %+v; want 1 and every test failed\n%v", r.code, sums, r)
	}
	for _, tr := range tests {
		if tr.Status != selftest.Fail || !strings.Contains(tr.Detail, "already has XDP program") {
			t.Errorf("%s %s: %s %q, want a failure naming the program attached", tr.Mode, tr.Test, tr.Status, tr.Detail)
		}
	}
	if now := readHooks(t, ns, "stb"); !now.Equal(h) {
		t.Errorf("their program: %+v before, %+v after", h, now)
	}
	theirs.signal(t, syscall.SIGINT)
	theirs.wait(t)
}

// TestSelftestInterrupted: Ctrl-C and SIGTERM end a run with status 130
// and remove its own bed; kill -9 leaves no program on the device (the
// kernel drops the bpf_link).
func TestSelftestInterrupted(t *testing.T) {
	bin := buildCLI(t)
	bedName := regexp.MustCompile(`test bed (\S+):`)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			privtest.Root(t)
			p := startCmd(t, exec.Command(bin, "selftest", "--modes", "skb", "--tests", "TEARDOWN"))
			if !p.waitOutput(10*time.Second, false, func(s string) bool { return bedName.MatchString(s) }) {
				t.Fatalf("no header\n%v", p.wait(t))
			}
			name := bedName.FindStringSubmatch(p.stdout.String())[1]
			time.Sleep(300 * time.Millisecond) // into the test's rounds
			p.signal(t, sig)
			r := p.wait(t)
			if r.code != 130 || !strings.Contains(r.stderr, "interrupted") {
				t.Errorf("exit %d, want 130 and interrupted\n%v", r.code, r)
			}
			if l, err := testbed.List(); err != nil || slices.Contains(l, name) {
				t.Errorf("bed %s left behind (%v, %v)", name, l, err)
			}
		})
	}
	t.Run("SIGKILL", func(t *testing.T) {
		ns := vethNS(t)
		p := startIn(t, ns, bin, "selftest", "-i", "stb", "--peer", "sta", "--modes", "skb", "--tests", "TEARDOWN")
		if _, ok := waitHooks(t, ns, "stb", func(h testbedtest.Hooks) bool { return !h.Empty() }); !ok {
			t.Fatalf("nothing attached to stb\n%v", p.wait(t))
		}
		p.signal(t, syscall.SIGKILL)
		p.wait(t)
		if h, ok := waitHooks(t, ns, "stb", func(h testbedtest.Hooks) bool { return h.Empty() }); !ok {
			t.Errorf("after kill -9: stb still has %+v", h)
		}
	})
}
