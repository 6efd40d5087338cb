package main

// xdpeng txonly: the AF_XDP generator (engine.TxOnlyConfig), flags and
// printing.

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/xdpeng/xdpeng/cmd/internal/metrics"
	"github.com/xdpeng/xdpeng/cmd/internal/privilege"
	"github.com/xdpeng/xdpeng/cmd/internal/units"
	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/packet"
)

func init() { addCommand(newTxOnlyCmd()) }

type txOnlyFlags struct {
	xskFlags
	frameFlags
	count, rate      uint64
	ports            int
	srcIP, dstIP     string
	srcPort, dstPort uint16
	srcMAC, dstMAC   string
	xdpPass          string
	txChecksum       bool
	txTimestamp      bool
	launchDelay      time.Duration
	txCycle          string // -T: µs, as xdpsock's, or a duration
}

func newTxOnlyCmd() *cobra.Command {
	f := &txOnlyFlags{}
	c := &cobra.Command{
		Use:   "txonly -i DEV (--count N | -d DURATION) [flags]",
		Short: "Send UDP frames from AF_XDP sockets (xdpsock -t)",
		Long: `txonly binds one transmit-only AF_XDP socket per queue (no rx ring, no
steering program) and runs one pinned worker per queue. The frames are built once into
each socket's UMEM; the workers only move descriptors: a batch onto the tx ring,
a kick (sendto) when the kernel asks for one (in copy mode, every time: the copy
happens inside sendto), completions reaped.

--count is split exactly over the queues; --rate is an upper bound, paced per
worker in small bursts. A run needs --count or --duration. Addresses are from
198.18.0.0/15 (RFC 2544); the destination MAC defaults to the veth peer's, else
the neighbour entry of --dst-ip.

tx counts are completions: frames the kernel has finished with.

Copy mode hands the device an skb per frame and works on every device.
Zero-copy transmit goes through the driver's XDP transmit rings, which many
drivers (i40e, ice, ixgbe, igb, igc, bnxt, ...) set up only while an XDP
program is attached: where the device's XDP features say so and zero-copy
may be used, txonly attaches XDP_PASS to it for the run (a bpf_link, removed
at exit, never replacing another program) and says so; --xdp-pass never
turns that off, always forces it.

Jumbo frames: with -F (multi-buffer) a frame longer than a UMEM frame goes out
as several descriptors, each frame in consecutive UMEM frames (up to 18), so
--size may go up to the device's MTU + 18 (on a test bed: testbed up --mtu
9000, then -s 9018). gen's live frames stop at a page (3408 bytes here):
txonly -F is what sends jumbo frames.

--tx-timestamp has each frame ask for a completion timestamp (AF_XDP TX
metadata, Linux 6.8+) and prints the distribution of the time from its
descriptor going onto the tx ring to that timestamp: in copy mode the kernel
takes it from CLOCK_TAI when the device frees the frame (veth: when the peer
has taken it). Copy mode only: a zero-copy driver stamps with its NIC's clock.
--launch-delay D has each frame ask to leave D after that moment (AF_XDP TX
launch time, Linux 6.14+), in CLOCK_TAI, so the device's PTP clock must follow
it (phc2sys); zero-copy only, where the device's AF_XDP transmit metadata
(probe) has tx-launch-time-fifo. Frames wait in order on the queue.`,
		Example: `  xdpeng txonly -i dut0 --count 1000000
  xdpeng txonly -i dut0 -d 5s --rate 500000 --ports 16 --size 128 --json
  xdpeng txonly -i dut0 -q 0 -C 100000 -s 64 -V -J 7 -K 3 -P 12345678   # xdpsock's letters
  ip netns exec xdpeng-dut xdpeng txonly -i dut0 -q 0 --count 100 -c
  ip netns exec xdpeng-gen xdpeng txonly -i gen0 -F -s 9018 --count 100000   # a bed of MTU 9000
  xdpeng txonly -i eth1 -z --tx-checksum --count 1000000   # the NIC fills the UDP checksums
  ip netns exec xdpeng-gen xdpeng txonly -i gen0 --tx-timestamp --count 100000   # send -> completion times`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTxOnly(cmd, f) },
	}
	fs := c.Flags()
	f.xskFlags.register(fs)
	fs.Lookup("duration").Usage = "run this long, then exit (a run needs --count or --duration)"
	fs.Lookup("interface").Usage = "device to send out of (required)"
	fs.Lookup("queues").Usage = "tx queues to bind, e.g. 0, 0-3 (default: all of the device's)"
	fs.Lookup("ring-size").Usage = "size of the tx and completion rings (power of two)"
	fs.Lookup("frames").Usage = "UMEM frames per socket (default: tx ring + completion ring sizes, rounded up to a multiple of --ports)"
	f.frameFlags.register(fs)
	fs.Uint64VarP(&f.count, "count", "C", 0, "frames to send in total, split exactly over the queues")
	fs.Uint64Var(&f.rate, "rate", 0, "upper bound in frames per second over all queues (default: as fast as possible)")
	fs.StringVarP(&f.txCycle, "tx-cycle", "T", "", "send one batch (-b frames) per queue at the start of every cycle, as xdpsock's -T: microseconds (-T 1000), or a duration (1ms); the summary says how late the batches went out (not with --rate)")
	fs.IntVar(&f.ports, "ports", 1, "cycle the UDP destination port over this many values from --dst-port")
	fs.StringVar(&f.srcIP, "src-ip", "", "source address (default: DEV's address in 198.18.0.0/15, else 198.18.0.1)")
	fs.StringVar(&f.dstIP, "dst-ip", "", "destination address, in 198.18.0.0/15 (IPv4 only, unlike gen) (default: the other host of the source's test-bed link, 198.18.K.1 <-> .2)")
	fs.Uint16Var(&f.srcPort, "src-port", 1234, "UDP source port")
	fs.Uint16Var(&f.dstPort, "dst-port", 9, "UDP destination port (9 is discard), the first of --ports")
	fs.StringVarP(&f.srcMAC, "src-mac", "H", "", "source MAC (default: DEV's)")
	fs.StringVarP(&f.dstMAC, "dst-mac", "G", "", "destination MAC (default: the veth peer's, else the neighbour entry of --dst-ip)")
	fs.BoolVar(&f.txChecksum, "tx-checksum", false, "have each frame's UDP checksum filled as it is sent (AF_XDP TX metadata, Linux 6.8+): by the kernel in copy mode, by the NIC in zero-copy mode (its xsk-features need tx-checksum)")
	fs.BoolVar(&f.txTimestamp, "tx-timestamp", false, "have each frame's completion stamped (AF_XDP TX metadata, Linux 6.8+, copy mode) and print the send -> completion times")
	secondsVarP(fs, &f.launchDelay, "launch-delay", "", 0, "have each frame leave this long after it is queued (seconds, or a duration like 100us) (AF_XDP TX launch time, Linux 6.14+, zero-copy on a device with tx-launch-time-fifo)")
	xdpPassFlag(fs, &f.xdpPass)
	fs.Lookup("xdp-pass").Usage += "; copy mode transmits without it, zero-copy mode through the driver's XDP transmit"
	for _, n := range txOnlyIgnores {
		_ = fs.MarkHidden(n.flag)
	}
	return c
}

