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
package irqstat

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	f, err := os.Open(SoftirqsPath)
	if err != nil {
		return Softirqs{}, fmt.Errorf("read softirq counts: %w", err)
	}
	defer f.Close()
	s, err := ParseSoftirqs(f)
	if err != nil {
		return Softirqs{}, fmt.Errorf("%s: %w", SoftirqsPath, err)
	}
	return s, nil
}

// ParseSoftirqs parses the format of /proc/softirqs: a header of CPU
// columns, then one line per softirq, "NET_RX:" and a count per CPU.
func ParseSoftirqs(r io.Reader) (Softirqs, error) {
	sc := bufio.NewScanner(r)
	if !sc.Scan() {
		return Softirqs{}, fmt.Errorf("empty: %w", scanErr(sc))
	}
	cpus, err := parseHeader(sc.Text())
	if err != nil {
		return Softirqs{}, err
	}
	s := Softirqs{CPUs: cpus, Counts: map[string][]uint64{}}
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, ":")
		if !ok {
			return Softirqs{}, fmt.Errorf("line %q has no colon", line)
		}
		fields := strings.Fields(rest)
		if len(fields) != len(cpus) {
			return Softirqs{}, fmt.Errorf("line %q has %d counts for %d CPUs", line, len(fields), len(cpus))
		}
		counts := make([]uint64, len(fields))
		for i, f := range fields {
			if counts[i], err = strconv.ParseUint(f, 10, 64); err != nil {
				return Softirqs{}, fmt.Errorf("line %q: %w", line, err)
			}
		}
		s.Counts[strings.TrimSpace(name)] = counts
	}
	if err := sc.Err(); err != nil {
		return Softirqs{}, err
	}
	return s, nil
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
