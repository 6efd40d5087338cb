// Package handler holds the handlers of xdpeng's own commands, written on
// the public engine API alone: RxDrop (rxdrop), L2Fwd (l2fwd), Fwd (fwd)
// and Count (count). Each is a value a Config.Handler function returns, one
// per queue.
package handler

import (
	"net"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/packet"
)

// RxDrop drops every frame without reading it: xdpsock's rxdrop. It declares
// DropAll, so the worker never calls Handle and hands each frame straight
// back to the kernel.
type RxDrop struct{}

// Handle leaves every frame's verdict at Drop.
func (RxDrop) Handle(*engine.Batch) {}

// Hints declares that RxDrop drops every frame unread.
func (RxDrop) Hints() engine.Hints { return engine.Hints{DropAll: true} }

// ReasonTooShort is the reason L2Fwd and Fwd give the frames they drop
// (Batch.DropFor): shorter than an Ethernet header.
const ReasonTooShort engine.DropReason = 1

// L2Fwd swaps the source and destination MAC of every frame and sends it
// back out of the queue it arrived on: xdpsock's l2fwd. Frames too short
// for an Ethernet header are dropped (ReasonTooShort).
type L2Fwd struct{}

// Handle swaps the MACs and transmits every frame.
func (L2Fwd) Handle(b *engine.Batch) {
	for i := 0; i < b.Len(); i++ {
		f := b.Frame(i)
		if len(f) < packet.EthHdrLen {
			b.DropFor(i, ReasonTooShort)
			continue
		}
		packet.SwapMACs(f)
		b.Transmit(i)
	}
}

// Fwd sends every frame out of Dest with its destination MAC set to
// DstMAC (unchanged where DstMAC is nil): xdpeng fwd. Frames too short for
// an Ethernet header are dropped (ReasonTooShort).
type Fwd struct {
	Dest   engine.Dest
	DstMAC net.HardwareAddr
}

// Handle rewrites and forwards every frame.
func (h *Fwd) Handle(b *engine.Batch) {
	if len(h.DstMAC) != 6 {
		for i := 0; i < b.Len(); i++ {
			if len(b.Frame(i)) >= packet.EthHdrLen {
				b.Forward(i, h.Dest)
			} else {
				b.DropFor(i, ReasonTooShort)
			}
		}
		return
	}
	// The address as an array: each frame's is then one 6-byte store,
	// not a call to copy a slice of unknown length.
	mac := [6]byte(h.DstMAC)
	for i := 0; i < b.Len(); i++ {
		f := b.Frame(i)
		if len(f) < packet.EthHdrLen {
			b.DropFor(i, ReasonTooShort)
			continue
		}
		*(*[6]byte)(f) = mac
		b.Forward(i, h.Dest)
	}
}
