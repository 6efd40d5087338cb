//go:build linux

package compare

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/xdpeng/xdpeng/internal/lab/remote"
	"github.com/xdpeng/xdpeng/internal/lab/remote/remotetest"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// The xdpeng binary of this worktree, built once: the DUT's (the "other
// host" is this machine's DUT namespace, which shares its files).
// TestMain removes its directory.
var (
	buildOnce sync.Once
	buildDir  string
	buildPath string
	buildErr  error
)

func xdpengBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "xdpeng-compare-test-"); buildErr == nil {
			buildPath, buildErr = remotetest.BuildXdpeng(buildDir)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildPath
}

// twoHosts makes a bed whose last link is a management link: sshd listens
// on its DUT end, as a lab's DUT would on a port of its management
// network, so that the paths, which take every frame of dut0, do not cut
// the session. It returns the bed, the server, and a Remote whose tester
// side is the bed's generator namespace, over the first links-1 links.
func twoHosts(t *testing.T, links int) (*testbed.Bed, *remotetest.Server, *Remote) {
	t.Helper()
	privtest.Root(t)
	remotetest.RequireOpenSSH(t)
	bed := testbedtest.New(t, 1, links)
	srv := remotetest.StartOn(t, bed, links-1)
	r := srv.Runner(t)
	built, err := remote.HashFile(xdpengBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	bin, err := r.Install(context.Background(), built, "")
	if err != nil {
		t.Fatal(err)
	}
	rc := &Remote{Runner: r, Binary: bin, GenNamespace: bed.GenNS}
	for _, l := range bed.Links[:links-1] {
		rc.DUTInterfaces = append(rc.DUTInterfaces, l.DUT)
		rc.GenInterfaces = append(rc.GenInterfaces, l.Gen)
	}
	return bed, srv, rc
}

// exact checks a row's accounting: sent = received + every reason +
// unexplained, with nothing unexplained.
func exact(t *testing.T, mode string, row Row) {
	t.Helper()
	var reasons uint64
	for _, v := range row.Reasons {
		reasons += v
	}
	want := row.Sent * uint64(max(row.Copies, 1))
	if row.Error != "" || row.Sent == 0 || row.Received == 0 || row.Unexplained != 0 ||
		row.Received+reasons != want || row.Dropped != want-row.Received {
		t.Errorf("%s %s: error %q, sent %d x%d, received %d, dropped %d, reasons %v, unexplained %d: the count does not close",
			mode, row.Path, row.Error, row.Sent, row.Copies, row.Received, row.Dropped, row.Reasons, row.Unexplained)
	}
}

// TestTwoHostsSameRows runs the same comparison on one bed twice: with the
// DUT's side here (local), and driven over ssh as on a DUT that is another
// host. Both give the same paths in the same order, each counted exactly,
// with the same XDP modes and where they count; rates are not compared
// (noise).
func TestTwoHostsSameRows(t *testing.T) {
	bed, srv, rc := twoHosts(t, 3)
	paths := []string{"xdp-drop", "xdp-drop-generic", "tc-drop", "xsk-drop", "xdp-tx", "xsk-l2fwd", "xdp-redirect", "xsk-fwd"}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	local, err := Run(ctx, Config{Bed: bed, Paths: paths, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	remoteRes, err := Run(ctx, Config{Remote: rc, Paths: paths, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if s := remoteRes.Setup; s.Mode != "remote" || s.DUT != rc.Runner.Target.String() || s.Interface != "dut0" ||
		!slices.Equal(s.GenInterfaces, []string{"gen0", "gen1"}) || s.Env.Driver != "veth" || s.Env.Kernel == "" {
		t.Errorf("remote setup %+v", s)
	}
	rowPaths := func(r Result) (p []string) {
		for _, row := range r.Rows {
			p = append(p, row.Path)
		}
		return p
	}
	if !slices.Equal(rowPaths(local), paths) || !slices.Equal(rowPaths(remoteRes), paths) {
		t.Fatalf("rows: local %v, remote %v; want %v", rowPaths(local), rowPaths(remoteRes), paths)
	}
	for i, l := range local.Rows {
		r := remoteRes.Rows[i]
		t.Logf("%-12s local  %7.3f Mpps sent %9d received %9d reasons %v", l.Path, l.Mpps, l.Sent, l.Received, l.Reasons)
		t.Logf("%-12s remote %7.3f Mpps sent %9d received %9d reasons %v", r.Path, r.Mpps, r.Sent, r.Received, r.Reasons)
		exact(t, "local", l)
		exact(t, "remote", r)
		if r.Env.XDPMode != l.Env.XDPMode || r.Copies != l.Copies || r.Family != l.Family {
			t.Errorf("%s: remote XDP mode %q, copies %d; local %q, %d", r.Path, r.Env.XDPMode, r.Copies, l.Env.XDPMode, l.Copies)
		}
		if r.CountedAt == "" || r.WindowPackets == 0 || len(r.CPU) == 0 {
			t.Errorf("%s: remote row without where it counts (%q), a window (%d frames) or CPU figures (%v)", r.Path, r.CountedAt, r.WindowPackets, r.CPU)
		}
		// The reasons are the DUT's own counters, named as the local
		// run names them; the veth between loses nothing.
		for k := range r.Reasons {
			if k == LostOnWire {
				t.Errorf("%s: %d frames lost on a veth", r.Path, r.Reasons[k])
			}
		}
	}
	checkClean(t, bed)
	noSessions(t, srv)
}

// TestTwoHostsLatencyAndNDR: a latency run and a zero-loss search on the
// DUT over ssh, each frame's fate counted exactly, timed by this host's
// clock only.
func TestTwoHostsLatencyAndNDR(t *testing.T) {
	bed, srv, rc := twoHosts(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lat, err := RunLatency(ctx, LatencyConfig{Config: Config{Remote: rc, Paths: []string{"xdp-tx", "xsk-l2fwd"}, Duration: time.Second, Rate: 20_000}})
	if err != nil {
		t.Fatal(err)
	}
	if len(lat.Rows) != 5 { // xdp-tx, and xsk-l2fwd in each of 4 wait modes
		t.Errorf("%d latency rows, want 5", len(lat.Rows))
	}
	for _, row := range lat.Rows {
		t.Logf("%-22s sent %d received %d lost %d p50 %d ns reasons %v", row.Name(), row.Sent, row.Received, row.Lost, row.Latency.P50, row.Reasons)
		if row.Error != "" || row.Sent != lat.Frames || row.Received+row.Lost != row.Sent || row.Received == 0 || row.Latency.P50 == 0 ||
			row.Receiver != map[string]string{"xdp-tx": "xdp on gen0", "xsk-l2fwd": "tc ingress on gen0"}[row.Path] {
			t.Errorf("%s: %+v", row.Name(), row)
		}
	}
	var text strings.Builder
	WriteLatencyTable(&text, &lat)
	if !strings.Contains(text.String(), "both clock readings are the tester's") {
		t.Errorf("the latency table does not say whose clock timed the frames:\n%s", text.String())
	}

	res, err := Run(ctx, Config{Remote: rc, Paths: []string{"xdp-drop"}, Duration: time.Second,
		NDR: &NDRConfig{Trial: 500 * time.Millisecond, Resolution: 0.25}})
	if err != nil {
		t.Fatal(err)
	}
	row := res.Rows[0]
	exact(t, "remote", row)
	if row.NDR == nil || len(row.NDR.Steps) == 0 {
		t.Fatalf("no NDR search: %+v", row)
	}
	for _, st := range append(row.NDR.Steps, row.NDR.Checks...) {
		if st.Sent == 0 || st.Unexplained != 0 {
			t.Errorf("NDR trial %d at %d pps: sent %d, lost %d, reasons %v, unexplained %d", st.N, st.RatePPS, st.Sent, st.Lost, st.Reasons, st.Unexplained)
		}
	}
	checkClean(t, bed)
	noSessions(t, srv)
}

// TestTwoHostsLostToADeviceThatIsDown: the DUT's own xdp tracepoints (its
// xdpeng -e) explain a loss there as they do here.
func TestTwoHostsLostToADeviceThatIsDown(t *testing.T) {
	bed, _, rc := twoHosts(t, 3)
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
	res, err := Run(context.Background(), Config{Remote: rc, Paths: []string{"xdp-redirect"}, Duration: 700 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	row := res.Rows[0]
	want := map[string]uint64{"xdp_redirect_err_ENETDOWN": row.Sent}
	if row.Error != "" || row.Sent == 0 || row.Received != 0 || row.Unexplained != 0 || !maps.Equal(row.Reasons, want) {
		t.Errorf("sent %d, received %d, reasons %v, unexplained %d, error %q; want every frame lost as %v",
			row.Sent, row.Received, row.Reasons, row.Unexplained, row.Error, want)
	}
	checkClean(t, bed)
}

// TestTwoHostsErrors: a DUT that cannot be reached, a key it refuses, a
// binary it does not have and a port it does not have each end the run
// before anything is attached, with the error that says which.
func TestTwoHostsErrors(t *testing.T) {
	bed, srv, rc := twoHosts(t, 2)
	run := func(rc *Remote) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := Run(ctx, Config{Remote: rc, Paths: []string{"xdp-drop"}, Duration: time.Second})
		return err
	}
	with := func(change func(*Remote)) *Remote {
		c := *rc
		change(&c)
		return &c
	}
	refused := srv.Target()
	refused.Port = 2222
	for _, tc := range []struct {
		name string
		rc   *Remote
		kind error
		says string
	}{
		{"unreachable", with(func(c *Remote) { c.Runner = srv.RunnerWith(t, refused, srv.ClientKey, srv.KnownHosts) }), remote.ErrUnreachable, "Connection refused"},
		{"wrong key", with(func(c *Remote) {
			c.Runner = srv.RunnerWith(t, srv.Target(), remotetest.NewKey(t, t.TempDir(), "wrong"), srv.KnownHosts)
		}), remote.ErrAuth, "Permission denied"},
		{"missing binary", with(func(c *Remote) { c.Binary.Path = "/root/no/xdpeng" }), remote.ErrNotFound, "xdpeng"},
		{"binary replaced", with(func(c *Remote) { c.Binary.SHA256 = strings.Repeat("0", 64) }), remote.ErrMismatch, "no longer the build that was checked"},
		{"missing port", with(func(c *Remote) { c.DUTInterfaces = []string{"nosuch0"} }), nil, `"nosuch0" not found`},
	} {
		err := run(tc.rc)
		t.Logf("%s: %v", tc.name, err)
		if err == nil || (tc.kind != nil && !errors.Is(err, tc.kind)) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v; want %v saying %q", tc.name, err, tc.kind, tc.says)
		}
	}
	checkClean(t, bed)
}

// noSessions waits until sshd has no session left: every command the run
// started on the DUT has ended.
func noSessions(t *testing.T, srv *remotetest.Server) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); len(srv.Sessions()) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Errorf("sshd sessions left: %v", srv.Sessions())
			return
		}
	}
}

// TestTwoHostsHostileDUT: a DUT whose path command prints what xdpeng
// never does (an endless line, a line that is not JSON, a count that goes
// down, a line of another path) ends that path with an error that says
// so; the run does not crash, and the DUT is left clean. The DUT's
// "xdpeng" is a script that runs the real one for everything but rxdrop.
func TestTwoHostsHostileDUT(t *testing.T) {
	bed, srv, rc := twoHosts(t, 2)
	real := rc.Binary.Path
	if err := os.MkdirAll(filepath.Join(srv.Home(), "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	const good = `{"type":"interval","mode":"rxdrop","interface":"dut0","rx_packets":10}`
	for _, tc := range []struct {
		name, then, says string
	}{
		{"endless line", `exec tr -d '\n' < /dev/zero`, "longer than 1048576 bytes"},
		{"not JSON", `echo '{"type":'; exec sleep 60`, "not a JSON object"},
		{"count going down", `echo '{"type":"interval","mode":"rxdrop","interface":"dut0","rx_packets":5}'; exec sleep 60`, "rx_packets went down, from 10 to 5"},
		{"another path", `echo '{"type":"interval","mode":"kern-drop","interface":"dut0","rx_packets":11}'; exec sleep 60`, "not of the command started"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := fmt.Sprintf("#!/bin/sh\ncase $1 in\nrxdrop) echo '%s'; %s ;;\n*) exec %s \"$@\" ;;\nesac\n", good, tc.then, real)
			local := filepath.Join(t.TempDir(), "xdpeng")
			if err := os.WriteFile(local, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			h, err := remote.HashFile(local)
			if err != nil {
				t.Fatal(err)
			}
			c := *rc
			if c.Binary, err = c.Runner.Install(context.Background(), h, "/root/bin/xdpeng"); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := Run(ctx, Config{Remote: &c, Paths: []string{"xsk-drop"}, Duration: time.Second})
			var got string
			switch {
			case err != nil:
				got = err.Error()
			case len(res.Rows) == 1:
				got = res.Rows[0].Error
			}
			t.Logf("%s: %s", tc.name, got)
			if !strings.Contains(got, tc.says) {
				t.Errorf("the path ended with %q (Run: %v), want an error saying %q", got, err, tc.says)
			}
			checkClean(t, bed)
			noSessions(t, srv)
		})
	}
}
