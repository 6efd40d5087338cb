//go:build linux

package engine_test

import (
	"bytes"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/engine/handler"
	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/lab/gen"
	"github.com/xdpeng/xdpeng/internal/lab/testbed"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
)

// packetSocket is an AF_PACKET socket on the generator end of a bed's link:
// it captures what arrives there and injects frames that the generator
// cannot make (TCP, ICMP, non-IP).
type packetSocket struct {
	fd      int
	ifindex int
}

// openPacketSocket opens the socket inside the generator namespace (a
// socket belongs to the namespace it was created in, whichever thread uses
// it later) and binds it to the link's generator end. It is closed when
// the test ends.
func openPacketSocket(t *testing.T, bed *testbed.Bed, link int) *packetSocket {
	t.Helper()
	l := bed.Links[link]
	p := &packetSocket{fd: -1, ifindex: l.GenIndex}
	err := bed.InGen(func() error {
		proto := int(htons(unix.ETH_P_ALL))
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
		if err != nil {
			return err
		}
		p.fd = fd
		// Room for a whole run of small frames (each costs a few hundred
		// bytes of skb truesize), so that the capture drops nothing even
		// if the reader falls behind.
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 256<<20); err != nil {
			return err
		}
		tv := unix.NsecToTimeval(int64(100 * time.Millisecond))
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: l.GenIndex})
	})
	if p.fd >= 0 {
		t.Cleanup(func() { unix.Close(p.fd) })
	}
	if err != nil {
		t.Fatalf("AF_PACKET socket on %s: %v", l.Gen, err)
	}
	return p
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// send injects frames out of the link's generator end, pausing now and
// then: veth without a qdisc drops what its peer's ring cannot take.
func (p *packetSocket) send(t *testing.T, frames ...[]byte) {
	t.Helper()
	to := &unix.SockaddrLinklayer{Ifindex: p.ifindex}
	for i, f := range frames {
		for {
			err := unix.Sendto(p.fd, f, 0, to)
			if err == nil {
				break
			}
			if !errors.Is(err, unix.ENOBUFS) && !errors.Is(err, unix.EAGAIN) {
				t.Fatalf("inject frame %d: %v", i, err)
			}
			time.Sleep(time.Millisecond)
		}
		if i%32 == 31 {
			time.Sleep(200 * time.Microsecond)
		}
	}
}

// capture collects the frames that arrive on a link's generator end (not
// those it sends).
type capture struct {
	p      *packetSocket
	mu     sync.Mutex
	frames [][]byte
	quit   chan struct{}
	done   chan error
}

// capture starts collecting; call stop to end it.
func (p *packetSocket) capture() *capture {
	c := &capture{p: p, quit: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		buf := make([]byte, 65536)
		for {
			n, from, err := unix.Recvfrom(p.fd, buf, 0)
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				// The socket has been empty for a receive timeout.
				select {
				case <-c.quit:
					c.done <- nil
					return
				default:
					continue
				}
			}
			if err != nil {
				c.done <- err
				return
			}
			if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
				continue
			}
			c.mu.Lock()
			c.frames = append(c.frames, append([]byte(nil), buf[:n]...))
			c.mu.Unlock()
		}
	}()
	return c
}

// len is the number of frames captured so far.
func (c *capture) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.frames)
}

// waitFor waits until n frames are captured or none has arrived for a
// while.
func (c *capture) waitFor(n int) {
	last, idle := -1, 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		got := c.len()
		if got >= n {
			return
		}
		if got == last {
			if idle++; idle > 10 {
				return
			}
		} else {
			idle = 0
		}
		last = got
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the capture once the socket is drained and returns the frames
// and the kernel's count of frames the socket dropped.
func (c *capture) stop(t *testing.T) ([][]byte, uint32) {
	t.Helper()
	close(c.quit)
	if err := <-c.done; err != nil {
		t.Fatalf("capture: %v", err)
	}
	st, err := unix.GetsockoptTpacketStats(c.p.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		t.Fatalf("PACKET_STATISTICS: %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.frames, st.Drops
}

// TestL2FwdReflects runs l2fwd on the DUT and checks that every frame the
// generator sent either came back to the generator end, byte for byte with
// its MAC addresses swapped, or is a counted drop.
func TestL2FwdReflects(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	const count = 50_000
	frame := packet.UDPConfig{
		SrcMAC: l.GenMAC, DstMAC: l.DUTMAC,
		SrcIP: netip.MustParseAddr(l.GenIP.String()), DstIP: netip.MustParseAddr(l.DUTIP.String()),
		SrcPort: 1234, DstPort: 9, Size: 64, Fill: 0xa5,
	}
	want := make([]byte, frame.Size)
	if _, err := packet.BuildUDP(want, frame); err != nil {
		t.Fatal(err)
	}
	packet.SwapMACs(want)

	ps := openPacketSocket(t, bed, 0)
	capt := ps.capture()
	cfg := rxdropConfig(bed)
	cfg.Handler = func(int) engine.Handler { return handler.L2Fwd{} }
	// Deep rings, so that a worker that loses its CPU for a while on a
	// busy machine does not turn the run into a test of the drop counters.
	cfg.FillSize, cfg.RxSize = 8192, 8192
	r := start(t, bed, cfg)
	st := send(t, bed, 0, gen.Config{Frame: frame, Count: count, Rate: count, Threads: 1})
	if st.Sent != count {
		t.Fatalf("generator sent %d, want %d", st.Sent, count)
	}
	s := r.finish(count)
	tot := s.Total()

	// The frames the engine completed may still be on their way.
	capt.waitFor(int(tot.TxPackets))
	got, drops := capt.stop(t)

	t.Logf("sent %d: rx %d, tx completed %d, tx ring full %d, dropped %d, socket drops %d (%+v), veth xmit errors %d; captured %d (capture drops %d)",
		st.Sent, tot.RxPackets, tot.TxPackets, tot.TxRingFull, tot.Dropped, tot.XDP.Drops(), tot.XDP, st.Errors, len(got), drops)
	if sum := tot.TxPackets + tot.TxRingFull + tot.Dropped + tot.XDP.Drops() + st.Errors; sum != st.Sent {
		t.Errorf("sent %d != tx completed %d + tx ring full %d + dropped %d + socket drops %d + veth xmit errors %d = %d",
			st.Sent, tot.TxPackets, tot.TxRingFull, tot.Dropped, tot.XDP.Drops(), st.Errors, sum)
	}
	if tot.RxPackets != tot.TxPackets+tot.TxRingFull+tot.Dropped {
		t.Errorf("rx %d != tx %d + tx ring full %d + dropped %d", tot.RxPackets, tot.TxPackets, tot.TxRingFull, tot.Dropped)
	}
	if drops != 0 {
		t.Errorf("the capture socket dropped %d frames", drops)
	}
	if uint64(len(got)) != tot.TxPackets {
		t.Errorf("captured %d frames on %s, the engine completed %d", len(got), l.Gen, tot.TxPackets)
	}
	bad := 0
	for i, f := range got {
		if !bytes.Equal(f, want) {
			if bad++; bad <= 3 {
				t.Errorf("frame %d came back as\n% x\nwant\n% x", i, f, want)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d frames came back changed", bad, len(got))
	}
	// How many came back rather than being dropped depends on the
	// machine, and every drop is counted above; but frames must have come
	// back, or the checks of their bytes checked nothing.
	if tot.TxPackets == 0 {
		t.Errorf("no frame reflected (%+v)", tot)
	}
}
