//go:build linux

package compare

import (
	"fmt"

	"github.com/xdpeng/xdpeng/internal/cpuset"
	labenv "github.com/xdpeng/xdpeng/internal/lab/env"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
)

// runEnv is the environment every row of a run shares: the machine's
// (labenv.Collect) and what the run chose. Each row adds its path's XDP
// mode.
func runEnv(cfg *Config, e *env) labenv.Env {
	if e.remote != nil {
		return remoteRunEnv(cfg, e)
	}
	v := labenv.Collect()
	v.Driver = e.driver
	v.Queues = len(e.queues)
	if e.bed != nil {
		v.Layout = layoutText(cfg.Layout, e.bed.ThreadedNAPI, e.bed.DUTCPUs, cfg.GenCPUs)
		v.CPUs = fmt.Sprintf("generator %s, receiver %s", cpuset.Format(cfg.GenCPUs), cpuset.Format(cfg.DUTCPUs))
		v.FrameSize = cfg.FrameSize
		v.Generator = generatorText(cfg.GenMethod, cfg.GenCopies, len(cfg.GenCPUs), cfg.Rate)
	} else {
		v.Layout = "interface: whatever traffic arrives"
		v.CPUs = "receiver " + cpuset.Format(cfg.DUTCPUs)
	}
	return v
}

// layoutText names a test bed's layout and where its NAPI runs.
func layoutText(l Layout, threaded bool, dutCPUs, genCPUs []int) string {
	if threaded {
		return fmt.Sprintf("%s (the DUT's NAPI threaded, on CPU %s with the receiver)", l, cpuset.Format(dutCPUs))
	}
	return fmt.Sprintf("%s (the DUT's NAPI in softirq on the sending CPU %s)", l, cpuset.Format(genCPUs))
}

// generatorText says what sent the traffic.
func generatorText(m gen.Method, copies, threads int, rate uint64) string {
	var s string
	switch m {
	case gen.XSK:
		s = fmt.Sprintf("xdpeng gen --method xsk --copies %d (AF_XDP into a veth relay, XDP redirect, %d frames out per frame sent in)", copies, copies)
	case gen.Packet:
		s = fmt.Sprintf("xdpeng gen --method packet --copies %d (AF_PACKET into a veth relay, XDP redirect, %d frames out per frame sent in)", copies, copies)
	default:
		s = "xdpeng live frames (BPF_PROG_TEST_RUN)"
	}
	s += fmt.Sprintf(", %d thread(s)", threads)
	if rate == 0 {
		return s + ", as fast as they go"
	}
	return fmt.Sprintf("%s, paced to %d pps", s, rate)
}
