// Package remotetest gives tests a DUT reached over ssh on this machine: an
// OpenSSH server (Debian's openssh-server) in a test bed's DUT namespace,
// listening only on the DUT's address of one link (198.18.0.2 on link 0 by
// default), with a host key and a client key made for the test, and Runners
// whose ssh runs in the generator namespace, so that every session crosses
// the bed's veth as it would cross a lab's cable.
//
// The sessions share that link with whatever a test runs on it: a program
// that takes every frame of the DUT's end (XDP drop, an AF_XDP socket
// without --udp-port) takes the ssh packets too, and the session stalls
// until its keep-alives give up. Filter the test traffic (rxdrop
// --udp-port), or listen on another link (a bed with two links, StartOn
// link 1) as a lab's management port would.
//
// sshd runs with its own configuration from the test's temporary directory
// (no PAM, root by key only, no passwords, no forwarding) and in a private
// mount namespace whose /run and /root are fresh tmpfs: its privilege
// separation directory (/run/sshd) is made and removed with it, and so is
// the sessions' home directory (root's, where --dut-install puts xdpeng);
// the machine's /run and /root are left alone (Home reaches the sessions'
// home from outside). Everything is stopped and removed in
// t.Cleanup; if the test binary dies, the kernel kills sshd (its parent-death
// signal).
package remotetest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/internal/lab/remote"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// SSHDPath is where Debian's openssh-server installs sshd, which must be
// started by its absolute path.
const SSHDPath = "/usr/sbin/sshd"

// RequireOpenSSH lets the test go on only where sshd, ssh and ssh-keygen
// are installed; otherwise it skips, or under XDPENG_REQUIRE_PRIV=1 (make
// test, CI) fails, as a privileged test that cannot run does.
func RequireOpenSSH(tb testing.TB) {
	tb.Helper()
	if _, err := os.Stat(SSHDPath); err != nil {
		privtest.Unavailable(tb, "needs sshd (apt-get install openssh-server): %v", err)
		return
	}
	for _, prog := range []string{"ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(prog); err != nil {
			privtest.Unavailable(tb, "needs %s (apt-get install openssh-client): %v", prog, err)
			return
		}
	}
}

// Server is an sshd in a bed's DUT namespace.
type Server struct {
	Bed        *testbed.Bed
	Addr       net.IP // where it listens: the DUT's address on one link
	Port       int
	Dir        string // keys and configuration files
	ClientKey  string // private key authorised to log in as root
	KnownHosts string // known_hosts with the server's host key

	cmd     *exec.Cmd
	exited  chan struct{} // closed when sshd has exited
	logPath string        // sshd's log (-e: its stderr)
	release chan struct{} // ends the thread that started sshd
	configs atomic.Int32
}

// Start starts sshd on link 0 of bed; see StartOn.
func Start(tb testing.TB, bed *testbed.Bed) *Server {
	tb.Helper()
	return StartOn(tb, bed, 0)
}

