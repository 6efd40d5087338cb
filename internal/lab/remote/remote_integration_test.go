package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/internal/lab/remote"
	"github.com/xdpeng/xdpeng/internal/lab/remote/remotetest"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// The xdpeng binary of this worktree, built once for the tests that need it.
var (
	buildOnce sync.Once
	buildDir  string
	buildPath string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := privtest.Main(m)
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

func xdpengBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "xdpeng-remote-test-")
		if buildErr == nil {
			buildPath, buildErr = remotetest.BuildXdpeng(buildDir)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildPath
}

// dut makes a bed with sshd in its DUT namespace and a Runner for it.
func dut(t *testing.T) (*testbed.Bed, *remotetest.Server, *remote.Runner) {
	t.Helper()
	privtest.Root(t)
	remotetest.RequireOpenSSH(t)
	bed := testbedtest.New(t, 1, 1)
	srv := remotetest.Start(t, bed)
	return bed, srv, srv.Runner(t)
}

func TestRemoteRun(t *testing.T) {
	bed, _, r := dut(t)
	ctx := context.Background()
	args := []string{"printf", `%s\n`, "a b", "it's", "$HOME", "*", ""}
	out, err := r.Run(ctx, args...)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), "a b\nit's\n$HOME\n*\n\n"; got != want {
		t.Errorf("remote printf gave %q, want %q", got, want)
	}
	// The session came from the generator's address over the veth, and the
	// command runs in the DUT's namespace (it sees dut0).
	out, err = r.Run(ctx, "sh", "-c", `echo "$SSH_CONNECTION"; cat /proc/self/net/dev`)
	if err != nil {
		t.Fatal(err)
	}
	conn, devs, _ := strings.Cut(string(out), "\n")
	if f := strings.Fields(conn); len(f) != 4 || f[0] != bed.Links[0].GenIP.String() || f[2] != bed.Links[0].DUTIP.String() {
		t.Errorf("SSH_CONNECTION = %q, want %s ... %s ...", conn, bed.Links[0].GenIP, bed.Links[0].DUTIP)
	}
	if !strings.Contains(devs, bed.Links[0].DUT+":") {
		t.Errorf("remote /proc/self/net/dev has no %s:\n%s", bed.Links[0].DUT, devs)
	}
	// The same kernel: the DUT is this machine.
	out, err = r.Run(ctx, "uname", "-r")
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		t.Fatal(err)
	}
	if release := unix.ByteSliceToString(uts.Release[:]); err != nil || strings.TrimSpace(string(out)) != release {
		t.Errorf("remote uname -r = %q, %v; want %q", out, err, release)
	}
}

func TestRemoteBinary(t *testing.T) {
	_, srv, r := dut(t)
	ctx := context.Background()
	built, err := remote.HashFile(xdpengBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	// The "DUT" shares this machine's files but for root's home, which is
	// the test's own: install there.
	path := "/root/bin/xdpeng"
	if err := os.Mkdir(filepath.Join(srv.Home(), "bin"), 0o755); err != nil {
		t.Fatal(err)
	}

	_, err = r.CheckBinary(ctx, built, path)
	if !errors.Is(err, remote.ErrNotFound) || !strings.Contains(err.Error(), path) {
		t.Errorf("CheckBinary before Install: %v, want ErrNotFound naming %s", err, path)
	}
	got, err := r.Install(ctx, built, path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Path != path || got.SHA256 != built.SHA256 {
		t.Errorf("Install = %+v, want %s with %s", got, path, built.SHA256)
	}
	if got, err := r.CheckBinary(ctx, built, path); err != nil || got.SHA256 != built.SHA256 {
		t.Errorf("CheckBinary after Install = %+v, %v", got, err)
	}
	// The installed binary runs there.
	if out, err := r.RunBinary(ctx, got, "--help"); err != nil || !strings.Contains(string(out), "rxdrop") {
		t.Errorf("remote xdpeng --help: %v: %s", err, out)
	}
	// And at the default place, in the home's cache directory (0700).
	def, err := r.Install(ctx, built, "")
	if want := "/root/" + remote.DefaultInstallPath(built); err != nil || def.Path != want {
		t.Fatalf("Install to the default place = %+v, %v; want %s", def, err, want)
	}
	if fi, err := os.Stat(filepath.Join(srv.Home(), remote.CacheDir)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the cache directory: %v, %v; want it made 0700", fi, err)
	}
	if got, err := r.CheckBinary(ctx, built, ""); err != nil || got != def {
		t.Errorf("CheckBinary after Install to the default place = %+v, %v", got, err)
	}

	// This test binary is another build: refused, naming both.
	self, err := remote.LocalBinary()
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.CheckBinary(ctx, self, path)
	var me *remote.MismatchError
	if !errors.As(err, &me) || !errors.Is(err, remote.ErrMismatch) || me.Remote.SHA256 != built.SHA256 {
		t.Fatalf("CheckBinary of another build: %v", err)
	}
	for _, part := range []string{path, self.Path, built.SHA256[:12], self.SHA256[:12]} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("mismatch message %q does not name %q", err, part)
		}
	}
	// Installing this build over it makes them match.
	if _, err := r.Install(ctx, self, path); err != nil {
		t.Fatal(err)
	}
	if _, err := r.CheckBinary(ctx, self, path); err != nil {
		t.Errorf("CheckBinary after installing this build: %v", err)
	}
}

