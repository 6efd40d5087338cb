//go:build linux

package compare

import (
	"context"
	"encoding/json"
	"maps"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/engine"
	labenv "github.com/xdpeng/xdpeng/internal/lab/env"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/remote"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// TestRemoteSpecs: every path marked Remote has a command on the DUT, and
// no other path does.
func TestRemoteSpecs(t *testing.T) {
	for _, p := range AllPaths() {
		if _, ok := remoteSpecs[p.Name]; ok != p.Remote {
			t.Errorf("%s: Remote %v, but a remote command: %v", p.Name, p.Remote, ok)
		}
	}
	for name := range remoteSpecs {
		if _, ok := LookupPath(name); !ok {
			t.Errorf("remote command for %s, which is no path", name)
		}
	}
}

func TestRemoteRunnable(t *testing.T) {
	drop := pathNames(Paths(Drop))
	for _, tc := range []struct {
		ports     int
		run, left []string
	}{
		{1, []string{"xdp-drop", "xdp-drop-generic", "tc-drop", "xsk-drop", "xdp-tx", "xsk-l2fwd"}, []string{"asavie-drop", "af-packet", "xdp-redirect-cpu"}},
	} {
		r := &Remote{DUTInterfaces: make([]string, tc.ports)}
		run, left := r.Runnable(drop)
		if !slices.Equal(run, tc.run) || !slices.Equal(left, tc.left) {
			t.Errorf("%d port(s): run %v, left %v; want %v, %v", tc.ports, run, left, tc.run, tc.left)
		}
	}
	fwd := pathNames(Paths(Forward))
	for ports, want := range map[int][]string{
		1: nil,
		2: {"xdp-redirect", "xdp-redirect-generic", "xsk-fwd"},
		3: {"xdp-redirect", "xdp-redirect-generic", "xdp-redirect-multi", "xsk-fwd"},
	} {
		run, _ := (&Remote{DUTInterfaces: make([]string, ports)}).Runnable(fwd)
		if !slices.Equal(run, want) {
			t.Errorf("forward family on %d port(s): %v, want %v", ports, run, want)
		}
	}
}

// TestRemoteCheck: what a two-host run refuses before it reaches the DUT.
func TestRemoteCheck(t *testing.T) {
	r, err := remote.NewRunner(remote.Target{Host: "dut"}, "")
	if err != nil {
		t.Fatal(err)
	}
	good := func() Config {
		return Config{Remote: &Remote{Runner: r, DUTInterfaces: []string{"eth1"}, GenInterfaces: []string{"eth2"}}, Duration: time.Second}
	}
	c := good()
	if err := c.Resolve(); err != nil {
		t.Fatalf("a good two-host config: %v", err)
	}
	if want := []string{"xdp-drop", "xdp-drop-generic", "tc-drop", "xsk-drop", "xdp-tx", "xsk-l2fwd"}; !slices.Equal(c.Paths, want) {
		t.Errorf("default paths %v, want the drop family's that run there, %v", c.Paths, want)
	}
	if len(c.GenCPUs) != 1 || c.DUTCPUs != nil {
		t.Errorf("CPUs: generator %v, DUT %v; want one generator CPU here, the DUT's left to the DUT", c.GenCPUs, c.DUTCPUs)
	}
	for _, tc := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.Testbed = true }, "either a test bed or a DUT on another host"},
		{func(c *Config) { c.Interface = "eth0" }, "either an interface of this host"},
		{func(c *Config) { c.Remote.GenInterfaces = nil }, "1 DUT port(s) (eth1) but 0 of the tester's"},
		{func(c *Config) { c.Remote.DUTInterfaces = nil }, "no DUT port given"},
		{func(c *Config) { c.Remote.DUTInterfaces = []string{"eth 1"} }, `interface name "eth 1" is not one`},
		{func(c *Config) {
			c.Remote.DUTInterfaces, c.Remote.GenInterfaces = []string{"a", "a"}, []string{"b", "c"}
		}, "interface a given twice"},
		{func(c *Config) { c.Paths = []string{"bridge"} }, "path bridge has no xdpeng command"},
		{func(c *Config) { c.Paths = []string{"xsk-fwd"} }, "path xsk-fwd needs 2 DUT ports"},
		{func(c *Config) { c.Layout = LayoutB }, "a layout is the test bed's"},
		{func(c *Config) { c.NDR = &NDRConfig{Trial: time.Millisecond, Resolution: 0.01} }, "trial length 1ms is too short"},
	} {
		c := good()
		tc.change(&c)
		if err := c.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check: %v; want %q", err, tc.want)
		}
	}
	// NDR runs on two hosts: there is a generator.
	c = good()
	c.NDR = &NDRConfig{Trial: time.Second, Resolution: 0.01}
	if err := c.Resolve(); err != nil {
		t.Errorf("NDR on two hosts: %v", err)
	}
	if with, without := sessionLength(&c), sessionLength(&Config{Duration: time.Second}); with <= without+20*time.Second {
		t.Errorf("a session with an NDR search may last %v, one without %v: the search's trials are not in it", with, without)
	}
}

