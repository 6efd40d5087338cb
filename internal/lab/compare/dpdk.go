//go:build linux

package compare

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/internal/lab/latency"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// TestPMD is the program the dpdk-* paths run, looked up in PATH.
const TestPMD = "dpdk-testpmd"

// dpdkInstall says how to get TestPMD and DPDK's AF_XDP driver on Debian.
const dpdkInstall = "Debian 12: apt-get install --no-install-recommends dpdk-dev librte-net-af-xdp23"

// SkipError says why a path was not run at all: what it needs is not
// installed. compare gives it no row, and a note instead.
type SkipError struct {
	Path, Reason string
}

func (e *SkipError) Error() string { return e.Path + " skipped: " + e.Reason }

// dpdkRunner is DPDK's AF_XDP poll-mode driver (net_af_xdp) on the DUT's
// queues, driven by dpdk-testpmd: rxonly (receive and free every frame,
// the drop family's job) or macswap (swap the MAC addresses and send the
// frame back: l2fwd's). The driver, through libxdp, attaches its own XDP
// program (xsk_def_prog) to the device.
//
// Frames are counted at the device, not by testpmd: rxonly's received
// frames are veth's successful XDP redirects on the DUT (frames the kernel
// put on the sockets' rx rings), and its drops are veth's failed redirects
// (the rx ring full or the fill ring empty); macswap's are counted where
// they come back, on gen0, as xsk-l2fwd's are.
//
// testpmd runs in the DUT's network namespace as a child that ends with
// xdpeng: it reads its stdin, which xdpeng holds, and quits when that
// ends; it is also sent SIGTERM if xdpeng dies (PR_SET_PDEATHSIG). On its
// way out it removes its XDP program; if it did not (it was killed), stop
// removes it, and the runtime files of EAL and libxdp it made.
type dpdkRunner struct {
	e       *env
	o       pathOpts
	macswap bool
	noBusy  bool // busy_budget=0: no preferred busy polling

	cmd       *exec.Cmd
	stdin     io.WriteCloser
	out       *lineTail
	exited    chan struct{} // closed when testpmd has ended
	exitErr   error         // valid after exited
	runDir    string        // the runtime directory given to EAL
	runXDPNew bool          // /run/xdp did not exist before (libxdp's lock directory)
	progID    uint32        // the XDP program the driver attached
	mode      string        // its attach mode
	sink      *sinks
}

// dpdkRun counts testpmd runs in this process, for unique EAL file prefixes.
var dpdkRun atomic.Uint64

// runXDP is where libxdp keeps its lock when no bpffs is mounted.
const runXDP = "/run/xdp"

// dpdkReady is what testpmd prints once it forwards.
const dpdkReady = "Press enter to exit"

func (r *dpdkRunner) start(ctx context.Context) (err error) {
	bin, err := exec.LookPath(TestPMD)
	if err != nil {
		return &SkipError{Path: r.name(), Reason: fmt.Sprintf("%s is not installed (%s)", TestPMD, dpdkInstall)}
	}
	if r.e.bed == nil {
		return errors.New("the dpdk paths run on a test bed only")
	}
	if err := r.e.inDUT(func() error {
		cur, err := netdev.XDPAttached(r.e.dutIndex)
		if err != nil {
			return err
		}
		if cur.ProgID != 0 {
			return fmt.Errorf("%s already has XDP program id %d attached", r.e.dut, cur.ProgID)
		}
		return nil
	}); err != nil {
		return err
	}
	if r.macswap {
		// Frames sent back arrive at gen0 as skbs (copy-mode transmit).
		if r.sink, err = attachSinks(r.e, []int{0}, skbFrames, r.o.stamp); err != nil {
			return err
		}
	}
	if _, err := os.Stat(runXDP); errors.Is(err, os.ErrNotExist) {
		r.runXDPNew = true
	}
	// Named by our pid, so that what a killed run left can be told apart.
	if r.runDir, err = os.MkdirTemp("", fmt.Sprintf("xdpeng-dpdk-%d-", os.Getpid())); err != nil {
		return err
	}
	args := r.args()
	r.cmd = exec.Command(bin, args...)
	// EAL keeps its runtime files under $RUNTIME_DIRECTORY/dpdk (for root;
	// /var/run/dpdk without it), XDG_RUNTIME_DIR for other users.
	r.cmd.Env = append(os.Environ(), "RUNTIME_DIRECTORY="+r.runDir, "XDG_RUNTIME_DIR="+r.runDir)
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if r.stdin, err = r.cmd.StdinPipe(); err != nil {
		return err
	}
	r.out = &lineTail{ready: make(chan struct{}), want: dpdkReady}
	// Its output goes to a terminal of our own, so that it comes line by
	// line (testpmd does not flush stdout, and a pipe would hold "Press
	// enter to exit" until it ends).
	master, slave, err := openPTY()
	if err != nil {
		return fmt.Errorf("a terminal for %s's output: %w", TestPMD, err)
	}
	r.cmd.Stdout, r.cmd.Stderr = slave, slave
	err = r.startInDUT()
	slave.Close()
	if err != nil {
		master.Close()
		return fmt.Errorf("start %s: %w", TestPMD, err)
	}
	go func() {
		// Ends with EIO once testpmd has ended and closed the terminal.
		io.Copy(r.out, master)
		master.Close()
	}()
	select {
	case <-r.out.ready:
	case <-r.exited:
		return r.failed("ended before it forwarded")
	case <-time.After(30 * time.Second):
		return r.failed("did not start forwarding within 30s")
	case <-ctx.Done():
		return ctx.Err()
	}
	return r.e.inDUT(func() error {
		cur, err := netdev.XDPAttached(r.e.dutIndex)
		if err != nil {
			return err
		}
		if cur.ProgID == 0 {
			return r.failed("forwards, but no XDP program is attached to " + r.e.dut)
		}
		r.progID, r.mode = cur.ProgID, cur.Mode
		return nil
	})
}

