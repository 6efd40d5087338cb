package vm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/xdpeng/xdpeng/internal/lab/testbed"
)

// StateDir holds one directory per bed, NAME: its state, QEMU's pid file,
// console log and monitor socket, and the bed's ssh keys.
const StateDir = "/run/xdpeng/vm"

// Limits of a bed.
const (
	MaxQueues = 8
	MaxLinks  = 4
)

// Addresses of the management link: the generator namespace's end and the
// guest's.
const (
	mgmtHostCIDR  = "198.19.255.1/30"
	mgmtGuestIP   = "198.19.255.2"
	mgmtGuestCIDR = mgmtGuestIP + "/30"
	mgmtTap       = "vmgmt"
	loopBridge    = "loop0"
)

// TapMTU is the MTU of the ports' taps: a guest port whose MTU is raised
// up to it sends and receives frames that long (the guest's ports start at
// 1500).
const TapMTU = 9000

// TapQueueLen is the transmit queue of the ports' taps: the frames a tap
// holds for the guest while the guest's receive ring has no room (QEMU
// stops reading the tap), beyond which the tap drops them (its TX
// dropped). It holds more than the most a test in the guest keeps in
// flight between its looped ports (selftest: batches of 2048), so that the
// bed, as a link with flow control, loses nothing a test sent.
const TapQueueLen = 8192

// Config describes a bed.
type Config struct {
	Name   string // the bed; its generator namespace is NAME-gen
	Kernel string // the guest kernel's release, one of Releases
	Queues int    // queues of each port (virtio-net multiqueue)
	Links  int    // ports: guest NICs eth0.. and their taps vtap0.. in NAME-gen
	// Loop joins the ports' taps in a bridge, so that the guest's ports
	// reach one another (a frame sent out of eth1 arrives at eth0) and a
	// test in the guest has a traffic source of its own.
	Loop bool
	// Hash offers the ports' guests virtio-net's hash report
	// (VIRTIO_NET_F_HASH_REPORT): QEMU computes each received frame's RSS
	// hash (Toeplitz, with the key the guest's driver sets) and writes it
	// and its kind in the frame's virtio-net header, where a driver that
	// implements the XDP RX hash kfunc (virtio_net from Linux 6.11) gives
	// it to XDP programs.
	Hash        bool
	CPUs        int           // the guest's CPUs (default 2)
	MemoryMB    int           // the guest's memory (default 1024)
	BootTimeout time.Duration // until ssh answers (default 3 minutes)
}

// Port is one of the guest's NICs and its tap in the generator namespace.
type Port struct {
	Guest   string // its name in the guest: eth0
	Tap     string // the tester end in NAME-gen: vtap0
	MAC     string // the guest NIC's MAC
	GuestIP string // 198.18.K.2/24
	TapIP   string // 198.18.K.1/24, unless the bed loops its ports
	Netdev  string // QEMU's netdev id, for the monitor's set_link: net0
	Device  string // QEMU's device id, for the monitor's device_del: dev0
}

// Bed is a running (or dead) guest and what it is attached to.
type Bed struct {
	Name    string
	GenNS   string
	Kernel  Kernel
	Queues  int
	Links   int
	Loop    bool
	Hash    bool
	CPUs    int
	Ports   []Port
	MgmtIP  string // the guest's address on the management link
	Dir     string // its state directory
	Started time.Time
	PID     int  `json:"-"` // QEMU's, 0 if it is not running
	Running bool `json:"-"`
}

// ExistsError says a bed of that name is already up.
type ExistsError struct{ Name string }

func (e *ExistsError) Error() string { return fmt.Sprintf("VM test bed %s already exists", e.Name) }

// NotFoundError says there is no bed of that name.
type NotFoundError struct{ Name string }

func (e *NotFoundError) Error() string { return fmt.Sprintf("no VM test bed %s", e.Name) }

func bedDir(name string) string { return filepath.Join(StateDir, name) }

