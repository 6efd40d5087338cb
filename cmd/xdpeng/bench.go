package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/xdpeng/xdpeng/internal/lab/bench"
	"github.com/xdpeng/xdpeng/internal/lab/compare"
)

func init() { addCommand(newBenchCmd()) }

func newBenchCmd() *cobra.Command {
	var (
		runs      int
		duration  time.Duration
		scenarios string
		asJSON    bool
		peers     string
		dut       dutFlags
	)
	c := &cobra.Command{
		Use:   "bench",
		Short: "Measure the performance targets: compare in layouts A, B, forwarding, 1-4 queues and 1500 B, medians and ratios",
		Long: `bench runs xdpeng compare on its own test beds in each layout the performance
targets are set in, --runs times each, and prints the median of every path and
the ratios between paths measured in the same run (xdpeng's engine against the
peers a user would pick instead: xdpsock, xdp-bench and xdp-trafficgen where found
in --peers DIR or PATH, DPDK's AF_XDP driver where dpdk-testpmd is
installed, asavie/xdp, and XDP_DROP as the kernel's bound), with the command
and CPU placement of each scenario, then runs progbench (XDP_DROP and the
steering program) for the steering program's target. It takes several minutes.

In layout A the generator and the DUT's softirq keep CPU 0 busy, so 1000/Mpps
is CPU 0's time per frame; bench prints it for each drop path and its excess
over xdp-drop (and 1500-byte over 64-byte xsk-drop): what steering a frame to
userspace costs the kernel, without the generator's share.

In layout B the generator is paced to 1 Mpps, below what every receiver there
takes at full load, and ns/pkt is mostly the DUT's CPU's time per frame: its
threaded NAPI (veth's XDP, the copy into the UMEM, returning the generator's
memory) and the receiver. At full load
(B-full) the DUT's CPU frees the generator's frames into its page pool while
the generator's CPU frees those the DUT's veth refused, and the two contend for
the pool's ring lock: B-full measures that lock as much as the receiver.

Scenarios (for CPUs 0 and 1):
  A       generator + DUT softirq on CPU 0, receiver on CPU 1: xdp-drop, xsk-drop,
          asavie-drop, dpdk-af-xdp, dpdk-af-xdp-nobusy, xdpsock-drop,
          xdp-bench-xsk-drop
  B       generator on CPU 0 at 1 Mpps, threaded NAPI and receiver on CPU 1:
          xdp-drop, xsk-drop, xsk-drop-busy-poll, asavie-drop, dpdk-af-xdp,
          dpdk-af-xdp-nobusy
  B-full  as B at full load: xdp-drop (the generator's rate), xdp-trafficgen-udp
          (xdp-trafficgen's into the same XDP_DROP), xsk-drop, and
          the peers' poll modes: xdpsock-drop-poll, xdpsock-drop-busy-poll,
          xdp-bench-xsk-drop-poll, xdp-bench-xsk-drop
  L       as A, sending back or forwarding: xdp-tx, xsk-l2fwd, dpdk-l2fwd,
          dpdk-l2fwd-nobusy, xdpsock-l2fwd, xdp-bench-xsk-tx, xsk-fwd
  L-1M    as L at 1 Mpps: xsk-l2fwd, xdpsock-l2fwd, xdp-bench-xsk-tx
  L-rps   as L, what comes back received on the generator's CPU (RPS on the
          generator ends), not on the DUT's, which then pays for none of it
  1q      1 queue, generator, DUT softirq and worker all on CPU 0: xdp-drop,
          xsk-drop, asavie-drop (the unit 2q and 4q scale)
  2q      2 queues, generator, DUT softirq and a worker on each CPU: xdp-drop,
          xsk-drop, asavie-drop
  4q      4 queues on the 2 CPUs, two queues sharing each: xdp-drop, xsk-drop,
          asavie-drop
  A-1500  as A with 1500-byte frames: xdp-drop, xsk-drop, dpdk-af-xdp-nobusy
  S       the senders without live frames, one thread on CPU 0 into XDP_DROP
          (as A): xdp-drop with gen --method packet (64 copies), trafgen-udp
          (netsniff-ng's trafgen, where installed), and xsk-drop with it;
          a target sets its xdp-drop against what xsk-drop takes in A
  S-xsk   as S, xdp-drop with gen --method xsk (64 copies), trafgen-udp
  S-1, S-xsk-1
          as S and S-xsk with --copies 1: every frame made by the sender
  lat     as A, xdpeng latency at 100000 pps: xdp-tx, xsk-l2fwd (adaptive); the
          target is XDP_TX's median p50 delay below xsk-l2fwd's

With --dut (see compare --help) the scenarios that are not test-bed layouts
(A, L, A-1500, S, S-xsk, S-1, S-xsk-1, lat) run their paths that run there on
the DUT, the generator here; B, B-full, L-rps, 1q, 2q, 4q and progbench (this
host's CPU) are left out.

The peer paths (see compare --help) run each tool as its users do, counted at
the device; each is ended with SIGINT, then SIGKILL after 5 s, and whatever XDP
or tc program it left on the bed's device is removed and said in the notes.
Where a tool is absent its rows and targets are left out, with a note.`,
		Example: `  sudo xdpeng bench
  sudo xdpeng bench --runs 5 -d 5s --json > bench.json
  sudo xdpeng bench --scenarios B
  sudo xdpeng bench --peers ./peers/bin --scenarios A,L,L-1M,B-full
  sudo xdpeng bench --scenarios L,L-rps --runs 5
  sudo xdpeng bench --dut ssh://root@dut.lab --dut-if eth1 --gen-if eth1 --runs 5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runs < 1 {
				return fmt.Errorf("--runs %d: need at least 1", runs)
			}
			var names []string
			if scenarios != "" {
				known := map[string]bool{}
				var all []string
				for _, s := range bench.Scenarios() {
					known[s.Name] = true
					all = append(all, s.Name)
				}
				for _, n := range strings.Split(scenarios, ",") {
					if !known[n] {
						return fmt.Errorf("unknown scenario %q: use %s", n, strings.Join(all, ", "))
					}
					names = append(names, n)
				}
			}
			if err := dut.check(); err != nil {
				return err
			}
			progress := func(s string) { fmt.Fprintln(os.Stderr, s) }
			if peers != "" {
				if dut.given() {
					return errors.New("--peers is for the test beds: the peer tools do not run on a DUT on another host")
				}
				if st, err := os.Stat(peers); err != nil || !st.IsDir() {
					return fmt.Errorf("--peers %s: not a directory: give the directory that holds xdpsock and xdp-bench", peers)
				}
			}
			bc := bench.Config{Runs: runs, Duration: duration, Scenarios: names, Progress: progress, Peers: peers}
			if dut.given() {
				var err error
				if bc.Remote, err = dut.config(); err != nil {
					return err
				}
			}
			ctx, stop, err := dut.startMeasuring(cmd, bc.Remote, progress)
			if err != nil {
				return err
			}
			defer stop()
			res, err := bench.Run(ctx, bc)
			if err != nil && (ctx.Err() == nil || len(res.Paths) == 0) {
				return measureErr(ctx, err)
			}
			if asJSON {
				if err := bench.WriteJSON(cmd.OutOrStdout(), &res); err != nil {
					return err
				}
			} else {
				printBench(cmd.OutOrStdout(), res)
			}
			if err != nil {
				return stoppedAfter(cmd, err, len(res.Scenarios), len(res.Scenarios), "scenario", res.Unfinished)
			}
			return nil
		},
	}
	f := c.Flags()
	f.IntVar(&runs, "runs", 3, "runs of each scenario (the median is kept)")
	secondsVarP(f, &duration, "duration", "d", 3*time.Second, "measurement time per path and run (seconds, or a duration like 500ms)")
	f.StringVar(&scenarios, "scenarios", "", "scenarios to run, e.g. A,B (default: all)")
	f.StringVar(&peers, "peers", "", "a directory to look for the peer tools (xdpsock, xdp-bench, xdp-trafficgen) in before PATH")
	f.BoolVar(&asJSON, "json", false, "print JSON lines: a setup line, a row line per scenario and path, a summary line")
	dut.register(f)
	return c
}

// printEnv prints an environment's header (labenv.Env.Header), each line
// indented.
func printEnv(w io.Writer, header string) {
	for _, l := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

func printBench(w io.Writer, r bench.Result) {
	if r.Interrupted() {
		fmt.Fprintf(w, "INTERRUPTED (Ctrl-C or SIGTERM): the %d scenario(s) below finished; not finished: %s; no target judged\n",
			len(r.Scenarios), strings.Join(r.Unfinished, ", "))
	}
	fmt.Fprintf(w, "xdpeng bench: %d runs of %.1f s per path; medians\n", r.Runs, r.DurationS)
	printEnv(w, r.Env.Header())
	for _, sc := range r.Scenarios {
		fmt.Fprintf(w, "\nscenario %s: %s\n  %s\n", sc.Name, sc.Describe, sc.Command)
		for _, p := range r.Paths {
			if p.Scenario == sc.Name {
				fmt.Fprintf(w, "  %s; driver %s, %d queue(s), %d-byte frames\n", p.Env.Layout, p.Env.Driver, p.Env.Queues, p.Env.FrameSize)
				break
			}
		}
		if sc.Latency {
			fmt.Fprintf(w, "  %-14s %10s %10s %8s  %s\n", "path", "p50", "p99", "lost", "runs (p50)")
			for _, p := range r.Paths {
				if p.Scenario != sc.Name {
					continue
				}
				var rs []string
				for _, v := range p.P50Runs {
					rs = append(rs, compare.NsText(v))
				}
				fmt.Fprintf(w, "  %-14s %10s %10s %8d  %s\n", p.Path, compare.NsText(p.P50Ns), compare.NsText(p.P99Ns), p.Lost, strings.Join(rs, " "))
			}
			continue
		}
		extra := ""
		if sc.Queues > 1 {
			extra = fmt.Sprintf(" %9s", "per queue")
		}
		fmt.Fprintf(w, "  %-23s %8s %8s %8s %7s%s  %s\n", "path", "Mpps", "offered", "ns/pkt", "loss%", extra, "runs (Mpps)")
		for _, p := range r.Paths {
			if p.Scenario != sc.Name {
				continue
			}
			extra := ""
			if sc.Queues > 1 {
				extra = fmt.Sprintf(" %9.3f", p.PerQueueMpps)
			}
			var rs []string
			for _, m := range p.Mpps {
				rs = append(rs, fmt.Sprintf("%.2f", m))
			}
			fmt.Fprintf(w, "  %-23s %8.3f %8.3f %8.1f %7.2f%s  %s\n", p.Path, p.MedianMpps, p.OfferedMpps, p.NsPerPacket, p.LossPct, extra, strings.Join(rs, " "))
		}
		for _, p := range r.Paths {
			if p.Scenario == sc.Name && p.Unexplained != 0 {
				fmt.Fprintf(w, "  %s: %d frames over the runs that no counter explains: sent != received + dropped\n", p.Path, p.Unexplained)
			}
		}
		for _, p := range r.Paths {
			if p.Scenario == sc.Name {
				for i, c := range p.Cleanup {
					fmt.Fprintf(w, "  %s, run %d: %s\n", p.Path, i+1, c)
				}
			}
		}
	}
	if len(r.Costs) > 0 {
		fmt.Fprintf(w, "\nns per frame on CPU 0 in layout A (1000/Mpps: the generator and the DUT's softirq keep CPU 0 busy;\n"+
			"the difference to xdp-drop leaves out the generator's share)\n")
		for _, c := range r.Costs {
			if c.Path == c.OverPath && c.Scenario == c.OverScenario {
				fmt.Fprintf(w, "  %-7s %-18s %7.1f ns  (the generator and XDP_DROP)\n", c.Scenario, c.Path, c.Ns)
				continue
			}
			var notes []string
			if c.WithReceiver {
				notes = append(notes, "its receiver on CPU 0 too")
			}
			if c.LossPct > 5 {
				notes = append(notes, fmt.Sprintf("lost %.1f%%: above what CPU 0 spent", c.LossPct))
			}
			note := ""
			if len(notes) > 0 {
				note = "  (" + strings.Join(notes, "; ") + ")"
			}
			fmt.Fprintf(w, "  %-7s %-18s %7.1f ns  %+7.1f ns over %s %s%s\n", c.Scenario, c.Path, c.Ns, c.Over, c.OverPath, c.OverScenario, note)
		}
	}
	if len(r.ProgBench) > 0 {
		fmt.Fprintf(w, "\nprogbench (64 B):")
		for _, p := range r.ProgBench {
			fmt.Fprintf(w, " %s %.1f ns (kernel %.0f)", p.Program, p.Ns, p.KernelNs)
		}
		for _, d := range r.OverDrop {
			fmt.Fprintf(w, "; %s over drop %+.1f ns (lower quartiles)", d.Program, d.Ns)
		}
		fmt.Fprintln(w)
	}
	if len(r.Notes) > 0 {
		fmt.Fprintln(w, "\nleft out:")
		for _, n := range r.Notes {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
	if r.Interrupted() {
		return
	}
	fmt.Fprintf(w, "\ntargets (measured in this run; the reference is the figure the target was set against, not measured here)\n")
	width := 0
	for _, t := range r.Targets {
		width = max(width, len(t.Name))
	}
	for _, t := range r.Targets {
		mark, cmp := "met    ", ">="
		if !t.Met {
			mark = "NOT MET"
		}
		if t.AtMost {
			cmp = "<="
		}
		v := fmt.Sprintf("%.3f", t.Value)
		if t.Unit == "ns" {
			v = fmt.Sprintf("%.1f ns", t.Value)
		} else if t.Unit == "Mpps" {
			v += " Mpps"
		}
		fmt.Fprintf(w, "  %s %-*s %-12s goal %s %-5s  (%s; reference: %s)\n", mark, width, t.Name, v, cmp,
			strconv.FormatFloat(t.Goal, 'f', -1, 64), t.Measured, t.Reference)
	}
}
