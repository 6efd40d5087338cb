//go:build linux

package compare

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/xdpeng/xdpeng/internal/counter"
)

// userHZ is the unit of /proc/stat: USER_HZ, 100 on every Linux
// architecture Go runs on (it is fixed by the ABI, unlike CONFIG_HZ).
const userHZ = 100

// cpuTimes is one CPU's line of /proc/stat, in USER_HZ ticks.
type cpuTimes struct {
	user, nice, system, idle, iowait, irq, softirq, steal uint64
}

// busy is the time the CPU did work for someone on this machine: steal
// (time the hypervisor gave to another guest) and idle are left out.
func (c cpuTimes) busy() uint64 { return c.user + c.nice + c.system + c.irq + c.softirq }

func (c cpuTimes) total() uint64 { return c.busy() + c.idle + c.iowait + c.steal }

// sub is c minus an earlier reading o. The kernel's idle and iowait ticks
// can go backwards between two reads (they are estimated for a CPU that
// sleeps), so each field is clamped at 0.
func (c cpuTimes) sub(o cpuTimes) cpuTimes {
	return cpuTimes{
		user: counter.Sub(c.user, o.user), nice: counter.Sub(c.nice, o.nice), system: counter.Sub(c.system, o.system),
		idle: counter.Sub(c.idle, o.idle), iowait: counter.Sub(c.iowait, o.iowait), irq: counter.Sub(c.irq, o.irq),
		softirq: counter.Sub(c.softirq, o.softirq), steal: counter.Sub(c.steal, o.steal),
	}
}

// cpuStat is every CPU's times, by CPU number.
type cpuStat map[int]cpuTimes

// readCPUStat reads /proc/stat.
func readCPUStat() (cpuStat, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil, fmt.Errorf("read CPU times: %w", err)
	}
	return parseCPUStat(b)
}

// parseCPUStat picks the per-CPU lines ("cpuN ...") out of /proc/stat.
func parseCPUStat(b []byte) (cpuStat, error) {
	st := cpuStat{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 9 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		n, err := strconv.Atoi(f[0][3:])
		if err != nil {
			continue
		}
		var v [8]uint64
		for i := range v {
			if v[i], err = strconv.ParseUint(f[i+1], 10, 64); err != nil {
				return nil, fmt.Errorf("/proc/stat: %s: field %d: %w", f[0], i+1, err)
			}
		}
		st[n] = cpuTimes{user: v[0], nice: v[1], system: v[2], idle: v[3], iowait: v[4], irq: v[5], softirq: v[6], steal: v[7]}
	}
	if len(st) == 0 {
		return nil, fmt.Errorf("/proc/stat has no per-CPU lines")
	}
	return st, nil
}

// CPUUse is what one CPU did during a measurement window, in percent of
// the window.
type CPUUse struct {
	CPU int `json:"cpu"`
	// Role is "gen" for a generator CPU, "dut" for a receiver CPU, both
	// ("gen+dut") or "" for another CPU.
	Role    string  `json:"role,omitempty"`
	Busy    float64 `json:"busy"`
	User    float64 `json:"user"`
	System  float64 `json:"system"`
	SoftIRQ float64 `json:"softirq"`
	IRQ     float64 `json:"irq"`
}

// receiverCPU splits a window's CPU time between the receiving side and the
// rest. Every busy tick of a receiver CPU that runs no generator counts;
// elsewhere only irq and softirq ticks count, because that is where the
// kernel runs a device's receive work (NAPI) on behalf of the receiver:
// on a veth the DUT's NAPI runs in softirq on the CPU that sent the frame,
// the generator's. /proc/stat keeps softirq ticks apart from the system
// time of the task they interrupted, so the generator's own work (system
// time in BPF_PROG_TEST_RUN) is not counted.
func receiverCPU(before, after cpuStat, dutCPUs, genCPUs []int) (ns float64, use []CPUUse) {
	cpus := make([]int, 0, len(after))
	for c := range after {
		cpus = append(cpus, c)
	}
	slices.Sort(cpus)
	for _, c := range cpus {
		d := after[c].sub(before[c])
		dut, gen := slices.Contains(dutCPUs, c), slices.Contains(genCPUs, c)
		ticks := d.irq + d.softirq
		if dut && !gen {
			ticks = d.busy()
		}
		ns += float64(ticks) * 1e9 / userHZ
		u := CPUUse{CPU: c}
		switch {
		case dut && gen:
			u.Role = "gen+dut"
		case dut:
			u.Role = "dut"
		case gen:
			u.Role = "gen"
		}
		if t := float64(d.total()); t > 0 {
			pct := func(v uint64) float64 { return round1(float64(v) * 100 / t) }
			u.Busy, u.User, u.System, u.SoftIRQ, u.IRQ = pct(d.busy()), pct(d.user+d.nice), pct(d.system), pct(d.softirq), pct(d.irq)
		}
		use = append(use, u)
	}
	return ns, use
}

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }
