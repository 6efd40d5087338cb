//go:build linux

package netdev

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// IRQDeferral is how a device defers its interrupts in favour of busy
// polling (Documentation/networking/napi.rst, "IRQ mitigation"): the
// device's interrupt stays masked, and a timer of GROFlushTimeout polls
// instead, until DeferHardIRQs polls in a row found nothing. These are the
// device-wide sysfs values; since Linux 6.13 each NAPI can also be given
// its own over netlink, which this does not read.
// With SO_PREFER_BUSY_POLL an application's busy poll then keeps the
// device's work in the application's context; with both zero the device's
// interrupt runs its NAPI as usual and preferring busy polling achieves
// little.
type IRQDeferral struct {
	DeferHardIRQs   uint64
	GROFlushTimeout time.Duration
}

// Deferring reports whether the device defers interrupts at all.
func (d IRQDeferral) Deferring() bool { return d.DeferHardIRQs > 0 && d.GROFlushTimeout > 0 }

// IRQDeferralOf reads the settings of the device called name from sysfs
// (/sys/class/net/NAME/napi_defer_hard_irqs and gro_flush_timeout), as
// seen by the network namespace sysfs was mounted in.
func IRQDeferralOf(name string) (IRQDeferral, error) {
	return irqDeferralIn("/sys/class/net", name)
}

func irqDeferralIn(root, name string) (IRQDeferral, error) {
	read := func(file string) (uint64, error) {
		b, err := os.ReadFile(filepath.Join(root, name, file))
		if err != nil {
			return 0, err
		}
		v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s of %s: %w", file, name, err)
		}
		return v, nil
	}
	n, err := read("napi_defer_hard_irqs")
	if err != nil {
		return IRQDeferral{}, err
	}
	t, err := read("gro_flush_timeout")
	if err != nil {
		return IRQDeferral{}, err
	}
	return IRQDeferral{DeferHardIRQs: n, GROFlushTimeout: time.Duration(t)}, nil
}
