package main

// What the observability flags add to a long-running command: a Prometheus
// endpoint (--metrics), why XDP frames were lost (-e), softirq and interrupt
// rates (--irq) and a pcap or pcapng capture of the frames the workers see
// (-w). Each command registers the flags that apply to it, checks them with
// the rest of its flags, and runs an observe.Watcher beside its own loop;
// this file turns the flags into its Config, names the flag of what fails,
// and prints what it reads: lines in the intervals and the summary, fields
// in the JSON.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/xdpeng/xdpeng/cmd/internal/observe"
	"github.com/xdpeng/xdpeng/cmd/internal/pcap"
	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/internal/lab/irqstat"
	"github.com/xdpeng/xdpeng/internal/lab/xdperr"
)

// watchFlags are the observability flags; a command registers those that
// apply to it.
type watchFlags struct {
	metrics  string
	errors   bool
	irq      bool
	write    string
	snaplen  int
	capCount uint64

	fs *pflag.FlagSet
}

func (w *watchFlags) registerMetrics(fs *pflag.FlagSet) {
	w.fs = fs
	fs.StringVar(&w.metrics, "metrics", "", "serve Prometheus metrics at http://`ADDR`/metrics while the command runs, ADDR as HOST:PORT, or a port alone for this host's loopback (9100 or :9100 is 127.0.0.1:9100; 0.0.0.0:9100 is every address: anyone who reaches it reads the counters, unauthenticated)")
}

func (w *watchFlags) registerErrors(fs *pflag.FlagSet) {
	w.fs = fs
	fs.BoolVarP(&w.errors, "errors", "e", false, "say why XDP frames of the device were lost, from the xdp tracepoints: exceptions by action, redirect errors by errno, devmap transmit drops (xdp-bench -e)")
}

func (w *watchFlags) registerIRQ(fs *pflag.FlagSet) {
	w.fs = fs
	fs.BoolVar(&w.irq, "irq", false, "print NET_RX softirqs per second of each CPU and the device's interrupts per second (xdpsock -I)")
}

func (w *watchFlags) registerCapture(fs *pflag.FlagSet) {
	w.fs = fs
	fs.StringVarP(&w.write, "write", "w", "", "write the frames the workers receive to the capture file `FILE`, as they arrive (before the handler): pcapng if FILE ends in .pcapng (an interface block per queue), pcap otherwise")
	fs.IntVar(&w.snaplen, "snaplen", 0, "`bytes` of each frame -w keeps (default: the UMEM frame size, whole frames)")
	fs.Uint64Var(&w.capCount, "capture-count", 0, "stop the capture after this many `frames`; the run goes on (default: no limit)")
}

// register adds every observability flag: what the receiving AF_XDP modes
// take. Other commands register the ones that apply to them.
func (w *watchFlags) register(fs *pflag.FlagSet) {
	w.registerMetrics(fs)
	w.registerErrors(fs)
	w.registerIRQ(fs)
	w.registerCapture(fs)
}

func (w *watchFlags) changed(name string) bool {
	return w.fs != nil && w.fs.Lookup(name) != nil && w.fs.Changed(name)
}

// check refuses bad observability flags; it needs no device or privilege.
func (w *watchFlags) check() error {
	if w.changed("metrics") {
		addr, err := observe.MetricsAddr(w.metrics)
		if err != nil {
			return fmt.Errorf("--metrics %q: %w", w.metrics, err)
		}
		w.metrics = addr
	}
	if w.write == "" {
		for _, n := range []string{"snaplen", "capture-count"} {
			if w.changed(n) {
				return fmt.Errorf("--%s is for the capture: give -w FILE too", n)
			}
		}
		if w.changed("write") {
			return errors.New("-w: give the file to write the capture to")
		}
	}
	if w.snaplen < 0 || w.snaplen > pcap.MaxSnaplen {
		return fmt.Errorf("--snaplen %d: want 1..%d bytes", w.snaplen, pcap.MaxSnaplen)
	}
	switch strings.ToUpper(w.write) {
	case "MONOTONIC", "REALTIME", "TAI", "BOOTTIME":
		// xdpsock's -w CLOCK: a capture file of that name is not what
		// its user meant.
		return fmt.Errorf("-w %s: xdpsock's -w names a clock; xdpeng's -w writes a capture file (-w FILE.pcap or FILE.pcapng): give it a file name with an extension", w.write)
	}
	return nil
}

