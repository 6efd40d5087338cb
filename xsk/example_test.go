package xsk_test

import (
	"fmt"
	"log"

	"github.com/xdpeng/xdpeng/xsk"
)

// A receive loop that drops what it gets, as xdpsock -r does, run against
// the in-memory kernel: the same loop runs on a socket bound to a device
// (NewUmem, NewSocket), where the kernel delivers the frames.
func Example() {
	u, err := xsk.NewMemUmem(xsk.UmemConfig{FrameSize: 2048, NumFrames: 256})
	if err != nil {
		log.Fatal(err)
	}
	defer u.Close()
	s, err := xsk.NewMemSocket(u, xsk.SocketConfig{FillSize: 128, CompletionSize: 128, RxSize: 128, NumFrames: 256})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	k := s.Kernel()
	payload := make([]byte, 64)
	var frames, bytes uint64
	for round := 0; round < 10; round++ {
		k.Receive(100, uint32(len(payload)), payload) // the kernel's side: 100 frames arrive
		idx, got := s.Rx.Peek(64)
		for got > 0 {
			for i := uint32(0); i < got; i++ {
				d := s.Rx.Desc(idx + i)
				bytes += uint64(len(u.Frame(d.Addr, d.Len)))
				s.Frames.Push(u.FrameBase(d.Addr)) // dropped: the frame is free again
			}
			frames += uint64(got)
			s.Rx.Release(got)
			s.Refill() // free frames back on the fill ring, for the kernel
			idx, got = s.Rx.Peek(64)
		}
	}
	st, _ := s.Statistics()
	c, err := s.Audit()
	fmt.Printf("received %d frames, %d bytes; the kernel dropped %d (fill ring empty %d); every frame in one place: %v\n",
		frames, bytes, st.RxDropped, st.RxFillRingEmptyDescs, err == nil && c.Total == 256)
	// Output:
	// received 1000 frames, 64000 bytes; the kernel dropped 0 (fill ring empty 0); every frame in one place: true
}
