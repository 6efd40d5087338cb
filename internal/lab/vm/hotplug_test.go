package vm

import (
	"slices"
	"strings"
	"testing"
)

// TestPortDevices: each port's NIC has a QEMU device id, which device_del
// names; a port the bed does not have, or one without an id, is refused
// before the monitor is asked.
func TestPortDevices(t *testing.T) {
	b := &Bed{Name: "v", Dir: "/nonexistent", Ports: []Port{
		{Guest: "eth0", Tap: "vtap0", MAC: "52:54:00:5e:00:00", Netdev: "net0", Device: "dev0"},
		{Guest: "eth1", Tap: "vtap1", MAC: "52:54:00:5e:00:01", Netdev: "net1"},
	}}
	args := b.qemuArgs(Config{CPUs: 2, MemoryMB: 1024})
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "virtio-net-pci,id=dev0,netdev=net0,") }) {
		t.Errorf("no device dev0 for net0 in %q", args)
	}
	if err := b.RemovePort(2); err == nil || !strings.Contains(err.Error(), "the bed has 2") {
		t.Errorf("RemovePort(2) = %v, want the bed has 2", err)
	}
	if err := b.RemovePort(1); err == nil || !strings.Contains(err.Error(), "no QEMU device id") {
		t.Errorf("RemovePort of a port without an id = %v", err)
	}
}

// TestSSHCommand: the two-host commands' ssh reaches the guest with the
// bed's own key and known hosts, nothing of the user's configuration.
func TestSSHCommand(t *testing.T) {
	b := &Bed{Name: "v", Dir: "/s"}
	got := b.SSHCommand()
	for _, w := range []string{"ssh -F /dev/null ", "-i /s/id_ed25519 ", "UserKnownHostsFile=/s/known_hosts ", "StrictHostKeyChecking=yes", "BatchMode=yes"} {
		if !strings.Contains(got, w) {
			t.Errorf("SSHCommand() = %q, lacks %q", got, w)
		}
	}
}
