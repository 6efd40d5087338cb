//go:build linux

package compare

import (
	"context"
	"encoding/json"
	"maps"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

func TestMain(m *testing.M) {
	code := privtest.Main(m)
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// run compares paths on bed for d each.
func run(t *testing.T, bed *testbed.Bed, d time.Duration, paths ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{Bed: bed, Paths: paths, Duration: d})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, row := range res.Rows {
		if row.Error != "" {
			t.Errorf("%s: %s", row.Path, row.Error)
		}
	}
	return res
}

// prepared sets up what Run sets up before its paths (cfg checked by the
// caller) and returns the environment, its setup and the teardown, which
// the caller defers: it reports a teardown error as the test's.
func prepared(t *testing.T, cfg *Config) (*env, Setup, func()) {
	t.Helper()
	var setup Setup
	e, done, err := prepare(context.Background(), cfg, &setup)
	teardown := func() {
		if err := done(); err != nil {
			t.Error(err)
		}
	}
	if err != nil {
		teardown()
		t.Fatal(err)
	}
	return e, setup, teardown
}

// socketState is what a path could leave behind in this process.
func socketState(t *testing.T) (sockets int, mapped []string) {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if target, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasPrefix(target, "socket:") {
			sockets++
		}
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(maps), "\n") {
		if strings.Contains(l, "socket:[") {
			mapped = append(mapped, l)
		}
	}
	return sockets, mapped
}

