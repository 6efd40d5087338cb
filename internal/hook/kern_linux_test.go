package hook

// Integration tests of the in-kernel paths (bpf/kern.c) as attached by this
// package: traffic comes from the live-frames generator (bpf/gen.c) sending
// into one end of a veth pair; the program under test runs on the other.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// send makes the generator send frame n times out of ifindex, from CPU cpu.
// veth puts frames sent from CPU c on the peer's rx queue c % queues, and
// runs the peer's NAPI on that CPU, so the CPU chooses queue and counter.
func (n *testNS) send(t *testing.T, ifindex int, frame []byte, count uint32, cpu int) {
	t.Helper()
	n.mustDo(t, func() error {
		var old unix.CPUSet
		if err := unix.SchedGetaffinity(0, &old); err != nil {
			return err
		}
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("pin to CPU %d: %w", cpu, err)
		}
		defer unix.SchedSetaffinity(0, &old)

		spec, err := bpf.LoadGen()
		if err != nil {
			return err
		}
		if err := spec.Variables["ifindex"].Set(uint32(ifindex)); err != nil {
			return err
		}
		var objs bpf.GenObjects
		if err := spec.LoadAndAssign(&objs, nil); err != nil {
			return err
		}
		defer objs.Close()
		_, err = objs.XdpGen.Run(&ebpf.RunOptions{
			Data:      frame,
			Repeat:    count,
			Flags:     unix.BPF_F_TEST_XDP_LIVE_FRAMES,
			BatchSize: 64,
		})
		if err != nil {
			return fmt.Errorf("generate %d frames: %w", count, err)
		}
		return nil
	})
}

