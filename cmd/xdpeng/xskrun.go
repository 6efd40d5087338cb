package main

// What the AF_XDP modes (rxdrop, l2fwd, count, ...) share: their flags, the
// run loop and the per-interval and final statistics, as text or JSON.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/xdpeng/xdpeng/cmd/internal/metrics"
	"github.com/xdpeng/xdpeng/cmd/internal/privilege"
	"github.com/xdpeng/xdpeng/cmd/internal/units"
	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/devplugin"
	"github.com/xdpeng/xdpeng/engine/handler"
	"github.com/xdpeng/xdpeng/internal/counter"
	"github.com/xdpeng/xdpeng/internal/cpuset"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// xskFlags are the flags of every AF_XDP mode, named as xdpsock names them.
type xskFlags struct {
	iface                              string
	queues, cpus                       string
	batch                              int
	frameSize                          uint32
	headroom                           uint32
	unaligned                          bool
	hugePages                          string
	frags                              bool
	frames                             uint32
	ringSize                           uint32
	fillSize, compSize, rxSize, txSize uint32
	native, generic                    bool
	copyMode, zeroCopy                 bool
	noNeedWakeup                       bool
	poll, busy, busyPoll               bool
	threadedBusyPoll                   bool
	busyPollUsecs, busyPollBudget      int
	sharedUmem                         bool
	policy                             string // -W
	schedPriority                      int    // -U
	force                              int    // --force given once, twice
	udpPort                            uint16
	match                              string
	// xskMap and program are --xsk-map and --program; steering says, for
	// the header, what they set up.
	xskMap, program, steering  string
	duration, interval         time.Duration
	json, extraStats, appStats bool
	quiet                      bool
	watch                      watchFlags // --metrics, -e, --irq, -w (watch.go)

	fs *pflag.FlagSet // to tell an empty -q "" from no -q
}

// register adds the flags to fs, their defaults those of
// engine.DefaultConfig.
func (f *xskFlags) register(fs *pflag.FlagSet) {
	f.fs = fs
	d := engine.DefaultConfig()
	fs.StringVarP(&f.iface, "interface", "i", "", "device to receive from (required)")
	fs.StringVarP(&f.queues, "queues", "q", "", "rx queues to bind, e.g. 0, 0-3, 0,2 (default: all of the device's)")
	fs.StringVar(&f.cpus, "cpus", "", "CPU of each queue's worker, in the order of -q: -q 0-1 --cpus 1,0 puts queue 0 on CPU 1 (default: from the last CPU down)")
	fs.IntVarP(&f.batch, "batch", "b", d.Batch, "descriptors taken from a ring at once")
	fs.Uint32VarP(&f.frameSize, "frame-size", "f", d.FrameSize, fmt.Sprintf("UMEM frame size: a power of two from 2048 to the page size (here: %s); a frame must fit in one after %d bytes of headroom and --headroom (%d: MTU up to %d), unless -F",
		frameSizes(), engine.KernelHeadroom, d.FrameSize, netdev.FrameMTU(int(d.FrameSize), 0, 1)))
	fs.Uint32Var(&f.headroom, "headroom", 0, fmt.Sprintf("UMEM headroom: bytes the kernel leaves free in front of every received frame, beyond its own %d, at most the frame size - %d",
		engine.KernelHeadroom, engine.FrameReserve))
	fs.BoolVarP(&f.unaligned, "unaligned", "u", false, "unaligned chunk mode (XDP_UMEM_UNALIGNED_CHUNK_FLAG), the UMEM in huge pages where the pool has them (see --huge-pages)")
	fs.StringVar(&f.hugePages, "huge-pages", "auto", "huge pages behind the UMEM: auto (with -u, when the pool has them free; else normal pages, and it says so), on (required, with or without -u) or off")
	fs.BoolVarP(&f.frags, "frags", "F", false, "multi-buffer (XDP frags): frames longer than a UMEM frame arrive, and go out, in several, up to 18")
	fs.Uint32Var(&f.frames, "frames", 0, "UMEM frames per socket (default: fill ring + tx ring sizes)")
	fs.Uint32Var(&f.ringSize, "ring-size", d.FillSize, "size of all four rings (power of two)")
	fs.Uint32Var(&f.fillSize, "fill-size", 0, "fill ring size (default: --ring-size)")
	fs.Uint32Var(&f.compSize, "comp-size", 0, "completion ring size (default: --ring-size)")
	fs.Uint32Var(&f.rxSize, "rx-size", 0, "rx ring size (default: --ring-size)")
	fs.Uint32Var(&f.txSize, "tx-size", 0, "tx ring size (default: --ring-size)")
	fs.BoolVarP(&f.native, "native", "N", false, "attach XDP in native (driver) mode; refused where the driver has none (default: native where the device has it, else generic)")
	fs.BoolVarP(&f.generic, "generic", "S", false, "attach XDP in generic (SKB) mode, which every device has")
	fs.BoolVarP(&f.copyMode, "copy", "c", false, "force copy mode")
	fs.BoolVarP(&f.zeroCopy, "zero-copy", "z", false, "require zero-copy (default: auto, zero-copy where the driver has it)")
	fs.BoolVarP(&f.noNeedWakeup, "no-need-wakeup", "m", false, "turn off need_wakeup: kick the kernel on every batch (xdpsock -m)")
	fs.BoolVarP(&f.poll, "poll", "p", false, "call poll() before every batch (xdpsock -p; the default instead spins while frames flow and naps once its CPU is wanted by another thread)")
	fs.BoolVar(&f.busy, "busy", false, "busy-loop without ever sleeping (only for a CPU that does nothing else)")
	fs.BoolVarP(&f.busyPoll, "busy-poll", "B", false, "busy-poll sockets: SO_PREFER_BUSY_POLL, the driver's NAPI runs in the worker (xdpsock -B); gives the queues' NAPIs defer-hard-irqs 2 and gro-flush-timeout 200us for the run (Linux 6.13), else the device's napi_defer_hard_irqs and gro_flush_timeout, shared with any other run on it; put back on exit, also after kill -9; nothing to poll on veth (the worker then waits as by default)")
	fs.BoolVar(&f.threadedBusyPoll, "threaded-busy-poll", false, "the kernel thread of each queue's NAPI polls it without stopping, its interrupt left off, and the worker only reads the rings (threaded busy polling, Linux 6.19; set for the run, put back on exit, also after kill -9). The thread takes a CPU whole: pin it away from the workers' (the header gives its pid). Needs a driver that links its queues to their NAPIs (xdpeng probe -i DEV shows them; not veth)")
	fs.IntVar(&f.busyPollUsecs, "busy-poll-usecs", d.BusyPollUsecs, "SO_BUSY_POLL time in microseconds (with --busy-poll)")
	fs.IntVar(&f.busyPollBudget, "busy-poll-budget", d.BusyPollBudget, "SO_BUSY_POLL_BUDGET in packets (with --busy-poll)")
	fs.BoolVarP(&f.sharedUmem, "shared-umem", "M", false, "one UMEM shared by all queues' sockets (XDP_SHARED_UMEM; xdpsock's -M puts its sockets on one queue instead)")
	fs.StringVarP(&f.policy, "policy", "W", "SCHED_OTHER", "scheduling policy of the workers, as xdpsock's -W and chrt: SCHED_OTHER, SCHED_FIFO or SCHED_RR (the last two need -U and CAP_SYS_NICE; a real-time worker that never sleeps, --busy, starves its CPU's softirq thread save 5% a second)")
	fs.IntVarP(&f.schedPriority, "schpri", "U", 0, "real-time priority of the workers, 1-99, with -W SCHED_FIFO or SCHED_RR (xdpsock's -U)")
	forceFlag(fs, &f.force)
	fs.Uint16Var(&f.udpPort, "udp-port", 0, "steer only UDP to this destination port to userspace; the rest goes to the stack (--match proto=udp,port=N)")
	fs.StringVar(&f.match, "match", "", matchUsage)
	fs.StringVar(&f.xskMap, "xsk-map", "", "put the sockets in this XSKMAP instead of attaching xdpeng's program: a pinned map (a bpffs path), or a Unix socket that hands it over (xdpeng steer --socket, or the AF_XDP device plugin's: /tmp/afxdp.sock in a pod); the XDP program on DEV that redirects to it by rx_queue_index, and passes what finds no socket, is someone else's and stays. Needs only CAP_NET_RAW (and CAP_IPC_LOCK or a memlock limit for the UMEM), not root")
	fs.StringVar(&f.program, "program", "", "attach this XDP program instead of xdpeng's: OBJ or OBJ:NAME, an ELF object and the program's name or section (default: its only XDP program), with the object's XSKMAP (or --xsk-map's); detached at exit")
	secondsVarP(fs, &f.duration, "duration", "d", 0, "run this long, then exit (seconds, or a duration like 500ms; default: until Ctrl-C)")
	intervalFlags(fs, &f.interval, "statistics interval")
	fs.BoolVar(&f.json, "json", false, "print one JSON object per line")
	fs.BoolVarP(&f.quiet, "quiet", "Q", false, "no per-interval lines: only the summary (and link changes), as xdpsock -Q")
	fs.BoolVarP(&f.extraStats, "extra-stats", "x", false, "show the six XDP_STATISTICS counters")
	fs.BoolVarP(&f.appStats, "app-stats", "a", false, "show wakeups, polls, naps and batches per second")
	f.watch.register(fs)
}

