//go:build linux

package compare

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/counter"
	"github.com/xdpeng/xdpeng/internal/lab/cpustat"
	labenv "github.com/xdpeng/xdpeng/internal/lab/env"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/lab/xdperr"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// env is where the paths run: a test bed, an interface of this host, or a
// DUT on another host.
type env struct {
	bed    *testbed.Bed // nil on a host interface and with a remote DUT
	remote *remoteDUT   // the DUT on another host, nil on this one
	// links are the DUT's ports and the generator's cabled to them: a
	// bed's, or with a remote DUT the ports given (DUTIndex is then the
	// DUT's); nil without a generator.
	links    []testbed.Link
	genNS    string // the namespace of the generator's ports ("" the current)
	dutNS    string // "" is the current namespace
	dut      string // the receiving interface
	dutIndex int
	driver   string // of dut: "veth", "mlx5_core", ...
	queues   []int
	cpus     []int // the receiver thread of queues[i] runs on cpus[i]
	dutCPUs  []int
	genCPUs  []int
	// relayOnGen says the generator CPUs' irq and softirq time is the
	// generator's own (its veth relay's NAPI), not the DUT's: layout B,
	// where the DUT's NAPI runs on its own CPU, with a relayed method.
	relayOnGen bool
	// peers is the directory the peer tools are looked for in first
	// (Config.Peers).
	peers string
	// napiGuard makes the guard of an engine's NAPI settings
	// (Config.NAPIGuard); nil for none.
	napiGuard func(iface string) (engine.NAPIGuard, func() error)

	// errs counts the xdp tracepoints (nil where they cannot be), and
	// netns is the cookie of the DUT's namespace, to pick its device.
	errs  *xdperr.Watcher
	netns uint64
}

// watchErrors starts counting the xdp tracepoints for the rows' drop
// reasons; it returns why it cannot, and the rows then go without them.
func (e *env) watchErrors() error {
	if err := e.inDUT(func() (err error) { e.netns, err = xdperr.NetnsCookie(); return err }); err != nil {
		return err
	}
	w, err := xdperr.Start()
	if err != nil {
		return err
	}
	e.errs = w
	return nil
}

// traceReasons adds to s why the xdp tracepoints say frames of the DUT's
// receiving device were lost since the watcher started: redirect errors
// by errno ("xdp_redirect_err_ENETDOWN"), XDP exceptions by action and
// devmap transmits that failed with an errno. A redirect into an AF_XDP
// socket that fails is left out: it is one of the socket's drops, which
// the row has already. In native mode veth counts every failed redirect and
// failed XDP_TX as one of its rx drops too, so veth_rx_drops then reports
// only what these do not explain (call it after veth_rx_drops is set).
// Devmap drops without an errno are the frames the egress veth refused,
// which egress_xmit_errors counts.
func (e *env) traceReasons(s *sample, native bool) error {
	if e.errs == nil {
		return nil
	}
	all, err := e.errs.Read()
	if err != nil {
		return err
	}
	traceReasonsOf(all.ForDevice(e.netns, e.dutIndex), s, native)
	return nil
}

// traceReasonsOf adds to s what d, the xdp tracepoints' counts of the
// DUT's receiving device, say (see traceReasons): read here, or by the
// DUT's own xdpeng -e on another host.
func traceReasonsOf(d xdperr.Snapshot, s *sample, native bool) {
	var inVeth []string
	add := func(k string, n uint64, countedByVeth bool) {
		if _, seen := s.reasons[k]; !seen && countedByVeth {
			inVeth = append(inVeth, k)
		}
		s.reasons[k] += n
	}
	for _, r := range d.RedirectErrors {
		if r.MapType != ebpf.XSKMap {
			add("xdp_redirect_err_"+xdperr.ErrnoName(r.Errno), r.Frames, native)
		}
	}
	for _, x := range d.Exceptions {
		if x.Action != xdperr.Redirect { // a redirect error counts those
			add("xdp_exception_"+x.Action.String(), x.Frames, native && x.Action == xdperr.TX)
		}
	}
	for _, x := range d.DevmapXmit {
		if x.Errno != 0 && x.Drops > 0 {
			add("xdp_devmap_xmit_"+xdperr.ErrnoName(x.Errno), x.Drops, false)
		}
	}
	for _, c := range d.CPUMapEnqueue {
		if c.Drops > 0 { // the queue to the CPU was full
			add("xdp_cpumap_enqueue", c.Drops, false)
		}
	}
	if _, ok := s.reasons["veth_rx_drops"]; ok && len(inVeth) > 0 {
		s.include("veth_rx_drops", inVeth...)
	}
}

