package main

// What the observability flags add to a long-running command: a Prometheus
// endpoint (--metrics), why XDP frames were lost (-e), softirq and interrupt
// rates (--irq) and a pcap or pcapng capture of the frames the workers see
// (-w). Each command registers the flags that apply to it, checks them with the rest
// of its flags, and runs a watcher beside its own loop: the watcher adds
// lines to the intervals and the summary, and fields to the JSON.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/internal/counter"
	"github.com/xdpeng/xdpeng/internal/irqstat"
	"github.com/xdpeng/xdpeng/internal/metrics"
	"github.com/xdpeng/xdpeng/internal/pcap"
	"github.com/xdpeng/xdpeng/internal/xdperr"
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
		addr, err := metricsAddr(w.metrics)
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
	return nil
}

// metricsAddr is the address --metrics listens on: a port alone (9100,
// :9100) is on the loopback, 127.0.0.1, so that the counters are not served
// to the network unless an address says so (0.0.0.0:9100, [::]:9100, or
// one of the host's).
func metricsAddr(s string) (string, error) {
	if _, err := strconv.ParseUint(s, 10, 16); err == nil {
		s = ":" + s
	}
	if strings.HasPrefix(s, ":") {
		s = "127.0.0.1" + s
	}
	return s, checkListenAddr(s)
}

// checkListenAddr refuses what is not HOST:PORT with a port number;
// whether the host exists is for the listen itself to say.
func checkListenAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("want HOST:PORT or a port, e.g. 127.0.0.1:9100 or 9100 (this host's loopback); 0.0.0.0:9100 listens on every address")
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || port == "" {
		return fmt.Errorf("port %q is not a number 0..65535", port)
	} else if n == 0 {
		return errors.New("port 0 would pick a port nobody knows: give one, e.g. 9100")
	}
	return nil
}

// watcher is what the observability flags run beside a command. Its
// methods may be called on a nil *watcher and then do nothing, so commands
// call them unconditionally.
type watcher struct {
	f   *watchFlags
	dev engine.Device // with -e or -w; Name only otherwise

	srv     *metrics.Server
	pending []prometheus.Collector // served with the command's own by serve

	errs             *xdperr.Watcher
	netns            uint64
	errBase, errPrev xdperr.Snapshot
	errLast          *xdperr.Snapshot // since errBase, read by finish

	irq, irqRun *irqstat.Monitor // every interval; the whole run
	irqLast     *irqstat.Rates

	capture  *pcap.Capture
	capFile  *captureFile
	capRings []int // capture ring of each queue, by queue id
	capSnap  int   // the snapshot length in use
	capStats pcap.Stats
	capErr   error
	capRx    uint64
}

// startWatch starts what the flags ask for on device dev, before the
// command attaches anything: the metrics endpoint is bound (a busy port is
// refused before the interface changes), and the tracepoint counters are
// attached, so that they count every frame the command's program handles.
// The caller closes the watcher on every path.
func (f *watchFlags) startWatch(dev string) (_ *watcher, err error) {
	w := &watcher{f: f, dev: engine.Device{Name: dev}}
	defer func() {
		if err != nil {
			w.close()
		}
	}()
	if f.errors || f.write != "" {
		d, err := engine.LookupDevice(dev)
		if err != nil {
			return nil, advise(err)
		}
		w.dev = d
	}
	if f.metrics != "" {
		if w.srv, err = metrics.Listen(f.metrics); err != nil {
			return nil, fmt.Errorf("%w (--metrics: give an address of this host and a port nothing listens on)", err)
		}
	}
	if f.errors {
		if w.netns, err = xdperr.NetnsCookie(); err != nil {
			return nil, fmt.Errorf("-e: %w", err)
		}
		if w.errs, err = xdperr.Start(); err != nil {
			return nil, fmt.Errorf("-e: %w", err)
		}
		if w.errBase, err = w.errs.Read(); err != nil {
			return nil, fmt.Errorf("-e: %w", err)
		}
		w.errPrev = w.errBase
		w.pending = append(w.pending, &metrics.XDPErrors{Interface: w.dev.Name, Netns: w.netns, Ifindex: w.dev.Index,
			Read: w.errs.Read, Name: ifaceName})
	}
	if f.irq {
		if w.irq, err = irqstat.NewMonitor(dev); err != nil {
			return nil, fmt.Errorf("--irq: %w", err)
		}
		if w.irqRun, err = irqstat.NewMonitor(dev); err != nil {
			return nil, fmt.Errorf("--irq: %w", err)
		}
	}
	return w, nil
}

