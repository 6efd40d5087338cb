//go:build linux

package xsk_test

import (
	"context"
	"log"
	"net"
	"time"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/xsk"
)

// A socket on queue 0 of eth0, put in the XSKMAP of the steering program
// (engine.NewSteering; or a map of one's own), and a loop that waits in
// poll only when the kernel asks for it (need_wakeup), until ctx ends.
func ExampleNewSocket() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	dev, err := net.InterfaceByName("eth0")
	if err != nil {
		log.Fatal(err)
	}
	steer, err := engine.NewSteering(engine.SteeringConfig{Interface: dev.Name})
	if err != nil {
		log.Fatal(err)
	}
	defer steer.Close()
	u, err := xsk.NewUmem(xsk.UmemConfig{FrameSize: 2048, NumFrames: 4096})
	if err != nil {
		log.Fatal(err)
	}
	defer u.Close()
	s, err := xsk.NewSocket(u, xsk.SocketConfig{Ifindex: dev.Index, Queue: 0,
		FillSize: 2048, CompletionSize: 2048, RxSize: 2048, NumFrames: 4096, NeedWakeup: true})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := steer.XSKMap().Put(uint32(0), uint32(s.FD())); err != nil {
		log.Fatal(err)
	}
	for ctx.Err() == nil {
		idx, got := s.Rx.Peek(64)
		if got == 0 {
			if s.Fill.NeedWakeup() {
				s.Poll(100, false) // the kernel wants a system call to go on
			}
			continue
		}
		for i := uint32(0); i < got; i++ {
			d := s.Rx.Desc(idx + i)
			_ = u.Frame(d.Addr, d.Len) // the frame, in place
			s.Frames.Push(u.FrameBase(d.Addr))
		}
		s.Rx.Release(got)
		s.Refill()
	}
}
