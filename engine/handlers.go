package engine

import "github.com/xdpeng/xdpeng/engine/packet"

// DropHandler drops every frame without reading it: xdpsock's rxdrop.
type DropHandler struct{}

// Handle leaves every frame's verdict at Drop.
func (DropHandler) Handle(*Batch) {}

func (DropHandler) dropsAll()     {}
func (DropHandler) receivesOnly() {}

// L2FwdHandler swaps source and destination MAC of every frame and sends
// it back out of the queue it arrived on: xdpsock's l2fwd.
type L2FwdHandler struct{}

// Handle swaps the MACs and transmits every frame.
func (L2FwdHandler) Handle(b *Batch) {
	for i := 0; i < b.Len(); i++ {
		f := b.Frame(i)
		if len(f) < 14 {
			continue // too short to be Ethernet: leave it dropped
		}
		packet.SwapMACs(f)
		b.Transmit(i)
	}
}
