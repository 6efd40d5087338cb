package kern_test

// Integration tests of the in-kernel paths as Open attaches them, on a test
// bed: the live-frames generator (internal/lab/gen) sends a bounded count
// out of genK in the bed's generator namespace, the path under test runs on
// dutK in the DUT namespace, and every count is checked exactly. Every path
// is closed at the end of its test and must leave its interface as it found
// it.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/cpuset"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/kern"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

func TestMain(m *testing.M) { os.Exit(privtest.Main(m)) }

// open opens cfg in the namespace ns. When the test ends it closes the path
// and checks that the interface has the programs it had before Open.
func open(t *testing.T, ns string, cfg kern.Config) *kern.Path {
	t.Helper()
	before := testbedtest.ReadHooksIn(t, ns, cfg.Interface)
	var p *kern.Path
	err := testbed.Do(ns, func() (err error) {
		p, err = kern.Open(cfg)
		return err
	})
	if err != nil {
		t.Fatalf("Open(%+v): %v", cfg, err)
	}
	if h := testbedtest.ReadHooksIn(t, ns, cfg.Interface); h.Equal(before) {
		t.Fatalf("Open(%+v) attached nothing: %+v", cfg, h)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("close %s on %s: %v", p.Program(), cfg.Interface, err)
		}
		if h := testbedtest.ReadHooksIn(t, ns, cfg.Interface); !h.Equal(before) {
			t.Errorf("%s after Close: %+v, before Open: %+v", cfg.Interface, h, before)
		}
	})
	return p
}

// frame is the UDP frame gen sends on link k of bed: genK to dutK, port 9.
func frame(bed *testbed.Bed, k int) packet.UDPConfig {
	l := bed.Links[k]
	return packet.UDPConfig{
		SrcMAC: l.GenMAC, DstMAC: l.DUTMAC,
		SrcIP: netip.MustParseAddr(l.GenIP.String()), DstIP: netip.MustParseAddr(l.DUTIP.String()),
		SrcPort: 1234, DstPort: 9, Size: 64,
	}
}

// send sends count copies of f out of genK from CPU cpu. veth puts frames
// sent from CPU c on the peer's rx queue c % queues and runs the peer's
// NAPI on that CPU, so the CPU chooses both queue and counter.
func send(t *testing.T, bed *testbed.Bed, k, cpu int, count uint64, f packet.UDPConfig) {
	t.Helper()
	cfg := gen.Config{Ifindex: bed.Links[k].GenIndex, Frame: f, Count: count, Threads: 1, CPUs: []int{cpu}}
	var st gen.Stats
	if err := bed.InGen(func() (err error) {
		st, err = gen.Run(context.Background(), cfg, nil)
		return err
	}); err != nil {
		t.Fatalf("gen: %v", err)
	}
	if st.Sent != count || st.DeviceCounters && (st.Xmit != count || st.Errors != 0) {
		t.Fatalf("gen sent %d of %d (device accepted %d, refused %d)", st.Sent, count, st.Xmit, st.Errors)
	}
}

