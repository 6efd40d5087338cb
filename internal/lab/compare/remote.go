//go:build linux

package compare

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/cpuset"
	"github.com/xdpeng/xdpeng/internal/lab/cpustat"
	labenv "github.com/xdpeng/xdpeng/internal/lab/env"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/kern"
	"github.com/xdpeng/xdpeng/internal/lab/latency"
	"github.com/xdpeng/xdpeng/internal/lab/remote"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/lab/xdperr"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// LostOnWire is the drop reason of a two-host row for the frames the
// tester's port sent that the DUT's port never counted: lost on the cable
// (or the switch) between the two devices.
const LostOnWire = "lost_on_wire"

// DefaultRemoteInterval is how often the DUT's commands report their
// counters in a two-host run.
const DefaultRemoteInterval = 50 * time.Millisecond

// Remote is a device under test on another host, reached over ssh. Each
// path runs there as xdpeng's own command for it, started by Runner with
// --json and a duration of its own (so that it ends by itself if this
// host dies or the connection is lost), beside `xdpeng stats --cpu` on the
// DUT's ports; their JSON lines are read as they come. The generator and
// the sinks run here, on GenInterfaces.
//
// The ssh session must not use a port a path takes whole: XDP drop, or an
// AF_XDP socket without a UDP port filter, takes every frame of
// DUTInterfaces[0], ssh's too. Reach the DUT through another port (a
// management network).
type Remote struct {
	Runner *remote.Runner
	// Binary is xdpeng on the DUT, the same build as this one, as
	// remote.Runner.CheckBinary or Install found it: each command runs it
	// through remote.Runner.RunBinary or StartBinary, which check it again
	// in the command that runs it.
	Binary remote.Binary
	// DUTInterfaces are the DUT's ports: the one the generator sends to
	// first, then those the forwarding paths send out of (dut1, dut2).
	// GenInterfaces are this host's ports cabled to them, in the same
	// order.
	DUTInterfaces, GenInterfaces []string
	// GenNamespace is the network namespace of GenInterfaces; "" is the
	// caller's. (Tests put the tester's side in a test bed's.)
	GenNamespace string
	// Interval is how often the DUT's commands report their counters; 0
	// means DefaultRemoteInterval.
	Interval time.Duration
}

func (r *Remote) interval() time.Duration {
	if r.Interval > 0 {
		return r.Interval
	}
	return DefaultRemoteInterval
}

// runs says why path p cannot run on the DUT with the ports given, or nil.
func (r *Remote) runs(p PathInfo) error {
	if !p.Remote {
		var ok []string
		for _, q := range paths {
			if q.Remote {
				ok = append(ok, q.Name)
			}
		}
		return fmt.Errorf("path %s has no xdpeng command to run it on a DUT on another host: those that run there are %s",
			p.Name, strings.Join(ok, ", "))
	}
	if n := needLinks([]string{p.Name}); len(r.DUTInterfaces) < n {
		return fmt.Errorf("path %s needs %d DUT ports cabled to %d of the tester's (dut0,dut1 and gen0,gen1); %d given",
			p.Name, n, n, len(r.DUTInterfaces))
	}
	return nil
}

// Runnable splits names into the paths that run on the DUT with the ports
// given and those that do not, keeping their order.
func (r *Remote) Runnable(names []string) (run, left []string) {
	for _, n := range names {
		if p, ok := LookupPath(n); ok && r.runs(p) == nil {
			run = append(run, n)
		} else {
			left = append(left, n)
		}
	}
	return run, left
}

// checkRemote checks what a two-host run needs, before anything is run.
func (c *Config) checkRemote() error {
	r := c.Remote
	switch {
	case c.Testbed || c.Bed != nil:
		return errors.New("give either a test bed or a DUT on another host, not both")
	case c.Interface != "":
		return errors.New("give either an interface of this host (-i) or a DUT on another host, not both")
	case r.Runner == nil:
		return errors.New("no way to reach the DUT: a remote.Runner is needed")
	case len(r.DUTInterfaces) == 0:
		return errors.New("no DUT port given: name the DUT's port the generator sends to")
	case len(r.DUTInterfaces) != len(r.GenInterfaces):
		return fmt.Errorf("%d DUT port(s) (%s) but %d of the tester's (%s): give one of the tester's for each, cabled to it, in the same order",
			len(r.DUTInterfaces), strings.Join(r.DUTInterfaces, ","), len(r.GenInterfaces), strings.Join(r.GenInterfaces, ","))
	case r.Interval < 0:
		return fmt.Errorf("report interval %v: must not be negative", r.Interval)
	}
	for _, list := range [][]string{r.DUTInterfaces, r.GenInterfaces} {
		for i, n := range list {
			if n == "" || strings.ContainsAny(n, " ,/\n") || len(n) > 15 {
				return fmt.Errorf("interface name %q is not one", n)
			}
			if slices.Contains(list[:i], n) {
				return fmt.Errorf("interface %s given twice", n)
			}
		}
	}
	if c.Layout != "" {
		return errors.New("a layout is the test bed's: on two hosts the DUT's receive work runs where its own NIC and kernel put it")
	}
	return nil
}

