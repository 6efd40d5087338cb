//go:build linux

package compare

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/internal/counter"
	"github.com/xdpeng/xdpeng/internal/lab/latency"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// The peer tools: the C programs a user of XDP reaches for today. xdpeng
// brings none of them; a peer path runs one where it is found (the peers
// directory of Config.Peers first, then PATH) and is skipped with a note
// where it is not.
const (
	// Xdpsock is xdpsock of xdp-project/bpf-examples (AF_XDP-example).
	Xdpsock = "xdpsock"
	// XdpBench is xdp-bench of xdp-tools; its AF_XDP modes (xsk-drop,
	// xsk-tx) need XdpBenchMinVersion.
	XdpBench = "xdp-bench"
)

// XdpBenchMinVersion is the first xdp-bench with the AF_XDP modes.
var XdpBenchMinVersion = [2]int{1, 6}

// peerInstall says where the peer tools come from.
var peerInstall = map[string]string{
	Xdpsock:  "build it from xdp-project/bpf-examples, AF_XDP-example/",
	XdpBench: fmt.Sprintf("xdp-tools %d.%d or later", XdpBenchMinVersion[0], XdpBenchMinVersion[1]),
}

// peerPath is how a peer path runs its tool.
type peerPath struct {
	tool string
	// args are the tool's arguments for the device and queue.
	args func(dev string, queue int) []string
	// back: the tool sends every frame back out of the device (l2fwd),
	// counted where it comes back, on gen0.
	back bool
	// ready is in the line the tool prints once its socket is bound
	// (its first statistics).
	ready string
}

// peerPaths are the peer paths by name, each with the tool's own defaults
// but for the device, the queue and a statistics interval of a second (its
// first report is the sign it runs). xdpsock is given -N -c (native XDP,
// copy mode), as its users run it on veth.
var peerPaths = map[string]peerPath{
	"xdpsock-drop":            {tool: Xdpsock, args: xdpsockArgs("-r"), ready: "sock0@"},
	"xdpsock-drop-poll":       {tool: Xdpsock, args: xdpsockArgs("-r", "-p"), ready: "sock0@"},
	"xdpsock-drop-busy-poll":  {tool: Xdpsock, args: xdpsockArgs("-r", "-B", "-p"), ready: "sock0@"},
	"xdpsock-l2fwd":           {tool: Xdpsock, args: xdpsockArgs("-l"), back: true, ready: "sock0@"},
	"xdp-bench-xsk-drop":      {tool: XdpBench, args: xdpBenchArgs("xsk-drop"), ready: " rx/s"},
	"xdp-bench-xsk-drop-poll": {tool: XdpBench, args: xdpBenchArgs("xsk-drop", "-p"), ready: " rx/s"},
	"xdp-bench-xsk-tx":        {tool: XdpBench, args: xdpBenchArgs("xsk-tx"), back: true, ready: " rx/s"},
}

func xdpsockArgs(mode ...string) func(string, int) []string {
	return func(dev string, q int) []string {
		return append(slices.Clone(mode), "-i", dev, "-q", strconv.Itoa(q), "-N", "-c", "-n", "1")
	}
}

func xdpBenchArgs(cmd string, opts ...string) func(string, int) []string {
	return func(dev string, q int) []string {
		return append([]string{cmd, dev, "-q", strconv.Itoa(q), "-i", "1"}, opts...)
	}
}

