package testbed

import (
	"strings"
	"testing"
)

func TestValidateName(t *testing.T) {
	for _, good := range []string{"xdpeng", "t1", "a_b.c-d", strings.Repeat("x", MaxNameLen)} {
		if err := ValidateName(good); err != nil {
			t.Errorf("ValidateName(%q) = %v, want nil", good, err)
		}
	}
	for _, bad := range []string{"", "-x", ".x", "a/b", "a b", "../x", strings.Repeat("x", MaxNameLen+1)} {
		if err := ValidateName(bad); err == nil {
			t.Errorf("ValidateName(%q) = nil, want an error", bad)
		}
	}
}

func TestUniqueName(t *testing.T) {
	seen := make(map[string]bool)
	for range 100 {
		n := UniqueName("t")
		if err := ValidateName(n); err != nil {
			t.Fatalf("UniqueName gave an invalid name: %v", err)
		}
		if !strings.HasPrefix(n, "t") {
			t.Fatalf("UniqueName(%q) = %q, want the prefix", "t", n)
		}
		// The namespace name must stay short enough to read in `ip netns`.
		if len(GenNS(n)) > 20 {
			t.Fatalf("UniqueName gave a long name %q", n)
		}
		if seen[n] {
			t.Fatalf("UniqueName repeated %q", n)
		}
		seen[n] = true
	}
}

func TestConfigDefaults(t *testing.T) {
	cfg, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (Config{MTU: 9000}).withDefaults(); err != nil {
		t.Errorf("MTU 9000: %v", err)
	}
	if cfg.Queues != 1 || cfg.Links != 1 || cfg.Name == "" || len(cfg.GenCPUs) != 1 || len(cfg.DUTCPUs) != 1 {
		t.Errorf("defaults = %+v, want 1 queue, 1 link, a name, one generator and one DUT CPU", cfg)
	}
	bad := []Config{
		{Queues: -1}, {Queues: MaxQueues + 1}, {Links: -2}, {Links: MaxLinks + 1},
		{Name: "a b"}, {NAPI: 7}, {DUTCPUs: []int{4000}}, {GenCPUs: []int{4000}},
		{MTU: 67}, {MTU: 65536}, {MTU: -1},
	}
	for _, c := range bad {
		if _, err := c.withDefaults(); err == nil {
			t.Errorf("Config %+v: no error", c)
		}
	}
}

func TestErrorsSayWhatToDo(t *testing.T) {
	e := (&ExistsError{Name: "t1", Namespace: "t1-dut"}).Error()
	want := `test bed "t1" already exists (namespace t1-dut); remove it with: xdpeng testbed down --name t1`
	if e != want {
		t.Errorf("ExistsError = %q, want %q", e, want)
	}
	if e := (&NotFoundError{Name: "t2", Namespace: "t2-dut"}).Error(); !strings.Contains(e, "xdpeng testbed up --name t2") {
		t.Errorf("NotFoundError = %q, want the command that creates it", e)
	}
	if e := (&NotFoundError{Name: "t3", Namespace: "t3-gen", Partial: true}).Error(); !strings.Contains(e, "down --name t3") {
		t.Errorf("partial NotFoundError = %q, want the command that removes it", e)
	}
}

func TestOverlap(t *testing.T) {
	if got := overlap([]int{0, 1}, []int{1, 2}); len(got) != 1 || got[0] != 1 {
		t.Errorf("overlap = %v, want [1]", got)
	}
	if got := overlap([]int{0}, []int{1}); got != nil {
		t.Errorf("overlap = %v, want none", got)
	}
}

func TestCPUMask(t *testing.T) {
	for _, tc := range []struct {
		cpus []int
		want string
	}{
		{[]int{0}, "00000001"},
		{[]int{0, 1}, "00000003"},
		{[]int{1, 3}, "0000000a"},
		{[]int{33}, "00000002,00000000"},
		{[]int{0, 64}, "00000001,00000000,00000001"},
	} {
		if got := cpuMask(tc.cpus); got != tc.want {
			t.Errorf("cpuMask(%v) = %q, want %q", tc.cpus, got, tc.want)
		}
	}
}
