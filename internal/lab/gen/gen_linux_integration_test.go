package gen

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/cpuset"
	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

// These tests build their own pair of throwaway network namespaces joined
// by a veth (gen0 on the generator side, dut0 on the receiver's), so the
// traffic never leaves them; closing the namespaces' last handles at the end
// of the test destroys both, veth included.

type vethPair struct {
	genNS, dutNS netns.NsHandle
	gen, dut     *netdev.Info
	method       Method // what config puts in its Config
}

// eachMethod runs fn as a subtest per method. A method whose kernel
// feature is refused here is "not supported here", with the kernel's
// answer: only the tests of that method.
func eachMethod(t *testing.T, methods []Method, fn func(t *testing.T, m Method)) {
	for _, m := range methods {
		t.Run(m.String(), func(t *testing.T) {
			privtest.Root(t)
			if _, err := ChooseMethod(m); err != nil {
				privtest.Unsupported(t, "%v", err)
			}
			fn(t, m)
		})
	}
}

func TestMain(m *testing.M) { os.Exit(privtest.Main(m)) }

// inNS runs fn on a thread in ns (netns.None(): the current one) and moves
// the thread back after. If that fails, the thread is left locked so that
// the runtime discards it with the goroutine.
func inNS(t *testing.T, ns netns.NsHandle, fn func() error) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		if ns.IsOpen() {
			if err := netns.Set(ns); err != nil {
				errc <- err
				return
			}
		}
		err = fn()
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

