// Package observe runs what watches a long-running command beside its own
// loop: a Prometheus endpoint, the xdp tracepoints' counts of why a
// device's XDP frames were lost, softirq and interrupt rates, and a pcap or
// pcapng capture of the frames the engine's workers receive. One Watcher
// holds what a Config asks for; the command reads intervals and a summary
// from it and prints them as it likes.
package observe

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xdpeng/xdpeng/cmd/internal/metrics"
	"github.com/xdpeng/xdpeng/cmd/internal/pcap"
	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/internal/lab/irqstat"
	"github.com/xdpeng/xdpeng/internal/lab/xdperr"
)

// Config says what a Watcher watches; the zero Config watches nothing.
type Config struct {
	// Metrics is the address the Prometheus endpoint listens on
	// (MetricsAddr makes one of a port alone); "" serves none.
	Metrics string
	// Errors counts why the device's XDP frames were lost, from the xdp
	// tracepoints.
	Errors bool
	// IRQ reads NET_RX softirqs of each CPU and the device's interrupts.
	IRQ bool
	// Capture is the file the frames the workers receive are written to,
	// pcapng if its name ends in .pcapng, pcap otherwise; "" captures
	// nothing. Snaplen is how many bytes of each frame it keeps (0: the
	// UMEM frame size), CaptureCount how many frames it writes before it
	// stops (0: no limit).
	Capture      string
	Snaplen      int
	CaptureCount uint64
}

// Part names what a Watcher does, for an Error to say which failed.
type Part int

const (
	// PartMetrics is the Prometheus endpoint.
	PartMetrics Part = iota + 1
	// PartErrors is the tracepoint counters.
	PartErrors
	// PartIRQ is the softirq and interrupt rates.
	PartIRQ
	// PartCaptureFile is the opening of the capture file, whose error
	// names no path where the path alone would say it; PartCapture is
	// the rest of the capture.
	PartCaptureFile
	PartCapture
)

// Error is a failure of one part of a Watcher.
type Error struct {
	Part Part
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func partErr(p Part, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Part: p, Err: err}
}

// MetricsAddr is the address a metrics endpoint given as s listens on: a
// port alone (9100, :9100) is on the loopback, 127.0.0.1, so that the
// counters are not served to the network unless an address says so
// (0.0.0.0:9100, [::]:9100, or one of the host's). What is not HOST:PORT
// with a port number 1..65535 is refused; whether the host exists is for
// the listen itself to say.
func MetricsAddr(s string) (string, error) {
	if _, err := strconv.ParseUint(s, 10, 16); err == nil {
		s = ":" + s
	}
	if strings.HasPrefix(s, ":") {
		s = "127.0.0.1" + s
	}
	return s, checkListenAddr(s)
}

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

// Watcher is what a Config runs beside a command. Its methods may be
// called on a nil *Watcher and then do nothing, so that a command calls
// them unconditionally.
type Watcher struct {
	cfg Config
	dev engine.Device // looked up with Errors or Capture; Name only otherwise

	srv     *metrics.Server
	pending []prometheus.Collector // served with the command's own by Serve

	errs             *xdperr.Watcher
	netns            uint64
	errBase, errPrev xdperr.Snapshot
	errLast          *xdperr.Snapshot // since errBase, read by Finish

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

// Start starts what cfg asks for on device dev, before the command
// attaches anything: the metrics endpoint is bound (a busy port is refused
// before the interface changes), and the tracepoint counters are attached,
// so that they count every frame the command's program handles. A device
// that does not exist is the *engine.DeviceError of engine.LookupDevice;
// the rest is an *Error. The caller closes the Watcher on every path.
func Start(cfg Config, dev string) (_ *Watcher, err error) {
	w := &Watcher{cfg: cfg, dev: engine.Device{Name: dev}}
	defer func() {
		if err != nil {
			w.Close()
		}
	}()
	if cfg.Errors || cfg.Capture != "" {
		d, err := engine.LookupDevice(dev)
		if err != nil {
			return nil, err
		}
		w.dev = d
	}
	if cfg.Metrics != "" {
		if w.srv, err = metrics.Listen(cfg.Metrics); err != nil {
			return nil, partErr(PartMetrics, err)
		}
	}
	if cfg.Errors {
		if w.netns, err = xdperr.NetnsCookie(); err != nil {
			return nil, partErr(PartErrors, err)
		}
		if w.errs, err = xdperr.Start(); err != nil {
			return nil, partErr(PartErrors, err)
		}
		if w.errBase, err = w.errs.Read(); err != nil {
			return nil, partErr(PartErrors, err)
		}
		w.errPrev = w.errBase
		w.pending = append(w.pending, &metrics.XDPErrors{Interface: w.dev.Name, Netns: w.netns, Ifindex: w.dev.Index,
			Read: w.errs.Read, Name: InterfaceName})
	}
	if cfg.IRQ {
		if w.irq, err = irqstat.NewMonitor(dev); err != nil {
			return nil, partErr(PartIRQ, err)
		}
		if w.irqRun, err = irqstat.NewMonitor(dev); err != nil {
			return nil, partErr(PartIRQ, err)
		}
	}
	return w, nil
}

// InterfaceName names a device of the process's network namespace by
// index; "" if there is none.
func InterfaceName(ifindex int) string {
	if i, err := net.InterfaceByIndex(ifindex); err == nil {
		return i.Name
	}
	return ""
}

// Device is the device watched: its name alone unless Errors or Capture
// looked it up.
func (w *Watcher) Device() engine.Device {
	if w == nil {
		return engine.Device{}
	}
	return w.dev
}

// Serve starts answering scrapes, if there is an endpoint, with the
// command's collectors cs and the Watcher's own: once the counters exist.
func (w *Watcher) Serve(cs ...prometheus.Collector) error {
	if w == nil || w.srv == nil {
		return nil
	}
	return w.srv.Serve(append(w.pending, cs...)...)
}

// MetricsURL is where the endpoint answers, "" without one.
func (w *Watcher) MetricsURL() string {
	if w == nil || w.srv == nil {
		return ""
	}
	return "http://" + w.srv.Addr().String() + metrics.Path
}

// StopServing closes the metrics endpoint: after the summary, before the
// command's engine or program goes away. It may be called again.
func (w *Watcher) StopServing() error {
	if w == nil || w.srv == nil {
		return nil
	}
	err := w.srv.Close()
	w.srv = nil
	return partErr(PartMetrics, err)
}

// Close stops everything the Watcher started. A capture file of a run
// that never started is removed.
func (w *Watcher) Close() error {
	if w == nil {
		return nil
	}
	err := w.StopServing()
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
	return err
}

// Finish is called once the workers have stopped, before the summary: it
// closes the capture (everything put is written: rx are the frames the
// workers received, for its accounting) and takes the last counts.
func (w *Watcher) Finish(rx uint64) error {
	if w == nil {
		return nil
	}
	var errs []error
	if w.capture != nil {
		w.capStats, w.capErr = w.capture.Close()
		if err := w.capFile.close(); err != nil && w.capErr == nil {
			w.capErr = fmt.Errorf("close %s: %w", w.cfg.Capture, err)
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
		errs = append(errs, partErr(PartErrors, err))
	}
	if w.irqRun != nil {
		r, err := w.irqRun.Next()
		if err == nil {
			w.irqLast = &r
		}
		errs = append(errs, partErr(PartIRQ, err))
	}
	return errors.Join(errs...)
}
