package metrics

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/kern"
	"github.com/xdpeng/xdpeng/internal/lab/latency"
	"github.com/xdpeng/xdpeng/internal/lab/xdperr"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

func snapshot() engine.Snapshot {
	return engine.Snapshot{Time: time.Now(), Queues: []engine.QueueStats{
		{Queue: 0, CPU: 1, RxPackets: 1000, RxBytes: 64000, Dropped: 1000, Batches: 20,
			XDP: engine.SocketStats{RxDropped: 3, RxRingFull: 7}},
		{Queue: 1, CPU: 0, RxPackets: 5, RxBytes: 320, Dropped: 5, Batches: 1, Naps: 2},
	}}
}

func TestEngine(t *testing.T) {
	e := &Engine{Mode: "rxdrop", Interface: "dut0", Stats: func() (engine.Snapshot, error) { return snapshot(), nil }}
	want := `
# HELP xdpeng_rx_packets_total Frames received on the queue's AF_XDP socket.
# TYPE xdpeng_rx_packets_total counter
xdpeng_rx_packets_total{cpu="0",interface="dut0",mode="rxdrop",queue="1"} 5
xdpeng_rx_packets_total{cpu="1",interface="dut0",mode="rxdrop",queue="0"} 1000
# HELP xdpeng_xsk_rx_ring_full_total XDP_STATISTICS rx_ring_full: frames dropped because the rx ring was full.
# TYPE xdpeng_xsk_rx_ring_full_total counter
xdpeng_xsk_rx_ring_full_total{cpu="0",interface="dut0",mode="rxdrop",queue="1"} 0
xdpeng_xsk_rx_ring_full_total{cpu="1",interface="dut0",mode="rxdrop",queue="0"} 7
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "xdpeng_rx_packets_total", "xdpeng_xsk_rx_ring_full_total"); err != nil {
		t.Error(err)
	}
	// 17 counters per queue.
	if n := testutil.CollectAndCount(e); n != 2*17 {
		t.Errorf("%d metrics, want %d", n, 2*17)
	}
	lint(t, e)
}

func TestEngineOutput(t *testing.T) {
	e := &Engine{Mode: "fwd", Interface: "dut0", Output: "dut1",
		Stats: func() (engine.Snapshot, error) { return snapshot(), nil },
		OutputStats: func() (engine.SocketStats, error) {
			return engine.SocketStats{TxInvalidDescs: 2, TxRingEmptyDescs: 9}, nil
		},
	}
	want := `
# HELP xdpeng_xsk_output_tx_ring_empty_descs_total XDP_STATISTICS tx_ring_empty_descs of the output device's sockets, summed over queues.
# TYPE xdpeng_xsk_output_tx_ring_empty_descs_total counter
xdpeng_xsk_output_tx_ring_empty_descs_total{interface="dut1",mode="fwd"} 9
`
	if err := testutil.CollectAndCompare(e, strings.NewReader(want), "xdpeng_xsk_output_tx_ring_empty_descs_total"); err != nil {
		t.Error(err)
	}
	lint(t, e)
}

// A failed read fails the scrape rather than showing some counters.
func TestReadErrorFailsTheScrape(t *testing.T) {
	boom := errors.New("boom")
	for name, c := range map[string]prometheus.Collector{
		"engine": &Engine{Mode: "rxdrop", Interface: "dut0", Stats: func() (engine.Snapshot, error) { return engine.Snapshot{}, boom }},
		"kern":   &Kern{Mode: "kern-drop", Interface: "dut0", Hook: "xdp", Read: func() (kern.Counters, error) { return kern.Counters{}, boom }},
		"xdperr": &XDPErrors{Interface: "dut0", Read: func() (xdperr.Snapshot, error) { return xdperr.Snapshot{}, boom }},
		"devices": &Devices{Names: []string{"dut0"}, Read: func(string) (netdev.DevStats, error) {
			return netdev.DevStats{}, boom
		}},
		"latency": &Latency{Mode: "latency", Interface: "dut0", Read: func() (*latency.Histogram, error) { return nil, boom }},
	} {
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(c)
		if _, err := reg.Gather(); !errors.Is(err, boom) {
			t.Errorf("%s: Gather = %v, want the read's error", name, err)
		}
	}
}

func TestCount(t *testing.T) {
	c := &Count{Interface: "dut0", Stats: func() (map[string]uint64, uint64) {
		return map[string]uint64{"udp": 10, "other": 2}, 1
	}}
	want := `
# HELP xdpeng_count_frames_total Frames count parsed, by IP protocol ("udp", "tcp", "ip/N") or "other" (not IP).
# TYPE xdpeng_count_frames_total counter
xdpeng_count_frames_total{interface="dut0",mode="count",protocol="other"} 2
xdpeng_count_frames_total{interface="dut0",mode="count",protocol="udp"} 10
# HELP xdpeng_count_malformed_frames_total Frames that ended inside a header they announced.
# TYPE xdpeng_count_malformed_frames_total counter
xdpeng_count_malformed_frames_total{interface="dut0",mode="count"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	lint(t, c)
}

func TestKern(t *testing.T) {
	base := kern.Counters{OutTx: []uint64{100}, XDPTx: &kern.XDPTx{Sent: 50, Failed: 5}}
	cur := kern.Counters{
		Stats: kern.Stats{{Queue: 0, CPU: 0, Packets: 7, Bytes: 448}, {Queue: 0, CPU: 1, Packets: 3, Bytes: 192}},
		Proto: []kern.ProtoCount{{Proto: 17, Packets: 9}, {Proto: kern.ProtoNotIP, Packets: 1}},
		OutTx: []uint64{110}, XDPTx: &kern.XDPTx{Sent: 58, Failed: 7},
	}
	k := &Kern{Mode: "kern-redirect", Interface: "dut0", Hook: "xdp", Outs: []string{"dut1"}, Base: base,
		Read: func() (kern.Counters, error) { return cur, nil }}
	want := `
# HELP xdpeng_kern_rx_packets_total Frames the in-kernel path's program handled, by rx queue and CPU.
# TYPE xdpeng_kern_rx_packets_total counter
xdpeng_kern_rx_packets_total{cpu="0",hook="xdp",interface="dut0",mode="kern-redirect",queue="0"} 7
xdpeng_kern_rx_packets_total{cpu="1",hook="xdp",interface="dut0",mode="kern-redirect",queue="0"} 3
# HELP xdpeng_kern_out_tx_packets_total Frames each egress device of a redirect sent since the path started (its generic tx_packets counter: whatever else it sent included).
# TYPE xdpeng_kern_out_tx_packets_total counter
xdpeng_kern_out_tx_packets_total{hook="xdp",interface="dut0",mode="kern-redirect",out="dut1"} 10
# HELP xdpeng_kern_xdp_tx_errors_total Frames XDP_TX could not send since the path started, as the driver counts them (veth).
# TYPE xdpeng_kern_xdp_tx_errors_total counter
xdpeng_kern_xdp_tx_errors_total{hook="xdp",interface="dut0",mode="kern-redirect"} 2
# HELP xdpeng_kern_proto_packets_total Frames a drop with --count-proto counted, by IP protocol number ("not-ip" for the rest).
# TYPE xdpeng_kern_proto_packets_total counter
xdpeng_kern_proto_packets_total{hook="xdp",interface="dut0",mode="kern-redirect",proto="17"} 9
xdpeng_kern_proto_packets_total{hook="xdp",interface="dut0",mode="kern-redirect",proto="not-ip"} 1
`
	if err := testutil.CollectAndCompare(k, strings.NewReader(want), "xdpeng_kern_rx_packets_total",
		"xdpeng_kern_out_tx_packets_total", "xdpeng_kern_xdp_tx_errors_total", "xdpeng_kern_proto_packets_total"); err != nil {
		t.Error(err)
	}
	lint(t, k)
}

func TestGen(t *testing.T) {
	g := &Gen{Interface: "gen0", Stats: func() gen.Stats {
		return gen.Stats{Sent: 30, Bytes: 1920, PerThread: []gen.ThreadStats{{CPU: 0, Sent: 10}, {CPU: 1, Sent: 20}},
			DeviceCounters: true, Xmit: 28, Errors: 2}
	}}
	want := `
# HELP xdpeng_gen_sent_packets_total Frames the generator's program redirected to the device, by sending thread's CPU.
# TYPE xdpeng_gen_sent_packets_total counter
xdpeng_gen_sent_packets_total{cpu="0",interface="gen0"} 10
xdpeng_gen_sent_packets_total{cpu="1",interface="gen0"} 20
# HELP xdpeng_gen_xmit_errors_total Frames the device's ndo_xdp_xmit refused during the run (veth: tx_queue_N_xdp_xmit_errors).
# TYPE xdpeng_gen_xmit_errors_total counter
xdpeng_gen_xmit_errors_total{interface="gen0"} 2
`
	if err := testutil.CollectAndCompare(g, strings.NewReader(want), "xdpeng_gen_sent_packets_total", "xdpeng_gen_xmit_errors_total"); err != nil {
		t.Error(err)
	}
	lint(t, g)
}

// Entries of the device are summed over what no label shows (programs,
// maps); other devices are left out.
func TestXDPErrors(t *testing.T) {
	s := xdperr.Snapshot{
		Exceptions: []xdperr.Exception{{Netns: 9, Ifindex: 2, ProgID: 1, Action: xdperr.Aborted, Frames: 3},
			{Netns: 9, Ifindex: 2, ProgID: 2, Action: xdperr.Aborted, Frames: 4},
			{Netns: 8, Ifindex: 2, ProgID: 2, Action: xdperr.Aborted, Frames: 100}},
		RedirectErrors: []xdperr.RedirectError{{Netns: 9, Ifindex: 2, Errno: syscall.ENETDOWN, ToIfindex: 3, Frames: 5000},
			{Netns: 9, Ifindex: 2, Errno: syscall.ENETDOWN, ToIfindex: 3, MapID: 7, Frames: 1},
			{Netns: 9, Ifindex: 2, Errno: syscall.ENOBUFS, Frames: 6}},
		DevmapXmit: []xdperr.Xmit{{Netns: 9, Ifindex: 2, ToIfindex: 3, Flushes: 1, Sent: 60, Drops: 4, Errno: syscall.ENXIO},
			{Netns: 9, Ifindex: 2, ToIfindex: 4, Flushes: 2, Sent: 10}},
		BulkTx:     []xdperr.Xmit{{Netns: 9, Ifindex: 2, Flushes: 1, Drops: 2, Errno: syscall.ENXIO}},
		Unrecorded: 1,
	}
	x := &XDPErrors{Interface: "dut0", Netns: 9, Ifindex: 2, Read: func() (xdperr.Snapshot, error) { return s, nil },
		Name: func(i int) string {
			if i == 3 {
				return "dut1"
			}
			return ""
		}}
	want := `
# HELP xdpeng_xdp_exceptions_total xdp_exception: frames whose XDP program returned XDP_ABORTED or an unknown action, or whose XDP_TX the driver could not carry out, by action.
# TYPE xdpeng_xdp_exceptions_total counter
xdpeng_xdp_exceptions_total{action="XDP_ABORTED",interface="dut0"} 7
# HELP xdpeng_xdp_redirect_errors_total xdp_redirect_err: frames whose redirect failed, by errno and target device ("" when the target is not a device).
# TYPE xdpeng_xdp_redirect_errors_total counter
xdpeng_xdp_redirect_errors_total{errno="ENETDOWN",interface="dut0",to="dut1"} 5001
xdpeng_xdp_redirect_errors_total{errno="ENOBUFS",interface="dut0",to=""} 6
# HELP xdpeng_xdp_devmap_xmit_frames_total xdp_devmap_xmit: frames redirected through a devmap that the target device's driver took, by target device.
# TYPE xdpeng_xdp_devmap_xmit_frames_total counter
xdpeng_xdp_devmap_xmit_frames_total{interface="dut0",to="4"} 10
xdpeng_xdp_devmap_xmit_frames_total{interface="dut0",to="dut1"} 60
# HELP xdpeng_xdp_devmap_xmit_drops_total xdp_devmap_xmit: frames redirected through a devmap that the target device's driver did not send, by target and errno.
# TYPE xdpeng_xdp_devmap_xmit_drops_total counter
xdpeng_xdp_devmap_xmit_drops_total{errno="ENXIO",interface="dut0",to="dut1"} 4
# HELP xdpeng_xdp_bulk_tx_drops_total xdp_bulk_tx: XDP_TX frames the driver's flush did not send, by errno.
# TYPE xdpeng_xdp_bulk_tx_drops_total counter
xdpeng_xdp_bulk_tx_drops_total{errno="ENXIO",interface="dut0"} 2
# HELP xdpeng_xdp_errors_unrecorded_total Frames lost in xdp tracepoint events that found their table full, on any device of the host.
# TYPE xdpeng_xdp_errors_unrecorded_total counter
xdpeng_xdp_errors_unrecorded_total 1
`
	if err := testutil.CollectAndCompare(x, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	lint(t, x)
}

func TestDevices(t *testing.T) {
	d := &Devices{Names: []string{"dut0", "dut1"}, Read: func(name string) (netdev.DevStats, error) {
		s := netdev.DevStats{Name: name, Netdev: map[string]uint64{}, Ethtool: map[string]uint64{"rx_queue_0_xdp_packets": 42}}
		for _, f := range netdevFields {
			s.Netdev[f] = 1
		}
		if name == "dut1" {
			s.Ethtool = nil // a driver without counters
		}
		return s, nil
	}}
	want := `
# HELP xdpeng_ethtool_stat A counter of the device's driver, as ethtool -S names it (stat).
# TYPE xdpeng_ethtool_stat untyped
xdpeng_ethtool_stat{interface="dut0",stat="rx_queue_0_xdp_packets"} 42
# HELP xdpeng_netdev_rx_packets_total The device's netdev statistic rx_packets (rtnl_link_stats64, what ip -s link shows).
# TYPE xdpeng_netdev_rx_packets_total counter
xdpeng_netdev_rx_packets_total{interface="dut0"} 1
xdpeng_netdev_rx_packets_total{interface="dut1"} 1
`
	if err := testutil.CollectAndCompare(d, strings.NewReader(want), "xdpeng_ethtool_stat", "xdpeng_netdev_rx_packets_total"); err != nil {
		t.Error(err)
	}
	if n, want := testutil.CollectAndCount(d), 2*len(netdevFields)+1; n != want {
		t.Errorf("%d metrics, want %d", n, want)
	}
	lint(t, d)
}

// The cumulative counts at each bound equal a count of the delays up to it.
func TestLatencyBuckets(t *testing.T) {
	var h latency.Histogram
	var delays []uint64
	for d := uint64(1); d < 1<<28; d = d*3/2 + 1 {
		delays = append(delays, d)
		h.Add(d)
	}
	got := cumulative(&h)
	if len(got) != latency.MaxExp-latency.MinExp+1 {
		t.Fatalf("%d buckets, want %d", len(got), latency.MaxExp-latency.MinExp+1)
	}
	for e := latency.MinExp; e <= latency.MaxExp; e++ {
		bound := uint64(1)<<e - 1
		var want uint64
		for _, d := range delays {
			if d <= bound {
				want++
			}
		}
		if c := got[float64(bound)/1e9]; c != want {
			t.Errorf("delays up to %d ns: %d, want %d", bound, c, want)
		}
	}
	l := &Latency{Mode: "latency", Interface: "dut0", Read: func() (*latency.Histogram, error) { return &h, nil }}
	if n := testutil.CollectAndCount(l); n != 1 {
		t.Errorf("%d metrics, want 1 histogram", n)
	}
	lint(t, l)
}

// lint fails the test for anything the client library's linter (the
// checks of promtool check metrics) finds in c's metrics.
func lint(t *testing.T, c prometheus.Collector) {
	t.Helper()
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// A Server answers /metrics only, and Close frees the port at once.
func TestServe(t *testing.T) {
	e := &Engine{Mode: "rxdrop", Interface: "dut0", Stats: func() (engine.Snapshot, error) { return snapshot(), nil }}
	s, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(e, e); err == nil {
		t.Error("the same collector registered twice")
	}
	s.Close()
	if s, err = Listen(s.Addr().String()); err != nil {
		t.Fatalf("the port is not free after Close before Serve: %v", err)
	}
	if err := s.Serve(e); err != nil {
		t.Fatal(err)
	}
	addr := s.Addr().String()
	base := "http://" + addr
	get := func(method, path string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	code, body := get("GET", "/metrics")
	if code != 200 || !strings.Contains(body, `xdpeng_rx_packets_total{cpu="1",interface="dut0",mode="rxdrop",queue="0"} 1000`) ||
		!strings.Contains(body, "process_cpu_seconds_total") {
		t.Errorf("GET /metrics: %d\n%s", code, body)
	}
	problems, err := promlint.New(strings.NewReader(body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	for _, path := range []string{"/", "/metrics/", "/debug/pprof/", "/metricsx"} {
		if code, _ := get("GET", path); code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, code)
		}
	}
	if code, _ := get("POST", "/metrics"); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /metrics: %d, want 405", code)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after Close", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the port is not free after Close: %v", err)
	}
	ln.Close()
}

func TestServeBadAddress(t *testing.T) {
	for _, addr := range []string{"9100", "127.0.0.1:99999", "nosuchhost.invalid:9100"} {
		if s, err := Listen(addr); err == nil {
			s.Close()
			t.Errorf("Serve(%q) succeeded", addr)
		} else if !strings.Contains(err.Error(), addr) {
			t.Errorf("Serve(%q): %v does not name the address", addr, err)
		}
	}
	// Taken: the second server on the same port fails.
	s, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s2, err := Listen(s.Addr().String()); err == nil {
		s2.Close()
		t.Errorf("a second server on %s started", s.Addr())
	} else if !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("second server: %v, want EADDRINUSE", err)
	}
}