// config turns the flags into an engine configuration, refusing bad input.
func (f *xskFlags) config() (engine.Config, error) {
	cfg := engine.DefaultConfig()
	if f.iface == "" {
		return cfg, cliFlagError{errors.New("no interface given: use -i DEV")}
	}
	cfg.Interface = f.iface
	if f.queues != "" || (f.fs != nil && f.fs.Changed("queues")) {
		q, err := cpuset.ParseList(f.queues, "queue")
		if err != nil {
			return cfg, err
		}
		cfg.Queues = q
	}
	if f.cpus != "" || (f.fs != nil && f.fs.Changed("cpus")) {
		c, err := cpuset.ParseList(f.cpus, "CPU")
		if err != nil {
			return cfg, err
		}
		cfg.CPUs = c
	}
	cfg.Batch = f.batch
	cfg.FrameSize = f.frameSize
	cfg.FrameHeadroom = f.headroom
	cfg.Unaligned = f.unaligned
	cfg.MultiBuffer = f.frags
	hp, err := engine.ParseHugePageMode(f.hugePages)
	if err != nil {
		return cfg, fmt.Errorf("--huge-pages %q: use auto, on or off", f.hugePages)
	}
	cfg.HugePages = hp
	cfg.NumFrames = f.frames
	// Each ring flag given is checked as typed: --ring-size 1000 is about
	// --ring-size, not about the first ring it sizes.
	for _, r := range []struct {
		flag string
		size uint32
	}{{"ring-size", f.ringSize}, {"fill-size", f.fillSize}, {"comp-size", f.compSize}, {"rx-size", f.rxSize}, {"tx-size", f.txSize}} {
		if r.flag == "ring-size" || r.size != 0 {
			if err := engine.CheckRingSize(r.size); err != nil {
				return cfg, fmt.Errorf("--%s: %w", r.flag, err)
			}
		}
	}
	pick := func(v uint32) uint32 {
		if v == 0 {
			return f.ringSize
		}
		return v
	}
	cfg.FillSize, cfg.CompletionSize, cfg.RxSize, cfg.TxSize = pick(f.fillSize), pick(f.compSize), pick(f.rxSize), pick(f.txSize)
	switch {
	case f.native && f.generic:
		return cfg, fmt.Errorf("-N (native) and -S (generic) exclude each other")
	case f.generic:
		cfg.XDPMode = engine.XDPGeneric
	case f.native:
		cfg.XDPMode = engine.XDPNative
	}
	switch {
	case f.copyMode && f.zeroCopy:
		return cfg, fmt.Errorf("-c (copy) and -z (zero-copy) exclude each other")
	case f.copyMode:
		cfg.BindMode = engine.BindCopy
	case f.zeroCopy:
		cfg.BindMode = engine.BindZeroCopy
	}
	cfg.NeedWakeup = !f.noNeedWakeup
	n := 0
	for _, b := range []bool{f.poll, f.busy, f.busyPoll, f.threadedBusyPoll} {
		if b {
			n++
		}
	}
	if n > 1 {
		return cfg, fmt.Errorf("-p, --busy, --busy-poll and --threaded-busy-poll exclude each other")
	}
	switch {
	case f.poll:
		cfg.Wait = engine.WaitPoll
	case f.busy:
		cfg.Wait = engine.WaitBusy
	case f.busyPoll:
		cfg.Wait = engine.WaitBusyPoll
	case f.threadedBusyPoll:
		cfg.Wait = engine.WaitThreadedBusyPoll
	}
	if f.busyPoll && (f.busyPollUsecs <= 0 || f.busyPollBudget <= 0) {
		return cfg, fmt.Errorf("--busy-poll-usecs %d, --busy-poll-budget %d: busy polling needs both positive", f.busyPollUsecs, f.busyPollBudget)
	}
	if !f.busyPoll && f.fs != nil && (f.fs.Changed("busy-poll-usecs") || f.fs.Changed("busy-poll-budget")) {
		return cfg, fmt.Errorf("--busy-poll-usecs and --busy-poll-budget set busy polling: add --busy-poll (-B), or leave them out")
	}
	cfg.BusyPollUsecs, cfg.BusyPollBudget = f.busyPollUsecs, f.busyPollBudget
	cfg.SharedUmem = f.sharedUmem
	pol, err := engine.ParseSchedPolicy(f.policy)
	if err != nil {
		return cfg, fmt.Errorf("-W/--policy: %w", err)
	}
	cfg.Sched, cfg.SchedPriority = pol, f.schedPriority
	switch {
	case pol == engine.SchedOther && f.schedPriority != 0:
		return cfg, fmt.Errorf("-U/--schpri %d: give -W SCHED_FIFO or SCHED_RR too (SCHED_OTHER has no real-time priority)", f.schedPriority)
	case pol != engine.SchedOther && (f.schedPriority < 1 || f.schedPriority > 99):
		return cfg, fmt.Errorf("-W %v needs a real-time priority: -U 1-99 (not %d)", pol, f.schedPriority)
	}
	cfg.Force, cfg.ForceInUse = f.force > 0, f.force > 1
	cfg.UDPPort = f.udpPort
	if f.match != "" {
		if f.udpPort != 0 {
			return cfg, cliFlagError{errors.New("--udp-port N is --match proto=udp,port=N: give one")}
		}
		m, err := engine.ParseMatch(f.match)
		if err != nil {
			return cfg, cliFlagError{fmt.Errorf("--match %w", err)}
		}
		cfg.Match = m
		f.steering = fmt.Sprintf("xdpeng's program sends %s to the sockets, the rest to the stack", m)
	}
	if err := f.steer(&cfg); err != nil {
		return cfg, err
	}
	if f.interval <= 0 {
		return cfg, fmt.Errorf("-n/--interval %v: must be positive", f.interval)
	}
	if f.duration < 0 {
		return cfg, fmt.Errorf("-d/--duration %v: must not be negative", f.duration)
	}
	if err := f.watch.check(); err != nil {
		return cfg, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, geometryError(err, f.frameSize, f.headroom)
	}
	return cfg, nil
}