// ifaceName names a device of the process's network namespace by index;
// "" if there is none.
func ifaceName(ifindex int) string {
	if i, err := net.InterfaceByIndex(ifindex); err == nil {
		return i.Name
	}
	return ""
}

// serve starts answering scrapes, if there is an endpoint, with the
// command's collectors cs and the watcher's own: once the counters exist.
func (w *watcher) serve(cs ...prometheus.Collector) error {
	if w == nil || w.srv == nil {
		return nil
	}
	return w.srv.Serve(append(w.pending, cs...)...)
}

// tap puts the capture of -w in front of cfg's handler: one ring per
// queue. It opens the file first, before anything is attached, so that a
// path that cannot be written is refused with the interface untouched; the
// file is written only once the engine runs (see captureFile).
func (w *watcher) tap(cfg *engine.Config) error {
	if w == nil || w.f.write == "" {
		return nil
	}
	file, err := openCaptureFile(w.f.write)
	if err != nil {
		return fmt.Errorf("-w %s: %w", w.f.write, err)
	}
	w.capFile = file
	queues := cfg.Queues
	if queues == nil {
		for q := range w.dev.RxQueues {
			queues = append(queues, q)
		}
	}
	w.capRings = make([]int, 0)
	for i, q := range queues {
		for len(w.capRings) <= q {
			w.capRings = append(w.capRings, -1)
		}
		w.capRings[q] = i
	}
	snaplen := w.f.snaplen
	if snaplen == 0 {
		snaplen = int(cfg.FrameSize)
	}
	w.capSnap = snaplen
	pc := pcap.Config{Snaplen: snaplen, Count: w.f.capCount, Rings: max(1, len(queues)), Format: pcap.FormatOf(w.f.write)}
	if pc.Format == pcap.PcapNG {
		// One interface block per ring, which is one per queue.
		for _, q := range queues {
			pc.Interfaces = append(pc.Interfaces, pcap.Interface{Name: w.dev.Name, Description: fmt.Sprintf("%s rx queue %d", w.dev.Name, q)})
		}
		if len(queues) == 0 {
			pc.Interfaces = []pcap.Interface{{Name: w.dev.Name, Description: w.dev.Name}}
		}
	}
	c, err := pcap.Start(w.capFile, pc)
	if err != nil {
		return fmt.Errorf("-w: %w", err)
	}
	w.capture = c
	inner := cfg.Handler
	cfg.Handler = func(q int) engine.Handler {
		var h engine.Handler
		if inner != nil {
			h = inner(q)
		}
		return pcap.Tap(c.Ring(w.capRings[q]), h)
	}
	return nil
}

// running is called when the engine is about to run: the capture file
// gets what waited for it.
func (w *watcher) running() error {
	if w == nil || w.capFile == nil {
		return nil
	}
	if err := w.capFile.start(); err != nil {
		return fmt.Errorf("-w: %w", err)
	}
	return nil
}

// captureFile is -w's file. openCaptureFile opens it before anything is
// attached, so that a directory, or a path that cannot be created or
// written, is refused first; but it is left as it was until start: an
// existing file is truncated only then, and one that the open created is
// removed again by close if the run never started. Until start what is
// written (the file's header) waits in memory.
type captureFile struct {
	path    string
	mu      sync.Mutex
	f       *os.File
	created bool // the open made the file
	started bool
	buf     bytes.Buffer
}

