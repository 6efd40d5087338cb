package main

// xdpeng compare: every receive path side by side on the same traffic
// (internal/lab/compare), printed as a table and a bar chart, JSON or CSV.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/xdpeng/xdpeng/internal/cpuset"
	"github.com/xdpeng/xdpeng/internal/lab/compare"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/kern"
)

func init() { addCommand(newCompareCmd()) }

type compareFlags struct {
	genMethod        string
	genCopies        int
	iface            string
	queues           string
	paths            string
	family           string
	duration         time.Duration
	rate             uint64
	size             int
	testbed          bool
	name             string
	layout           string
	bedQueues        int
	genCPUs, dutCPUs string
	json, csv        bool
	quiet            bool
	force            bool
	ndr              bool
	loss             float64
	trial            time.Duration
	resolution       float64
	verify           int
	peers            string
	packetOp         string // --packet-operation
	loadMode         string // --load-mode
	dut              dutFlags
}

func newCompareCmd() *cobra.Command {
	f := &compareFlags{}
	cmd := &cobra.Command{
		Use:   "compare (-i DEV | --testbed | --dut ssh://HOST --dut-if DEV --gen-if DEV) [--paths LIST | --family drop|forward|all]",
		Short: "Measure the receive paths side by side: XDP, tc, AF_XDP (ours and asavie/xdp), AF_PACKET, bridge",
		Long: `compare runs each path in turn against the same traffic and prints one table:
Mpps received, CPU time per packet on the receiving side, busy % of each CPU,
and the loss with the counters that explain it, then a bar chart of Mpps.

With --testbed it makes its own veth test bed, drives the live-frames
generator itself with the same offered load for every path, and removes the
bed afterwards (also on Ctrl-C). With -i DEV it measures whatever traffic
arrives on DEV for --duration per path; every path takes all of DEV's
traffic meanwhile, so a DEV that carries the default route (checked in the
namespace compare runs in) is refused unless --force.

` + dutHelp + `
On two hosts the paths that run are xdp-drop, xdp-drop-generic, tc-drop,
xsk-drop, xdp-tx, xsk-l2fwd and, with a second (third) pair of ports,
xdp-redirect, xdp-redirect-generic, xsk-fwd (xdp-redirect-multi); -q and
--dut-cpus are the DUT's queues and CPUs, and the CPU columns its CPUs.

Drop family (the default):
` + wrapList(pathList(compare.Drop)) + `
Forward family (--family forward: test bed, or two hosts with 2 or 3 port
pairs):
` + wrapList(pathList(compare.Forward)) + `
Run only when named in --paths (test bed only), as they need dpdk-testpmd
(Debian 12: apt-get install dpdk-dev librte-net-af-xdp23): dpdk-af-xdp and
dpdk-af-xdp-nobusy (DPDK's AF_XDP driver under testpmd rxonly, its default
arguments and busy_budget=0), dpdk-l2fwd and dpdk-l2fwd-nobusy (macswap).
Where dpdk-testpmd is missing they are skipped with a note. Also only when
named: xsk-drop-busy-poll (xsk-drop with --busy-poll), which bench measures.

The peers, run only when named in --paths (test bed with one queue), each
the C tool on dut0's queue 0 pinned to the DUT CPU, found in --peers DIR or
else in PATH, and skipped with a note where absent:
` + wrapList(peerList()) + `
Their frames are counted at the device as the dpdk paths' are (veth's
redirects on dut0; frames sent back where they come back, on gen0).
xdp-trafficgen-udp is a generator under test instead: xdp-trafficgen udp on
gen0 (one thread, on the first generator CPU, no --rate) into xdp-drop's
XDP_DROP on dut0, sent counted at gen0's device; xdp-drop's row is the same
with xdpeng's generator. Each is ended with SIGINT, and SIGKILL if it has
not ended within 5 s; then every XDP or tc program it left on dut0 is
removed, and a note says what it took.

With --ndr (test bed or two hosts) it also searches each path's zero-loss
throughput (RFC 2544's throughput, NDR): after the full-load trial, a binary
search over --rate with trials of --trial each, from the full-load rate
down, every trial's loss counted exactly (the device's and the path's
counters, after they came to rest), until the highest passing and the lowest
failing rate are --resolution % of the full-load rate apart; a trial whose
generator could not keep the rate (its pacing fell behind and skipped more
than 1% of the frames the rate asks for) fails. A trial that fails is run
once more; if the repeat passes the rate passes, reported as marginal. Then
--verify N trials run at the answer: it stands only if every one passes; if
one fails, the rate one resolution lower is verified, up to 5 steps down.
One trial 10% above the verified rate follows. It prints each trial as it
goes. --loss PCT adds a partial-drop rate (PDR) search that lets a trial
lose PCT % of its frames. Rows gain ndr_mpps (pdr_mpps, the verified rates),
trials and the searches' steps, verification trials and confidence (how the
rate held: "held 3 of 3 at RATE Mpps", and what the lowest failing rate
above it lost). RFC 2544 asks for trials of 60 s: --trial 60s; at the
default resolution a search runs at most 18 trials, then the --verify trials
(as many again per step down) and the one above: at most 22 trials of 60 s
per path with --verify 3 and no step down.

Layouts (2 CPUs): A = generator on CPU 0, where veth also runs the DUT's NAPI
(XDP programs, AF_XDP copy, skbs) in softirq, receiver threads on CPU 1;
B = generator on CPU 0, the DUT's NAPI threaded and pinned to CPU 1 together
with the receiver threads.`,
		Example: `  sudo xdpeng compare --testbed
  sudo xdpeng compare --testbed --layout B -d 3s --json
  sudo xdpeng compare --testbed --family forward
  sudo xdpeng compare --testbed --paths xdp-drop,xsk-drop,asavie-drop --rate 2000000 --csv
  sudo xdpeng compare -i eth1 --paths xdp-drop,xsk-drop -d 10s
  sudo xdpeng compare --testbed --paths xsk-drop,dpdk-af-xdp,dpdk-af-xdp-nobusy
  sudo xdpeng compare --testbed --peers ./peers/bin --paths xsk-drop,xdpsock-drop,xdp-bench-xsk-drop
  sudo xdpeng compare --testbed --paths xdp-drop,xsk-drop --ndr
  sudo xdpeng compare --testbed --paths xsk-drop --ndr --loss 0.1 --trial 2s
  sudo xdpeng compare --testbed --paths xsk-drop --ndr --trial 60s --verify 5
  sudo xdpeng compare --dut ssh://root@dut.lab --dut-if eth1 --gen-if eth1 --paths xdp-drop,xsk-drop
  sudo xdpeng compare --dut ssh://root@10.0.0.2 --ssh-command "ssh -F lab.conf" --dut-install \
      --dut-if eth1,eth2 --gen-if eth3,eth4 --family all`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.config(cmd)
			if err != nil {
				return err
			}
			return runCompare(cmd, cfg, &f.dut, f.json, f.csv, false)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&f.iface, "interface", "i", "", "measure the traffic arriving on this device (instead of --testbed)")
	fs.StringVarP(&f.queues, "queues", "q", "", "with -i or --dut: rx queues of the device for the AF_XDP paths (default: all)")
	fs.StringVar(&f.paths, "paths", "", "comma-separated paths to run (default: the --family's)")
	fs.StringVar(&f.family, "family", "drop", "drop, forward or all")
	fs.StringVar(&f.packetOp, "packet-operation", "", "what the in-kernel XDP paths (xdp-drop, xdp-tx, xdp-redirect, ...) do to each frame before their verdict, as xdpeng kern -p and xdp-bench's -p: no-touch, read-data, parse-ip or swap-macs (default: each path's own, no-touch; swap-macs for xdp-tx)")
	fs.StringVar(&f.loadMode, "load-mode", "dpa", "how those paths read the frame, as xdp-bench's -l: dpa (direct packet access) or load-bytes (bpf_xdp_load_bytes)")
	secondsVarP(fs, &f.duration, "duration", "d", 5*time.Second, "measurement time per path (seconds, or a duration like 500ms)")
	fs.Uint64Var(&f.rate, "rate", 0, "test bed, two hosts: offered load in frames per second (default: as fast as the generator goes)")
	fs.IntVar(&f.size, "size", 64, "test bed, two hosts: frame length in bytes without the FCS (unlike gen and txonly -s, which count it: 64 here is their -s 68)")
	fs.BoolVar(&f.testbed, "testbed", false, "make a test bed, drive the generator, remove the bed afterwards")
	fs.StringVar(&f.name, "name", "", "test bed name (default: a unique one)")
	fs.StringVar(&f.layout, "layout", "A", "test bed layout: A (DUT NAPI in softirq on the generator CPU) or B (threaded NAPI on the DUT CPU)")
	fs.IntVar(&f.bedQueues, "bed-queues", 1, "test bed: queues per veth end")
	fs.StringVar(&f.genCPUs, "gen-cpus", "", "test bed, two hosts: generator CPUs (default: the first CPU)")
	fs.StringVar(&f.genMethod, "gen-method", "auto", "test bed, two hosts: how the generator sends: live, xsk, packet or auto (see xdpeng gen --help)")
	fs.IntVar(&f.genCopies, "gen-copies", 0, fmt.Sprintf("test bed, two hosts: with gen methods xsk and packet, the frames sent per frame made, 1-%d (see xdpeng gen --help; default %d)", gen.MaxCopies, gen.DefaultCopies))
	fs.StringVar(&f.dutCPUs, "dut-cpus", "", "receiver CPUs (the DUT's with --dut), queue 0's receiver on the first, round-robin (default: the last CPU; with --dut, one per queue from the DUT's last CPU down)")
	fs.BoolVar(&f.json, "json", false, "print JSON lines: a setup line, a row line per path, a summary line")
	fs.BoolVar(&f.csv, "csv", false, "print CSV: a header and one line per path")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress lines on stderr")
	fs.BoolVar(&f.force, "force", false, "with -i: measure DEV even if it carries the default route")
	fs.BoolVar(&f.ndr, "ndr", false, "test bed, two hosts: also search each path's zero-loss rate (NDR)")
	fs.Float64Var(&f.loss, "loss", 0, "with --ndr: also search the rate that loses at most this percentage (PDR)")
	secondsVarP(fs, &f.trial, "trial", "", compare.DefaultNDR.Trial, "with --ndr: length of each trial (seconds, or a duration like 500ms)")
	fs.Float64Var(&f.resolution, "resolution", compare.DefaultNDR.Resolution*100, "with --ndr: stop when pass and fail are this percentage of the full-load rate apart")
	fs.IntVar(&f.verify, "verify", compare.DefaultNDR.Verify, "with --ndr: `trials` at the answer, each of which must pass for it to stand")
	fs.StringVar(&f.peers, "peers", "", "test bed: a directory to look for the peer tools (xdpsock, xdp-bench, xdp-trafficgen, trafgen) in before PATH")
	f.dut.register(fs)
	return cmd
}