// args is testpmd's command line: the EAL's (no PCI devices, no huge
// pages, the lcores pinned to the DUT CPUs, the AF_XDP device on the
// DUT's queues) and testpmd's own.
func (r *dpdkRunner) args() []string {
	q := len(r.e.queues)
	// lcore 0 is testpmd's main thread, which only waits on stdin; lcore
	// i+1 forwards queue i.
	lcores := []string{"0@" + strconv.Itoa(r.e.cpus[0])}
	for i, c := range r.e.cpus {
		lcores = append(lcores, fmt.Sprintf("%d@%d", i+1, c))
	}
	vdev := fmt.Sprintf("net_af_xdp0,iface=%s,start_queue=%d,queue_count=%d", r.e.dut, r.e.queues[0], q)
	if r.noBusy {
		vdev += ",busy_budget=0"
	}
	mode := "rxonly"
	if r.macswap {
		mode = "macswap"
	}
	return []string{
		"--lcores", strings.Join(lcores, ","), "--main-lcore", "0",
		"--no-pci", "--no-huge", "-m", "256", "--no-shconf", "--no-telemetry",
		"--file-prefix", fmt.Sprintf("xdpeng%d-%d", os.Getpid(), dpdkRun.Add(1)),
		"--vdev", vdev,
		"--", "--forward-mode=" + mode, "--nb-cores=" + strconv.Itoa(q),
		"--rxq=" + strconv.Itoa(q), "--txq=" + strconv.Itoa(q), "--total-num-mbufs=16384",
	}
}

// startInDUT starts testpmd from a thread of its own in the DUT's network
// namespace, which stays until testpmd ends: PR_SET_PDEATHSIG is sent when
// the thread that started the child ends, so that thread must live as long
// as the child, and end with xdpeng.
func (r *dpdkRunner) startInDUT() error {
	r.exited = make(chan struct{})
	started := make(chan error, 1)
	go func() {
		// Never unlocked: the thread's namespace is changed, so the
		// runtime ends it when this goroutine returns.
		runtime.LockOSThread()
		defer close(r.exited)
		ns, err := netns.GetFromName(r.e.dutNS)
		if err != nil {
			started <- err
			return
		}
		err = netns.Set(ns)
		ns.Close()
		if err != nil {
			started <- err
			return
		}
		if err := r.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		r.exitErr = r.cmd.Wait()
	}()
	return <-started
}

// failed is an error that testpmd did not run as it should, with the end
// of its output; one that says the AF_XDP driver is missing is a
// *SkipError.
func (r *dpdkRunner) failed(what string) error {
	out := r.out.String()
	if strings.Contains(out, "net_af_xdp") && (strings.Contains(out, "failed to parse device") ||
		strings.Contains(out, "Driver, cannot attach the device")) {
		return &SkipError{Path: r.name(), Reason: "DPDK has no AF_XDP driver (" + dpdkInstall + ")"}
	}
	return fmt.Errorf("%s %s; its last output:\n%s", TestPMD, what, indent(out))
}

func (r *dpdkRunner) name() string {
	n := "dpdk-af-xdp"
	if r.macswap {
		n = "dpdk-l2fwd"
	}
	if r.noBusy {
		n += "-nobusy"
	}
	return n
}

