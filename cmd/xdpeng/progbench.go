package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xdpeng/xdpeng/cmd/internal/privilege"
	"github.com/xdpeng/xdpeng/internal/cpuset"
	"github.com/xdpeng/xdpeng/internal/lab/kern"
	"github.com/xdpeng/xdpeng/internal/lab/progbench"
)

func init() { addCommand(newProgbenchCmd()) }

func newProgbenchCmd() *cobra.Command {
	var (
		programs []string
		sizes    []int
		repeat   int
		rounds   int
		cpu      int
		asJSON   bool
		ops      []string
		lb       bool
	)
	cmd := &cobra.Command{
		Use:   "progbench",
		Short: "Nanoseconds per packet of each BPF program (BPF_PROG_TEST_RUN)",
		Long: `progbench runs each of xdpeng's BPF programs on one frame --repeat times in the
kernel (BPF_PROG_TEST_RUN) and reports the time per run: the program's own cost,
without driver, device or cache misses. Each call is timed from userspace around
the system call, which over 10^7 runs reads to a tenth of a nanosecond; the
kernel's own figure, whole nanoseconds per run, is shown beside it. Each figure
is the median of --rounds measurements, taken round-robin over the programs and
sizes so that all see the machine alike; "quiet" is the lower quartile of the
rounds. A program's cost over XDP_DROP is the difference of the quiet figures:
on a VM a noisy phase stretches every run, the costlier ones most, so the quiet
rounds are the program's own cost. The frame is UDP over IPv4 to port 9999.

Programs: ` + strings.Join(progbench.Programs, ", ") + `
xsk-redirect is the AF_XDP steering program as deployed before sockets bind
(empty XSKMAP: frames fall back to XDP_PASS); drop, pass, tx and tc-drop are
measured without counters, drop-counters with them.

--packet-ops measures drop, drop-counters, pass and tx once per packet
operation, xdp-bench's -p (what the program does to each frame before its
verdict: no-touch, read-data, parse-ip, swap-macs; xdpeng kern -p), and
--load-bytes each that reads the frame also through bpf_xdp_load_bytes
(xdp-bench's -l load-bytes): what touching the packet costs, in ns.`,
		Example: `  sudo xdpeng progbench
  sudo xdpeng progbench --programs drop,xsk-redirect --sizes 64 --repeat 10000000
  sudo xdpeng progbench --programs drop,tx --packet-ops no-touch,read-data,parse-ip,swap-macs --load-bytes
  sudo xdpeng progbench --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("cpu") {
				// Pinned by default, away from CPU 0: an unpinned thread
				// that migrates mid-round spreads the figures.
				online, err := cpuset.Online()
				if err != nil {
					return err
				}
				cpu = online[len(online)-1]
			}
			cfg := progbench.Config{Programs: programs, Sizes: sizes, Repeat: repeat, Rounds: rounds, CPU: cpu, PacketOps: ops, LoadBytes: lb}
			if err := cfg.Validate(); err != nil {
				return err
			}
			if err := needRoot(typed(cmd), privilege.BPF); err != nil {
				return err
			}
			if lb {
				if err := kern.HaveLoadBytes(); errors.Is(err, kern.ErrNoLoadBytes) {
					return fmt.Errorf("--load-bytes: %w: measure the operations with direct packet access alone (leave out --load-bytes)", err)
				}
			}
			ctx, cancel := signalContext()
			defer cancel()
			w := cmd.OutOrStdout()
			width := 22
			for _, l := range cfg.Labels() {
				width = max(width, len(l))
			}
			if !asJSON {
				fmt.Fprintf(w, "BPF_PROG_TEST_RUN, %d runs x %d rounds (median), CPU %s; ns per run timed from userspace, the kernel's whole ns beside\n", cfg.Repeat, cfg.Rounds, cpuLabel(cpu))
				fmt.Fprintf(w, "%-*s %6s %8s %7s %7s %7s  %s\n", width, "program", "size", "ns/run", "quiet", "kernel", "quiet", "rounds")
			}
			results, err := progbench.Run(ctx, cfg, func(r progbench.Result) {
				if asJSON {
					writeJSON(w, struct {
						Type string `json:"type"`
						progbench.Result
					}{"result", r})
					return
				}
				rs := make([]string, len(r.UserRounds))
				for i, v := range r.UserRounds {
					rs[i] = strconv.FormatFloat(v, 'f', 1, 64)
				}
				fmt.Fprintf(w, "%-*s %6d %8.1f %7.1f %7.1f %7.0f  %s\n", width, r.Label(), r.Size, r.Ns, r.QuietNs, r.KernelNs, r.KernelQuietNs, strings.Join(rs, " "))
			})
			if err == nil {
				if asJSON {
					for _, d := range progbench.OverDrop(results) {
						writeJSON(w, struct {
							Type string `json:"type"`
							progbench.Delta
						}{"over_drop", d})
					}
				} else {
					printOverDrop(w, results, width)
				}
			}
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringSliceVar(&programs, "programs", nil, "programs to measure (default all): "+strings.Join(progbench.Programs, ","))
	fs.IntSliceVar(&sizes, "sizes", []int{64, 1500}, "frame sizes in bytes, without FCS")
	fs.IntVar(&repeat, "repeat", progbench.DefaultRepeat, "runs per measurement")
	fs.IntVar(&rounds, "rounds", 5, "measurements per program and size; the median is shown")
	fs.IntVar(&cpu, "cpu", -1, "pin the measuring thread to this CPU, -1 not to pin")
	fs.Lookup("cpu").DefValue = "the last online CPU"
	fs.StringSliceVar(&ops, "packet-ops", nil, "measure drop, drop-counters, pass and tx with each of these packet operations (xdp-bench's -p): no-touch, read-data, parse-ip, swap-macs (default: each program's own, no-touch; swap-macs for tx)")
	fs.BoolVar(&lb, "load-bytes", false, "with --packet-ops: each operation that reads the frame also through bpf_xdp_load_bytes (xdp-bench's -l load-bytes)")
	fs.BoolVar(&asJSON, "json", false, `one JSON object per program and size ("type": "result"), then one per program and size for its cost over drop ("type": "over_drop")`)
	return cmd
}

func cpuLabel(cpu int) string {
	if cpu < 0 {
		return "not pinned"
	}
	return strconv.Itoa(cpu)
}

// printOverDrop prints what each program costs over a bare XDP_DROP at the
// same frame size: the difference of their lower quartiles.
func printOverDrop(w io.Writer, results []progbench.Result, width int) {
	ds := progbench.OverDrop(results)
	if len(ds) == 0 {
		return
	}
	fmt.Fprintf(w, "\nover a bare XDP_DROP at the same size (quiet - quiet; the kernel's whole ns beside):\n")
	for _, d := range ds {
		fmt.Fprintf(w, "%-*s %6d %+8.1f ns %+7.0f ns\n", width, d.Label(), d.Size, d.Ns, d.KernelNs)
	}
}
