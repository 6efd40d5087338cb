package vm

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// The matrix's steps driven from the host beside the guest tests: compare
// with the guest as the DUT, and a NIC pulled out of the running guest.

// testCompareDUT runs compare --dut from the generator namespace with the
// guest as the DUT, reached over the management link with the bed's ssh
// key: the generator sends from port 0's tap to the guest's eth0, and the
// path's row (xsk-drop: one path, the matrix is kept short) must count
// exactly: sent = received + its drop reasons.
func testCompareDUT(t *testing.T, b *Bed, xdpeng string) {
	privtest.Root(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	p := b.Ports[0]
	// The guest's root is the host's, so xdpeng is at the same path there.
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", b.GenNS, xdpeng, "compare", "--paths", "xsk-drop",
		"-d", "1", "--rate", "2000", "--json", "--dut", "ssh://root@"+b.MgmtIP, "--ssh-command", b.SSHCommand(),
		"--dut-if", p.Guest, "--gen-if", p.Tap, "--dut-xdpeng", xdpeng)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("compare --dut %s: %v:\n%s\n%s", b.MgmtIP, err, stdout.String(), stderr.String())
	}
	t.Logf("compare --dut:\n%s", stderr.String())
	rows := 0
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var r struct {
			Type        string            `json:"type"`
			Path        string            `json:"path"`
			Sent        uint64            `json:"sent"`
			Received    uint64            `json:"received"`
			Dropped     uint64            `json:"dropped"`
			Reasons     map[string]uint64 `json:"drop_reasons"`
			Unexplained int64             `json:"unexplained"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("compare --json line %q: %v", line, err)
		}
		if r.Type != "row" {
			continue
		}
		rows++
		var reasons uint64
		for _, n := range r.Reasons {
			reasons += n
		}
		t.Logf("compare --dut %s: sent %d, received %d, dropped %d %v, unexplained %d", r.Path, r.Sent, r.Received, r.Dropped, r.Reasons, r.Unexplained)
		if r.Sent == 0 || r.Received == 0 || r.Received+r.Dropped != r.Sent || reasons != r.Dropped || r.Unexplained != 0 {
			t.Errorf("compare --dut %s: sent %d, received %d, dropped %d (reasons %v), unexplained %d: the count does not close",
				r.Path, r.Sent, r.Received, r.Dropped, r.Reasons, r.Unexplained)
		}
	}
	if rows != 1 {
		t.Errorf("compare --dut printed %d rows, want xsk-drop's:\n%s", rows, stdout.String())
	}
}

// testDeviceDel pulls the last port's NIC out of the guest (QEMU's
// device_del) under a running rxdrop, which must say the device is gone
// and exit with status 1 and its totals, as on the host when a device is
// deleted. The port is gone for the rest of the bed's life: run it last.
func testDeviceDel(t *testing.T, b *Bed, xdpeng string) {
	privtest.Root(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	port := b.Ports[len(b.Ports)-1]
	rx := startRxdrop(t, b.Command(ctx, xdpeng, "rxdrop", "-i", port.Guest, "--json", "-n", "200ms", "-d", "150s"))
	defer rx.stop()
	output := rx.output
	removed := time.Now()
	if err := b.RemovePort(len(b.Ports) - 1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-rx.done:
	case <-time.After(time.Minute):
		t.Fatalf("rxdrop on %s did not end within a minute of device_del %s:\n%s", port.Guest, port.Device, output())
	}
	t.Logf("rxdrop ended %.1f s after device_del", time.Since(removed).Seconds())
	var ee *exec.ExitError
	if !errors.As(rx.err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("rxdrop after device_del: %v, want exit status 1:\n%s", rx.err, output())
	}
	out := output()
	for _, w := range []string{"xdpeng: " + port.Guest + " was deleted, or left this network namespace, at ", "s into the run", "totals",
		`"type":"link","mode":"rxdrop","interface":"` + port.Guest + `","state":"gone"`, `"type":"summary"`} {
		if !strings.Contains(out, w) {
			t.Errorf("rxdrop's output lacks %q:\n%s", w, out)
		}
	}
	if out, err := runToFile(t, b.Command(ctx, "ip", "link", "show", port.Guest)); err == nil {
		t.Errorf("%s is still in the guest after device_del:\n%s", port.Guest, out)
	}
}
