package testbed

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/internal/cpuset"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// applyNAPI puts the DUT's NAPI where mode says, after the links exist.
func (b *Bed) applyNAPI(mode NAPIMode) error {
	switch mode {
	case NAPISoftirq:
		b.NAPINote = "softirq, as requested"
		return nil
	case NAPIAuto:
		if common := overlap(b.GenCPUs, b.DUTCPUs); len(common) > 0 {
			b.NAPINote = fmt.Sprintf("softirq: the DUT CPUs share CPU %s with the generator", cpuset.Format(common))
			return nil
		}
	}
	err := b.SetThreadedNAPI(true)
	if err == nil || mode == NAPIThreaded {
		return err
	}
	// Auto: carry on in softirq mode, which works everywhere, and say why.
	if off := b.SetThreadedNAPI(false); off != nil {
		return errors.Join(err, off)
	}
	b.NAPINote = "softirq: threaded NAPI unavailable: " + err.Error()
	return nil
}

func overlap(a, b []int) []int {
	var common []int
	for _, x := range a {
		if slices.Contains(b, x) {
			common = append(common, x)
		}
	}
	return common
}

// SetThreadedNAPI switches the DUT ends between threaded NAPI, with the NAPI
// kthreads pinned round-robin to b.DUTCPUs (queue order), and softirq NAPI. It
// lets one bed be measured in both layouts. Calling it with true again re-pins
// the kthreads, which the kernel re-creates (unpinned) when a device goes
// down and up.
func (b *Bed) SetThreadedNAPI(on bool) error {
	ns, err := netns.GetFromName(b.DUTNS)
	if err != nil {
		return fmt.Errorf("open namespace %s: %w", b.DUTNS, err)
	}
	defer ns.Close()
	val := []byte("0")
	if on {
		val = []byte("1")
	}
	err = inSysfs(ns, func(sys string) error {
		for _, l := range b.Links {
			p := filepath.Join(sys, "class/net", l.DUT, "threaded")
			if err := os.WriteFile(p, val, 0o644); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("%s: no %s, the kernel has no threaded NAPI (Linux 5.12+)", l.DUT, p)
				}
				return fmt.Errorf("set %s/threaded to %s: %w", l.DUT, val, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("threaded NAPI in %s: %w", b.DUTNS, err)
	}
	if !on {
		b.ThreadedNAPI, b.NAPIThreads, b.NAPINote = false, nil, "softirq, as requested"
		return nil
	}
	b.ThreadedNAPI, b.NAPINote = true, ""
	b.NAPIThreads, err = b.pinNAPI()
	return err
}

// pinNAPI pins the DUT's NAPI kthreads. They are found through netlink
// (napi-get gives each NAPI's kthread pid), not by name: every bed has a dut0,
// so "napi/dut0-*" may belong to another bed.
func (b *Bed) pinNAPI() ([]NAPIThread, error) {
	if len(b.DUTCPUs) == 0 {
		return nil, errors.New("no DUT CPUs to pin the NAPI kthreads to")
	}
	var threads []NAPIThread
	err := Do(b.DUTNS, func() error {
		i := 0
		for _, l := range b.Links {
			napis, err := netdev.NAPIs(l.DUTIndex)
			if err != nil {
				return fmt.Errorf("find the NAPI kthreads of %s: %w", l.DUT, err)
			}
			if len(napis) == 0 {
				return fmt.Errorf("%s has no NAPI instance (is GRO on and the link up?)", l.DUT)
			}
			for _, n := range napis {
				if n.PID == 0 {
					return fmt.Errorf("NAPI %d of %s has no kthread although threaded mode is on", n.ID, l.DUT)
				}
				cpu := b.DUTCPUs[i%len(b.DUTCPUs)]
				i++
				cpus, err := pinPID(n.PID, cpu)
				if err != nil {
					return fmt.Errorf("NAPI kthread of %s (napi/%s-%d): %w", l.DUT, l.DUT, n.ID, err)
				}
				threads = append(threads, NAPIThread{Dev: l.DUT, ID: n.ID, PID: n.PID, CPUs: cpus})
			}
		}
		return nil
	})
	return threads, err
}

// pinPID sets the CPU affinity of pid to cpu and returns the affinity read
// back, so that the caller reports what the kernel did.
func pinPID(pid, cpu int) ([]int, error) {
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(pid, &set); err != nil {
		return nil, fmt.Errorf("pin pid %d to CPU %d: %w", pid, cpu, err)
	}
	cpus, err := affinity(pid)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(cpus, []int{cpu}) {
		return cpus, fmt.Errorf("pid %d runs on CPUs %s after pinning to %d", pid, cpuset.Format(cpus), cpu)
	}
	return cpus, nil
}

func affinity(pid int) ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &set); err != nil {
		return nil, fmt.Errorf("read CPU affinity of pid %d: %w", pid, err)
	}
	var cpus []int
	for c := 0; c < cpuset.MaxID; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// readNAPI fills in the NAPI fields of a bed made earlier, from sysfs and
// netlink.
func (b *Bed) readNAPI(dutNS netns.NsHandle) error {
	threaded := false
	err := inSysfs(dutNS, func(sys string) error {
		v, err := os.ReadFile(filepath.Join(sys, "class/net", b.Links[0].DUT, "threaded"))
		if err != nil {
			return err
		}
		// 0 is off; 1 (and 2, threaded busy polling, on newer kernels) is on.
		threaded = strings.TrimSpace(string(v)) != "0"
		return nil
	})
	if err != nil {
		b.NAPINote = "softirq: cannot read threaded NAPI state: " + err.Error()
		return nil
	}
	if !threaded {
		b.NAPINote = "softirq"
		return nil
	}
	b.ThreadedNAPI = true
	return Do(b.DUTNS, func() error {
		for _, l := range b.Links {
			napis, err := netdev.NAPIs(l.DUTIndex)
			if err != nil {
				b.NAPINote = "threaded; NAPI kthreads unknown: " + err.Error()
				return nil
			}
			for _, n := range napis {
				t := NAPIThread{Dev: l.DUT, ID: n.ID, PID: n.PID}
				if n.PID != 0 {
					t.CPUs, _ = affinity(n.PID)
				}
				for _, c := range t.CPUs {
					if !slices.Contains(b.DUTCPUs, c) {
						b.DUTCPUs = append(b.DUTCPUs, c)
					}
				}
				b.NAPIThreads = append(b.NAPIThreads, t)
			}
		}
		slices.Sort(b.DUTCPUs)
		return nil
	})
}
