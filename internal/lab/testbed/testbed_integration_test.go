package testbed_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/safchain/ethtool"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/cpuset"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
)

func TestMain(m *testing.M) { os.Exit(privtest.Main(m)) }

func TestUpDownLeavesNothing(t *testing.T) {
	for _, q := range []int{1, 2} {
		t.Run(map[int]string{1: "1queue", 2: "2queues"}[q], func(t *testing.T) {
			privtest.Root(t)
			name := testbed.UniqueName("t")
			bed, err := testbed.Up(testbed.Config{Name: name, Queues: q, Links: 2})
			if errors.Is(err, unix.EPERM) {
				privtest.Unavailable(t, "cannot create network namespaces here: %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := testbed.Down(name); err != nil {
					t.Errorf("remove test bed %s: %v", name, err)
				}
			})

			checkBed(t, bed, q)
			if got, err := testbed.Open(name); err != nil {
				t.Errorf("Open: %v", err)
			} else if len(got.Links) != 2 || got.Queues != q || got.Links[1].DUTIP.String() != "198.18.1.2" ||
				!bytes.Equal(got.Links[0].DUTMAC, bed.Links[0].DUTMAC) || got.ThreadedNAPI != bed.ThreadedNAPI {
				t.Errorf("Open = %+v, want %+v", got, bed)
			}
			if names, err := testbed.List(); err != nil || !slices.Contains(names, name) {
				t.Errorf("List = %v, %v; want it to contain %s", names, err, name)
			}

			if err := bed.Down(); err != nil {
				t.Fatalf("Down: %v", err)
			}
			for _, ns := range []string{bed.GenNS, bed.DUTNS} {
				if _, err := os.Stat("/var/run/netns/" + ns); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("namespace %s still there after Down (stat: %v)", ns, err)
				}
			}
			// veth ends would show up here if Down moved them out instead of deleting them.
			links, err := netlink.LinkList()
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range links {
				if n := l.Attrs().Name; n == bed.Links[0].Gen || n == bed.Links[0].DUT {
					t.Errorf("interface %s left in the root namespace", n)
				}
			}
			var nf *testbed.NotFoundError
			if _, err := testbed.Open(name); !errors.As(err, &nf) {
				t.Errorf("Open after Down = %v, want a NotFoundError", err)
			}
			if err := bed.Down(); err != nil {
				t.Errorf("second Down = %v, want nil (idempotent)", err)
			}
		})
	}
}

// checkBed looks at every link of bed from inside its namespaces.
func checkBed(t *testing.T, bed *testbed.Bed, queues int) {
	t.Helper()
	for _, l := range bed.Links {
		for _, end := range []struct {
			ns, dev, peerIP string
			ip              net.IP
			peerMAC         net.HardwareAddr
		}{
			{bed.GenNS, l.Gen, l.DUTIP.String(), l.GenIP, l.DUTMAC},
			{bed.DUTNS, l.DUT, l.GenIP.String(), l.DUTIP, l.GenMAC},
		} {
			err := testbed.Do(end.ns, func() error {
				info, err := netdev.Lookup(end.dev)
				if err != nil {
					return err
				}
				if info.RxQueues != queues || info.TxQueues != queues || info.Driver != "veth" {
					t.Errorf("%s: %d rx / %d tx queues, driver %q; want %d each, veth", end.dev, info.RxQueues, info.TxQueues, info.Driver, queues)
				}
				link, err := netlink.LinkByIndex(info.Index)
				if err != nil {
					return err
				}
				if link.Attrs().OperState != netlink.OperUp {
					t.Errorf("%s is %v, want up", end.dev, link.Attrs().OperState)
				}
				addrs, err := netlink.AddrList(link, unix.AF_INET)
				if err != nil {
					return err
				}
				if len(addrs) != 1 || !addrs[0].IP.Equal(end.ip) {
					t.Errorf("%s addresses %v, want %s", end.dev, addrs, end.ip)
				}
				neighs, err := netlink.NeighList(info.Index, unix.AF_INET)
				if err != nil {
					return err
				}
				found := false
				for _, n := range neighs {
					if n.IP.String() == end.peerIP && bytes.Equal(n.HardwareAddr, end.peerMAC) && n.State == netlink.NUD_PERMANENT {
						found = true
					}
				}
				if !found {
					t.Errorf("%s: no permanent neighbour %s lladdr %s in %v", end.dev, end.peerIP, end.peerMAC, neighs)
				}
				feat, err := ethtool.NewEthtool()
				if err != nil {
					return err
				}
				defer feat.Close()
				f, err := feat.Features(end.dev)
				if err != nil {
					return err
				}
				if !f["rx-gro"] {
					t.Errorf("%s: GRO off", end.dev)
				}
				lo, err := netlink.LinkByName("lo")
				if err != nil {
					return err
				}
				if lo.Attrs().Flags&net.FlagUp == 0 {
					t.Errorf("lo is down in %s", end.ns)
				}
				return nil
			})
			if err != nil {
				t.Errorf("check %s in %s: %v", end.dev, end.ns, err)
			}
		}
	}
}

