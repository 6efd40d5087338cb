package main

// Two hosts on this machine: sshd in a test bed's DUT namespace, listening
// on the DUT's end of a management link (link 1), as a lab's DUT would on
// its management port; the tester's side runs in the generator namespace
// and sends over link 0 (gen0 -> dut0), which the paths take whole.

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/internal/lab/remote"
	"github.com/xdpeng/xdpeng/internal/lab/remote/remotetest"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// twoHostBed is a bed with sshd on link 1 and the xdpeng binary under
// test, which --dut-install copies to the DUT's ~/.cache/xdpeng (in the
// sessions' home, the test's own tmpfs).
type twoHostBed struct {
	bed       *testbed.Bed
	srv       *remotetest.Server
	bin       string
	installed string // where --dut-install puts bin
	sshConfig string // ssh -F: the test's key and known_hosts
}

func newTwoHostBed(t *testing.T) *twoHostBed {
	t.Helper()
	privtest.Root(t)
	remotetest.RequireOpenSSH(t)
	bed := testbedtest.New(t, 1, 2)
	srv := remotetest.StartOn(t, bed, 1)
	b := &twoHostBed{bed: bed, srv: srv, bin: buildCLI(t), sshConfig: srv.Runner(t).SSH[2]}
	h, err := remote.HashFile(b.bin)
	if err != nil {
		t.Fatal(err)
	}
	b.installed = "/root/" + remote.DefaultInstallPath(h)
	return b
}

// args is the tester's command line: bin, then the command and its flags,
// then the two-host flags.
func (b *twoHostBed) args(cmd ...string) []string {
	return append(append([]string{b.bin}, cmd...),
		"--dut", b.srv.Target().String(), "--ssh-command", "ssh -F "+b.sshConfig, "--dut-if", "dut0", "--gen-if", "gen0")
}

// tableRow is a path's line of compare's table and its "lost" line.
type tableRow struct {
	sent, received, dropped uint64
	lost                    string // "socket_drops 12, unexplained 0"
}

// readTable picks each path's figures out of compare's text output.
func readTable(t *testing.T, out string, paths []string) map[string]tableRow {
	t.Helper()
	rows := map[string]tableRow{}
	for _, p := range paths {
		var r tableRow
		row := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(p) + ` .* (\d+) +(\d+) +(\d+) *$`).FindStringSubmatch(out)
		lost := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(p) + ` +lost (\d+): (.*)$`).FindStringSubmatch(out)
		if row == nil || lost == nil {
			t.Fatalf("no row or no lost line of %s in:\n%s", p, out)
		}
		r.sent, _ = strconv.ParseUint(row[1], 10, 64)
		r.received, _ = strconv.ParseUint(row[2], 10, 64)
		r.dropped, _ = strconv.ParseUint(row[3], 10, 64)
		if n, _ := strconv.ParseUint(lost[1], 10, 64); n != r.dropped {
			t.Errorf("%s: lost %d, dropped column %d", p, n, r.dropped)
		}
		r.lost = lost[2]
		rows[p] = r
	}
	return rows
}

// checkExact checks that a row's count closes: sent = received + dropped,
// dropped the sum of the reasons, nothing unexplained.
func checkExact(t *testing.T, mode, path string, r tableRow) {
	t.Helper()
	var sum uint64
	unexplained := false
	for _, part := range strings.Split(r.lost, ", ") {
		name, n, _ := strings.Cut(part, " ")
		v, err := strconv.ParseUint(n, 10, 64)
		if err != nil {
			t.Errorf("%s %s: lost line %q", mode, path, r.lost)
		}
		if name == "unexplained" {
			unexplained = v == 0
			continue
		}
		sum += v
	}
	if r.sent == 0 || r.received == 0 || r.received+r.dropped != r.sent || sum != r.dropped || !unexplained {
		t.Errorf("%s %s: sent %d, received %d, dropped %d, lost %q: the count does not close", mode, path, r.sent, r.received, r.dropped, r.lost)
	}
}

