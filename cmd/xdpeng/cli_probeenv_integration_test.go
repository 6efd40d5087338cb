package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
)

// TestCLIProbeJITInNamespace: probe --json in a test bed's namespace reads
// the BPF JIT sysctls, which exist only in the initial namespace, from
// there: the values this test reads in it, none of them unknown.
func TestCLIProbeJITInNamespace(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	bin := buildCLI(t)
	want := map[string]string{}
	for _, f := range []string{"enable", "harden", "kallsyms"} {
		b, err := os.ReadFile("/proc/sys/net/core/bpf_jit_" + f)
		if err != nil {
			t.Skipf("this test runs outside the initial network namespace: %v", err)
		}
		want[f] = strings.TrimSpace(string(b))
	}
	r := runIn(t, 30*time.Second, bed.DUTNS, bin, "probe", "-i", "dut0", "--json")
	var out struct {
		Env struct {
			BPFJIT  map[string]string `json:"bpf_jit"`
			Unknown []string          `json:"unknown"`
		} `json:"env"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); r.code != 0 || err != nil {
		t.Fatalf("probe --json: %v\n%v", err, r)
	}
	for f, v := range want {
		if out.Env.BPFJIT[f] != v {
			t.Errorf("bpf_jit.%s = %q in %s, want %q as in the initial namespace", f, out.Env.BPFJIT[f], bed.DUTNS, v)
		}
	}
	for _, u := range out.Env.Unknown {
		if strings.HasPrefix(u, "bpf_jit") {
			t.Errorf("unknown: %s", u)
		}
	}
}