// findPeer returns the path of tool: in dir if it is there, else in PATH.
func findPeer(tool, dir string) (string, error) {
	if dir != "" {
		p := filepath.Join(dir, tool)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath(tool)
	if err != nil {
		where := "PATH"
		if dir != "" {
			where = "the peers directory " + dir + " nor in PATH"
		}
		return "", fmt.Errorf("%s is not in %s (%s)", tool, where, peerInstall[tool])
	}
	return p, nil
}

var versionRE = regexp.MustCompile(`version v?(\d+)\.(\d+)(\.\d+)?`)

// parseVersion finds "version X.Y[.Z]" in a tool's --version output.
func parseVersion(out string) (v [2]int, text string, ok bool) {
	m := versionRE.FindStringSubmatch(out)
	if m == nil {
		return v, "", false
	}
	v[0], _ = strconv.Atoi(m[1])
	v[1], _ = strconv.Atoi(m[2])
	return v, m[1] + "." + m[2] + m[3], true
}

func versionBelow(v, min [2]int) bool {
	return v[0] < min[0] || v[0] == min[0] && v[1] < min[1]
}

// peerVersion asks an xdp-bench for its version through the command it
// will run (the top level refuses --version), and refuses one older than
// XdpBenchMinVersion or without that command.
func peerVersion(ctx context.Context, bin, cmd string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, cmd, "--version").CombinedOutput()
	v, text, ok := parseVersion(string(out))
	if !ok {
		return "", fmt.Errorf("%s %s --version gave no version (%v): %s", bin, cmd, err, strings.TrimSpace(string(out)))
	}
	if versionBelow(v, XdpBenchMinVersion) {
		return "", fmt.Errorf("%s is version %s, which has no AF_XDP modes (%s)", bin, text, peerInstall[XdpBench])
	}
	return text, nil
}

// peerStartTries is how many times a tool whose bind found the queue busy
// is started.
const peerStartTries = 4

// peerStopWait bounds how long a peer tool has to end after SIGINT, and
// then after SIGKILL.
const peerStopWait = 5 * time.Second

// peerRunner runs a peer tool (xdpsock, xdp-bench) on the DUT's queue, as
// its users do: in the DUT's network namespace, pinned to the DUT CPU
// (taskset -c), its output on a terminal of ours. Its frames are counted at
// the device, as the dpdk paths' are: the drop paths' received frames are
// veth's successful XDP redirects on dut0 and their drops veth's failed
// ones; the frames the l2fwd paths send back are counted where they come
// back, on gen0.
//
// stop ends the tool with SIGINT, and with SIGKILL if it has not ended
// within peerStopWait; then it removes every XDP and tc program the tool
// left on dut0 (libxdp attaches through netlink, so a killed tool's
// program stays), and ended says what it took. If xdpeng itself dies the
// tool is sent SIGKILL (PR_SET_PDEATHSIG): a tool that did not end would
// keep polling its CPU and hold the bed's namespace; what it leaves on the
// bed's device goes with the bed.
type peerRunner struct {
	e    *env
	o    pathOpts
	name string
	p    peerPath

	bin, version string
	proc         *peerProc
	before       devHooks // dut0's programs before the tool started
	progID       uint32   // the XDP program the tool attached
	progName     string
	mode         string
	runXDPNew    bool // /run/xdp did not exist before (libxdp's lock directory)
	started      bool // the tool was started: stop looks for what it left
	sink         *sinks
	cleanup      []string // what stop did, for ended
}

