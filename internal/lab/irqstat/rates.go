package irqstat

import (
	"fmt"
	"math"
	"time"
)

// Sample is one read of the counts that Rates compares.
type Sample struct {
	Time     time.Time
	Softirqs Softirqs
	// Device holds the device's lines of /proc/interrupts, none for a
	// device without interrupts.
	Device Interrupts
}

// CPURate is a per-second rate on one CPU.
type CPURate struct {
	CPU    int     `json:"cpu"`
	PerSec float64 `json:"per_sec"`
}

// IRQRate is the rate of one interrupt line.
type IRQRate struct {
	IRQ    string    `json:"irq"`
	Desc   string    `json:"desc"`
	PerCPU []CPURate `json:"per_cpu"`
	Total  float64   `json:"total"` // over all CPUs
}

// DeviceRates are the interrupt rates of one device.
type DeviceRates struct {
	Name string `json:"name"`
	// Names are the names its lines were looked for under (DeviceNames).
	Names []string `json:"names"`
	// Lines has one entry per interrupt line of the device; none when it
	// has no interrupts (see None).
	Lines []IRQRate `json:"lines"`
}

// None reports that the device has no interrupt line: a virtual device such
// as veth, whose receive work runs in softirq on the sending CPU or in a
// NAPI thread, never has one.
func (d DeviceRates) None() bool { return len(d.Lines) == 0 }

// Total is the device's interrupts per second over all lines and CPUs.
func (d DeviceRates) Total() float64 {
	var t float64
	for _, l := range d.Lines {
		t += l.Total
	}
	return t
}

// Rates are the per-second rates between two Samples.
type Rates struct {
	Interval time.Duration `json:"interval"`
	// NetRx and NetTx are the NET_RX and NET_TX softirqs per second, per
	// CPU.
	NetRx []CPURate `json:"net_rx"`
	NetTx []CPURate `json:"net_tx"`
	// Device is empty (no Name) when the Monitor watches no device.
	Device DeviceRates `json:"device"`
}

// RatesBetween returns the rates from prev to cur, which must be later.
// CPUs are matched by number and interrupt lines by IRQ: a CPU in only one
// of them is left out, a line new in cur counts from zero. The kernel's
// counts are 32 bits wide; a count that went down is taken as having
// wrapped if that gives less than 2^31, and as reset to zero (a freed and
// requested again interrupt) otherwise.
func RatesBetween(prev, cur Sample) (Rates, error) {
	dt := cur.Time.Sub(prev.Time)
	if dt <= 0 {
		return Rates{}, fmt.Errorf("samples at %v and %v: the second is not later", prev.Time, cur.Time)
	}
	secs := dt.Seconds()
	r := Rates{
		Interval: dt,
		NetRx:    softirqRates(prev.Softirqs, cur.Softirqs, "NET_RX", secs),
		NetTx:    softirqRates(prev.Softirqs, cur.Softirqs, "NET_TX", secs),
	}
	before := map[string]Interrupt{}
	for _, l := range prev.Device.Lines {
		before[l.IRQ] = l
	}
	for _, l := range cur.Device.Lines {
		p, ok := before[l.IRQ]
		if !ok {
			p = Interrupt{Counts: make([]uint64, len(prev.Device.CPUs))}
		}
		rate := IRQRate{IRQ: l.IRQ, Desc: l.Desc,
			PerCPU: cpuRates(prev.Device.CPUs, p.Counts, cur.Device.CPUs, l.Counts, secs)}
		for _, c := range rate.PerCPU {
			rate.Total += c.PerSec
		}
		r.Device.Lines = append(r.Device.Lines, rate)
	}
	return r, nil
}

func softirqRates(prev, cur Softirqs, name string, secs float64) []CPURate {
	return cpuRates(prev.CPUs, prev.Counts[name], cur.CPUs, cur.Counts[name], secs)
}

// cpuRates pairs counts by CPU number; counts missing from a row (a
// softirq not in the file) are taken as zero.
func cpuRates(prevCPUs []int, prev []uint64, curCPUs []int, cur []uint64, secs float64) []CPURate {
	at := map[int]uint64{}
	seen := map[int]bool{}
	for i, cpu := range prevCPUs {
		seen[cpu] = true
		if i < len(prev) {
			at[cpu] = prev[i]
		}
	}
	var out []CPURate
	for i, cpu := range curCPUs {
		if !seen[cpu] {
			continue
		}
		var c uint64
		if i < len(cur) {
			c = cur[i]
		}
		out = append(out, CPURate{CPU: cpu, PerSec: float64(delta(at[cpu], c)) / secs})
	}
	return out
}

// delta is cur - prev for the kernel's 32-bit counts (see RatesBetween).
func delta(prev, cur uint64) uint64 {
	if cur >= prev {
		return cur - prev
	}
	if prev <= math.MaxUint32 {
		if d := cur + (1 << 32) - prev; d < 1<<31 {
			return d
		}
	}
	return cur
}

// Monitor reads the counts each time Next is called.
type Monitor struct {
	device string
	names  []string
	last   Sample
}

// NewMonitor takes a first sample of the softirqs and, if device is not
// "", of its interrupts; Next gives the rates since the previous call.
func NewMonitor(device string) (*Monitor, error) {
	m := &Monitor{device: device}
	if device != "" {
		m.names = DeviceNames(device)
	}
	s, err := m.sample()
	if err != nil {
		return nil, err
	}
	m.last = s
	return m, nil
}

// Next reads the counts again and returns the rates since the last read.
func (m *Monitor) Next() (Rates, error) {
	s, err := m.sample()
	if err != nil {
		return Rates{}, err
	}
	r, err := RatesBetween(m.last, s)
	if err != nil {
		return Rates{}, err
	}
	m.last = s
	r.Device.Name = m.device
	r.Device.Names = m.names
	return r, nil
}

func (m *Monitor) sample() (Sample, error) {
	s := Sample{Time: time.Now()}
	var err error
	if s.Softirqs, err = ReadSoftirqs(); err != nil {
		return Sample{}, err
	}
	if m.device != "" {
		in, err := ReadInterrupts()
		if err != nil {
			return Sample{}, err
		}
		s.Device = in.Match(m.names...)
	}
	return s, nil
}
