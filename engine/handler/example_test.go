package handler_test

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/handler"
	"github.com/xdpeng/xdpeng/engine/packet"
)

func udpFrame(dstPort uint16) []byte {
	f := make([]byte, 64)
	packet.BuildUDP(f, packet.UDPConfig{
		SrcMAC: net.HardwareAddr{0x02, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{0x02, 0, 0, 0, 0, 2},
		SrcIP: netip.MustParseAddr("198.18.0.1"), DstIP: netip.MustParseAddr("198.18.0.2"),
		SrcPort: 1234, DstPort: dstPort, Size: len(f),
	})
	return f
}

// Counting by protocol and port, the handler of `xdpeng count`. In an
// Engine, a CountGroup makes one Count per queue and sums them:
// cfg.Handler = group.Handler, then group.Stats().
func ExampleCount() {
	h := handler.NewCount()
	if _, err := engine.Simulate(h, [][]byte{udpFrame(53), udpFrame(53), udpFrame(9)}); err != nil {
		fmt.Println(err)
		return
	}
	s := h.Stats()
	fmt.Println("frames:", s.Frames)
	fmt.Println("UDP:", s.ByProtocol[packet.ProtoUDP])
	fmt.Println("udp/53:", s.ByPort[handler.PortKey{Proto: packet.ProtoUDP, Port: 53}])
	fmt.Println("udp/9:", s.ByPort[handler.PortKey{Proto: packet.ProtoUDP, Port: 9}])
	// Output:
	// frames: 3
	// UDP: 3
	// udp/53: 2
	// udp/9: 1
}

// Forwarding everything out of another device, `xdpeng fwd`: the engine's
// Config.Outputs names the device, Forward sends to its port.
func ExampleFwd() {
	h := &handler.Fwd{Dest: engine.ToOutput(0), DstMAC: net.HardwareAddr{0x02, 0, 0, 0, 1, 2}}
	res, err := engine.Sim{Outputs: 1}.Run(h, [][]byte{udpFrame(9), udpFrame(10)})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range res.SentOn(engine.ToOutput(0)) {
		fmt.Printf("to %x, %d bytes\n", f[0:6], len(f))
	}
	// Output:
	// to 020000000102, 64 bytes
	// to 020000000102, 64 bytes
}
