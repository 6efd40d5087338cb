// Package privilege checks, before anything is attached, that the process
// holds the capabilities XDP and AF_XDP need, so that a user without them gets
// one clear sentence instead of an EPERM from deep inside a setup.
package privilege

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Capability numbers from linux/capability.h.
const (
	capNetAdmin = 12
	capNetRaw   = 13
	capSysAdmin = 21
	capBPF      = 39
)

// Check returns an error naming the command and the missing capabilities if
// the process lacks what loading BPF programs, attaching them and opening
// AF_XDP sockets needs: CAP_NET_ADMIN and CAP_NET_RAW, plus CAP_BPF (or
// CAP_SYS_ADMIN, which older kernels ask for instead).
func Check(command string) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	var missing []string
	if !has(capNetAdmin) {
		missing = append(missing, "CAP_NET_ADMIN")
	}
	if !has(capNetRaw) {
		missing = append(missing, "CAP_NET_RAW")
	}
	if !has(capBPF) && !has(capSysAdmin) {
		missing = append(missing, "CAP_BPF")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s needs root (missing %v): run it with sudo", command, missing)
	}
	return nil
}
