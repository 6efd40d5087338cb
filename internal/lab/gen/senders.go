package gen

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/engine"
	"github.com/xdpeng/xdpeng/internal/cpuset"
)

// sender transmits frames into the relay from one CPU: send returns when n
// frames were accepted (0: until ctx is done) or ctx is done, with the
// number accepted.
type sender interface {
	send(ctx context.Context, n uint64) (uint64, error)
	close() error
}

// mmsghdr is struct mmsghdr: Go pads it to its alignment as C does.
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
}

// packetBatch is the most frames one sendmmsg takes.
const packetBatch = 64

// packetSender sends with an AF_PACKET socket bound to the relay's in end:
// one sendmmsg a batch, the queueing discipline bypassed, so that veth gets
// each frame on the sending CPU's transmit queue (cpu modulo its queues).
// A frame veth refuses (its peer's ring is full) fails sendmmsg with
// ENOBUFS and is sent again: what is accepted reaches the program.
type packetSender struct {
	fd      int
	cpu     int
	frame   []byte
	iov     unix.Iovec
	msgs    [packetBatch]mmsghdr
	perNs   uint64 // ns between frames, 0: unpaced
	next    int64  // when the next frame is due, CLOCK_MONOTONIC ns
	catchUp uint64 // the most frames sent at once to catch up (catchUp)
	skipped *atomic.Uint64
}

// newPacketSender makes the sender of thread cpu, paced to rate frames a
// second (0: unpaced), each of which the relay sends copies times.
func newPacketSender(r *relay, cpu int, frame []byte, rate uint64, copies int, skipped *atomic.Uint64) (*packetSender, error) {
	s := &packetSender{fd: -1, cpu: cpu, frame: frame, skipped: skipped, catchUp: catchUp(copies)}
	if rate > 0 {
		s.perNs = (uint64(time.Second) + rate - 1) / rate
	}
	err := r.do(func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return &RefusedError{Packet, "an AF_PACKET socket", err}
		}
		s.fd = fd
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: r.in}); err != nil {
			return fmt.Errorf("bind an AF_PACKET socket to %s: %w", relayIn, err)
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); err != nil {
			return fmt.Errorf("AF_PACKET PACKET_QDISC_BYPASS: %w", err)
		}
		return nil
	})
	if err != nil {
		s.close()
		return nil, fmt.Errorf("gen: %w", err)
	}
	s.iov.Base = &frame[0]
	s.iov.SetLen(len(frame))
	for i := range s.msgs {
		s.msgs[i].hdr.Iov = &s.iov
		s.msgs[i].hdr.SetIovlen(1)
	}
	return s, nil
}

func (s *packetSender) close() error {
	if s.fd < 0 {
		return nil
	}
	err := unix.Close(s.fd)
	s.fd = -1
	return err
}

func monoNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// send runs on the caller's thread, which runWorker pinned to s.cpu.
func (s *packetSender) send(ctx context.Context, n uint64) (uint64, error) {
	var sent uint64
	stop := ctx.Done()
	for i := 0; ; i++ {
		if n > 0 && sent >= n {
			return sent, nil
		}
		if i&63 == 0 {
			select {
			case <-stop:
				return sent, nil
			default:
			}
		}
		want := uint64(packetBatch)
		if n > 0 {
			want = min(want, n-sent)
		}
		if s.perNs > 0 {
			now := monoNow()
			if s.next == 0 {
				s.next = now
			}
			if now < s.next {
				sleepNs(min(s.next-now, int64(time.Millisecond)))
				continue
			}
			// Catch up on at most 256 frames on the wire; further
			// behind, start afresh and count what was owed, as the
			// live program does.
			owed := uint64(now-s.next)/s.perNs + 1
			if owed > s.catchUp {
				s.skipped.Add(owed - 1)
				s.next, owed = now, 1
			}
			want = min(want, owed)
		}
		r1, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(s.fd), uintptr(unsafe.Pointer(&s.msgs[0])), uintptr(want), 0, 0, 0)
		runtime.KeepAlive(s)
		if errno != 0 {
			switch errno {
			case unix.ENOBUFS, unix.EAGAIN, unix.EINTR:
				// veth's ring is full: let the relay catch up.
				sleepNs(20_000)
				continue
			}
			return sent, fmt.Errorf("gen: AF_PACKET send on CPU %d after %d frames: %w", s.cpu, sent, errno)
		}
		sent += uint64(r1)
		if s.perNs > 0 {
			s.next += int64(r1 * uintptr(s.perNs))
		}
	}
}

