//go:build linux

package xsk_test

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/lab/testbed/testbedtest"
	"github.com/xdpeng/xdpeng/internal/testutil/privtest"
	. "github.com/xdpeng/xdpeng/xsk"
)

// TestTxMetadataCopyMode sends UDP frames out of the generator end of a
// veth in copy mode, half of them asking for checksum offload and a
// completion timestamp, and checks at the other end (AF_PACKET) that the
// kernel filled the checksum of exactly those, and that their completions
// carry a CLOCK_TAI time between the send and the completion.
func TestTxMetadataCopyMode(t *testing.T) {
	bed := testbedtest.New(t, 1, 1)
	l := bed.Links[0]
	const n, headroom, basePort = 32, 256, 1000

	// The receiver, in the DUT namespace.
	rfd := -1
	if err := bed.InDUT(func() (err error) {
		rfd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return err
		}
		tv := unix.NsecToTimeval(int64(200 * time.Millisecond))
		if err := unix.SetsockoptTimeval(rfd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			return err
		}
		return unix.Bind(rfd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: l.DUTIndex})
	}); err != nil {
		t.Fatalf("AF_PACKET socket on %s: %v", l.DUT, err)
	}
	t.Cleanup(func() { unix.Close(rfd) })

	var u *Umem
	var s *Socket
	if err := bed.InGen(func() (err error) {
		if u, err = NewUmem(UmemConfig{FrameSize: 2048, NumFrames: n, TxMetadata: true, TxSoftwareChecksum: true}); err != nil {
			return err
		}
		s, err = NewSocket(u, SocketConfig{Ifindex: l.GenIndex, Queue: 0, FillSize: 1, CompletionSize: n, TxSize: n, Mode: Copy, NumFrames: n})
		return err
	}); err != nil {
		if u == nil && errors.Is(err, unix.EINVAL) {
			privtest.Unsupported(t, "%v", err)
		}
		t.Fatalf("AF_XDP socket with TX metadata on %s: %v", l.Gen, err)
	}
	t.Cleanup(func() { s.Close(); u.Close() })

	// Each frame's UDP checksum field holds the pseudo-header's sum, as
	// checksum offload wants; want is the checksum a filled one has.
	want := make(map[uint16]uint16)
	seed := make(map[uint16]uint16)
	idx, got := s.Tx.Reserve(n)
	if got != n {
		t.Fatalf("reserved %d tx slots, want %d", got, n)
	}
	for i := range uint32(n) {
		c := packet.UDPConfig{SrcMAC: l.GenMAC, DstMAC: l.DUTMAC,
			SrcIP: netip.MustParseAddr(l.GenIP.String()), DstIP: netip.MustParseAddr(l.DUTIP.String()),
			SrcPort: basePort + uint16(i), DstPort: 9, Size: 80}
		addr := uint64(i)*2048 + headroom
		f := u.Frame(addr, uint32(c.Size))
		if _, err := packet.BuildUDP(f, c); err != nil {
			t.Fatal(err)
		}
		const udpAt = 14 + 20
		want[c.SrcPort] = binary.BigEndian.Uint16(f[udpAt+6:])
		acc := packet.Sum(0, f[14+12:14+20]) + 17 + uint64(c.Size-udpAt)
		seed[c.SrcPort] = ^packet.Fold(acc)
		binary.BigEndian.PutUint16(f[udpAt+6:], seed[c.SrcPort])
		if i%2 == 0 {
			if err := u.SetTxRequest(addr, TxChecksum|TxTimestamp, udpAt, 6, 0); err != nil {
				t.Fatal(err)
			}
			s.Tx.SetOptions(idx+i, addr, uint32(c.Size), TxMetadataOption)
		} else {
			s.Tx.Set(idx+i, addr, uint32(c.Size))
		}
	}
	before := taiNow(t)
	s.Tx.Submit(n)
	var completed []uint64
	for deadline := time.Now().Add(5 * time.Second); len(completed) < n && time.Now().Before(deadline); {
		if err := s.WakeTx(); err != nil {
			t.Fatal(err)
		}
		ci, k := s.Completion.Peek(n)
		for j := range k {
			completed = append(completed, s.Completion.Addr(ci+j))
		}
		s.Completion.Release(k)
		if k == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	after := taiNow(t)
	if len(completed) != n {
		t.Fatalf("%d of %d frames completed", len(completed), n)
	}
	for _, a := range completed {
		i := (a - headroom) / 2048
		ts, ok := u.TxCompletionTimestamp(a)
		switch {
		case i%2 == 0 && (!ok || ts < before || ts > after):
			t.Errorf("frame %d asked for a completion timestamp: got %d (ok %v), want CLOCK_TAI between %d and %d", i, ts, ok, before, after)
		case i%2 == 1 && ok:
			t.Errorf("frame %d asked for no completion timestamp: got %d", i, ts)
		}
	}

	buf := make([]byte, 2048)
	seen := 0
	for seen < n {
		m, _, err := unix.Recvfrom(rfd, buf, 0)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		f := buf[:m]
		if m < 42 || binary.BigEndian.Uint16(f[12:]) != unix.ETH_P_IP || f[23] != 17 {
			continue
		}
		port := binary.BigEndian.Uint16(f[34:])
		if port < basePort || port >= basePort+n {
			continue
		}
		seen++
		check := binary.BigEndian.Uint16(f[34+6:])
		if (port-basePort)%2 == 0 && check != want[port] {
			t.Errorf("frame %d asked for checksum offload: UDP checksum %#04x, want %#04x", port-basePort, check, want[port])
		}
		if (port-basePort)%2 == 1 && check != seed[port] {
			t.Errorf("frame %d asked for no checksum offload: UDP checksum %#04x, want it left as sent (%#04x)", port-basePort, check, seed[port])
		}
	}
	if seen != n {
		t.Errorf("received %d of the %d frames", seen, n)
	}
}

func taiNow(t *testing.T) uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_TAI, &ts); err != nil {
		t.Fatal(err)
	}
	return uint64(ts.Nano())
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
