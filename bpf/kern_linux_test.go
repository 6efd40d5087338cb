package bpf

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

func TestMain(m *testing.M) { os.Exit(privtest.Main(m)) }

// ethFrame is a minimal IPv4/UDP frame to destination port dport.
func ethFrame(dport uint16) []byte {
	f := make([]byte, 64)
	copy(f[0:6], []byte{2, 0, 0, 0, 0, 2})
	copy(f[6:12], []byte{2, 0, 0, 0, 0, 1})
	f[12], f[13] = 0x08, 0x00                  // IPv4
	f[14], f[23] = 0x45, 17                    // version/IHL, protocol UDP
	f[36], f[37] = byte(dport>>8), byte(dport) // UDP destination port
	return f
}

func TestLoadKernEvery(t *testing.T) {
	privtest.Root(t)
	want := map[KernProgram]uint32{Drop: 1, Pass: 2, TX: 3, RedirectCPU: 4, DropCountProto: 1, TCDrop: 2 /* TC_ACT_SHOT */}
	for _, p := range KernPrograms {
		for _, counters := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/counters=%v", p, counters), func(t *testing.T) {
				opts := KernOptions{Counters: counters}
				if p == RedirectCPU {
					opts.CPUs = []int{0}
				}
				k, err := LoadKern(p, opts)
				if err != nil {
					t.Fatal(err)
				}
				if (k.Remote != nil && k.CPUMap != nil && k.RemoteStats != nil) != (p == RedirectCPU) {
					t.Errorf("Remote %v, CPUMap %v, RemoteStats %v", k.Remote, k.CPUMap, k.RemoteStats)
				}
				defer k.Close()
				if (k.TxPorts != nil) != (p == Redirect || p == RedirectMulti) {
					t.Errorf("TxPorts = %v", k.TxPorts)
				}
				if (k.ProtoStats != nil) != (p == DropCountProto) {
					t.Errorf("ProtoStats = %v", k.ProtoStats)
				}
				ret, _, err := k.Program.Test(ethFrame(9))
				if err != nil {
					t.Fatal(err)
				}
				if v, ok := want[p]; ok && ret != v {
					t.Errorf("verdict %d, want %d", ret, v)
				}
				s, err := k.ReadStats()
				if !counters {
					if err == nil {
						t.Error("ReadStats without counters: no error")
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if n, b := s.Total(); n != 1 || b != 64 {
					t.Errorf("counted %d packets %d bytes, want 1 and 64", n, b)
				}
			})
		}
	}
	if _, err := LoadKern("bogus", KernOptions{}); err == nil {
		t.Error("LoadKern(bogus): no error")
	}
}

func TestXskRedirectOptions(t *testing.T) {
	privtest.Root(t)
	const xdpPass = 2
	x, err := NewXskRedirect(XskOptions{Counters: true, Match: XskMatch{IPProto: unix.IPPROTO_UDP, DstPort: 9999}})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for _, port := range []uint16{9999, 53} {
		// Empty XSKMAP: wanted frames fall back to XDP_PASS too.
		if ret, _, err := x.Program.Test(ethFrame(port)); err != nil || ret != xdpPass {
			t.Fatalf("port %d: verdict %d, %v", port, ret, err)
		}
	}
	s, err := x.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 1 || s[0].Passed != 2 || s[0].Redirected != 0 {
		t.Errorf("stats %+v, want 2 passed on one queue/CPU", s)
	}
}

func TestQueueCPUStats(t *testing.T) {
	s := QueueCPUStats{
		{Queue: 0, CPU: 0, Packets: 10, Bytes: 100},
		{Queue: 0, CPU: 1, Packets: 1, Bytes: 10},
		{Queue: 1, CPU: 1, Packets: 5, Bytes: 50},
	}
	if n, b := s.Total(); n != 16 || b != 160 {
		t.Errorf("Total = %d, %d", n, b)
	}
}