func testLinks() []testbed.Link {
	mac := func(s string) net.HardwareAddr { m, _ := net.ParseMAC(s); return m }
	return []testbed.Link{
		{Gen: "gen0", DUT: "eth1", GenMAC: mac("02:00:00:00:00:01")},
		{Gen: "gen1", DUT: "eth2", GenMAC: mac("02:00:00:00:01:01")},
		{Gen: "gen2", DUT: "eth3", GenMAC: mac("02:00:00:00:02:01")},
	}
}

// TestRemoteArgs: the command each path runs on the DUT.
func TestRemoteArgs(t *testing.T) {
	e := &env{links: testLinks(), queues: []int{0, 1}, cpus: []int{3, 2}}
	for name, want := range map[string]string{
		"xdp-drop":             "kern drop -i eth1 -N",
		"xdp-drop-generic":     "kern drop -i eth1 -S",
		"tc-drop":              "kern drop -i eth1 --hook tc",
		"xdp-tx":               "kern tx -i eth1 -N",
		"xdp-redirect":         "kern redirect -i eth1 -N -o eth2",
		"xdp-redirect-generic": "kern redirect -i eth1 -S -o eth2",
		"xdp-redirect-multi":   "kern redirect -i eth1 -N -o eth2,eth3",
		"xsk-drop":             "rxdrop -i eth1 -q 0,1 --cpus 3,2",
		"xsk-l2fwd":            "l2fwd -i eth1 -q 0,1 --cpus 3,2",
		"xsk-fwd":              "fwd -i eth1 -q 0,1 --cpus 3,2 -o eth2 -G 02:00:00:00:01:01",
	} {
		if got := strings.Join(remoteSpecs[name].args(e, pathOpts{}), " "); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	op := pathOpts{packetOp: "parse-ip", loadBytes: true}
	for name, want := range map[string]string{
		"xdp-drop": "kern drop -i eth1 -N -p parse-ip -l load-bytes",
		"tc-drop":  "kern drop -i eth1 --hook tc",
		"xsk-drop": "rxdrop -i eth1 -q 0,1 --cpus 3,2",
	} {
		if got := strings.Join(remoteSpecs[name].args(e, op), " "); got != want {
			t.Errorf("%s with a packet operation: %q, want %q", name, got, want)
		}
	}
	for w, flag := range map[engine.WaitMode]string{engine.WaitAdaptive: "", engine.WaitBusy: " --busy", engine.WaitPoll: " -p", engine.WaitBusyPoll: " -B"} {
		if got, want := strings.Join(remoteSpecs["xsk-l2fwd"].args(e, pathOpts{wait: w}), " "), "l2fwd -i eth1 -q 0,1 --cpus 3,2"+flag; got != want {
			t.Errorf("%s: %q, want %q", w, got, want)
		}
	}
}

// line makes a remote.Line of a JSON object.
func line(t *testing.T, v map[string]any) remote.Line {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return remote.Line{Type: v["type"].(string), JSON: b}
}

func statsInterval(t *testing.T, dev string, ethtool, netdev map[string]uint64) remote.Line {
	t.Helper()
	rates := func(m map[string]uint64) []map[string]any {
		out := []map[string]any{}
		for k, v := range m {
			out = append(out, map[string]any{"name": k, "delta": v, "per_sec": 0})
		}
		return out
	}
	return line(t, map[string]any{"type": "interval", "mode": "stats", "devices": []map[string]any{
		{"interface": dev, "interval_s": 0.05, "ethtool": rates(ethtool), "netdev": rates(netdev)}},
		"cpu_times": map[string]any{"0": map[string]uint64{"user": 10, "idle": 90}}})
}

// TestRemoteSample: the DUT's lines make a sample as the local runners
// make theirs: the path's counters, and the device's as totals since the
// stats began (the sum of their changes).
func TestRemoteSample(t *testing.T) {
	e := &env{links: testLinks(), driver: "veth", remote: &remoteDUT{cfg: &Remote{}}}
	rr, err := newRemoteRunner("xsk-l2fwd", e, pathOpts{})
	if err != nil {
		t.Fatal(err)
	}
	r := rr.(*remoteRunner)
	r.wantMode, r.wantIface, r.ports = "l2fwd", "eth1", []string{"eth1"}
	r.onStats(statsInterval(t, "eth1", map[string]uint64{"rx_queue_0_xdp_packets": 100, "rx_queue_0_drops": 7, "tx_queue_0_xdp_xmit_errors": 1},
		map[string]uint64{"tx_dropped": 2}))
	r.onStats(statsInterval(t, "eth1", map[string]uint64{"rx_queue_0_xdp_packets": 50, "rx_queue_1_xdp_packets": 25, "rx_queue_1_drops": 3},
		map[string]uint64{"tx_dropped": 1}))
	r.onStats(line(t, map[string]any{"type": "summary", "devices": []any{}})) // not an interval: ignored
	r.onPath(line(t, map[string]any{"type": "interval", "mode": "l2fwd", "interface": "eth1", "rx_packets": 160, "tx_packets": 150, "xdp_mode": "native", "zero_copy": false,
		"xdp_stats": map[string]uint64{"rx_dropped": 2, "rx_ring_full": 3}, "tx_ring_full": 4, "handler_dropped": 0}))
	if r.pathN != 1 || r.statsN != 2 {
		t.Fatalf("%d path and %d stats intervals counted, want 1 and 2", r.pathN, r.statsN)
	}
	s := r.read()
	want := map[string]uint64{"veth_rx_drops": 10, "socket_drops": 5, "tx_ring_full": 4, "egress_xmit_errors": 1, "egress_tx_dropped": 3}
	if !maps.Equal(s.reasons, want) || s.received != 160 || !s.portKnown || s.portIn != 175 || s.cpu[0].User != 10 {
		t.Errorf("sample %+v; want reasons %v, received 160, port in 175", s, want)
	}
	// veth's rx drops include the socket's: the row keeps the rest.
	received, reasons := account(sample{reasons: map[string]uint64{}}, s)
	if received != 160 || reasons["veth_rx_drops"] != 5 || reasons["socket_drops"] != 5 {
		t.Errorf("accounted %d, %v", received, reasons)
	}
	if m := r.xdpMode(); m != "native, AF_XDP copy" {
		t.Errorf("xdp mode %q", m)
	}
	if got := r.countedAt(); got != "frames that came back: tc ingress counter on the tester's gen0" {
		t.Errorf("counted at %q", got)
	}
	r.onPath(remote.Line{Type: "interval", JSON: []byte(`{"type":"interval","rx_packets":"many"}`)})
	if _, err := r.sample(); err == nil || !strings.Contains(err.Error(), "many") {
		t.Errorf("a line that does not parse: sample gives %v", err)
	}
}

// TestRemoteHostileLines: a DUT's line that claims to be from another
// command or port, whose counters go down, or whose totals would wrap ends
// the path with an error that says so; the counters it would have set are
// not taken.
func TestRemoteHostileLines(t *testing.T) {
	path := func(mode, iface string, rx uint64, drops uint64) remote.Line {
		return line(t, map[string]any{"type": "interval", "mode": mode, "interface": iface, "rx_packets": rx,
			"xdp_stats": map[string]uint64{"rx_dropped": drops}})
	}
	for _, tc := range []struct {
		name  string
		lines []func(r *remoteRunner)
		says  string
	}{
		{"another path", []func(r *remoteRunner){func(r *remoteRunner) { r.onPath(path("kern-drop", "eth1", 10, 0)) }},
			"a line of kern-drop on eth1, not of the command started (rxdrop on eth1)"},
		{"another port", []func(r *remoteRunner){func(r *remoteRunner) { r.onPath(path("rxdrop", "eth9", 10, 0)) }},
			"not of the command started"},
		{"rx going down", []func(r *remoteRunner){
			func(r *remoteRunner) { r.onPath(path("rxdrop", "eth1", 10, 0)) },
			func(r *remoteRunner) { r.onPath(path("rxdrop", "eth1", 9, 0)) }},
			"rx_packets went down, from 10 to 9"},
		{"socket drops going down", []func(r *remoteRunner){
			func(r *remoteRunner) { r.onPath(path("rxdrop", "eth1", 10, 5)) },
			func(r *remoteRunner) { r.onPath(path("rxdrop", "eth1", 11, 4)) }},
			"rx_dropped went down"},
		{"stats of another command", []func(r *remoteRunner){func(r *remoteRunner) {
			r.onStats(line(t, map[string]any{"type": "interval", "mode": "rxdrop", "devices": []any{}}))
		}}, `a line of "rxdrop", not of xdpeng stats`},
		{"stats of another port", []func(r *remoteRunner){func(r *remoteRunner) {
			r.onStats(statsInterval(t, "eth7", map[string]uint64{"rx_queue_0_drops": 1}, nil))
		}}, `a line about "eth7", which is none of the ports watched (eth1)`},
		{"an escape sequence", []func(r *remoteRunner){func(r *remoteRunner) {
			r.onPath(line(t, map[string]any{"type": "interval", "mode": "rxdrop", "interface": "eth1", "xdp_mode": "\x1b]0;owned\a"}))
		}}, "holds control characters"},
		{"stats wrapping", []func(r *remoteRunner){
			func(r *remoteRunner) {
				r.onStats(statsInterval(t, "eth1", map[string]uint64{"rx_queue_0_drops": 1 << 63}, nil))
			},
			func(r *remoteRunner) {
				r.onStats(statsInterval(t, "eth1", map[string]uint64{"rx_queue_0_drops": 1 << 63}, nil))
			}},
			"would pass 2^64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &env{links: testLinks(), driver: "veth", remote: &remoteDUT{cfg: &Remote{}}}
			rr, err := newRemoteRunner("xsk-drop", e, pathOpts{})
			if err != nil {
				t.Fatal(err)
			}
			r := rr.(*remoteRunner)
			r.wantMode, r.wantIface, r.ports = "rxdrop", "eth1", []string{"eth1"}
			for _, l := range tc.lines {
				l(r)
			}
			if _, err := r.sample(); err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("sample: %v; want an error saying %q", err, tc.says)
			}
		})
	}
}