// txOnlyIgnores are the flags of the receiving modes that would do nothing
// in txonly: given, they are an error rather than silently ignored.
var txOnlyIgnores = []struct{ flag, why string }{
	{"udp-port", "it receives nothing"},
	{"match", "it receives nothing"},
	{"xsk-map", "it receives nothing"},
	{"program", "it attaches no XDP program"},
	{"native", "it attaches no XDP program"},
	{"generic", "it attaches no XDP program"},
	{"force", "it attaches no XDP program"},
	{"fill-size", "its sockets have no fill ring of their own to size"},
	{"rx-size", "its sockets have no rx ring"},
	{"shared-umem", "each queue's socket has a UMEM of its own, holding that queue's frames"},
	{"errors", "it runs no XDP program, so no XDP verdict of its can fail"},
	{"write", "it receives nothing to capture"},
	{"snaplen", "it receives nothing to capture"},
	{"capture-count", "it receives nothing to capture"},
	{"headroom", "it receives nothing, and the UMEM headroom is what the kernel leaves in front of received frames"},
	{"threaded-busy-poll", "it receives nothing: threaded busy polling moves a queue's receive work to its NAPI's thread, and copy-mode transmit runs in txonly's own sendto calls"},
}

// generatorConfig is the generator's share of cfg, what the xskFlags
// txonly has set: its sockets, without frames or bounds.
func generatorConfig(cfg engine.Config) engine.GeneratorConfig {
	return engine.GeneratorConfig{
		Interface: cfg.Interface, Queues: cfg.Queues, CPUs: cfg.CPUs, Batch: cfg.Batch,
		FrameSize: cfg.FrameSize, NumFrames: cfg.NumFrames, CompletionSize: cfg.CompletionSize, TxSize: cfg.TxSize,
		BindMode: cfg.BindMode, NeedWakeup: cfg.NeedWakeup, Wait: cfg.Wait,
		BusyPollUsecs: cfg.BusyPollUsecs, BusyPollBudget: cfg.BusyPollBudget, BusyPollNAPI: cfg.BusyPollNAPI, PollTimeout: cfg.PollTimeout,
		Unaligned: cfg.Unaligned, HugePages: cfg.HugePages, MultiBuffer: cfg.MultiBuffer,
		Sched: cfg.Sched, SchedPriority: cfg.SchedPriority,
	}
}

