package main

// xdpeng latency: what a frame waits in each path that sends it back
// (internal/lab/compare's RunLatency), as a table, a picture of each
// distribution, or JSON lines.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/xdpeng/xdpeng/internal/cpuset"
	"github.com/xdpeng/xdpeng/internal/lab/compare"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
)

func init() { addCommand(newLatencyCmd()) }

type latencyFlags struct {
	paths            string
	waits            string
	duration         time.Duration
	rate             uint64
	size             int
	name             string
	layout           string
	bedQueues        int
	genCPUs, dutCPUs string
	genMethod        string
	queues           string
	json             bool
	quiet            bool
	dut              dutFlags
}

func newLatencyCmd() *cobra.Command {
	f := &latencyFlags{}
	cmd := &cobra.Command{
		Use:   "latency [--paths LIST] [--rate PPS] [-d D] [--waits LIST] [--dut ssh://HOST --dut-if DEV --gen-if DEV]",
		Short: "Measure what a frame waits in each path that sends it back: p50, p99, p99.9, loss, order",
		Long: `latency makes a veth test bed and, for each path, sends frames at a fixed rate
(--rate, default 100000 pps: low enough that nothing is lost) for --duration.
The generator's BPF program writes a sequence number and the kernel clock
(bpf_ktime_get_ns) into each frame just before it hands it to gen0; the path
sends the frame back to the generator's side, where a receiver program (XDP,
or tc ingress for frames that come back as skbs) takes the clock again, puts
the delay into a histogram and accounts for every frame by its number. Each
row: sent, received, lost, reordered, duplicated and the delay's min, p50,
p90, p99, p99.9 and max, then a picture of each row's distribution on a log
scale, and the path's own drop counters that explain a loss.

Paths (their frames come back):
` + wrapList(strings.Join(latencyPathNames(), ", ")) + `
(default: ` + strings.Join(compare.DefaultLatencyPaths, ", ") + `).
xdpeng's AF_XDP paths (xsk-*) run once in each wait mode of --waits
(default all: adaptive, busy, poll, busy-poll), so each mode's cost in delay
shows.

Layouts as in compare: A = generator and the DUT's NAPI (softirq) on CPU 0,
receiver threads on CPU 1; B = the DUT's NAPI threaded on CPU 1 with them.

` + dutHelp + `
On two hosts only the tester's clock times a frame: the generator stamps it
here as it sends, the receiver here reads the same clock when it comes back,
so the DUT's clock never needs to agree with the tester's; the delay includes
both cables. The paths are xdp-tx and xsk-l2fwd (frames come back on
--gen-if), and with a second pair of ports xdp-redirect, xdp-redirect-generic
and xsk-fwd.`,
		Example: `  sudo xdpeng latency
  sudo xdpeng latency --paths xdp-tx,xsk-l2fwd --waits adaptive,busy-poll --rate 50000 -d 5s
  sudo xdpeng latency --layout B --json
  sudo xdpeng latency --dut ssh://root@dut.lab --dut-if eth1 --gen-if eth1 --paths xdp-tx,xsk-l2fwd`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.config(cmd)
			if err != nil {
				return err
			}
			return runLatency(cmd, cfg, &f.dut, f.json)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.paths, "paths", "", "comma-separated paths (default: "+strings.Join(compare.DefaultLatencyPaths, ",")+")")
	fs.StringVar(&f.waits, "waits", "", "wait modes of the xsk-* paths: adaptive, busy, poll, busy-poll (default: all)")
	secondsVarP(fs, &f.duration, "duration", "d", 2*time.Second, "how long each path gets stamped frames (seconds, or a duration like 500ms)")
	fs.Uint64Var(&f.rate, "rate", compare.DefaultLatencyRate, "offered load in frames per second")
	fs.IntVar(&f.size, "size", 64, "frame size in bytes, without FCS")
	fs.StringVar(&f.name, "name", "", "test bed name (default: a unique one)")
	fs.StringVar(&f.layout, "layout", "A", "test bed layout: A (DUT NAPI in softirq on the generator CPU) or B (threaded NAPI on the DUT CPU)")
	fs.IntVar(&f.bedQueues, "bed-queues", 1, "queues per veth end")
	fs.StringVar(&f.genCPUs, "gen-cpus", "", "generator CPUs (default: the first CPU)")
	fs.StringVar(&f.genMethod, "gen-method", "auto", "how the generator sends: live, xsk, packet or auto (see xdpeng gen --help)")
	fs.StringVar(&f.dutCPUs, "dut-cpus", "", "receiver CPUs (the DUT's with --dut), queue 0's receiver on the first, round-robin (default: the last CPU)")
	fs.StringVarP(&f.queues, "queues", "q", "", "with --dut: rx queues of the DUT's port for the AF_XDP paths (default: all)")
	fs.BoolVar(&f.json, "json", false, "print JSON lines: a setup line, a row line per path and wait mode, a summary line")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress lines on stderr")
	f.dut.register(fs)
	return cmd
}