// TestLostOnWire: what the generator's port sent and the DUT's port never
// counted is a drop reason of its own, and the count closes.
func TestLostOnWire(t *testing.T) {
	base := sample{reasons: map[string]uint64{}, portKnown: true, portIn: 1000}
	final := sample{received: 90, reasons: map[string]uint64{"socket_drops": 5}, portKnown: true, portIn: 1095}
	row := newRow(PathInfo{Name: "xsk-drop"}, labenv.Env{})
	row.settle(base, final, &gen.Stats{Sent: 110, DeviceCounters: true, Xmit: 100, Errors: 4})
	want := map[string]uint64{"socket_drops": 5, "xmit_errors": 4, "lost_before_driver": 6, LostOnWire: 5}
	if !maps.Equal(row.Reasons, want) || row.Unexplained != 0 || row.Dropped != 20 {
		t.Errorf("reasons %v, dropped %d, unexplained %d; want %v, 20, 0", row.Reasons, row.Dropped, row.Unexplained, want)
	}
	// A DUT port that counted more (other traffic) loses nothing on the
	// wire; without the port's count there is no such reason.
	final.portIn = 1200
	row = newRow(PathInfo{Name: "xsk-drop"}, labenv.Env{})
	row.settle(base, final, &gen.Stats{Sent: 100})
	if _, ok := row.Reasons[LostOnWire]; ok {
		t.Errorf("reasons %v: a wire loss where the DUT counted more than was sent", row.Reasons)
	}
}

