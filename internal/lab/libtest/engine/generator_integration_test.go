//go:build linux

package engine_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/hook"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// wireCapture is an AF_PACKET socket on one interface of a namespace that keeps
// the frames arriving from a given source MAC.
type wireCapture struct {
	fd     int
	src    net.HardwareAddr
	frames [][]byte
}

// listenWire opens a capture on dev inside the namespace ns (the socket stays
// in that namespace; it can be read from anywhere).
func listenWire(t *testing.T, ns, dev string, ifindex int, src net.HardwareAddr) *wireCapture {
	t.Helper()
	c := &wireCapture{fd: -1, src: src}
	err := testbed.Do(ns, func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(wireHtons(unix.ETH_P_ALL)))
		if err != nil {
			return err
		}
		c.fd = fd
		// Big enough for every frame of a test, so that none is lost here.
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 64<<20); err != nil {
			return err
		}
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 200_000}); err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: wireHtons(unix.ETH_P_ALL), Ifindex: ifindex})
	})
	if err != nil {
		if c.fd >= 0 {
			unix.Close(c.fd)
		}
		t.Fatalf("capture on %s: %v", dev, err)
	}
	t.Cleanup(func() { unix.Close(c.fd) })
	return c
}

func wireHtons(v uint16) uint16 { return v<<8 | v>>8 }

// collect reads until want frames came from the source or nothing came for
// a while.
func (c *wireCapture) collect(t *testing.T, want int) {
	t.Helper()
	buf := make([]byte, 4096)
	idle := 0
	for len(c.frames) < want && idle < 5 {
		n, from, err := unix.Recvfrom(c.fd, buf, 0)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			idle++
			continue
		}
		if err != nil {
			t.Fatalf("read capture: %v", err)
		}
		idle = 0
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		if n >= 12 && bytes.Equal(buf[6:12], c.src) {
			c.frames = append(c.frames, append([]byte(nil), buf[:n]...))
		}
	}
	st, err := unix.GetsockoptTpacketStats(c.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		t.Fatalf("read the capture socket's statistics: %v", err)
	}
	if st.Drops != 0 {
		t.Fatalf("the capture socket dropped %d frames", st.Drops)
	}
}

// runTxOnly runs a generator on the DUT end of link 0 until it has sent its
// count.
func runTxOnly(t *testing.T, bed *testbed.Bed, tc engine.GeneratorConfig) engine.Snapshot {
	t.Helper()
	cfg := engine.DefaultGeneratorConfig()
	cfg.Interface = bed.Links[0].DUT
	cfg.Frames, cfg.Count, cfg.Rate = tc.Frames, tc.Count, tc.Rate
	var eng *engine.Generator
	if err := bed.InDUT(func() (err error) { eng, err = engine.NewGenerator(cfg); return err }); err != nil {
		t.Fatalf("engine.NewGenerator: %v", err)
	}
	defer eng.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := eng.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the generator did not end by itself")
	}
	s, err := eng.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func linkUDP(l testbed.Link, size int) packet.UDPConfig {
	return packet.UDPConfig{
		SrcMAC: l.DUTMAC, DstMAC: l.GenMAC,
		SrcIP: netip.MustParseAddr(l.DUTIP.String()), DstIP: netip.MustParseAddr(l.GenIP.String()),
		SrcPort: 1234, DstPort: 9, Size: size,
	}
}