// waitTotal reads p's counters until they total want (NAPI may still be
// draining a ring when the generator returns) and returns them.
func waitTotal(t *testing.T, p *kern.Path, want uint64) kern.Stats {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, err := p.Stats()
		if err != nil {
			t.Fatal(err)
		}
		got, _ := s.Total()
		if got > want || got < want && time.Now().After(deadline) {
			t.Fatalf("%s on %s counted %d packets, want %d (per queue/CPU: %+v)", p.Program(), p.Interface().Name, got, want, s)
		}
		if got == want {
			return s
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// read reads all of p's counters in the namespace ns.
func read(t *testing.T, ns string, p *kern.Path) kern.Counters {
	t.Helper()
	var c kern.Counters
	if err := testbed.Do(ns, func() (err error) {
		c, err = p.Read()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPathsCountExactly runs each path that ends on the interface it runs
// on, one after another on one link, and checks that it counted exactly the
// frames sent, and that Read has what the path has and nothing else.
func TestPathsCountExactly(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	const n = 20_000
	for _, tc := range []struct {
		action kern.Action
		hook   kern.Hook
	}{
		{kern.Drop, kern.XDP},
		{kern.Drop, kern.XDPGeneric},
		{kern.Drop, kern.TC},
		{kern.Pass, kern.XDP},
		{kern.Pass, kern.XDPGeneric},
		{kern.TX, kern.XDP},
		{kern.TX, kern.XDPGeneric},
	} {
		t.Run(fmt.Sprintf("%s-%v", tc.action, tc.hook), func(t *testing.T) {
			var back *kern.Path
			if tc.action == kern.TX {
				// veth delivers XDP_TX frames only to a peer that runs
				// an XDP program; this one counts them as they arrive.
				back = open(t, bed.GenNS, kern.Config{Action: kern.Pass, Interface: "gen0"})
			}
			p := open(t, bed.DUTNS, kern.Config{Action: tc.action, Interface: "dut0", Hook: tc.hook})
			before := read(t, bed.DUTNS, p)
			if n, _ := before.Stats.Total(); n != 0 {
				t.Fatalf("counted %d before anything was sent", n)
			}
			send(t, bed, 0, 0, n, frame(bed, 0))
			s := waitTotal(t, p, n)
			if _, b := s.Total(); b != n*64 {
				t.Errorf("counted %d bytes, want %d", b, n*64)
			}
			c := read(t, bed.DUTNS, p)
			if c.Proto != nil || c.OutTx != nil {
				t.Errorf("Read has protocols %v and egress counters %v, which %s does not count", c.Proto, c.OutTx, p.Program())
			}
			if (c.XDPTx != nil) != (tc.action == kern.TX) || (before.XDPTx != nil) != (tc.action == kern.TX) {
				t.Fatalf("Read's XDPTx %+v (before %+v): want it for tx, only there", c.XDPTx, before.XDPTx)
			}
			if tc.action == kern.TX {
				waitTotal(t, back, n)
				// veth counts XDP_TX in native mode only: in generic mode
				// the frames go back out as skbs.
				want := uint64(n)
				if tc.hook == kern.XDPGeneric {
					want = 0
				}
				if sent, failed := c.XDPTx.Sent-before.XDPTx.Sent, c.XDPTx.Failed-before.XDPTx.Failed; sent != want || failed != 0 {
					t.Errorf("XDP_TX sent back %d and failed %d, want %d and 0", sent, failed, want)
				}
			}
		})
	}
}

// TestDropCountsPerQueueAndCPU: frames sent from CPU 0 arrive on queue 0,
// those from CPU 1 on queue 1, and are counted there.
func TestDropCountsPerQueueAndCPU(t *testing.T) {
	online, err := cpuset.Online()
	if err != nil {
		t.Fatal(err)
	}
	if len(online) < 2 || online[0] != 0 || online[1] != 1 {
		privtest.Unsupported(t, "needs CPUs 0 and 1 online, have %s", cpuset.Format(online))
	}
	bed := testbedtest.New(t, 2, 1)
	p := open(t, bed.DUTNS, kern.Config{Action: kern.Drop, Interface: "dut0"})
	const n0, n1 = 100_000, 50_000
	send(t, bed, 0, 0, n0, frame(bed, 0))
	send(t, bed, 0, 1, n1, frame(bed, 0))
	s := waitTotal(t, p, n0+n1)
	want := kern.Stats{
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

// TestCountProto: IPv4 and IPv6 UDP count as protocol 17, ARP as not IP.
func TestCountProto(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	p := open(t, bed.DUTNS, kern.Config{Action: kern.Drop, Interface: "dut0", CountProto: true})
	if p.Program() != "drop-count-proto" {
		t.Errorf("program %q", p.Program())
	}
	const n4, n6, nARP = 1000, 500, 10
	send(t, bed, 0, 0, n4, frame(bed, 0))
	f6 := frame(bed, 0)
	f6.SrcIP, f6.DstIP, f6.Size = netip.MustParseAddr("2001:2::1"), netip.MustParseAddr("2001:2::2"), 80
	send(t, bed, 0, 0, n6, f6)
	sendARP(t, bed, nARP)
	waitTotal(t, p, n4+n6+nARP)
	got, err := p.ProtoStats()
	if err != nil {
		t.Fatal(err)
	}
	want := []kern.ProtoCount{{Proto: packet.ProtoUDP, Packets: n4 + n6}, {Proto: kern.ProtoNotIP, Packets: nARP}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("per protocol: got %+v, want %+v", got, want)
	}
	if c := read(t, bed.DUTNS, p); fmt.Sprint(c.Proto) != fmt.Sprint(want) {
		t.Errorf("Read's protocols %+v, want %+v", c.Proto, want)
	}
}

// sendARP writes n ARP requests out of gen0 through a packet socket: frames
// the live-frames generator, which sends UDP, does not make.
func sendARP(t *testing.T, bed *testbed.Bed, n int) {
	t.Helper()
	l := bed.Links[0]
	arp := make([]byte, 60)
	copy(arp[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(arp[6:12], l.GenMAC)
	binary.BigEndian.PutUint16(arp[12:], unix.ETH_P_ARP)
	err := bed.InGen(func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
		if err != nil {
			return fmt.Errorf("packet socket: %w", err)
		}
		defer unix.Close(fd)
		to := &unix.SockaddrLinklayer{Ifindex: l.GenIndex, Halen: 6}
		copy(to.Addr[:], arp[:6])
		for range n {
			if err := unix.Sendto(fd, arp, 0, to); err != nil {
				return fmt.Errorf("send ARP out of %s: %w", l.Gen, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTXSwapsMACs: what tx sends back reaches gen0 with the MAC addresses
// swapped and the rest of the frame as it was.
func TestTXSwapsMACs(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	var fd int
	if err := bed.InGen(func() (err error) {
		fd, err = packetSocket(l.GenIndex)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	// Frames sent back arrive at gen0 only if it runs XDP; pass lets them
	// on to the stack, where the packet socket reads them.
	open(t, bed.GenNS, kern.Config{Action: kern.Pass, Interface: l.Gen})
	open(t, bed.DUTNS, kern.Config{Action: kern.TX, Interface: l.DUT})

	f := frame(bed, 0)
	sent := make([]byte, f.Size)
	if _, err := packet.BuildUDP(sent, f); err != nil {
		t.Fatal(err)
	}
	want := append([]byte(nil), sent...)
	packet.SwapMACs(want)
	const n = 1000
	send(t, bed, 0, 0, n, f)
	got := 0
	buf := make([]byte, 2048)
	for got < n {
		m, from, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			t.Fatalf("read the frames sent back: got %d of %d: %v", got, n, err)
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue // gen0's own
		}
		if !bytes.Equal(buf[:m], want) {
			t.Fatalf("frame sent back:\n% x\nwant\n% x", buf[:m], want)
		}
		got++
	}
}

// packetSocket opens a packet socket on ifindex that sees every frame, with
// a receive timeout so a missing frame fails rather than hangs.
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

// TestRedirect: every frame redirected out of dut1 (one port, DEVMAP) or
// out of dut1 and dut2 (a copy to each, DEVMAP_HASH) arrives at the far
// end, where a sink (a drop counting UDP to port 9, as compare uses it)
// counts it, and the egress interfaces' counters show it.
func TestRedirect(t *testing.T) {
	bed := testbedtest.New(t, 1, 3)
	const n = 20_000
	for _, tc := range []struct {
		hook    kern.Hook
		outs    []int
		program string
	}{
		{kern.XDP, []int{1}, "redirect"},
		{kern.XDPGeneric, []int{1}, "redirect"},
		{kern.XDP, []int{1, 2}, "redirect-multi"},
	} {
		t.Run(fmt.Sprintf("%v-%d", tc.hook, len(tc.outs)), func(t *testing.T) {
			// Sinks first: veth takes redirected frames only if the far
			// end can receive them.
			var sinks []*kern.Path
			cfg := kern.Config{Action: kern.Redirect, Interface: bed.Links[0].DUT, Hook: tc.hook}
			for _, k := range tc.outs {
				sinks = append(sinks, open(t, bed.GenNS, kern.Config{Action: kern.Drop, Interface: bed.Links[k].Gen, CountUDPDstPort: 9}))
				cfg.Outs = append(cfg.Outs, bed.Links[k].DUT)
			}
			r := open(t, bed.DUTNS, cfg)
			if r.Program() != tc.program {
				t.Errorf("program %q, want %q", r.Program(), tc.program)
			}
			for i, o := range r.Outs() {
				if l := bed.Links[tc.outs[i]]; o.Name != l.DUT || o.Index != l.DUTIndex {
					t.Errorf("out %d: %s (%d), want %s (%d)", i, o.Name, o.Index, l.DUT, l.DUTIndex)
				}
			}
			before := read(t, bed.DUTNS, r)
			send(t, bed, 0, 0, n, frame(bed, 0))
			waitTotal(t, r, n)
			for _, s := range sinks {
				waitTotal(t, s, n)
			}
			after := read(t, bed.DUTNS, r)
			for i := range tc.outs {
				if d := after.OutTx[i] - before.OutTx[i]; d != n {
					t.Errorf("%s sent %d, want %d", cfg.Outs[i], d, n)
				}
			}
		})
	}
}

// attachForeign attaches an XDP_PASS program to dut0 through netlink, as
// `ip link set dev dut0 xdp obj ...` would: someone else's program, held by
// no process. It returns the program's id; the test's cleanup detaches it if
// it is still there.
func attachForeign(t *testing.T, bed *testbed.Bed) uint32 {
	t.Helper()
	k, err := bpf.LoadKern(bpf.Pass, bpf.KernOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close() // the attachment holds its own reference
	setXDP := func(fd int) error {
		return bed.InDUT(func() error {
			l, err := netlink.LinkByIndex(bed.Links[0].DUTIndex)
			if err != nil {
				return err
			}
			return netlink.LinkSetXdpFdWithFlags(l, fd, unix.XDP_FLAGS_DRV_MODE)
		})
	}
	if err := setXDP(k.Program.FD()); err != nil {
		t.Fatalf("attach XDP_PASS through netlink: %v", err)
	}
	id := testbedtest.ReadHooksIn(t, bed.DUTNS, "dut0").XDPProg
	t.Cleanup(func() {
		if testbedtest.ReadHooksIn(t, bed.DUTNS, "dut0").XDPProg == id {
			if err := setXDP(-1); err != nil {
				t.Errorf("detach the foreign program: %v", err)
			}
		}
	})
	return id
}

// TestOpenRefuses: a missing interface, an XDP program someone else
// attached and one held by a bpf_link are refused with errors a caller can
// tell apart, without CLI advice, and leave the interfaces as they were.
func TestOpenRefuses(t *testing.T) {
	bed := testbedtest.New(t, 1, 2)
	tryOpen := func(cfg kern.Config) error {
		return bed.InDUT(func() error {
			p, err := kern.Open(cfg)
			if err == nil {
				p.Close()
			}
			return err
		})
	}
	noAdvice := func(err error) {
		t.Helper()
		if strings.Contains(err.Error(), "--") {
			t.Errorf("%q gives CLI flag advice, which is the CLI's to give", err)
		}
	}
	clean := testbedtest.ReadHooksIn(t, bed.DUTNS, "dut0")

	t.Run("missing interface", func(t *testing.T) {
		for _, cfg := range []kern.Config{
			{Action: kern.Drop, Interface: "nosuch0"},
			{Action: kern.Redirect, Interface: "dut0", Outs: []string{"dut1", "nosuch0"}},
			{Action: kern.Drop, Interface: "gen0"}, // in the other namespace
		} {
			want := cfg.Interface
			if len(cfg.Outs) > 0 {
				want = cfg.Outs[1]
			}
			for what, err := range map[string]error{
				"Open":  tryOpen(cfg),
				"Check": bed.InDUT(func() error { return kern.Check(cfg) }),
			} {
				var nf *netdev.NoInterfaceError
				if !errors.As(err, &nf) || nf.Name != want {
					t.Errorf("%s(%+v) = %v, want a *netdev.NoInterfaceError for %s", what, cfg, err, want)
				}
			}
		}
		if h := testbedtest.ReadHooksIn(t, bed.DUTNS, "dut0"); !h.Equal(clean) {
			t.Errorf("dut0 after the refusals: %+v, before: %+v", h, clean)
		}
	})

	t.Run("foreign program", func(t *testing.T) {
		id := attachForeign(t, bed)
		withForeign := testbedtest.ReadHooksIn(t, bed.DUTNS, "dut0")
		for _, h := range []kern.Hook{kern.XDP, kern.XDPGeneric} {
			err := tryOpen(kern.Config{Action: kern.Drop, Interface: "dut0", Hook: h})
			var fe *netdev.ForeignXDPError
			if !errors.As(err, &fe) || fe.Held() || fe.ProgID != id || fe.Interface != "dut0" {
				t.Fatalf("%v: Open = %v, want a *netdev.ForeignXDPError for program %d, not held", h, err, id)
			}
			noAdvice(err)
		}
		if h := testbedtest.ReadHooksIn(t, bed.DUTNS, "dut0"); !h.Equal(withForeign) {
			t.Fatalf("dut0 after the refusals: %+v, before: %+v", h, withForeign)
		}
		mustOpen := func(cfg kern.Config) *kern.Path {
			var p *kern.Path
			if err := bed.InDUT(func() (err error) { p, err = kern.Open(cfg); return err }); err != nil {
				t.Fatalf("Open(%+v): %v", cfg, err)
			}
			t.Cleanup(func() { p.Close() })
			return p
		}
		// tc ingress replaces nothing: it goes on beside the program.
		tc := mustOpen(kern.Config{Action: kern.Drop, Interface: "dut0", Hook: kern.TC})
		if h := testbedtest.ReadHooksIn(t, bed.DUTNS, "dut0"); h.XDPProg != id || len(h.TCXIngress) != 1 {
			t.Errorf("with tc drop beside it: %+v, want program %d and one TCX program", h, id)
		}
		if err := tc.Close(); err != nil {
			t.Fatal(err)
		}
		// Force replaces it, and Close does not bring it back.
		p := mustOpen(kern.Config{Action: kern.Drop, Interface: "dut0", Force: true})
		if h := testbedtest.ReadHooksIn(t, bed.DUTNS, "dut0"); h.XDPProg == id || h.XDPProg == 0 {
			t.Fatalf("forced: dut0 has program %d, want ours instead of %d", h.XDPProg, id)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if h := testbedtest.ReadHooksIn(t, bed.DUTNS, "dut0"); !h.Equal(clean) {
			t.Errorf("dut0 after the forced path closed: %+v, want %+v", h, clean)
		}
	})

	t.Run("held by a bpf_link", func(t *testing.T) {
		first := open(t, bed.DUTNS, kern.Config{Action: kern.Drop, Interface: "dut0"})
		held := testbedtest.ReadHooksIn(t, bed.DUTNS, "dut0")
		err := tryOpen(kern.Config{Action: kern.Drop, Interface: "dut0", Force: true})
		var fe *netdev.ForeignXDPError
		if !errors.As(err, &fe) || !fe.Held() || fe.ProgID != held.XDPProg || fe.OwnerPID != os.Getpid() {
			t.Fatalf("Open over a held program = %v (%+v), want a held *netdev.ForeignXDPError of program %d owned by pid %d",
				err, fe, held.XDPProg, os.Getpid())
		}
		noAdvice(err)
		if h := testbedtest.ReadHooksIn(t, bed.DUTNS, "dut0"); !h.Equal(held) {
			t.Errorf("dut0 after the refusal: %+v, want %+v", h, held)
		}
		if err := first.Close(); err != nil {
			t.Fatal(err)
		}
		if err := first.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})
}