func (cfg Config) withDefaults() (Config, error) {
	if err := testbed.ValidateName(cfg.Name); err != nil {
		return cfg, err
	}
	if _, err := LookupRelease(cfg.Kernel); err != nil {
		return cfg, err
	}
	if cfg.Queues == 0 {
		cfg.Queues = 1
	}
	if cfg.Links == 0 {
		cfg.Links = 1
	}
	if cfg.Queues < 1 || cfg.Queues > MaxQueues {
		return cfg, fmt.Errorf("queues %d: use 1-%d", cfg.Queues, MaxQueues)
	}
	if cfg.Links < 1 || cfg.Links > MaxLinks {
		return cfg, fmt.Errorf("links %d: use 1-%d", cfg.Links, MaxLinks)
	}
	if cfg.Loop && cfg.Links < 2 {
		return cfg, errors.New("a bed that loops its ports needs at least 2 links")
	}
	if cfg.CPUs == 0 {
		cfg.CPUs = 2
	}
	if cfg.MemoryMB == 0 {
		cfg.MemoryMB = 1024
	}
	if cfg.BootTimeout == 0 {
		cfg.BootTimeout = 3 * time.Minute
	}
	return cfg, nil
}

// Up boots a bed. It returns once a command runs in the guest; whatever
// fails on the way, or ctx ending, removes what was made. The state is
// written before anything is made, so that Down removes a bed whose maker
// was killed.
func Up(ctx context.Context, cfg Config) (_ *Bed, err error) {
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if b, err := Open(cfg.Name); err == nil {
		if b.Running {
			return nil, &ExistsError{Name: cfg.Name}
		}
		if err := Down(cfg.Name); err != nil {
			return nil, fmt.Errorf("remove what a dead VM test bed %s left: %w", cfg.Name, err)
		}
	}
	if beds, _ := testbed.List(); slices.Contains(beds, cfg.Name) {
		return nil, fmt.Errorf("a veth test bed %s exists (namespace %s): remove it or choose another name", cfg.Name, testbed.GenNS(cfg.Name))
	}
	if err := checkTools(); err != nil {
		return nil, err
	}
	rel, _ := LookupRelease(cfg.Kernel)
	k, err := Fetch(ctx, rel)
	if err != nil {
		return nil, err
	}
	b := &Bed{
		Name: cfg.Name, GenNS: testbed.GenNS(cfg.Name), Kernel: k, Queues: cfg.Queues, Links: cfg.Links,
		Loop: cfg.Loop, Hash: cfg.Hash, CPUs: cfg.CPUs, MgmtIP: mgmtGuestIP, Dir: bedDir(cfg.Name), Started: time.Now(),
	}
	for i := range cfg.Links {
		p := Port{
			Guest: fmt.Sprintf("eth%d", i), Tap: fmt.Sprintf("vtap%d", i),
			MAC:     fmt.Sprintf("52:54:00:5e:00:%02x", i),
			GuestIP: fmt.Sprintf("198.18.%d.2/24", i), Netdev: fmt.Sprintf("net%d", i),
			Device: fmt.Sprintf("dev%d", i),
		}
		if !cfg.Loop {
			p.TapIP = fmt.Sprintf("198.18.%d.1/24", i)
		}
		b.Ports = append(b.Ports, p)
	}
	if err := os.MkdirAll(b.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("VM test bed state: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, Down(cfg.Name))
		}
	}()
	if err := b.save(); err != nil {
		return nil, err
	}
	if err := b.makeKeys(ctx); err != nil {
		return nil, err
	}
	if err := writeInitramfs(filepath.Join(b.Dir, "initramfs.cpio"), k); err != nil {
		return nil, err
	}
	if err := b.makeNetwork(ctx); err != nil {
		return nil, err
	}
	if err := b.startQEMU(ctx, cfg); err != nil {
		return nil, err
	}
	if err := b.waitReady(ctx, cfg.BootTimeout); err != nil {
		return nil, err
	}
	return b, nil
}

// checkTools says which program a bed needs is missing.
func checkTools() error {
	for _, t := range []struct{ bin, pkg string }{
		{"qemu-system-x86_64", "qemu-system-x86"}, {"ip", "iproute2"}, {"ssh", "openssh-client"},
		{"ssh-keygen", "openssh-client"}, {"/usr/sbin/sshd", "openssh-server"}, {Busybox, "busybox-static"},
		{"dpkg-deb", "dpkg"}, {"xz", "xz-utils"}, {"zstd", "zstd"}, {"apt-get", "apt"},
	} {
		if _, err := exec.LookPath(t.bin); err != nil {
			return fmt.Errorf("a VM test bed needs %s: install %s (apt-get install %s)", t.bin, t.pkg, t.pkg)
		}
	}
	return nil
}

