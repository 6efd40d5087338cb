package bpf_test

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/xsk"
)

// TestXskRedirectSteers puts a real AF_XDP socket, bound to queue 0 of a
// veth, in the steering program's XSKMAP, attaches the program to that veth
// and sends it frames of nine kinds from its peer (AF_PACKET), each kind
// its own length. For each match (none, a UDP port, a port of UDP or TCP,
// a protocol, an EtherType, prefixes of either family, and combinations)
// exactly the kinds listed must land in the socket, the rest go to the
// stack: among them frames to the port with its bytes swapped (what a
// filter comparing in the wrong byte order would take), and IPv4
// fragments after the first, whose bytes where a UDP header would be say
// the port.
func TestXskRedirectSteers(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	const port, swapped = 0x1234, 0x3412
	v4 := packet.UDPConfig{
		SrcMAC: l.GenMAC, DstMAC: l.DUTMAC,
		SrcIP: netip.MustParseAddr(l.GenIP.String()), DstIP: netip.MustParseAddr(l.DUTIP.String()),
		SrcPort: 1234, DstPort: port, Size: 64,
	}
	v6 := v4
	v6.SrcIP, v6.DstIP, v6.Size = netip.MustParseAddr("2001:2::1"), netip.MustParseAddr("2001:2::2"), 82
	with := func(c packet.UDPConfig, f func(*packet.UDPConfig)) packet.UDPConfig { f(&c); return c }
	type kind struct {
		cfg   packet.UDPConfig // its Size tells the kind in the socket
		build string           // udp, tcp, frag (an IPv4 UDP fragment after the first), icmp, arp
		count uint32
	}
	kinds := map[string]kind{
		"v4udp":      {v4, "udp", 60},
		"v4swapped":  {with(v4, func(c *packet.UDPConfig) { c.DstPort, c.Size = swapped, 66 }), "udp", 50},
		"v6udp":      {v6, "udp", 40},
		"v4tcp":      {with(v4, func(c *packet.UDPConfig) { c.Size = 68 }), "tcp", 35},
		"v4frag":     {with(v4, func(c *packet.UDPConfig) { c.Size = 70 }), "frag", 30},
		"v4otherdst": {with(v4, func(c *packet.UDPConfig) { c.DstIP, c.Size = netip.MustParseAddr("198.19.0.9"), 72 }), "udp", 25},
		"v6tcp":      {with(v6, func(c *packet.UDPConfig) { c.Size = 86 }), "tcp", 20},
		"arp":        {with(v4, func(c *packet.UDPConfig) { c.Size = 60 }), "arp", 15},
		"v4icmp":     {with(v4, func(c *packet.UDPConfig) { c.Size = 74 }), "icmp", 10},
	}
	all := []string{"arp", "v4frag", "v4icmp", "v4otherdst", "v4swapped", "v4tcp", "v4udp", "v6tcp", "v6udp"}
	v4net, v6net := netip.MustParsePrefix(l.DUTIP.String()+"/24").Masked(), netip.MustParsePrefix("2001:2::/64")
	for _, c := range []struct {
		name  string
		match bpf.XskMatch
		want  []string
	}{
		{"none", bpf.XskMatch{}, all},
		{"udp port", bpf.XskMatch{IPProto: unix.IPPROTO_UDP, DstPort: port}, []string{"v4otherdst", "v4udp", "v6udp"}},
		{"port", bpf.XskMatch{DstPort: port}, []string{"v4otherdst", "v4tcp", "v4udp", "v6tcp", "v6udp"}},
		{"tcp", bpf.XskMatch{IPProto: unix.IPPROTO_TCP}, []string{"v4tcp", "v6tcp"}},
		{"arp", bpf.XskMatch{EtherType: unix.ETH_P_ARP}, []string{"arp"}},
		{"v4 prefix", bpf.XskMatch{Dst: v4net}, []string{"v4frag", "v4icmp", "v4swapped", "v4tcp", "v4udp"}},
		{"v6 prefix udp", bpf.XskMatch{IPProto: unix.IPPROTO_UDP, Dst: v6net}, []string{"v6udp"}},
		{"ipv4 icmp", bpf.XskMatch{EtherType: unix.ETH_P_IP, IPProto: unix.IPPROTO_ICMP}, []string{"v4icmp"}},
		{"v4 prefix port", bpf.XskMatch{DstPort: port, Dst: v4net}, []string{"v4tcp", "v4udp"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			x, err := bpf.NewXskRedirect(bpf.XskOptions{Counters: true, Match: c.match})
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			want := map[string]uint32{} // what the socket must get, by kind
			var toSocket, toStack uint64
			for name, k := range kinds {
				if slices.Contains(c.want, name) {
					want[name] = k.count
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
				bySize := map[uint32]string{}
				for name, k := range kinds {
					f, err := buildKind(k.cfg, k.build)
					if err != nil {
						return fmt.Errorf("%s: %w", name, err)
					}
					bySize[uint32(len(f))] = name
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
				for i := uint32(0); i < n; i++ {
					d := s.Rx.Desc(idx + i)
					name, ok := bySize[d.Len]
					if !ok {
						name = fmt.Sprintf("unknown (%d bytes)", d.Len)
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

// buildKind builds a frame of c.Size bytes: UDP, TCP, an IPv4 UDP fragment
// after the first, IPv4 ICMP (a UDP frame with the ICMP protocol number) or
// an ARP request.
func buildKind(c packet.UDPConfig, kind string) ([]byte, error) {
	f := make([]byte, c.Size)
	var err error
	switch kind {
	case "tcp":
		_, err = packet.BuildTCP(f, c, packet.TCPSyn)
	case "arp":
		copy(f, c.DstMAC)
		copy(f[6:], c.SrcMAC)
		f[12], f[13] = 0x08, 0x06
		copy(f[14:], []byte{0, 1, 8, 0, 6, 4, 0, 1}) // Ethernet, IPv4, request
		copy(f[22:], c.SrcMAC)
		copy(f[28:], c.SrcIP.AsSlice())
		copy(f[38:], c.DstIP.AsSlice())
	default:
		_, err = packet.BuildUDP(f, c)
	}
	switch kind {
	case "frag":
		f[14+6], f[14+7] = 0x00, 0xb9 // fragment offset 185 (1480 bytes), no more fragments
	case "icmp":
		f[14+9] = unix.IPPROTO_ICMP
	}
	return f, err
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
