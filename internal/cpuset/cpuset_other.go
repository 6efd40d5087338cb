//go:build !linux

package cpuset

import (
	"fmt"
	"runtime"
)

// Online returns the CPUs this process may run on: here, as many as the Go
// runtime sees, numbered from 0.
func Online() ([]int, error) {
	ids := make([]int, runtime.NumCPU())
	for i := range ids {
		ids[i] = i
	}
	return ids, nil
}

// Pin fails with ErrNotSupported: pinning a thread to a CPU needs Linux.
func Pin(cpu int) error { return fmt.Errorf("pin thread to CPU %d: %w", cpu, ErrNotSupported) }

// ThreadID is -1: threads are not told apart here.
func ThreadID() int { return -1 }

// SetScheduler fails with ErrNotSupported: scheduling policies need Linux.
func SetScheduler(policy, priority int) error {
	return fmt.Errorf("set scheduling policy %d: %w", policy, ErrNotSupported)
}