// watcher is the observe.Watcher of the observability flags, with their
// advice on its errors and the printing of what it reads. Its methods may
// be called on a nil *watcher and then do nothing, so commands call them
// unconditionally.
type watcher struct {
	*observe.Watcher
	f *watchFlags
}

// startWatch starts what the flags ask for on device dev, before the
// command attaches anything (observe.Start). The caller closes the watcher
// on every path.
func (f *watchFlags) startWatch(dev string) (*watcher, error) {
	ow, err := observe.Start(observe.Config{Metrics: f.metrics, Errors: f.errors, IRQ: f.irq,
		Capture: f.write, Snaplen: f.snaplen, CaptureCount: f.capCount}, dev)
	if err != nil {
		return nil, f.advise(err)
	}
	return &watcher{Watcher: ow, f: f}, nil
}

// advise names the flag of the part of the watcher that failed.
func (f *watchFlags) advise(err error) error {
	var oe *observe.Error
	if !errors.As(err, &oe) {
		return advise(err)
	}
	switch oe.Part {
	case observe.PartMetrics:
		return fmt.Errorf("%w (--metrics: give an address of this host and a port nothing listens on)", err)
	case observe.PartErrors:
		return fmt.Errorf("-e: %w", err)
	case observe.PartIRQ:
		return fmt.Errorf("--irq: %w", err)
	case observe.PartCaptureFile:
		return fmt.Errorf("-w %s: %w", f.write, err)
	case observe.PartCapture:
		return fmt.Errorf("-w: %w", err)
	}
	return err
}

// serve starts answering scrapes with the command's collectors cs and the
// watcher's own (observe.Watcher.Serve).
func (w *watcher) serve(cs ...prometheus.Collector) error {
	if w == nil {
		return nil
	}
	return w.f.advise(w.Serve(cs...))
}

// tap puts the capture of -w in front of cfg's handler
// (observe.Watcher.Tap).
func (w *watcher) tap(cfg *engine.Config) error {
	if w == nil {
		return nil
	}
	return w.f.advise(w.Tap(cfg))
}

// running is called when the engine is about to run: the capture file
// gets what waited for it.
func (w *watcher) running() error {
	if w == nil {
		return nil
	}
	return w.f.advise(w.Running())
}

// finish is called once the workers have stopped, before the summary
// (observe.Watcher.Finish); rx are the frames the workers received.
func (w *watcher) finish(rx uint64) error {
	if w == nil {
		return nil
	}
	return w.Finish(rx)
}

// stopServing closes the metrics endpoint: after the summary, before the
// command's engine or program goes away.
func (w *watcher) stopServing() {
	if w == nil {
		return
	}
	if err := w.StopServing(); err != nil {
		fmt.Fprintf(os.Stderr, "xdpeng: %v\n", err)
	}
}

// close stops everything the watcher started.
func (w *watcher) close() {
	if w == nil {
		return
	}
	if err := w.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "xdpeng: %v\n", err)
	}
}

