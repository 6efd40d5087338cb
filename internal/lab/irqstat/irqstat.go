// Package irqstat reads interrupt and softirq counts, what xdpsock -I
// prints: per CPU NET_RX and NET_TX softirqs from /proc/softirqs, and a
// network device's interrupts from /proc/interrupts, as per-second rates
// between two reads (Monitor).
//
// A device's interrupt lines are found by name, as they are named by the
// drivers: its own name ("ens3-TxRx-0" for ixgbe, "i40e-ens4f0-TxRx-0"),
// or its bus device, the target of /sys/class/net/DEV/device
// ("virtio2-input.0" for virtio-net, "mlx5_comp0@pci:0000:3b:00.0" and the
// MSI-X chip "PCI-MSIX-0000:3b:00.0"). A virtual device such as veth has no
// interrupts at all: its receive work runs in the softirq of the CPU that
// sent to it (or in a NAPI thread), and DeviceRates.None says so.
//
// The files are global, but /sys/class/net shows the network namespace
// sysfs was mounted in: `ip netns exec` mounts the namespace's own.
//
// /proc/softirqs is parsed by github.com/prometheus/procfs, the header of
// CPU columns here (procfs keeps none). /proc/interrupts is parsed here:
// procfs's Interrupts (v0.22) cannot serve the CPU split. It keeps no CPU
// numbers, so with a CPU offline ("CPU0 CPU1 CPU3") a column could not be
// put to its CPU; it is a map, so the file's order of lines is lost; and a
// line with fewer counts than CPUs and a description after them makes it
// index past the end of the line (a panic, not an error). What xdpeng adds
// in either case: the lines of one device (Match, DeviceNames), and rates
// across the kernel's 32-bit counts' wrap-around and resets (RatesBetween).
package irqstat

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
)

// The files read.
const (
	SoftirqsPath   = "/proc/softirqs"
	InterruptsPath = "/proc/interrupts"
	sysfsNet       = "/sys/class/net"
)

// Softirqs is one read of /proc/softirqs.
type Softirqs struct {
	// CPUs are the CPU numbers of the columns (every possible CPU).
	CPUs []int
	// Counts holds, per softirq ("NET_RX", "NET_TX", ...), one count per
	// entry of CPUs.
	Counts map[string][]uint64
}

// ReadSoftirqs reads /proc/softirqs.
func ReadSoftirqs() (Softirqs, error) {
	s, err := ReadSoftirqsFrom(procfs.DefaultMountPoint)
	if err != nil {
		return Softirqs{}, fmt.Errorf("read softirq counts: %w", err)
	}
	return s, nil
}

// ReadSoftirqsFrom reads the file softirqs of the proc file system mounted
// at root: a header of CPU columns, then one line per softirq, "NET_RX:"
// and a count per CPU. procfs parses the counts; the header is read here,
// as procfs keeps no CPU numbers, and every softirq must have a count for
// each of its columns.
func ReadSoftirqsFrom(root string) (Softirqs, error) {
	path := filepath.Join(root, "softirqs")
	cpus, err := readHeader(path)
	if err != nil {
		return Softirqs{}, fmt.Errorf("%s: %w", path, err)
	}
	fs, err := procfs.NewFS(root)
	if err != nil {
		return Softirqs{}, err
	}
	ps, err := fs.Softirqs()
	if err != nil {
		return Softirqs{}, fmt.Errorf("%s: %w", path, err)
	}
	s := Softirqs{CPUs: cpus, Counts: map[string][]uint64{}}
	for _, row := range []struct {
		name   string
		counts []uint64
	}{
		{"HI", ps.Hi}, {"TIMER", ps.Timer}, {"NET_TX", ps.NetTx}, {"NET_RX", ps.NetRx}, {"BLOCK", ps.Block},
		{"IRQ_POLL", ps.IRQPoll}, {"TASKLET", ps.Tasklet}, {"SCHED", ps.Sched}, {"HRTIMER", ps.HRTimer}, {"RCU", ps.RCU},
	} {
		if row.counts == nil {
			continue
		}
		if len(row.counts) != len(cpus) {
			return Softirqs{}, fmt.Errorf("%s: %s has %d counts for %d CPUs", path, row.name, len(row.counts), len(cpus))
		}
		s.Counts[row.name] = row.counts
	}
	if len(s.Counts) == 0 {
		return Softirqs{}, fmt.Errorf("%s has no softirq line (\"NET_RX:\" and a count per CPU)", path)
	}
	return s, nil
}

// readHeader reads the CPU columns of the first line of the file at path.
func readHeader(path string) ([]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4<<10), 1<<20)
	if !sc.Scan() {
		return nil, fmt.Errorf("empty: %w", scanErr(sc))
	}
	return parseHeader(sc.Text())
}

