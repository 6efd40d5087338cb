package engine

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/xdpeng/xdpeng/internal/netdev"
)

// NextHopMAC returns the MAC address that frames sent out of device to dst
// should carry, as xdpeng fwd finds it: on a veth, its peer's address (the
// peer may be in another network namespace); otherwise the neighbour
// table's entry for dst (reachable, stale or permanent; not incomplete or
// failed). With neither it fails with ErrNoNextHop; a device that does not
// exist in the calling thread's network namespace is a *DeviceError. A
// zero dst finds a veth's peer only. The result suits
// handler.Fwd.DstMAC.
func NextHopMAC(device string, dst netip.Addr) (net.HardwareAddr, error) {
	info, err := lookup(device)
	if err != nil {
		return nil, err
	}
	mac, _, err := netdev.DstMAC(info.Index, dst)
	if err != nil {
		return nil, fmt.Errorf("next hop out of %s: %w", device, err)
	}
	return mac, nil
}