// TestCLICompareTwoHosts: compare --dut on the bed prints the same paths as
// the local run on a bed of its own, each counted exactly.
func TestCLICompareTwoHosts(t *testing.T) {
	b := newTwoHostBed(t)
	paths := []string{"xdp-drop", "xsk-drop"}
	before := readHooks(t, b.bed.DUTNS, "dut0")
	two := runIn(t, 2*time.Minute, b.bed.GenNS, b.args("compare", "--paths", strings.Join(paths, ","), "-d", "1", "--dut-install")...)
	t.Logf("compare --dut:\n%s", two)
	if two.code != 0 {
		t.Fatalf("compare --dut failed:\n%s", two)
	}
	if !strings.Contains(two.stdout, "two hosts: DUT "+b.srv.Target().String()+", its dut0 to the tester's gen0") ||
		!strings.Contains(two.stderr, "installed on the DUT as "+b.installed) {
		t.Errorf("the output does not say what ran where:\n%s", two)
	}
	local := runIn(t, 2*time.Minute, b.bed.GenNS, b.bin, "compare", "--testbed", "--paths", strings.Join(paths, ","), "-d", "1")
	if local.code != 0 {
		t.Fatalf("compare --testbed failed:\n%s", local)
	}
	remoteRows, localRows := readTable(t, two.stdout, paths), readTable(t, local.stdout, paths)
	for _, p := range paths {
		checkExact(t, "two hosts", p, remoteRows[p])
		checkExact(t, "local", p, localRows[p])
	}
	// A row that carried all the generator offered marks its Mpps with *.
	order := regexp.MustCompile(`(?m)^  (xdp-drop|xsk-drop) +[0-9.]+\*? `)
	got, want := order.FindAllStringSubmatch(two.stdout, -1), order.FindAllStringSubmatch(local.stdout, -1)
	if len(got) != 2 || len(want) != 2 || got[0][1] != want[0][1] || got[1][1] != want[1][1] {
		t.Errorf("rows %q, the local run's %q", got, want)
	}
	if h, ok := waitHooks(t, b.bed.DUTNS, "dut0", before.Equal); !ok {
		t.Errorf("dut0 hooks %+v after the run, %+v before", h, before)
	}
	// Installed once, found again: a second run needs no --dut-install.
	again := runIn(t, 2*time.Minute, b.bed.GenNS, b.args("compare", "--paths", "tc-drop", "-d", "0.5")...)
	if again.code != 0 || !strings.Contains(again.stderr, "is its xdpeng this build") || strings.Contains(again.stderr, "copying") {
		t.Errorf("second run:\n%s", again)
	}
}

// dutProcesses lists the processes that run the DUT's copy of xdpeng (its
// private copy in the cache directory, removed as it starts), and this
// host's ssh clients of the test's config (the DUT shares this machine's
// PID namespace).
func (b *twoHostBed) dutProcesses() []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(cmd) == 0 {
			continue
		}
		line := strings.ReplaceAll(string(cmd), "\x00", " ")
		exe, _ := os.Readlink("/proc/" + e.Name() + "/exe")
		if strings.Contains(exe, "/root/"+remote.CacheDir+"/run.") || strings.Contains(line, b.sshConfig) {
			if state, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil && strings.Contains(string(state), ") Z ") {
				continue // a zombie holds nothing
			}
			out = append(out, e.Name()+": "+line)
		}
	}
	return out
}

// TestCLITwoHostsTesterKilled: kill -9 of the tester in the middle of a
// path leaves nothing running and nothing attached on the DUT before the
// run would have ended: the ssh clients go with their reader, sshd closes
// the sessions, and the DUT's commands end at their next write (their own
// duration bounds them if the network is gone too).
func TestCLITwoHostsTesterKilled(t *testing.T) {
	b := newTwoHostBed(t)
	const perPath = 10 * time.Second
	for _, path := range []string{"xsk-drop", "xdp-tx"} {
		t.Run(path, func(t *testing.T) {
			before := readHooks(t, b.bed.DUTNS, "dut0")
			p := startIn(t, b.bed.GenNS, b.args("compare", "--paths", path, "-d", strconv.Itoa(int(perPath.Seconds())), "--dut-install")...)
			// The path is set up on the DUT (the tester waits for its first
			// report) before it measures.
			if !p.waitOutput(time.Minute, true, func(s string) bool { return strings.Contains(s, "measuring for") }) {
				p.signal(t, syscall.SIGKILL)
				t.Fatalf("the path never started measuring:\n%s", p.wait(t))
			}
			if _, ok := waitHooks(t, b.bed.DUTNS, "dut0", func(h testbedtest.Hooks) bool { return !h.Equal(before) }); !ok {
				p.signal(t, syscall.SIGKILL)
				t.Fatalf("nothing attached on the DUT:\n%s", p.wait(t))
			}
			if left := b.dutProcesses(); len(left) == 0 {
				t.Fatal("no process of the run found on the DUT while it runs")
			}
			p.signal(t, syscall.SIGKILL)
			killed := time.Now()
			if r := p.wait(t); r.signal != syscall.SIGKILL {
				t.Fatalf("not killed:\n%s", r)
			}
			var left []string
			for left = b.dutProcesses(); len(left) > 0 && time.Since(killed) < perPath; left = b.dutProcesses() {
				time.Sleep(50 * time.Millisecond)
			}
			if len(left) > 0 {
				t.Errorf("%v after kill -9, still running: %q", perPath, left)
			}
			h, ok := waitHooks(t, b.bed.DUTNS, "dut0", before.Equal)
			if !ok {
				t.Errorf("dut0 hooks %+v after the tester died, %+v before", h, before)
			}
			t.Logf("everything on the DUT ended %v after the tester was killed", time.Since(killed).Round(10*time.Millisecond))
			for end := time.Now().Add(10 * time.Second); len(b.srv.Sessions()) > 0 && time.Now().Before(end); {
				time.Sleep(50 * time.Millisecond)
			}
			if s := b.srv.Sessions(); len(s) > 0 {
				t.Errorf("sshd sessions left: %v", s)
			}
		})
	}
	// The tester's own side (gen0's sinks, its generator) went with it.
	if h := readHooks(t, b.bed.GenNS, "gen0"); !h.Empty() {
		t.Errorf("gen0 hooks left: %+v", h)
	}
}

// TestCLITwoHostsErrors: a DUT that cannot be reached, a key it refuses, a
// binary it does not have and another build each give one clear error and
// leave the DUT as it was.
func TestCLITwoHostsErrors(t *testing.T) {
	b := newTwoHostBed(t)
	before := readHooks(t, b.bed.DUTNS, "dut0")
	wrongKey := remotetest.NewKey(t, t.TempDir(), "wrong")
	wrong := b.srv.RunnerWith(t, b.srv.Target(), wrongKey, b.srv.KnownHosts).SSH[2]
	refused := b.srv.Target()
	refused.Port = 2222
	other := t.TempDir() + "/xdpeng"
	if err := os.WriteFile(other, []byte("#!/bin/sh\necho another build\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// This build, planted at the default install path by another user
	// (nobody), as a local user of a shared DUT could.
	planted := b.srv.Home() + "/" + remote.DefaultInstallPath(mustHash(t, b.bin))
	if err := os.MkdirAll(b.srv.Home()+"/"+remote.CacheDir, 0o700); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(b.bin)
	if err == nil {
		err = os.WriteFile(planted, data, 0o755)
	}
	if err == nil {
		err = os.Chown(planted, 65534, 65534)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string // replacing or added to the two-host flags
		want []string
	}{
		{"planted by another user", nil,
			[]string{b.installed + " is not run", "(uid 65534)", "pass --dut-install"}},
		{"install where others write", []string{"--dut-install", "--dut-xdpeng", "/tmp/xdpeng-" + strconv.Itoa(os.Getpid())},
			[]string{"is not installed there", "the directory /tmp is owned by root (uid 0) with mode drwxrwxrwt", "chmod go-w"}},
		{"unreachable", []string{"--dut", refused.String()},
			[]string{"DUT unreachable", "Connection refused", "check the address, and that sshd runs on the DUT"}},
		{"wrong key", []string{"--ssh-command", "ssh -F " + wrong},
			[]string{"ssh authentication failed", "Permission denied", "authorized_keys"}},
		{"missing binary", []string{"--dut-xdpeng", "/nonexistent/xdpeng"},
			[]string{"no such program on the DUT", "has no executable /nonexistent/xdpeng", "pass --dut-install"}},
		{"another build", []string{"--dut-xdpeng", other},
			[]string{"is not the same build as this one", other, "pass --dut-install"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := b.args("compare", "--paths", "xdp-drop", "-d", "1", "--quiet")
			// A flag given twice takes its last value.
			r := runIn(t, time.Minute, b.bed.GenNS, append(args, tc.args...)...)
			checkRefused(t, r, badInput{name: tc.name, want: tc.want})
			if h := readHooks(t, b.bed.DUTNS, "dut0"); !h.Equal(before) {
				t.Errorf("dut0 hooks %+v, %+v before", h, before)
			}
		})
	}
	if _, err := os.Stat("/tmp/xdpeng-" + strconv.Itoa(os.Getpid())); err == nil {
		t.Error("--dut-install wrote into /tmp")
	}
}

func mustHash(t *testing.T, path string) remote.Binary {
	t.Helper()
	h, err := remote.HashFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