func (r *dpdkRunner) sample() (s sample, err error) {
	s.reasons = map[string]uint64{}
	v, ok := r.e.vethRx()
	if !ok {
		return s, fmt.Errorf("no veth counters on %s", r.e.dut)
	}
	// A redirect to a socket whose rx ring is full (or whose fill ring is
	// empty) fails and is counted in veth's rx drops.
	s.reasons["veth_rx_drops"] = v.RxDrops
	if !r.macswap {
		s.received = v.RxXDPRedirect
		return s, nil
	}
	if s.received, err = r.sink.count(); err != nil {
		return s, err
	}
	if err := r.e.egressDrops([]int{0}, s.reasons); err != nil {
		return s, err
	}
	return s, nil
}

// stop ends testpmd (stdin closed; then SIGTERM; then SIGKILL), removes
// an XDP program it left attached, and the runtime files it made.
func (r *dpdkRunner) stop() error {
	var errs []error
	if r.cmd != nil && r.cmd.Process != nil {
		r.stdin.Write([]byte("\n"))
		r.stdin.Close()
		select {
		case <-r.exited:
		case <-time.After(10 * time.Second):
			r.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-r.exited:
			case <-time.After(5 * time.Second):
				r.cmd.Process.Kill()
				<-r.exited
			}
			errs = append(errs, fmt.Errorf("%s did not end within 10s of its stdin closing", TestPMD))
		}
		r.cmd = nil
	}
	if r.progID != 0 {
		errs = append(errs, r.e.inDUT(func() error {
			cur, err := netdev.XDPAttached(r.e.dutIndex)
			if err != nil || cur.ProgID != r.progID {
				return err
			}
			// testpmd did not remove its program: it was killed.
			l, err := netlink.LinkByIndex(r.e.dutIndex)
			if err != nil {
				return err
			}
			for _, flags := range []int{unix.XDP_FLAGS_DRV_MODE, unix.XDP_FLAGS_SKB_MODE} {
				if err := netlink.LinkSetXdpFdWithFlags(l, -1, flags); err != nil && !errors.Is(err, unix.EOPNOTSUPP) {
					return fmt.Errorf("remove the XDP program %s left on %s: %w", TestPMD, r.e.dut, err)
				}
			}
			return nil
		}))
		r.progID = 0
	}
	if r.runDir != "" {
		errs = append(errs, os.RemoveAll(r.runDir))
		r.runDir = ""
	}
	if r.runXDPNew {
		// Only if empty: another libxdp user may have come meanwhile.
		if err := os.Remove(runXDP); err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, unix.ENOTEMPTY) {
			errs = append(errs, err)
		}
		r.runXDPNew = false
	}
	errs = append(errs, r.sink.close())
	return errors.Join(errs...)
}

func (r *dpdkRunner) countedAt() string {
	if r.macswap {
		return "frames that came back: tc ingress counter on gen0"
	}
	return "veth's successful XDP redirects on dut0 (frames put on the AF_XDP sockets' rx rings)"
}

func (r *dpdkRunner) copies() int { return 1 }

func (r *dpdkRunner) xdpMode() string {
	mode := r.mode
	if mode == "" {
		mode = "native"
	}
	if r.e.driver == "veth" {
		// veth has no zero-copy: the sockets copy.
		return mode + ", AF_XDP copy (DPDK net_af_xdp)"
	}
	return mode + ", AF_XDP (DPDK net_af_xdp: copy or zero-copy, its choice)"
}

func (r *dpdkRunner) receiver() *latency.Receiver { return r.sink.receiver() }

// openPTY opens a new pseudo-terminal pair: the master to read from, the
// slave to give a child as its output.
func openPTY() (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	fd := int(master.Fd())
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err == nil {
		err = unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0) // unlock the slave
	}
	if err == nil {
		slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	return master, slave, nil
}

// lineTail keeps the last 64 KiB of a process's output and notices when a
// line with want has come.
type lineTail struct {
	mu    sync.Mutex
	buf   []byte
	line  []byte
	want  string
	ready chan struct{}
	seen  bool
}

func (t *lineTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 64<<10 {
		t.buf = t.buf[len(t.buf)-64<<10:]
	}
	if !t.seen {
		t.line = append(t.line, p...)
		sc := bufio.NewScanner(strings.NewReader(string(t.line)))
		for sc.Scan() {
			if strings.Contains(sc.Text(), t.want) {
				t.seen = true
				close(t.ready)
				break
			}
		}
		if i := strings.LastIndexByte(string(t.line), '\n'); i >= 0 {
			t.line = t.line[i+1:]
		}
	}
	return len(p), nil
}

func (t *lineTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// indent indents every line of s by four spaces, the last 20 lines only.
func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return "    " + strings.Join(lines, "\n    ")
}
