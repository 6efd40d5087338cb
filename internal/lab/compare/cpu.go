//go:build linux

package compare

import (
	"slices"

	"github.com/xdpeng/xdpeng/internal/lab/cpustat"
)

// cpuStat is every CPU's times, by CPU number.
type cpuStat = cpustat.Stat

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
// time in BPF_PROG_TEST_RUN) is not counted. With skipGen nothing of a
// generator CPU that is no receiver CPU counts: a relayed generator runs
// its relay's NAPI in softirq there, which is its own work.
func receiverCPU(before, after cpuStat, dutCPUs, genCPUs []int, skipGen bool) (ns float64, use []CPUUse) {
	cpus := make([]int, 0, len(after))
	for c := range after {
		cpus = append(cpus, c)
	}
	slices.Sort(cpus)
	for _, c := range cpus {
		d := after[c].Sub(before[c])
		dut, gen := slices.Contains(dutCPUs, c), slices.Contains(genCPUs, c)
		ticks := d.IRQ + d.SoftIRQ
		switch {
		case dut && !gen:
			ticks = d.Busy()
		case gen && !dut && skipGen:
			ticks = 0
		}
		ns += float64(ticks) * 1e9 / cpustat.UserHZ
		sh := cpustat.ShareOf(c, d)
		u := CPUUse{CPU: c, Busy: sh.Busy, User: sh.User, System: sh.System, SoftIRQ: sh.SoftIRQ, IRQ: sh.IRQ}
		switch {
		case dut && gen:
			u.Role = "gen+dut"
		case dut:
			u.Role = "dut"
		case gen:
			u.Role = "gen"
		}
		use = append(use, u)
	}
	return ns, use
}

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }
