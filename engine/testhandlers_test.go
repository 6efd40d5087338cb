package engine

import (
	"net"

	"github.com/xdpeng/xdpeng/engine/packet"
)

// The handlers of the internal tests: the built-in ones are in
// engine/handler, which imports engine, so tests of package engine cannot
// use them.

// dropAll declares DropAll, as handler.RxDrop does.
type dropAll struct{}

func (dropAll) Handle(*Batch) {}
func (dropAll) Hints() Hints  { return Hints{DropAll: true} }

// swapMACs sends every frame back with its MACs swapped, as handler.L2Fwd.
type swapMACs struct{}

func (swapMACs) Handle(b *Batch) {
	for i := 0; i < b.Len(); i++ {
		if f := b.Frame(i); len(f) >= packet.EthHdrLen {
			packet.SwapMACs(f)
			b.Transmit(i)
		}
	}
}

// forwardTo sends every frame to port with its destination MAC set to mac,
// as handler.Fwd.
type forwardTo struct {
	port Dest
	mac  net.HardwareAddr
}

func (h forwardTo) Handle(b *Batch) {
	for i := 0; i < b.Len(); i++ {
		if f := b.Frame(i); len(f) >= packet.EthHdrLen {
			copy(f, h.mac)
			b.Forward(i, h.port)
		}
	}
}