func latencyPathNames() []string {
	var names []string
	for _, p := range compare.LatencyPaths() {
		names = append(names, p.Name)
	}
	return names
}

// config checks the flags and turns them into a compare.LatencyConfig;
// nothing is touched before it returns.
func (f *latencyFlags) config(cmd *cobra.Command) (compare.LatencyConfig, error) {
	cfg := compare.LatencyConfig{Config: compare.Config{
		Duration: f.duration, Rate: f.rate, FrameSize: f.size, Testbed: true, BedName: f.name, Queues: f.bedQueues,
	}}
	if f.rate == 0 {
		return cfg, errors.New("--rate 0: give the offered load in frames per second (latency is measured at a fixed rate)")
	}
	if err := f.dut.check(); err != nil {
		return cfg, err
	}
	var err error
	if f.dut.given() {
		for _, fl := range []string{"name", "layout", "bed-queues"} {
			if cmd.Flags().Changed(fl) {
				return cfg, fmt.Errorf("--%s is for the test bed, not --dut", fl)
			}
		}
		cfg.Testbed, cfg.Queues = false, 0
		if cfg.Remote, err = f.dut.config(); err != nil {
			return cfg, err
		}
		if f.queues != "" {
			if cfg.InterfaceQueues, err = cpuset.ParseList(f.queues, "queue"); err != nil {
				return cfg, fmt.Errorf("-q: %w", err)
			}
		}
	} else if f.queues != "" {
		return cfg, errors.New("-q/--queues is for --dut; the test bed's queues are --bed-queues")
	}
	if f.paths != "" {
		if cfg.Paths, err = compare.ParsePaths(f.paths); err != nil {
			return cfg, fmt.Errorf("--paths: %w", err)
		}
		for _, p := range cfg.Paths {
			if !slices.Contains(latencyPathNames(), p) {
				return cfg, fmt.Errorf("--paths: %s does not send its frames back to the generator's side, so their delay cannot be taken: use %s",
					p, strings.Join(latencyPathNames(), ", "))
			}
		}
	} else if cfg.Remote != nil {
		var left []string
		if cfg.Paths, left = cfg.Remote.Runnable(compare.DefaultLatencyPaths); !f.quiet {
			dutNote(cmd, "latency", left)
		}
	}
	if f.waits != "" {
		for _, w := range strings.Split(f.waits, ",") {
			m, err := compare.ParseWaitMode(strings.TrimSpace(w))
			if err != nil {
				return cfg, fmt.Errorf("--waits: %w", err)
			}
			if !slices.Contains(cfg.Waits, m) {
				cfg.Waits = append(cfg.Waits, m)
			}
		}
	}
	if cfg.Remote == nil {
		if cfg.Layout, err = compare.ParseLayout(f.layout); err != nil {
			return cfg, fmt.Errorf("--layout: %w", err)
		}
	}
	if cfg.GenCPUs, cfg.DUTCPUs, err = bedCPUs(f.genCPUs, f.dutCPUs); err != nil {
		return cfg, err
	}
	if cfg.GenMethod, err = gen.ParseMethod(f.genMethod); err != nil {
		return cfg, fmt.Errorf("--gen-method: %w", err)
	}
	cfg.Progress = progressLines(cmd, "latency", f.quiet)
	if err := cfg.Check(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// runLatency runs cfg and prints the result; with a DUT on another host it
// first checks (or installs) the DUT's xdpeng. It fails if a row failed,
// after printing what was measured.
func runLatency(cmd *cobra.Command, cfg compare.LatencyConfig, dut *dutFlags, asJSON bool) error {
	out := cmd.OutOrStdout()
	ctx, stop, err := dut.startMeasuring(cmd, cfg.Remote, cfg.Progress)
	if err != nil {
		return err
	}
	defer stop()
	cfg.NAPIGuard = startNAPIGuard
	res, err := compare.RunLatency(ctx, cfg)
	if err != nil && (ctx.Err() == nil || len(res.Rows) == 0) {
		return measureErr(ctx, err)
	}
	if asJSON {
		if err := compare.WriteLatencyJSON(out, &res); err != nil {
			return err
		}
	} else {
		compare.WriteLatencyTable(out, &res)
	}
	if err != nil {
		return stoppedAfter(cmd, err, len(res.Rows), len(res.Rows)-len(res.Failed()), "row", res.Unfinished)
	}
	if bad := res.Failed(); len(bad) > 0 {
		return fmt.Errorf("%d row(s) failed: %s", len(bad), strings.Join(bad, ", "))
	}
	return nil
}