// StartOn starts sshd in bed's DUT namespace, listening on the DUT's
// address of link k only, and stops it when the test ends. It skips the
// test without root or OpenSSH.
func StartOn(tb testing.TB, bed *testbed.Bed, k int) *Server {
	tb.Helper()
	RequireOpenSSH(tb)
	if k < 0 || k >= len(bed.Links) {
		tb.Fatalf("remotetest: the bed has no link %d (it has %d)", k, len(bed.Links))
	}
	dir := tb.TempDir()
	s := &Server{
		Bed:        bed,
		Addr:       bed.Links[k].DUTIP,
		Port:       22,
		Dir:        dir,
		KnownHosts: filepath.Join(dir, "known_hosts"),
		exited:     make(chan struct{}),
		release:    make(chan struct{}),
	}
	hostKey := NewKey(tb, dir, "host")
	s.ClientKey = NewKey(tb, dir, "client")
	pub, err := os.ReadFile(s.ClientKey + ".pub")
	if err != nil {
		tb.Fatal(err)
	}
	authorized := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authorized, pub, 0o600); err != nil {
		tb.Fatal(err)
	}
	hostPub, err := os.ReadFile(hostKey + ".pub")
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(s.KnownHosts, []byte(s.Addr.String()+" "+string(hostPub)), 0o600); err != nil {
		tb.Fatal(err)
	}
	config := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`# sshd for one test: root by this test's key only, nothing else.
ListenAddress %s:%d
HostKey %q
AuthorizedKeysFile %q
PidFile none
UsePAM no
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitEmptyPasswords no
StrictModes no
PrintMotd no
PrintLastLog no
UseDNS no
X11Forwarding no
AllowTcpForwarding no
AllowAgentForwarding no
PermitTunnel no
`, s.Addr, s.Port, hostKey, authorized)), 0o600); err != nil {
		tb.Fatal(err)
	}

	s.cmd = exec.Command(SSHDPath, "-D", "-e", "-f", config)
	// A file, not a pipe: sessions inherit sshd's stderr, and Wait would
	// wait for the last of them to close a pipe.
	s.logPath = filepath.Join(dir, "sshd.log")
	logFile, err := os.Create(s.logPath)
	if err != nil {
		tb.Fatal(err)
	}
	defer logFile.Close()
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	// Killed by the kernel when the thread that starts it ends, which is
	// when Cleanup releases it, or when the test binary dies.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.startInDUT(); err != nil {
		tb.Fatalf("start sshd in %s: %v", bed.DUTNS, err)
	}
	go func() {
		s.cmd.Wait()
		close(s.exited)
	}()
	tb.Cleanup(func() {
		if err := s.stop(); err != nil {
			tb.Errorf("stop sshd: %v", err)
		}
		if tb.Failed() {
			tb.Logf("sshd log:\n%s", s.Log())
		}
	})
	listening := fmt.Sprintf("Server listening on %s port %d", s.Addr, s.Port)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(s.Log(), listening); {
		select {
		case <-s.exited:
			tb.Fatalf("sshd exited: %s", s.Log())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatalf("sshd does not listen after 10 s: %s", s.Log())
		}
	}
	return s
}

// startInDUT starts sshd from a thread that is in the DUT's network
// namespace and in a private mount namespace with a fresh /run and /root.
// The thread stays until release is closed: sshd's parent-death signal is
// tied to it.
func (s *Server) startInDUT() error {
	dut, err := netns.GetFromPath(filepath.Join(testbed.NetnsDir, s.Bed.DUTNS))
	if err != nil {
		return err
	}
	defer dut.Close()
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the thread's namespaces are not the process's,
		// so Go must end it with this goroutine.
		runtime.LockOSThread()
		err := func() error {
			if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
				return fmt.Errorf("unshare mount namespace: %w", err)
			}
			if err := unix.Mount("", "/", "", unix.MS_SLAVE|unix.MS_REC, ""); err != nil {
				return fmt.Errorf("make mounts private: %w", err)
			}
			if err := unix.Mount("tmpfs", "/run", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
				return fmt.Errorf("mount a tmpfs on /run: %w", err)
			}
			if err := os.Mkdir("/run/sshd", 0o755); err != nil {
				return err
			}
			// The sessions' home (root's): the test's own, empty.
			if err := unix.Mount("tmpfs", "/root", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700"); err != nil {
				return fmt.Errorf("mount a tmpfs on /root: %w", err)
			}
			if err := netns.Set(dut); err != nil {
				return fmt.Errorf("enter %s: %w", s.Bed.DUTNS, err)
			}
			return s.cmd.Start()
		}()
		errc <- err
		if err == nil {
			<-s.release
		}
	}()
	return <-errc
}

// stop ends sshd (SIGTERM, then SIGKILL) and every session it still has.
func (s *Server) stop() error {
	defer close(s.release)
	sessions := s.descendants()
	s.cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
		err = fmt.Errorf("sshd did not end within 5 s of SIGTERM; killed")
	}
	// A listener's end does not end its sessions.
	for _, pid := range append(sessions, s.descendants()...) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	return err
}

