//go:build linux

package compare

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asavie/xdp"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/internal/cpuset"
	"github.com/xdpeng/xdpeng/internal/hook"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// asavieOptions give asavie/xdp as many frames and as large rings as our
// engine has (its defaults, 128 frames and rings of 64, would starve it),
// and the same 2048-byte frames (its default and ours), so that the
// comparison is of the loop, not of the geometry.
var asavieOptions = xdp.SocketOptions{
	NumFrames:              4096,
	FrameSize:              2048,
	FillRingNumDescs:       2048,
	CompletionRingNumDescs: 2048,
	RxRingNumDescs:         2048,
	TxRingNumDescs:         0, // rxdrop never transmits
}

// asaviePollMs bounds the loop's poll() so that a stop is seen; the
// library's examples block forever (-1).
const asaviePollMs = 100

// asavieRunner is rxdrop written on github.com/asavie/xdp v0.3.3 the way
// its examples do it: one socket per queue, its own XDP program, and its
// default loop (Fill(GetDescs(NumFreeFillSlots())), Poll, Receive), one
// goroutine per queue pinned like the engine's workers.
//
// Its program is attached through our bpf_link (native mode, which is what
// the library's netlink attach with flags 0 picks on veth) rather than
// Program.Attach: the program and what it does per packet are the
// library's, but the kernel then detaches it on every exit, kill -9
// included, and a program someone else attached is refused, not silently
// removed as Program.Attach does.
type asavieRunner struct {
	e     *env
	prog  *xdp.Program
	att   io.Closer
	socks []*xdp.Socket
	inos  []uint64 // socket inodes, to find their ring mappings

	stopping atomic.Bool
	wg       sync.WaitGroup
	counts   []asavieCounters
	errMu    sync.Mutex
	err      error
}

// asavieCounters are one queue's, written by its loop.
type asavieCounters struct {
	received atomic.Uint64
	drops    atomic.Uint64 // XDP_STATISTICS rx_dropped + rx_ring_full
	_        [48]byte
}

func (r *asavieRunner) start(context.Context) error {
	err := r.e.inDUT(func() (err error) {
		if cur, err := netdev.XDPAttached(r.e.dutIndex); err == nil && cur.ProgID != 0 {
			return fmt.Errorf("%s already has XDP program id %d attached", r.e.dut, cur.ProgID)
		}
		maxQ := 0
		for _, q := range r.e.queues {
			maxQ = max(maxQ, q)
		}
		if r.prog, err = xdp.NewProgram(maxQ + 1); err != nil {
			return fmt.Errorf("asavie/xdp: %w", err)
		}
		for _, q := range r.e.queues {
			s, err := newAsavieSocket(r.e.dutIndex, q)
			if err != nil {
				return fmt.Errorf("asavie/xdp: queue %d: %w", q, err)
			}
			r.socks = append(r.socks, s)
			var st unix.Stat_t
			if err := unix.Fstat(s.FD(), &st); err != nil {
				return fmt.Errorf("stat AF_XDP socket: %w", err)
			}
			r.inos = append(r.inos, st.Ino)
			if err := r.prog.Register(q, s.FD()); err != nil {
				return fmt.Errorf("asavie/xdp: queue %d: %w", q, err)
			}
		}
		r.att, err = hook.AttachXDP(r.prog.Program, r.e.dutIndex, hook.Native, netdev.ReplaceNone)
		return err
	})
	if err != nil {
		return err
	}
	r.counts = make([]asavieCounters, len(r.socks))
	for i, s := range r.socks {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			if err := r.loop(s, r.e.cpus[i], &r.counts[i]); err != nil {
				r.errMu.Lock()
				r.err = errors.Join(r.err, fmt.Errorf("queue %d: %w", r.e.queues[i], err))
				r.errMu.Unlock()
			}
		}()
	}
	return nil
}

// loop is the library's receive loop, as in its dumpframes example, with a
// drop instead of a dump.
func (r *asavieRunner) loop(s *xdp.Socket, cpu int, c *asavieCounters) error {
	if err := cpuset.Pin(cpu); err != nil {
		return err
	}
	for i := 0; !r.stopping.Load(); i++ {
		s.Fill(s.GetDescs(s.NumFreeFillSlots()))
		n, _, err := s.Poll(asaviePollMs)
		if err != nil {
			return fmt.Errorf("asavie/xdp poll: %w", err)
		}
		if n > 0 {
			c.received.Add(uint64(len(s.Receive(n))))
		}
		// Its statistics read ring pointers without synchronisation, so
		// only this goroutine calls it: now and then under load, and
		// whenever idle, so that a drained run's drops are up to date.
		if n == 0 || i%256 == 0 {
			r.publish(s, c)
		}
	}
	r.publish(s, c)
	return nil
}