// TestRemotePlanted: a file at the default install path with the build's
// contents, but owned by another user (nobody) or writable by the group,
// as a local user of a shared DUT could plant it, is refused by the
// look-up and by the run, and does not run.
func TestRemotePlanted(t *testing.T) {
	_, srv, r := dut(t)
	ctx := context.Background()
	ran := "/root/planted-ran"
	// The "build": a script whose run leaves a mark.
	local := filepath.Join(t.TempDir(), "xdpeng")
	if err := os.WriteFile(local, []byte("#!/bin/sh\ntouch "+ran+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	build, err := remote.HashFile(local)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(srv.Home(), remote.CacheDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(srv.Home(), remote.DefaultInstallPath(build))
	onDUT := "/root/" + remote.DefaultInstallPath(build)
	for _, tc := range []struct {
		name  string
		plant func() error
	}{
		{"owned by nobody", func() error { return os.Chown(planted, 65534, 65534) }},
		{"group-writable", func() error { return os.Chmod(planted, 0o775) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, _ := os.ReadFile(local)
			if err := os.WriteFile(planted, data, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Remove(planted) })
			if err := tc.plant(); err != nil {
				t.Fatal(err)
			}
			var ue *remote.UnsafeError
			_, err := r.CheckBinary(ctx, build, "")
			if !errors.As(err, &ue) || ue.Culprit != onDUT {
				t.Fatalf("CheckBinary: %v, want an UnsafeError naming %s", err, onDUT)
			}
			t.Logf("CheckBinary: %v", err)
			if _, err := r.RunBinary(ctx, remote.Binary{Path: onDUT, SHA256: build.SHA256}); !errors.As(err, &ue) {
				t.Errorf("RunBinary: %v, want an UnsafeError", err)
			}
			if _, err := r.StartBinary(ctx, remote.Binary{Path: onDUT, SHA256: build.SHA256}, nil, time.Second, nil); !errors.As(err, &ue) {
				t.Errorf("StartBinary: %v, want an UnsafeError", err)
			}
			if _, err := os.Stat(filepath.Join(srv.Home(), "planted-ran")); err == nil {
				t.Fatal("the planted file ran")
			}
			// Installing over it puts the user's own file there.
			if got, err := r.Install(ctx, build, ""); err != nil || got.Path != onDUT {
				t.Fatalf("Install over it = %+v, %v", got, err)
			}
			var st syscall.Stat_t
			if err := syscall.Stat(planted, &st); err != nil || st.Uid != 0 || st.Mode&0o022 != 0 {
				t.Errorf("after Install: uid %d mode %o, %v", st.Uid, st.Mode&0o7777, err)
			}
		})
	}
	left, _ := filepath.Glob(filepath.Join(dir, "run.*"))
	if len(left) > 0 {
		t.Errorf("private copies left: %v", left)
	}
}

// installed installs the xdpeng binary of this worktree on the DUT of r,
// at the default place.
func installed(t *testing.T, r *remote.Runner) remote.Binary {
	t.Helper()
	built, err := remote.HashFile(xdpengBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Install(context.Background(), built, "")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rxdrop is an AF_XDP drop on dev that takes only UDP to port 9 (the
// generator's) out of the kernel: the ssh session on the same link goes on.
func rxdrop(dev string, more ...string) []string {
	return append([]string{"rxdrop", "-i", dev, "--udp-port", "9", "--json"}, more...)
}

// summary is the part of an AF_XDP mode's JSON summary the tests read.
type summary struct {
	Mode      string  `json:"mode"`
	Interface string  `json:"interface"`
	DurationS float64 `json:"duration_s"`
}

// collector keeps the lines a Process delivers and signals the first.
type collector struct {
	mu    sync.Mutex
	lines []remote.Line
	first chan struct{}
}

func newCollector() *collector { return &collector{first: make(chan struct{})} }

func (c *collector) add(l remote.Line) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, l)
	if len(c.lines) == 1 {
		close(c.first)
	}
}

func (c *collector) all() []remote.Line {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]remote.Line(nil), c.lines...)
}

// checkRun checks that the lines are intervals with growing times, then one
// summary of rxdrop on dev, and returns the summary.
func checkRun(t *testing.T, lines []remote.Line, dev string) summary {
	t.Helper()
	if len(lines) == 0 || lines[len(lines)-1].Type != "summary" {
		t.Fatalf("lines %v: want intervals, then a summary", lines)
	}
	last := -1.0
	for _, l := range lines[:len(lines)-1] {
		var iv struct {
			Type string  `json:"type"`
			T    float64 `json:"t"`
		}
		if err := json.Unmarshal(l.JSON, &iv); err != nil || iv.Type != "interval" || l.Type != "interval" {
			t.Errorf("line %s: %v; want an interval", l.JSON, err)
		}
		if iv.T <= last {
			t.Errorf("interval t=%g after t=%g: out of order", iv.T, last)
		}
		last = iv.T
	}
	var s summary
	if err := json.Unmarshal(lines[len(lines)-1].JSON, &s); err != nil {
		t.Fatal(err)
	}
	if s.Mode != "rxdrop" || s.Interface != dev {
		t.Errorf("summary %+v: want rxdrop on %s", s, dev)
	}
	return s
}

// ended waits until pid has ended, for at most limit. The DUT namespace
// shares this machine's PID namespace, so the remote PID is one here too.
// A Go program's main thread may be a zombie while its other threads still
// exit (and still hold its files, its bpf_links among them): it has ended
// when it is gone, or a zombie with no thread left.
func ended(pid int, limit time.Duration) bool {
	for end := time.Now().Add(limit); ; time.Sleep(50 * time.Millisecond) {
		status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		if err != nil {
			return true
		}
		var zombie, threads bool
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "State:"); ok {
				zombie = strings.HasPrefix(strings.TrimSpace(v), "Z")
			}
			if v, ok := strings.CutPrefix(line, "Threads:"); ok {
				n, _ := strconv.Atoi(strings.TrimSpace(v))
				threads = n > 1
			}
		}
		if zombie && !threads {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

// noXDP fails the test if dev in the DUT namespace has an XDP program.
func noXDP(t *testing.T, bed *testbed.Bed, dev string) {
	t.Helper()
	err := bed.InDUT(func() error {
		l, err := netlink.LinkByName(dev)
		if err != nil {
			return err
		}
		if x := l.Attrs().Xdp; x != nil && x.Attached {
			t.Errorf("%s still has XDP program %d attached", dev, x.ProgId)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// noSessions waits until sshd has no session left.
func noSessions(t *testing.T, srv *remotetest.Server) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); len(srv.Sessions()) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Errorf("sshd sessions left: %v", srv.Sessions())
			return
		}
	}
}

// TestRemoteRxdrop runs a real bounded xdpeng on the DUT and reads its JSON
// lines as they come.
func TestRemoteRxdrop(t *testing.T) {
	bed, srv, r := dut(t)
	bin := installed(t, r)
	dev := bed.Links[0].DUT
	c := newCollector()
	p, err := r.StartBinary(context.Background(), bin, rxdrop(dev, "-n", "0.2"), 2*time.Second, c.add)
	if err != nil {
		t.Fatal(err)
	}
	// Lines come while the run goes on, not all at its end.
	select {
	case <-c.first:
		select {
		case <-p.Done():
			t.Error("the first line came only at the end")
		default:
		}
	case <-p.Done():
		t.Fatalf("ended before its first line: %v (stderr %q)", p.Wait(), p.Stderr())
	}
	if err := p.Wait(); err != nil {
		t.Fatalf("Wait: %v (stderr %q)", err, p.Stderr())
	}
	s := checkRun(t, c.all(), dev)
	if s.DurationS < 2 {
		t.Errorf("summary duration %g s, want the 2 s asked for", s.DurationS)
	}
	if !ended(p.PID(), 10*time.Second) {
		t.Errorf("remote PID %d runs on after its end", p.PID())
	}
	noXDP(t, bed, dev)
	noSessions(t, srv)
}

// TestRemoteStop stops a long remote run early: SIGINT gives the summary.
func TestRemoteStop(t *testing.T) {
	bed, srv, r := dut(t)
	bin := installed(t, r)
	dev := bed.Links[0].DUT
	c := newCollector()
	p, err := r.StartBinary(context.Background(), bin, rxdrop(dev, "-n", "0.2"), time.Hour, c.add)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.first:
	case <-p.Done():
		t.Fatalf("ended before its first line: %v (stderr %q)", p.Wait(), p.Stderr())
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("Stop: %v (stderr %q)", err, p.Stderr())
	}
	checkRun(t, c.all(), dev)
	if !ended(p.PID(), 10*time.Second) {
		t.Errorf("remote PID %d runs on after Stop", p.PID())
	}
	noXDP(t, bed, dev)
	noSessions(t, srv)
}

// TestRemoteManagementLink: with sshd on a link of its own, as a lab's
// management port, the tested link may take every frame.
func TestRemoteManagementLink(t *testing.T) {
	privtest.Root(t)
	remotetest.RequireOpenSSH(t)
	bed := testbedtest.New(t, 1, 2)
	srv := remotetest.StartOn(t, bed, 1)
	if got := srv.Target().Host; got != bed.Links[1].DUTIP.String() {
		t.Fatalf("sshd on link 1 listens on %s, want %s", got, bed.Links[1].DUTIP)
	}
	bin := xdpengBinary(t)
	dev := bed.Links[0].DUT
	c := newCollector()
	p, err := srv.Runner(t).Start(context.Background(), []string{bin, "rxdrop", "-i", dev, "--json", "-n", "0.2"}, time.Second, c.add)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(); err != nil {
		t.Fatalf("Wait: %v (stderr %q)", err, p.Stderr())
	}
	checkRun(t, c.all(), dev)
	noXDP(t, bed, dev)
}

// TestRemoteStopKills: a command that ignores SIGINT is killed after the
// grace period, and the signal reaches only it.
func TestRemoteStopKills(t *testing.T) {
	_, srv, r := dut(t)
	r.StopGrace = 300 * time.Millisecond
	c := newCollector()
	p, err := r.Start(context.Background(), []string{"sh", "-c", `trap '' INT; echo '{"type":"interval"}'; while :; do sleep 0.05; done`, "sh"}, time.Hour, c.add)
	if err != nil {
		t.Fatal(err)
	}
	<-c.first
	err = p.Stop()
	if !errors.Is(err, remote.ErrKilled) {
		t.Errorf("Stop: %v, want ErrKilled", err)
	}
	if !ended(p.PID(), 10*time.Second) {
		t.Errorf("remote PID %d runs on after Stop", p.PID())
	}
	noSessions(t, srv)
}

// TestRemoteTesterKilled: when the tester dies (its ssh SIGKILLed), the
// remote run ends by its own duration and leaves nothing attached.
func TestRemoteTesterKilled(t *testing.T) {
	bed, srv, r := dut(t)
	bin := xdpengBinary(t)
	dev := bed.Links[0].DUT
	const duration = 3 * time.Second
	for _, tc := range []struct {
		name string
		args []string
	}{
		// Prints nothing after its first line, so nothing but its duration
		// can end it once its ssh has gone ($1 is --duration=3s).
		{"silent", []string{"sh", "-c", `echo '{"type":"start"}'; exec sleep "${1#--duration=}"`, "sh"}},
		// Its next interval line finds the session gone: SIGPIPE ends it
		// then, its duration at the latest.
		{"rxdrop", append([]string{bin}, rxdrop(dev, "-n", "0.2")...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCollector()
			p, err := r.Start(context.Background(), tc.args, duration, c.add)
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-c.first:
			case <-p.Done():
				t.Fatalf("ended before its first line: %v (stderr %q)", p.Wait(), p.Stderr())
			}
			killed := time.Now()
			if err := syscall.Kill(p.SSHPID(), syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if err := p.Wait(); err == nil {
				t.Error("Wait after ssh was killed: no error")
			}
			// Generous: a bound for the test, not a measurement.
			if !ended(p.PID(), duration+30*time.Second) {
				t.Fatalf("remote PID %d still runs well after its duration", p.PID())
			}
			t.Logf("remote PID %d ended %v after its ssh was killed", p.PID(), time.Since(killed).Round(10*time.Millisecond))
			noXDP(t, bed, dev)
			noSessions(t, srv)
		})
	}
}

// TestRemoteConnectionLost: an AF_XDP socket that takes every frame of the
// link the session uses cuts the session off. ssh notices after its
// keep-alives (ErrConnectionLost), and the remote run still ends by its
// duration and detaches.
func TestRemoteConnectionLost(t *testing.T) {
	bed, srv, r := dut(t)
	r.AliveInterval, r.AliveCountMax = time.Second, 2
	bin := xdpengBinary(t)
	dev := bed.Links[0].DUT
	// Longer than the keep-alives take to give up (about 3 s), so that the
	// session is lost while the run goes on.
	const duration = 10 * time.Second
	p, err := r.Start(context.Background(), []string{bin, "rxdrop", "-i", dev, "--json"}, duration, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Wait()
	if !errors.Is(err, remote.ErrConnectionLost) {
		t.Fatalf("Wait: %v, want ErrConnectionLost", err)
	}
	t.Logf("Wait: %v", err)
	if !ended(p.PID(), duration+30*time.Second) {
		t.Fatalf("remote PID %d still runs well after its duration", p.PID())
	}
	noXDP(t, bed, dev)
	noSessions(t, srv)
}

func TestRemoteErrors(t *testing.T) {
	bed, srv, r := dut(t)
	ctx := context.Background()
	target := srv.Target()

	refused := target
	refused.Port = 2222
	_, err := srv.RunnerWith(t, refused, srv.ClientKey, srv.KnownHosts).Run(ctx, "true")
	if !errors.Is(err, remote.ErrUnreachable) || !strings.Contains(err.Error(), "Connection refused") {
		t.Errorf("port with no server: %v, want ErrUnreachable", err)
	}
	absent := target
	absent.Host = "198.18.0.3" // on the link, but nobody answers
	ar := srv.RunnerWith(t, absent, srv.ClientKey, srv.KnownHosts)
	ar.ConnectTimeout = time.Second
	_, err = ar.Run(ctx, "true")
	var se *remote.SSHError
	if !errors.Is(err, remote.ErrUnreachable) || !errors.As(err, &se) {
		t.Errorf("absent host: %v, want ErrUnreachable", err)
	}
	_, err = ar.Start(ctx, []string{"xdpeng", "rxdrop"}, time.Second, nil)
	if !errors.Is(err, remote.ErrUnreachable) {
		t.Errorf("Start on an absent host: %v, want ErrUnreachable", err)
	}

	wrongKey := remotetest.NewKey(t, t.TempDir(), "wrong")
	_, err = srv.RunnerWith(t, target, wrongKey, srv.KnownHosts).Run(ctx, "true")
	if !errors.Is(err, remote.ErrAuth) || !strings.Contains(err.Error(), "Permission denied") {
		t.Errorf("wrong key: %v, want ErrAuth", err)
	}
	emptyKnown := filepath.Join(t.TempDir(), "known_hosts")
	os.WriteFile(emptyKnown, nil, 0o600)
	_, err = srv.RunnerWith(t, target, srv.ClientKey, emptyKnown).Run(ctx, "true")
	if !errors.Is(err, remote.ErrHostKey) {
		t.Errorf("unknown host key: %v, want ErrHostKey", err)
	}

	missing := filepath.Join(t.TempDir(), "no-xdpeng")
	self, err := remote.LocalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.CheckBinary(ctx, self, missing); !errors.Is(err, remote.ErrNotFound) {
		t.Errorf("CheckBinary of a missing binary: %v, want ErrNotFound", err)
	}
	p, err := r.Start(ctx, []string{missing, "rxdrop", "-i", "dut0"}, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(); !errors.Is(err, remote.ErrNotFound) {
		t.Errorf("Start of a missing binary: Wait = %v, want ErrNotFound", err)
	}

	// A real xdpeng failing on the DUT: its status and its message.
	bin := xdpengBinary(t)
	p, err = r.Start(ctx, []string{bin, "rxdrop", "-i", "nosuchdev0", "--json"}, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Wait()
	var ee *remote.ExitError
	if !errors.As(err, &ee) || ee.Code <= 0 || !strings.Contains(ee.Stderr, "nosuchdev0") {
		t.Errorf("xdpeng rxdrop on a missing device: %v, want an ExitError whose stderr names the device", err)
	}
	// Killed by a signal: ssh says 255 and nothing else.
	_, err = r.Run(ctx, "sh", "-c", "kill -KILL $$")
	if !errors.As(err, &ee) || ee.Code != -1 {
		t.Errorf("remote command killed: %v, want an ExitError with code -1", err)
	}
	noXDP(t, bed, bed.Links[0].DUT)
}