func TestUpTwiceFails(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	_, err := testbed.Up(testbed.Config{Name: bed.Name})
	var ee *testbed.ExistsError
	if !errors.As(err, &ee) {
		t.Fatalf("second Up = %v, want an ExistsError", err)
	}
	if !strings.Contains(err.Error(), "xdpeng testbed down --name "+bed.Name) {
		t.Errorf("error %q does not say how to remove the bed", err)
	}
	// The failed Up must not have touched the bed.
	if _, err := testbed.Open(bed.Name); err != nil {
		t.Errorf("Open after the failed Up: %v", err)
	}
}

func TestThreadedNAPI(t *testing.T) {
	privtest.Root(t)
	online, err := cpuset.Online()
	if err != nil {
		t.Fatal(err)
	}
	if len(online) < 2 {
		privtest.Unsupported(t, "needs 2 CPUs online, has %d: with one, the DUT's NAPI stays in softirq", len(online))
	}
	dut := online[len(online)-1]
	bed := testbedtest.NewConfig(t, testbed.Config{Queues: 2, NAPI: testbed.NAPIThreaded, GenCPUs: online[:1], DUTCPUs: []int{dut}})
	if !bed.ThreadedNAPI || len(bed.NAPIThreads) != 2 {
		t.Fatalf("ThreadedNAPI %v, threads %+v (note %q); want threaded with 2 kthreads", bed.ThreadedNAPI, bed.NAPIThreads, bed.NAPINote)
	}
	for _, th := range bed.NAPIThreads {
		comm, err := os.ReadFile("/proc/" + itoa(th.PID) + "/comm")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(comm), "napi/dut0-") || !slices.Equal(th.CPUs, []int{dut}) {
			t.Errorf("kthread %d %q on CPUs %v, want napi/dut0-* on CPU %d", th.PID, strings.TrimSpace(string(comm)), th.CPUs, dut)
		}
	}
	got, err := testbed.Open(bed.Name)
	if err != nil {
		t.Fatal(err)
	}
	if !got.ThreadedNAPI || !slices.Equal(got.DUTCPUs, []int{dut}) || len(got.NAPIThreads) != 2 {
		t.Errorf("Open: threaded %v on %v, %d threads; want threaded on [%d], 2 threads", got.ThreadedNAPI, got.DUTCPUs, len(got.NAPIThreads), dut)
	}
	// The kthreads must outlive attaching an XDP program (as xdpeng does on
	// dut0), or the pinning would be lost.
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:         ebpf.XDP,
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2 /* XDP_PASS */), asm.Return()},
		License:      "GPL",
	})
	if err != nil {
		t.Fatalf("load XDP program: %v", err)
	}
	defer prog.Close()
	err = bed.InDUT(func() error {
		lk, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: bed.Links[0].DUTIndex})
		if err != nil {
			return err
		}
		defer lk.Close()
		napis, err := netdev.NAPIs(bed.Links[0].DUTIndex)
		if err != nil {
			return err
		}
		for i, n := range napis {
			if i >= len(bed.NAPIThreads) || n.PID != bed.NAPIThreads[i].PID {
				t.Errorf("with XDP attached the NAPI kthreads are %+v, were %+v", napis, bed.NAPIThreads)
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := testbed.Open(bed.Name); err != nil {
		t.Error(err)
	} else if !slices.Equal(got.DUTCPUs, []int{dut}) {
		t.Errorf("after attaching and detaching XDP: DUT CPUs %v, want still pinned to %d", got.DUTCPUs, dut)
	}

	if err := bed.SetThreadedNAPI(false); err != nil {
		t.Fatal(err)
	}
	if got, err := testbed.Open(bed.Name); err != nil || got.ThreadedNAPI {
		t.Errorf("after SetThreadedNAPI(false): Open = threaded %v, %v", got != nil && got.ThreadedNAPI, err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// udpFrame builds an Ethernet/IPv4/UDP frame with a correct IPv4 checksum
// and no UDP checksum.
func udpFrame(src, dst net.HardwareAddr, sip, dip net.IP, payload int) []byte {
	f := make([]byte, 14+20+8+payload)
	copy(f[0:6], dst)
	copy(f[6:12], src)
	binary.BigEndian.PutUint16(f[12:], unix.ETH_P_IP)
	ip := f[14:34]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(20+8+payload))
	ip[8] = 64
	ip[9] = unix.IPPROTO_UDP
	copy(ip[12:16], sip.To4())
	copy(ip[16:20], dip.To4())
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	udp := f[34:42]
	binary.BigEndian.PutUint16(udp[0:], 9)
	binary.BigEndian.PutUint16(udp[2:], 9) // discard
	binary.BigEndian.PutUint16(udp[4:], uint16(8+payload))
	for i := range payload {
		f[42+i] = byte(i)
	}
	return f
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// packetSocket opens an AF_PACKET socket bound to ifindex in the current
// namespace, receiving every protocol, with a receive timeout.
func packetSocket(ifindex int) (int, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
	if err != nil {
		return -1, err
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex}); err != nil {
		unix.Close(fd)
		return -1, err
	}
	tv := unix.NsecToTimeval(int64(200 * time.Millisecond))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// TestFrameCrossesLink sends a frame with AF_PACKET on gen0 and receives it
// with AF_PACKET on dut0: the link, the MACs and the addresses work.
// TestFrameCrossesLink sends a frame from the generator end and receives it
// on the DUT end: on a bed of the default MTU, and a jumbo frame on a bed
// of MTU 9000 (both ends of the link have it).
func TestFrameCrossesLink(t *testing.T) {
	for _, tc := range []struct{ mtu, payload int }{{0, 32}, {9000, 9000 - 28}} {
		t.Run("mtu="+strconv.Itoa(tc.mtu), func(t *testing.T) {
			bed := testbedtest.NewConfig(t, testbed.Config{MTU: tc.mtu})
			l := bed.Links[0]
			want := tc.mtu
			if want == 0 {
				want = 1500
			}
			if bed.MTU != want {
				t.Errorf("bed MTU %d, want %d", bed.MTU, want)
			}
			for _, end := range []struct {
				in   func(func() error) error
				name string
			}{{bed.InGen, l.Gen}, {bed.InDUT, l.DUT}} {
				var mtu int
				if err := end.in(func() error {
					link, err := netlink.LinkByName(end.name)
					if err == nil {
						mtu = link.Attrs().MTU
					}
					return err
				}); err != nil || mtu != want {
					t.Errorf("%s has MTU %d (%v), want %d", end.name, mtu, err, want)
				}
			}
			if got, err := testbed.Open(bed.Name); err != nil || got.MTU != want {
				t.Errorf("Open says MTU %d (%v), want %d", got.MTU, err, want)
			}
			sendAcross(t, bed, udpFrame(l.GenMAC, l.DUTMAC, l.GenIP, l.DUTIP, tc.payload))
		})
	}
}

// sendAcross sends frame on the generator end of the bed's link and waits for
// it on the DUT end.
func sendAcross(t *testing.T, bed *testbed.Bed, frame []byte) {
	t.Helper()
	l := bed.Links[0]
	var rx, tx int
	if err := bed.InDUT(func() (err error) { rx, err = packetSocket(l.DUTIndex); return err }); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(rx)
	if err := bed.InGen(func() (err error) { tx, err = packetSocket(l.GenIndex); return err }); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(tx)

	// The sockets were made in their namespaces and are used from here.
	if err := unix.Sendto(tx, frame, 0, &unix.SockaddrLinklayer{Ifindex: l.GenIndex, Halen: 6}); err != nil {
		t.Fatalf("send on %s: %v", l.Gen, err)
	}
	buf := make([]byte, 65536)
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		n, _, err := unix.Recvfrom(rx, buf, 0)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue
			}
			t.Fatalf("receive on %s: %v", l.DUT, err)
		}
		if bytes.Equal(buf[:n], frame) {
			return
		}
	}
	t.Fatalf("the %d-byte frame sent on %s did not arrive on %s", len(frame), l.Gen, l.DUT)
}

// TestRedirectDelivered runs the generator in the gen namespace (its
// program redirects into gen0) and checks, with veth's counters,
// that every frame reached dut0. This is what needs GRO on the DUT end (or an
// XDP program there): without NAPI, veth drops redirected frames.
func TestRedirectDelivered(t *testing.T) {
	for _, mode := range []testbed.NAPIMode{testbed.NAPISoftirq, testbed.NAPIAuto} {
		name := map[testbed.NAPIMode]string{testbed.NAPISoftirq: "softirq", testbed.NAPIAuto: "auto"}[mode]
		t.Run(name, func(t *testing.T) {
			bed := testbedtest.NewConfig(t, testbed.Config{Queues: 1, NAPI: mode})
			t.Logf("threaded NAPI %v %s", bed.ThreadedNAPI, bed.NAPINote)
			l := bed.Links[0]
			beforeDUT, beforeGen := counters(t, bed.DUTNS, l.DUT), counters(t, bed.GenNS, l.Gen)
			const n = 10000
			// The generator, by whichever method the kernel grants: each
			// reaches gen0 by XDP redirect (ndo_xdp_xmit).
			var st gen.Stats
			err := bed.InGen(func() (err error) {
				st, err = gen.Run(context.Background(), gen.Config{
					Ifindex: l.GenIndex, Count: n, Threads: 1,
					Frame: packet.UDPConfig{SrcMAC: l.GenMAC, DstMAC: l.DUTMAC,
						SrcIP: netip.MustParseAddr(l.GenIP.String()), DstIP: netip.MustParseAddr(l.DUTIP.String()),
						SrcPort: 1234, DstPort: 9, Size: 60},
				}, nil)
				return err
			})
			if err != nil {
				t.Fatalf("run generator: %v", err)
			}
			if st.Sent != n {
				t.Fatalf("generator (method %s) sent %d, want %d", st.Method, st.Sent, n)
			}
			gen := counters(t, bed.GenNS, l.Gen)
			queued := gen.TxXDPXmit - beforeGen.TxXDPXmit
			refused := gen.TxXDPXmitErrors - beforeGen.TxXDPXmitErrors
			// NAPI may still be working through the ring.
			var dut netdev.VethQueue
			for range 100 {
				dut = counters(t, bed.DUTNS, l.DUT)
				if dut.RxPackets-beforeDUT.RxPackets >= queued {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			received := dut.RxPackets - beforeDUT.RxPackets
			t.Logf("sent %d: %s queued %d, refused %d (ring full); %s received %d", n, l.Gen, queued, refused, l.DUT, received)
			// The accounting closes: every frame is received or counted as refused.
			if queued+refused != n || received != queued {
				t.Errorf("sent %d = queued %d + refused %d, received %d: does not add up", n, queued, refused, received)
			}
			// In softirq mode NAPI drains the ring on the sending CPU after
			// every batch, so nothing is refused.
			if !bed.ThreadedNAPI && refused != 0 {
				t.Errorf("softirq NAPI: %d frames refused, want 0", refused)
			}
		})
	}
}

// counters sums veth's queue counters of dev in namespace ns.
func counters(t *testing.T, ns, dev string) netdev.VethQueue {
	t.Helper()
	var qs []netdev.VethQueue
	if err := testbed.Do(ns, func() (err error) { qs, err = netdev.VethQueueCounters(dev); return err }); err != nil {
		t.Fatal(err)
	}
	return netdev.SumVethQueues(qs)
}

// TestGenRPS checks that a bed made with GenRPS steers what each generator
// end receives to the generator CPUs, on every receive queue.
func TestGenRPS(t *testing.T) {
	privtest.Root(t)
	online, err := cpuset.Online()
	if err != nil {
		t.Fatal(err)
	}
	bed := testbedtest.NewConfig(t, testbed.Config{Queues: 2, Links: 2, GenCPUs: online[:1], DUTCPUs: online[len(online)-1:], GenRPS: true})
	if !bed.GenRPS {
		t.Fatal("bed.GenRPS not set")
	}
	want := fmt.Sprintf("%x", 1<<online[0])
	for _, l := range bed.Links {
		for q := 0; q < 2; q++ {
			p := fmt.Sprintf("/sys/class/net/%s/queues/rx-%d/rps_cpus", l.Gen, q)
			out, err := exec.Command("ip", "netns", "exec", bed.GenNS, "cat", p).CombinedOutput()
			if err != nil {
				t.Fatalf("read %s: %v: %s", p, err, out)
			}
			if got := strings.TrimLeft(strings.TrimSpace(string(out)), "0,"); got != want {
				t.Errorf("%s = %q, want CPU mask %s", p, strings.TrimSpace(string(out)), want)
			}
		}
	}
}

// TestFindInterface: a bed's interfaces are found in its namespaces, from
// the generator's namespace as from here, and a name no bed has is not.
func TestFindInterface(t *testing.T) {
	bed := testbedtest.New(t, 1, 2)
	has := func(places []testbed.Place, ns string, same bool) bool {
		return slices.Contains(places, testbed.Place{Bed: bed.Name, Namespace: ns, SameBed: same})
	}
	places, err := testbed.FindInterface("dut1")
	if err != nil || !has(places, bed.DUTNS, false) || has(places, bed.GenNS, false) {
		t.Errorf("FindInterface(dut1) = %+v, %v; want %s among them, not %s", places, err, bed.DUTNS, bed.GenNS)
	}
	if err := bed.InGen(func() error {
		places, err := testbed.FindInterface("dut0")
		if err != nil || !has(places, bed.DUTNS, true) {
			return fmt.Errorf("FindInterface(dut0) = %+v, %v; want %s, the same bed", places, err, bed.DUTNS)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	if places, err := testbed.FindInterface("xdpeng-none0"); err != nil || len(places) != 0 {
		t.Errorf("FindInterface(xdpeng-none0) = %+v, %v; want none", places, err)
	}
}