// geometryError names the flag behind a frame size or headroom the engine
// refused.
func geometryError(err error, frameSize, headroom uint32) error {
	if errors.Is(err, engine.ErrFrameSize) {
		return fmt.Errorf("--frame-size: %w", err)
	}
	if max := engine.MaxFrameHeadroom(frameSize); headroom > max {
		return fmt.Errorf("--headroom %d: at most %d with %d-byte frames (-f): the kernel keeps %d bytes of each frame for itself", headroom, max, frameSize, engine.FrameReserve)
	}
	return err
}

// frameSizes lists the UMEM frame sizes this machine takes
// (engine.FrameSizes).
func frameSizes() string {
	var s []string
	for _, fs := range engine.FrameSizes() {
		s = append(s, fmt.Sprint(fs))
	}
	return strings.Join(s, ", ")
}

// umemLine describes the UMEM where it is not the default (2048-byte
// aligned frames, no headroom, one buffer per frame), and why it is not in
// huge pages where it would be; "" otherwise.
func umemLine(u engine.UmemInfo) string {
	var parts []string
	if u.Headroom != 0 {
		parts = append(parts, fmt.Sprintf("headroom %d", u.Headroom))
	}
	if u.Unaligned {
		parts = append(parts, "unaligned chunks")
	}
	if u.MultiBuffer {
		parts = append(parts, "multi-buffer (a frame in up to 18 UMEM frames)")
	}
	switch {
	case u.HugePages:
		parts = append(parts, fmt.Sprintf("in huge pages of %d kB", u.HugePageSize>>10))
	case u.Note != "":
		parts = append(parts, u.Note)
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("  UMEM: %d-byte frames, %s\n", u.FrameSize, strings.Join(parts, ", "))
}

// runXsk runs an engine in mode until the duration ends or Ctrl-C/SIGTERM,
// printing statistics every interval and the totals at the end.
func runXsk(cmd *cobra.Command, mode string, f *xskFlags, cfg engine.Config) error {
	return runXskWith(cmd, mode, f, cfg, xskHooks{})
}

// xskHooks let a mode add its own output to what every AF_XDP mode prints,
// which stays as it is. Each hook is optional; with --json only the JSON
// ones are called, otherwise only the text ones.
type xskHooks struct {
	// intervalText writes lines after each interval's table; dt is the
	// interval's length in seconds.
	intervalText func(w io.Writer, dt float64)
	// intervalJSON adds fields to each interval's JSON object.
	intervalJSON func(obj map[string]any, dt float64)
	// summaryText writes lines after the text summary.
	summaryText func(w io.Writer)
	// summaryJSON returns what to print as the JSON summary in place of
	// sum; it should embed sum so that the common fields stay. summary is
	// a value of its type, whose field order the interval lines follow.
	summaryJSON func(sum xskSummary) any
	summary     any
	// collectors export the mode's own counters with --metrics.
	collectors []prometheus.Collector
}

// openEngine makes the engine of an AF_XDP mode with what every mode adds
// to it: link notifications (links) and the observability flags' watcher
// (w, its capture tap included). done closes the engine, then the watcher.
func openEngine(f *xskFlags, cfg engine.Config) (eng *engine.Engine, links <-chan engine.LinkChange, w *watcher, done func(), err error) {
	links, onLink := linkChanges()
	cfg.OnLinkChange = onLink
	if w, err = f.watch.startWatch(cfg.Interface); err != nil {
		return nil, nil, nil, nil, inputOrOutput(err, cfg.Interface)
	}
	if err := w.tap(&cfg); err != nil {
		w.close()
		return nil, nil, nil, nil, err
	}
	guard := newNAPIGuard(cfg.Interface)
	cfg.NAPIGuard = guard
	if eng, err = engine.New(cfg); err != nil {
		guard.close()
		w.close()
		if cfg.Wait == engine.WaitThreadedBusyPoll && (errors.Is(err, engine.ErrNoThreadedBusyPoll) || errors.Is(err, errors.ErrUnsupported)) {
			return nil, nil, nil, nil, fmt.Errorf("%w: use --busy-poll (-B) instead, where the worker drives the NAPI", err)
		}
		return nil, nil, nil, nil, advise(inputOrOutput(err, cfg.Interface))
	}
	return eng, links, w, func() {
		eng.Close()
		if err := guard.close(); err != nil {
			fmt.Fprintf(os.Stderr, "xdpeng: %v\n", err)
		}
		w.close()
	}, nil
}

// runXskWith is runXsk with a mode's own output added by hooks.
func runXskWith(cmd *cobra.Command, mode string, f *xskFlags, cfg engine.Config, hooks xskHooks) error {
	need, command := privilege.AFXDP, typed(cmd)
	if f.xskMap != "" && f.program == "" {
		// Its sockets go into a map it is handed: no BPF privilege.
		need, command = privilege.Sockets, command+" --xsk-map"
	}
	if err := needRoot(command, need); err != nil {
		return err
	}
	forceNote(cmd.ErrOrStderr(), cfg.Interface, f.force)
	eng, links, w, done, err := openEngine(f, cfg)
	if err != nil {
		return err
	}
	defer done()
	if err := w.serve(append(hooks.collectors, &metrics.Engine{Mode: mode, Interface: cfg.Interface, Stats: eng.Stats})...); err != nil {
		return err
	}
	defer w.stopServing()

	p := &xskPrinter{w: cmd.OutOrStdout(), mode: mode, f: f, eng: eng, run: eng, hooks: hooks, links: links, watch: w}
	p.header()
	last, err := runEngine(eng, f, p)
	if eng.Started().IsZero() {
		return err // Run never started: there are no totals to print
	}
	err = errors.Join(err, w.finish(last.Total().RxPackets))
	p.summary(last)
	return err
}

// runEngine runs eng until it ends by itself (a count sent), the duration
// ends, Ctrl-C/SIGTERM, or a device goes away, printing intervals and link
// changes through p; it returns the last statistics.
func runEngine(eng runner, f *xskFlags, p *xskPrinter) (engine.Snapshot, error) {
	lp := newLinkPrinter(p.w, f.json, p.mode, eng.Started)
	ctx, cancel := signalContext()
	defer cancel()
	if f.duration > 0 {
		var c2 context.CancelFunc
		ctx, c2 = context.WithTimeout(ctx, f.duration)
		defer c2()
	}
	if err := p.watch.running(); err != nil {
		last, _ := eng.Stats()
		return last, err
	}
	done := make(chan error, 1)
	go func() { done <- eng.Run(ctx) }()
	tick := time.NewTicker(f.interval)
	defer tick.Stop()
	prev, _ := eng.Stats()
	for {
		select {
		case err := <-done:
			for drained := false; !drained; {
				select {
				case c := <-p.links:
					lp.change(c)
				default:
					drained = true
				}
			}
			last, serr := eng.Stats()
			return last, errors.Join(lp.gone(err), serr)
		case c := <-p.links:
			lp.change(c)
		case <-tick.C:
			cur, err := eng.Stats()
			if err != nil {
				return cur, err
			}
			p.interval(prev, cur)
			prev = cur
		}
	}
}

// runner is an engine or a generator, as runEngine and the interval
// printer use them.
type runner interface {
	Run(ctx context.Context) error
	Stats() (engine.Snapshot, error)
	Started() time.Time
}

type xskPrinter struct {
	w     io.Writer
	mode  string
	f     *xskFlags
	eng   *engine.Engine // the receiving modes' engine, nil for txonly
	run   runner         // what the intervals are read from
	hooks xskHooks
	links <-chan engine.LinkChange // the engine's OnLinkChange; nil if none
	watch *watcher                 // what the observability flags add, nil without them
	// summaryOf is a value of the mode's JSON summary type where it is not
	// xskSummary (fwd, txonly); its interval lines follow its field order.
	summaryOf any
}

// summaryType is a value of the mode's JSON summary type.
func (p *xskPrinter) summaryType() any {
	switch {
	case p.summaryOf != nil:
		return p.summaryOf
	case p.hooks.summary != nil:
		return p.hooks.summary
	}
	return xskSummary{}
}

// txOnly says the mode only sends: its lines have no receive columns.
func (p *xskPrinter) txOnly() bool { return p.mode == "txonly" }

func (p *xskPrinter) header() {
	cfg := p.eng.Config()
	if p.f.json {
		// The JSON lines stay JSON; the advice goes to stderr.
		if cfg.Wait == engine.WaitBusyPoll || cfg.Wait == engine.WaitThreadedBusyPoll {
			fmt.Fprint(os.Stderr, busyPollReport(p.eng, p.eng.Config().Interface, p.eng.Config().Wait))
		}
		return
	}
	zc := "copy"
	if p.eng.ZeroCopy() {
		zc = "zero-copy"
	}
	sched := ""
	if cfg.Sched != engine.SchedOther {
		sched = fmt.Sprintf(", %v priority %d", cfg.Sched, cfg.SchedPriority)
	}
	fmt.Fprintf(p.w, "%s on %s (%s): %s, XDP %s, %s, batch %d, frames %d B, rings fill/comp/rx/tx %d/%d/%d/%d, need_wakeup %v, wait %s%s\n",
		p.mode, cfg.Interface, driverLabel(p.eng.Device().Driver), queuesOnCPUs(cfg.Queues, cfg.CPUs), cfg.XDPMode, zc, cfg.Batch,
		cfg.FrameSize, cfg.FillSize, cfg.CompletionSize, cfg.RxSize, cfg.TxSize, cfg.NeedWakeup, cfg.Wait, sched)
	p.watch.header(p.w)
	fmt.Fprint(p.w, umemLine(p.eng.Umem()))
	if p.f.steering != "" {
		fmt.Fprintf(p.w, "  steering: %s\n", p.f.steering)
		if cfg.Program == nil {
			if st, err := netdev.XDPAttached(p.eng.Device().Index); err == nil && st.ProgID == 0 {
				fmt.Fprintf(p.w, "  note: %s has no XDP program yet: frames reach the sockets once yours, redirecting to the map, is attached\n", cfg.Interface)
			}
		}
	}
	if cfg.Wait == engine.WaitBusyPoll || cfg.Wait == engine.WaitThreadedBusyPoll {
		fmt.Fprint(p.w, busyPollReport(p.eng, p.eng.Config().Interface, p.eng.Config().Wait))
	}
}

// napiSetter is an engine or a generator, as busyPollReport reads it.
type napiSetter interface {
	BusyPollNAPI() ([]engine.NAPIChange, string)
	Device() engine.Device
}

// busyPollReport says what an engine or a generator on iface did to its
// queues' NAPIs for busy polling in wait mode wait (Config.BusyPollNAPI,
// WaitThreadedBusyPoll), and, where it changed none, why and what the
// device's own settings are (busyPollNote).
func busyPollReport(eng napiSetter, iface string, wait engine.WaitMode) string {
	changes, note := eng.BusyPollNAPI()
	var b strings.Builder
	for _, c := range changes {
		if c.Threaded {
			fmt.Fprintf(&b, "  threaded-busy-poll: queue %d's NAPI %d: its thread (pid %d) polls it without stopping (threaded was %v; put back on exit); pin it away from the workers: taskset -pc CPU %d\n",
				c.Queue, c.NAPIID, c.ThreadPID, c.ThreadedBefore, c.ThreadPID)
			continue
		}
		if c.Device {
			fmt.Fprintf(&b, "  busy-poll: %s's napi_defer_hard_irqs %d, gro_flush_timeout %d ns (was %d, %d; held with any other run on %s, put back by the last to end)\n",
				iface, c.After.DeferHardIRQs, c.After.GROFlushTimeout.Nanoseconds(), c.Before.DeferHardIRQs, c.Before.GROFlushTimeout.Nanoseconds(), iface)
			continue
		}
		fmt.Fprintf(&b, "  busy-poll: queue %d's NAPI %d: %s (was %s; put back on exit)\n", c.Queue, c.NAPIID, c.After, c.Before)
	}
	if note != "" {
		fmt.Fprintf(&b, "  busy-poll: %s\n", note)
	}
	if len(changes) == 0 && wait == engine.WaitBusyPoll {
		b.WriteString(busyPollNote(iface, eng.Device().Driver))
	}
	return b.String()
}

// busyPollNote says, for a device whose NAPI is run by an interrupt (not
// veth's, which its sender schedules) and which does not defer it, that
// preferring busy polling keeps little of its work in the worker, and how
// the kernel's documentation sets it up; "" otherwise, or where sysfs
// cannot say.
func busyPollNote(ifname, driver string) string {
	if driver == "veth" {
		return ""
	}
	d, err := netdev.IRQDeferralOf(ifname)
	if err != nil {
		return ""
	}
	irq := true // where the kernel cannot list NAPIs (before 6.9), assume a NIC's
	if ifi, err := net.InterfaceByName(ifname); err == nil {
		if napis, err := netdev.NAPIs(ifi.Index); err == nil {
			irq = slices.ContainsFunc(napis, func(n netdev.NAPI) bool { return n.IRQ > 0 })
		}
	}
	return busyPollAdvice(ifname, d, irq)
}

// busyPollAdvice is busyPollNote's text for device ifname with deferral d,
// whose NAPI an interrupt runs if irq.
func busyPollAdvice(ifname string, d netdev.IRQDeferral, irq bool) string {
	if !irq || d.Deferring() {
		return ""
	}
	return fmt.Sprintf("busy-poll: %s does not defer its interrupts (napi_defer_hard_irqs %d, gro_flush_timeout %d ns), so its interrupt keeps running the NAPI the worker busy-polls;\n"+
		"  for the busy poll to do that work (Documentation/networking/napi.rst), e.g.: echo 2 > /sys/class/net/%s/napi_defer_hard_irqs; echo 200000 > /sys/class/net/%s/gro_flush_timeout\n",
		ifname, d.DeferHardIRQs, d.GROFlushTimeout.Nanoseconds(), ifname, ifname)
}

// queuesOnCPUs says which queue runs on which CPU: "queue 0 on CPU 1" or
// "queues 0-1 on CPUs 1,0" (the CPUs in queue order).
func queuesOnCPUs(queues, cpus []int) string {
	if len(queues) == 1 && len(cpus) == 1 {
		return fmt.Sprintf("queue %d on CPU %d", queues[0], cpus[0])
	}
	return fmt.Sprintf("queues %s on CPUs %s", cpuset.Format(queues), cpuListInOrder(cpus))
}

func cpuListInOrder(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = fmt.Sprint(c)
	}
	return strings.Join(s, ",")
}

