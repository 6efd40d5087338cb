package main

// A device that goes away, or down and up again, under a running command.

import (
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
)

func ipRun(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %v: %v\n%s", args, err, out)
	}
}

// jsonLines decodes every JSON line of out that has "type": typ.
func jsonLines(out, typ string) []map[string]any {
	var got []map[string]any
	for _, line := range strings.Split(out, "\n") {
		var v map[string]any
		if json.Unmarshal([]byte(line), &v) == nil && v["type"] == typ {
			got = append(got, v)
		}
	}
	return got
}

// TestCLIDeviceGone deletes a device under each long-running command: it
// stops at once, says which device went and when, prints its totals and
// exits 1, and leaves the devices that remain as they were.
func TestCLIDeviceGone(t *testing.T) {
	bin := buildCLI(t)
	for _, tc := range []struct {
		name   string
		gen    bool     // the command runs in the generator's namespace
		args   []string // after the binary
		delete string   // the device deleted
		how    string   // "link" (ip link del) or "netns" (the peer's namespace removed)
		mode   string   // the summary's mode
	}{
		{"rxdrop", false, []string{"rxdrop", "-i", "dut0"}, "dut0", "link", "rxdrop"},
		{"rxdrop, peer namespace removed", false, []string{"rxdrop", "-i", "dut0"}, "dut0", "netns", "rxdrop"},
		{"l2fwd", false, []string{"l2fwd", "-i", "dut0"}, "dut0", "link", "l2fwd"},
		{"count", false, []string{"count", "-i", "dut0"}, "dut0", "link", "count"},
		{"fwd, input", false, []string{"fwd", "-i", "dut0", "-o", "dut1"}, "dut0", "link", "fwd"},
		{"fwd, output", false, []string{"fwd", "-i", "dut0", "-o", "dut1"}, "dut1", "link", "fwd"},
		{"kern drop", false, []string{"kern", "drop", "-i", "dut0"}, "dut0", "link", "kern-drop"},
		{"kern drop at tc", false, []string{"kern", "drop", "-i", "dut0", "--hook", "tc"}, "dut0", "link", "kern-drop"},
		{"kern redirect, output", false, []string{"kern", "redirect", "-i", "dut0", "-o", "dut1"}, "dut1", "link", "kern-redirect"},
		{"txonly", false, []string{"txonly", "-i", "dut0", "-d", "20s", "--rate", "1000"}, "dut0", "link", "txonly"},
		{"gen", true, []string{"gen", "-i", "gen0", "-d", "20s", "--rate", "1000"}, "gen0", "link", "gen"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bed := testbedtest.New(t, 2, 2)
			ns, other := bed.DUTNS, bed.GenNS
			if tc.gen {
				ns, other = bed.GenNS, bed.DUTNS
			}
			remains := "dut1"
			if tc.delete == "dut1" || tc.gen {
				remains = "dut0"
			}
			before := readHooks(t, bed.DUTNS, remains)
			p := startIn(t, ns, append(append([]string{bin}, tc.args...), "--json", "--interval", "100ms")...)
			// Running: its first interval line is out.
			if !p.waitOutput(10*time.Second, false, func(s string) bool { return len(jsonLines(s, "interval")) > 0 }) {
				p.signal(t, syscall.SIGKILL)
				t.Fatalf("no interval printed:\n%s", p.wait(t))
			}
			deleted := time.Now()
			switch tc.how {
			case "link":
				ipRun(t, "-n", ns, "link", "del", tc.delete)
			case "netns":
				ipRun(t, "netns", "del", other)
			}
			r := p.wait(t)
			t.Logf("ended %v after the delete", time.Since(deleted))
			if r.code != 1 || r.signal != 0 {
				t.Fatalf("exit status %d, want 1:\n%s", r.code, r)
			}
			for _, w := range []string{"xdpeng: " + tc.delete + " was deleted, or left this network namespace, at ", "s into the run", "totals"} {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			links := jsonLines(r.stdout, "link")
			if len(links) == 0 || links[len(links)-1]["state"] != "gone" || links[len(links)-1]["interface"] != tc.delete {
				t.Errorf("no link line saying %s is gone:\n%s", tc.delete, r.stdout)
			}
			sums := jsonLines(r.stdout, "summary")
			if len(sums) != 1 || sums[0]["mode"] != tc.mode {
				t.Errorf("want one %s summary:\n%s", tc.mode, r.stdout)
			}
			if !tc.gen && tc.how == "link" {
				if h := readHooks(t, bed.DUTNS, remains); !h.Equal(before) {
					t.Errorf("%s has hooks %+v after the run, %+v before", remains, h, before)
				}
				if err := queuesFree(bed.DUTNS, remains, 0, 1); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestCLILinkDownAndUp sets the device down and up again under rxdrop and
// kern drop: each says so, goes on, and counts what arrives after.
func TestCLILinkDownAndUp(t *testing.T) {
	bin := buildCLI(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"rxdrop", []string{"rxdrop", "-i", "dut0"}},
		{"kern drop", []string{"kern", "drop", "-i", "dut0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bed := testbedtest.New(t, 1, 1)
			p := startIn(t, bed.DUTNS, append(append([]string{bin}, tc.args...), "--json", "--interval", "100ms")...)
			if !p.waitOutput(10*time.Second, false, func(s string) bool { return len(jsonLines(s, "interval")) > 0 }) {
				p.signal(t, syscall.SIGKILL)
				t.Fatalf("no interval printed:\n%s", p.wait(t))
			}
			linkState := func(state string) bool {
				return p.waitOutput(10*time.Second, false, func(s string) bool {
					for _, l := range jsonLines(s, "link") {
						if l["state"] == state && l["interface"] == "dut0" {
							return true
						}
					}
					return false
				})
			}
			ipRun(t, "-n", bed.DUTNS, "link", "set", "dut0", "down")
			if !linkState("down") {
				p.signal(t, syscall.SIGKILL)
				t.Fatalf("no word of dut0 going down:\n%s", p.wait(t))
			}
			ipRun(t, "-n", bed.DUTNS, "link", "set", "dut0", "up")
			if !linkState("up") {
				p.signal(t, syscall.SIGKILL)
				t.Fatalf("no word of dut0 coming back:\n%s", p.wait(t))
			}
			g := runIn(t, 30*time.Second, bed.GenNS, bin, "gen", "-i", "gen0", "--count", "1000", "--json")
			var gs genSummary
			summaryLine(t, g.stdout, &gs)
			if g.code != 0 || gs.TxPackets != 1000 {
				t.Fatalf("gen after the link came back:\n%s", g)
			}
			var got uint64
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && got < 1000; time.Sleep(50 * time.Millisecond) {
				if iv := jsonLines(p.stdout.String(), "interval"); len(iv) > 0 {
					got = uint64(iv[len(iv)-1]["rx_packets"].(float64))
				}
			}
			p.signal(t, syscall.SIGINT)
			r := p.wait(t)
			if r.code != 0 {
				t.Fatalf("exit status %d after the link came back:\n%s", r.code, r)
			}
			var sum struct {
				RxPackets uint64 `json:"rx_packets"`
			}
			summaryLine(t, r.stdout, &sum)
			if sum.RxPackets != 1000 {
				t.Errorf("received %d of the 1000 frames sent after the link came back:\n%s", sum.RxPackets, r.stdout)
			}
		})
	}
}