// remoteDUT is what a two-host run learnt of its DUT.
type remoteDUT struct {
	cfg   *Remote
	env   labenv.Env // the DUT's
	ports []remotePort
	// duration bounds each path's remote commands: the whole of a
	// session's trials, and some.
	duration time.Duration
	// genTx is what sending XDP frames out of each of the tester's
	// ports needs (netdev.Plan.Transmit).
	genTx []netdev.TxNeed
	// trace says whether the path commands run with -e (the DUT's
	// kernel has the xdp tracepoints); notes are what the rows' notes
	// should add.
	mu    sync.Mutex
	trace bool
	notes []string
}

// remotePort is one of the DUT's ports as its xdpeng probe --json says.
type remotePort struct {
	Interface string      `json:"interface"`
	Index     int         `json:"index"`
	Driver    string      `json:"driver"`
	MAC       string      `json:"mac"`
	RxQueues  int         `json:"rx_queues"`
	Env       *labenv.Env `json:"env"`
}

// maxQueues bounds the rx queues a DUT's port may say it has.
const maxQueues = 1 << 16

// defaultDUTCPUs gives each of queues receivers a CPU of its own, from the
// DUT's last online CPU down, as the AF_XDP modes choose by default: one
// CPU for every queue would pin two workers to it, which they refuse.
func defaultDUTCPUs(online []int, queues int) ([]int, error) {
	if queues > len(online) {
		return nil, fmt.Errorf("%d queues but %d online CPUs (%s): one receiver per CPU; bind fewer queues, or name the receiver CPUs",
			queues, len(online), cpuset.Format(online))
	}
	cpus := make([]int, max(queues, 1))
	for i := range cpus {
		cpus[i] = online[len(online)-1-i]
	}
	return cpus, nil
}