// header says what the watcher counts, in text output.
func (w *watcher) header(out io.Writer) {
	if w == nil {
		return
	}
	if u := w.MetricsURL(); u != "" {
		fmt.Fprintf(out, "  metrics: %s\n", u)
	}
	dev := w.Device().Name
	if attached, missing, notes, ok := w.Tracepoints(); ok {
		fmt.Fprintf(out, "  xdp errors of %s: counting %s", dev, strings.Join(attached, ", "))
		if len(missing) > 0 {
			var s []string
			for _, x := range missing {
				s = append(s, x.String())
			}
			fmt.Fprintf(out, "; not on this kernel: %s", strings.Join(s, "; "))
		}
		fmt.Fprintln(out)
		for _, n := range notes {
			fmt.Fprintf(out, "  xdp errors: %s\n", n)
		}
	}
	if names, n, ok := w.InterruptLines(); ok {
		if n == 0 {
			fmt.Fprintf(out, "  irq: %s has no interrupt line in %s (looked for %s): a virtual device such as veth has none, its receive work runs in the softirq of the CPU that sends to it, or in a NAPI thread\n",
				dev, irqstat.InterruptsPath, strings.Join(names, ", "))
		} else {
			fmt.Fprintf(out, "  irq: %s has %d interrupt lines in %s (named %s)\n", dev, n, irqstat.InterruptsPath, strings.Join(names, " or "))
		}
	}
	if p := w.CapturePath(); p != "" {
		fmt.Fprintf(out, "  capture: %s\n", p)
	}
}

// reasonLabel is a reason without its count: "xdp_redirect_err ENETDOWN".
func reasonLabel(r xdperr.Reason) string {
	if r.Detail == "" {
		return r.Tracepoint
	}
	return r.Tracepoint + " " + r.Detail
}

// interval reads what the watcher counts over the last dt seconds and adds
// it to obj (JSON output) or, with obj nil, prints it to out.
func (w *watcher) interval(out io.Writer, obj map[string]any, dt float64) {
	if w == nil || dt <= 0 {
		return
	}
	if iv, err := w.ErrorsInterval(dt); err != nil {
		fmt.Fprintf(os.Stderr, "xdpeng: %v\n", w.f.advise(err))
	} else if iv != nil {
		if obj != nil {
			obj["xdp_errors"] = iv.Rates
			// Every entry since the start, as the summary's detail.
			obj["xdp_errors_since_start"] = iv.SinceStart
		} else {
			parts := []string{"none"}
			if len(iv.Rates) > 0 {
				parts = parts[:0]
			}
			for _, r := range iv.Rates {
				parts = append(parts, fmt.Sprintf("%s %.0f", reasonLabel(r.Reason), r.PerSec))
			}
			fmt.Fprintf(out, "%16s xdp errors/s: %s\n", "", strings.Join(parts, ", "))
		}
	}
	if r, err := w.IRQInterval(); err != nil {
		fmt.Fprintf(os.Stderr, "xdpeng: %v\n", w.f.advise(err))
	} else if r != nil && obj != nil {
		obj["irq"] = observe.IRQOf(*r)
	} else if r != nil {
		fmt.Fprintf(out, "%16s irq/s: %s\n", "", irqText(*r))
	}
}

// irqText is "NET_RX cpu0 12034 cpu1 0; eth1 4121 (irq 45 eth1-TxRx-0
// 4121)", or for a device without interrupts "...; dut0 none (no irq)".
func irqText(r irqstat.Rates) string {
	var b strings.Builder
	b.WriteString("NET_RX")
	for _, c := range r.NetRx {
		fmt.Fprintf(&b, " cpu%d %.0f", c.CPU, c.PerSec)
	}
	if r.Device.None() {
		fmt.Fprintf(&b, "; %s has no interrupts", r.Device.Name)
		return b.String()
	}
	fmt.Fprintf(&b, "; %s %.0f (", r.Device.Name, r.Device.Total())
	for i, l := range r.Device.Lines {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "irq %s %.0f", l.IRQ, l.Total)
	}
	b.WriteString(")")
	return b.String()
}

// watchJSON is what the watcher adds to a JSON summary.
type watchJSON = observe.Summary

// summaryJSON is the watcher's part of a JSON summary.
func (w *watcher) summaryJSON() watchJSON {
	if w == nil {
		return watchJSON{}
	}
	return w.Summary()
}

