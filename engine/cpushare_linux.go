package engine

import (
	"time"

	"golang.org/x/sys/unix"
)

// open starts watching the calling thread; call it on the worker's own,
// pinned thread.
func (c *cpuShare) open() {
	fd, err := unix.Open("/proc/thread-self/schedstat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		fd = -1
	}
	c.fd = fd
}

func (c *cpuShare) close() {
	if c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
}

// readRunDelay returns the second field of schedstat: "runtime run_delay
// timeslices". It allocates nothing.
func (c *cpuShare) readRunDelay() (int64, bool) {
	n, err := unix.Pread(c.fd, c.buf[:], 0)
	if err != nil || n <= 0 {
		return 0, false
	}
	b := c.buf[:n]
	i := 0
	for i < len(b) && b[i] != ' ' {
		i++
	}
	i++
	var v int64
	digits := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		v = v*10 + int64(b[i]-'0')
		digits++
	}
	return v, digits > 0
}

// sleepExact sleeps d on the calling thread with nanosleep, which wakes
// within the kernel's timer slack (50 µs by default), where the Go
// runtime's timers may wake a millisecond late.
func sleepExact(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}