// queueRates is one row of interval output.
type queueRates struct {
	Queue     int                `json:"queue"`
	CPU       int                `json:"cpu"`
	RxPPS     float64            `json:"rx_pps"`
	TxPPS     float64            `json:"tx_pps"`
	RxBPS     float64            `json:"rx_bps"`
	TxBPS     float64            `json:"tx_bps"`
	RxPackets uint64             `json:"rx_packets"`
	TxPackets uint64             `json:"tx_packets"`
	XDP       map[string]float64 `json:"xdp_stats_per_s,omitempty"`
	// The app stats are there with -a only, zero or not.
	RxWakeupsS *float64 `json:"rx_wakeups_per_s,omitempty"`
	TxWakeupsS *float64 `json:"tx_wakeups_per_s,omitempty"`
	PollsS     *float64 `json:"polls_per_s,omitempty"`
	BatchesS   *float64 `json:"batches_per_s,omitempty"`
	NapsS      *float64 `json:"naps_per_s,omitempty"`
}

// txQueueRates is a queue's part of txonly's interval line: queueRates
// without what a transmit-only socket never counts.
type txQueueRates struct {
	Queue      int                `json:"queue"`
	CPU        int                `json:"cpu"`
	TxPPS      float64            `json:"tx_pps"`
	TxBPS      float64            `json:"tx_bps"`
	TxPackets  uint64             `json:"tx_packets"`
	XDP        map[string]float64 `json:"xdp_stats_per_s,omitempty"`
	TxWakeupsS *float64           `json:"tx_wakeups_per_s,omitempty"`
	PollsS     *float64           `json:"polls_per_s,omitempty"`
	BatchesS   *float64           `json:"batches_per_s,omitempty"`
}