func bedEnv(bed *testbed.Bed, cfg *Config) (*env, error) {
	if len(cfg.DUTCPUs) == 0 {
		return nil, errNoDUTCPUs
	}
	e := &env{bed: bed, links: bed.Links, genNS: bed.GenNS, dutNS: bed.DUTNS, dut: bed.Links[0].DUT, dutIndex: bed.Links[0].DUTIndex,
		dutCPUs: cfg.DUTCPUs, genCPUs: cfg.GenCPUs, peers: cfg.Peers, napiGuard: cfg.NAPIGuard,
		relayOnGen: cfg.Layout == LayoutB && cfg.GenMethod.Relayed()}
	for q := range bed.Queues {
		e.queues = append(e.queues, q)
	}
	e.cpus = spread(len(e.queues), cfg.DUTCPUs)
	err := e.inDUT(func() error {
		info, err := netdev.Lookup(e.dut)
		if err != nil {
			return err
		}
		e.driver = info.Driver
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	return e, nil
}

func nicEnv(cfg *Config) (*env, error) {
	if len(cfg.DUTCPUs) == 0 {
		return nil, errNoDUTCPUs
	}
	info, err := engine.LookupDevice(cfg.Interface)
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	if !cfg.Force {
		carries, err := netdev.CarriesDefaultRoute(info.Index)
		if err != nil {
			return nil, fmt.Errorf("compare: %w", err)
		}
		if carries {
			return nil, fmt.Errorf("compare: every path would take all of %s's traffic, and %w", info.Name, ErrDefaultRoute)
		}
	}
	e := &env{dut: info.Name, dutIndex: info.Index, driver: info.Driver, queues: cfg.InterfaceQueues, dutCPUs: cfg.DUTCPUs,
		napiGuard: cfg.NAPIGuard}
	if e.queues == nil {
		for q := range info.RxQueues {
			e.queues = append(e.queues, q)
		}
	}
	if err := info.CheckQueues(e.queues); err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	e.cpus = spread(len(e.queues), cfg.DUTCPUs)
	return e, nil
}

// errNoDUTCPUs: a Config whose defaults were not filled in (Resolve).
var errNoDUTCPUs = errors.New("compare: no receiver CPUs on the DUT: the config was not resolved (Config.Resolve)")

// spread gives n receiver threads CPUs from cpus, round-robin.
func spread(n int, cpus []int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = cpus[i%len(cpus)]
	}
	return out
}

func (e *env) inDUT(fn func() error) error {
	if e.dutNS == "" {
		return fn()
	}
	return testbed.Do(e.dutNS, fn)
}

// generates tells whether the run drives its own traffic: a test bed, or a
// remote DUT cabled to the generator's ports.
func (e *env) generates() bool { return e.links != nil }

func (e *env) inGen(fn func() error) error {
	if e.genNS == "" {
		return fn()
	}
	return testbed.Do(e.genNS, fn)
}

// statGenCPUs are the generator's CPUs as the CPU figures see them: none
// when those figures are the DUT's, another host's.
func (e *env) statGenCPUs() []int {
	if e.remote != nil {
		return nil
	}
	return e.genCPUs
}

// vethRx reads the DUT interface's veth counters summed over queues; ok is
// false on a device without them.
func (e *env) vethRx() (q netdev.VethQueue, ok bool) {
	err := e.inDUT(func() error {
		qs, err := netdev.VethQueueCounters(e.dut)
		if err != nil {
			return err
		}
		q = netdev.SumVethQueues(qs)
		return nil
	})
	return q, err == nil
}

// genDstPort is the UDP destination port of the generated frames (9,
// discard), which the sinks count by.
const genDstPort = 9

// genConfig is the offered load: one frame template for the family, out of
// gen0, from the generator CPUs, for the duration.
func (e *env) genConfig(f Family, cfg *Config) gen.Config {
	l := e.links[0]
	dstMAC, dstIP := l.DUTMAC, l.DUTIP
	if f == Forward {
		// Addressed past the DUT to gen1, so that the bridge forwards
		// (a frame to a port's own MAC would go up its stack); the XDP
		// redirects do not look at addresses.
		dstMAC, dstIP = e.links[1].GenMAC, e.links[1].GenIP
	}
	// In layout B the DUT's CPU frees the generator's frames, into the
	// ring of the generator's page pool, which holds a batch: at full
	// speed the largest batch keeps that ring from spilling pages to the
	// page allocator, whose lock both CPUs would then take (xdp-drop in
	// B: 15.6 -> 29.6 Mpps).
	full := 0
	if cfg.Layout == LayoutB {
		full = gen.MaxBatch
	}
	return gen.Config{
		FullSpeedBatch: full,
		Ifindex:        l.GenIndex,
		Frame: packet.UDPConfig{
			SrcMAC: l.GenMAC, DstMAC: dstMAC,
			SrcIP:   netip.MustParseAddr(l.GenIP.String()),
			DstIP:   netip.MustParseAddr(dstIP.String()),
			SrcPort: 1234, DstPort: genDstPort, Size: cfg.FrameSize,
		},
		Duration: cfg.Duration,
		Rate:     cfg.Rate,
		Threads:  len(e.genCPUs),
		CPUs:     e.genCPUs,
		Method:   cfg.GenMethod,
		Copies:   cfg.GenCopies,
	}
}

// sample is a path's cumulative counters at one moment, as read: the
// counters of one sample come from different places (a BPF map, the
// engine, veth's statistics) and are read one after another, so they are
// only compared after a drain, or through package counter.
type sample struct {
	received uint64
	// reasons are cumulative drop counters by reason.
	reasons map[string]uint64
	// includes maps a reason to others whose frames it counts too
	// (veth's rx drops include the frames a full socket refused, and in
	// native mode every failed redirect); the row reports only what the
	// first counts besides the others.
	includes map[string][]string
	// portIn, when portKnown, is the DUT's port's own count of the frames
	// it took in (veth: rx_queue_N_xdp_packets; a NIC: rx_packets and
	// rx_missed_errors): with the generator's count of what its port
	// sent, it tells the frames lost on the wire between.
	portIn    uint64
	portKnown bool
	// cpu, if set, is the CPU times read with the sample (the DUT's, on
	// another host); nil means this host's, read by snapshot.
	cpu cpustat.Stat
}

// include records that reason k counts the frames of inner too.
func (s *sample) include(k string, inner ...string) {
	if s.includes == nil {
		s.includes = map[string][]string{}
	}
	s.includes[k] = append(s.includes[k], inner...)
}

// account returns what happened between two samples of one path: the
// frames received, and the drops by reason, each reason that includes
// another reduced to the rest. Every difference goes through counter.Sub,
// so a counter read before its source caught up gives 0, never a wrapped
// 2^64 - n.
func account(base, final sample) (received uint64, reasons map[string]uint64) {
	d := make(map[string]uint64, len(final.reasons))
	for k, v := range final.reasons {
		d[k] = counter.Sub(v, base.reasons[k])
	}
	reasons = make(map[string]uint64, len(d))
	for k, v := range d {
		var in uint64
		for _, inner := range final.includes[k] {
			in += d[inner]
		}
		v = counter.Sub(v, in)
		if v != 0 {
			reasons[k] = v
		}
	}
	return counter.Sub(final.received, base.received), reasons
}

// runner is one path set up on the DUT.
type runner interface {
	// start attaches and binds everything; on error what it made is
	// undone by stop.
	start(ctx context.Context) error
	sample() (sample, error)
	// stop undoes start; it is safe after a failed or no start, and
	// twice.
	stop() error
	// countedAt says where received is counted.
	countedAt() string
	// copies is frames out per frame in.
	copies() int
	// xdpMode says how the path meets the device, for the row's
	// environment: "native", "generic", "native, AF_XDP copy", "none (tc)"...
	// It is asked after start.
	xdpMode() string
}

// ender is a runner of another program (a peer tool), which says after
// stop how that program was ended and what was removed after it.
type ender interface {
	ended() string
}

// measure runs one path: set up, offer the load, sample inside it, drain,
// tear down; with cfg.NDR, search its zero-loss rate before tearing down.
func measure(ctx context.Context, e *env, cfg *Config, info PathInfo, shared labenv.Env) (row Row, err error) {
	row = newRow(info, shared)
	s, err := openSession(ctx, e, info, pathOpts{packetOp: cfg.PacketOp, loadBytes: cfg.LoadBytes})
	if s != nil {
		defer func() {
			if serr := s.close(); serr != nil {
				err = errors.Join(err, serr)
			}
			if en, ok := s.r.(ender); ok {
				row.Cleanup = en.ended()
			}
		}()
	}
	if err != nil {
		return row, err
	}
	s.describe(&row)
	cfg.progress("%-20s measuring for %v", info.Name, cfg.Duration)
	var gcfg *gen.Config
	if e.generates() {
		g := e.genConfig(info.Family, cfg)
		gcfg = &g
	}
	if _, err := s.trial(ctx, gcfg, cfg.Duration, &row); err != nil {
		return row, err
	}
	if cfg.NDR != nil {
		if err := s.searchRates(ctx, cfg, &row); err != nil {
			return row, err
		}
	}
	return row, nil
}

func newRow(info PathInfo, shared labenv.Env) Row {
	return Row{Path: info.Name, Family: info.Family, Copies: 1, Reasons: map[string]uint64{}, CPUPercent: map[string]float64{}, Env: shared}
}

// session is one path set up on the DUT, for one or more trials.
type session struct {
	e    *env
	info PathInfo
	r    runner
	// gen runs the generator of a trial: gen.Run, unless a test says
	// otherwise.
	gen func(ctx context.Context, cfg gen.Config) (gen.Stats, error)
}

// openSession sets up path info; on error what it made is undone, and the
// session returned (if not nil) must still be closed.
func openSession(ctx context.Context, e *env, info PathInfo, o pathOpts) (*session, error) {
	r, err := newRunner(info.Name, e, o)
	if err != nil {
		return nil, err
	}
	s := &session{e: e, info: info, r: r}
	if err := r.start(ctx); err != nil {
		return s, fmt.Errorf("%s: set up: %w", info.Name, err)
	}
	return s, nil
}

// close tears the path down.
func (s *session) close() error {
	if err := s.r.stop(); err != nil {
		return fmt.Errorf("%s: tear down: %w", s.info.Name, err)
	}
	return nil
}

// describe fills in what the row says about where and how it counts.
func (s *session) describe(row *Row) {
	row.CountedAt, row.Copies = s.r.countedAt(), s.r.copies()
	row.Env.XDPMode = s.r.xdpMode()
}

// trial offers the load gcfg describes (nil without a test bed: whatever
// arrives, for d), samples a measurement window inside it, drains, and
// fills in row's figures and accounting. It returns what the generator
// says of its run.
func (s *session) trial(ctx context.Context, gcfg *gen.Config, d time.Duration, row *Row) (gen.Stats, error) {
	r, e, name := s.r, s.e, s.info.Name
	base, err := r.sample()
	if err != nil {
		return gen.Stats{}, fmt.Errorf("%s: %w", name, err)
	}

	// The generator runs beside the sampling, on its own locked thread in
	// the gen namespace.
	genDone := make(chan struct{})
	var genStats gen.Stats
	var genErr error
	genCtx, stopGen := context.WithCancel(ctx)
	if gcfg != nil {
		run := s.gen
		if run == nil {
			run = func(ctx context.Context, cfg gen.Config) (gen.Stats, error) { return gen.Run(ctx, cfg, nil) }
		}
		go func() {
			defer close(genDone)
			if g, ok := r.(generator); ok {
				genStats, genErr = g.generate(ctx, *gcfg)
				return
			}
			genErr = e.inGen(func() (err error) {
				genStats, err = run(genCtx, *gcfg)
				return err
			})
		}()
	} else {
		close(genDone)
	}
	// The generator is stopped and waited for on every return below: an
	// early error does not wait out its run.
	defer func() {
		stopGen()
		<-genDone
	}()

	start := time.Now()
	warm := min(max(d/10, 100*time.Millisecond), 500*time.Millisecond)
	if gcfg != nil {
		// The window starts when frames arrive: loading the generator's
		// program takes a while, and that is not the path's time.
		for wait := start.Add(min(d/2, 2*time.Second)); time.Now().Before(wait); {
			cur, err := r.sample()
			if err != nil {
				return gen.Stats{}, fmt.Errorf("%s: %w", name, err)
			}
			if cur.received != base.received || isClosed(genDone) {
				break
			}
			if err := sleepCtx(ctx, 5*time.Millisecond); err != nil {
				return gen.Stats{}, err
			}
		}
		start = time.Now()
	}
	end := start.Add(d - warm)
	if gcfg == nil {
		end = start.Add(warm + d)
	}
	if err := sleepCtx(ctx, warm); err != nil {
		return gen.Stats{}, err
	}
	a, cpuA, ta, err := snapshot(r)
	if err != nil {
		return gen.Stats{}, fmt.Errorf("%s: %w", name, err)
	}
	if err := sleepCtx(ctx, time.Until(end)); err != nil {
		return gen.Stats{}, err
	}
	b, cpuB, tb, err := snapshot(r)
	if err != nil {
		return gen.Stats{}, fmt.Errorf("%s: %w", name, err)
	}
	<-genDone
	if genErr != nil {
		return gen.Stats{}, fmt.Errorf("%s: generator: %w", name, genErr)
	}
	if err := ctx.Err(); err != nil {
		return gen.Stats{}, err
	}
	final, settled, err := drain(ctx, r)
	if err != nil {
		return gen.Stats{}, fmt.Errorf("%s: %w", name, err)
	}
	if gcfg != nil && !settled {
		// With the generator stopped nothing should move: the figures
		// would not be final.
		return gen.Stats{}, fmt.Errorf("%s: counters still moving %v after the generator stopped", name, drainMax)
	}

	secs := tb.Sub(ta).Seconds()
	row.WindowS = round3(secs)
	row.WindowPackets = counter.Sub(b.received, a.received)
	row.Mpps = round3(float64(row.WindowPackets) / secs / 1e6)
	ns, use := receiverCPU(cpuA, cpuB, e.dutCPUs, e.statGenCPUs(), e.relayOnGen)
	if row.WindowPackets > 0 {
		row.NsPerPacket = round1(ns / float64(row.WindowPackets))
	}
	row.CPU = use
	for _, u := range use {
		row.CPUPercent[strconv.Itoa(u.CPU)] = u.Busy
	}

	if gcfg != nil {
		row.settle(base, final, &genStats)
	} else {
		row.settle(base, final, nil)
	}
	return genStats, nil
}

// settle fills in the row's accounting from the samples before the load
// and after the drain, and what the generator says it sent (nil without a
// test bed: then Dropped is the sum of the reasons).
func (row *Row) settle(base, final sample, g *gen.Stats) {
	row.Received, row.Reasons = account(base, final)
	if g == nil {
		for _, v := range row.Reasons {
			row.Dropped += v
		}
		return
	}
	row.Sent = g.Sent
	if s := g.Duration.Seconds(); s > 0 {
		row.OfferedMpps = round3(float64(g.Sent) / s / 1e6)
	}
	if g.Errors > 0 {
		row.Reasons["xmit_errors"] = g.Errors
	}
	if u := g.Unaccounted(); u > 0 {
		row.Reasons["lost_before_driver"] = u
	}
	if base.portKnown && final.portKnown {
		// What the generator's port took to send, less what the DUT's
		// port counted coming in: lost between the two devices. A DUT
		// port that counted more (other traffic) loses nothing here.
		out := counter.Sub(counter.Sub(g.Sent, g.Errors), g.Unaccounted())
		if in := counter.Sub(final.portIn, base.portIn); out > in {
			row.Reasons[LostOnWire] = out - in
		}
	}
	want := row.Sent * uint64(row.Copies)
	row.Dropped = counter.Sub(want, row.Received)
	var counted uint64
	for _, v := range row.Reasons {
		counted += v
	}
	row.Unexplained = counter.Diff(want, row.Received+counted)
}

func snapshot(r runner) (sample, cpuStat, time.Time, error) {
	s, err := r.sample()
	if err != nil || s.cpu != nil {
		return s, s.cpu, time.Now(), err
	}
	c, err := cpustat.Read()
	return s, c, time.Now(), err
}

// drainMax bounds drain.
const drainMax = 2 * time.Second

// drain waits until no counter of the path has moved for drainQuiet, at
// most drainMax, and returns the last sample; settled says whether the
// counters came to rest. With the generator stopped, that is when every
// frame it sent has been received or counted as dropped: the frames still
// in flight when it stopped (in veth's rings, the socket's rx ring, a
// receiver thread that was preempted) are done with, so the accounting of
// a row is exact, with no allowance for frames in flight. On a real
// interface the traffic goes on and the counters never rest. The times are
// the time taken, not a count of steps: a remote DUT's sample waits for
// its next report.
func drain(ctx context.Context, r runner) (s sample, settled bool, err error) {
	const step, drainQuiet = 20 * time.Millisecond, 100 * time.Millisecond
	prev, err := r.sample()
	if err != nil {
		return prev, false, err
	}
	start := time.Now()
	still := start // since when nothing has moved
	for time.Since(start) < drainMax {
		if err := sleepCtx(ctx, step); err != nil {
			return prev, false, err
		}
		cur, err := r.sample()
		if err != nil {
			return cur, false, err
		}
		now := time.Now()
		if cur.received != prev.received || !sameReasons(cur.reasons, prev.reasons) || cur.portIn != prev.portIn {
			still = now
		} else if now.Sub(still) >= drainQuiet {
			return cur, true, nil
		}
		prev = cur
	}
	return prev, false, nil
}

func sameReasons(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func round3(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }

func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return strings.TrimRight(string(u.Release[:]), "\x00")
}
