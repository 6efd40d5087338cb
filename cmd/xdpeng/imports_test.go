package main

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestCLIImports: the CLI parses flags and prints; loading programs,
// netlink and device queries are below it, so it imports none of the
// libraries that do them.
func TestCLIImports(t *testing.T) {
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "list", "-f", `{{join .Imports "\n"}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, imp := range strings.Fields(string(out)) {
		for _, lib := range []string{"github.com/cilium/ebpf", "github.com/vishvananda/netlink", "github.com/vishvananda/netns", "github.com/safchain/ethtool"} {
			if imp == lib || strings.HasPrefix(imp, lib+"/") {
				t.Errorf("cmd/xdpeng imports %s: that belongs in a package below it", imp)
			}
		}
	}
}