// TestTxOnlyFramesOnTheWire checks every frame at the receiver: the count,
// the size, a valid UDP/IPv4 frame, and the ports cycled.
func TestTxOnlyFramesOnTheWire(t *testing.T) {
	bed := testbedtest.New(t, 2, 1)
	l := bed.Links[0]
	const count, size, ports = 20_000, 128, 4
	frames, err := packet.UDPVariants(linkUDP(l, size), ports)
	if err != nil {
		t.Fatal(err)
	}
	c := listenWire(t, bed.GenNS, l.Gen, l.GenIndex, l.DUTMAC)
	s := runTxOnly(t, bed, engine.GeneratorConfig{Frames: frames, Count: count, Rate: 200_000})
	tot := s.Total()
	if tot.TxPackets != count || tot.TxBytes != count*size {
		t.Fatalf("engine counted %d packets, %d bytes; want %d, %d", tot.TxPackets, tot.TxBytes, count, count*size)
	}
	for _, q := range s.Queues {
		if q.TxPackets != count/2 {
			t.Errorf("queue %d sent %d, want %d", q.Queue, q.TxPackets, count/2)
		}
	}
	c.collect(t, count+1)
	if len(c.frames) != count {
		t.Fatalf("received %d frames, want %d", len(c.frames), count)
	}
	byPort := map[uint16]int{}
	var sum packet.Summary
	for i, f := range c.frames {
		if len(f) != size || !packet.Parse(f, &sum) || sum.L3 != 4 || sum.Proto != packet.ProtoUDP {
			t.Fatalf("frame %d: %d bytes, %+v", i, len(f), sum)
		}
		if packet.Checksum(f[14:34]) != 0 {
			t.Fatalf("frame %d: bad IPv4 header checksum", i)
		}
		byPort[sum.DstPort]++
	}
	if len(byPort) != ports {
		t.Fatalf("destination ports %v, want %d of them", byPort, ports)
	}
	for p, n := range byPort {
		if n != count/ports {
			t.Errorf("port %d: %d frames, want %d", p, n, count/ports)
		}
	}
}

// TestTxOnlyExactAtFullSpeed counts at the receiver with an XDP program:
// as fast as the generator goes, every frame arrives.
func TestTxOnlyExactAtFullSpeed(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	const count, size = 300_000, 64
	k, err := bpf.LoadKern(bpf.Drop, bpf.KernOptions{Counters: true})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	err = bed.InGen(func() error {
		lnk, err := hook.AttachXDP(k.Program, l.GenIndex, hook.Native, netdev.ReplaceNone)
		if err != nil {
			return err
		}
		t.Cleanup(func() { lnk.Close() })
		return nil
	})
	if err != nil {
		t.Fatalf("attach counter to %s: %v", l.Gen, err)
	}
	frames, err := packet.UDPVariants(linkUDP(l, size), 1)
	if err != nil {
		t.Fatal(err)
	}
	s := runTxOnly(t, bed, engine.GeneratorConfig{Frames: frames, Count: count})
	tot := s.Total()
	st, err := k.ReadStats()
	if err != nil {
		t.Fatal(err)
	}
	pk, by := st.Total()
	t.Logf("%d frames, xdp stats %+v, wakeups %d", tot.TxPackets, tot.XDP, tot.TxWakeups)
	if tot.TxPackets != count || pk != count || by != count*size {
		t.Fatalf("sent %d, received %d packets %d bytes; want %d, %d bytes", tot.TxPackets, pk, by, count, count*size)
	}
}

// TestGeneratorBusyPollNAPI: a generator that busy-polls on veth, which
// links no NAPI to its queues, changes no NAPI, says why, and tells its
// guard of nothing.
func TestGeneratorBusyPollNAPI(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	cfg := engine.DefaultGeneratorConfig()
	cfg.Interface, cfg.Wait, cfg.Count = l.DUT, engine.WaitBusyPoll, 1
	if cfg.BusyPollNAPI == (engine.NAPIConfig{}) {
		t.Fatal("DefaultGeneratorConfig asks for no NAPI settings")
	}
	frames, err := packet.UDPVariants(linkUDP(l, 64), 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Frames = frames
	guard := &countingGuard{}
	cfg.NAPIGuard = guard
	err = bed.InDUT(func() error {
		g, err := engine.NewGenerator(cfg)
		if err != nil {
			return err
		}
		defer g.Close()
		if changes, note := g.BusyPollNAPI(); len(changes) != 0 || !strings.Contains(note, "links no NAPI to queue 0") {
			t.Errorf("BusyPollNAPI on veth: %+v, %q: want no change, and the reason", changes, note)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if guard.changing != 0 {
		t.Errorf("the guard heard of %d changes, want none", guard.changing)
	}
}

// countingGuard counts the changes it hears of.
type countingGuard struct{ changing int }

func (g *countingGuard) Changing(engine.NAPIChange) error { g.changing++; return nil }
func (g *countingGuard) Restored(engine.NAPIChange)       {}
