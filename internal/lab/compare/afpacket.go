//go:build linux

package compare

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/internal/cpuset"
)

// The TPACKET_V3 ring: blocks of 1 MiB, which the kernel fills with as
// many frames as fit and hands over whole (or after retireTimeoutMs).
const (
	tpBlockSize        = 1 << 20
	tpBlockNr          = 64
	tpFrameSize        = 2048
	tpRetireTimeout    = 10 // ms
	afPacketPollMs     = 100
	tpStatusKernel     = 0
	blockStatusOffset  = 8 // tpacket_block_desc: version, offset_to_priv, then hdr.block_status
	blockNumPktsOffset = 12
)

// afPacketRunner reads the DUT interface with an AF_PACKET socket and a
// TPACKET_V3 mmap ring: the kernel's own zero-syscall-per-packet capture
// path, which sees frames after the driver built skbs for them. Dropping
// is counting each block's packets and handing the block back.
type afPacketRunner struct {
	e    *env
	fd   int
	ring []byte

	stopping atomic.Bool
	wg       sync.WaitGroup
	received atomic.Uint64
	loopErr  atomic.Pointer[error]

	statsMu sync.Mutex
	drops   uint64 // PACKET_STATISTICS resets on read: the running sum
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func (r *afPacketRunner) start(context.Context) error {
	r.fd = -1
	err := r.e.inDUT(func() (err error) {
		// Protocol 0: nothing is queued to the socket until bind, after
		// the ring exists.
		if r.fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0); err != nil {
			r.fd = -1
			return fmt.Errorf("AF_PACKET socket: %w", err)
		}
		if err := unix.SetsockoptInt(r.fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
			return fmt.Errorf("AF_PACKET: TPACKET_V3: %w", err)
		}
		// Only received frames: the stack's replies (ICMP port
		// unreachable) going out would be counted otherwise. Best
		// effort: Linux 4.20+.
		_ = unix.SetsockoptInt(r.fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
		req := unix.TpacketReq3{
			Block_size: tpBlockSize, Block_nr: tpBlockNr,
			Frame_size: tpFrameSize, Frame_nr: tpBlockSize / tpFrameSize * tpBlockNr,
			Retire_blk_tov: tpRetireTimeout,
		}
		if err := unix.SetsockoptTpacketReq3(r.fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
			return fmt.Errorf("AF_PACKET: PACKET_RX_RING: %w", err)
		}
		if r.ring, err = unix.Mmap(r.fd, 0, tpBlockSize*tpBlockNr, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
			return fmt.Errorf("AF_PACKET: mmap ring: %w", err)
		}
		sa := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: r.e.dutIndex}
		if err := unix.Bind(r.fd, sa); err != nil {
			return fmt.Errorf("AF_PACKET: bind to %s: %w", r.e.dut, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if err := r.loop(r.e.cpus[0]); err != nil {
			r.loopErr.Store(&err)
		}
	}()
	return nil
}

func (r *afPacketRunner) loop(cpu int) error {
	if err := cpuset.Pin(cpu); err != nil {
		return err
	}
	pfd := []unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN | unix.POLLERR}}
	for blk := 0; !r.stopping.Load(); {
		off := blk * tpBlockSize
		status := blockWord(r.ring, off+blockStatusOffset)
		if status.Load()&unix.TP_STATUS_USER == 0 {
			if _, err := unix.Poll(pfd, afPacketPollMs); err != nil && !errors.Is(err, unix.EINTR) {
				return fmt.Errorf("AF_PACKET poll: %w", err)
			}
			continue
		}
		r.received.Add(uint64(blockWord(r.ring, off+blockNumPktsOffset).Load()))
		status.Store(tpStatusKernel)
		blk = (blk + 1) % tpBlockNr
	}
	return nil
}

func (r *afPacketRunner) sample() (s sample, err error) {
	if p := r.loopErr.Load(); p != nil {
		return s, *p
	}
	st, err := unix.GetsockoptTpacketStatsV3(r.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		return s, fmt.Errorf("AF_PACKET statistics: %w", err)
	}
	r.statsMu.Lock()
	r.drops += uint64(st.Drops)
	drops := r.drops
	r.statsMu.Unlock()
	s.received = r.received.Load()
	s.reasons = map[string]uint64{"ring_full": drops}
	if v, ok := r.e.vethRx(); ok {
		s.reasons["veth_rx_drops"] = v.RxDrops
	}
	return s, nil
}

func (r *afPacketRunner) stop() error {
	r.stopping.Store(true)
	r.wg.Wait()
	var errs []error
	if r.ring != nil {
		errs = append(errs, unix.Munmap(r.ring))
		r.ring = nil
	}
	if r.fd >= 0 {
		errs = append(errs, unix.Close(r.fd))
		r.fd = -1
	}
	return errors.Join(errs...)
}

func (r *afPacketRunner) countedAt() string { return "packets in the TPACKET_V3 blocks read" }
func (r *afPacketRunner) copies() int       { return 1 }
func (r *afPacketRunner) xdpMode() string   { return "none (AF_PACKET)" }