func runTxOnly(cmd *cobra.Command, f *txOnlyFlags) error {
	for _, n := range txOnlyIgnores {
		if cmd.Flags().Changed(n.flag) {
			return fmt.Errorf("--%s does not apply to txonly: %s (see xdpeng txonly --help)", n.flag, n.why)
		}
	}
	if f.iface == "" {
		return cliFlagError{errors.New("no interface given: use -i DEV")}
	}
	if f.duration < 0 {
		return fmt.Errorf("-d/--duration %v: must not be negative", f.duration)
	}
	var cycle time.Duration
	if f.txCycle != "" {
		var err error
		if cycle, err = parseTxCycle(f.txCycle); err != nil {
			return err
		}
		if f.rate > 0 {
			return errors.New("-T/--tx-cycle and --rate both pace the sending: give one")
		}
	}
	if f.count == 0 && f.duration == 0 {
		return cliFlagError{errors.New("txonly needs a bound: give --count N or --duration D (it never sends without one)")}
	}
	if f.ports < 1 {
		return fmt.Errorf("--ports %d: need at least 1", f.ports)
	}
	if last := int(f.dstPort) + f.ports - 1; last > math.MaxUint16 {
		return fmt.Errorf("--ports: %d ports counted up from destination port %d go past port 65535: at most %d fit", f.ports, f.dstPort, math.MaxUint16-int(f.dstPort)+1)
	}
	if err := checkXDPPass(f.xdpPass); err != nil {
		return err
	}
	cfg, err := f.config()
	if err != nil {
		return err
	}
	frame := packet.UDPConfig{SrcPort: f.srcPort, DstPort: f.dstPort}
	if err := f.frameFlags.apply(&frame, cfg.MultiBuffer); err != nil {
		return err
	}
	addrs := addrFlags{srcIP: f.srcIP, dstIP: f.dstIP, srcMAC: f.srcMAC, dstMAC: f.dstMAC}
	if err := addrs.parse(&frame, "txonly", false); err != nil {
		return err
	}
	if err := needRoot(typed(cmd), privilege.AFXDP); err != nil {
		return err
	}
	facts, txPlan, err := checkTx(cfg.Interface, f.xdpPass, false, cfg.BindMode != engine.BindCopy)
	if err != nil {
		return err
	}
	frame, info, err := resolveAddrs(cfg.Interface, frame)
	if err != nil {
		return err
	}
	if err := frame.ValidateUDP(); err != nil {
		return flagError(err)
	}
	frames, err := packet.UDPVariants(frame, f.ports)
	if err != nil {
		return flagError(err)
	}
	gcfg := generatorConfig(cfg)
	gcfg.Frames, gcfg.Count, gcfg.Rate, gcfg.TxChecksum = frames, f.count, f.rate, f.txChecksum
	gcfg.TxTimestamp, gcfg.LaunchDelay = f.txTimestamp, f.launchDelay
	gcfg.Cycle = cycle
	if err := gcfg.Validate(); err != nil {
		if cfg.MultiBuffer {
			return fmt.Errorf("--size %d: %w", f.size, err)
		}
		return err
	}
	helper, err := setupTx(facts, txPlan, sayTo(cmd.OutOrStdout(), cmd.ErrOrStderr(), f.json))
	if err != nil {
		return err
	}
	defer helper.Close()
	links, onLink := linkChanges()
	gcfg.OnLinkChange = onLink
	w, err := f.watch.startWatch(cfg.Interface)
	if err != nil {
		return err
	}
	defer w.close()
	guard := newNAPIGuard(cfg.Interface)
	gcfg.NAPIGuard = guard
	g, err := engine.NewGenerator(gcfg)
	if err != nil {
		guard.close()
		return advise(err)
	}
	defer func() {
		g.Close()
		if err := guard.close(); err != nil {
			fmt.Fprintf(os.Stderr, "xdpeng: %v\n", err)
		}
	}()
	if err := w.serve(&metrics.Engine{Mode: "txonly", Interface: info.Name, Stats: g.Stats}); err != nil {
		return err
	}
	defer w.stopServing()
	p := &xskPrinter{w: cmd.OutOrStdout(), mode: "txonly", f: &f.xskFlags, run: g, links: links, watch: w, summaryOf: txOnlySummary{}}
	if !f.json {
		fmt.Fprintf(p.w, "txonly on %s (%s): %s, %s, batch %d, %d-byte frames (%d bytes + FCS), UDP %s:%d -> %s:%d (%s)%s, %d port(s), count %s, rate %s, need_wakeup %v\n",
			info.Name, info.DriverLabel(), queuesOnCPUs(g.Config().Queues, g.Config().CPUs), bindModeName(g.ZeroCopy()), cfg.Batch,
			wireSize(frame.Size), frame.Size, frame.SrcIP, frame.SrcPort, frame.DstIP, frame.DstPort, frame.DstMAC, frameExtras(frame), f.ports,
			orUnbounded(f.count), orUnbounded(f.rate), cfg.NeedWakeup)
		w.header(p.w)
		fmt.Fprint(p.w, umemLine(g.Umem()))
	}
	if cfg.Wait == engine.WaitBusyPoll {
		out := p.w
		if f.json {
			out = os.Stderr // the JSON lines stay JSON
		}
		fmt.Fprint(out, busyPollReport(g, cfg.Interface, cfg.Wait))
	}
	last, runErr := runEngine(g, &f.xskFlags, p)
	if g.Started().IsZero() {
		return runErr // Run never started: there are no totals to print
	}
	runErr = errors.Join(runErr, w.finish(0))
	dur := last.Time.Sub(g.Started()).Seconds()
	t := last.Total()
	sum := txOnlySummary{
		Type: "summary", Mode: "txonly", Interface: info.Name, Driver: info.Driver, Queues: g.Config().Queues,
		ZeroCopy: g.ZeroCopy(), Batch: cfg.Batch, Size: wireSize(frame.Size), FrameBytes: frame.Size, Ports: f.ports, Umem: umemSummary(g.Umem()),
		Count: f.count, Rate: f.rate, DurationS: round3(dur), TxPackets: t.TxPackets, TxBytes: t.TxBytes,
		PerQueue: queuesJSON(last.Queues), XDPStats: t.XDP, XDPPass: helper.Attached(),
		App:       map[string]uint64{"tx_wakeups": t.TxWakeups, "polls": t.Polls, "batches": t.Batches},
		watchJSON: w.summaryJSON(),
	}
	if f.txTimestamp {
		sum.TxCompletion = txTimesSummary(g.TxTimes())
	}
	if dur > 0 {
		sum.TxPPS = float64(t.TxPackets) / dur
	}
	sum.RateNote = rateNote(f.rate, sum.TxPPS)
	if gcfg.Cycle > 0 {
		sum.TxCycleNs, sum.TxCycle = gcfg.Cycle.Nanoseconds(), g.TxCycles()
	}
	if f.json {
		writeJSON(p.w, sum)
	} else {
		fmt.Fprintf(p.w, "\ntxonly on %s: %.2f s, tx %d packets, %d bytes (%s)\n", info.Name, dur, t.TxPackets, t.TxBytes, units.PPS(sum.TxPPS))
		for _, q := range last.Queues {
			fmt.Fprintf(p.w, "  queue %d (CPU %d): tx %d, tx_invalid_descs %d, tx_ring_empty_descs %d\n", q.Queue, q.CPU, q.TxPackets, q.XDP.TxInvalidDescs, q.XDP.TxRingEmptyDescs)
		}
		fmt.Fprintf(p.w, "  app stats: tx_wakeups %d, polls %d, batches %d\n", t.TxWakeups, t.Polls, t.Batches)
		if c := sum.TxCompletion; c != nil {
			fmt.Fprintf(p.w, "  send -> completion (CLOCK_TAI, %d frames): min %s, mean %s, p50 %s, p99 %s, p99.9 %s, max %s; %d without a timestamp\n",
				c.Frames, ns(c.MinNs), ns(c.MeanNs), ns(c.P50Ns), ns(c.P99Ns), ns(c.P999Ns), ns(c.MaxNs), c.NoTimestamp)
		}
		if sum.RateNote != "" {
			fmt.Fprintf(p.w, "  %s\n", sum.RateNote)
		}
		for _, c := range sum.TxCycle {
			fmt.Fprintf(p.w, "  queue %d tx cycle %v: %d batches of %d, late by min %v, avg %v, max %v; %d cycles missed\n",
				c.Queue, gcfg.Cycle, c.Cycles, cfg.Batch, c.LateMin, c.LateAvg, c.LateMax, c.Missed)
		}
		w.summaryText(p.w)
	}
	if runErr == nil && f.count > 0 && t.TxPackets != f.count {
		return fmt.Errorf("sent %d of %d frames: the rest were not completed (tx_invalid_descs %d)", t.TxPackets, f.count, t.XDP.TxInvalidDescs)
	}
	return runErr
}

