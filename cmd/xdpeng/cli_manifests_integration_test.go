package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
)

// TestGoAPIManifests runs the xdpeng command of each Kubernetes manifest in
// docs/go-api.md in a test bed's namespace, which has none of their devices:
// each must be refused for the device or the map's socket it names (exit
// 1, one line), not for its flags, so a flag renamed or removed fails here.
// Nothing may be left where the manifests point (their sockets).
func TestGoAPIManifests(t *testing.T) {
	text, err := os.ReadFile("../../docs/go-api.md")
	if err != nil {
		t.Fatal(err)
	}
	var cmds [][]string
	for _, b := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(text, -1) {
		for _, m := range regexp.MustCompile(`(?m)^\s*command: (\[.*\])\s*$`).FindAllSubmatch(b[1], -1) {
			var argv []string
			if err := json.Unmarshal(m[1], &argv); err != nil {
				t.Fatalf("a manifest's command %s: %v", m[1], err)
			}
			if len(argv) < 2 || argv[0] != "xdpeng" {
				t.Fatalf("a manifest's command %q does not run xdpeng", argv)
			}
			cmds = append(cmds, argv)
		}
	}
	if len(cmds) != 2 {
		t.Fatalf("docs/go-api.md's manifests run %d xdpeng commands, want 2 (the pod's worker, the DaemonSet's steer)", len(cmds))
	}
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	for _, argv := range cmds {
		var dev, sock string
		for i, a := range argv[:len(argv)-1] {
			switch a {
			case "-i":
				dev = argv[i+1]
			case "--socket", "--xsk-map":
				sock = argv[i+1]
			}
		}
		if dev == "" || sock == "" {
			t.Fatalf("%q: want -i and a socket (--socket or --xsk-map) to look for", argv)
		}
		_, statErr := os.Lstat(sock)
		r := runIn(t, 30*time.Second, bed.GenNS, append([]string{bin}, argv[1:]...)...)
		msg := strings.TrimSpace(r.stderr)
		if r.code != 1 || strings.Count(msg, "\n") != 0 || !strings.HasPrefix(msg, "xdpeng: ") ||
			!(strings.Contains(msg, dev) || strings.Contains(msg, filepath.Base(sock))) {
			t.Errorf("%q in a namespace without %s: want exit 1 and one line naming %s or %s\n%v", argv, dev, dev, sock, r)
		}
		for _, bad := range []string{"unknown flag", "unknown shorthand", "flag needs an argument", "invalid argument", "unknown command"} {
			if strings.Contains(msg, bad) {
				t.Errorf("%q: refused for its flags: %s", argv, msg)
			}
		}
		if _, err := os.Lstat(sock); statErr != nil && err == nil {
			os.Remove(sock)
			t.Errorf("%q left %s behind", argv, sock)
		}
		t.Logf("%q: %s", argv, msg)
	}
}
