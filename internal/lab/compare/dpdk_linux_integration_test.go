//go:build linux

package compare

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// needTestPMD skips (as not supported here) a test that runs DPDK where
// dpdk-testpmd is not installed; .ci/run installs it.
func needTestPMD(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath(TestPMD); err != nil {
		privtest.Unsupported(t, "%s is not installed (%s)", TestPMD, dpdkInstall)
	}
}

// runXDPExisted tells whether libxdp's lock directory is there.
func runXDPExisted(t *testing.T) bool {
	t.Helper()
	_, err := os.Stat(runXDP)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// ealFiles lists EAL runtime directories of this process's testpmd runs in
// the place EAL uses without RUNTIME_DIRECTORY.
func ealFiles(t *testing.T) []string {
	t.Helper()
	all, err := filepath.Glob(fmt.Sprintf("/var/run/dpdk/xdpeng%d-*", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// TestDPDKBesideEngine runs xsk-drop and DPDK's AF_XDP driver (rxonly,
// with its default arguments and with busy polling off) in one comparison:
// a row each, every frame accounted for, and nothing left behind: no XDP
// program, no runtime files of EAL or libxdp.
func TestDPDKBesideEngine(t *testing.T) {
	needTestPMD(t)
	bed := testbedtest.New(t, 1, 1)
	hadRunXDP := runXDPExisted(t)
	defer func() {
		if left := ealFiles(t); len(left) > 0 {
			t.Errorf("EAL's runtime files left in /var/run/dpdk: %v", left)
		}
	}()
	res := run(t, bed, time.Second, "xsk-drop", "dpdk-af-xdp", "dpdk-af-xdp-nobusy")
	if len(res.Rows) != 3 || len(res.Notes) != 0 {
		t.Fatalf("rows %d, notes %q: want 3 rows and no note", len(res.Rows), res.Notes)
	}
	for _, row := range res.Rows {
		t.Logf("%-20s %6.3f Mpps sent %d received %d reasons %v unexplained %d; %s", row.Path, row.Mpps, row.Sent, row.Received,
			row.Reasons, row.Unexplained, row.Env.XDPMode)
		if row.Received == 0 || row.Unexplained != 0 {
			t.Errorf("%s: received %d, unexplained %d", row.Path, row.Received, row.Unexplained)
		}
	}
	checkEnv(t, res)
	checkClean(t, bed)
	if !hadRunXDP && runXDPExisted(t) {
		t.Errorf("%s was left behind", runXDP)
	}
}

// TestDPDKKilled kills testpmd with SIGKILL in the middle of a run: it
// cannot remove its XDP program then, and stop does.
func TestDPDKKilled(t *testing.T) {
	needTestPMD(t)
	bed := testbedtest.New(t, 1, 1)
	cfg := Config{Bed: bed, Paths: []string{"dpdk-l2fwd"}, Duration: time.Second}
	if err := cfg.Resolve(); err != nil {
		t.Fatal(err)
	}
	e, _, teardown := prepared(t, &cfg)
	defer teardown()
	r := &dpdkRunner{e: e, macswap: true}
	if err := r.start(context.Background()); err != nil {
		r.stop()
		t.Fatal(err)
	}
	dir := r.runDir
	if err := r.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-r.exited
	if err := r.stop(); err != nil {
		t.Errorf("stop after SIGKILL: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("EAL's runtime directory %s is left: %v", dir, err)
	}
	checkClean(t, bed)
}

// TestDPDKSkippedWhereAbsent: without dpdk-testpmd a dpdk path gets no
// row, and a note that says what to install; the other paths run.
func TestDPDKSkippedWhereAbsent(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	t.Setenv("PATH", t.TempDir())
	res := run(t, bed, 700*time.Millisecond, "xdp-drop", "dpdk-af-xdp")
	if len(res.Rows) != 1 || res.Rows[0].Path != "xdp-drop" {
		t.Errorf("rows %v: want xdp-drop's alone", res.Rows)
	}
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "dpdk-af-xdp skipped: dpdk-testpmd is not installed") ||
		!strings.Contains(res.Notes[0], "librte-net-af-xdp23") {
		t.Errorf("notes %q", res.Notes)
	}
	checkClean(t, bed)
}
