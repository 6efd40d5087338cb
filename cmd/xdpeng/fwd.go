package main

// xdpeng fwd: userspace forwarding between two devices
// (engine.Config.Outputs, handler.Fwd), flags and printing.

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/spf13/cobra"

	"github.com/xdpeng/xdpeng/cmd/internal/metrics"
	"github.com/xdpeng/xdpeng/cmd/internal/privilege"
	"github.com/xdpeng/xdpeng/cmd/internal/units"
	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/handler"
)

func init() { addCommand(newFwdCmd()) }

type fwdFlags struct {
	xskFlags
	out     string
	dstMAC  string
	copyOut bool
}

func newFwdCmd() *cobra.Command {
	f := &fwdFlags{}
	c := &cobra.Command{
		Use:   "fwd -i IN -o OUT [flags]",
		Short: "Forward frames from one device to another through AF_XDP sockets",
		Long: `fwd receives on every queue of IN through AF_XDP sockets (steered by an XDP
program, as rxdrop) and sends each frame out of the same queue number of OUT,
with its destination MAC rewritten: --dst-mac, or on a veth OUT's peer's
address. OUT needs at least as many queues as the highest IN queue plus one.

By default OUT's sockets share IN's UMEMs (XDP_SHARED_UMEM across devices,
Linux 5.10+): frames move without a copy, and OUT's completions go straight back
to IN's fill ring. With --copy-out, or if the kernel refuses to share, every
frame is copied into a UMEM of OUT's own; the header and the JSON say which
("umem": "shared" or "copy"). (--shared-umem, as in rxdrop, is another thing:
one UMEM for all of IN's queues.)

Accounting: every frame received on IN is transmitted on OUT, or counted as
dropped (handler verdict) or tx_ring_full (OUT's ring or UMEM had no room).`,
		Example: `  ip netns exec xdpeng-dut xdpeng fwd -i dut0 -o dut1 -d 10s
  xdpeng fwd -i dut0 -o dut1 --copy-out --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runFwd(cmd, f) },
	}
	fs := c.Flags()
	c.Long += "\n\n" + fcsNote
	f.register(fs)
	fs.StringVarP(&f.out, "out", "o", "", "device to send out of (required)")
	fs.StringVarP(&f.dstMAC, "dst-mac", "G", "", "destination MAC of forwarded frames, as gen's and txonly's -G (default: OUT's veth peer's)")
	fs.BoolVar(&f.copyOut, "copy-out", false, "copy each frame into a UMEM of OUT's own instead of sending it from IN's UMEM")
	// The old name, until the next release.
	fs.BoolVar(&f.copyOut, "no-shared-umem", false, "")
	_ = fs.MarkDeprecated("no-shared-umem", "use --copy-out")
	return c
}

func runFwd(cmd *cobra.Command, f *fwdFlags) error {
	cfg, err := f.config()
	if err != nil {
		return err
	}
	if f.out == "" {
		return cliFlagError{errors.New("no output interface given: use -o DEV (fwd sends out of it what it receives on -i)")}
	}
	if f.out == f.iface {
		return fmt.Errorf("input and output are both %s: forwarding needs two devices (to send frames back out of the queue they came in on, use l2fwd)", f.out)
	}
	if f.copyOut && f.sharedUmem {
		return fmt.Errorf("--shared-umem (one UMEM for all of IN's queues) and --copy-out (OUT copies into UMEMs of its own) exclude each other here: give one")
	}
	cfg.Outputs = []engine.Output{{Interface: f.out, Copy: f.copyOut}}
	var dstMAC net.HardwareAddr
	if f.dstMAC != "" {
		if dstMAC, err = parseMAC(f.dstMAC); err != nil {
			return fmt.Errorf("--dst-mac: %w", err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := needRoot(typed(cmd), privilege.AFXDP); err != nil {
		return err
	}
	if dstMAC == nil {
		if dstMAC, err = engine.NextHopMAC(f.out, netip.Addr{}); err != nil {
			if de := (*engine.DeviceError)(nil); errors.As(err, &de) {
				return advise(fmt.Errorf("-o: %w", err))
			}
			return fmt.Errorf("%w: give it with --dst-mac", err)
		}
	}
	fwd := &handler.Fwd{Dest: engine.ToOutput(0), DstMAC: dstMAC}
	cfg.Handler = func(int) engine.Handler { h := *fwd; return &h }
	eng, links, w, done, err := openEngine(&f.xskFlags, cfg)
	if err != nil {
		return err
	}
	defer done()
	ecfg := eng.Config()
	out := eng.Outputs()[0]
	if err := w.serve(&metrics.Engine{Mode: "fwd", Interface: ecfg.Interface, Stats: eng.Stats, Output: out.Device.Name,
		OutputStats: func() (engine.SocketStats, error) { return eng.OutputStats(out.Port) }}); err != nil {
		return err
	}
	defer w.stopServing()
	umem, why := "shared", out.CopyReason
	if out.Copy {
		umem = "copy"
	}
	p := &xskPrinter{w: cmd.OutOrStdout(), mode: "fwd", f: &f.xskFlags, eng: eng, run: eng, links: links, watch: w, summaryOf: fwdSummary{}}
	if !f.json {
		fmt.Fprintf(p.w, "fwd %s (%s) -> %s (%s): %s, XDP %s, %s, umem %s, dst MAC %s, batch %d, rings fill/comp/rx/tx %d/%d/%d/%d, need_wakeup %v, wait %s\n",
			ecfg.Interface, driverLabel(eng.Device().Driver), out.Device.Name, driverLabel(out.Device.Driver), queuesOnCPUs(ecfg.Queues, ecfg.CPUs),
			ecfg.XDPMode, bindModeName(eng.ZeroCopy()), umem, dstMAC, ecfg.Batch,
			ecfg.FillSize, ecfg.CompletionSize, ecfg.RxSize, ecfg.TxSize, ecfg.NeedWakeup, ecfg.Wait)
		fmt.Fprint(p.w, umemLine(eng.Umem()))
		if ecfg.Wait == engine.WaitBusyPoll {
			fmt.Fprint(p.w, busyPollNote(ecfg.Interface, eng.Device().Driver))
		}
		if why != nil {
			fmt.Fprintf(p.w, "  (the kernel refused to share the UMEM with %s: %v; copying instead)\n", out.Device.Name, why)
		}
		w.header(p.w)
	}
	last, runErr := runEngine(eng, &f.xskFlags, p)
	if eng.Started().IsZero() {
		return runErr // Run never started: there are no totals to print
	}
	runErr = errors.Join(runErr, w.finish(last.Total().RxPackets))
	outXDP, serr := eng.OutputStats(out.Port)
	if serr != nil && runErr == nil {
		runErr = serr
	}
	t := last.Total()
	dur := last.Time.Sub(eng.Started()).Seconds()
	sum := fwdSummary{
		Type: "summary", Mode: "fwd", In: ecfg.Interface, Out: out.Device.Name, Queues: ecfg.Queues, Umem: umem,
		XDPMode: ecfg.XDPMode.String(), ZeroCopy: eng.ZeroCopy(), Batch: ecfg.Batch, FrameSize: ecfg.FrameSize,
		DstMAC: dstMAC.String(), DurationS: round3(dur),
		RxPackets: t.RxPackets, RxBytes: t.RxBytes, TxPackets: t.TxPackets, TxBytes: t.TxBytes,
		Drops: map[string]uint64{
			"dropped": t.Dropped, "tx_ring_full": t.TxRingFull,
			"in_rx_dropped": t.XDP.RxDropped, "in_rx_ring_full": t.XDP.RxRingFull,
			"out_tx_invalid_descs": outXDP.TxInvalidDescs,
		},
		PerQueue: queuesJSON(last.Queues), InXDPStats: xdpStatsOf(t.XDP, ecfg), OutXDPStats: outXDP,
		App:       map[string]uint64{"rx_wakeups": t.RxWakeups, "tx_wakeups": t.TxWakeups, "polls": t.Polls, "batches": t.Batches},
		watchJSON: w.summaryJSON(),
	}
	if why != nil {
		sum.UmemNote = why.Error()
	}
	if dur > 0 {
		sum.RxPPS, sum.TxPPS = float64(t.RxPackets)/dur, float64(t.TxPackets)/dur
	}
	if f.json {
		writeJSON(p.w, sum)
		return runErr
	}
	fmt.Fprintf(p.w, "\nfwd %s -> %s (umem %s): %.2f s, rx %d packets (%s), tx %d packets (%s), dropped %d, tx ring full %d\n",
		sum.In, sum.Out, umem, dur, t.RxPackets, units.PPS(sum.RxPPS), t.TxPackets, units.PPS(sum.TxPPS), t.Dropped, t.TxRingFull)
	for _, q := range last.Queues {
		fmt.Fprintf(p.w, "  queue %d (CPU %d): rx %d, tx %d, dropped %d, tx ring full %d\n", q.Queue, q.CPU, q.RxPackets, q.TxPackets, q.Dropped, q.TxRingFull)
	}
	x := t.XDP
	fmt.Fprintf(p.w, "  xdp stats %s: rx_dropped %s, rx_invalid_descs %d, rx_ring_full %d, rx_fill_ring_empty_descs %d\n",
		sum.In, rxDroppedText(sum.InXDPStats), x.RxInvalidDescs, x.RxRingFull, x.RxFillRingEmptyDescs)
	fmt.Fprintf(p.w, "  xdp stats %s: tx_invalid_descs %d, tx_ring_empty_descs %d\n", sum.Out, outXDP.TxInvalidDescs, outXDP.TxRingEmptyDescs)
	fmt.Fprintf(p.w, "  app stats: rx_wakeups %d, tx_wakeups %d, polls %d, batches %d\n", t.RxWakeups, t.TxWakeups, t.Polls, t.Batches)
	w.summaryText(p.w)
	return runErr
}

// fwdSummary is fwd's last JSON line: rx counts are IN's, tx counts OUT's.
type fwdSummary struct {
	Type        string             `json:"type"`
	Mode        string             `json:"mode"`
	In          string             `json:"in"`
	Out         string             `json:"out"`
	Queues      []int              `json:"queues"`
	Umem        string             `json:"umem"`
	UmemNote    string             `json:"umem_note,omitempty"`
	XDPMode     string             `json:"xdp_mode"`
	ZeroCopy    bool               `json:"zero_copy"`
	Batch       int                `json:"batch"`
	FrameSize   uint32             `json:"umem_frame_size"`
	DstMAC      string             `json:"dst_mac"`
	DurationS   float64            `json:"duration_s"`
	RxPackets   uint64             `json:"rx_packets"`
	RxBytes     uint64             `json:"rx_bytes"`
	TxPackets   uint64             `json:"tx_packets"`
	TxBytes     uint64             `json:"tx_bytes"`
	RxPPS       float64            `json:"rx_pps"`
	TxPPS       float64            `json:"tx_pps"`
	Drops       map[string]uint64  `json:"drops"`
	PerQueue    []queueJSON        `json:"per_queue"`
	InXDPStats  xdpStatsJSON       `json:"in_xdp_stats"`
	OutXDPStats engine.SocketStats `json:"out_xdp_stats"`
	App         map[string]uint64  `json:"app_stats"`
	watchJSON
}