func txRates(rows []queueRates) []txQueueRates {
	out := make([]txQueueRates, len(rows))
	for i, r := range rows {
		out[i] = txQueueRates{Queue: r.Queue, CPU: r.CPU, TxPPS: r.TxPPS, TxBPS: r.TxBPS, TxPackets: r.TxPackets, XDP: r.XDP,
			TxWakeupsS: r.TxWakeupsS, PollsS: r.PollsS, BatchesS: r.BatchesS}
	}
	return out
}

func rates(prev, cur engine.QueueStats, dt float64, f *xskFlags) queueRates {
	r := queueRates{
		Queue: cur.Queue, CPU: cur.CPU,
		RxPPS:     float64(counter.Sub(cur.RxPackets, prev.RxPackets)) / dt,
		TxPPS:     float64(counter.Sub(cur.TxPackets, prev.TxPackets)) / dt,
		RxBPS:     float64(counter.Sub(cur.RxBytes, prev.RxBytes)) * 8 / dt,
		TxBPS:     float64(counter.Sub(cur.TxBytes, prev.TxBytes)) * 8 / dt,
		RxPackets: cur.RxPackets, TxPackets: cur.TxPackets,
	}
	if f.extraStats {
		a, b := prev.XDP, cur.XDP
		per := func(a, b uint64) float64 { return float64(counter.Sub(b, a)) / dt }
		r.XDP = map[string]float64{
			"rx_dropped":               per(a.RxDropped, b.RxDropped),
			"rx_invalid_descs":         per(a.RxInvalidDescs, b.RxInvalidDescs),
			"tx_invalid_descs":         per(a.TxInvalidDescs, b.TxInvalidDescs),
			"rx_ring_full":             per(a.RxRingFull, b.RxRingFull),
			"rx_fill_ring_empty_descs": per(a.RxFillRingEmptyDescs, b.RxFillRingEmptyDescs),
			"tx_ring_empty_descs":      per(a.TxRingEmptyDescs, b.TxRingEmptyDescs),
		}
	}
	if f.appStats {
		per := func(a, b uint64) *float64 { v := float64(counter.Sub(b, a)) / dt; return &v }
		r.RxWakeupsS = per(prev.RxWakeups, cur.RxWakeups)
		r.TxWakeupsS = per(prev.TxWakeups, cur.TxWakeups)
		r.PollsS = per(prev.Polls, cur.Polls)
		r.BatchesS = per(prev.Batches, cur.Batches)
		r.NapsS = per(prev.Naps, cur.Naps)
	}
	return r
}