// sleepNs sleeps the thread (not the goroutine: the thread is pinned and
// sends nothing else) for about d ns.
func sleepNs(d int64) {
	ts := unix.NsecToTimespec(d)
	_ = unix.Nanosleep(&ts, nil)
}

// xskSender sends with an engine.Generator bound to the relay's in end,
// queue cpu, its worker pinned to cpu.
type xskSender struct {
	r      *relay
	cpu    int
	frame  []byte
	rate   uint64
	copies int // the relay sends each frame this many times
}

func (s *xskSender) close() error { return nil }

func (s *xskSender) send(ctx context.Context, n uint64) (uint64, error) {
	gc := engine.DefaultGeneratorConfig()
	gc.Interface = relayIn
	gc.Queues = []int{s.cpu}
	gc.CPUs = []int{s.cpu}
	gc.Frames = [][]byte{s.frame}
	gc.Count = n
	gc.Rate = s.rate
	if s.rate > 0 {
		// The pacer catches up a batch at most: no more than 256
		// frames on the wire after the relay's copies.
		gc.Batch = int(catchUp(s.copies))
	}
	gc.BindMode = engine.BindCopy
	if len(s.frame) > int(gc.FrameSize) {
		gc.FrameSize = 4096
	}
	var g *engine.Generator
	err := s.r.do(func() (err error) {
		g, err = engine.NewGenerator(gc)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("gen: AF_XDP generator on %s queue %d: %w", relayIn, s.cpu, err)
	}
	defer g.Close()
	err = g.Run(ctx)
	snap, serr := g.Stats()
	var sent uint64
	if serr == nil {
		sent = snap.Total().TxPackets
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return sent, fmt.Errorf("gen: AF_XDP generator on CPU %d: %w", s.cpu, err)
	}
	return sent, nil
}

// runRelayed sends w's share through s: until its count is reached as the
// program counts it (frames lost on the way are sent again), or ctx is
// done.
func (w *worker) runRelayed(ctx context.Context, prog *program, s sender) error {
	if err := cpuset.Pin(w.cpu); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	// Short sleeps for pacing: the default slack (50 us) would make them
	// long ones.
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	defer s.close()
	var counted uint64
	for ctx.Err() == nil {
		var n uint64
		if w.count > 0 {
			if counted >= w.count {
				return nil
			}
			n = w.count - counted
			// The relay sends each frame w.copies times while the
			// copies fit in the count (the program's limit), then
			// single frames.
			if n >= w.copies {
				n /= w.copies
			}
		}
		if _, err := s.send(ctx, n); err != nil {
			return err
		}
		was := counted
		var err error
		if counted, err = prog.settle(w.cpu); err != nil {
			return err
		}
		w.sent.Store(counted)
		if w.count == 0 || ctx.Err() != nil {
			return nil
		}
		if counted == was {
			return fmt.Errorf("gen: the relay's program on CPU %d counted none of the frames sent to it", w.cpu)
		}
	}
	return nil
}

// settle waits until the program's count for cpu stops moving (the relay
// has relayed what it was given) and returns it.
func (p *program) settle(cpu int) (uint64, error) {
	var last uint64
	stable := 0
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		counts, err := p.counts()
		if err != nil {
			return 0, err
		}
		var c uint64
		if cpu < len(counts) {
			c = counts[cpu]
		}
		if c == last {
			if stable++; stable >= 10 {
				return c, nil
			}
		} else {
			last, stable = c, 0
		}
		time.Sleep(200 * time.Microsecond)
	}
	return last, nil
}
