package main

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// TestCLIInterruptedRows stops compare, latency and bench with Ctrl-C once
// their first row (bench: scenario) has finished: each prints the rows
// that finished, marked as interrupted (the JSON summary too, with what
// did not finish), says so on stderr, and exits 0 as every long-running
// command does on Ctrl-C.
func TestCLIInterruptedRows(t *testing.T) {
	privtest.Root(t)
	bin := buildCLI(t)
	for _, c := range []struct {
		name     string
		args     []string
		start    string // on stderr as each row (bench: scenario) starts
		firstRow string // in the text output
		what     string // a row's name in the note
	}{
		{"compare", []string{"compare", "--testbed", "--paths", "xdp-drop,tc-drop", "-d", "0.5"}, "measuring for", "xdp-drop", "row"},
		{"latency", []string{"latency", "--paths", "xdp-tx,bridge", "-d", "0.5", "--rate", "10000"}, "stamped frames at", "xdp-tx", "row"},
		{"bench", []string{"bench", "--scenarios", "lat,A-1500", "--runs", "1", "-d", "0.5"}, "run 1 of 1:", "scenario A-1500", "scenario"},
	} {
		for _, asJSON := range []bool{false, true} {
			name := c.name
			args := c.args
			if asJSON {
				name += " --json"
				args = append(slices.Clip(args), "--json")
			}
			t.Run(name, func(t *testing.T) {
				p := startCmd(t, exec.Command(bin, args...))
				if !p.waitOutput(3*time.Minute, true, func(s string) bool { return strings.Count(s, c.start) >= 2 }) {
					p.cmd.Process.Kill()
					t.Fatalf("%s did not reach its second row:\n%s", c.name, p.wait(t))
				}
				p.signal(t, syscall.SIGINT)
				r := p.wait(t)
				if r.code != 0 || !strings.Contains(r.stderr, c.name+" interrupted: 1 "+c.what+"(s) finished and printed") {
					t.Fatalf("want exit 0 and the note on stderr:\n%s", r)
				}
				if !asJSON {
					if !strings.HasPrefix(r.stdout, "INTERRUPTED (Ctrl-C or SIGTERM): the 1 ") || !strings.Contains(r.stdout, c.firstRow) {
						t.Errorf("want the finished row, marked:\n%s", r)
					}
					return
				}
				var summary struct {
					Type        string   `json:"type"`
					Interrupted bool     `json:"interrupted"`
					Unfinished  []string `json:"unfinished"`
				}
				rows := 0
				for sc := bufio.NewScanner(strings.NewReader(r.stdout)); sc.Scan(); {
					if err := json.Unmarshal(sc.Bytes(), &summary); err != nil {
						t.Fatalf("not JSON: %q: %v", sc.Text(), err)
					}
					if summary.Type == "row" {
						rows++
					}
				}
				if summary.Type != "summary" || !summary.Interrupted || len(summary.Unfinished) == 0 || rows == 0 {
					t.Errorf("want rows, then a summary interrupted, with what did not finish: %+v\n%s", summary, r)
				}
			})
		}
	}
}

// TestCLISkipNotAnnounced: a path that cannot run here (DPDK's, with no
// dpdk-testpmd on PATH) is said to be skipped, and is not first announced
// as measured.
func TestCLISkipNotAnnounced(t *testing.T) {
	privtest.Root(t)
	bin := buildCLI(t)
	for _, args := range [][]string{
		{"latency", "--paths", "dpdk-l2fwd,xdp-tx", "-d", "0.5", "--rate", "10000"},
		{"compare", "--testbed", "--paths", "dpdk-af-xdp,xdp-drop", "-d", "0.5"},
	} {
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{"PATH=/nonexistent"}
		r := startCmd(t, cmd).wait(t)
		paths := args[slices.Index(args, "--paths")+1]
		skipped, _, _ := strings.Cut(paths, ",")
		if r.code != 0 || !strings.Contains(r.stderr, skipped+" skipped: dpdk-testpmd is not installed") {
			t.Errorf("%s: want %s skipped:\n%s", args[0], skipped, r)
		}
		for _, l := range strings.Split(r.stderr, "\n") {
			if strings.Contains(l, skipped) && (strings.Contains(l, "stamped frames at") || strings.Contains(l, "measuring for")) {
				t.Errorf("%s: %s announced, then skipped: %q", args[0], skipped, l)
			}
		}
	}
}