// parseTxCycle reads -T: microseconds, as xdpsock's, or a Go duration.
func parseTxCycle(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if n, nerr := strconv.ParseUint(s, 10, 63); nerr == nil {
		d, err = time.Duration(n)*time.Microsecond, nil
	}
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("-T/--tx-cycle %q: give microseconds (-T 1000) or a positive duration (1ms)", s)
	}
	return d, nil
}

// txOnlySummary is txonly's last JSON line.
type txOnlySummary struct {
	Type       string   `json:"type"`
	Mode       string   `json:"mode"`
	Interface  string   `json:"interface"`
	Driver     string   `json:"driver"`
	Queues     []int    `json:"queues"`
	ZeroCopy   bool     `json:"zero_copy"`
	Batch      int      `json:"batch"`
	Size       int      `json:"size"`        // with FCS, as --size
	FrameBytes int      `json:"frame_bytes"` // without: what tx_bytes counts
	Ports      int      `json:"ports"`
	Umem       umemJSON `json:"umem"`
	Count      uint64   `json:"count"`
	Rate       uint64   `json:"rate"`
	// RateNote says, when the run sent noticeably less than Rate, that it
	// did and why.
	RateNote string `json:"rate_note,omitempty"`
	// TxCycleNs is -T's cycle, TxCycle what each queue saw of its cycles.
	TxCycleNs int64               `json:"tx_cycle_ns,omitempty"`
	TxCycle   []engine.CycleStats `json:"tx_cycle,omitempty"`
	DurationS float64             `json:"duration_s"`
	TxPackets uint64              `json:"tx_packets"`
	TxBytes   uint64              `json:"tx_bytes"`
	TxPPS     float64             `json:"tx_pps"`
	PerQueue  []queueJSON         `json:"per_queue"`
	XDPStats  engine.SocketStats  `json:"xdp_stats"`
	App       map[string]uint64   `json:"app_stats"`
	// XDPPass says XDP_PASS was attached to the device for the run.
	XDPPass bool `json:"xdp_pass"`
	// TxCompletion is the send -> completion times, with --tx-timestamp.
	TxCompletion *txTimesJSON `json:"tx_completion,omitempty"`
	watchJSON
}