func (p *xskPrinter) interval(prev, cur engine.Snapshot) {
	dt := cur.Time.Sub(prev.Time).Seconds()
	if cur.Total().BusyPollInert && !prev.Total().BusyPollInert {
		// Said once, when the worker finds out, not only at the end.
		fmt.Fprintf(os.Stderr, "busy-poll: the sockets on %s have NAPI ID 0, nothing to busy-poll: waiting as adaptive does\n", p.f.iface)
	}
	if dt <= 0 || p.f.quiet {
		return
	}
	rows := make([]queueRates, 0, len(cur.Queues)+1)
	for i := range cur.Queues {
		rows = append(rows, rates(prev.Queues[i], cur.Queues[i], dt, p.f))
	}
	total := rates(prev.Total(), cur.Total(), dt, p.f)
	elapsed := cur.Time.Sub(p.run.Started()).Seconds()
	if p.f.json {
		obj := map[string]any{
			"type": "interval", "mode": p.mode, "interface": p.f.iface, "t": round3(elapsed),
			"rx_pps": total.RxPPS, "tx_pps": total.TxPPS, "rx_packets": total.RxPackets, "tx_packets": total.TxPackets,
			"per_queue": rows,
		}
		if p.txOnly() {
			delete(obj, "rx_pps")
			delete(obj, "rx_packets")
			obj["per_queue"] = txRates(rows)
		}
		if p.eng != nil {
			// The receiving modes' totals since the start, as the
			// summary has them, so that a reader of the lines (compare
			// --dut) can account for every frame at any moment.
			t := cur.Total()
			obj["xdp_mode"], obj["zero_copy"] = p.eng.Config().XDPMode.String(), p.eng.ZeroCopy()
			obj["xdp_stats"], obj["handler_dropped"], obj["tx_ring_full"] = xdpStatsOf(t.XDP, p.eng.Config()), t.Dropped, t.TxRingFull
		}
		if p.hooks.intervalJSON != nil {
			p.hooks.intervalJSON(obj, dt)
		}
		p.watch.interval(p.w, obj, dt)
		writeJSON(p.w, orderedLine{obj, jsonFields(p.summaryType())})
		return
	}
	if p.txOnly() {
		fmt.Fprintf(p.w, "[%7.2fs] %-5s %3s %12s %14s\n", elapsed, "queue", "cpu", "tx pps", "tx total")
	} else {
		fmt.Fprintf(p.w, "[%7.2fs] %-5s %3s %12s %14s %12s %14s\n", elapsed, "queue", "cpu", "rx pps", "rx total", "tx pps", "tx total")
	}
	if len(rows) > 1 {
		rows = append(rows, total)
	}
	for _, r := range rows {
		q := fmt.Sprint(r.Queue)
		cpu := fmt.Sprint(r.CPU)
		if r.Queue < 0 {
			q, cpu = "all", ""
		}
		if p.txOnly() {
			fmt.Fprintf(p.w, "%10s %-5s %3s %12s %14d\n", "", q, cpu, units.PPS(r.TxPPS), r.TxPackets)
		} else {
			fmt.Fprintf(p.w, "%10s %-5s %3s %12s %14d %12s %14d\n", "", q, cpu, units.PPS(r.RxPPS), r.RxPackets, units.PPS(r.TxPPS), r.TxPackets)
		}
		// The names of the summary's xdp_stats and app_stats.
		if r.XDP != nil {
			fmt.Fprintf(p.w, "%16s xdp/s: rx_dropped %.0f rx_invalid_descs %.0f tx_invalid_descs %.0f rx_ring_full %.0f rx_fill_ring_empty_descs %.0f tx_ring_empty_descs %.0f\n", "",
				r.XDP["rx_dropped"], r.XDP["rx_invalid_descs"], r.XDP["tx_invalid_descs"], r.XDP["rx_ring_full"],
				r.XDP["rx_fill_ring_empty_descs"], r.XDP["tx_ring_empty_descs"])
		}
		switch {
		case p.f.appStats && p.txOnly():
			fmt.Fprintf(p.w, "%16s app/s: tx_wakeups %.0f polls %.0f batches %.0f\n", "", *r.TxWakeupsS, *r.PollsS, *r.BatchesS)
		case p.f.appStats:
			fmt.Fprintf(p.w, "%16s app/s: rx_wakeups %.0f tx_wakeups %.0f polls %.0f naps %.0f batches %.0f\n", "",
				*r.RxWakeupsS, *r.TxWakeupsS, *r.PollsS, *r.NapsS, *r.BatchesS)
		}
	}
	if p.hooks.intervalText != nil {
		p.hooks.intervalText(p.w, dt)
	}
	p.watch.interval(p.w, nil, dt)
}

