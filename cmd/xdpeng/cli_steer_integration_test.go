package main

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
)

// asNobody runs argv as uid and gid 65534 with only CAP_NET_RAW and
// CAP_IPC_LOCK: what a worker that puts its sockets in a map it was handed
// needs, without root.
func asNobody(argv ...string) []string {
	return append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
		"--inh-caps=-all,+net_raw,+ipc_lock", "--ambient-caps=+net_raw,+ipc_lock", "--bounding-set=-all,+net_raw,+ipc_lock"}, argv...)
}

// TestCLISteerWorkersWithoutRoot: steer attaches the steering program and
// hands its XSKMAP over, pinned and on a Unix socket in the AF_XDP device
// plugin's protocol; rxdrop run as uid 65534 with only CAP_NET_RAW and
// CAP_IPC_LOCK receives through either, every frame sent received or
// counted as dropped. Refusals are
// clear and leave nothing: a pinned map that is not an XSKMAP, a socket
// nothing listens on, a pod name the server does not know, a device it has
// no map for. When steer ends, the program, the pin and the socket are
// gone.
func TestCLISteerWorkersWithoutRoot(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A bpffs of the test's own, open to the worker's user.
	bpffs := filepath.Join(dir, "bpf")
	if err := os.Mkdir(bpffs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("bpf", bpffs, "bpf", 0, "mode=0755"); err != nil {
		t.Fatalf("mount a bpffs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(bpffs, unix.MNT_DETACH) })
	pin, sock := filepath.Join(bpffs, "dut0"), filepath.Join(dir, "dut0.sock")

	// Bad input before anything is attached.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-i", "dut0"}, "use --pin PATH, --socket PATH, or both"},
		{[]string{"-i", "dut0", "--pin", pin, "--pod", "a"}, "--pod is for --socket's workers"},
		{[]string{"-i", "dut0", "--pin", pin, "--owner", "no-such-user-here"}, "no such user"},
		{[]string{"-i", "dut0", "--pin", bpffs}, "exists: remove it"},
		{[]string{"-i", "nodev0", "--pin", pin}, "nodev0"},
	} {
		r := runIn(t, 20*time.Second, bed.DUTNS, append([]string{bin, "steer"}, c.args...)...)
		if r.code == 0 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("steer %s: want an error saying %q:\n%s", strings.Join(c.args, " "), c.want, r)
		}
	}
	if h := readHooks(t, bed.DUTNS, "dut0"); !h.Empty() {
		t.Fatalf("after steer's refusals dut0 has %+v", h)
	}

	steer := startIn(t, bed.DUTNS, bin, "steer", "-i", "dut0", "--pin", pin, "--socket", sock, "--owner", "65534", "--pod", "worker-0,worker-1")
	if !steer.waitOutput(10*time.Second, false, func(s string) bool { return strings.Contains(s, "until Ctrl-C") }) {
		steer.signal(t, syscall.SIGKILL)
		t.Fatalf("steer did not start:\n%s", steer.wait(t))
	}
	for _, p := range []string{pin, sock} {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil || st.Uid != 65534 || st.Gid != 65534 {
			t.Errorf("%s: owner %d:%d (%v), want 65534:65534", p, st.Uid, st.Gid, err)
		}
	}

	const count = 20000
	receive := func(t *testing.T, xskMap string) {
		t.Helper()
		argv := asNobody(bin, "rxdrop", "-i", "dut0", "--xsk-map", xskMap, "--json")
		if xskMap == sock {
			// The worker introduces itself by its hostname.
			argv = append([]string{"unshare", "--uts", "sh", "-c", `hostname worker-1 && exec "$@"`, "sh"}, argv...)
		}
		p := startIn(t, bed.DUTNS, argv...)
		if !p.waitOutput(10*time.Second, false, func(s string) bool { return strings.Contains(s, `"type":"interval"`) }) {
			p.signal(t, syscall.SIGKILL)
			t.Fatalf("rxdrop --xsk-map %s as uid 65534 did not start:\n%s", xskMap, p.wait(t))
		}
		if g := runIn(t, 30*time.Second, bed.GenNS, bin, "gen", "-i", "gen0", "--count", strconv.Itoa(count), "--rate", "100000"); g.code != 0 {
			p.signal(t, syscall.SIGKILL)
			t.Fatalf("gen:\n%s", g)
		}
		time.Sleep(300 * time.Millisecond)
		p.signal(t, syscall.SIGINT)
		r := p.wait(t)
		if r.code != 0 {
			t.Fatalf("rxdrop --xsk-map %s as uid 65534:\n%s", xskMap, r)
		}
		var s xskSummary
		summaryLine(t, r.stdout, &s)
		// Every frame is received or counted as the kernel's drop (a
		// worker that fell behind on a busy machine: fill ring empty).
		if s.RxPackets == 0 || s.RxPackets+s.XDPStats.RxDropped != count {
			t.Errorf("rxdrop --xsk-map %s as uid 65534 received %d and the kernel dropped %d, of %d sent:\n%s", xskMap, s.RxPackets, s.XDPStats.RxDropped, count, r)
		}
	}
	t.Run("pinned", func(t *testing.T) { receive(t, pin) })
	t.Run("socket", func(t *testing.T) { receive(t, sock) })

	t.Run("refusals", func(t *testing.T) {
		// A pinned map that is not an XSKMAP.
		m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 4})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		arr := filepath.Join(bpffs, "array")
		if err := m.Pin(arr); err != nil {
			t.Fatal(err)
		}
		defer m.Unpin()
		closed := filepath.Join(dir, "closed.sock")
		ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: closed, Net: "unixpacket"})
		if err != nil {
			t.Fatal(err)
		}
		ln.SetUnlinkOnClose(false)
		ln.Close()
		if err := os.Chown(closed, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			argv []string
			want string
		}{
			{[]string{bin, "rxdrop", "-i", "dut0", "--xsk-map", arr, "-d", "1s"}, "not an XSKMAP"},
			{asNobody(bin, "rxdrop", "-i", "dut0", "--xsk-map", filepath.Join(dir, "nothing.sock"), "-d", "1s"), "nothing.sock"},
			{asNobody(bin, "rxdrop", "-i", "dut0", "--xsk-map", closed, "-d", "1s"), "connection refused"},
			{asNobody(bin, "rxdrop", "-i", "dut0", "--xsk-map", sock, "-d", "1s"), `answered "/host_nak"`},
			{[]string{"unshare", "--uts", "sh", "-c", `hostname worker-0 && exec "$@"`, "sh", bin, "rxdrop", "-i", "lo", "--xsk-map", sock, "-d", "1s"}, `answered "/fd_nak"`},
			{asNobody(bin, "rxdrop", "-i", "dut0", "-d", "1s"), "needs root"},
		} {
			r := runIn(t, 20*time.Second, bed.DUTNS, c.argv...)
			if r.code == 0 || !strings.Contains(r.stderr, c.want) {
				t.Errorf("%s: want an error saying %q:\n%s", strings.Join(c.argv, " "), c.want, r)
			}
		}
	})
	if err := unix.Kill(steer.cmd.Process.Pid, 0); err != nil {
		t.Fatalf("steer ended early:\n%s", steer.wait(t))
	}
	steer.signal(t, syscall.SIGTERM)
	if r := steer.wait(t); r.code != 0 || !strings.Contains(r.stdout, "detached from dut0") {
		t.Errorf("steer after SIGTERM:\n%s", r)
	} else if !strings.Contains(r.stderr, "/connect,worker-1 -> /host_ok") || !strings.Contains(r.stderr, "/xsk_map_fd,dut0 -> /fd_ack") {
		t.Errorf("steer did not log the worker's requests:\n%s", r)
	}
	for _, p := range []string{pin, sock} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is left after steer ended", p)
		}
	}
	if h, ok := waitHooks(t, bed.DUTNS, "dut0", testbedtest.Hooks.Empty); !ok {
		t.Errorf("after steer dut0 has %+v, want nothing", h)
	}

	// kill -9: the kernel detaches the program (bpf_link); the pin stays,
	// and the next steer says so; the socket file stays, and the next
	// steer takes it over, but not one that is served.
	killed := startIn(t, bed.DUTNS, bin, "steer", "-i", "dut0", "--pin", pin, "--socket", sock)
	if !killed.waitOutput(10*time.Second, false, func(s string) bool { return strings.Contains(s, "until Ctrl-C") }) {
		killed.signal(t, syscall.SIGKILL)
		t.Fatalf("steer did not start:\n%s", killed.wait(t))
	}
	killed.signal(t, syscall.SIGKILL)
	killed.wait(t)
	if h, ok := waitHooks(t, bed.DUTNS, "dut0", testbedtest.Hooks.Empty); !ok {
		t.Errorf("after steer was killed dut0 has %+v, want nothing", h)
	}
	if r := runIn(t, 20*time.Second, bed.DUTNS, bin, "steer", "-i", "dut0", "--pin", pin); r.code == 0 || !strings.Contains(r.stderr, "killed with -9") {
		t.Errorf("steer over the pin a killed one left: want it refused:\n%s", r)
	}
	if err := os.Remove(pin); err != nil {
		t.Errorf("the pin a killed steer left: %v", err)
	}
	again := startIn(t, bed.DUTNS, bin, "steer", "-i", "dut0", "--socket", sock)
	if !again.waitOutput(10*time.Second, false, func(s string) bool { return strings.Contains(s, "until Ctrl-C") }) {
		again.signal(t, syscall.SIGKILL)
		t.Fatalf("steer over the socket file a killed one left:\n%s", again.wait(t))
	}
	if r := runIn(t, 20*time.Second, bed.DUTNS, bin, "steer", "-i", "dut0", "--socket", sock, "--force"); r.code == 0 || !strings.Contains(r.stderr, "served by another process") {
		t.Errorf("steer on a socket another steer serves: want it refused:\n%s", r)
	}
	again.signal(t, syscall.SIGTERM)
	if r := again.wait(t); r.code != 0 {
		t.Errorf("steer after SIGTERM:\n%s", r)
	}
	if _, err := os.Lstat(sock); err == nil {
		t.Errorf("%s is left after steer ended", sock)
	}
}