func (r *peerRunner) start(ctx context.Context) (err error) {
	if r.bin, err = findPeer(r.p.tool, r.e.peers); err != nil {
		return &SkipError{Path: r.name, Reason: err.Error()}
	}
	if r.p.tool == XdpBench {
		if r.version, err = peerVersion(ctx, r.bin, r.p.args("x", 0)[0]); err != nil {
			return &SkipError{Path: r.name, Reason: err.Error()}
		}
	}
	if r.e.bed == nil {
		return errors.New("the peer paths run on a test bed only")
	}
	if len(r.e.queues) != 1 {
		return fmt.Errorf("%s binds one queue, as %s -q does: use a test bed with one queue, not %d", r.name, r.p.tool, len(r.e.queues))
	}
	if err := r.e.inDUT(func() (err error) {
		if r.before, err = readDevHooks(r.e.dutIndex); err != nil {
			return err
		}
		if r.before.xdp.ProgID != 0 {
			return fmt.Errorf("%s already has XDP program id %d (%s) attached: a tool killed before may have left it; "+
				"remove it (ip link set dev %s xdp off, in namespace %s) or remove the test bed", r.e.dut, r.before.xdp.ProgID,
				r.before.xdp.ProgName, r.e.dut, r.e.dutNS)
		}
		return nil
	}); err != nil {
		return err
	}
	if r.p.back {
		// Frames sent back arrive at gen0 as skbs (copy-mode transmit).
		if r.sink, err = attachSinks(r.e, []int{0}, skbFrames, r.o.stamp); err != nil {
			return err
		}
	}
	if _, err := os.Stat(runXDP); errors.Is(err, os.ErrNotExist) {
		r.runXDPNew = true
	}
	// The socket of the path before may still hold the queue for a moment
	// (the kernel lets go of it from a workqueue): the tool's bind then
	// fails with EBUSY, and it is started again.
	for try := 1; ; try++ {
		r.proc = &peerProc{tool: r.p.tool}
		if err := r.proc.start(r.e.dutNS, r.e.cpus[0], r.bin, r.p.args(r.e.dut, r.e.queues[0]), r.p.ready); err != nil {
			return err
		}
		r.started = true
		select {
		case <-r.proc.out.ready:
		case <-r.proc.exited:
			if try < peerStartTries && r.proc.busy() {
				if err := r.e.inDUT(func() error { _, err := removeLeftovers(r.e.dutIndex, r.before, 0); return err }); err != nil {
					return err
				}
				r.cleanup = append(r.cleanup, fmt.Sprintf("%s started again: its bind found the queue busy (EBUSY)", r.p.tool))
				if err := sleepCtx(ctx, 300*time.Millisecond); err != nil {
					return err
				}
				continue
			}
			err := r.proc.failed(fmt.Sprintf("ended before it ran (%v)", r.proc.exitErr))
			r.proc = nil // nothing to end
			return err
		case <-time.After(30 * time.Second):
			return r.proc.failed("printed no statistics within 30s")
		case <-ctx.Done():
			return ctx.Err()
		}
		break
	}
	return r.e.inDUT(func() error {
		cur, err := netdev.XDPAttachmentOf(r.e.dutIndex)
		if err != nil {
			return err
		}
		if cur.ProgID == 0 {
			return r.proc.failed("runs, but no XDP program is attached to " + r.e.dut)
		}
		r.progID, r.progName, r.mode = cur.ProgID, cur.ProgName, cur.Mode
		return nil
	})
}

func (r *peerRunner) sample() (s sample, err error) {
	s.reasons = map[string]uint64{}
	v, ok := r.e.vethRx()
	if !ok {
		return s, fmt.Errorf("no veth counters on %s", r.e.dut)
	}
	// A redirect to a socket whose rx ring is full (or whose fill ring is
	// empty) fails and is counted in veth's rx drops.
	s.reasons["veth_rx_drops"] = v.RxDrops
	if !r.p.back {
		s.received = v.RxXDPRedirect
		return s, nil
	}
	if s.received, err = r.sink.count(); err != nil {
		return s, err
	}
	if err := r.e.egressDrops([]int{0}, s.reasons); err != nil {
		return s, err
	}
	// What dut0 put on the tool's rx ring and neither came back nor was
	// dropped on dut0's transmit: frames the tool still holds in its rings,
	// or dropped itself. Both are device counters: the row closes on them.
	s.reasons[peerHeld] = counter.Sub(v.RxXDPRedirect, s.received+s.reasons["egress_tx_dropped"]+s.reasons["egress_xmit_errors"])
	return s, nil
}

// peerHeld is the drop reason of a peer l2fwd path for the frames the tool
// took from its rx ring and did not send.
const peerHeld = "held_or_dropped_by_tool"