func (b *Bed) save() error {
	j, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(b.Dir, "state.json.tmp")
	if err := os.WriteFile(tmp, j, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(b.Dir, "state.json"))
}

func (b *Bed) path(f string) string { return filepath.Join(b.Dir, f) }

// makeKeys makes the guest's host key and the key the host logs in with.
func (b *Bed) makeKeys(ctx context.Context) error {
	for _, k := range []string{"id_ed25519", "ssh_host_ed25519_key"} {
		out, err := exec.CommandContext(ctx, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "xdpeng-vm-"+b.Name, "-f", b.path(k)).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ssh-keygen: %w: %s", err, bytes.TrimSpace(out))
		}
	}
	pub, err := os.ReadFile(b.path("id_ed25519.pub"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(b.path("authorized_keys"), pub, 0o600); err != nil {
		return err
	}
	host, err := os.ReadFile(b.path("ssh_host_ed25519_key.pub"))
	if err != nil {
		return err
	}
	f := strings.Fields(string(host))
	if len(f) < 2 {
		return errors.New("ssh-keygen wrote a malformed host key")
	}
	return os.WriteFile(b.path("known_hosts"), []byte(b.MgmtIP+" "+f[0]+" "+f[1]+"\n"), 0o600)
}

func ipCmd(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// makeNetwork makes the generator namespace, the management tap and one
// tap per port (multiqueue if the ports have several queues).
func (b *Bed) makeNetwork(ctx context.Context) error {
	ns := b.GenNS
	if err := ipCmd(ctx, "netns", "add", ns); err != nil {
		return err
	}
	// No IPv6 in the namespace: the taps would send router solicitations
	// and MLD reports into the guest's ports, frames no test sent.
	for _, k := range []string{"all", "default"} {
		if out, err := exec.CommandContext(ctx, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf."+k+".disable_ipv6=1").CombinedOutput(); err != nil {
			return fmt.Errorf("disable IPv6 in %s: %w: %s", ns, err, bytes.TrimSpace(out))
		}
	}
	steps := [][]string{
		{"link", "set", "lo", "up"},
		{"tuntap", "add", "dev", mgmtTap, "mode", "tap"},
		{"addr", "add", mgmtHostCIDR, "dev", mgmtTap},
		{"link", "set", mgmtTap, "up"},
	}
	if b.Loop {
		steps = append(steps, []string{"link", "add", loopBridge, "type", "bridge"},
			[]string{"link", "set", loopBridge, "up"})
	}
	for _, p := range b.Ports {
		add := []string{"tuntap", "add", "dev", p.Tap, "mode", "tap"}
		if b.Queues > 1 {
			add = append(add, "multi_queue")
		}
		steps = append(steps, add)
		if b.Loop {
			steps = append(steps, []string{"link", "set", p.Tap, "master", loopBridge})
		} else {
			steps = append(steps, []string{"addr", "add", p.TapIP, "dev", p.Tap})
		}
		steps = append(steps, []string{"link", "set", p.Tap, "mtu", strconv.Itoa(TapMTU), "txqueuelen", strconv.Itoa(TapQueueLen), "up"})
	}
	for _, s := range steps {
		if err := ipCmd(ctx, append([]string{"-n", ns}, s...)...); err != nil {
			return err
		}
	}
	return nil
}

// qemuArgs is QEMU's command line for the bed.
func (b *Bed) qemuArgs(cfg Config) []string {
	var macs []string
	for _, p := range b.Ports {
		macs = append(macs, p.MAC)
	}
	mgmtMAC := "52:54:00:5e:ff:00"
	cmdline := strings.Join([]string{
		"console=ttyS0", "panic=-1", "oops=panic", "no_timer_check", "quiet", "loglevel=4",
		"xdpeng.name=" + b.Name, "xdpeng.state=" + b.Dir,
		"xdpeng.mgmt=" + mgmtMAC + "," + mgmtGuestCIDR, "xdpeng.ports=" + strings.Join(macs, ","),
	}, " ")
	args := []string{
		"-name", "xdpeng-vm-" + b.Name,
		"-nodefaults", "-no-reboot", "-display", "none",
		// TCG: this machine kind's /dev/kvm does not run stock kernels;
		// one thread, because 6.12 panics under multi-threaded TCG.
		"-accel", "tcg,thread=single", "-cpu", "max",
		"-smp", strconv.Itoa(cfg.CPUs), "-m", strconv.Itoa(cfg.MemoryMB),
		"-kernel", b.Kernel.Vmlinuz(), "-initrd", b.path("initramfs.cpio"), "-append", cmdline,
		"-serial", "file:" + b.path("console.log"),
		"-monitor", "unix:" + b.path("monitor.sock") + ",server=on,wait=off",
		"-pidfile", b.path("qemu.pid"), "-daemonize",
		"-virtfs", "local,path=/,mount_tag=root,readonly=on,security_model=none,multidevs=remap",
		"-netdev", "tap,id=mgmt,ifname=" + mgmtTap + ",script=no,downscript=no,vhost=off",
		"-device", "virtio-net-pci,netdev=mgmt,mac=" + mgmtMAC,
	}
	for _, p := range b.Ports {
		nd := "tap,id=" + p.Netdev + ",ifname=" + p.Tap + ",script=no,downscript=no,vhost=off"
		// A modern device (disable-legacy) that maps its buffers through
		// the DMA API (iommu_platform: VIRTIO_F_ACCESS_PLATFORM) and
		// resets single queues (queue_reset, on by default in QEMU 7.2):
		// what virtio_net's AF_XDP zero-copy needs. Without event index
		// (event_idx=off) every kick notifies: with it, a 5.10 guest's
		// transmit queue stalled under selftest's AF_XDP load in drv
		// mode (TEARDOWN, BIDIRECTIONAL: descriptors never completed,
		// the queue busy for good) in CI and by hand; without it 5 of 5
		// drv runs passed.
		dev := "virtio-net-pci,id=" + p.Device + ",netdev=" + p.Netdev + ",mac=" + p.MAC +
			",disable-legacy=on,iommu_platform=on,queue_reset=on,event_idx=off"
		if b.Queues > 1 {
			nd += ",queues=" + strconv.Itoa(b.Queues)
			dev += fmt.Sprintf(",mq=on,vectors=%d", 2*b.Queues+2)
		}
		if b.Hash {
			dev += ",hash=on"
			if b.Queues > 1 {
				// Without RSS the guest sets its queue count with
				// VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET (when an XDP program is
				// attached, too), and QEMU then stops hashing; with RSS it
				// sets the count in its RSS configuration, and the hash
				// stays on.
				dev += ",rss=on"
			}
		}
		args = append(args, "-netdev", nd, "-device", dev)
	}
	return args
}

func (b *Bed) startQEMU(ctx context.Context, cfg Config) error {
	argv := append([]string{"netns", "exec", b.GenNS, "qemu-system-x86_64"}, b.qemuArgs(cfg)...)
	out, err := exec.CommandContext(ctx, "ip", argv...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("start QEMU: %w: %s", err, bytes.TrimSpace(out))
	}
	pid, err := readPID(b.Dir)
	if err != nil {
		return fmt.Errorf("QEMU started but: %w", err)
	}
	b.PID, b.Running = pid, true
	return nil
}

// waitReady waits until the guest takes an ssh connection, and keeps it
// as the master connection that every Command then shares: a connection of
// its own costs a TCG guest seconds of emulated key exchange.
func (b *Bed) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if !qemuAlive(b.Name, b.PID) {
			return fmt.Errorf("the guest stopped while booting; its console:\n%s", b.ConsoleTail(30))
		}
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		// -f: ssh goes to the background once logged in; its output is
		// /dev/null, so the background master holds no pipe of ours.
		err := exec.CommandContext(c, "ip", b.sshArgs("-M", "-N", "-f", "-o", "ControlPersist=yes")...).Run()
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the guest did not answer on ssh within %v; its console:\n%s", timeout, b.ConsoleTail(30))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// ConsoleTail returns the last n lines of the guest's serial console.
func (b *Bed) ConsoleTail(n int) string {
	data, err := os.ReadFile(b.path("console.log"))
	if err != nil {
		return "(no console log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Command makes a command that runs argv in the guest, as root, over ssh
// on the management link (from the generator namespace), through the
// bed's master connection when it has one. Its exit status is the guest
// command's; 255 is ssh's own failure.
func (b *Bed) Command(ctx context.Context, argv ...string) *exec.Cmd {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = shellQuote(a)
	}
	return exec.CommandContext(ctx, "ip", b.sshArgs("-o", "ControlMaster=no", "--", strings.Join(quoted, " "))...)
}

// sshArgs is `ip netns exec NAME-gen ssh OPTIONS more... root@GUEST`, and
// after the destination what follows a "--" in more (the command).
func (b *Bed) sshArgs(more ...string) []string {
	args := []string{"netns", "exec", b.GenNS, "ssh", "-F", "/dev/null",
		"-i", b.path("id_ed25519"), "-o", "IdentitiesOnly=yes",
		"-o", "UserKnownHostsFile=" + b.path("known_hosts"), "-o", "StrictHostKeyChecking=yes",
		"-o", "BatchMode=yes", "-o", "ConnectTimeout=20", "-o", "LogLevel=ERROR",
		"-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=6",
		"-o", "ControlPath=" + b.path("ssh.ctl")}
	opts, command, _ := cutArgs(more, "--")
	args = append(args, opts...)
	args = append(args, "root@"+b.MgmtIP)
	return append(args, command...)
}

// cutArgs splits s at the first sep.
func cutArgs(s []string, sep string) (before, after []string, found bool) {
	for i, a := range s {
		if a == sep {
			return s[:i:i], s[i+1:], true
		}
	}
	return s, nil, false
}

// shellQuote quotes s for the guest's shell.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Monitor sends one command to QEMU's human monitor and returns its answer.
func (b *Bed) Monitor(cmd string) (string, error) {
	c, err := net.DialTimeout("unix", b.path("monitor.sock"), 5*time.Second)
	if err != nil {
		return "", fmt.Errorf("QEMU monitor of %s: %w", b.Name, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	readPrompt := func() (string, error) {
		var out strings.Builder
		for !strings.HasSuffix(out.String(), "(qemu) ") {
			by, err := r.ReadByte()
			if err != nil {
				return out.String(), fmt.Errorf("QEMU monitor of %s: %w", b.Name, err)
			}
			out.WriteByte(by)
		}
		return out.String(), nil
	}
	if _, err := readPrompt(); err != nil {
		return "", err
	}
	if _, err := c.Write([]byte(cmd + "\n")); err != nil {
		return "", fmt.Errorf("QEMU monitor of %s: %w", b.Name, err)
	}
	out, err := readPrompt()
	if err != nil {
		return "", err
	}
	// The answer echoes the command (with terminal escapes) first.
	out = strings.TrimSuffix(out, "(qemu) ")
	if i := strings.Index(out, "\n"); i >= 0 {
		out = out[i+1:]
	}
	return strings.TrimSpace(out), nil
}

// TapDrops is each port tap's TX dropped count: the frames it could not
// hand the guest (its queue of TapQueueLen full while the guest's receive
// ring had no room), keyed by the guest's port name.
func (b *Bed) TapDrops(ctx context.Context) (map[string]uint64, error) {
	drops := map[string]uint64{}
	for _, p := range b.Ports {
		out, err := exec.CommandContext(ctx, "ip", "-n", b.GenNS, "-j", "-s", "link", "show", "dev", p.Tap).Output()
		if err != nil {
			return nil, fmt.Errorf("the statistics of %s in %s: %w", p.Tap, b.GenNS, err)
		}
		var links []struct {
			Stats struct {
				TX struct {
					Dropped uint64 `json:"dropped"`
				} `json:"tx"`
			} `json:"stats64"`
		}
		if err := json.Unmarshal(out, &links); err != nil || len(links) != 1 {
			return nil, fmt.Errorf("the statistics of %s in %s: unexpected answer %q", p.Tap, b.GenNS, out)
		}
		drops[p.Guest] = links[0].Stats.TX.Dropped
	}
	return drops, nil
}

// SetLink takes port k's link down (up false) or up, as a cable pulled and
// put back: QEMU's set_link.
func (b *Bed) SetLink(k int, up bool) error {
	if k < 0 || k >= len(b.Ports) {
		return fmt.Errorf("port %d: the bed has %d", k, len(b.Ports))
	}
	state := "off"
	if up {
		state = "on"
	}
	out, err := b.Monitor("set_link " + b.Ports[k].Netdev + " " + state)
	if err != nil {
		return err
	}
	if out != "" {
		return fmt.Errorf("set_link %s %s: %s", b.Ports[k].Netdev, state, out)
	}
	return nil
}

func readPID(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "qemu.pid"))
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("qemu.pid: %q is no pid", b)
	}
	return pid, nil
}

// qemuAlive reports whether pid is the QEMU of bed name (not a process
// that reused the pid).
func qemuAlive(name string, pid int) bool {
	if pid <= 0 {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		if i := bytes.LastIndexByte(st, ')'); i >= 0 && bytes.HasPrefix(bytes.TrimSpace(st[i+1:]), []byte("Z")) {
			return false
		}
	}
	return bytes.Contains(cmdline, []byte("\x00xdpeng-vm-"+name+"\x00"))
}

// Open reads the bed called name from its state.
func Open(name string) (*Bed, error) {
	if err := testbed.ValidateName(name); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(bedDir(name), "state.json"))
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(bedDir(name)); serr == nil {
			return &Bed{Name: name, GenNS: testbed.GenNS(name), Dir: bedDir(name)}, nil
		}
		return nil, &NotFoundError{Name: name}
	}
	if err != nil {
		return nil, err
	}
	var b Bed
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("VM test bed %s: state: %w", name, err)
	}
	if pid, err := readPID(b.Dir); err == nil && qemuAlive(name, pid) {
		b.PID, b.Running = pid, true
	}
	return &b, nil
}

