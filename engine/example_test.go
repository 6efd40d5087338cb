package engine_test

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/packet"
)

// udpFrame builds a 64-byte Ethernet/IPv4/UDP frame to dstPort with a TTL.
func udpFrame(dstPort uint16, ttl uint8) []byte {
	f := make([]byte, 64)
	packet.BuildUDP(f, packet.UDPConfig{
		SrcMAC: net.HardwareAddr{0x02, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{0x02, 0, 0, 0, 0, 2},
		SrcIP: netip.MustParseAddr("198.18.0.1"), DstIP: netip.MustParseAddr("198.18.0.2"),
		SrcPort: 1234, DstPort: dstPort, Size: len(f),
	})
	f[14+8] = ttl
	binary.BigEndian.PutUint16(f[14+10:], 0)
	binary.BigEndian.PutUint16(f[14+10:], packet.Checksum(f[14:34]))
	return f
}

// dnsCounter counts the IPv4 UDP frames to port 53 of its queue and drops
// every frame. An engine makes one handler per queue, so its state needs
// no lock; whatever another goroutine reads while the engine runs would
// have to be atomic.
type dnsCounter struct{ dns, other int }

func (c *dnsCounter) Handle(b *engine.Batch) {
	for i := 0; i < b.Len(); i++ {
		f := b.Frame(i)
		// Ethernet (14) + IPv4 without options (20) + UDP ports (4).
		if len(f) >= 38 && binary.BigEndian.Uint16(f[12:]) == 0x0800 && f[14] == 0x45 &&
			f[23] == 17 && binary.BigEndian.Uint16(f[36:]) == 53 {
			c.dns++
		} else {
			c.other++
		}
		// No verdict: the frame is dropped, its buffer back to the kernel.
	}
}

// A handler of your own: count, then drop. Simulate runs it on in-memory
// rings, through the same worker code as an Engine, so a unit test needs
// neither root nor a device. In an Engine, Config.Handler makes one per
// queue: cfg.Handler = func(int) engine.Handler { return new(dnsCounter) }.
func Example_counter() {
	c := new(dnsCounter)
	res, err := engine.Simulate(c, [][]byte{udpFrame(53, 64), udpFrame(9, 64), udpFrame(53, 64)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("dns %d, other %d\n", c.dns, c.other)
	fmt.Printf("received %d, dropped %d, sent %d\n", res.Stats.RxPackets, res.Stats.Dropped, len(res.Sent()))
	// Output:
	// dns 2, other 1
	// received 3, dropped 3, sent 0
}

// ttlRouter decrements the IPv4 TTL of each frame, patches the header
// checksum for the one changed word (RFC 1624) instead of summing the
// header again, swaps the MAC addresses and sends the frame back out of
// its queue. Frames that are not IPv4, or whose TTL runs out, are dropped.
type ttlRouter struct{}

func (ttlRouter) Handle(b *engine.Batch) {
	for i := 0; i < b.Len(); i++ {
		f := b.Frame(i) // the frame in place in the UMEM: writes are sent
		if len(f) < 34 || binary.BigEndian.Uint16(f[12:]) != 0x0800 || f[14]>>4 != 4 {
			continue
		}
		ip := f[14:]
		if ip[8] <= 1 {
			continue // a router would send ICMP time exceeded
		}
		// TTL and protocol share a 16-bit word of the checksummed header.
		old := binary.BigEndian.Uint16(ip[8:])
		ip[8]--
		neu := binary.BigEndian.Uint16(ip[8:])
		sum := uint32(^binary.BigEndian.Uint16(ip[10:])) + uint32(^old) + uint32(neu)
		sum = (sum & 0xffff) + sum>>16
		sum = (sum & 0xffff) + sum>>16
		binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
		// Back where it came from: swap destination and source MAC.
		var mac [6]byte
		copy(mac[:], f[0:6])
		copy(f[0:6], f[6:12])
		copy(f[6:12], mac[:])
		b.Transmit(i)
	}
}

// A forwarder that rewrites a header in place and transmits the frame
// back out of the queue it arrived on. Simulate reports what was sent, byte
// for byte.
func Example_forwarder() {
	res, err := engine.Simulate(ttlRouter{}, [][]byte{udpFrame(9, 64), udpFrame(9, 1), udpFrame(9, 2)})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, f := range res.Frames {
		if !f.Sent {
			fmt.Printf("frame %d: dropped\n", i)
			continue
		}
		ip := f.Data[14:34]
		fmt.Printf("frame %d: sent to %x, TTL %d, header checksum ok: %v\n", i, f.Data[0:6], ip[8], packet.Checksum(ip) == 0)
	}
	fmt.Printf("tx %d, dropped %d\n", res.Stats.TxPackets, res.Stats.Dropped)
	// Output:
	// frame 0: sent to 020000000001, TTL 63, header checksum ok: true
	// frame 1: dropped
	// frame 2: sent to 020000000001, TTL 1, header checksum ok: true
	// tx 2, dropped 1
}

// Counting by protocol and port with the built-in CountHandler, the
// handler of `xdpeng count`. In an Engine, a CountGroup makes one per
// queue and sums them: cfg.Handler = group.Handler, then group.Stats().
func ExampleCountHandler() {
	h := engine.NewCountHandler()
	if _, err := engine.Simulate(h, [][]byte{udpFrame(53, 64), udpFrame(53, 64), udpFrame(9, 64)}); err != nil {
		fmt.Println(err)
		return
	}
	s := h.Stats()
	fmt.Println("frames:", s.Frames)
	for _, e := range engine.Top(s.ByProtocol, 0) {
		fmt.Printf("%s: %d\n", e.Key, e.Count)
	}
	for _, e := range engine.Top(s.ByPort, 0) {
		fmt.Printf("%s: %d\n", e.Key, e.Count)
	}
	// Output:
	// frames: 3
	// udp: 3
	// udp/53: 2
	// udp/9: 1
}
