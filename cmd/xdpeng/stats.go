package main

// xdpeng stats: a device's own counters, polled (ethtool -S and the netdev
// statistics), as ethtool_stats.pl prints them.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/xdpeng/xdpeng/cmd/internal/metrics"
	"github.com/xdpeng/xdpeng/internal/lab/cpustat"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

func init() { addCommand(newStatsCmd()) }

type statsFlags struct {
	ifaces   []string
	duration time.Duration
	interval time.Duration
	json     bool
	cpu      bool
	watch    watchFlags // --metrics
}

func newStatsCmd() *cobra.Command {
	f := &statsFlags{}
	cmd := &cobra.Command{
		Use:   "stats -i DEV[,DEV...]",
		Short: "Print the per-second rate of every device counter that changed (ethtool -S and netdev statistics)",
		Long: `stats reads every counter of each device each interval: the driver's, what
ethtool -S prints (on a real NIC the per-queue and XDP counters: rx_xdp_drop,
rx_xdp_redirect, xdp_tx_err, ...; on a veth rx_queue_N_xdp_packets and the
like), and the kernel's netdev statistics (rtnl_link_stats64, ip -s link). It
prints the per-second rate of each one that changed, per device, as the
ethtool_stats.pl script does, and at the end how much each changed over the
whole run. With --cpu it also prints each CPU's busy share (/proc/stat: user,
system, irq and softirq time), which on a DUT says where its receive work ran.
It changes nothing and attaches nothing.`,
		Example: `  xdpeng stats -i eth1
  ip netns exec xdpeng-dut xdpeng stats -i dut0,dut1 -n 2
  xdpeng stats -i eth1 -d 60 --json
  xdpeng stats -i eth1 --cpu -n 0.5
  xdpeng stats -i eth1 --metrics 127.0.0.1:9101`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runStats(cmd, f) },
	}
	fs := cmd.Flags()
	fs.StringSliceVarP(&f.ifaces, "interface", "i", nil, "devices to read, comma-separated (required)")
	secondsVarP(fs, &f.duration, "duration", "d", 0, "run this long, then exit (seconds, or a duration like 500ms; default: until Ctrl-C)")
	intervalFlags(fs, &f.interval, "how often to read the counters")
	fs.BoolVar(&f.json, "json", false, "print one JSON object per line")
	fs.BoolVar(&f.cpu, "cpu", false, "also each CPU's busy share (from /proc/stat); JSON lines get cpu (percentages) and cpu_times (ticks since boot)")
	f.watch.registerMetrics(fs)
	return cmd
}

func runStats(cmd *cobra.Command, f *statsFlags) error {
	if len(f.ifaces) == 0 {
		return cliFlagError{errors.New("no interface given: use -i DEV (or -i DEV1,DEV2)")}
	}
	for i, name := range f.ifaces {
		if name == "" {
			return errors.New("-i: an empty interface name")
		}
		if slices.Contains(f.ifaces[:i], name) {
			return fmt.Errorf("-i %s: listed twice", name)
		}
	}
	if f.interval <= 0 {
		return fmt.Errorf("-n/--interval %v: must be positive", f.interval)
	}
	if f.duration < 0 {
		return fmt.Errorf("-d/--duration %v: must not be negative", f.duration)
	}
	if err := f.watch.check(); err != nil {
		return err
	}
	first, err := readStats(f.ifaces, f.cpu)
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	if f.duration > 0 {
		var c2 context.CancelFunc
		ctx, c2 = context.WithTimeout(ctx, f.duration)
		defer c2()
	}
	w, err := f.watch.startWatch(f.ifaces[0])
	if err != nil {
		return err
	}
	defer w.close()
	if err := w.serve(&metrics.Devices{Names: f.ifaces, Read: netdev.ReadDevStats}); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if !f.json {
		fmt.Fprintf(out, "stats of %s every %v: the counters that changed, per second; %s\n", strings.Join(f.ifaces, ", "), f.interval, howLong(f.duration))
		w.header(out)
	}
	tick := time.NewTicker(f.interval)
	defer tick.Stop()
	prev := first
	for {
		select {
		case <-ctx.Done():
			last, err := readStats(f.ifaces, f.cpu)
			if err != nil {
				return err
			}
			err = printStatsSummary(out, f.json, first, last)
			w.stopServing()
			return err
		case <-tick.C:
			cur, err := readStats(f.ifaces, f.cpu)
			if err != nil {
				return err
			}
			if err := printStatsInterval(out, f.json, first.devs[0].Time, prev, cur); err != nil {
				return err
			}
			prev = cur
		}
	}
}

// statsRead is one read of stats: every device's counters, and with --cpu
// the CPUs' times.
type statsRead struct {
	devs []netdev.DevStats
	cpu  cpustat.Stat // nil without --cpu
}

func readStats(names []string, cpu bool) (statsRead, error) {
	devs, err := readDevStats(names)
	if err != nil || !cpu {
		return statsRead{devs: devs}, err
	}
	c, err := cpustat.Read()
	return statsRead{devs: devs, cpu: c}, err
}