// checkClean fails if any interface of the bed has an XDP or tc program,
// the bridge is still there, or queue 0 of dut0 cannot be bound again.
func checkClean(t *testing.T, bed *testbed.Bed) {
	t.Helper()
	check := func(ns string, names func(testbed.Link) (string, int)) {
		err := testbed.Do(ns, func() error {
			for _, l := range bed.Links {
				name, idx := names(l)
				h, err := testbedtest.ReadHooks(idx)
				if err != nil {
					return err
				}
				if !h.Empty() {
					t.Errorf("%s: programs left attached: %+v", name, h)
				}
			}
			if _, err := netlink.LinkByName(bridgeName); err == nil {
				t.Errorf("bridge %s left in %s", bridgeName, ns)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	check(bed.DUTNS, func(l testbed.Link) (string, int) { return l.DUT, l.DUTIndex })
	check(bed.GenNS, func(l testbed.Link) (string, int) { return l.Gen, l.GenIndex })
	// A socket left bound (or held by a ring mapping) would make this
	// bind fail with EBUSY.
	err := bed.InDUT(func() error {
		cfg := engine.DefaultConfig()
		cfg.Interface = bed.Links[0].DUT
		eng, err := engine.New(cfg)
		if err != nil {
			return err
		}
		return eng.Close()
	})
	if err != nil {
		t.Errorf("queue 0 of dut0 cannot be bound again: %v", err)
	}
}

// TestEveryPath runs every path briefly on one bed: each gives a JSON row
// with the fields, and leaves no program, socket or mapping behind.
func TestEveryPath(t *testing.T) {
	bed := testbedtest.New(t, 1, 3)
	sockets, _ := socketState(t)
	all := Paths("")
	res := run(t, bed, 700*time.Millisecond, pathNames(all)...)
	if len(res.Rows) != len(all) {
		t.Fatalf("%d rows for %d paths", len(res.Rows), len(all))
	}
	b, err := json.Marshal(&res)
	if err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Setup map[string]any   `json:"setup"`
		Rows  []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(b, &decoded); err != nil {
		t.Fatal(err)
	}
	for i, row := range decoded.Rows {
		if row["path"] != all[i].Name {
			t.Errorf("row %d is %v, want %s", i, row["path"], all[i].Name)
		}
		for _, f := range []string{"mpps", "ns_per_packet", "sent", "received", "dropped", "drop_reasons", "cpu_percent", "env"} {
			if _, ok := row[f]; !ok {
				t.Errorf("%s: JSON row has no %q", all[i].Name, f)
			}
		}
	}
	checkEnv(t, res)
	for _, row := range res.Rows {
		t.Logf("%-20s %6.3f Mpps %7.1f ns/pkt sent %d received %d reasons %v unexplained %d",
			row.Path, row.Mpps, row.NsPerPacket, row.Sent, row.Received, row.Reasons, row.Unexplained)
		if row.Received == 0 {
			t.Errorf("%s received nothing", row.Path)
		}
		// Exact accounting: compare drains (waits until no counter moves
		// with the generator stopped) before the last sample, so no frame
		// is in flight and every one is received or counted as dropped.
		if row.Unexplained != 0 {
			t.Errorf("%s: %d frames unexplained (sent %d x%d, received %d, reasons %v)",
				row.Path, row.Unexplained, row.Sent, row.Copies, row.Received, row.Reasons)
		}
	}
	checkClean(t, bed)
	if n, mapped := socketState(t); n != sockets || len(mapped) > 0 {
		t.Errorf("sockets open before %d, after %d; socket mappings left: %q", sockets, n, mapped)
	}
}

// checkEnv checks that every row carries the run's environment with its
// own XDP mode, and that the mitigation state is the machine's.
func checkEnv(t *testing.T, res Result) {
	t.Helper()
	b, err := os.ReadFile("/sys/devices/system/cpu/vulnerabilities/spectre_v2")
	if err != nil {
		privtest.Unsupported(t, "no spectre_v2 file: %v", err)
	}
	want := strings.TrimSpace(string(b))
	if res.Setup.Env.SpectreV2 != want {
		t.Errorf("setup env spectre_v2 %q, the machine's is %q", res.Setup.Env.SpectreV2, want)
	}
	for _, row := range res.Rows {
		e := row.Env
		if e.SpectreV2 != want || e.Driver != "veth" || e.Queues != res.Setup.Queues || e.FrameSize != res.Setup.FrameSize ||
			e.Layout == "" || e.Generator == "" || e.XDPMode == "" || e.Kernel == "" {
			t.Errorf("%s: env %+v", row.Path, e)
		}
	}
}

// TestInterrupted cancels a comparison in the middle of a path: the path
// is torn down and nothing stays attached.
func TestInterrupted(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	for _, p := range []string{"asavie-drop", "xsk-drop", "tc-drop"} {
		ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
		_, err := Run(ctx, Config{Bed: bed, Paths: []string{p}, Duration: 5 * time.Second})
		cancel()
		if err == nil {
			t.Errorf("%s: Run was not interrupted", p)
		}
	}
	checkClean(t, bed)
}

// TestLostToADeviceThatIsDown redirects into a port that is down: every
// frame is lost, and the row says why, once: a redirect error ENETDOWN
// per frame (from the xdp tracepoints), not also a veth rx drop.
func TestLostToADeviceThatIsDown(t *testing.T) {
	bed := testbedtest.New(t, 1, 2)
	err := bed.InDUT(func() error {
		l, err := netlink.LinkByName(bed.Links[1].DUT)
		if err != nil {
			return err
		}
		return netlink.LinkSetDown(l)
	})
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, bed, 500*time.Millisecond, "xdp-redirect", "xdp-redirect-generic")
	for _, row := range res.Rows {
		t.Logf("%s: sent %d received %d reasons %v unexplained %d", row.Path, row.Sent, row.Received, row.Reasons, row.Unexplained)
		want := map[string]uint64{"xdp_redirect_err_ENETDOWN": row.Sent}
		if row.Sent == 0 || row.Received != 0 || row.Unexplained != 0 || !maps.Equal(row.Reasons, want) {
			t.Errorf("%s: sent %d, received %d, reasons %v, unexplained %d; want every frame lost as %v",
				row.Path, row.Sent, row.Received, row.Reasons, row.Unexplained, want)
		}
	}
	var notes strings.Builder
	WriteTable(&notes, &res)
	if !strings.Contains(notes.String(), "xdp_redirect_err_ENETDOWN") || !strings.Contains(notes.String(), "from the xdp tracepoints") {
		t.Errorf("the table does not explain the loss:\n%s", notes.String())
	}
}

// nopGuard is an engine.NAPIGuard that guards nothing.
type nopGuard struct{}

func (nopGuard) Changing(engine.NAPIChange) error { return nil }
func (nopGuard) Restored(engine.NAPIChange)       {}

// TestNAPIGuardPerEngine: Config.NAPIGuard makes a guard for each engine
// of xdpeng's AF_XDP paths, for the DUT's device, in the DUT's network
// namespace (where the guard process must run to find the NAPIs), and
// each guard is ended after its path.
func TestNAPIGuardPerEngine(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	var made, ended int
	var errs []string
	cfg := Config{Bed: bed, Paths: []string{"xsk-drop", "xdp-drop", "xsk-drop-busy-poll"}, Duration: 500 * time.Millisecond,
		NAPIGuard: func(iface string) (engine.NAPIGuard, func() error) {
			made++
			if iface != bed.Links[0].DUT {
				errs = append(errs, "guard for "+iface)
			}
			if _, err := net.InterfaceByName(iface); err != nil {
				errs = append(errs, "guard made outside the DUT's namespace: "+err.Error())
			}
			return nopGuard{}, func() error { ended++; return nil }
		}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	for _, e := range errs {
		t.Error(e)
	}
	if made != 2 || ended != 2 {
		t.Errorf("guards made %d, ended %d; want one for each of the 2 AF_XDP paths", made, ended)
	}
}
