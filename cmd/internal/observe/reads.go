package observe

import (
	"math"

	"github.com/xdpeng/xdpeng/internal/lab/irqstat"
	"github.com/xdpeng/xdpeng/internal/lab/xdperr"
)

// Tracepoints says what the tracepoint counters count: the tracepoints
// attached, those this kernel lacks, and notes on what they cannot tell;
// ok is false without Errors.
func (w *Watcher) Tracepoints() (attached []string, missing []xdperr.Missing, notes []string, ok bool) {
	if w == nil || w.errs == nil {
		return nil, nil, nil, false
	}
	return w.errs.Attached(), w.errs.Missing(), w.errs.Notes(), true
}

// InterruptLines are the names the device's interrupt lines may bear in
// /proc/interrupts and how many lines bear one of them (0 where it cannot
// be read); ok is false without IRQ.
func (w *Watcher) InterruptLines() (names []string, lines int, ok bool) {
	if w == nil || w.irq == nil {
		return nil, 0, false
	}
	names = irqstat.DeviceNames(w.dev.Name)
	if in, err := irqstat.ReadInterrupts(); err == nil {
		lines = len(in.Match(names...).Lines)
	}
	return names, lines, true
}

// ErrorRate is one reason frames were lost, in an interval.
type ErrorRate struct {
	xdperr.Reason
	PerSec float64 `json:"per_s"`
}

// ErrorsInterval is what the tracepoints counted on the device in an
// interval, and since the start.
type ErrorsInterval struct {
	Rates      []ErrorRate
	SinceStart xdperr.Snapshot
}

// ErrorsInterval reads the tracepoint counters' change over the last dt
// seconds; nil without Errors.
func (w *Watcher) ErrorsInterval(dt float64) (*ErrorsInterval, error) {
	if w == nil || w.errs == nil || dt <= 0 {
		return nil, nil
	}
	cur, err := w.errs.Read()
	if err != nil {
		return nil, partErr(PartErrors, err)
	}
	d := cur.Sub(w.errPrev).ForDevice(w.netns, w.dev.Index)
	w.errPrev = cur
	iv := &ErrorsInterval{Rates: []ErrorRate{}, SinceStart: cur.Sub(w.errBase).ForDevice(w.netns, w.dev.Index)}
	for _, r := range d.Reasons() {
		iv.Rates = append(iv.Rates, ErrorRate{Reason: r, PerSec: float64(r.Frames) / dt})
	}
	return iv, nil
}

// IRQInterval reads the softirq and interrupt rates since the last call
// (since Start for the first); nil without IRQ.
func (w *Watcher) IRQInterval() (*irqstat.Rates, error) {
	if w == nil || w.irq == nil {
		return nil, nil
	}
	r, err := w.irq.Next()
	if err != nil {
		return nil, partErr(PartIRQ, err)
	}
	return &r, nil
}

// RunIRQ are the softirq and interrupt rates over the whole run, as
// Finish read them; nil without IRQ or before Finish.
func (w *Watcher) RunIRQ() *irqstat.Rates {
	if w == nil {
		return nil
	}
	return w.irqLast
}

// IRQ is the softirq and interrupt rates in JSON: per second.
type IRQ struct {
	IntervalS float64           `json:"interval_s"`
	NetRx     []irqstat.CPURate `json:"net_rx"`
	NetTx     []irqstat.CPURate `json:"net_tx"`
	Device    string            `json:"device"`
	Lines     []irqstat.IRQRate `json:"device_irqs"`
	// NoIRQ says that the device has no interrupt line (veth).
	NoIRQ bool `json:"device_has_no_irq"`
}

// IRQOf is r in JSON, its interval in seconds to the millisecond.
func IRQOf(r irqstat.Rates) IRQ {
	lines := r.Device.Lines
	if lines == nil {
		lines = []irqstat.IRQRate{}
	}
	return IRQ{IntervalS: math.Round(r.Interval.Seconds()*1000) / 1000, NetRx: r.NetRx, NetTx: r.NetTx,
		Device: r.Device.Name, Lines: lines, NoIRQ: r.Device.None()}
}

// ErrorsSummary is the tracepoints' part of a summary: those counted and
// missing, the reasons and every entry of the device since the start.
type ErrorsSummary struct {
	Attached []string         `json:"attached"`
	Missing  []xdperr.Missing `json:"missing"`
	Notes    []string         `json:"notes,omitempty"`
	Lost     uint64           `json:"lost"`
	Reasons  []xdperr.Reason  `json:"reasons"`
	Detail   xdperr.Snapshot  `json:"detail"`
}

// Summary is what the Watcher adds to a command's summary, read after
// Finish; each part is nil where it was not watched.
type Summary struct {
	XDPErrors *ErrorsSummary  `json:"xdp_errors,omitempty"`
	Capture   *CaptureSummary `json:"capture,omitempty"`
	IRQ       *IRQ            `json:"irq,omitempty"`
}

// Summary is the Watcher's part of a summary.
func (w *Watcher) Summary() Summary {
	var s Summary
	if w == nil {
		return s
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
		s.XDPErrors = &ErrorsSummary{Attached: w.errs.Attached(), Missing: missing, Notes: w.errs.Notes(), Lost: w.errLast.Lost(),
			Reasons: reasons, Detail: *w.errLast}
	}
	s.Capture = w.captureSummary()
	if w.irqLast != nil {
		r := IRQOf(*w.irqLast)
		s.IRQ = &r
	}
	return s
}
