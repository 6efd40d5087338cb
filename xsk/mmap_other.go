//go:build !linux

package xsk

import "time"

// munmap is never reached: only Linux maps memory from the kernel.
func munmap([]byte) error { return nil }

// Nap sleeps for d.
func Nap(d time.Duration) error {
	time.Sleep(d)
	return nil
}