func newVethPair(t *testing.T, queues int) *vethPair {
	t.Helper()
	privtest.Root(t)
	p := &vethPair{}
	err := inNS(t, netns.None(), func() error {
		// netns.New moves the thread into the new namespace; inNS moves
		// it back to where it started.
		var err error
		if p.genNS, err = netns.New(); err != nil {
			return fmt.Errorf("create generator namespace: %w", err)
		}
		if p.dutNS, err = netns.New(); err != nil {
			return fmt.Errorf("create DUT namespace: %w", err)
		}
		return nil
	})
	t.Cleanup(func() {
		if p.genNS.IsOpen() {
			p.genNS.Close()
		}
		if p.dutNS.IsOpen() {
			p.dutNS.Close()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	err = inNS(t, p.genNS, func() error {
		veth := &netlink.Veth{
			LinkAttrs: netlink.LinkAttrs{Name: "gen0", NumTxQueues: queues, NumRxQueues: queues},
			PeerName:  "dut0", PeerNumTxQueues: uint32(queues), PeerNumRxQueues: uint32(queues),
			PeerNamespace: netlink.NsFd(p.dutNS),
		}
		if err := netlink.LinkAdd(veth); err != nil {
			return fmt.Errorf("add veth: %w", err)
		}
		if err := netlink.LinkSetUp(veth); err != nil {
			return err
		}
		p.gen, err = netdev.Lookup("gen0")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = inNS(t, p.dutNS, func() error {
		l, err := netlink.LinkByName("dut0")
		if err != nil {
			return err
		}
		if err := netlink.LinkSetUp(l); err != nil {
			return err
		}
		p.dut, err = netdev.Lookup("dut0")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// attachDUT attaches an XDP program returning action to dut0.
func (p *vethPair) attachDUT(t *testing.T, action int32) {
	t.Helper()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:         ebpf.XDP,
		License:      "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, action), asm.Return()},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prog.Close() })
	err = inNS(t, p.dutNS, func() error {
		l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: p.dut.Index})
		if err != nil {
			return fmt.Errorf("attach XDP to dut0: %w", err)
		}
		t.Cleanup(func() { l.Close() })
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (p *vethPair) dutQueues(t *testing.T) []netdev.VethQueue {
	t.Helper()
	var qs []netdev.VethQueue
	err := inNS(t, p.dutNS, func() error {
		var err error
		qs, err = netdev.VethQueueCounters("dut0")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return qs
}

func (p *vethPair) config(count uint64) Config {
	return Config{
		Ifindex: p.gen.Index,
		Frame: packet.UDPConfig{
			SrcMAC: p.gen.MAC, DstMAC: p.dut.MAC,
			SrcIP: netip.MustParseAddr("198.18.0.1"), DstIP: netip.MustParseAddr("198.18.0.2"),
			SrcPort: 1234, DstPort: 9, Size: 64, Fill: 0x5a,
		},
		Count:  count,
		Method: p.method,
	}
}

func (p *vethPair) run(t *testing.T, ctx context.Context, cfg Config) Stats {
	t.Helper()
	var s Stats
	err := inNS(t, p.genNS, func() error {
		var err error
		s, err = Run(ctx, cfg, nil)
		return err
	})
	if err != nil {
		t.Fatalf("Run: %v (stats %+v)", err, s)
	}
	return s
}

func TestRunDeliversExactCount(t *testing.T) {
	eachMethod(t, Methods, func(t *testing.T, m Method) {
		p := newVethPair(t, 1)
		p.method = m
		p.attachDUT(t, 1) // XDP_DROP
		before := netdev.SumVethQueues(p.dutQueues(t))
		const n = 1_000_003 // not a multiple of the chunk or batch size
		s := p.run(t, context.Background(), p.config(n))
		after := netdev.SumVethQueues(p.dutQueues(t))
		if s.Sent != n || s.Bytes != n*64 {
			t.Errorf("Sent %d Bytes %d, want %d %d", s.Sent, s.Bytes, n, n*64)
		}
		// Every frame reached the DUT or was refused by the sending veth
		// (xmit_errors: its ring to the peer was full, which happens when
		// other tests keep the DUT's CPU busy); none is unaccounted for.
		if !s.DeviceCounters || s.Xmit+s.Errors != n || s.Unaccounted() != 0 {
			t.Errorf("device counters %v: xmit %d + errors %d = %d, unaccounted %d; want %d, 0",
				s.DeviceCounters, s.Xmit, s.Errors, s.Xmit+s.Errors, s.Unaccounted(), n)
		}
		// The DUT's own stack may send nothing to us, but the generator side's
		// stack can send a few frames of its own (IPv6 router solicitations):
		// count only what the XDP program dropped beyond them, with slack.
		got := after.RxXDPDrops - before.RxXDPDrops
		if got < s.Xmit || got > s.Xmit+10 {
			t.Errorf("DUT dropped %d frames, want the %d the device transmitted", got, s.Xmit)
		}
	})
}

// TestRelayGoesBack runs the relayed methods ten times each: the relay's
// thread goes back to the process's namespace, so that the process stays
// where it was (/proc/self/ns/net, the main thread's, would name a relay's
// namespace had its thread been the main one and stayed there) and no
// relay namespace outlives its run.
func TestRelayGoesBack(t *testing.T) {
	eachMethod(t, []Method{XSK, Packet}, func(t *testing.T, m Method) {
		p := newVethPair(t, 1)
		p.method = m
		p.attachDUT(t, 1) // XDP_DROP
		before, err := os.Readlink("/proc/self/ns/net")
		if err != nil {
			t.Fatal(err)
		}
		for range 10 {
			p.run(t, context.Background(), p.config(1000))
			if now, err := os.Readlink("/proc/self/ns/net"); err != nil || now != before {
				t.Fatalf("the process is in network namespace %s after a run (%v), %s before", now, err, before)
			}
		}
	})
}

// TestRunLargestBatch sends in the largest batches the kernel takes, at
// full speed and in batches of any size paced: every frame is accounted
// for, as with the default.
func TestRunLargestBatch(t *testing.T) {
	eachMethod(t, []Method{Live}, func(t *testing.T, m Method) {
		p := newVethPair(t, 1)
		p.method = m
		p.attachDUT(t, 1) // XDP_DROP
		for _, rate := range []uint64{0, 1_000_000} {
			cfg := p.config(300_001)
			cfg.FullSpeedBatch, cfg.Rate = MaxBatch, rate
			if rate > 0 {
				cfg.Batch = MaxBatch
			}
			s := p.run(t, context.Background(), cfg)
			if s.Sent != 300_001 || !s.DeviceCounters || s.Xmit+s.Errors != s.Sent || s.Unaccounted() != 0 {
				t.Errorf("rate %d: sent %d, xmit %d + errors %d, unaccounted %d; want 300001 all accounted for",
					rate, s.Sent, s.Xmit, s.Errors, s.Unaccounted())
			}
		}
	})
}

// TestRunLargestLiveFrame sends frames of MaxFrameSize bytes over a veth
// whose MTU takes them: live frames go up to there (the kernel refuses one
// byte more, which Validate refuses first).
func TestRunLargestLiveFrame(t *testing.T) {
	eachMethod(t, Methods, func(t *testing.T, m Method) {
		p := newVethPair(t, 1)
		p.method = m
		size := MaxFrameSize()
		for _, end := range []struct {
			ns   netns.NsHandle
			name string
		}{{p.genNS, "gen0"}, {p.dutNS, "dut0"}} {
			if err := inNS(t, end.ns, func() error {
				l, err := netlink.LinkByName(end.name)
				if err != nil {
					return err
				}
				return netlink.LinkSetMTU(l, size-14)
			}); err != nil {
				t.Fatalf("set the MTU of %s: %v", end.name, err)
			}
		}
		p.attachDUT(t, 1) // XDP_DROP
		cfg := p.config(10_000)
		cfg.Frame.Size = size
		s := p.run(t, context.Background(), cfg)
		if s.Sent != 10_000 || s.Bytes != 10_000*uint64(size) || s.Xmit+s.Errors != s.Sent {
			t.Errorf("sent %d frames of %d bytes (%d bytes), xmit %d + errors %d", s.Sent, size, s.Bytes, s.Xmit, s.Errors)
		}
	})
}

func TestRunTwoThreadsTwoQueues(t *testing.T) {
	eachMethod(t, Methods, func(t *testing.T, m Method) {
		privtest.Root(t)
		online, err := cpuset.Online()
		if err != nil {
			t.Fatal(err)
		}
		if len(online) < 2 {
			privtest.Unsupported(t, "needs 2 CPUs online, has %d", len(online))
		}
		p := newVethPair(t, 2)
		p.method = m
		p.attachDUT(t, 1)
		before := p.dutQueues(t)
		cfg := p.config(2_000_001)
		cfg.Threads, cfg.CPUs = 2, online[:2]
		s := p.run(t, context.Background(), cfg)
		after := p.dutQueues(t)
		if s.Sent != cfg.Count || len(s.PerThread) != 2 || s.PerThread[0].Sent != 1_000_001 || s.PerThread[1].Sent != 1_000_000 {
			t.Fatalf("stats %+v, want 1000001 + 1000000", s)
		}
		// Each thread sent for a time of its own, within the run's.
		for _, th := range s.PerThread {
			if th.Duration <= 0 || th.Duration > s.Duration {
				t.Errorf("thread on CPU %d sent for %v, the run took %v", th.CPU, th.Duration, s.Duration)
			}
		}
		// veth picks the peer's queue as sending CPU % queues.
		for _, th := range s.PerThread {
			q := th.CPU % 2
			got := after[q].RxXDPDrops - before[q].RxXDPDrops
			if got < th.Sent || got > th.Sent+10 {
				t.Errorf("queue %d got %d frames, thread on CPU %d sent %d", q, got, th.CPU, th.Sent)
			}
		}
	})
}

// capture opens an AF_PACKET socket on dut0 with room for n frames.
func (p *vethPair) capture(t *testing.T, n int) int {
	t.Helper()
	var fd int
	err := inNS(t, p.dutNS, func() error {
		var err error
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return fmt.Errorf("AF_PACKET socket: %w", err)
		}
		// Each frame is a whole page in the socket's accounting.
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, n*16384); err != nil {
			return fmt.Errorf("SO_RCVBUFFORCE: %w", err)
		}
		// The stack takes the VLAN tag off into skb metadata; auxdata
		// gives it back.
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1); err != nil {
			return fmt.Errorf("PACKET_AUXDATA: %w", err)
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: p.dut.Index})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// auxVLAN returns the VLAN ID in a packet socket's auxdata, 0 if none.
func auxVLAN(t *testing.T, oob []byte) uint16 {
	t.Helper()
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		// struct tpacket_auxdata: status, len, snaplen (u32), mac, net,
		// vlan_tci, vlan_tpid (u16).
		if m.Header.Level == unix.SOL_PACKET && m.Header.Type == unix.PACKET_AUXDATA && len(m.Data) >= 20 {
			status := binary.NativeEndian.Uint32(m.Data)
			if status&unix.TP_STATUS_VLAN_VALID != 0 {
				return binary.NativeEndian.Uint16(m.Data[16:]) & 0x0fff
			}
		}
	}
	return 0
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func TestRunPortsAndValidFrames(t *testing.T) {
	eachMethod(t, Methods, func(t *testing.T, m Method) {
		for _, tc := range []struct {
			name string
			v6   bool
			vlan uint16
		}{
			{"IPv4", false, 0},
			{"IPv6 VLAN", true, 7},
		} {
			t.Run(tc.name, func(t *testing.T) {
				p := newVethPair(t, 1)
				p.method = m
				p.attachDUT(t, 2) // XDP_PASS: frames reach the packet socket
				// A whole number of every method's groups per port: the
				// relay's copies of a frame go to one port.
				const ports = 3
				const n = ports * MaxCopies * 16
				fd := p.capture(t, n+100)
				cfg := p.config(n)
				// Paced: every frame goes up the peer's stack to a packet
				// socket, slower than a full-speed sender would fill the veth
				// ring (the overflow would be counted, but not captured).
				cfg.Rate = 20000
				cfg.Ports = ports
				cfg.Frame.DstPort = 5000
				cfg.Frame.VLAN = tc.vlan
				if tc.v6 {
					cfg.Frame.SrcIP, cfg.Frame.DstIP = netip.MustParseAddr("2001:2::1"), netip.MustParseAddr("2001:2::2")
					cfg.Frame.Size = 90
				}
				s := p.run(t, context.Background(), cfg)
				if s.Sent != n {
					t.Fatalf("Sent %d, want %d", s.Sent, n)
				}
				byPort := map[uint16]int{}
				buf := make([]byte, 2048)
				oob := make([]byte, 256)
				var sum packet.Summary
				decoded := 0
				for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
					m, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_DONTWAIT)
					if err == unix.EAGAIN {
						if byPort[5000]+byPort[5001]+byPort[5002] >= n {
							break
						}
						time.Sleep(10 * time.Millisecond)
						continue
					}
					if err != nil {
						t.Fatal(err)
					}
					f := buf[:m]
					if !packet.Parse(f, &sum) || sum.Proto != packet.ProtoUDP || sum.SrcPort != 1234 {
						continue // the stack's own frames (ND, router solicitations)
					}
					vlan, size := auxVLAN(t, oob[:oobn]), m
					if vlan != 0 {
						size += packet.VLANTagLen
					}
					if size != cfg.Frame.Size || vlan != tc.vlan {
						t.Fatalf("frame of %d bytes, VLAN %d: want %d bytes, VLAN %d", size, vlan, cfg.Frame.Size, tc.vlan)
					}
					byPort[sum.DstPort]++
					checkUDP(t, f, tc.v6, decoded < 5)
					decoded++
				}
				want := map[uint16]int{5000: n / ports, 5001: n / ports, 5002: n / ports}
				if fmt.Sprint(byPort) != fmt.Sprint(want) {
					st, err := unix.GetsockoptTpacketStats(fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
					if err != nil {
						t.Fatalf("read the packet socket's statistics: %v", err)
					}
					t.Logf("dut counters %+v, packet socket %+v", netdev.SumVethQueues(p.dutQueues(t)), *st)
					t.Errorf("frames per port %v, want %v", byPort, want)
				}
			})
		}
	})
}

// checkUDP verifies a captured frame's UDP checksum (rewritten per frame by
// the program) and, if decode, that gopacket decodes it cleanly.
func checkUDP(t *testing.T, f []byte, v6, decode bool) {
	t.Helper()
	var s packet.Summary
	packet.Parse(f, &s)
	seg := f[s.L4Off:]
	var acc uint64
	if v6 {
		ip := f[s.L3Off:]
		acc = packet.Sum(packet.Sum(0, ip[8:24]), ip[24:40])
	} else {
		ip := f[s.L3Off:]
		if packet.Checksum(ip[:20]) != 0 {
			t.Fatalf("IPv4 header checksum wrong")
		}
		acc = packet.Sum(packet.Sum(0, ip[12:16]), ip[16:20])
	}
	acc += packet.ProtoUDP + uint64(len(seg))
	if binary.BigEndian.Uint16(seg[6:]) == 0 || packet.Fold(packet.Sum(acc, seg)) != 0 {
		t.Fatalf("UDP checksum %#04x does not verify (port %d)", binary.BigEndian.Uint16(seg[6:]), s.DstPort)
	}
	if !decode {
		return
	}
	gp := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
	if el := gp.ErrorLayer(); el != nil {
		t.Fatalf("gopacket: %v", el.Error())
	}
	udp, ok := gp.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if !ok || udp.SrcPort != 1234 || int(udp.Length) != len(seg) {
		t.Fatalf("gopacket UDP layer %+v", udp)
	}
}

func TestRunRateAndDuration(t *testing.T) {
	eachMethod(t, Methods, func(t *testing.T, m Method) {
		p := newVethPair(t, 1)
		p.method = m
		p.attachDUT(t, 1)
		cfg := p.config(0)
		cfg.Duration = 500 * time.Millisecond
		cfg.Rate = 20000
		s := p.run(t, context.Background(), cfg)
		// The rate is an upper bound, kept by the program frame by frame: at
		// most rate x the time it ran, plus the first frame, however fast or
		// slow the machine. How close it comes to the rate is a measurement
		// (xdpeng bench), not a test.
		limit := uint64(s.Duration.Seconds()*float64(cfg.Rate)) + 1
		if s.Sent == 0 || s.Sent > limit {
			t.Errorf("sent %d frames in %v at 20000 pps, want some and at most %d", s.Sent, s.Duration, limit)
		}
		// And it is kept: at least half of it, even on a busy machine.
		if s.Sent < limit/2 {
			t.Errorf("sent %d frames in %v at 20000 pps, want at least half the rate (%d)", s.Sent, s.Duration, limit/2)
		}
		// A duration is a bound the run keeps: it does not end early.
		if s.Duration < cfg.Duration {
			t.Errorf("ran %v, want at least %v", s.Duration, cfg.Duration)
		}
		if s.Xmit+s.Errors != s.Sent || s.Unaccounted() != 0 {
			t.Errorf("device accepted %d and refused %d of %d frames", s.Xmit, s.Errors, s.Sent)
		}
	})
}

// TestRunSkipsWhenTooFast asks a thread for a frame every nanosecond, far
// more than it can send: it falls behind its pacing at once and keeps
// starting afresh, and counts the frames it owed but did not send, many
// more than it sent (it takes well over 2 ns a frame); a run without a
// rate skips nothing.
func TestRunSkipsWhenTooFast(t *testing.T) {
	eachMethod(t, []Method{Live, Packet}, func(t *testing.T, m Method) {
		p := newVethPair(t, 1)
		p.method = m
		p.attachDUT(t, 1)
		cfg := p.config(0)
		cfg.Count = 100_000
		cfg.Rate = 1_000_000_000
		if s := p.run(t, context.Background(), cfg); s.Skipped < s.Sent {
			t.Errorf("%d frames at %d pps: %d skipped, want more than sent", s.Sent, cfg.Rate, s.Skipped)
		}
		cfg.Rate = 0
		if s := p.run(t, context.Background(), cfg); s.Skipped != 0 {
			t.Errorf("a run without a rate: %d skipped, want 0", s.Skipped)
		}
	})
}

// TestRunStopsWithContext runs the generator without a bound but its
// context, which the second progress report cancels: Run must report
// progress, stop (else the test times out), and return totals at least as
// large as the last report.
func TestRunStopsWithContext(t *testing.T) {
	eachMethod(t, Methods, func(t *testing.T, m Method) {
		p := newVethPair(t, 1)
		p.method = m
		p.attachDUT(t, 1)
		// The deadline is only the bound Run insists on; the cancel below ends
		// the run long before it.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var reports []Stats
		var s Stats
		err := inNS(t, p.genNS, func() error {
			cfg := p.config(0)
			cfg.Interval = 100 * time.Millisecond
			var err error
			s, err = Run(ctx, cfg, func(st Stats) {
				if reports = append(reports, st); len(reports) == 2 {
					cancel()
				}
			})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(reports) < 2 {
			t.Fatalf("progress reported %d times: the run ended before the second report cancelled it", len(reports))
		}
		if last := reports[len(reports)-1]; s.Sent == 0 || s.Sent < last.Sent {
			t.Errorf("sent %d in all, %d at the last report: want some, and no fewer", s.Sent, last.Sent)
		}
		// At full speed the peer's ring may overflow: what it refused is
		// counted, and nothing goes uncounted.
		if s.Xmit+s.Errors != s.Sent || s.Unaccounted() != 0 {
			t.Errorf("device accepted %d and refused %d of %d frames", s.Xmit, s.Errors, s.Sent)
		}
	})
}

// Without an XDP program (or GRO) on the peer, veth has no NAPI to deliver
// with and drops the frames before counting them: Unaccounted shows it.
func TestRunPeerWithoutXDP(t *testing.T) {
	eachMethod(t, Methods, func(t *testing.T, m Method) {
		p := newVethPair(t, 1)
		p.method = m
		s := p.run(t, context.Background(), p.config(10000))
		t.Logf("peer without XDP: sent %d, xmit %d, errors %d, unaccounted %d", s.Sent, s.Xmit, s.Errors, s.Unaccounted())
		// The device has its counters, and counted none of the frames: neither
		// queued nor refused. Every one is unaccounted for, which is what tells
		// a user that the peer cannot receive.
		if !s.DeviceCounters || s.Sent != 10000 || s.Xmit != 0 || s.Errors != 0 || s.Unaccounted() != 10000 {
			t.Errorf("device counters %v: sent %d, xmit %d, errors %d, unaccounted %d; want 10000 sent, all unaccounted",
				s.DeviceCounters, s.Sent, s.Xmit, s.Errors, s.Unaccounted())
		}
	})
}

// TestRelayCopies has the relay send each frame once and four times: a
// count that is no multiple of four is still met exactly (copies while
// they fit, then single frames), every copy is a frame the device took or
// refused, the DUT drops what the device took, and a rate stays an upper
// bound that is kept.
func TestRelayCopies(t *testing.T) {
	eachMethod(t, []Method{XSK, Packet}, func(t *testing.T, m Method) {
		for _, copies := range []int{1, 4} {
			p := newVethPair(t, 1)
			p.method = m
			p.attachDUT(t, 1) // XDP_DROP
			before := netdev.SumVethQueues(p.dutQueues(t))
			const n = 100_003
			cfg := p.config(n)
			cfg.Copies = copies
			s := p.run(t, context.Background(), cfg)
			after := netdev.SumVethQueues(p.dutQueues(t))
			if s.Sent != n || s.Bytes != n*64 || s.Copies != copies {
				t.Errorf("copies %d: Sent %d Bytes %d Copies %d, want %d %d %d", copies, s.Sent, s.Bytes, s.Copies, n, n*64, copies)
			}
			if !s.DeviceCounters || s.Xmit+s.Errors != n || s.Unaccounted() != 0 {
				t.Errorf("copies %d: device counters %v: xmit %d + errors %d = %d, unaccounted %d; want %d, 0",
					copies, s.DeviceCounters, s.Xmit, s.Errors, s.Xmit+s.Errors, s.Unaccounted(), n)
			}
			if got := after.RxXDPDrops - before.RxXDPDrops; got < s.Xmit || got > s.Xmit+10 {
				t.Errorf("copies %d: DUT dropped %d frames, want the %d the device transmitted", copies, got, s.Xmit)
			}

			cfg = p.config(0)
			cfg.Copies = copies
			cfg.Duration = 500 * time.Millisecond
			cfg.Rate = 20000
			s = p.run(t, context.Background(), cfg)
			// Copies leave together: at most one group beyond the rate.
			limit := uint64(s.Duration.Seconds()*float64(cfg.Rate)) + uint64(copies)
			if s.Sent < limit/2 || s.Sent > limit {
				t.Errorf("sent %d frames in %v at 20000 pps with %d copies, want %d to %d", s.Sent, s.Duration, copies, limit/2, limit)
			}
			if s.Xmit+s.Errors != s.Sent || s.Unaccounted() != 0 {
				t.Errorf("copies %d: device accepted %d and refused %d of %d frames", copies, s.Xmit, s.Errors, s.Sent)
			}
		}
	})
}