// xskSummary is the last JSON line of an AF_XDP mode.
type xskSummary struct {
	Type      string   `json:"type"`
	Mode      string   `json:"mode"`
	Interface string   `json:"interface"`
	Driver    string   `json:"driver"`
	Queues    []int    `json:"queues"`
	XDPMode   string   `json:"xdp_mode"`
	ZeroCopy  bool     `json:"zero_copy"`
	Batch     int      `json:"batch"`
	FrameSize uint32   `json:"umem_frame_size"`
	Umem      umemJSON `json:"umem"`
	DurationS float64  `json:"duration_s"`
	RxPackets uint64   `json:"rx_packets"`
	RxBytes   uint64   `json:"rx_bytes"`
	TxPackets uint64   `json:"tx_packets"`
	TxBytes   uint64   `json:"tx_bytes"`
	RxPPS     float64  `json:"rx_pps"`
	TxPPS     float64  `json:"tx_pps"`
	// HandlerDropped are the frames the handler gave the Drop verdict
	// (every frame in rxdrop), not drops of the kernel's (xdp_stats).
	HandlerDropped uint64 `json:"handler_dropped"`
	// HandlerDroppedFor names the reasons the handler gave some of them
	// (shorter than an Ethernet header: too_short).
	HandlerDroppedFor map[string]uint64 `json:"handler_dropped_for,omitempty"`
	// Dropped is HandlerDropped under its old name, kept for one release.
	Dropped    uint64            `json:"dropped"`
	TxRingFull uint64            `json:"tx_ring_full"`
	PerQueue   []queueJSON       `json:"per_queue"`
	XDPStats   xdpStatsJSON      `json:"xdp_stats"`
	App        map[string]uint64 `json:"app_stats"`
	watchJSON
}

func (p *xskPrinter) summary(s engine.Snapshot) {
	cfg := p.eng.Config()
	t := s.Total()
	dur := s.Time.Sub(p.eng.Started()).Seconds()
	zc := p.eng.ZeroCopy()
	sum := xskSummary{
		Type: "summary", Mode: p.mode, Interface: cfg.Interface, Driver: p.eng.Device().Driver,
		Queues: cfg.Queues, XDPMode: cfg.XDPMode.String(), ZeroCopy: zc, Batch: cfg.Batch, FrameSize: cfg.FrameSize,
		Umem:      umemSummary(p.eng.Umem()),
		DurationS: round3(dur), RxPackets: t.RxPackets, RxBytes: t.RxBytes, TxPackets: t.TxPackets, TxBytes: t.TxBytes,
		HandlerDropped: t.Dropped, HandlerDroppedFor: dropReasons(t.DroppedFor), Dropped: t.Dropped, TxRingFull: t.TxRingFull, PerQueue: queuesJSON(s.Queues), XDPStats: xdpStatsOf(t.XDP, cfg),
		App:       map[string]uint64{"rx_wakeups": t.RxWakeups, "tx_wakeups": t.TxWakeups, "polls": t.Polls, "batches": t.Batches, "naps": t.Naps},
		watchJSON: p.watch.summaryJSON(),
	}
	if dur > 0 {
		sum.RxPPS = float64(t.RxPackets) / dur
		sum.TxPPS = float64(t.TxPackets) / dur
	}
	if p.f.json {
		if p.hooks.summaryJSON != nil {
			writeJSON(p.w, p.hooks.summaryJSON(sum))
			return
		}
		writeJSON(p.w, sum)
		return
	}
	fmt.Fprintf(p.w, "\n%s on %s: %.2f s, rx %d packets (%s), tx %d packets (%s)\n", p.mode, cfg.Interface, dur,
		t.RxPackets, units.PPS(sum.RxPPS), t.TxPackets, units.PPS(sum.TxPPS))
	for _, q := range s.Queues {
		fmt.Fprintf(p.w, "  queue %d (CPU %d): rx %d, tx %d, dropped by the handler %d%s, tx ring full %d\n", q.Queue, q.CPU, q.RxPackets, q.TxPackets, q.Dropped, dropReasonsText(q.DroppedFor), q.TxRingFull)
	}
	x := t.XDP
	fmt.Fprintf(p.w, "  xdp stats: rx_dropped %s, rx_invalid_descs %d, tx_invalid_descs %d, rx_ring_full %d, rx_fill_ring_empty_descs %d, tx_ring_empty_descs %d\n",
		rxDroppedText(sum.XDPStats), x.RxInvalidDescs, x.TxInvalidDescs, x.RxRingFull, x.RxFillRingEmptyDescs, x.TxRingEmptyDescs)
	fmt.Fprintf(p.w, "  app stats: rx_wakeups %d, tx_wakeups %d, polls %d, naps %d, batches %d\n", t.RxWakeups, t.TxWakeups, t.Polls, t.Naps, t.Batches)
	if t.BusyPollInert {
		fmt.Fprintf(p.w, "  busy-poll: the sockets on %s had NAPI ID 0, nothing to busy-poll (veth gives none in Linux 6.18), so the worker waited as adaptive does\n", cfg.Interface)
	}
	if p.hooks.summaryText != nil {
		p.hooks.summaryText(p.w)
	}
	p.watch.summaryText(p.w)
}

// xdpStatsJSON is a receiving mode's socket counters in JSON, with what
// rx_dropped counts in the engine's configuration beside it, since no other
// counter names it (with multi-buffer, frames whose segments the fill ring
// did not hold all of).
type xdpStatsJSON struct {
	engine.SocketStats
	RxDroppedReason string `json:"rx_dropped_reason"`
}

func xdpStatsOf(s engine.SocketStats, cfg engine.Config) xdpStatsJSON {
	return xdpStatsJSON{SocketStats: s, RxDroppedReason: rxDropReason(cfg)}
}

// rxDroppedText is rx_dropped in a text summary: the count, and where it
// is not zero, what it counted.
// rxDropReason says what SocketStats.RxDropped counts on the sockets of an
// engine configured as cfg: without multi-buffer, frames that found the fill
// ring empty (rx_fill_ring_empty_descs counts those too); with it, also
// frames whose segments the fill ring did not hold all of, which no other
// counter shows.
func rxDropReason(cfg engine.Config) string {
	if cfg.MultiBuffer {
		return "no buffers in the fill ring for all of a frame's segments (each segment takes one; a deeper fill ring, or larger UMEM frames, rides out longer bursts)"
	}
	return "no buffer in the fill ring"
}

func rxDroppedText(x xdpStatsJSON) string {
	if x.RxDropped == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", x.RxDropped, x.RxDroppedReason)
}

// queueJSON is a queue's counters in a JSON summary: handler_dropped
// beside dropped, its old name, which stays until the next release, as in
// the summary's totals.
type queueJSON struct {
	engine.QueueStats
	HandlerDropped    uint64            `json:"handler_dropped"`
	HandlerDroppedFor map[string]uint64 `json:"handler_dropped_for,omitempty"`
	// NoDroppedFor, always nil, hides the engine's dropped_for, an array
	// by number: handler_dropped_for names the reasons.
	NoDroppedFor *struct{} `json:"dropped_for,omitempty"`
}

// dropReasonNames names the reasons the handlers of package handler give
// the frames they drop: the JSON key, and the words of the text.
var dropReasonNames = map[engine.DropReason][2]string{
	handler.ReasonTooShort: {"too_short", "shorter than an Ethernet header"},
}

