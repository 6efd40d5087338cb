package xsk

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// HugePages is the state of the system's pool of huge pages of the default
// size, as /proc/meminfo shows it.
type HugePages struct {
	// Size is the default huge page size in bytes (Hugepagesize), 0 where
	// the kernel has no huge pages.
	Size int
	// Total is the pages in the pool (HugePages_Total, set through
	// /proc/sys/vm/nr_hugepages), Free those not in use (HugePages_Free),
	// Reserved those promised to a mapping but not yet faulted in
	// (HugePages_Rsvd), which Free still counts.
	Total, Free, Reserved int
}

// Available is how many pages a new mapping can have: free and not
// promised to another.
func (h HugePages) Available() int { return max(h.Free-h.Reserved, 0) }

// PagesFor is how many huge pages a mapping of size bytes takes.
func (h HugePages) PagesFor(size int) int {
	if h.Size == 0 {
		return 0
	}
	return (size + h.Size - 1) / h.Size
}

// ErrNoHugePages: huge pages were asked for and the pool has too few free.
var ErrNoHugePages = errors.New("not enough free huge pages")

// HugePagesError says how many huge pages a UMEM needed and what the pool
// had.
type HugePagesError struct {
	Need  int
	Pages HugePages
	// Err is the mmap failure, nil when the shortage was seen before.
	Err error
}

func (e *HugePagesError) Error() string {
	if e.Pages.Size == 0 {
		return "the UMEM should be in huge pages, and this kernel has none (no Hugepagesize in /proc/meminfo)"
	}
	s := fmt.Sprintf("the UMEM needs %d huge pages of %d kB and the pool has %d free of %d (HugePages_Free, HugePages_Total in /proc/meminfo)",
		e.Need, e.Pages.Size>>10, e.Pages.Available(), e.Pages.Total)
	if e.Err != nil {
		s += fmt.Sprintf(": mmap: %v", e.Err)
	}
	return s + fmt.Sprintf("; reserve more with: echo %d > /proc/sys/vm/nr_hugepages", e.Pages.Total+e.Need-e.Pages.Available())
}

// Is makes errors.Is(err, ErrNoHugePages) true.
func (e *HugePagesError) Is(target error) bool { return target == ErrNoHugePages }

// ReadHugePages reads the huge page pool from /proc/meminfo.
func ReadHugePages() (HugePages, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return HugePages{}, fmt.Errorf("read huge pages: %w", err)
	}
	return parseMeminfo(b)
}

// parseMeminfo reads the huge page lines of /proc/meminfo.
func parseMeminfo(b []byte) (HugePages, error) {
	var h HugePages
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(val)
		if len(f) == 0 {
			continue
		}
		var dst *int
		scale := 1
		switch key {
		case "HugePages_Total":
			dst = &h.Total
		case "HugePages_Free":
			dst = &h.Free
		case "HugePages_Rsvd":
			dst = &h.Reserved
		case "Hugepagesize":
			dst, scale = &h.Size, 1024 // kB
		default:
			continue
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return HugePages{}, fmt.Errorf("parse /proc/meminfo %s %q: %w", key, val, err)
		}
		if n > math.MaxInt32 {
			// The kernel's count of reserved pages goes below zero, and
			// shows as 2^64-1, for a moment while a registered UMEM's
			// pages are released; no pool is that large.
			n = 0
		}
		*dst = int(n) * scale
	}
	return h, sc.Err()
}