func (r *asavieRunner) publish(s *xdp.Socket, c *asavieCounters) {
	if st, err := s.Stats(); err == nil {
		c.drops.Store(st.KernelStats.Rx_dropped + st.KernelStats.Rx_ring_full)
	}
}

func (r *asavieRunner) sample() (s sample, err error) {
	r.errMu.Lock()
	err = r.err
	r.errMu.Unlock()
	if err != nil {
		return s, err
	}
	var drops uint64
	for i := range r.counts {
		s.received += r.counts[i].received.Load()
		drops += r.counts[i].drops.Load()
	}
	s.reasons = map[string]uint64{"socket_drops": drops}
	if v, ok := r.e.vethRx(); ok {
		// As for xsk-drop: veth's rx drops include the socket's.
		s.reasons["veth_rx_drops"] = v.RxDrops
		s.include("veth_rx_drops", "socket_drops")
	}
	return s, r.e.traceReasons(&s, true)
}

func (r *asavieRunner) stop() error {
	r.stopping.Store(true)
	r.wg.Wait()
	var errs []error
	if r.att != nil {
		errs = append(errs, r.att.Close())
		r.att = nil
	}
	for i, s := range r.socks {
		errs = append(errs, s.Close())
		// Socket.Close unmaps the UMEM but not the four rings, and each
		// mapping holds the socket open, bound to its queue: unmap them.
		errs = append(errs, unmapSocket(r.inos[i]))
	}
	r.socks = nil
	if r.prog != nil {
		errs = append(errs, r.prog.Close())
		r.prog = nil
	}
	return errors.Join(errs...)
}

func (r *asavieRunner) countedAt() string { return "frames its loop took from the rx ring" }
func (r *asavieRunner) copies() int       { return 1 }

// newAsavieSocket is xdp.NewSocket, retried for a while when the queue is
// busy: the kernel releases a closed socket's queue from a workqueue, so a
// queue the previous path just left can look taken for a moment (xdpeng's
// own bind retries the same way). The library leaves a failed socket's
// rings mapped, which keeps that socket alive: those mappings are removed
// before the next try.
func newAsavieSocket(ifindex, queue int) (*xdp.Socket, error) {
	deadline := time.Now().Add(time.Second)
	for {
		before, err := mappedSockets()
		if err != nil {
			return nil, err
		}
		opts := asavieOptions
		s, err := xdp.NewSocket(ifindex, queue, &opts)
		if err == nil {
			return s, nil
		}
		after, merr := mappedSockets()
		if merr != nil {
			return nil, errors.Join(err, merr)
		}
		for ino := range after {
			if !before[ino] {
				if uerr := unmapSocket(ino); uerr != nil {
					return nil, errors.Join(err, uerr)
				}
			}
		}
		if !strings.Contains(err.Error(), unix.EBUSY.Error()) || time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mappedSockets returns the inodes of the sockets with memory mapped in
// this process.
func mappedSockets() (map[uint64]bool, error) {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return nil, fmt.Errorf("read /proc/self/maps: %w", err)
	}
	inos := map[uint64]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		i := strings.LastIndex(line, "socket:[")
		if i < 0 || !strings.HasSuffix(line, "]") {
			continue
		}
		if ino, err := strconv.ParseUint(line[i+len("socket:["):len(line)-1], 10, 64); err == nil {
			inos[ino] = true
		}
	}
	return inos, nil
}

// unmapSocket unmaps every mapping of this process backed by the socket
// with inode ino ("socket:[ino]" in /proc/self/maps).
func unmapSocket(ino uint64) error {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return fmt.Errorf("find socket mappings: %w", err)
	}
	want := "socket:[" + strconv.FormatUint(ino, 10) + "]"
	type area struct{ start, end uintptr }
	var areas []area
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasSuffix(line, want) {
			continue
		}
		lo, hi, _ := strings.Cut(strings.Fields(line)[0], "-")
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		areas = append(areas, area{uintptr(a), uintptr(b)})
	}
	f.Close()
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read /proc/self/maps: %w", err)
	}
	var errs []error
	for _, a := range areas {
		if _, _, errno := unix.Syscall(unix.SYS_MUNMAP, a.start, a.end-a.start, 0); errno != 0 {
			errs = append(errs, fmt.Errorf("unmap socket ring at %#x: %w", a.start, errno))
		}
	}
	return errors.Join(errs...)
}

// xdpMode reads from the kernel whether the first socket got zero-copy
// (asavie/xdp binds with no copy flag, so the kernel chooses).
func (r *asavieRunner) xdpMode() string {
	if len(r.socks) == 0 {
		return ""
	}
	flags, err := unix.GetsockoptInt(r.socks[0].FD(), unix.SOL_XDP, unix.XDP_OPTIONS)
	if err != nil {
		return "native, AF_XDP (copy or zero-copy: XDP_OPTIONS unreadable)"
	}
	return xskMode("native", flags&unix.XDP_OPTIONS_ZEROCOPY != 0)
}
