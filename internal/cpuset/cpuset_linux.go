package cpuset

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// Online returns the CPUs this process may run on.
func Online() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("read CPU affinity: %w", err)
	}
	var ids []int
	for i := 0; i < MaxID; i++ {
		if set.IsSet(i) {
			ids = append(ids, i)
		}
	}
	return ids, nil
}

// Pin locks the calling goroutine to its OS thread and that thread to cpu.
// The caller should call runtime.UnlockOSThread when done (or let the
// goroutine exit, which ends the pinned thread with it).
func Pin(cpu int) error {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pin thread %d to CPU %d: %w", os.Getpid(), cpu, err)
	}
	return nil
}

// ThreadID is the calling thread's id (gettid). It names the goroutine
// only while the goroutine is locked to its thread (Pin locks it).
func ThreadID() int { return unix.Gettid() }

// SetScheduler sets the calling thread's scheduling policy (unix.SCHED_OTHER,
// SCHED_FIFO or SCHED_RR) and its real-time priority (0 for SCHED_OTHER,
// 1-99 for the others), as chrt does. The caller's goroutine must be
// locked to its thread (Pin).
func SetScheduler(policy, priority int) error {
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: uint32(policy), Priority: uint32(priority)}
	if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
		return fmt.Errorf("set thread %d's scheduling policy %d, priority %d: %w", unix.Gettid(), policy, priority, err)
	}
	return nil
}