// cpuShares is each CPU's share of the time between two reads, by CPU
// number.
func cpuShares(prev, cur cpustat.Stat) []cpustat.Share {
	out := []cpustat.Share{}
	for _, c := range slices.Sorted(maps.Keys(cur)) {
		out = append(out, cpustat.ShareOf(c, cur[c].Sub(prev[c])))
	}
	return out
}

// cpuText is "cpu 0 12.5% (softirq 10.0%), cpu 1 100.0% (softirq 0.0%)".
func cpuText(shares []cpustat.Share) string {
	parts := make([]string, len(shares))
	for i, s := range shares {
		parts[i] = fmt.Sprintf("cpu %d %.1f%% (softirq %.1f%%)", s.CPU, s.Busy, s.SoftIRQ)
	}
	return strings.Join(parts, ", ")
}

// readDevStats reads the counters of every device, in the order given.
func readDevStats(names []string) ([]netdev.DevStats, error) {
	out := make([]netdev.DevStats, len(names))
	for i, n := range names {
		s, err := netdev.ReadDevStats(n)
		var nf *netdev.NoInterfaceError
		if errors.As(err, &nf) {
			return nil, fmt.Errorf("-i: %w (list them with: ip link)", err)
		}
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// devRatesJSON is one device's part of a stats line.
type devRatesJSON struct {
	Interface string               `json:"interface"`
	IntervalS float64              `json:"interval_s"`
	Ethtool   []netdev.CounterRate `json:"ethtool"`
	Netdev    []netdev.CounterRate `json:"netdev"`
}

// statsRates is what changed on each device from prev to cur.
func statsRates(prev, cur []netdev.DevStats) ([]devRatesJSON, error) {
	out := make([]devRatesJSON, len(cur))
	for i := range cur {
		r, err := cur[i].Since(prev[i])
		if err != nil {
			return nil, err
		}
		d := devRatesJSON{Interface: r.Name, IntervalS: round3(r.Interval.Seconds()), Ethtool: r.Ethtool, Netdev: r.Netdev}
		if d.Ethtool == nil {
			d.Ethtool = []netdev.CounterRate{}
		}
		if d.Netdev == nil {
			d.Netdev = []netdev.CounterRate{}
		}
		out[i] = d
	}
	return out, nil
}

// statsFields is the order of the keys of stats' JSON lines.
var statsFields = []string{"type", "mode", "duration_s", "devices", "cpu", "cpu_times"}

func printStatsInterval(w io.Writer, asJSON bool, start time.Time, prev, cur statsRead) error {
	rates, err := statsRates(prev.devs, cur.devs)
	if err != nil {
		return err
	}
	t := cur.devs[0].Time.Sub(start).Seconds()
	if asJSON {
		line := map[string]any{"type": "interval", "mode": "stats", "t": round3(t), "devices": rates}
		if cur.cpu != nil {
			line["cpu"] = cpuShares(prev.cpu, cur.cpu)
			line["cpu_times"] = cur.cpu
		}
		writeJSON(w, orderedLine{line, statsFields})
		return nil
	}
	for _, d := range rates {
		fmt.Fprintf(w, "[%7.2fs] %s: %d counters changed\n", t, d.Interface, len(d.Ethtool)+len(d.Netdev))
		printCounterRates(w, "ethtool", d.Ethtool, true)
		printCounterRates(w, "netdev", d.Netdev, true)
	}
	if cur.cpu != nil {
		fmt.Fprintf(w, "[%7.2fs] busy: %s\n", t, cpuText(cpuShares(prev.cpu, cur.cpu)))
	}
	return nil
}

// printCounterRates prints one line per counter: its rate (or, for the
// summary, its change over the run).
func printCounterRates(w io.Writer, source string, rs []netdev.CounterRate, perSecond bool) {
	for _, r := range rs {
		reset := ""
		if r.Reset {
			reset = " (the counter went down: reset, counted from 0)"
		}
		if perSecond {
			fmt.Fprintf(w, "%10s %-7s %-36s %14.0f/s%s\n", "", source, r.Name, r.PerSec, reset)
		} else {
			fmt.Fprintf(w, "  %-7s %-36s %16d (%.0f/s)%s\n", source, r.Name, r.Delta, r.PerSec, reset)
		}
	}
}

func printStatsSummary(w io.Writer, asJSON bool, first, last statsRead) error {
	rates, err := statsRates(first.devs, last.devs)
	if err != nil {
		return err
	}
	if asJSON {
		line := map[string]any{"type": "summary", "mode": "stats", "duration_s": round3(last.devs[0].Time.Sub(first.devs[0].Time).Seconds()), "devices": rates}
		if last.cpu != nil {
			line["cpu"] = cpuShares(first.cpu, last.cpu)
			line["cpu_times"] = last.cpu
		}
		writeJSON(w, orderedLine{line, statsFields})
		return nil
	}
	for _, d := range rates {
		fmt.Fprintf(w, "\n%s over %.2f s: %d counters changed\n", d.Interface, d.IntervalS, len(d.Ethtool)+len(d.Netdev))
		printCounterRates(w, "ethtool", d.Ethtool, false)
		printCounterRates(w, "netdev", d.Netdev, false)
	}
	if last.cpu != nil {
		fmt.Fprintf(w, "\nbusy over the run: %s\n", cpuText(cpuShares(first.cpu, last.cpu)))
	}
	return nil
}