// dropReasons names the counts of c that are not zero: "too_short", or
// "reason_N" for a reason without a name here; nil when none is.
func dropReasons(c [engine.MaxDropReasons + 1]uint64) map[string]uint64 {
	var m map[string]uint64
	for r, n := range c {
		if n == 0 || r == 0 {
			continue
		}
		if m == nil {
			m = map[string]uint64{}
		}
		name, ok := dropReasonNames[engine.DropReason(r)]
		if !ok {
			name[0] = fmt.Sprintf("reason_%d", r)
		}
		m[name[0]] = n
	}
	return m
}

// dropReasonsText is dropReasons for the text summary: " (5 shorter than
// an Ethernet header)", or "" when the handler gave no reason.
func dropReasonsText(c [engine.MaxDropReasons + 1]uint64) string {
	var parts []string
	for r, n := range c {
		if n == 0 || r == 0 {
			continue
		}
		name, ok := dropReasonNames[engine.DropReason(r)]
		if !ok {
			name[1] = fmt.Sprintf("for reason %d", r)
		}
		parts = append(parts, fmt.Sprintf("%d %s", n, name[1]))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func queuesJSON(qs []engine.QueueStats) []queueJSON {
	out := make([]queueJSON, len(qs))
	for i, q := range qs {
		out[i] = queueJSON{QueueStats: q, HandlerDropped: q.Dropped, HandlerDroppedFor: dropReasons(q.DroppedFor)}
	}
	return out
}

// umemJSON is the UMEM in a JSON summary.
type umemJSON struct {
	FrameSize   uint32 `json:"frame_size"`
	Headroom    uint32 `json:"headroom"`
	Unaligned   bool   `json:"unaligned"`
	MultiBuffer bool   `json:"multi_buffer"`
	HugePages   bool   `json:"huge_pages"`
	// Note says why the UMEM is in normal pages where huge pages were
	// wanted.
	Note string `json:"note,omitempty"`
}

func umemSummary(u engine.UmemInfo) umemJSON {
	return umemJSON{FrameSize: u.FrameSize, Headroom: u.Headroom, Unaligned: u.Unaligned,
		MultiBuffer: u.MultiBuffer, HugePages: u.HugePages, Note: u.Note}
}

func round3(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }

// writeJSON prints v as one line.
func writeJSON(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "xdpeng: encode JSON: %v\n", err)
		return
	}
	w.Write(append(b, '\n'))
}

// matchUsage is --match's help, in the AF_XDP modes and steer.
const matchUsage = "what xdpeng's program steers to the sockets, the rest going to the stack (ARP, ICMP, routing keep working): comma-separated terms, each to hold: ether=NAME (ipv4, ipv6, arp, ptp, lldp, vlan) or ether=0xNNNN; proto=NAME (tcp, udp, icmp, icmpv6, sctp, gre, esp, ospf) or proto=N; port=N (a UDP or TCP destination port, never an IPv4 fragment after the first); dst=PREFIX. For example proto=udp,port=4789 or dst=198.18.0.0/24 (default: every frame)"

// noUnprivilegedBPF is the advice for a worker without root that the
// kernel refuses a map it was handed (Debian's 5.10).
const noUnprivilegedBPF = "this kernel refuses bpf() to a process without CAP_BPF while kernel.unprivileged_bpf_disabled is set: give the worker CAP_BPF too"

// steer sets cfg's XSKMap and Program from --xsk-map and --program.
func (f *xskFlags) steer(cfg *engine.Config) error {
	if f.xskMap == "" && f.program == "" {
		return nil
	}
	if f.udpPort != 0 || f.match != "" {
		return errors.New("--udp-port and --match are xdpeng's program's: with --xsk-map or --program, the program that redirects to the XSKMAP chooses what reaches the sockets")
	}
	if f.force > 0 && f.program == "" {
		return errors.New("--force replaces an XDP program, and with --xsk-map alone xdpeng attaches none: the program on the device stays as it is")
	}
	if f.xskMap != "" {
		if st, err := os.Stat(f.xskMap); err == nil && st.Mode().Type() == fs.ModeSocket {
			if f.program != "" {
				return fmt.Errorf("--xsk-map %s is a socket: --program takes a pinned XSKMAP, or its object's own", f.xskMap)
			}
			pod, err := os.Hostname()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			m, err := devplugin.RequestXSKMap(ctx, f.xskMap, pod, cfg.Interface)
			cancel()
			if errors.Is(err, syscall.EPERM) && os.Geteuid() != 0 {
				return fmt.Errorf("--xsk-map %s: %w (%s)", f.xskMap, err, noUnprivilegedBPF)
			}
			if err != nil {
				return fmt.Errorf("--xsk-map %s: %w (the socket of xdpeng steer --socket, or of the AF_XDP device plugin)", f.xskMap, err)
			}
			cfg.XSKMap = m
			f.steering = fmt.Sprintf("the sockets in the XSKMAP of %s handed over at %s (as pod %s)", cfg.Interface, f.xskMap, pod)
			return nil
		}
		m, err := engine.LoadPinnedXSKMap(f.xskMap)
		if errors.Is(err, syscall.EPERM) && os.Geteuid() != 0 {
			return fmt.Errorf("--xsk-map %s: %w (%s)", f.xskMap, err, noUnprivilegedBPF)
		}
		if err != nil {
			return fmt.Errorf("--xsk-map %s: %w (a pinned XSKMAP: xdpeng steer --pin, bpftool map pin, or the loader that made it; or the Unix socket of xdpeng steer --socket or the AF_XDP device plugin)", f.xskMap, err)
		}
		cfg.XSKMap = m
		f.steering = fmt.Sprintf("the sockets in the XSKMAP pinned at %s, the program on %s yours", f.xskMap, cfg.Interface)
	}
	if f.program == "" {
		return nil
	}
	obj, name, _ := strings.Cut(f.program, ":")
	p, err := engine.LoadUserProgram(obj, name, cfg.XSKMap)
	if err != nil {
		return fmt.Errorf("--program %s: %w", f.program, err)
	}
	f.steering = fmt.Sprintf("program %s of %s, attached by xdpeng, its sockets in the object's XSKMAP %s", p.Name, obj, p.MapName)
	if cfg.XSKMap != nil {
		f.steering = fmt.Sprintf("program %s of %s, attached by xdpeng, its sockets in the XSKMAP pinned at %s", p.Name, obj, f.xskMap)
	}
	cfg.Program, cfg.XSKMap = p.Program, p.XSKMap
	return nil
}