// parseHeader reads the CPU numbers of a header line "CPU0 CPU1 CPU3".
func parseHeader(line string) ([]int, error) {
	var cpus []int
	for _, f := range strings.Fields(line) {
		n, ok := strings.CutPrefix(f, "CPU")
		cpu, err := strconv.Atoi(n)
		if !ok || err != nil || cpu < 0 {
			return nil, fmt.Errorf("header %q: %q is not a CPU column", line, f)
		}
		cpus = append(cpus, cpu)
	}
	if len(cpus) == 0 {
		return nil, fmt.Errorf("header %q names no CPU", line)
	}
	return cpus, nil
}

func scanErr(sc *bufio.Scanner) error {
	if err := sc.Err(); err != nil {
		return err
	}
	return io.ErrUnexpectedEOF
}

// Interrupts is one read of /proc/interrupts.
type Interrupts struct {
	// CPUs are the CPU numbers of the columns (the online CPUs).
	CPUs  []int
	Lines []Interrupt
}

// Interrupt is one line of /proc/interrupts.
type Interrupt struct {
	// IRQ is the interrupt number, or the name of an architecture's
	// counter ("NMI", "LOC").
	IRQ string
	// Counts has one count per entry of Interrupts.CPUs; lines with fewer
	// columns ("ERR") have zeros in the rest.
	Counts []uint64
	// Desc is the rest of the line, spaces collapsed: chip, hardware irq,
	// trigger and the handlers' names ("IR-PCI-MSI 1572865-edge ens3-TxRx-0").
	Desc string
}

// ReadInterrupts reads /proc/interrupts.
func ReadInterrupts() (Interrupts, error) {
	f, err := os.Open(InterruptsPath)
	if err != nil {
		return Interrupts{}, fmt.Errorf("read interrupt counts: %w", err)
	}
	defer f.Close()
	in, err := ParseInterrupts(f)
	if err != nil {
		return Interrupts{}, fmt.Errorf("%s: %w", InterruptsPath, err)
	}
	return in, nil
}

// ParseInterrupts parses the format of /proc/interrupts: a header of CPU
// columns, then per line "IRQ:", up to one count per CPU and a description.
func ParseInterrupts(r io.Reader) (Interrupts, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20) // a line per CPU column grows with the CPUs
	if !sc.Scan() {
		return Interrupts{}, fmt.Errorf("empty: %w", scanErr(sc))
	}
	cpus, err := parseHeader(sc.Text())
	if err != nil {
		return Interrupts{}, err
	}
	in := Interrupts{CPUs: cpus}
	for sc.Scan() {
		line := sc.Text()
		irq, rest, ok := strings.Cut(line, ":")
		if !ok {
			return Interrupts{}, fmt.Errorf("line %q has no colon", line)
		}
		fields := strings.Fields(rest)
		counts := make([]uint64, len(cpus))
		n := 0
		for ; n < len(fields) && n < len(cpus); n++ {
			v, err := strconv.ParseUint(fields[n], 10, 64)
			if err != nil {
				break
			}
			counts[n] = v
		}
		if n == 0 {
			return Interrupts{}, fmt.Errorf("line %q has no count", line)
		}
		in.Lines = append(in.Lines, Interrupt{
			IRQ:    strings.TrimSpace(irq),
			Counts: counts,
			Desc:   strings.Join(fields[n:], " "),
		})
	}
	if err := sc.Err(); err != nil {
		return Interrupts{}, err
	}
	return in, nil
}

// Match returns the lines whose description names one of names: a name
// counts where it stands between non-alphanumeric characters (or the ends
// of a word), so "ens3" is in "ens3-TxRx-0" but not in "ens3f1-TxRx-0".
func (in Interrupts) Match(names ...string) Interrupts {
	out := Interrupts{CPUs: in.CPUs}
	for _, l := range in.Lines {
		for _, name := range names {
			if name != "" && mentions(l.Desc, name) {
				out.Lines = append(out.Lines, l)
				break
			}
		}
	}
	return out
}

// mentions reports whether name occurs in s with no letter or digit
// right before or after it.
func mentions(s, name string) bool {
	for from := 0; ; {
		i := strings.Index(s[from:], name)
		if i < 0 {
			return false
		}
		i += from
		end := i + len(name)
		if (i == 0 || !alnum(s[i-1])) && (end == len(s) || !alnum(s[end])) {
			return true
		}
		from = i + 1
	}
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// DeviceNames returns the names the interrupts of network device dev go by:
// dev itself and, if sysfs shows one, its bus device ("0000:3b:00.0" for a
// PCI NIC, "virtio2" for virtio-net). A virtual device has no bus device.
func DeviceNames(dev string) []string { return deviceNames(sysfsNet, dev) }

func deviceNames(sysfs, dev string) []string {
	names := []string{dev}
	if target, err := filepath.EvalSymlinks(filepath.Join(sysfs, dev, "device")); err == nil {
		if bus := filepath.Base(target); bus != dev && bus != "." && bus != "/" {
			names = append(names, bus)
		}
	}
	return names
}
