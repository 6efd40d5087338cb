package bpf

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"
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
// of a veth, in the steering program's XSKMAP, attaches the program to that
// veth and sends it frames from its peer (AF_PACKET). With a UDP port filter, exactly the UDP frames to
// that port, IPv4 and IPv6, must land in the socket; frames to the port
// with its bytes swapped (what a filter comparing in the wrong byte order
// would take), TCP to the port, UDP elsewhere and IPv4 fragments after the
// first (whose bytes where a UDP header would be say the port) go to the
// stack. Without a filter, everything lands in the socket.
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
		frag  bool // an IPv4 fragment after the first
		count uint32
	}
	// Different counts per kind, so that frames counted under the wrong one
	// show.
	kinds := []kind{
		{"IPv4 UDP to the port", v4, port, false, false, 300},
		{"IPv4 UDP to the swapped port", v4, swapped, false, false, 200},
		{"IPv6 UDP to the port", v6, port, false, false, 150},
		{"IPv6 UDP to the swapped port", v6, swapped, false, false, 100},
		{"IPv4 TCP to the port", v4, port, true, false, 50},
		{"IPv4 fragment after the first", v4, port, false, true, 25},
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
				if filter == 0 || (!k.tcp && !k.frag && k.port == filter) {
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
				xl, err := link.AttachXDP(link.XDPOptions{Program: x.Program, Interface: l.DUTIndex, Flags: link.XDPDriverMode})
				if err != nil {
					return err
				}
				defer xl.Close()
				var frames [][]byte
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
					if k.frag {
						f[14+6], f[14+7] = 0x00, 0xb9 // fragment offset 185 (1480 bytes), no more fragments
					}
					for range k.count {
						frames = append(frames, f)
					}
				}
				// Real traffic: each frame sent into the generator's end
				// arrives on queue 0 of the DUT's, where the program runs.
				if err := bed.InGen(func() error { return sendFrames(l.GenIndex, frames) }); err != nil {
					return err
				}
				for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
					st, err := x.Stats()
					if err != nil {
						return err
					}
					var seen uint64
					for _, q := range st {
						seen += q.Redirected + q.Passed
					}
					if seen >= toSocket+toStack {
						break
					}
				}
				idx, n := s.Rx.Peek(s.Rx.Size())
				var sum packet.Summary
				for i := uint32(0); i < n; i++ {
					d := s.Rx.Desc(idx + i)
					if !packet.Parse(u.Frame(d.Addr, d.Len), &sum) {
						return fmt.Errorf("the socket got a frame Parse does not take: % x", u.Frame(d.Addr, d.Len))
					}
					name := "unknown"
					for _, k := range kinds {
						if k.frag && sum.Fragment || !k.frag && !sum.Fragment && sum.DstPort == k.port && (sum.L3 == 6) == k.cfg.IPv6() && (sum.Proto == packet.ProtoTCP) == k.tcp {
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

// sendFrames sends each frame out of the device ifindex of the calling
// thread's namespace with an AF_PACKET socket, again while the device
// refuses it (its peer's ring is full).
func sendFrames(ifindex int, frames [][]byte) error {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("AF_PACKET socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifindex}); err != nil {
		return fmt.Errorf("bind AF_PACKET socket: %w", err)
	}
	for i := 0; i < len(frames); {
		err := unix.Send(fd, frames[i], 0)
		switch {
		case err == nil:
			i++
		case errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.EAGAIN):
			time.Sleep(time.Millisecond)
		default:
			return fmt.Errorf("send frame %d: %w", i, err)
		}
	}
	return nil
}