// stop ends the tool (SIGINT, then SIGKILL), removes what it left on dut0
// and libxdp's lock directory if the tool made it, and detaches the sink.
// A tool that had ended by itself before stop is an error: the run's
// figures are not the tool's.
func (r *peerRunner) stop() error {
	var errs []error
	if r.proc != nil {
		if err := r.proc.end(&r.cleanup); err != nil {
			errs = append(errs, err)
		}
		r.proc = nil
	}
	if r.started {
		errs = append(errs, r.e.inDUT(func() error {
			removed, err := removeLeftovers(r.e.dutIndex, r.before, r.progID)
			if len(removed) > 0 {
				r.cleanup = append(r.cleanup, fmt.Sprintf("it left %s on %s: removed", strings.Join(removed, " and "), r.e.dut))
			} else if err == nil {
				r.cleanup = append(r.cleanup, "nothing left on "+r.e.dut)
			}
			return err
		}))
		r.progID, r.before, r.started = 0, devHooks{}, false
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

// ended says how the tool was ended and what was removed after it.
func (r *peerRunner) ended() string { return strings.Join(r.cleanup, "; ") }

func (r *peerRunner) countedAt() string {
	if r.p.back {
		return "frames that came back: tc ingress counter on gen0 (" + peerHeld + ": veth's XDP redirects on dut0 that did not come back nor were dropped by dut0's transmit)"
	}
	return "veth's successful XDP redirects on dut0 (frames put on the AF_XDP socket's rx ring)"
}

func (r *peerRunner) copies() int { return 1 }

func (r *peerRunner) xdpMode() string {
	mode := r.mode
	if mode == "" {
		mode = "native"
	}
	tool := r.p.tool
	if r.version != "" {
		tool += " " + r.version
	}
	return fmt.Sprintf("%s, AF_XDP copy (%s: %s %s)", mode, tool, r.bin, strings.Join(r.p.args(r.e.dut, r.e.queues[0]), " "))
}

func (r *peerRunner) receiver() *latency.Receiver { return r.sink.receiver() }

// peerProc is a peer tool's process, started in a network namespace from a
// thread of its own that lives as long as the tool (PR_SET_PDEATHSIG is
// sent when that thread ends).
type peerProc struct {
	tool string
	// group starts the tool in a process group of its own and signals the
	// group, as a terminal's Ctrl-C does: for a tool that forks its
	// workers (trafgen), whose parent alone would not pass SIGINT on.
	group   bool
	cmd     *exec.Cmd
	out     *lineTail
	outDone chan struct{} // closed when the tool's output has been read to its end
	exited  chan struct{} // closed when the tool has ended
	exitErr error         // valid after exited
}

// busy tells whether the tool, ended, failed because its bind found the
// queue taken: xdpsock says so, xdp-bench exits with -EBUSY (240) without
// a word.
func (p *peerProc) busy() bool {
	return strings.Contains(p.output(), "Device or resource busy") || p.cmd.ProcessState != nil && p.cmd.ProcessState.ExitCode() == 256-int(unix.EBUSY)
}

// output is the tool's output; once it has ended, all of it (waiting a
// little for the last of it to be read).
func (p *peerProc) output() string {
	select {
	case <-p.exited:
		select {
		case <-p.outDone:
		case <-time.After(time.Second):
		}
	default:
	}
	return p.out.String()
}

// start starts bin with args in namespace ns ("" the current), pinned to
// cpu; out.ready is closed when a line with ready comes.
func (p *peerProc) start(ns string, cpu int, bin string, args []string, ready string) error {
	p.cmd = exec.Command(bin, args...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: p.group}
	p.out = &lineTail{ready: make(chan struct{}), want: ready}
	// A terminal, not a pipe, so that the tool's statistics come line by
	// line (stdout to a pipe is block-buffered).
	master, slave, err := openPTY()
	if err != nil {
		return fmt.Errorf("a terminal for %s's output: %w", p.tool, err)
	}
	p.cmd.Stdout, p.cmd.Stderr = slave, slave
	p.exited = make(chan struct{})
	started := make(chan error, 1)
	go func() {
		// Never unlocked: the thread's namespace and affinity are changed,
		// so the runtime ends it when this goroutine returns.
		runtime.LockOSThread()
		defer close(p.exited)
		if ns != "" {
			h, err := netns.GetFromName(ns)
			if err != nil {
				started <- err
				return
			}
			err = netns.Set(h)
			h.Close()
			if err != nil {
				started <- err
				return
			}
		}
		// The child inherits the affinity of the thread that forks it.
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			started <- fmt.Errorf("pin to CPU %d: %w", cpu, err)
			return
		}
		if err := p.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.exitErr = p.cmd.Wait()
	}()
	err = <-started
	slave.Close()
	if err != nil {
		master.Close()
		return fmt.Errorf("start %s: %w", p.tool, err)
	}
	p.outDone = make(chan struct{})
	go func() {
		defer close(p.outDone)
		// Ends with EIO once the tool has ended and closed the terminal.
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			p.out.Write(buf[:n])
			if err != nil {
				break
			}
		}
		master.Close()
	}()
	return nil
}