// fakeRunner's counters move for its first moves samples.
type fakeRunner struct {
	n, moves int
}

func (f *fakeRunner) start(context.Context) error { return nil }
func (f *fakeRunner) stop() error                 { return nil }
func (f *fakeRunner) countedAt() string           { return "" }
func (f *fakeRunner) copies() int                 { return 1 }
func (f *fakeRunner) xdpMode() string             { return "" }
func (f *fakeRunner) sample() (sample, error) {
	f.n++
	time.Sleep(30 * time.Millisecond) // as a remote DUT's next report
	return sample{received: uint64(min(f.n, f.moves)), reasons: map[string]uint64{}}, nil
}

// TestDrainByTime: the counters come to rest after they stop moving for
// 100 ms, however long each sample takes.
func TestDrainByTime(t *testing.T) {
	f := &fakeRunner{moves: 5}
	s, settled, err := drain(context.Background(), f)
	if err != nil || !settled || s.received != 5 {
		t.Errorf("drain: %+v, settled %v, %v; want 5 received, settled", s, settled, err)
	}
}

// TestRemoteTraceReasons: the DUT's own tracepoint counts (its xdpeng -e)
// name a loss as the local run does: by errno, and in native mode inside
// veth's rx drops, not beside them.
func TestRemoteTraceReasons(t *testing.T) {
	e := &env{links: testLinks(), driver: "veth", remote: &remoteDUT{cfg: &Remote{}}}
	rr, err := newRemoteRunner("xdp-redirect", e, pathOpts{})
	if err != nil {
		t.Fatal(err)
	}
	r := rr.(*remoteRunner)
	r.onStats(statsInterval(t, "eth1", map[string]uint64{"rx_queue_0_xdp_packets": 10, "rx_queue_0_drops": 10}, nil))
	r.onPath(line(t, map[string]any{"type": "interval", "rx_packets": 10, "xdp_errors_since_start": map[string]any{
		"redirect_errors": []map[string]any{{"errno": 100, "map_type": 14, "frames": 10}}}}))
	s := r.read()
	received, reasons := account(sample{reasons: map[string]uint64{}}, s)
	if want := map[string]uint64{"xdp_redirect_err_ENETDOWN": 10}; received != 10 || !maps.Equal(reasons, want) {
		t.Errorf("accounted %d, %v; want 10 received (the program's count), %v", received, reasons, want)
	}
}