// openCaptureFile opens path for writing as pcap.OpenFile does: never
// through a symbolic link, a new file 0600, an existing one only if it is
// a regular file of this user's with no other link, or a character device
// (such as /dev/null).
func openCaptureFile(path string) (*captureFile, error) {
	f, created, err := pcap.OpenFile(path)
	if err != nil {
		return nil, err
	}
	return &captureFile{path: path, f: f, created: created}, nil
}

func (c *captureFile) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started {
		return c.buf.Write(p)
	}
	return c.f.Write(p)
}

// start empties a regular file that was there before and writes what
// waited.
func (c *captureFile) start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return nil
	}
	if st, err := c.f.Stat(); err == nil && st.Mode().IsRegular() {
		if err := c.f.Truncate(0); err != nil {
			return fmt.Errorf("truncate %s: %w", c.path, err)
		}
	}
	c.started = true
	if _, err := c.f.Write(c.buf.Bytes()); err != nil {
		return fmt.Errorf("write %s: %w", c.path, err)
	}
	c.buf = bytes.Buffer{}
	return nil
}

// close closes the file; one the open created for a run that never
// started is removed.
func (c *captureFile) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		return nil
	}
	err := c.f.Close()
	c.f = nil
	if !c.started && c.created {
		if rerr := os.Remove(c.path); rerr != nil && err == nil {
			err = rerr
		}
	}
	return err
}

