//go:build linux

package netdev

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// The device-wide interrupt deferral (sysfs napi_defer_hard_irqs and
// gro_flush_timeout) is one value for every NAPI of a device, which two
// runs on different queues of it would undo each other's: the first to set
// it would put the old value back under the second. So a run holds it: a
// record per device and network namespace, under DeferralDir, has the
// value the device had before the first holder and the holders; the first
// holder sets the value, the last to let go puts the old one back. A
// holder is a process (pid and start time), so that a holder that died
// without letting go is not counted; a guard (package guardproc) lets go
// for a run killed before it could.

// DeferralDir holds the records of held interrupt deferrals.
var DeferralDir = "/run/xdpeng/irq-deferral"

// sysfsNet is where the devices' sysfs directories are.
var sysfsNet = "/sys/class/net"

// Holder names the process pid as a holder: its pid and its start time,
// so that a pid used again by another process is not taken for it.
func Holder(pid int) (string, error) {
	start, err := startTime(pid)
	if err != nil {
		return "", err
	}
	return strconv.Itoa(pid) + ":" + start, nil
}

// startTime is field 22 of /proc/PID/stat: when the process started.
func startTime(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	// The command name, field 2, is in parentheses and may hold blanks.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return "", fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	if f[0] == "Z" || f[0] == "X" {
		return "", fmt.Errorf("process %d has ended", pid)
	}
	return f[19], nil
}

// holds numbers the holds this process takes (NewHolder).
var holds atomic.Uint64

// NewHolder names a new hold of this process: the process (Holder) and a
// number of its own, so that two engines of one process, on two queues of
// a device, hold apart and the first to let go leaves the other's hold.
func NewHolder() (string, error) {
	p, err := Holder(os.Getpid())
	if err != nil {
		return "", err
	}
	return p + ":" + strconv.FormatUint(holds.Add(1), 10), nil
}

// alive reports whether holder's process is running.
func alive(holder string) bool {
	f := strings.Split(holder, ":")
	if len(f) < 2 {
		return false
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return false
	}
	s, err := startTime(n)
	return err == nil && s == f[1]
}

// ofHolder reports whether hold h is holder's: holder itself, or a hold of
// the process holder names (Holder).
func ofHolder(h, holder string) bool {
	return h == holder || strings.HasPrefix(h, holder+":")
}

// deferralRecord is a held deferral: what the device had before, and who
// holds it now.
type deferralRecord struct {
	name    string
	before  IRQDeferral
	holders []string
}

// recordPath is the record of the device with index ifindex in the
// calling thread's network namespace.
func recordPath(ifindex int) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()), &st); err != nil {
		return "", fmt.Errorf("network namespace: %w", err)
	}
	return filepath.Join(DeferralDir, fmt.Sprintf("%d-%d", st.Ino, ifindex)), nil
}

// withRecord runs fn on the record of ifindex, locked (flock) against the
// other holders, without the holders that have died; what fn leaves is
// written back, or the record removed if it has no holder. create says a
// missing record may be made (isNew then).
func withRecord(ifindex int, create bool, fn func(r *deferralRecord, isNew bool) error) error {
	path, err := recordPath(ifindex)
	if err != nil {
		return err
	}
	flags := os.O_RDWR
	if create {
		if err := os.MkdirAll(DeferralDir, 0o755); err != nil {
			return err
		}
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if errors.Is(err, fs.ErrNotExist) && !create {
		return nil // nothing held
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", path, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	r, isNew := &deferralRecord{}, len(b) == 0
	if !isNew {
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		var d, g uint64
		if _, err := fmt.Sscanf(lines[0], "%d %d %s", &d, &g, &r.name); err != nil {
			return fmt.Errorf("%s: %q: %w", path, lines[0], err)
		}
		r.before = IRQDeferral{DeferHardIRQs: d, GROFlushTimeout: time.Duration(g)}
		for _, h := range lines[1:] {
			if alive(h) {
				r.holders = append(r.holders, h)
			}
		}
	}
	if err := fn(r, isNew); err != nil {
		if isNew {
			os.Remove(path)
		}
		return err
	}
	if len(r.holders) == 0 {
		return os.Remove(path)
	}
	out := fmt.Sprintf("%d %d %s\n%s\n", r.before.DeferHardIRQs, r.before.GROFlushTimeout.Nanoseconds(), r.name, strings.Join(r.holders, "\n"))
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err = f.WriteAt([]byte(out), 0)
	return err
}

// HoldIRQDeferral gives the device called name, with index ifindex, the
// device-wide deferral want for holder, and returns what it had before
// the first of its holders. A device with holders keeps the value they
// set.
func HoldIRQDeferral(name string, ifindex int, want IRQDeferral, holder string) (before IRQDeferral, err error) {
	err = withRecord(ifindex, true, func(r *deferralRecord, isNew bool) error {
		if isNew {
			cur, err := irqDeferralIn(sysfsNet, name)
			if err != nil {
				return err
			}
			r.name, r.before = name, cur
		}
		// The first holder, or the first after holders that died without
		// letting go (the record keeps what the device had before them).
		if len(r.holders) == 0 {
			if err := setIRQDeferral(sysfsNet, name, want); err != nil {
				return err
			}
		}
		before = r.before
		if !slices.Contains(r.holders, holder) {
			r.holders = append(r.holders, holder)
		}
		return nil
	})
	if err != nil {
		return IRQDeferral{}, fmt.Errorf("hold the interrupt deferral of %s: %w", name, err)
	}
	return before, nil
}

// ReleaseIRQDeferral lets go of holder's hold on the device with index
// ifindex, or of every hold of a process given as Holder names it (what a
// guard does for a process that was killed); the last holder to let go
// puts back what the device had.
func ReleaseIRQDeferral(ifindex int, holder string) error {
	err := withRecord(ifindex, false, func(r *deferralRecord, _ bool) error {
		r.holders = slices.DeleteFunc(r.holders, func(h string) bool { return ofHolder(h, holder) })
		if len(r.holders) > 0 {
			return nil
		}
		return setIRQDeferral(sysfsNet, r.name, r.before)
	})
	if err != nil {
		return fmt.Errorf("put back the interrupt deferral of interface index %d: %w", ifindex, err)
	}
	return nil
}

// setIRQDeferral writes d to the device called name's sysfs files.
func setIRQDeferral(root, name string, d IRQDeferral) error {
	for _, w := range []struct {
		file string
		v    uint64
	}{{"napi_defer_hard_irqs", d.DeferHardIRQs}, {"gro_flush_timeout", uint64(d.GROFlushTimeout.Nanoseconds())}} {
		if err := os.WriteFile(filepath.Join(root, name, w.file), []byte(strconv.FormatUint(w.v, 10)), 0o644); err != nil {
			return err
		}
	}
	return nil
}