// end sends SIGINT, then SIGKILL if the tool has not ended within
// peerStopWait, and adds what it took to did. A tool that had already
// ended is an error.
// signal sends sig to the tool, or to its process group.
func (p *peerProc) signal(sig syscall.Signal) {
	if p.group {
		syscall.Kill(-p.cmd.Process.Pid, sig)
		return
	}
	p.cmd.Process.Signal(sig)
}

func (p *peerProc) end(did *[]string) error {
	select {
	case <-p.exited:
		*did = append(*did, fmt.Sprintf("%s had ended by itself (%v)", p.tool, p.exitErr))
		return p.failed(fmt.Sprintf("ended by itself during the run (%v)", p.exitErr))
	default:
	}
	t0 := time.Now()
	p.signal(syscall.SIGINT)
	select {
	case <-p.exited:
		*did = append(*did, fmt.Sprintf("%s ended on SIGINT in %.2fs", p.tool, time.Since(t0).Seconds()))
		return nil
	case <-time.After(peerStopWait):
	}
	p.signal(syscall.SIGKILL)
	select {
	case <-p.exited:
		*did = append(*did, fmt.Sprintf("%s did not end within %v of SIGINT: SIGKILL", p.tool, peerStopWait))
		return nil
	case <-time.After(peerStopWait):
		return fmt.Errorf("%s (pid %d) did not end within %v of SIGKILL", p.tool, p.cmd.Process.Pid, peerStopWait)
	}
}

// failed is an error that the tool did not run as it should, with the end
// of its output.
func (p *peerProc) failed(what string) error {
	return fmt.Errorf("%s %s; its last output:\n%s", p.tool, what, indent(p.output()))
}

// devHooks are the programs attached to a device: XDP, TCX (ingress and
// egress), and the tc filters on its clsact (or ingress) qdisc.
type devHooks struct {
	xdp     netdev.XDPAttachment
	tcx     [2]string // program ids, ingress and egress, as "1,2"
	filters int
	qdisc   bool // a clsact or ingress qdisc is there
}

var tcxHooks = [2]ebpf.AttachType{ebpf.AttachTCXIngress, ebpf.AttachTCXEgress}

func tcxIDs(ifindex int, a ebpf.AttachType) ([]ebpf.ProgramID, error) {
	r, err := link.QueryPrograms(link.QueryOptions{Target: ifindex, Attach: a})
	if errors.Is(err, ebpf.ErrNotSupported) {
		return nil, nil // no TCX on this kernel: nothing can be attached there
	}
	if err != nil {
		return nil, err
	}
	ids := make([]ebpf.ProgramID, len(r.Programs))
	for i, p := range r.Programs {
		ids[i] = p.ID
	}
	return ids, nil
}

func joinIDs(ids []ebpf.ProgramID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

// tcParents are the tc hooks of l's clsact or ingress qdisc, if any.
func tcParents(l netlink.Link) ([]netlink.Qdisc, []uint32, error) {
	qdiscs, err := netlink.QdiscList(l)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: list qdiscs: %w", l.Attrs().Name, err)
	}
	var qs []netlink.Qdisc
	var parents []uint32
	for _, q := range qdiscs {
		switch q.Type() {
		case "clsact":
			qs = append(qs, q)
			parents = append(parents, netlink.HANDLE_MIN_INGRESS, netlink.HANDLE_MIN_EGRESS)
		case "ingress":
			qs = append(qs, q)
			parents = append(parents, netlink.HANDLE_MIN_INGRESS)
		}
	}
	return qs, parents, nil
}

