package main

// xdpeng demo: a test bed, traffic, the comparison of every path, and the
// bed removed again, in one command.

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/xdpeng/xdpeng/internal/lab/compare"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
)

func init() { addCommand(newDemoCmd()) }

// demoPerPath keeps the whole demo (13 paths, set-up and drain included)
// well under a minute and a half.
const demoPerPath = 3 * time.Second

func newDemoCmd() *cobra.Command {
	var (
		duration time.Duration
		layout   string
		method   string
		quiet    bool
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Make a test bed, compare every path on the same traffic, print the table, remove the bed",
		Long: `demo makes a veth test bed, drives xdpeng's generator into it (live frames
where the kernel grants them, else AF_XDP transmit through a relay that the
kernel copies each frame from: see xdpeng gen --help; it says which before
it starts), runs every path of the drop and forward families against the same
offered load (about 3 seconds each, under a minute and a half in all), prints
the table and a bar chart with a short guide to reading them, and removes the
bed. Ctrl-C or SIGTERM stops it and removes everything it set up.`,
		Example: `  sudo xdpeng demo
  sudo make demo`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := compare.ParseLayout(layout)
			if err != nil {
				return err
			}
			m, err := gen.ParseMethod(method)
			if err != nil {
				return fmt.Errorf("--gen-method: %w", err)
			}
			cfg := compare.Config{Testbed: true, Layout: l, Duration: duration, FrameSize: 64, GenMethod: m}
			for _, p := range compare.Paths("") {
				cfg.Paths = append(cfg.Paths, p.Name)
			}
			cfg.Progress = progressLines(cmd, "demo", quiet)
			return runCompare(cmd, cfg, nil, false, false, true)
		},
	}
	secondsVarP(cmd.Flags(), &duration, "duration", "d", demoPerPath, "measurement time per path (seconds, or a duration like 500ms)")
	cmd.Flags().StringVar(&layout, "layout", "A", "test bed layout, A or B (see xdpeng compare --help)")
	cmd.Flags().StringVar(&method, "gen-method", "auto", "how the generator sends: live, xsk, packet or auto (see xdpeng gen --help)")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "no progress lines on stderr")
	return cmd
}

// howToRead follows the demo's table.
const howToRead = `
How to read this:
  - Mpps is what each path took in per second from the same generator, measured
    side by side in this run; longer bars are faster. The in-kernel XDP drop is
    the ceiling: nothing is done per frame. Generic XDP and tc pay for an skb per
    frame; AF_XDP pays for a copy into the UMEM (veth has no zero-copy) and a
    trip to userspace; AF_PACKET pays for an skb and the stack.
  - ns/pkt is CPU time on the receiving side per frame received: lower is
    cheaper. A receiver that polls can show high CPU % with few frames.
  - In layout A the generator and the DUT's softirq share CPU 0, so for the
    in-kernel paths the offered load follows the receiver and "dropped" stays
    near zero; a userspace receiver on CPU 1 that falls behind shows it as
    socket drops. Use --layout B to put all of the DUT's receive work on CPU 1.
  - ns/pkt counts all busy time of the receiver CPU: other work running there
    at the same time (another test, a build) inflates it, as it lowers Mpps.
  - Every drop is explained by a counter (lost ...): sent = received + dropped
    on every row. compare reads the counters once they have stopped moving
    after the generator stopped, so no frame is in flight and "unexplained"
    is 0; anything else is a frame nothing counted.
`
