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
	var s packet.Summary
	packet.Parse(f, &s)
	for f[s.L3Off+8] > ttl {
		packet.DecTTL(f, &s)
	}
	return f
}

// dnsCounter counts the UDP frames to port 53 of its queue and drops every
// frame. An engine makes one handler per queue, so its state needs no lock;
// whatever another goroutine reads while the engine runs would have to be
// atomic.
type dnsCounter struct{ dns, other int }

func (c *dnsCounter) Handle(b *engine.Batch) {
	var s packet.Summary
	for i := 0; i < b.Len(); i++ {
		if packet.Parse(b.Frame(i), &s) && s.Proto == packet.ProtoUDP && s.DstPort == 53 {
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

// router sends UDP to port 53 out of one output and everything else out of
// another, as a router would: with the TTL decremented (frames whose TTL
// runs out are dropped) and the next hop's MAC as destination.
type router struct {
	dns, rest engine.Dest
	nextHop   net.HardwareAddr
}

func (r router) Handle(b *engine.Batch) {
	var s packet.Summary
	for i := 0; i < b.Len(); i++ {
		f := b.Frame(i) // the frame in place in the UMEM: writes are sent
		if !packet.Parse(f, &s) || !packet.DecTTL(f, &s) {
			continue // not IP, truncated, or TTL exceeded: dropped
		}
		packet.SetSrcMAC(f, net.HardwareAddr(f[0:6]))
		packet.SetDstMAC(f, r.nextHop)
		if s.Proto == packet.ProtoUDP && s.DstPort == 53 {
			b.Forward(i, r.dns)
		} else {
			b.Forward(i, r.rest)
		}
	}
}

// A forwarder between ports: an Engine with two Config.Outputs gives its
// handler ports ToOutput(0) and ToOutput(1); a simulation with two
// outputs checks it without devices, frame by frame and port by port.
func Example_router() {
	r := router{dns: engine.ToOutput(0), rest: engine.ToOutput(1), nextHop: net.HardwareAddr{0x02, 0, 0, 0, 0, 9}}
	res, err := engine.Sim{Outputs: 2}.Run(r, [][]byte{udpFrame(53, 64), udpFrame(9, 1), udpFrame(9, 2)})
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
		fmt.Printf("frame %d: out of %v to %x, TTL %d, checksum ok: %v\n", i, f.Dest, f.Data[0:6], ip[8], packet.Checksum(ip) == 0)
	}
	out0, out1 := engine.ToOutput(0), engine.ToOutput(1)
	fmt.Printf("%v: %d frames, %v: %d frames\n", out0, len(res.SentOn(out0)), out1, len(res.SentOn(out1)))
	// Output:
	// frame 0: out of out0 to 020000000009, TTL 63, checksum ok: true
	// frame 1: dropped
	// frame 2: out of out1 to 020000000009, TTL 1, checksum ok: true
	// out0: 1 frames, out1: 1 frames
}

// Pushing a header: AdjustHead grows the frame into the headroom the kernel
// leaves in front of it, and packet.PushVLAN moves the MAC addresses there
// and writes the tag behind them.
func ExampleBatch_AdjustHead() {
	tag := engine.HandlerFunc(func(b *engine.Batch) {
		for i := 0; i < b.Len(); i++ {
			if b.AdjustHead(i, -packet.VLANTagLen) && packet.PushVLAN(b.Frame(i), 100) {
				b.Transmit(i)
			}
		}
	})
	res, err := engine.Simulate(tag, [][]byte{udpFrame(9, 64)})
	if err != nil {
		fmt.Println(err)
		return
	}
	f := res.Frames[0].Data
	fmt.Printf("sent %v, %d bytes, EtherType %#04x, VLAN %d, then %#04x\n",
		res.Frames[0].Sent, len(f), binary.BigEndian.Uint16(f[12:]), binary.BigEndian.Uint16(f[14:])&0xfff, binary.BigEndian.Uint16(f[16:]))
	// Output:
	// sent true, 68 bytes, EtherType 0x8100, VLAN 100, then 0x0800
}
