package engine

import (
	"strings"
	"testing"
)

// TestValidateChecksEachCPUFirst: a CPU that is not online is named as
// such, before the CPU list is counted against the queues.
func TestValidateChecksEachCPUFirst(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Interface = "dut0"
	cfg.Queues = []int{0, 1}
	cfg.CPUs = []int{4000}
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "CPU 4000 is not online") {
		t.Fatalf("Validate() = %v, want it to name CPU 4000 as not online", err)
	}
	cfg.CPUs = []int{0}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "1 CPU(s) for 2 queue(s)") {
		t.Fatalf("Validate() = %v, want the count of CPUs against queues", err)
	}
	// The same order in resolveCPUs, where the queues come from the device.
	cfg.CPUs = []int{4000}
	if err := cfg.resolveCPUs(); err == nil || !strings.Contains(err.Error(), "CPU 4000 is not online") {
		t.Fatalf("resolveCPUs() = %v, want it to name CPU 4000 as not online", err)
	}
}
