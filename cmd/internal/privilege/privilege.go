// Package privilege checks, before anything is attached, that the process
// holds the capabilities XDP and AF_XDP need, so that a user without them gets
// one clear sentence instead of an EPERM from deep inside a setup.
package privilege

import (
	"fmt"

	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"
)

// Capability numbers from linux/capability.h.
const (
	capNetAdmin = 12
	capNetRaw   = 13
	capSysAdmin = 21
	capBPF      = 39
)

// Need says what a command does that needs privilege.
type Need int

const (
	// BPF: load BPF programs and attach them to interfaces (CAP_BPF, or
	// CAP_SYS_ADMIN on older kernels, and CAP_NET_ADMIN).
	BPF Need = 1 << iota
	// AFXDP: open AF_XDP sockets (CAP_NET_RAW), on top of BPF.
	AFXDP
	// Namespaces: create and enter network namespaces (CAP_SYS_ADMIN).
	Namespaces
	// Links: create and configure interfaces (CAP_NET_ADMIN).
	Links
	// Sockets: open AF_XDP sockets and put them in an XSKMAP someone
	// else made and handed over (CAP_NET_RAW alone).
	Sockets
)

// Check returns an error naming the command and the missing capabilities
// if the process lacks what need asks for. The message reads well after
// main's "xdpeng: " prefix: "xdpeng: rxdrop needs root (missing ...)".
func Check(command string, need Need) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	var missing []string
	if need&(BPF|AFXDP|Links) != 0 && !has(capNetAdmin) {
		missing = append(missing, "CAP_NET_ADMIN")
	}
	if need&(BPF|AFXDP) != 0 && !has(capBPF) && !has(capSysAdmin) {
		missing = append(missing, "CAP_BPF")
	}
	if need&(AFXDP|Sockets) != 0 && !has(capNetRaw) {
		missing = append(missing, "CAP_NET_RAW")
	}
	if need&Namespaces != 0 && !has(capSysAdmin) {
		missing = append(missing, "CAP_SYS_ADMIN")
	}
	if len(missing) > 0 && need == Sockets {
		return fmt.Errorf("%s needs CAP_NET_RAW for its AF_XDP sockets (and CAP_IPC_LOCK, or a memlock limit that holds its UMEM)", command)
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s needs root (missing %v): run it with sudo", command, missing)
	}
	return nil
}

// RaiseMemlock lifts RLIMIT_MEMLOCK where the kernel still charges BPF
// maps against it (before memory-cgroup accounting, Linux 5.11), so that
// loading a program does not fail with EPERM on a low limit; elsewhere it
// changes nothing. Call it once, after Check, before anything is loaded.
func RaiseMemlock() error {
	if err := rlimit.RemoveMemlock(); err != nil {
		return fmt.Errorf("raise RLIMIT_MEMLOCK: %w", err)
	}
	return nil
}
