package main

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/internal/lab/guardproc"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// napiGuardEnv, set in a process's environment, makes napiGuardMain run
// the guard that puts back the NAPI settings of --busy-poll.
const napiGuardEnv = "XDPENG_NAPI_GUARD"

// napiGuardMain runs the guard and exits if this process was started as
// one; it returns at once otherwise. main calls it first. The guard runs
// in xdpeng's network namespace, where the NAPIs are.
func napiGuardMain() {
	guardproc.Main(napiGuardEnv, "the NAPI settings of a killed run", func(key, value string) error {
		if idx, ok := strings.CutPrefix(key, "irqdefer/"); ok {
			i, err := strconv.Atoi(idx)
			if err != nil {
				return fmt.Errorf("%q: not an interface index", key)
			}
			return netdev.ReleaseIRQDeferral(i, value)
		}
		if idText, ok := strings.CutPrefix(key, "napithreaded/"); ok {
			id, err1 := strconv.ParseUint(idText, 10, 32)
			m, err2 := strconv.ParseUint(value, 10, 32)
			if err1 != nil || err2 != nil {
				return fmt.Errorf("%q %q: not a NAPI and its threaded mode", key, value)
			}
			return netdev.SetNAPIThreaded(uint32(id), netdev.NAPIThreaded(m))
		}
		id, c, err := parseNAPIGuard(key, value)
		if err != nil {
			return err
		}
		return netdev.SetNAPI(id, c)
	})
}

// napiGuard is an engine.NAPIGuard that tells the guard process (package
// guardproc) each NAPI's settings before the engine changes them, keyed
// "napi/ID", valued "DEFER GRO_NS SUSPEND_NS"; its threaded mode, keyed
// "napithreaded/ID", valued the mode's number; and a hold on the device
// iface's device-wide deferral, keyed "irqdefer/IFINDEX", valued this
// process as its holder (netdev.Holder), which the guard lets go of.
type napiGuard struct {
	g      guardproc.Guard
	iface  string
	devKey string // the device's key, once a hold was told
}

func newNAPIGuard(iface string) *napiGuard {
	return &napiGuard{g: guardproc.Guard{Env: napiGuardEnv, What: "NAPI settings"}, iface: iface}
}

// startNAPIGuard is newNAPIGuard as compare.Config.NAPIGuard wants it.
func startNAPIGuard(iface string) (engine.NAPIGuard, func() error) {
	g := newNAPIGuard(iface)
	return g, g.close
}

func deviceKey(iface string) (string, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return "", err
	}
	return "irqdefer/" + strconv.Itoa(ifi.Index), nil
}

func napiKey(id uint32) string { return "napi/" + strconv.FormatUint(uint64(id), 10) }

// Changing tells the guard c's old settings, or this process's hold.
func (n *napiGuard) Changing(c engine.NAPIChange) error {
	if c.Device {
		// Looked up now, in the device's namespace: Restored may be
		// told from another.
		key, err := deviceKey(n.iface)
		if err != nil {
			return err
		}
		holder, err := netdev.Holder(os.Getpid())
		if err != nil {
			return err
		}
		n.devKey = key
		return n.g.Change(key, holder)
	}
	if c.Threaded {
		return n.g.Change(napiThreadedKey(c.NAPIID), strconv.FormatUint(uint64(c.ThreadedBefore), 10))
	}
	return n.g.Change(napiKey(c.NAPIID), fmtNAPIValue(c.Before))
}

func napiThreadedKey(id uint32) string { return "napithreaded/" + strconv.FormatUint(uint64(id), 10) }

// fmtNAPIValue writes settings as parseNAPIGuard reads them.
func fmtNAPIValue(b engine.NAPIConfig) string {
	return fmt.Sprintf("%d %d %d", b.DeferHardIRQs, b.GROFlushTimeout.Nanoseconds(), b.IRQSuspendTimeout.Nanoseconds())
}

// Restored tells the guard that c's old settings are back.
func (n *napiGuard) Restored(c engine.NAPIChange) {
	if c.Device {
		if n.devKey != "" {
			n.g.Restored(n.devKey)
		}
		return
	}
	if c.Threaded {
		n.g.Restored(napiThreadedKey(c.NAPIID))
		return
	}
	n.g.Restored(napiKey(c.NAPIID))
}

// close ends the guard: after the engine's Close it has nothing to do.
func (n *napiGuard) close() error { return n.g.Close() }

// parseNAPIGuard reads a key and a value of napiGuard's.
func parseNAPIGuard(key, value string) (uint32, netdev.NAPIConfig, error) {
	idText, ok := strings.CutPrefix(key, "napi/")
	id, err := strconv.ParseUint(idText, 10, 32)
	f := strings.Fields(value)
	if !ok || err != nil || len(f) != 3 {
		return 0, netdev.NAPIConfig{}, fmt.Errorf("%q %q: not a NAPI and its settings", key, value)
	}
	var v [3]uint64
	for i := range v {
		if v[i], err = strconv.ParseUint(f[i], 10, 64); err != nil || (i == 0 && v[i] > 1<<32-1) {
			return 0, netdev.NAPIConfig{}, fmt.Errorf("%q %q: not a NAPI and its settings", key, value)
		}
	}
	return uint32(id), netdev.NAPIConfig{DeferHardIRQs: uint32(v[0]), GROFlushTimeout: time.Duration(v[1]), IRQSuspendTimeout: time.Duration(v[2])}, nil
}