// remoteEnv reaches the DUT of cfg.Remote, learns its ports, CPUs and
// environment, and pairs its ports with the tester's. It attaches nothing.
func remoteEnv(ctx context.Context, cfg *Config) (*env, error) {
	rc := cfg.Remote
	if rc.Binary.Path == "" || rc.Binary.SHA256 == "" {
		return nil, errors.New("compare: the DUT's xdpeng is not known: find it with remote.Runner.CheckBinary (or Install)")
	}
	rd := &remoteDUT{cfg: rc, trace: true, duration: sessionLength(cfg)}
	cfg.progress("the DUT %s: probing %s", rc.Runner.Target, strings.Join(rc.DUTInterfaces, ", "))
	for _, dev := range rc.DUTInterfaces {
		out, err := rc.Runner.RunBinary(ctx, rc.Binary, "probe", "-i", dev, "--json")
		if err != nil {
			return nil, fmt.Errorf("compare: %w", err) // it names the DUT
		}
		var p remotePort
		err = plainStrings(out)
		if err == nil {
			err = json.Unmarshal(out, &p)
		}
		if err != nil || p.Interface != dev || p.Env == nil {
			return nil, fmt.Errorf("compare: DUT %s: xdpeng probe -i %s --json printed %q (%v): not the probe of this build", rc.Runner.Target, dev, shown(out), err)
		}
		if p.RxQueues < 1 || p.RxQueues > maxQueues || p.Index < 1 {
			return nil, fmt.Errorf("compare: DUT %s: xdpeng probe -i %s --json says %d rx queue(s), index %d: not a port's", rc.Runner.Target, dev, p.RxQueues, p.Index)
		}
		rd.ports = append(rd.ports, p)
	}
	rd.env = *rd.ports[0].Env
	online, err := cpuset.Parse(rd.env.OnlineCPUs, "online CPU")
	if err != nil {
		return nil, fmt.Errorf("compare: DUT %s: its online CPUs: %w", rc.Runner.Target, err)
	}
	p0 := rd.ports[0]
	e := &env{remote: rd, genNS: rc.GenNamespace, dut: p0.Interface, dutIndex: p0.Index, driver: p0.Driver,
		queues: cfg.InterfaceQueues, genCPUs: cfg.GenCPUs}
	if e.queues == nil {
		for q := range p0.RxQueues {
			e.queues = append(e.queues, q)
		}
	}
	for _, q := range e.queues {
		if q < 0 || q >= p0.RxQueues {
			return nil, fmt.Errorf("compare: queue %d: %s on the DUT has %d rx queue(s) (0-%d)", q, p0.Interface, p0.RxQueues, p0.RxQueues-1)
		}
	}
	if len(cfg.DUTCPUs) == 0 {
		if cfg.DUTCPUs, err = defaultDUTCPUs(online, len(e.queues)); err != nil {
			return nil, fmt.Errorf("compare: DUT %s: %w", rc.Runner.Target, err)
		}
	}
	for _, c := range cfg.DUTCPUs {
		if !slices.Contains(online, c) {
			return nil, fmt.Errorf("compare: CPU %d is not online on the DUT (online: %s)", c, rd.env.OnlineCPUs)
		}
	}
	e.dutCPUs = cfg.DUTCPUs
	e.cpus = spread(len(e.queues), e.dutCPUs)
	err = e.inGen(func() error {
		for i, name := range rc.GenInterfaces {
			dutMAC, err := net.ParseMAC(rd.ports[i].MAC)
			if err != nil {
				return fmt.Errorf("DUT port %s: MAC address %q: %w", rd.ports[i].Interface, rd.ports[i].MAC, err)
			}
			frame, info, err := gen.ResolveAddrs(name, packet.UDPConfig{DstMAC: dutMAC})
			if err != nil {
				return fmt.Errorf("the tester's port %s: %w", name, err)
			}
			facts, err := netdev.Probe(name)
			if err != nil {
				return fmt.Errorf("the tester's port %s: %w", name, err)
			}
			tx := facts.Plan().Transmit
			if tx == netdev.TxUnsupported && i == 0 {
				return fmt.Errorf("the tester's port %s (%s) takes no XDP frames: the generator cannot send out of it", name, facts.DriverLabel())
			}
			rd.genTx = append(rd.genTx, tx)
			e.links = append(e.links, testbed.Link{
				Gen: name, GenIndex: info.Index, GenMAC: info.MAC, GenIP: net.IP(frame.SrcIP.AsSlice()),
				DUT: rd.ports[i].Interface, DUTIndex: rd.ports[i].Index, DUTMAC: dutMAC, DUTIP: net.IP(frame.DstIP.AsSlice()),
			})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	return e, nil
}

// setupAllowance is how long a path's commands on the DUT may take to
// start, in sessionLength.
const setupAllowance = 60 * time.Second

// sessionLength bounds the remote commands of one path: set-up, the
// full-load trial and, with an NDR search, the most trials it can take,
// each with its warm-up and drain. The commands end by themselves then,
// whatever becomes of this host. The set-up allows for a slow DUT: an
// emulated guest takes 20 s and more to start a path's commands over ssh
// on a loaded host.
func sessionLength(cfg *Config) time.Duration {
	per := func(d time.Duration) time.Duration { return d + 2*time.Second + drainMax + 2*time.Second }
	total := setupAllowance + per(cfg.Duration)
	if n := cfg.NDR; n != nil {
		// Halvings of the range down to the resolution, for NDR and PDR,
		// each with its first and last trial, and the two checks.
		halvings := 1
		for r := 1.0; r > n.Resolution; r /= 2 {
			halvings++
		}
		total += time.Duration(2*(halvings+2)+2) * per(n.Trial)
	}
	return total
}

// remoteSpec is how a path runs on the DUT: its command there, where its
// frames are counted and which of the DUT's counters explain a loss, as
// the local runner of the path has them.
type remoteSpec struct {
	// args are the command's words after the binary, without --json,
	// the interval, -e and the duration.
	args func(e *env, o pathOpts) []string
	// sink is where the frames come back: links of the generator's side
	// whose sinks count them (received is the sinks' count), and how they
	// arrive. Without it, received is the command's rx_packets.
	sink     []int
	sinkKind sinkKind
	// outs are the DUT's egress ports (links) whose transmit drops count.
	outs []int
	// xsk: the command is an AF_XDP mode (socket_drops, included in
	// veth's rx drops); txRing and handlerDrops add tx_ring_full and
	// the handler's drops (fwd's "dropped").
	xsk, txRing, handlerDrops bool
	// native: veth counts the path's failed redirects and XDP_TX as rx
	// drops too (traceReasons).
	native    bool
	copies    int
	countedAt string
	xdpMode   string // "" for the mode the command reports
}

// kernArgs is `kern ACTION -i DEV` in hook h, with -o for the egress links.
func kernArgs(action kern.Action, h kern.Hook, outs ...int) func(*env, pathOpts) []string {
	return func(e *env, o pathOpts) []string {
		a := []string{"kern", string(action), "-i", e.links[0].DUT}
		switch h {
		case kern.XDP:
			a = append(a, "-N")
		case kern.XDPGeneric:
			a = append(a, "-S")
		case kern.TC:
			a = append(a, "--hook", "tc")
		}
		if len(outs) > 0 {
			var names []string
			for _, k := range outs {
				names = append(names, e.links[k].DUT)
			}
			a = append(a, "-o", strings.Join(names, ","))
		}
		if o.packetOp != "" && h != kern.TC {
			a = append(a, "-p", o.packetOp)
		}
		if o.loadBytes && h != kern.TC {
			a = append(a, "-l", "load-bytes")
		}
		return a
	}
}

// xskArgs is an AF_XDP mode on the run's queues and CPUs, in the wait
// mode of o, with extra words.
func xskArgs(mode string, extra func(e *env) []string) func(*env, pathOpts) []string {
	return func(e *env, o pathOpts) []string {
		a := []string{mode, "-i", e.links[0].DUT, "-q", ints(e.queues), "--cpus", ints(e.cpus)}
		switch o.wait {
		case engine.WaitBusy:
			a = append(a, "--busy")
		case engine.WaitPoll:
			a = append(a, "-p")
		case engine.WaitBusyPoll:
			a = append(a, "-B")
		}
		if extra != nil {
			a = append(a, extra(e)...)
		}
		return a
	}
}

// ints is a list as the commands take it, in its order: 1,0.
func ints(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// remoteSpecs are the paths that run on a DUT on another host
// (PathInfo.Remote).
var remoteSpecs = map[string]remoteSpec{
	"xdp-drop": {args: kernArgs(kern.Drop, kern.XDP), native: true,
		countedAt: "the XDP program's per-CPU counter, on the DUT", xdpMode: kern.XDP.XDPMode()},
	"xdp-drop-generic": {args: kernArgs(kern.Drop, kern.XDPGeneric),
		countedAt: "the XDP program's per-CPU counter, on the DUT", xdpMode: kern.XDPGeneric.XDPMode()},
	"tc-drop": {args: kernArgs(kern.Drop, kern.TC),
		countedAt: "the tc program's per-CPU counter, on the DUT", xdpMode: "none (tc ingress)"},
	"xsk-drop": {args: xskArgs("rxdrop", nil), xsk: true, native: true,
		countedAt: "the engine's rx counter, on the DUT"},
	"xdp-tx": {args: kernArgs(kern.TX, kern.XDP), sink: []int{0}, sinkKind: xdpFrames, native: true,
		countedAt: "frames that came back: XDP counter on the tester's %s", xdpMode: kern.XDP.XDPMode()},
	"xsk-l2fwd": {args: xskArgs("l2fwd", nil), sink: []int{0}, sinkKind: skbFrames, outs: []int{0}, xsk: true, txRing: true, native: true,
		countedAt: "frames that came back: tc ingress counter on the tester's %s"},
	"xdp-redirect": {args: kernArgs(kern.Redirect, kern.XDP, 1), sink: []int{1}, sinkKind: xdpFrames, outs: []int{1}, native: true,
		countedAt: "XDP counter on the tester's %s", xdpMode: kern.XDP.XDPMode()},
	"xdp-redirect-generic": {args: kernArgs(kern.Redirect, kern.XDPGeneric, 1), sink: []int{1}, sinkKind: xdpFrames, outs: []int{1},
		countedAt: "XDP counter on the tester's %s", xdpMode: kern.XDPGeneric.XDPMode()},
	"xdp-redirect-multi": {args: kernArgs(kern.Redirect, kern.XDP, 1, 2), sink: []int{1, 2}, sinkKind: xdpFrames, outs: []int{1, 2}, native: true,
		copies: 2, countedAt: "XDP counter on the tester's %s", xdpMode: kern.XDP.XDPMode()},
	"xsk-fwd": {args: xskArgs("fwd", func(e *env) []string { return []string{"-o", e.links[1].DUT, "-G", e.links[1].GenMAC.String()} }),
		sink: []int{1}, sinkKind: skbFrames, outs: []int{1}, xsk: true, txRing: true, handlerDrops: true, native: true,
		countedAt: "frames forwarded out of the DUT's second port: tc ingress counter on the tester's %s"},
}

// remoteRunner is a path on a DUT on another host: its command there and
// `xdpeng stats --cpu` on the DUT's ports, each a remote.Process whose
// JSON lines keep the latest counters here, and the sinks here that count
// the frames that come back.
type remoteRunner struct {
	e    *env
	o    pathOpts
	name string
	spec remoteSpec

	path, stats *remote.Process
	sink        *sinks
	// What the commands' lines must say they are from: the path's mode
	// and port, and the ports stats watches.
	wantMode, wantIface string
	ports               []string
	// txHelper is an XDP_PASS program on the generator's port, whose
	// driver transmits XDP frames only while a program is attached
	// (netdev.TxNeedsProgram), where no sink's program is there.
	txHelper *kern.Path

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced at every line
	pathN    int           // interval lines of the path command so far
	statsN   int           // and of stats
	last     pathLine      // the path command's latest interval
	devs     map[string]map[string]uint64
	cpu      cpustat.Stat
	lineErrs []error
}

// pathLine is what a path command's interval line says (kern, rxdrop,
// l2fwd, fwd --json, with -e).
type pathLine struct {
	Mode           string             `json:"mode"`
	Interface      string             `json:"interface"`
	RxPackets      uint64             `json:"rx_packets"`
	XDPMode        string             `json:"xdp_mode"`
	ZeroCopy       bool               `json:"zero_copy"`
	XDPStats       engine.SocketStats `json:"xdp_stats"`
	HandlerDropped uint64             `json:"handler_dropped"`
	TxRingFull     uint64             `json:"tx_ring_full"`
	XDPErrors      *xdperr.Snapshot   `json:"xdp_errors_since_start"`
}

// statsLine is what an interval line of `xdpeng stats --cpu --json` says.
type statsLine struct {
	Mode    string `json:"mode"`
	Devices []struct {
		Interface string               `json:"interface"`
		Ethtool   []netdev.CounterRate `json:"ethtool"`
		Netdev    []netdev.CounterRate `json:"netdev"`
	} `json:"devices"`
	CPUTimes cpustat.Stat `json:"cpu_times"`
}

func newRemoteRunner(name string, e *env, o pathOpts) (runner, error) {
	spec, ok := remoteSpecs[name]
	if !ok {
		return nil, fmt.Errorf("path %s does not run on a DUT on another host", name)
	}
	return &remoteRunner{e: e, o: o, name: name, spec: spec, changed: make(chan struct{}), devs: map[string]map[string]uint64{}}, nil
}

func (r *remoteRunner) start(ctx context.Context) (err error) {
	rd := r.e.remote
	rc := rd.cfg
	if len(r.spec.sink) > 0 {
		if r.sink, err = attachSinks(r.e, r.spec.sink, r.spec.sinkKind, r.o.stamp); err != nil {
			return err
		}
	}
	if r.needsTxHelper() {
		err := r.e.inGen(func() (err error) {
			r.txHelper, err = kern.Open(kern.Config{Action: kern.Pass, Interface: r.e.links[0].Gen, Hook: kern.XDP})
			return err
		})
		if err != nil {
			return fmt.Errorf("attach XDP_PASS to the tester's %s, whose driver sends XDP frames only while a program is attached: %w", r.e.links[0].Gen, err)
		}
	}
	every := strconv.FormatFloat(rc.interval().Seconds(), 'f', -1, 64)
	ports := []string{r.e.links[0].DUT}
	for _, k := range r.spec.outs {
		if !slices.Contains(ports, r.e.links[k].DUT) {
			ports = append(ports, r.e.links[k].DUT)
		}
	}
	r.ports = ports
	r.stats, err = rc.Runner.StartBinary(ctx, rc.Binary, []string{"stats", "-i", strings.Join(ports, ","), "--cpu", "--json", "-n", every},
		rd.duration, r.onStats)
	if err != nil {
		return fmt.Errorf("xdpeng stats on the DUT: %w", err)
	}
	args := append(r.spec.args(r.e, r.o), "--json", "-n", every)
	r.wantMode, r.wantIface = lineMode(args), r.e.links[0].DUT
	rd.mu.Lock()
	trace := rd.trace
	rd.mu.Unlock()
	if trace {
		r.path, err = r.startPath(ctx, append(args, "-e"))
		var ee *remote.ExitError
		if errors.As(err, &ee) && strings.Contains(ee.Stderr, "xdpeng: -e: ") {
			// The DUT's kernel cannot count the xdp tracepoints: run
			// without, as the local runs do, and say so once.
			rd.mu.Lock()
			if rd.trace {
				rd.trace = false
				rd.notes = append(rd.notes, fmt.Sprintf("the xdp tracepoints are not counted on the DUT (%s): the drops they would explain by errno or action show in veth_rx_drops or as unexplained",
					lastLine(ee.Stderr)))
			}
			rd.mu.Unlock()
			r.path, err = r.startPath(ctx, args)
		}
	} else {
		r.path, err = r.startPath(ctx, args)
	}
	if err != nil {
		return err
	}
	return nil
}

// needsTxHelper tells whether the generator's port needs a program of ours
// to send: its driver transmits XDP frames only while one is attached, and
// no sink attaches an XDP program there.
func (r *remoteRunner) needsTxHelper() bool {
	if len(r.e.remote.genTx) == 0 || r.e.remote.genTx[0] != netdev.TxNeedsProgram {
		return false
	}
	return !(slices.Contains(r.spec.sink, 0) && r.spec.sinkKind == xdpFrames)
}

// startPath starts the path's command on the DUT and waits for its first
// interval: the path is set up there, and reports.
func (r *remoteRunner) startPath(ctx context.Context, args []string) (*remote.Process, error) {
	rc := r.e.remote.cfg
	p, err := rc.Runner.StartBinary(ctx, rc.Binary, args, r.e.remote.duration, r.onPath)
	if err != nil {
		return nil, err
	}
	// Set-up on the DUT (loading, attaching, binding) takes what it
	// takes; this bounds a command that hangs.
	deadline := time.After(rc.Runner.ConnectTimeout + 60*time.Second)
	for {
		r.mu.Lock()
		n, ch, lerr := r.pathN, r.changed, errors.Join(r.lineErrs...)
		r.mu.Unlock()
		if lerr != nil {
			return nil, errors.Join(lerr, p.Stop())
		}
		if n > 0 {
			return p, nil
		}
		select {
		case <-ch:
		case <-p.Done():
			if err := p.Wait(); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("%s on the DUT ended before it reported", remote.QuoteCommand(p.Args()))
		case <-deadline:
			return nil, errors.Join(fmt.Errorf("%s on the DUT did not report within a minute", remote.QuoteCommand(p.Args())), p.Stop())
		case <-ctx.Done():
			return nil, errors.Join(ctx.Err(), p.Stop())
		}
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// note records that a line arrived: the waiters of sample see it.
func (r *remoteRunner) note() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// lineMode is the "mode" of the lines of a path command (args without the
// binary): kern's is kern-ACTION, an AF_XDP mode's its own name.
func lineMode(args []string) string {
	if len(args) >= 2 && args[0] == "kern" {
		return "kern-" + args[1]
	}
	return args[0]
}

// plainStrings checks that no string (nor key) of a DUT's JSON holds a
// control character: the strings end up in this host's report and
// terminal, where one could be an escape sequence.
func plainStrings(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	var walk func(v any) error
	walk = func(v any) error {
		switch x := v.(type) {
		case string:
			if remote.Printable(x) != x {
				return fmt.Errorf("the string %q holds control characters", x)
			}
		case []any:
			for _, e := range x {
				if err := walk(e); err != nil {
					return err
				}
			}
		case map[string]any:
			for k, e := range x {
				if err := walk(k); err != nil {
					return err
				}
				if err := walk(e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(v)
}

// maxShown bounds how much of a DUT's line an error quotes.
const maxShown = 300

func shown(b []byte) string {
	if len(b) > maxShown {
		b = b[:maxShown]
	}
	return remote.Printable(string(b))
}

// The DUT's lines are data: a line that does not parse, that is from
// another command than the one started, or whose counters since the start
// go down ends the path with an error (sample returns it).
func (r *remoteRunner) onPath(l remote.Line) {
	if l.Type != "interval" {
		return
	}
	var v pathLine
	err := plainStrings(l.JSON)
	if err == nil {
		err = json.Unmarshal(l.JSON, &v)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		err = r.checkPath(v)
	}
	if err != nil {
		r.lineErrs = append(r.lineErrs, fmt.Errorf("the DUT's %s printed %s: %w", r.name, shown(l.JSON), err))
	} else {
		r.last = v
		r.pathN++
	}
	r.note()
}

// checkPath checks a path command's interval line against the command
// and its previous line; r.mu is held.
func (r *remoteRunner) checkPath(v pathLine) error {
	if v.Mode != r.wantMode || v.Interface != r.wantIface {
		return fmt.Errorf("a line of %s on %s, not of the command started (%s on %s)", v.Mode, v.Interface, r.wantMode, r.wantIface)
	}
	if r.pathN == 0 {
		return nil
	}
	p := r.last
	for _, c := range []struct {
		name     string
		was, now uint64
	}{
		{"rx_packets", p.RxPackets, v.RxPackets},
		{"handler_dropped", p.HandlerDropped, v.HandlerDropped},
		{"tx_ring_full", p.TxRingFull, v.TxRingFull},
		{"rx_dropped", p.XDPStats.RxDropped, v.XDPStats.RxDropped},
		{"rx_invalid_descs", p.XDPStats.RxInvalidDescs, v.XDPStats.RxInvalidDescs},
		{"tx_invalid_descs", p.XDPStats.TxInvalidDescs, v.XDPStats.TxInvalidDescs},
		{"rx_ring_full", p.XDPStats.RxRingFull, v.XDPStats.RxRingFull},
		{"rx_fill_ring_empty_descs", p.XDPStats.RxFillRingEmptyDescs, v.XDPStats.RxFillRingEmptyDescs},
		{"tx_ring_empty_descs", p.XDPStats.TxRingEmptyDescs, v.XDPStats.TxRingEmptyDescs},
	} {
		if c.now < c.was {
			return fmt.Errorf("%s went down, from %d to %d: a count since the start never does", c.name, c.was, c.now)
		}
	}
	return nil
}

// maxCounters bounds the counters kept of one DUT port (a NIC with many
// queues has a few thousand).
const maxCounters = 1 << 16

// onStats adds each counter's change to its total since the command
// began: what it counts since then, the same difference between two
// lines as the counters' own.
func (r *remoteRunner) onStats(l remote.Line) {
	if l.Type != "interval" {
		return
	}
	var v statsLine
	err := plainStrings(l.JSON)
	if err == nil {
		err = json.Unmarshal(l.JSON, &v)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		err = r.addStats(v)
	}
	if err != nil {
		r.lineErrs = append(r.lineErrs, fmt.Errorf("the DUT's xdpeng stats printed %s: %w", shown(l.JSON), err))
		r.note()
		return
	}
	r.cpu = v.CPUTimes
	r.statsN++
	r.note()
}

// addStats adds a stats line's changes to the totals; r.mu is held. A line
// of another command, of a port not watched, with too many counters, or
// whose totals would wrap is an error, and adds nothing.
func (r *remoteRunner) addStats(v statsLine) error {
	if v.Mode != "stats" {
		return fmt.Errorf("a line of %q, not of xdpeng stats", v.Mode)
	}
	next := map[string]map[string]uint64{}
	for _, d := range v.Devices {
		if !slices.Contains(r.ports, d.Interface) {
			return fmt.Errorf("a line about %q, which is none of the ports watched (%s)", d.Interface, strings.Join(r.ports, ", "))
		}
		if next[d.Interface] != nil {
			return fmt.Errorf("%s twice in one line", d.Interface)
		}
		m := maps.Clone(r.devs[d.Interface])
		if m == nil {
			m = map[string]uint64{}
		}
		next[d.Interface] = m
		for _, set := range []struct {
			prefix string
			rates  []netdev.CounterRate
		}{{"ethtool:", d.Ethtool}, {"netdev:", d.Netdev}} {
			for _, c := range set.rates {
				k := set.prefix + c.Name
				sum := m[k] + c.Delta
				if sum < m[k] {
					return fmt.Errorf("%s %s: its total since the start would pass 2^64", d.Interface, k)
				}
				m[k] = sum
			}
		}
		if len(m) > maxCounters {
			return fmt.Errorf("%s: more than %d counters", d.Interface, maxCounters)
		}
	}
	maps.Copy(r.devs, next)
	return nil
}

// staleAfter is how long sample waits for the DUT's next report before it
// gives up.
func (r *remoteRunner) staleAfter() time.Duration {
	return 20*r.e.remote.cfg.interval() + 5*time.Second
}

// sample waits for a line of each command that came after the call, so
// that its counters are newer than the call, and reads the sinks.
func (r *remoteRunner) sample() (s sample, err error) {
	r.mu.Lock()
	wantPath, wantStats := r.pathN+1, r.statsN+1
	r.mu.Unlock()
	timeout := time.NewTimer(r.staleAfter())
	defer timeout.Stop()
	for {
		r.mu.Lock()
		if err := errors.Join(r.lineErrs...); err != nil {
			r.mu.Unlock()
			return s, err
		}
		if r.pathN >= wantPath && r.statsN >= wantStats {
			s = r.read()
			r.mu.Unlock()
			break
		}
		ch := r.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-r.path.Done():
			return s, r.ended(r.path)
		case <-r.stats.Done():
			return s, r.ended(r.stats)
		case <-timeout.C:
			return s, fmt.Errorf("no counters from the DUT %s for %v", r.e.remote.cfg.Runner.Target, r.staleAfter())
		}
	}
	if r.sink != nil {
		if s.received, err = r.sink.count(); err != nil {
			return s, err
		}
	}
	return s, nil
}

// ended is the error of a command that ended while the run needed it.
func (r *remoteRunner) ended(p *remote.Process) error {
	err := p.Wait()
	if err == nil {
		err = errors.New("ended by itself (its duration)")
	}
	return fmt.Errorf("%s on the DUT: %w", remote.QuoteCommand(p.Args()), err)
}

// read makes a sample of the latest lines, with r.mu held, as the local
// runners make theirs: received, then the DUT's own drop counters.
func (r *remoteRunner) read() sample {
	s := sample{reasons: map[string]uint64{}, cpu: r.cpu}
	s.received = r.last.RxPackets
	veth := r.e.driver == "veth"
	in := r.devs[r.e.links[0].DUT]
	if veth {
		q := vethSum(in)
		s.reasons["veth_rx_drops"] = q.RxDrops
		s.portIn, s.portKnown = q.RxPackets, true
	} else {
		// A NIC counts what it took off the wire in rx_packets, and
		// what it had no buffer for in rx_missed_errors.
		s.reasons["rx_missed_errors"] = in["netdev:rx_missed_errors"]
		s.portIn, s.portKnown = in["netdev:rx_packets"]+in["netdev:rx_missed_errors"], true
	}
	for _, k := range r.spec.outs {
		out := r.devs[r.e.links[k].DUT]
		s.reasons["egress_xmit_errors"] += vethSum(out).TxXDPXmitErrors
		s.reasons["egress_tx_dropped"] += out["netdev:tx_dropped"]
	}
	if r.spec.xsk {
		s.reasons["socket_drops"] = r.last.XDPStats.Drops()
		if veth {
			s.include("veth_rx_drops", "socket_drops")
		}
	}
	if r.spec.txRing {
		s.reasons["tx_ring_full"] = r.last.TxRingFull
	}
	if r.spec.handlerDrops {
		s.reasons["dropped"] = r.last.HandlerDropped
	}
	if r.last.XDPErrors != nil {
		traceReasonsOf(*r.last.XDPErrors, &s, r.spec.native)
	}
	return s
}

// vethSum sums veth's per-queue counters among a device's totals; zero
// where none has changed yet.
func vethSum(totals map[string]uint64) netdev.VethQueue {
	eth := map[string]uint64{}
	for k, v := range totals {
		if name, ok := strings.CutPrefix(k, "ethtool:"); ok {
			eth[name] = v
		}
	}
	qs, err := netdev.ParseVethQueues(eth)
	if err != nil {
		return netdev.VethQueue{}
	}
	return netdev.SumVethQueues(qs)
}

// stop ends both commands (SIGINT over ssh: they end as on Ctrl-C, and
// detach), then the sinks.
func (r *remoteRunner) stop() error {
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, p := range []*remote.Process{r.path, r.stats} {
		if p == nil {
			continue
		}
		wg.Go(func() {
			if err := p.Stop(); err != nil {
				errs[i] = fmt.Errorf("%s on the DUT: %w", remote.QuoteCommand(p.Args()), err)
			}
		})
	}
	wg.Wait()
	r.path, r.stats = nil, nil
	errs[2] = r.sink.close()
	r.sink = nil
	if r.txHelper != nil {
		errs = append(errs, r.txHelper.Close())
		r.txHelper = nil
	}
	return errors.Join(errs...)
}

func (r *remoteRunner) countedAt() string {
	if strings.Contains(r.spec.countedAt, "%s") {
		var names []string
		for _, k := range r.spec.sink {
			names = append(names, r.e.links[k].Gen)
		}
		return fmt.Sprintf(r.spec.countedAt, strings.Join(names, " and "))
	}
	return r.spec.countedAt
}

func (r *remoteRunner) copies() int { return max(1, r.spec.copies) }

func (r *remoteRunner) xdpMode() string {
	if r.spec.xdpMode != "" {
		return r.spec.xdpMode
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last.XDPMode == "" {
		return ""
	}
	return xskMode(r.last.XDPMode, r.last.ZeroCopy)
}

func (r *remoteRunner) receiver() *latency.Receiver { return r.sink.receiver() }

// remoteRunEnv is the environment of a two-host run: the DUT's machine,
// and what the run chose.
func remoteRunEnv(cfg *Config, e *env) labenv.Env {
	v := e.remote.env
	v.Driver = e.driver
	v.Queues = len(e.queues)
	var pairs []string
	for _, l := range e.links {
		pairs = append(pairs, l.Gen+" -> "+l.DUT)
	}
	v.Layout = fmt.Sprintf("two hosts: the generator here, the paths on the DUT %s (%s)", e.remote.cfg.Runner.Target, strings.Join(pairs, ", "))
	v.CPUs = fmt.Sprintf("generator %s on the tester, receiver %s on the DUT", cpuset.Format(cfg.GenCPUs), cpuset.Format(cfg.DUTCPUs))
	v.FrameSize = cfg.FrameSize
	v.Generator = generatorText(cfg.GenMethod, cfg.GenCopies, len(cfg.GenCPUs), cfg.Rate) + ", on the tester (Linux " + kernelRelease() + ")"
	return v
}
