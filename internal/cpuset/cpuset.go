// Package cpuset parses CPU and queue lists ("0", "0-3", "0,2,5-7") and pins
// the calling thread to a CPU. It is the one place that parses such lists.
package cpuset

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/xdpeng/xdpeng/internal/platform"
)

// ErrNotSupported: pinning a thread needs Linux.
var ErrNotSupported = platform.ErrNotSupported

// MaxID bounds list entries so that "0-4000000000" cannot allocate a huge slice.
const MaxID = 4096

// Parse parses a set such as "0", "0-3" or "0,2,5-7" into sorted, unique
// ids: for lists whose order means nothing (the CPUs a test bed's generator
// may use). what names the list in errors ("queue", "CPU").
func Parse(s, what string) ([]int, error) {
	ids, _, err := parse(s, what)
	if err != nil {
		return nil, err
	}
	slices.Sort(ids)
	return ids, nil
}

// ParseList parses a list such as "1,0" or "2-3,0" into ids in the order
// given: for lists that pair up with another list (the CPU of each queue's
// worker, of each generator thread), where "--cpus 1,0" means the first
// queue on CPU 1. An id given twice is an error, since the pairing would
// put two queues or threads on it.
func ParseList(s, what string) ([]int, error) {
	ids, dup, err := parse(s, what)
	if err != nil {
		return nil, err
	}
	if dup >= 0 {
		return nil, fmt.Errorf("%s list %q: %s %d is given twice (list each %s once)", what, s, what, dup, what)
	}
	return ids, nil
}

// parse returns the ids of s in the order written, ranges expanded, each
// once (so at most MaxID+1 of them); dup is the first id written twice, or
// -1.
func parse(s, what string) (ids []int, dup int, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, -1, fmt.Errorf("empty %s list: give ids like 0, 0-3 or 0,2", what)
	}
	dup = -1
	var seen [MaxID + 1]bool
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := parseID(lo, what, s)
		if err != nil {
			return nil, -1, err
		}
		b := a
		if isRange {
			if b, err = parseID(hi, what, s); err != nil {
				return nil, -1, err
			}
			if b < a {
				return nil, -1, fmt.Errorf("%s list %q: range %q runs backwards", what, s, part)
			}
		}
		for i := a; i <= b; i++ {
			if seen[i] {
				if dup < 0 {
					dup = i
				}
				continue
			}
			seen[i] = true
			ids = append(ids, i)
		}
	}
	return ids, dup, nil
}

func parseID(s, what, list string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s list %q: %q is not a non-negative number (use ids like 0, 0-3 or 0,2)", what, list, s)
	}
	if n > MaxID {
		return 0, fmt.Errorf("%s list %q: %d is larger than %d", what, list, n, MaxID)
	}
	return n, nil
}

// Format is the inverse of Parse and ParseList: ids as "0-3,5", runs of
// consecutive ids as ranges, in the order given ("1,0" stays "1,0").
func Format(ids []int) string {
	var b strings.Builder
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(ids[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(ids[j]))
		}
		i = j + 1
	}
	return b.String()
}

// CheckOnline returns an error naming the first id in cpus that is not online.
func CheckOnline(cpus []int) error {
	online, err := Online()
	if err != nil {
		return err
	}
	ok := make(map[int]bool, len(online))
	for _, c := range online {
		ok[c] = true
	}
	for _, c := range cpus {
		if !ok[c] {
			return fmt.Errorf("CPU %d is not online or not allowed for this process (online: %s)", c, Format(online))
		}
	}
	return nil
}
