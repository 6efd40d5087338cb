package engine

import (
	"net"

	"github.com/xdpeng/xdpeng/internal/netdev"
)

// Device is what an engine knows of a network device.
type Device struct {
	Name  string
	Index int
	MAC   net.HardwareAddr
	// Driver is the driver's name ("veth", "mlx5_core", ...), the link
	// kind ("bridge") where the driver does not say, "" where neither does
	// (lo).
	Driver string
	MTU    int
	// RxQueues and TxQueues are the queue ids a socket may bind to: the
	// device's channels where it reports them.
	RxQueues, TxQueues int
}

func deviceOf(i *netdev.Info) Device {
	return Device{Name: i.Name, Index: i.Index, MAC: i.MAC, Driver: i.Driver, MTU: i.MTU, RxQueues: i.RxQueues, TxQueues: i.TxQueues}
}

// CheckQueues returns a *QueueError for the first of queues that d does not
// have as a receive queue.
func (d Device) CheckQueues(queues []int) error {
	for _, q := range queues {
		if q < 0 || q >= d.RxQueues {
			return &QueueError{Device: d.Name, Driver: d.Driver, Queue: q, RxQueues: d.RxQueues}
		}
	}
	return nil
}