// attachKern loads p with counters and attaches it (native XDP, or tc
// ingress) to ifindex in n until the test ends.
func (n *testNS) attachKern(t *testing.T, p bpf.KernProgram, ifindex int) *bpf.KernObjects {
	t.Helper()
	k, err := bpf.LoadKern(p, bpf.KernOptions{Counters: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	n.mustDo(t, func() error {
		var c interface{ Close() error }
		var err error
		if p.IsXDP() {
			c, err = AttachXDP(k.Program, ifindex, Native, false)
		} else {
			c, err = AttachTCIngress(k.Program, ifindex)
		}
		if err == nil {
			t.Cleanup(func() { closeIn(t, n, c) })
		}
		return err
	})
	return k
}

// waitPackets polls k's counters until they total want (NAPI may still be
// draining the ring when the generator returns) and returns them.
func waitPackets(t *testing.T, k *bpf.KernObjects, want uint64) bpf.QueueCPUStats {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		s, err := k.ReadStats()
		if err != nil {
			t.Fatal(err)
		}
		got, _ := s.Total()
		if got == want || time.Now().After(deadline) {
			if got != want {
				t.Fatalf("%s counted %d packets, want %d (per queue/CPU: %+v)", k.Kind, got, want, s)
			}
			return s
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestKernDropCountsPerQueue(t *testing.T) {
	privtest.Root(t)
	ns := newNS(t)
	gen, dut := ns.veth(t, 2)
	k := ns.attachKern(t, bpf.Drop, dut.Index)
	frame := udpFrame(t, gen.MAC, dut.MAC, 64)

	const n0, n1 = 100_000, 50_000
	ns.send(t, gen.Index, frame, n0, 0)
	ns.send(t, gen.Index, frame, n1, 1)
	s := waitPackets(t, k, n0+n1)

	want := bpf.QueueCPUStats{
		{Queue: 0, CPU: -1, Packets: n0, Bytes: n0 * 64},
		{Queue: 1, CPU: -1, Packets: n1, Bytes: n1 * 64},
	}
	if got := s.ByQueue(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("per queue: got %+v, want %+v", got, want)
	}
	if got := s.ByCPU(); len(got) != 2 || got[0].Packets != n0 || got[1].Packets != n1 {
		t.Errorf("per CPU: got %+v, want %d on CPU 0 and %d on CPU 1", got, n0, n1)
	}
}

func TestKernCountProto(t *testing.T) {
	privtest.Root(t)
	ns := newNS(t)
	gen, dut := ns.veth(t, 1)
	k := ns.attachKern(t, bpf.DropCountProto, dut.Index)
	ns.send(t, gen.Index, udpFrame(t, gen.MAC, dut.MAC, 64), 1000, 0)
	arp := make([]byte, 60)
	copy(arp, udpFrame(t, gen.MAC, dut.MAC, 64)[:12])
	binary.BigEndian.PutUint16(arp[12:], 0x0806)
	ns.send(t, gen.Index, arp, 10, 0)
	waitPackets(t, k, 1010)
	got, err := k.ReadProtoStats()
	if err != nil {
		t.Fatal(err)
	}
	want := []bpf.ProtoStat{{Proto: packet.ProtoUDP, Packets: 1000}, {Proto: bpf.ProtoNotIP, Packets: 10}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("per protocol: got %+v, want %+v", got, want)
	}
}

func TestKernTXSwapsMACs(t *testing.T) {
	privtest.Root(t)
	ns := newNS(t)
	gen, dut := ns.veth(t, 1)
	tx := ns.attachKern(t, bpf.TX, dut.Index)
	// Frames sent back arrive at gen only if it runs XDP; pass lets them
	// on to the stack, where a packet socket reads them.
	back := ns.attachKern(t, bpf.Pass, gen.Index)
	frame := udpFrame(t, gen.MAC, dut.MAC, 64)

	var fd int
	ns.mustDo(t, func() (err error) {
		fd, err = packetSocket(gen.Index)
		return err
	})
	defer unix.Close(fd)

	const n = 1000
	ns.send(t, gen.Index, frame, n, 0)
	waitPackets(t, tx, n)
	waitPackets(t, back, n)

	want := append([]byte(nil), frame...)
	packet.SwapMACs(want)
	got := 0
	buf := make([]byte, 2048)
	for got < n {
		m, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			t.Fatalf("read returned frames: got %d of %d: %v", got, n, err)
		}
		if m != len(frame) || !bytes.Equal(buf[12:m], frame[12:]) {
			continue // the stack's own traffic (IPv6 ND and such)
		}
		if !bytes.Equal(buf[:12], want[:12]) {
			t.Fatalf("returned frame has dst %s src %s, want dst %s src %s",
				net.HardwareAddr(buf[:6]), net.HardwareAddr(buf[6:12]), net.HardwareAddr(want[:6]), net.HardwareAddr(want[6:12]))
		}
		got++
	}
}

// packetSocket opens a packet socket on ifindex that sees every frame,
// with a receive timeout so a missing frame fails rather than hangs.
func packetSocket(ifindex int) (int, error) {
	proto := int(htons(unix.ETH_P_ALL))
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, proto)
	if err != nil {
		return -1, fmt.Errorf("packet socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: uint16(proto), Ifindex: ifindex}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("bind packet socket: %w", err)
	}
	tv := unix.Timeval{Sec: 2}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return -1, err
	}
	// A big receive buffer so no returned frame is lost before we read it.
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	return fd, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func TestKernRedirect(t *testing.T) {
	privtest.Root(t)
	ns := newNS(t)
	gen, in := ns.veth(t, 1)
	out, sink := ns.veth(t, 1)
	r := ns.attachKern(t, bpf.Redirect, in.Index)
	// Devmap entries name interfaces in the caller's namespace.
	ns.mustDo(t, func() error { return r.SetPorts(out.Index) })
	// Frames redirected out of `out` arrive at its peer, which must run XDP.
	d := ns.attachKern(t, bpf.Drop, sink.Index)

	const n = 20_000
	ns.send(t, gen.Index, udpFrame(t, gen.MAC, in.MAC, 64), n, 0)
	waitPackets(t, r, n)
	waitPackets(t, d, n)
}

func TestKernRedirectMulti(t *testing.T) {
	privtest.Root(t)
	ns := newNS(t)
	gen, in := ns.veth(t, 1)
	out1, sink1 := ns.veth(t, 1)
	out2, sink2 := ns.veth(t, 1)
	r := ns.attachKern(t, bpf.RedirectMulti, in.Index)
	ns.mustDo(t, func() error { return r.SetPorts(out1.Index, out2.Index) })
	d1 := ns.attachKern(t, bpf.Drop, sink1.Index)
	d2 := ns.attachKern(t, bpf.Drop, sink2.Index)

	const n = 10_000
	ns.send(t, gen.Index, udpFrame(t, gen.MAC, in.MAC, 64), n, 0)
	waitPackets(t, r, n)
	waitPackets(t, d1, n)
	waitPackets(t, d2, n)
}

func TestKernTCDrop(t *testing.T) {
	privtest.Root(t)
	ns := newNS(t)
	gen, dut := ns.veth(t, 1)
	// XDP_PASS turns the generator's frames into skbs for tc to see.
	pass := ns.attachKern(t, bpf.Pass, dut.Index)
	drop := ns.attachKern(t, bpf.TCDrop, dut.Index)

	const n = 10_000
	ns.send(t, gen.Index, udpFrame(t, gen.MAC, dut.MAC, 64), n, 0)
	waitPackets(t, pass, n)
	waitPackets(t, drop, n)
}
