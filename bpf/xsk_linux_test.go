package bpf

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/xsk"
)

// xdpMd is struct xdp_md, the context of an XDP program.
type xdpMd struct {
	Data, DataEnd, DataMeta      uint32
	IngressIfindex, RxQueueIndex uint32
	EgressIfindex                uint32
}

// TestXskRedirectSteersUDPPort puts a real AF_XDP socket, bound to queue 0
// of a veth, in the steering program's XSKMAP and runs the program on frames
// in live-frames mode as if they arrived on that queue, so that every
// redirect is carried out. With a UDP port filter, exactly the UDP frames to
// that port, IPv4 and IPv6, must land in the socket; frames to the port
// with its bytes swapped (what a filter comparing in the wrong byte order
// would take), TCP to the port and UDP elsewhere go to the stack. Without
// a filter, everything lands in the socket.
func TestXskRedirectSteersUDPPort(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	const port, swapped = 0x1234, 0x3412
	v4 := packet.UDPConfig{
		SrcMAC: l.GenMAC, DstMAC: l.DUTMAC,
		SrcIP: netip.MustParseAddr(l.GenIP.String()), DstIP: netip.MustParseAddr(l.DUTIP.String()),
		SrcPort: 1234, Size: 64,
	}
	v6 := v4
	v6.SrcIP, v6.DstIP, v6.Size = netip.MustParseAddr("2001:2::1"), netip.MustParseAddr("2001:2::2"), 80
	type kind struct {
		name  string
		cfg   packet.UDPConfig
		port  uint16
		tcp   bool
		count uint32
	}
	// Different counts per kind, so that frames counted under the wrong one
	// show.
	kinds := []kind{
		{"IPv4 UDP to the port", v4, port, false, 300},
		{"IPv4 UDP to the swapped port", v4, swapped, false, 200},
		{"IPv6 UDP to the port", v6, port, false, 150},
		{"IPv6 UDP to the swapped port", v6, swapped, false, 100},
		{"IPv4 TCP to the port", v4, port, true, 50},
	}
	for _, filter := range []uint16{port, 0} {
		t.Run(fmt.Sprintf("filter=%d", filter), func(t *testing.T) {
			x, err := NewXskRedirect(XskOptions{Counters: true, UDPPort: filter})
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			want := map[string]uint32{} // what the socket must get, by kind
			var toSocket, toStack uint64
			for _, k := range kinds {
				if filter == 0 || (!k.tcp && k.port == filter) {
					want[k.name] = k.count
					toSocket += uint64(k.count)
				} else {
					toStack += uint64(k.count)
				}
			}
			got := map[string]uint32{}
			var xdpStats xsk.Statistics
			// The socket, the device index in the context and the
			// redirect all belong to the DUT's namespace.
			err = bed.InDUT(func() error {
				u, err := xsk.NewUmem(xsk.UmemConfig{FrameSize: 2048, NumFrames: 2048})
				if err != nil {
					return err
				}
				defer u.Close()
				s, err := xsk.NewSocket(u, xsk.SocketConfig{Ifindex: l.DUTIndex, Queue: 0, FillSize: 1024, CompletionSize: 64, RxSize: 1024, Mode: xsk.Copy})
				if err != nil {
					return err
				}
				defer s.Close()
				if err := x.SetSocket(0, s.FD()); err != nil {
					return err
				}
				for _, k := range kinds {
					c := k.cfg
					c.DstPort = k.port
					f := make([]byte, c.Size)
					build := packet.BuildUDP
					if k.tcp {
						build = func(b []byte, c packet.UDPConfig) (int, error) { return packet.BuildTCP(b, c, packet.TCPSyn) }
					}
					if _, err := build(f, c); err != nil {
						return err
					}
					// One frame a run: a signal (the Go runtime's
					// preemption) can end a run of many early with EINTR,
					// and the library then runs it again from the start,
					// sending the frames of the first try twice. A run of
					// one is not interrupted once its frame is sent.
					for range k.count {
						_, err := x.Program.Run(&ebpf.RunOptions{
							Data:    f,
							Context: xdpMd{DataEnd: uint32(len(f)), IngressIfindex: uint32(l.DUTIndex)},
							Repeat:  1,
							Flags:   unix.BPF_F_TEST_XDP_LIVE_FRAMES,
						})
						if err != nil {
							return fmt.Errorf("run the program on a frame (%s): %w", k.name, err)
						}
					}
				}
				// Live frames are flushed to the socket at the end of each
				// batch, inside the run: what arrived is in the rx ring.
				idx, n := s.Rx.Peek(s.Rx.Size())
				var sum packet.Summary
				for i := uint32(0); i < n; i++ {
					d := s.Rx.Desc(idx + i)
					if !packet.Parse(u.Frame(d.Addr, d.Len), &sum) {
						return fmt.Errorf("the socket got a frame Parse does not take: % x", u.Frame(d.Addr, d.Len))
					}
					name := "unknown"
					for _, k := range kinds {
						if sum.DstPort == k.port && (sum.L3 == 6) == k.cfg.IPv6() && (sum.Proto == packet.ProtoTCP) == k.tcp {
							name = k.name
						}
					}
					got[name]++
				}
				s.Rx.Release(n)
				xdpStats, err = s.Statistics()
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("the socket got %v, want %v", got, want)
			}
			if xdpStats.Drops() != 0 {
				t.Errorf("the socket dropped frames: %+v", xdpStats)
			}
			st, err := x.Stats()
			if err != nil {
				t.Fatal(err)
			}
			var redirected, passed uint64
			for _, q := range st {
				if q.Queue != 0 {
					t.Errorf("frames counted on queue %d: %+v", q.Queue, st)
				}
				redirected += q.Redirected
				passed += q.Passed
			}
			if redirected != toSocket || passed != toStack {
				t.Errorf("the program counted %d redirected, %d passed; want %d and %d", redirected, passed, toSocket, toStack)
			}
		})
	}
}