// readDevHooks reads what is attached to ifindex in the calling thread's
// namespace.
func readDevHooks(ifindex int) (h devHooks, err error) {
	if h.xdp, err = netdev.XDPAttachmentOf(ifindex); err != nil {
		return h, err
	}
	for i, a := range tcxHooks {
		ids, err := tcxIDs(ifindex, a)
		if err != nil {
			return h, err
		}
		h.tcx[i] = joinIDs(ids)
	}
	l, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		return h, err
	}
	qs, parents, err := tcParents(l)
	if err != nil {
		return h, err
	}
	h.qdisc = len(qs) > 0
	for _, parent := range parents {
		fs, err := netlink.FilterList(l, parent)
		if err != nil {
			return h, fmt.Errorf("%s: list tc filters: %w", l.Attrs().Name, err)
		}
		h.filters += len(fs)
	}
	return h, nil
}

// removeLeftovers removes from ifindex what a tool attached since before
// was read: the XDP program progID if it is still attached through netlink
// (a program held by a bpf_link goes with the process that holds it), TCX
// programs that were not there, and tc filters and a clsact qdisc if there
// were none. It returns what it removed. Another XDP program than progID
// (someone else's) is left, and is an error.
func removeLeftovers(ifindex int, before devHooks, progID uint32) (removed []string, err error) {
	l, err := netlink.LinkByIndex(ifindex)
	if err != nil {
		return nil, err
	}
	name := l.Attrs().Name
	var errs []error
	cur, err := netdev.XDPAttachmentOf(ifindex)
	switch {
	case err != nil:
		errs = append(errs, err)
	case cur.ProgID == 0:
	case cur.LinkID == 0 && (cur.ProgID == progID || progID == 0 && before.xdp.ProgID == 0):
		// The tool's (before it started nothing was attached), held by
		// nothing now that the tool has ended.
		for _, flags := range []int{unix.XDP_FLAGS_DRV_MODE, unix.XDP_FLAGS_SKB_MODE} {
			if err := netlink.LinkSetXdpFdWithFlags(l, -1, flags); err != nil && !errors.Is(err, unix.EOPNOTSUPP) {
				errs = append(errs, fmt.Errorf("remove the XDP program id %d left on %s: %w", cur.ProgID, name, err))
			}
		}
		removed = append(removed, fmt.Sprintf("XDP program id %d (%s, %s mode, a netlink attachment)", cur.ProgID, cur.ProgName, cur.Mode))
	case cur.ProgID != before.xdp.ProgID:
		errs = append(errs, fmt.Errorf("%s has XDP program id %d (%s) that neither the tool nor this run attached: left in place", name, cur.ProgID, cur.ProgName))
	}
	for i, a := range tcxHooks {
		ids, err := tcxIDs(ifindex, a)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		had := strings.Split(before.tcx[i], ",")
		for _, id := range ids {
			if slices.Contains(had, strconv.Itoa(int(id))) {
				continue
			}
			prog, err := ebpf.NewProgramFromID(id)
			if err == nil {
				err = link.RawDetachProgram(link.RawDetachProgramOptions{Target: ifindex, Program: prog, Attach: a})
				prog.Close()
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("remove %v program id %d left on %s: %w", a, id, name, err))
				continue
			}
			removed = append(removed, fmt.Sprintf("%v program id %d", a, id))
		}
	}
	if !before.qdisc && before.filters == 0 {
		qs, parents, err := tcParents(l)
		if err != nil {
			errs = append(errs, err)
		}
		n := 0
		for _, parent := range parents {
			fs, err := netlink.FilterList(l, parent)
			if err != nil {
				errs = append(errs, err)
			}
			n += len(fs)
		}
		for _, q := range qs {
			// Deleting the qdisc deletes its filters.
			if err := netlink.QdiscDel(q); err != nil {
				errs = append(errs, fmt.Errorf("remove the %s qdisc left on %s: %w", q.Type(), name, err))
				continue
			}
			removed = append(removed, fmt.Sprintf("a %s qdisc with %d tc filter(s)", q.Type(), n))
		}
	}
	return removed, errors.Join(errs...)
}
