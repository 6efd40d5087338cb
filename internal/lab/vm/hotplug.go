package vm

import (
	"fmt"
	"strings"
)

// RemovePort unplugs port k's NIC from the guest, as a card pulled out of
// a running machine: QEMU's device_del. It returns once QEMU has asked the
// guest to let go of it; the guest removes the device (and its netdev)
// soon after. The port's tap stays, for Down to remove.
func (b *Bed) RemovePort(k int) error {
	if k < 0 || k >= len(b.Ports) {
		return fmt.Errorf("port %d: the bed has %d", k, len(b.Ports))
	}
	dev := b.Ports[k].Device
	if dev == "" {
		return fmt.Errorf("port %d has no QEMU device id (a bed from an older xdpeng): bring it up again", k)
	}
	out, err := b.Monitor("device_del " + dev)
	if err != nil {
		return err
	}
	if out != "" {
		return fmt.Errorf("device_del %s: %s", dev, out)
	}
	return nil
}

// SSHCommand is the ssh command, with the bed's key and known hosts, that
// reaches the guest as root at MgmtIP from the generator namespace:
// for the --ssh-command of the two-host commands (compare --dut).
func (b *Bed) SSHCommand() string {
	return strings.Join([]string{"ssh", "-F", "/dev/null", "-i", b.path("id_ed25519"), "-o", "IdentitiesOnly=yes",
		"-o", "UserKnownHostsFile=" + b.path("known_hosts"), "-o", "StrictHostKeyChecking=yes",
		"-o", "BatchMode=yes", "-o", "ConnectTimeout=20", "-o", "LogLevel=ERROR"}, " ")
}