// txTimesJSON is engine.TxTimes in a summary: percentiles are the upper
// bounds of buckets 1/16 of a power of two wide.
type txTimesJSON struct {
	Clock       string `json:"clock"`
	Frames      uint64 `json:"frames"`
	NoTimestamp uint64 `json:"no_timestamp"`
	Early       uint64 `json:"early"`
	MinNs       int64  `json:"min_ns"`
	MeanNs      int64  `json:"mean_ns"`
	P50Ns       int64  `json:"p50_ns"`
	P99Ns       int64  `json:"p99_ns"`
	P999Ns      int64  `json:"p999_ns"`
	MaxNs       int64  `json:"max_ns"`
}

func txTimesSummary(t engine.TxTimes) *txTimesJSON {
	return &txTimesJSON{
		Clock: "CLOCK_TAI", Frames: t.Frames, NoTimestamp: t.NoTimestamp, Early: t.Early,
		MinNs: int64(t.Min), MeanNs: int64(t.Mean()), P50Ns: int64(t.Percentile(50)), P99Ns: int64(t.Percentile(99)),
		P999Ns: int64(t.Percentile(99.9)), MaxNs: int64(t.Max),
	}
}

// ns prints a time in ns as a duration.
func ns(v int64) string { return time.Duration(v).String() }

func orUnbounded(v uint64) string {
	if v == 0 {
		return "unbounded"
	}
	return fmt.Sprint(v)
}

func bindModeName(zeroCopy bool) string {
	if zeroCopy {
		return "zero-copy"
	}
	return "copy"
}
