//go:build linux

package compare

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		out   string
		text  string
		below bool
		ok    bool
	}{
		{"xdp-bench version 1.6.3 using libbpf version 1.5.0", "1.6.3", false, true},
		{"xdp-bench version v1.5.6 using libbpf version 1.4.0", "1.5.6", true, true},
		{"xdp-bench version 2.0 using libbpf version 1.6.0", "2.0", false, true},
		{"xdp-bench version 1.10.0", "1.10.0", false, true},
		{"Command 'xsk-drop' is unknown, try 'xdp-bench help'.", "", false, false},
	} {
		v, text, ok := parseVersion(tc.out)
		if ok != tc.ok || text != tc.text || ok && versionBelow(v, XdpBenchMinVersion) != tc.below {
			t.Errorf("parseVersion(%q) = %v %q %v (below %d.%d: %v); want %q %v, below %v", tc.out, v, text, ok,
				XdpBenchMinVersion[0], XdpBenchMinVersion[1], versionBelow(v, XdpBenchMinVersion), tc.text, tc.ok, tc.below)
		}
	}
}

// TestPeerPathsListed: every peer path is in the table, runs only when
// named and only on a test bed, and its runner gives the tool the DUT's
// device and queue.
func TestPeerPathsListed(t *testing.T) {
	for name, p := range peerPaths {
		info, ok := LookupPath(name)
		if !ok {
			t.Errorf("%s: not in the path table", name)
			continue
		}
		if info.Needs != p.tool || !info.Testbed || info.Remote {
			t.Errorf("%s: Needs %q, Testbed %v, Remote %v; want Needs %q, a test bed, not remote", name, info.Needs, info.Testbed, info.Remote, p.tool)
		}
		for _, q := range Paths("") {
			if q.Name == name {
				t.Errorf("%s runs without being named", name)
			}
		}
		args := strings.Join(p.args("dut7", 3), " ")
		if !strings.Contains(args, "dut7") || !strings.Contains(args, "-q 3") {
			t.Errorf("%s: args %q do not name the device and queue", name, args)
		}
		r, err := newRunner(name, &env{}, pathOpts{})
		if pr, ok := r.(*peerRunner); err != nil || !ok || pr.p.tool != p.tool {
			t.Errorf("%s: newRunner = %T, %v", name, r, err)
		}
	}
	if info, ok := LookupPath("xdp-trafficgen-udp"); !ok || info.Needs != XdpTrafficgen || !info.Testbed {
		t.Errorf("xdp-trafficgen-udp: %+v, %v", info, ok)
	}
	if r, err := newRunner("xdp-trafficgen-udp", &env{}, pathOpts{}); err != nil {
		t.Error(err)
	} else if _, ok := r.(generator); !ok {
		t.Errorf("xdp-trafficgen-udp's runner %T is not a generator", r)
	}
	for _, want := range []string{"xdpsock-drop", "xdpsock-l2fwd", "xdp-bench-xsk-drop", "xdp-bench-xsk-tx"} {
		if _, ok := peerPaths[want]; !ok {
			t.Errorf("no peer path %s", want)
		}
	}
}

func TestFindPeer(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", t.TempDir())
	if _, err := findPeer(Xdpsock, dir); err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "bpf-examples") {
		t.Errorf("findPeer with no xdpsock = %v; want an error naming %s and where to get it", err, dir)
	}
	bin := filepath.Join(dir, Xdpsock)
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := findPeer(Xdpsock, dir); err == nil {
		t.Error("findPeer took a file that is not executable")
	}
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := findPeer(Xdpsock, dir); err != nil || got != bin {
		t.Errorf("findPeer = %q, %v; want %s", got, err, bin)
	}
	// Without the directory, PATH.
	t.Setenv("PATH", dir)
	if got, err := findPeer(Xdpsock, ""); err != nil || got != bin {
		t.Errorf("findPeer in PATH = %q, %v; want %s", got, err, bin)
	}
}

func TestCheckRefusesPeersThatAreNoDirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{file, filepath.Join(t.TempDir(), "nosuch")} {
		cfg := Config{Testbed: true, Paths: []string{"xdpsock-drop"}, Duration: time.Second, Peers: p}
		if err := cfg.Check(); err == nil || !strings.Contains(err.Error(), "peers directory") {
			t.Errorf("Check with Peers %s = %v; want an error about the peers directory", p, err)
		}
	}
}