// summaryText prints the watcher's part of a text summary.
func (w *watcher) summaryText(out io.Writer) {
	if w == nil {
		return
	}
	s := w.Summary()
	if s.XDPErrors != nil {
		errorsText(out, w.Device().Name, s.XDPErrors)
	}
	if c := s.Capture; c != nil {
		fmt.Fprintf(out, "  capture %s: %d frames written (%s, snaplen %d)", c.File, c.Written, c.Format, c.Snaplen)
		fmt.Fprintf(out, "; of the %d received, %d skipped (its ring was full: the writer fell behind), %d discarded (taken into a ring, not written: the capture stopped first, at --capture-count, a failed write or the end of the run), %d after the capture stopped\n",
			c.Received, c.Skipped, c.Discarded, c.AfterStop)
		if c.Error != "" {
			fmt.Fprintf(out, "  capture failed: %s\n", c.Error)
		}
	}
	if r := w.RunIRQ(); r != nil {
		fmt.Fprintf(out, "  irq/s over the run: %s\n", irqText(*r))
	}
}

// errorsText prints what the tracepoints counted on device dev: the total
// lost, then each entry with its target.
func errorsText(out io.Writer, dev string, e *observe.ErrorsSummary) {
	s := e.Detail
	fmt.Fprintf(out, "  xdp errors of %s: %d frames lost", dev, s.Lost())
	if m := e.Missing; len(m) > 0 {
		var names []string
		for _, x := range m {
			names = append(names, x.Tracepoint)
		}
		fmt.Fprintf(out, " (not counted on this kernel: %s)", strings.Join(names, ", "))
	}
	fmt.Fprintln(out)
	to := func(ifindex int) string {
		if ifindex == 0 {
			return ""
		}
		if n := observe.InterfaceName(ifindex); n != "" {
			return " to " + n
		}
		return fmt.Sprintf(" to ifindex %d", ifindex)
	}
	for _, e := range s.Exceptions {
		fmt.Fprintf(out, "    xdp_exception %s (program id %d): %d\n", e.Action, e.ProgID, e.Frames)
	}
	for _, e := range s.RedirectErrors {
		via := ""
		if e.MapID != 0 {
			via = fmt.Sprintf(" through %v id %d", e.MapType, e.MapID)
		}
		same := ""
		if r := e.XSKRefusal(); r != "" {
			same = " (" + r + ")"
		}
		fmt.Fprintf(out, "    xdp_redirect_err %s%s%s (program id %d): %d%s\n", xdperr.ErrnoName(e.Errno), to(e.ToIfindex), via, e.ProgID, e.Frames, same)
	}
	for _, x := range s.DevmapXmit {
		fmt.Fprintf(out, "    xdp_devmap_xmit%s: %d sent, %d dropped%s\n", to(x.ToIfindex), x.Sent, x.Drops, errnoSuffix(x.Errno))
	}
	for _, x := range s.BulkTx {
		fmt.Fprintf(out, "    xdp_bulk_tx (XDP_TX): %d sent, %d dropped%s\n", x.Sent, x.Drops, errnoSuffix(x.Errno))
	}
	for _, c := range s.CPUMapEnqueue {
		if c.Drops > 0 {
			fmt.Fprintf(out, "    xdp_cpumap_enqueue to CPU %d: %d dropped\n", c.CPU, c.Drops)
		}
	}
	for _, c := range s.CPUMapKthread {
		if c.Drops > 0 {
			fmt.Fprintf(out, "    xdp_cpumap_kthread on CPU %d: %d dropped\n", c.CPU, c.Drops)
		}
	}
	if s.Unrecorded > 0 {
		fmt.Fprintf(out, "    lost in events that found their table full (any device): %d\n", s.Unrecorded)
	}
}

func errnoSuffix(e syscall.Errno) string {
	if n := xdperr.ErrnoName(e); n != "" {
		return " (" + n + ")"
	}
	return ""
}
