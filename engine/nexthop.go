package engine

import "github.com/xdpeng/xdpeng/internal/netdev"

// ErrNoNextHop: NextHopMAC found no address to send to: the device is not
// a veth and the neighbour table has no usable entry for the destination.
var ErrNoNextHop = netdev.ErrNoDstMAC
