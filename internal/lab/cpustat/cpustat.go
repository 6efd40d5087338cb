// Package cpustat reads each CPU's time from /proc/stat: what xdpeng's
// CPU figures (compare's ns per packet and busy columns, stats --cpu) are
// computed from.
//
// The file is parsed by github.com/prometheus/procfs; this package keeps
// what xdpeng computes from it: the times in the kernel's own unit (procfs
// gives seconds as float64, divided by USER_HZ: they are turned back into
// whole ticks, which are exact), readings subtracted with the kernel's
// backwards steps clamped, and a CPU's share of a window.
//
// The kernel counts the times in USER_HZ ticks, sampled at each scheduler
// tick unless it was built with IRQ_TIME_ACCOUNTING: a CPU's share of a
// window is only as fine as its CONFIG_HZ ticks in that window.
package cpustat

import (
	"errors"
	"fmt"
	"math"

	"github.com/prometheus/procfs"

	"github.com/xdpeng/xdpeng/internal/counter"
)

// UserHZ is the unit of /proc/stat: USER_HZ, 100 on every Linux
// architecture Go runs on (it is fixed by the ABI, unlike CONFIG_HZ).
const UserHZ = 100

// Times is one CPU's line of /proc/stat, in USER_HZ ticks since boot.
type Times struct {
	User    uint64 `json:"user"`
	Nice    uint64 `json:"nice"`
	System  uint64 `json:"system"`
	Idle    uint64 `json:"idle"`
	IOWait  uint64 `json:"iowait"`
	IRQ     uint64 `json:"irq"`
	SoftIRQ uint64 `json:"softirq"`
	Steal   uint64 `json:"steal"`
}

// Busy is the time the CPU did work for someone on this machine: steal
// (time the hypervisor gave to another guest) and idle are left out.
func (t Times) Busy() uint64 { return t.User + t.Nice + t.System + t.IRQ + t.SoftIRQ }

// Total is every tick of the CPU, idle included.
func (t Times) Total() uint64 { return t.Busy() + t.Idle + t.IOWait + t.Steal }

// Sub is t minus an earlier reading o. The kernel's idle and iowait ticks
// can go backwards between two reads (they are estimated for a CPU that
// sleeps), so each field is clamped at 0.
func (t Times) Sub(o Times) Times {
	return Times{
		User: counter.Sub(t.User, o.User), Nice: counter.Sub(t.Nice, o.Nice), System: counter.Sub(t.System, o.System),
		Idle: counter.Sub(t.Idle, o.Idle), IOWait: counter.Sub(t.IOWait, o.IOWait), IRQ: counter.Sub(t.IRQ, o.IRQ),
		SoftIRQ: counter.Sub(t.SoftIRQ, o.SoftIRQ), Steal: counter.Sub(t.Steal, o.Steal),
	}
}

// Stat is every online CPU's times, by CPU number.
type Stat map[int]Times

// Read reads /proc/stat.
func Read() (Stat, error) { return ReadFrom(procfs.DefaultMountPoint) }

// ReadFrom reads the file stat of the proc file system mounted at root
// ("/proc" for this machine's) and picks its per-CPU lines ("cpuN ...").
func ReadFrom(root string) (Stat, error) {
	fs, err := procfs.NewFS(root)
	if err != nil {
		return nil, fmt.Errorf("read CPU times: %w", err)
	}
	ps, err := fs.Stat()
	if err != nil {
		return nil, fmt.Errorf("read CPU times: %w", err)
	}
	if len(ps.CPU) == 0 {
		return nil, errors.New("read CPU times: /proc/stat has no per-CPU lines")
	}
	st := make(Stat, len(ps.CPU))
	for n, c := range ps.CPU {
		st[int(n)] = Times{
			User: ticks(c.User), Nice: ticks(c.Nice), System: ticks(c.System), Idle: ticks(c.Idle),
			IOWait: ticks(c.Iowait), IRQ: ticks(c.IRQ), SoftIRQ: ticks(c.SoftIRQ), Steal: ticks(c.Steal),
		}
	}
	return st, nil
}

// ticks turns procfs's seconds back into the USER_HZ ticks the kernel
// wrote: a whole number of ticks divided by 100 and multiplied again
// is that number within far less than half a tick, up to 2^52 ticks.
func ticks(seconds float64) uint64 { return uint64(math.Round(seconds * UserHZ)) }

// Share is a CPU's time over a window, each part in percent of the
// window (0-100).
type Share struct {
	CPU     int     `json:"cpu"`
	Busy    float64 `json:"busy"`
	User    float64 `json:"user"`
	System  float64 `json:"system"`
	SoftIRQ float64 `json:"softirq"`
	IRQ     float64 `json:"irq"`
}

// ShareOf is what d, the difference of two readings of CPU cpu, was in
// percent, rounded to 0.1; all zero for an empty window.
func ShareOf(cpu int, d Times) Share {
	s := Share{CPU: cpu}
	if t := float64(d.Total()); t > 0 {
		pct := func(v uint64) float64 { return float64(int64(float64(v)*1000/t+0.5)) / 10 }
		s.Busy, s.User, s.System, s.SoftIRQ, s.IRQ = pct(d.Busy()), pct(d.User+d.Nice), pct(d.System), pct(d.SoftIRQ), pct(d.IRQ)
	}
	return s
}