// TestCountUDPDstPort: with CountUDPDstPort the counters count only UDP
// frames to that port, IPv4 or IPv6, tagged or not, in the XDP and the tc
// programs, and the program still drops every frame.
func TestCountUDPDstPort(t *testing.T) {
	privtest.Root(t)
	mac := func(b byte) net.HardwareAddr { return net.HardwareAddr{2, 0, 0, 0, 0, b} }
	build := func(c packet.UDPConfig, tcp bool) []byte {
		c.SrcMAC, c.DstMAC, c.SrcPort, c.Size = mac(1), mac(2), 1234, 80
		if !c.SrcIP.IsValid() {
			c.SrcIP, c.DstIP = netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2")
		}
		buf := make([]byte, 256)
		build := func(b []byte, c packet.UDPConfig) (int, error) { return packet.BuildUDP(b, c) }
		if tcp {
			build = func(b []byte, c packet.UDPConfig) (int, error) { return packet.BuildTCP(b, c, 0x02) }
		}
		n, err := build(buf, c)
		if err != nil {
			t.Fatal(err)
		}
		return buf[:n]
	}
	v6 := packet.UDPConfig{SrcIP: netip.MustParseAddr("2001:2::1"), DstIP: netip.MustParseAddr("2001:2::2")}
	igmp := ethFrame(9)
	igmp[23] = 2 // IPPROTO_IGMP, the bridge's report
	frames := []struct {
		name  string
		frame []byte
		count bool
	}{
		{"udp/9", build(packet.UDPConfig{DstPort: 9}, false), true},
		{"udp/9 vlan", build(packet.UDPConfig{DstPort: 9, VLAN: 7}, false), true},
		{"udp6/9", build(packet.UDPConfig{SrcIP: v6.SrcIP, DstIP: v6.DstIP, DstPort: 9}, false), true},
		{"udp/10", build(packet.UDPConfig{DstPort: 10}, false), false},
		{"udp6/2304", build(packet.UDPConfig{SrcIP: v6.SrcIP, DstIP: v6.DstIP, DstPort: 9 << 8}, false), false},
		{"tcp/9", build(packet.UDPConfig{DstPort: 9}, true), false},
		{"igmp", igmp, false},
		{"udp header cut short", ethFrame(9)[:40], false},
	}
	for _, p := range []KernProgram{Drop, TCDrop} {
		t.Run(string(p), func(t *testing.T) {
			k, err := LoadKern(p, KernOptions{Counters: true, CountUDPDstPort: 9})
			if err != nil {
				t.Fatal(err)
			}
			defer k.Close()
			var want uint64
			for _, f := range frames {
				ret, _, err := k.Program.Test(f.frame)
				if err != nil {
					t.Fatalf("%s: %v", f.name, err)
				}
				if dropped := map[KernProgram]uint32{Drop: 1, TCDrop: 2}[p]; ret != dropped {
					t.Errorf("%s: verdict %d, want %d (drop)", f.name, ret, dropped)
				}
				if f.count {
					want++
				}
				s, err := k.ReadStats()
				if err != nil {
					t.Fatal(err)
				}
				if n, _ := s.Total(); n != want {
					t.Errorf("after %s: counted %d, want %d", f.name, n, want)
					want = n
				}
			}
		})
	}
}

