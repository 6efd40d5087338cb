// Package metrics exports xdpeng's counters to Prometheus: a Server that
// serves /metrics on the address it is given, and one collector per kind of
// run (an AF_XDP engine or generator, count's protocols, an in-kernel path,
// the live-frames generator, the xdp tracepoints, a device's own counters,
// a latency histogram).
//
// Every collector reads its counters at scrape time, from the same function
// the command's interval lines and summary read them from (Engine.Stats,
// kern.Path.Read, ...): nothing is copied or accumulated here, so a scrape
// taken after the traffic has stopped shows the numbers of the summary.
//
// Names follow the Prometheus conventions: a prefix xdpeng_, counters end in
// _total, bytes in _bytes_total, and what tells series apart is a label
// (interface, mode, queue, cpu, ...), never a part of the name. The labels
// of one metric are always the same set.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Path is the one path a Server serves.
const Path = "/metrics"

// maxInFlight bounds the scrapes a Server answers at once.
const maxInFlight = 4

// Server serves the metrics of its collectors at Path on one TCP address
// until Close. Any other path is 404, any method but GET and HEAD 405.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{} // closed when serving ends; nil before Serve
}

// Listen binds addr ("127.0.0.1:9100", "[::1]:9100", ":9100" for every
// address; port 0 picks a free one, see Addr), so that a command can
// refuse a taken port before it changes anything; Serve starts answering.
// Until then a scrape waits in the socket's backlog. The socket is the
// process's: the kernel closes it when the process ends, however it ends.
func Listen(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %q: %w", addr, err)
	}
	return &Server{ln: ln}, nil
}

// Serve starts answering scrapes with the metrics of cs and the process's
// own (process_cpu_seconds_total, process_resident_memory_bytes, ...). Two
// collectors may not export the same metric with the same labels. It is
// called once.
func (s *Server) Serve(cs ...prometheus.Collector) error {
	if s.srv != nil {
		return errors.New("metrics: Serve called twice")
	}
	reg := prometheus.NewRegistry()
	cs = append(cs, collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("metrics: register collector: %w", err)
		}
	}
	mux := http.NewServeMux()
	// Whoever reaches the address may scrape: at most maxInFlight scrapes
	// are served at once (more get 503), and a client that is slow to
	// send its request or read the answer is cut off.
	mux.Handle("GET "+Path, promhttp.HandlerFor(reg, promhttp.HandlerOpts{MaxRequestsInFlight: maxInFlight}))
	s.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		s.srv.Serve(s.ln) // returns http.ErrServerClosed after Close
	}()
	return nil
}

// Addr is the address the server listens on, with the port it got.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops the server: it stops listening at once, gives scrapes in
// progress up to a second to finish, then closes their connections. It is
// safe to call more than once, and before Serve.
func (s *Server) Close() error {
	if s.srv == nil {
		if err := s.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			return fmt.Errorf("metrics: stop listening on %s: %w", s.Addr(), err)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.srv.Close()
	}
	<-s.done
	if err != nil {
		return fmt.Errorf("metrics: stop serving on %s: %w", s.Addr(), err)
	}
	return nil
}

// family is one metric: its description and type. Collectors emit const
// metrics of it, with label values in the order of its label names.
type family struct {
	desc   *prometheus.Desc
	typ    prometheus.ValueType
	labels int
}

func newFamily(name, help string, typ prometheus.ValueType, labels ...string) family {
	return family{desc: prometheus.NewDesc(name, help, labels, nil), typ: typ, labels: len(labels)}
}

func newCounter(name, help string, labels ...string) family {
	return newFamily(name, help, prometheus.CounterValue, labels...)
}

func (f family) emit(ch chan<- prometheus.Metric, v uint64, labelValues ...string) {
	ch <- prometheus.MustNewConstMetric(f.desc, f.typ, float64(v), labelValues...)
}

func describe(ch chan<- *prometheus.Desc, fs ...family) {
	for _, f := range fs {
		ch <- f.desc
	}
}

// invalid reports a failed read as the scrape's error: the scrape then
// fails with it (HTTP 500) rather than showing a partial set of counters.
func invalid(ch chan<- prometheus.Metric, f family, err error) {
	ch <- prometheus.NewInvalidMetric(f.desc, err)
}