// List returns the names of the beds that have a state directory, running
// or not, sorted.
func List() ([]string, error) {
	es, err := os.ReadDir(StateDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range es {
		if e.IsDir() && testbed.ValidateName(e.Name()) == nil {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// Down stops the bed's QEMU (by its pid, checked to be this bed's), then
// removes its taps, its namespace and its state. What is already gone is no
// error.
func (b *Bed) Down() error { return Down(b.Name) }

// Down removes the bed called name; see (*Bed).Down.
func Down(name string) error {
	if err := testbed.ValidateName(name); err != nil {
		return err
	}
	dir := bedDir(name)
	var errs []error
	ns := testbed.GenNS(name)
	if _, err := os.Stat(filepath.Join(dir, "ssh.ctl")); err == nil {
		b := &Bed{Name: name, GenNS: ns, Dir: dir, MgmtIP: mgmtGuestIP}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		exec.CommandContext(ctx, "ip", b.sshArgs("-O", "exit")...).Run() // the master ends with the guest anyway
		cancel()
	}
	if pid, err := readPID(dir); err == nil && qemuAlive(name, pid) {
		errs = append(errs, stopQEMU(name, pid))
	}
	if _, err := os.Stat(filepath.Join(testbed.NetnsDir, ns)); err == nil {
		for _, l := range []string{mgmtTap, loopBridge, "vtap0", "vtap1", "vtap2", "vtap3"} {
			exec.Command("ip", "-n", ns, "link", "del", l).Run() // absent ones fail; the namespace goes next
		}
		errs = append(errs, testbed.Down(name))
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove VM test bed %s: %w", name, err)
	}
	return nil
}

func stopQEMU(name string, pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	p.Signal(syscall.SIGTERM)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if !qemuAlive(name, pid) {
			return nil
		}
	}
	p.Signal(syscall.SIGKILL)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if !qemuAlive(name, pid) {
			return nil
		}
	}
	return fmt.Errorf("QEMU (pid %d) did not end after SIGKILL", pid)
}