// peerList lists the peer paths and the tool each runs.
func peerList() string {
	var names []string
	for _, p := range compare.AllPaths() {
		if p.Needs == compare.Xdpsock || p.Needs == compare.XdpBench || p.Needs == compare.XdpTrafficgen || p.Needs == compare.Trafgen {
			names = append(names, p.Name)
		}
	}
	return strings.Join(names, ", ")
}

// wrapList breaks a comma-separated list into lines of at most 78
// characters, each indented by two spaces, for a command's help.
func wrapList(list string) string {
	var b strings.Builder
	line := ""
	for _, w := range strings.Split(list, ", ") {
		switch {
		case line == "":
			line = "  " + w
		case len(line)+2+len(w) > 78:
			b.WriteString(line + ",\n")
			line = "  " + w
		default:
			line += ", " + w
		}
	}
	b.WriteString(line)
	return b.String()
}

func pathList(f compare.Family) string {
	var names []string
	for _, p := range compare.Paths(f) {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}

// config checks the flags and turns them into a compare.Config; nothing is
// touched before it returns.
func (f *compareFlags) config(cmd *cobra.Command) (compare.Config, error) {
	cfg := compare.Config{
		Duration: f.duration, Rate: f.rate, FrameSize: f.size, Testbed: f.testbed, BedName: f.name,
		Queues: f.bedQueues, Interface: f.iface, Force: f.force, Peers: f.peers,
	}
	if f.json && f.csv {
		return cfg, errors.New("--json and --csv exclude each other")
	}
	if err := f.dut.check(); err != nil {
		return cfg, err
	}
	remote := f.dut.given()
	if n := btoi(f.testbed) + btoi(f.iface != "") + btoi(remote); n != 1 {
		return cfg, errors.New("give one of -i DEV (measure a real interface), --testbed (make a test bed and drive traffic) or --dut (a DUT on another host)")
	}
	if !f.testbed {
		for _, fl := range []string{"name", "layout", "bed-queues"} {
			if cmd.Flags().Changed(fl) {
				return cfg, fmt.Errorf("--%s is for --testbed", fl)
			}
		}
	}
	if !f.testbed && !remote {
		for _, fl := range []string{"rate", "size", "gen-cpus", "gen-method", "gen-copies"} {
			if cmd.Flags().Changed(fl) {
				return cfg, fmt.Errorf("--%s is for the generator: --testbed or --dut", fl)
			}
		}
	}
	m, err := gen.ParseMethod(f.genMethod)
	if err != nil {
		return cfg, fmt.Errorf("--gen-method: %w", err)
	}
	cfg.GenMethod = m
	if f.genCopies < 0 || f.genCopies > gen.MaxCopies {
		return cfg, fmt.Errorf("--gen-copies %d: use 1-%d", f.genCopies, gen.MaxCopies)
	}
	cfg.GenCopies = f.genCopies
	if f.peers != "" && !f.testbed {
		return cfg, errors.New("--peers is for --testbed: the peer tools run on a test bed's DUT")
	}
	if f.testbed && f.queues != "" {
		return cfg, errors.New("-q/--queues is for -i or --dut; the test bed's queues are --bed-queues")
	}
	if f.force && f.iface == "" {
		return cfg, errors.New("--force is for -i: a test bed's interfaces, and those of a DUT on another host, carry no default route here")
	}
	if f.ndr {
		if f.verify < 1 || f.verify > compare.MaxVerify {
			return cfg, fmt.Errorf("--verify %d: give 1 to %d trials at the answer", f.verify, compare.MaxVerify)
		}
		cfg.NDR = &compare.NDRConfig{Trial: f.trial, Resolution: f.resolution / 100, LossPct: f.loss, Verify: f.verify}
	} else {
		for _, fl := range []string{"loss", "trial", "resolution", "verify"} {
			if cmd.Flags().Changed(fl) {
				return cfg, fmt.Errorf("--%s is for --ndr", fl)
			}
		}
	}
	cfg.PacketOp = f.packetOp
	if cfg.LoadBytes, err = loadBytes("--load-mode", f.loadMode); err != nil {
		return cfg, err
	}
	switch {
	case f.paths != "":
		if cmd.Flags().Changed("family") {
			return cfg, errors.New("give --paths or --family, not both")
		}
		if cfg.Paths, err = compare.ParsePaths(f.paths); err != nil {
			return cfg, fmt.Errorf("--paths: %w", err)
		}
	case f.family == "drop" || f.family == "forward" || f.family == "all":
		fam := compare.Family(f.family)
		if f.family == "all" {
			fam = ""
		}
		for _, p := range compare.Paths(fam) {
			cfg.Paths = append(cfg.Paths, p.Name)
		}
		if remote {
			// The paths of the family that run on two hosts with the
			// ports given; the others are said and left out.
			var left []string
			cfg.Paths, left = (&compare.Remote{DUTInterfaces: f.dut.dutIfs}).Runnable(cfg.Paths)
			if len(cfg.Paths) == 0 {
				return cfg, fmt.Errorf("--family %s: none of its paths runs on two hosts with %d DUT port(s) (--dut-if %s)",
					f.family, len(f.dut.dutIfs), strings.Join(f.dut.dutIfs, ","))
			}
			if !f.quiet {
				dutNote(cmd, "compare", left)
			}
		}
	default:
		return cfg, fmt.Errorf("--family %q: use drop, forward or all", f.family)
	}
	if f.testbed {
		l, err := compare.ParseLayout(f.layout)
		if err != nil {
			return cfg, fmt.Errorf("--layout: %w", err)
		}
		cfg.Layout = l
	}
	if f.queues != "" {
		if cfg.InterfaceQueues, err = cpuset.ParseList(f.queues, "queue"); err != nil {
			return cfg, fmt.Errorf("-q: %w", err)
		}
	}
	if cfg.GenCPUs, cfg.DUTCPUs, err = bedCPUs(f.genCPUs, f.dutCPUs); err != nil {
		return cfg, err
	}
	cfg.Progress = progressLines(cmd, "compare", f.quiet)
	if remote {
		// runCompare reaches the DUT and finds its xdpeng.
		if cfg.Remote, err = f.dut.config(); err != nil {
			return cfg, err
		}
	}
	if err := cfg.Check(); err != nil {
		if errors.Is(err, kern.ErrNoLoadBytes) {
			err = fmt.Errorf("--load-mode load-bytes: %w: use --load-mode dpa (direct packet access)", err)
		}
		return cfg, err
	}
	return cfg, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// runCompare runs cfg for the command cmd (compare or demo) and prints the
// result: the table and chart, or JSON, or CSV; with dut given it first
// reaches the DUT. It fails if a path failed, after printing what was
// measured. Stopped by Ctrl-C or SIGTERM, it prints the rows that finished,
// marked as interrupted.
func runCompare(cmd *cobra.Command, cfg compare.Config, dut *dutFlags, asJSON, asCSV, explain bool) error {
	out := cmd.OutOrStdout()
	ctx, stop, err := dut.startMeasuring(cmd, cfg.Remote, cfg.Progress)
	if err != nil {
		return err
	}
	defer stop()
	cfg.NAPIGuard = startNAPIGuard
	res, err := compare.Run(ctx, cfg)
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, compare.ErrDefaultRoute) {
			return fmt.Errorf("%w: measure another interface (a test bed: --testbed), or pass --force if you mean it", err)
		}
		if ctx.Err() == nil || len(res.Rows) == 0 {
			return measureErr(ctx, err)
		}
	}
	switch {
	case asJSON:
		if err := compare.WriteJSON(out, &res); err != nil {
			return err
		}
	case asCSV:
		if err := compare.WriteCSV(out, &res); err != nil {
			return err
		}
	default:
		compare.WriteTable(out, &res)
		fmt.Fprintln(out)
		compare.WriteChart(out, &res)
		if explain {
			fmt.Fprint(out, howToRead)
		}
	}
	if err != nil {
		return stoppedAfter(cmd, err, len(res.Rows), len(res.Rows)-len(res.Failed()), "row", res.Unfinished)
	}
	if bad := res.Failed(); len(bad) > 0 {
		return fmt.Errorf("%d path(s) failed: %s", len(bad), strings.Join(bad, ", "))
	}
	return nil
}

// interrupted is returned when Ctrl-C or SIGTERM stopped a comparison or a
// latency run; by then every program, socket and test bed it made has been
// removed.
type interrupted struct{ err error }

func (e interrupted) Error() string {
	msg := "interrupted; everything the run set up has been removed"
	if !errors.Is(e.err, context.Canceled) {
		msg += " (" + e.err.Error() + ")"
	}
	return msg
}

// ExitCode is the shell's code for a process ended by SIGINT.
func (interrupted) ExitCode() int { return 130 }