// TestTxHelper: a tester's port whose driver sends XDP frames only while a
// program is attached gets XDP_PASS for the paths whose sink is not an XDP
// program on it.
func TestTxHelper(t *testing.T) {
	for _, tc := range []struct {
		path string
		tx   netdev.TxNeed
		want bool
	}{
		{"xdp-drop", netdev.TxNeedsProgram, true},
		{"xsk-l2fwd", netdev.TxNeedsProgram, true}, // its sink is tc
		{"xdp-tx", netdev.TxNeedsProgram, false},   // its sink is XDP
		{"xdp-drop", netdev.TxReady, false},
		{"xdp-drop", netdev.TxNeedsPeer, false},
	} {
		e := &env{links: testLinks(), remote: &remoteDUT{cfg: &Remote{}, genTx: []netdev.TxNeed{tc.tx}}}
		rr, err := newRemoteRunner(tc.path, e, pathOpts{})
		if err != nil {
			t.Fatal(err)
		}
		if got := rr.(*remoteRunner).needsTxHelper(); got != tc.want {
			t.Errorf("%s on a port that is %s: helper %v, want %v", tc.path, tc.tx, got, tc.want)
		}
	}
}

func TestDefaultDUTCPUs(t *testing.T) {
	for _, tc := range []struct {
		online []int
		queues int
		want   []int
	}{
		{[]int{0, 1}, 2, []int{1, 0}},
		{[]int{0, 1}, 1, []int{1}},
		{[]int{0, 1, 2, 3}, 2, []int{3, 2}},
	} {
		got, err := defaultDUTCPUs(tc.online, tc.queues)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("defaultDUTCPUs(%v, %d) = %v, %v; want %v", tc.online, tc.queues, got, err, tc.want)
		}
	}
	if got, err := defaultDUTCPUs([]int{0, 1}, 3); err == nil {
		t.Errorf("3 queues on 2 CPUs: %v, no error", got)
	}
}