// finish is called once the workers have stopped, before the summary: it
// closes the capture (everything put is written: rx are the frames the
// workers received, for its accounting) and takes the last counts.
func (w *watcher) finish(rx uint64) error {
	if w == nil {
		return nil
	}
	var errs []error
	if w.capture != nil {
		w.capStats, w.capErr = w.capture.Close()
		if err := w.capFile.close(); err != nil && w.capErr == nil {
			w.capErr = fmt.Errorf("close %s: %w", w.f.write, err)
		}
		w.capRx = rx
		errs = append(errs, w.capErr)
	}
	if w.errs != nil {
		s, err := w.errs.Read()
		if err == nil {
			d := s.Sub(w.errBase).ForDevice(w.netns, w.dev.Index)
			w.errLast = &d
		}
		errs = append(errs, err)
	}
	if w.irqRun != nil {
		r, err := w.irqRun.Next()
		if err == nil {
			w.irqLast = &r
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// stopServing closes the metrics endpoint: after the summary, before the
// command's engine or program goes away.
func (w *watcher) stopServing() {
	if w != nil && w.srv != nil {
		if err := w.srv.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "xdpeng: %v\n", err)
		}
		w.srv = nil
	}
}

// close stops everything the watcher started. A capture file of a run
// that never started is removed.
func (w *watcher) close() {
	if w == nil {
		return
	}
	w.stopServing()
	if w.capture != nil {
		w.capture.Close()
		w.capture = nil
	}
	if w.capFile != nil {
		w.capFile.close()
	}
	if w.errs != nil {
		w.errs.Close()
		w.errs = nil
	}
}

// header says what the watcher counts, in text output.
func (w *watcher) header(out io.Writer) {
	if w == nil {
		return
	}
	if w.srv != nil {
		fmt.Fprintf(out, "  metrics: http://%s%s\n", w.srv.Addr(), metrics.Path)
	}
	if w.errs != nil {
		fmt.Fprintf(out, "  xdp errors of %s: counting %s", w.dev.Name, strings.Join(w.errs.Attached(), ", "))
		if m := w.errs.Missing(); len(m) > 0 {
			var s []string
			for _, x := range m {
				s = append(s, x.String())
			}
			fmt.Fprintf(out, "; not on this kernel: %s", strings.Join(s, "; "))
		}
		fmt.Fprintln(out)
		for _, n := range w.errs.Notes() {
			fmt.Fprintf(out, "  xdp errors: %s\n", n)
		}
	}
	if w.irq != nil {
		names := irqstat.DeviceNames(w.dev.Name)
		if n := interruptLines(names); n == 0 {
			fmt.Fprintf(out, "  irq: %s has no interrupt line in %s (looked for %s): a virtual device such as veth has none, its receive work runs in the softirq of the CPU that sends to it, or in a NAPI thread\n",
				w.dev.Name, irqstat.InterruptsPath, strings.Join(names, ", "))
		} else {
			fmt.Fprintf(out, "  irq: %s has %d interrupt lines in %s (named %s)\n", w.dev.Name, n, irqstat.InterruptsPath, strings.Join(names, " or "))
		}
	}
	if w.capture != nil {
		fmt.Fprintf(out, "  capture: %s\n", w.f.write)
	}
}

// interruptLines counts the lines of /proc/interrupts that name one of
// names.
func interruptLines(names []string) int {
	in, err := irqstat.ReadInterrupts()
	if err != nil {
		return 0
	}
	return len(in.Match(names...).Lines)
}

// errorsRate is one reason frames were lost, in an interval.
type errorsRate struct {
	xdperr.Reason
	PerSec float64 `json:"per_s"`
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
	if w.errs != nil {
		cur, err := w.errs.Read()
		if err != nil {
			fmt.Fprintf(os.Stderr, "xdpeng: -e: %v\n", err)
		} else {
			d := cur.Sub(w.errPrev).ForDevice(w.netns, w.dev.Index)
			w.errPrev = cur
			rates := []errorsRate{}
			for _, r := range d.Reasons() {
				rates = append(rates, errorsRate{Reason: r, PerSec: float64(r.Frames) / dt})
			}
			if obj != nil {
				obj["xdp_errors"] = rates
				// Every entry since the start, as the summary's detail.
				obj["xdp_errors_since_start"] = cur.Sub(w.errBase).ForDevice(w.netns, w.dev.Index)
			} else {
				parts := []string{"none"}
				if len(rates) > 0 {
					parts = parts[:0]
				}
				for _, r := range rates {
					parts = append(parts, fmt.Sprintf("%s %.0f", reasonLabel(r.Reason), r.PerSec))
				}
				fmt.Fprintf(out, "%16s xdp errors/s: %s\n", "", strings.Join(parts, ", "))
			}
		}
	}
	if w.irq != nil {
		r, err := w.irq.Next()
		if err != nil {
			fmt.Fprintf(os.Stderr, "xdpeng: --irq: %v\n", err)
		} else if obj != nil {
			obj["irq"] = irqJSONOf(r)
		} else {
			fmt.Fprintf(out, "%16s irq/s: %s\n", "", irqText(r))
		}
	}
}

// irqJSON is what --irq adds to a JSON line: per-second rates.
type irqJSON struct {
	IntervalS float64           `json:"interval_s"`
	NetRx     []irqstat.CPURate `json:"net_rx"`
	NetTx     []irqstat.CPURate `json:"net_tx"`
	Device    string            `json:"device"`
	Lines     []irqstat.IRQRate `json:"device_irqs"`
	// NoIRQ says that the device has no interrupt line (veth).
	NoIRQ bool `json:"device_has_no_irq"`
}

func irqJSONOf(r irqstat.Rates) irqJSON {
	lines := r.Device.Lines
	if lines == nil {
		lines = []irqstat.IRQRate{}
	}
	return irqJSON{IntervalS: round3(r.Interval.Seconds()), NetRx: r.NetRx, NetTx: r.NetTx,
		Device: r.Device.Name, Lines: lines, NoIRQ: r.Device.None()}
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
type watchJSON struct {
	XDPErrors *errorsJSON  `json:"xdp_errors,omitempty"`
	Capture   *captureJSON `json:"capture,omitempty"`
	IRQ       *irqJSON     `json:"irq,omitempty"`
}

// errorsJSON is -e's part of a summary: the tracepoints counted and
// missing, the reasons and every entry of the device since the start.
type errorsJSON struct {
	Attached []string         `json:"attached"`
	Missing  []xdperr.Missing `json:"missing"`
	Notes    []string         `json:"notes,omitempty"`
	Lost     uint64           `json:"lost"`
	Reasons  []xdperr.Reason  `json:"reasons"`
	Detail   xdperr.Snapshot  `json:"detail"`
}

// captureJSON is -w's part of a summary. Every frame the workers received
// is in one of Written, Skipped, Discarded and AfterStop.
type captureJSON struct {
	File string `json:"file"`
	// Format is "pcap" or "pcapng", as the file's name asked.
	Format  string `json:"format"`
	Snaplen int    `json:"snaplen"`
	pcap.Stats
	// AfterStop frames arrived after the capture had stopped
	// (--capture-count reached, or a write failed).
	AfterStop uint64 `json:"after_stop"`
	Error     string `json:"error,omitempty"`
}

func (w *watcher) captureSummary() *captureJSON {
	if w == nil || w.capture == nil {
		return nil
	}
	s := w.capStats
	c := &captureJSON{File: w.f.write, Format: pcap.FormatOf(w.f.write).String(), Snaplen: w.capSnap, Stats: s,
		AfterStop: counter.Sub(w.capRx, s.Written+s.Skipped+s.Discarded)}
	if w.capErr != nil {
		c.Error = w.capErr.Error()
	}
	return c
}

// summaryJSON is the watcher's part of a JSON summary.
func (w *watcher) summaryJSON() watchJSON {
	var j watchJSON
	if w == nil {
		return j
	}
	if w.errs != nil && w.errLast != nil {
		reasons := w.errLast.Reasons()
		if reasons == nil {
			reasons = []xdperr.Reason{}
		}
		missing := w.errs.Missing()
		if missing == nil {
			missing = []xdperr.Missing{}
		}
		j.XDPErrors = &errorsJSON{Attached: w.errs.Attached(), Missing: missing, Notes: w.errs.Notes(), Lost: w.errLast.Lost(),
			Reasons: reasons, Detail: *w.errLast}
	}
	j.Capture = w.captureSummary()
	if w.irqLast != nil {
		r := irqJSONOf(*w.irqLast)
		j.IRQ = &r
	}
	return j
}

// summaryText prints the watcher's part of a text summary.
func (w *watcher) summaryText(out io.Writer) {
	if w == nil {
		return
	}
	if w.errs != nil && w.errLast != nil {
		w.errorsText(out, *w.errLast)
	}
	if c := w.captureSummary(); c != nil {
		fmt.Fprintf(out, "  capture %s: %d frames written (%s, snaplen %d)", c.File, c.Written, c.Format, c.Snaplen)
		fmt.Fprintf(out, "; of the %d received, %d skipped (its ring was full: the writer fell behind), %d discarded, %d after the capture stopped\n",
			w.capRx, c.Skipped, c.Discarded, c.AfterStop)
		if c.Error != "" {
			fmt.Fprintf(out, "  capture failed: %s\n", c.Error)
		}
	}
	if w.irqLast != nil {
		fmt.Fprintf(out, "  irq/s over the run: %s\n", irqText(*w.irqLast))
	}
}

// errorsText prints what the tracepoints counted on the device: the total
// lost, then each entry with its target.
func (w *watcher) errorsText(out io.Writer, s xdperr.Snapshot) {
	fmt.Fprintf(out, "  xdp errors of %s: %d frames lost", w.dev.Name, s.Lost())
	if m := w.errs.Missing(); len(m) > 0 {
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
		if n := ifaceName(ifindex); n != "" {
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
