//go:build !linux

package engine

import "time"

// open finds nothing to watch: the run delay is Linux's
// (/proc/thread-self/schedstat), so the CPU never counts as shared.
func (c *cpuShare) open() { c.fd = -1 }

func (c *cpuShare) close() {}

func (c *cpuShare) readRunDelay() (int64, bool) { return 0, false }

// sleepExact sleeps d.
func sleepExact(d time.Duration) { time.Sleep(d) }