// TestPacketOps runs each XDP path under each packet operation, in both
// load modes, on sound frames and on frames each operation must abort,
// and checks what swap-macs wrote (TX swaps by default, and with
// no-touch sends the frame back as it came).
func TestPacketOps(t *testing.T) {
	privtest.Root(t)
	sound := ethFrame(9)
	vlan := make([]byte, 0, 68)
	vlan = append(append(append(vlan, sound[:12]...), 0x81, 0x00, 0, 7), sound[12:]...)
	notEtherType := ethFrame(9)
	notEtherType[12], notEtherType[13] = 0x00, 0x40 // an 802.3 length
	badIP := ethFrame(9)
	badIP[14] = 0x44    // IHL 4
	short := sound[:14] // the Ethernet header alone (BPF_PROG_TEST_RUN takes no shorter frame)
	swapped := append([]byte(nil), sound...)
	copy(swapped[0:6], sound[6:12])
	copy(swapped[6:12], sound[0:6])
	verdict := map[KernProgram]uint32{Drop: 1, Pass: 2, TX: 3, Redirect: 4, RedirectMulti: 4, RedirectCPU: 4}
	const aborted = 0
	for _, p := range KernPrograms {
		if !p.TakesPacketOp() {
			if _, err := LoadKern(p, KernOptions{PacketOp: ParseIP}); err == nil {
				t.Errorf("%s took a packet operation", p)
			}
			continue
		}
		for _, op := range PacketOps {
			for _, lb := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/load-bytes=%v", p, op, lb), func(t *testing.T) {
					if lb && op != NoTouch {
						if err := HaveLoadBytes(); errors.Is(err, ErrNoLoadBytes) {
							privtest.Unsupported(t, "%v", err)
						}
					}
					opts := KernOptions{PacketOp: op, LoadBytes: lb}
					if p == RedirectCPU {
						opts.CPUs = []int{0}
					}
					k, err := LoadKern(p, opts)
					if op == NoTouch && lb {
						if err == nil {
							k.Close()
							t.Fatal("no-touch with load-bytes: no error")
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					defer k.Close()
					if k.Op != op {
						t.Errorf("Op = %s, want %s", k.Op, op)
					}
					if p == Redirect || p == RedirectMulti {
						if err := k.SetPorts(1); err != nil { // lo
							t.Fatal(err)
						}
					}
					frames := []struct {
						name  string
						frame []byte
						abort bool
					}{
						{"sound", sound, false},
						{"vlan", vlan, op == ParseIP && lb}, // load-bytes walks no VLAN tag: 0x8100 is no IP
						{"802.3 length", notEtherType, op != NoTouch && op != SwapMACs},
						{"IHL 4", badIP, op == ParseIP},
						{"no IP header", short, op == ParseIP},
					}
					for _, f := range frames {
						ret, out, err := k.Program.Test(f.frame)
						if err != nil {
							t.Fatalf("%s: %v", f.name, err)
						}
						want := verdict[p]
						if f.abort {
							want = aborted
						}
						if f.name == "vlan" && op == ParseIP && lb {
							want = verdict[p] // an EtherType, not IP: nothing to parse
						}
						if ret != want {
							t.Errorf("%s: verdict %d, want %d", f.name, ret, want)
						}
						if f.name == "sound" && ret != aborted {
							wantOut := sound
							if op == SwapMACs {
								wantOut = swapped
							}
							if string(out) != string(wantOut) {
								t.Errorf("%s: frame out % x, want % x", f.name, out[:12], wantOut[:12])
							}
						}
					}
				})
			}
		}
	}
	if k, err := LoadKern(TX, KernOptions{}); err != nil {
		t.Error(err)
	} else {
		if k.Op != SwapMACs {
			t.Errorf("TX's default operation %s, want swap-macs", k.Op)
		}
		k.Close()
	}
	if _, err := ParsePacketOp("touch-all"); err == nil {
		t.Error("ParsePacketOp(touch-all): no error")
	}
}

// TestRedirectCPUOptions: RedirectCPU takes CPUs that exist, once each, and
// only it takes them; each CPU gets its CPUMAP entry with the remote
// program and the queue size.
func TestRedirectCPUOptions(t *testing.T) {
	privtest.Root(t)
	n, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p    KernProgram
		opts KernOptions
		want string
	}{
		{RedirectCPU, KernOptions{}, "no CPU"},
		{RedirectCPU, KernOptions{CPUs: []int{n}}, fmt.Sprintf("CPU %d: this machine has CPUs 0-%d", n, n-1)},
		{RedirectCPU, KernOptions{CPUs: []int{0, 0}}, "CPU 0 listed twice"},
		{Drop, KernOptions{CPUs: []int{0}}, "are redirect-cpu's"},
		{Drop, KernOptions{RemotePass: true}, "are redirect-cpu's"},
	} {
		if k, err := LoadKern(tc.p, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			if k != nil {
				k.Close()
			}
			t.Errorf("LoadKern(%s, %+v) = %v, want %q", tc.p, tc.opts, err, tc.want)
		}
	}
	k, err := LoadKern(RedirectCPU, KernOptions{CPUs: []int{0}, QSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	var val [2]uint32
	if err := k.CPUMap.Lookup(uint32(0), &val); err != nil {
		t.Fatal(err)
	}
	info, err := k.Remote.Info()
	if err != nil {
		t.Fatal(err)
	}
	id, _ := info.ID()
	if val[0] != 64 || val[1] != uint32(id) {
		t.Errorf("CPUMAP entry of CPU 0: queue %d, program id %d; want 64, %d", val[0], val[1], id)
	}
	if s, err := k.ReadRemoteStats(); err != nil || len(s) != 0 {
		t.Errorf("ReadRemoteStats before any frame: %v, %v", s, err)
	}
}