// Log returns what sshd has logged so far.
func (s *Server) Log() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// Home is the sessions' home directory (root's, a tmpfs of the test's) as
// this process reaches it: through sshd's view of the file system.
func (s *Server) Home() string { return "/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/root/root" }

// PID returns sshd's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Sessions returns the process ids of sshd's children: one per connection
// (and its pre-authentication helpers) while it lasts.
func (s *Server) Sessions() []int { return children(s.cmd.Process.Pid) }

// descendants returns every process below sshd.
func (s *Server) descendants() []int {
	var all []int
	for todo := []int{s.cmd.Process.Pid}; len(todo) > 0; {
		kids := children(todo[0])
		todo = append(todo[1:], kids...)
		all = append(all, kids...)
	}
	return all
}

// children lists the processes whose parent is pid.
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var kids []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parent(p); ok && ppid == pid {
			kids = append(kids, p)
		}
	}
	return kids
}

func parent(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// Target is the server as ssh://root@ADDR.
func (s *Server) Target() remote.Target {
	t := remote.Target{User: "root", Host: s.Addr.String()}
	if s.Port != 22 {
		t.Port = s.Port
	}
	return t
}

// Runner returns a Runner for the server's Target that logs in with the
// authorised key; see RunnerWith.
func (s *Server) Runner(tb testing.TB) *remote.Runner {
	tb.Helper()
	return s.RunnerWith(tb, s.Target(), s.ClientKey, s.KnownHosts)
}

// RunnerWith returns a Runner for target that runs `ssh -F CONFIG` in the
// bed's generator namespace, where CONFIG offers only key (no agent) and
// trusts only the host keys in knownHosts. Tests of failures pass another
// key (NewKey), target or known_hosts file.
func (s *Server) RunnerWith(tb testing.TB, target remote.Target, key, knownHosts string) *remote.Runner {
	tb.Helper()
	config := filepath.Join(s.Dir, fmt.Sprintf("ssh_config.%d", s.configs.Add(1)))
	text := fmt.Sprintf(`Host *
	IdentityFile %q
	IdentitiesOnly yes
	IdentityAgent none
	UserKnownHostsFile %q
	GlobalKnownHostsFile /dev/null
	StrictHostKeyChecking yes
	UpdateHostKeys no
	CheckHostIP no
`, key, knownHosts)
	if err := os.WriteFile(config, []byte(text), 0o600); err != nil {
		tb.Fatal(err)
	}
	return &remote.Runner{
		Target:   target,
		SSH:      []string{"ssh", "-F", config},
		StartCmd: InNamespace(s.Bed.GenNS),
	}
}

// InNamespace returns a Runner.StartCmd that starts each ssh in the named
// network namespace: a child is made in the namespace of the thread that
// forks it, and testbed.Do runs on a thread locked in the namespace.
func InNamespace(ns string) func(*exec.Cmd) error {
	return func(c *exec.Cmd) error { return testbed.Do(ns, c.Start) }
}

// NewKey makes an ed25519 key pair without passphrase, dir/name and
// dir/name.pub, and returns the private key's path.
func NewKey(tb testing.TB, dir, name string) string {
	tb.Helper()
	p := filepath.Join(dir, name)
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "xdpeng-test-"+name, "-f", p).CombinedOutput(); err != nil {
		tb.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	return p
}

// BuildXdpeng builds this module's cmd/xdpeng into dir and returns the
// binary's path. It needs the go command in PATH (go test puts it there).
func BuildXdpeng(dir string) (string, error) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("build xdpeng: %w", err)
	}
	out := filepath.Join(dir, "xdpeng")
	if b, err := exec.Command(goCmd, "build", "-o", out, "github.com/xdpeng/xdpeng/cmd/xdpeng").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build cmd/xdpeng: %v: %s", err, b)
	}
	return out, nil
}
