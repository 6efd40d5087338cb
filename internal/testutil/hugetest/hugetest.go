// Package hugetest gives a privileged test free huge pages for the length
// of the test: it grows the system's pool of huge pages of the default size
// (/proc/sys/vm/nr_hugepages) when it has too few free, and puts the pool
// back as it found it when the test ends.
//
// The pool is the whole machine's, so tests of every package that reserve
// pages take a lock (a file lock, across processes) for as long as they hold
// them: one at a time, each restoring what it found, so that none restores a
// size another one set.
package hugetest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
	"github.com/xdpeng/xdpeng/xsk"
)

const (
	nrHugePages = "/proc/sys/vm/nr_hugepages"
	lockFile    = "/run/lock/xdpeng-hugetest.lock"
)

// Reserve makes sure that at least n huge pages are free until the test
// ends, and returns the pool as it is then. It needs root. A kernel without
// huge pages, or one that cannot find the memory for them, makes the test
// unsupported here.
func Reserve(tb testing.TB, n int) xsk.HugePages {
	tb.Helper()
	privtest.Root(tb)
	fd, err := unix.Open(lockFile, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
	if err != nil {
		tb.Fatalf("open %s: %v", lockFile, err)
	}
	tb.Cleanup(func() { unix.Close(fd) }) // closing releases the lock, after the restore below
	for deadline := time.Now().Add(5 * time.Minute); ; {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if err != unix.EWOULDBLOCK || time.Now().After(deadline) {
			tb.Fatalf("lock %s: %v", lockFile, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	hp, err := xsk.ReadHugePages()
	if err != nil {
		tb.Fatal(err)
	}
	if hp.Size == 0 {
		privtest.Unsupported(tb, "the kernel has no huge pages (no Hugepagesize in /proc/meminfo)")
	}
	if hp.Available() >= n {
		return hp
	}
	old, err := readCount()
	if err != nil {
		tb.Fatal(err)
	}
	want := old + n - hp.Available()
	tb.Cleanup(func() {
		if err := writeCount(old); err != nil {
			tb.Errorf("put %s back to %d: %v", nrHugePages, old, err)
		}
	})
	if err := writeCount(want); err != nil {
		tb.Fatalf("reserve huge pages: %v", err)
	}
	if hp, err = xsk.ReadHugePages(); err != nil {
		tb.Fatal(err)
	}
	if hp.Available() < n {
		privtest.Unsupported(tb, "asked for %d huge pages, the kernel found memory for %d free (%+v)", want, hp.Available(), hp)
	}
	return hp
}

// Hold makes sure that fewer than n huge pages are free until the test ends,
// for tests of what happens without them: it shrinks the pool to what is in
// use when it has n or more free, and puts it back afterwards.
func Hold(tb testing.TB, n int) xsk.HugePages {
	tb.Helper()
	hp := Reserve(tb, 0)
	if hp.Available() < n {
		return hp
	}
	old, err := readCount()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := writeCount(old); err != nil {
			tb.Errorf("put %s back to %d: %v", nrHugePages, old, err)
		}
	})
	if err := writeCount(hp.Total - hp.Available()); err != nil {
		tb.Fatalf("shrink the huge page pool: %v", err)
	}
	if hp, err = xsk.ReadHugePages(); err != nil {
		tb.Fatal(err)
	}
	if hp.Available() >= n {
		tb.Fatalf("the pool still has %d free huge pages after shrinking it", hp.Available())
	}
	return hp
}

func readCount() (int, error) {
	b, err := os.ReadFile(nrHugePages)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

func writeCount(n int) error {
	if err := os.WriteFile(nrHugePages, []byte(strconv.Itoa(n)), 0o644); err != nil {
		return fmt.Errorf("write %d to %s: %w", n, nrHugePages, err)
	}
	return nil
}
