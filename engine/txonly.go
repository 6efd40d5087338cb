package engine

// The AF_XDP generator (xdpsock -t, xdpeng txonly): frames are built once
// into each socket's UMEM; the loop then only moves descriptors.

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/internal/xsk"
)

// TxOnlyConfig makes an engine a generator. Each worker owns a UMEM whose
// frames hold copies of Frames, written once before the start; it puts
// their descriptors on its tx ring in batches, kicks the kernel when it asks
// to be (in copy mode: every time, as the copy happens inside sendto), and
// counts completions. Frames go out in the order given, cycling.
//
// In the engine's statistics, TxPackets and TxBytes count completed frames
// (the kernel is done with them), not submitted ones.
type TxOnlyConfig struct {
	// Frames are the frames to send, each at most Config.FrameSize bytes.
	Frames [][]byte
	// Count is the number of frames to send in total, split exactly over
	// the queues; 0 sends until the context of Run is done.
	Count uint64
	// Rate, if not zero, is an upper bound in frames per second over all
	// queues. Each worker paces its share in bursts of at most 50 µs worth
	// of frames (and at most a batch), never catching up in a big burst.
	Rate uint64
}

func (t *TxOnlyConfig) validate(c *Config) error {
	if len(t.Frames) == 0 {
		return errors.New("txonly: no frames to send")
	}
	for i, f := range t.Frames {
		if len(f) < packet.EthHdrLen || len(f) > int(c.FrameSize) {
			return fmt.Errorf("txonly: frame %d is %d bytes: must be %d..%d (the UMEM frame size)", i, len(f), packet.EthHdrLen, c.FrameSize)
		}
	}
	if c.NumFrames != 0 && c.NumFrames < uint32(len(t.Frames)) {
		return fmt.Errorf("txonly: %d UMEM frames cannot hold the %d frame variants", c.NumFrames, len(t.Frames))
	}
	return nil
}

// UDPFrames builds ports UDP frames from c, the i-th with destination port
// c.DstPort+i: the variants a generator cycles through to spread traffic
// over RSS queues or flows.
func UDPFrames(c packet.UDPConfig, ports int) ([][]byte, error) {
	if ports < 1 || ports > 65536 {
		return nil, fmt.Errorf("%d ports: need 1..65536", ports)
	}
	frames := make([][]byte, ports)
	for i := range frames {
		v := c
		v.DstPort = c.DstPort + uint16(i)
		frames[i] = make([]byte, c.Size)
		if _, err := packet.BuildUDP(frames[i], v); err != nil {
			return nil, err
		}
	}
	return frames, nil
}

// txFrames is the number of UMEM frames of one generator socket: enough for
// every descriptor the tx and completion rings can hold at once, rounded up
// to a multiple of the variants so that frame j always holds variant j % K
// and cycling frames cycles variants.
func (c *Config) txFrames() uint32 {
	k := uint32(len(c.TxOnly.Frames))
	n := c.TxSize + c.CompletionSize
	if c.NumFrames != 0 {
		n = c.NumFrames / k * k // validate made sure it is at least k
		return n
	}
	return (n + k - 1) / k * k
}

// newTxOnly sets up a generator engine: one socket per tx queue with only a
// tx ring, no program attached.
func newTxOnly(cfg Config, info *netdev.Info) (_ *Engine, err error) {
	queues := max(info.TxQueues, info.RxQueues)
	if cfg.Queues == nil {
		for q := 0; q < info.TxQueues; q++ {
			cfg.Queues = append(cfg.Queues, q)
		}
	}
	if len(cfg.Queues) == 0 {
		return nil, fmt.Errorf("%s reports no tx queues", cfg.Interface)
	}
	for _, q := range cfg.Queues {
		if q < 0 || q >= queues {
			return nil, fmt.Errorf("queue %d does not exist on %s: it has %d queues", q, info.Name, queues)
		}
	}
	if err := cfg.resolveCPUs(); err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg, info: info}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	n := cfg.txFrames()
	for i, q := range cfg.Queues {
		// One frame more than the generator uses: the kernel wants a fill
		// ring on every socket, and this frame sits in it, unused, as the
		// socket has no rx ring.
		u, err := xsk.NewUmem(xsk.UmemConfig{FrameSize: cfg.FrameSize, NumFrames: n + outFrames})
		if err != nil {
			return nil, fmt.Errorf("queue %d: %w", q, err)
		}
		e.umems = append(e.umems, u)
		writeTxFrames(u, cfg.TxOnly.Frames, n)
		s, err := xsk.NewSocket(u, xsk.SocketConfig{
			Ifindex:        info.Index,
			Queue:          q,
			FillSize:       outFillSize,
			CompletionSize: cfg.CompletionSize,
			TxSize:         cfg.TxSize,
			Mode:           cfg.BindMode,
			NeedWakeup:     cfg.NeedWakeup,
			FirstFrame:     n,
			NumFrames:      outFrames,
		})
		if err != nil {
			return nil, fmt.Errorf("queue %d: %w", q, err)
		}
		w := newWorker(q, cfg.CPUs[i], s, DropHandler{}, &cfg)
		w.tx = newTxGen(&cfg, i, n)
		e.workers = append(e.workers, w)
		if cfg.Wait == WaitBusyPoll {
			if err := s.SetBusyPoll(cfg.BusyPollUsecs, cfg.BusyPollBudget); err != nil {
				return nil, fmt.Errorf("queue %d: %w", q, err)
			}
		}
	}
	return e, nil
}

// writeTxFrames writes variant j % len(frames) into frame j of u's first n
// frames.
func writeTxFrames(u *xsk.Umem, frames [][]byte, n uint32) {
	fs := uint64(u.FrameSize())
	for j := uint32(0); j < n; j++ {
		f := frames[int(j)%len(frames)]
		copy(u.Frame(uint64(j)*fs, uint32(len(f))), f)
	}
}

// txGen is a generator worker's state.
type txGen struct {
	frames  uint32   // UMEM frames in use, a multiple of len(lens)
	next    uint32   // frame of the next descriptor
	variant uint32   // next % len(lens), kept to avoid a division per frame
	lens    []uint32 // length of each variant
	shift   uint     // log2 of the frame size
	limited bool     // send left frames, then stop
	left    uint64
	pace    pacer
	clock   clock
}

// clock is how a generator worker reads the time and waits: the pacer's
// time source, replaced in tests so that pacing is checked without the
// wall clock.
type clock interface {
	Now() time.Time
	Sleep(time.Duration)
}

// wallClock is the clock of a running engine.
type wallClock struct{}

func (wallClock) Now() time.Time        { return time.Now() }
func (wallClock) Sleep(d time.Duration) { time.Sleep(d) }

// newTxGen gives worker i of cfg's its share of the count and rate.
func newTxGen(cfg *Config, i int, frames uint32) *txGen {
	t := cfg.TxOnly
	nq := uint64(len(cfg.Queues))
	g := &txGen{frames: frames, limited: t.Count > 0, clock: wallClock{}}
	for _, f := range t.Frames {
		g.lens = append(g.lens, uint32(len(f)))
	}
	for fs := cfg.FrameSize; fs > 1; fs >>= 1 {
		g.shift++
	}
	if g.limited {
		g.left = t.Count / nq
		if uint64(i) < t.Count%nq {
			g.left++
		}
	}
	if t.Rate > 0 {
		g.pace = newPacer(float64(t.Rate)/float64(nq), cfg.Batch)
	}
	return g
}

// pacer is a token bucket: credit grows with time at the rate and is
// capped at a small burst, so that a worker that fell behind does not catch
// up at once. A sleep may overshoot (timer slack: about 1 ms here); what
// fell due during it may go at once, up to a batch, or sleeping would
// lower the rate.
type pacer struct {
	perNs  float64 // frames per nanosecond; 0 means unpaced
	burst  float64 // credit cap between sleeps
	batch  float64 // credit cap after a long gap
	credit float64
	last   time.Time
}

// paceBurst is how much time's worth of frames a paced worker sends at once.
const paceBurst = 50 * time.Microsecond

func newPacer(rate float64, batch int) pacer {
	burst := math.Max(1, math.Min(float64(batch), rate*paceBurst.Seconds()))
	return pacer{perNs: rate / 1e9, burst: burst, batch: math.Max(burst, float64(batch)), credit: 1}
}

// allow returns how many of want frames may go now.
func (p *pacer) allow(now time.Time, want uint32) uint32 {
	if p.last.IsZero() {
		p.last = now
	}
	due := float64(now.Sub(p.last)) * p.perNs
	p.last = now
	p.credit = math.Min(math.Max(p.burst, math.Min(due, p.batch)), p.credit+due)
	if c := uint32(p.credit); c < want {
		return c
	}
	return want
}

func (p *pacer) spend(n uint32) { p.credit -= float64(n) }

// wait is how long until the next frame may go.
func (p *pacer) wait() time.Duration {
	return time.Duration((1 - p.credit) / p.perNs)
}

// runTxOnly is a generator worker's loop; it returns when the worker has
// sent its share and seen it completed, or when stop is set.
func (w *Worker) runTxOnly(stop *atomic.Bool) error {
	g := w.tx
	spins := 0
	for !stop.Load() {
		if g.limited && g.left == 0 {
			break
		}
		var now time.Time
		if g.pace.perNs != 0 {
			now = g.clock.Now()
		}
		sent := w.txBatch(now)
		done := w.txComplete()
		if sent > 0 || done > 0 {
			spins = 0
			if w.c.batches&15 == 0 {
				w.publish()
			}
			continue
		}
		if err := w.txIdle(&spins); err != nil {
			return err
		}
	}
	// Wait for what is in flight, so that the totals include it, as long
	// as completions keep coming (a descriptor the kernel found invalid is
	// never completed).
	grace := time.Second
	if stop.Load() {
		grace = 100 * time.Millisecond // stopped from outside: be quick
	}
	for deadline := g.clock.Now().Add(grace); w.txOutstanding > 0 && g.clock.Now().Before(deadline); {
		w.kickTx(w.sock)
		if w.txComplete() > 0 {
			deadline = g.clock.Now().Add(grace)
			continue
		}
		g.clock.Sleep(100 * time.Microsecond)
	}
	w.publish()
	return nil
}

// txBatch puts up to a batch of descriptors on the tx ring and kicks the
// kernel if it asks for it.
func (w *Worker) txBatch(now time.Time) uint32 {
	g, s := w.tx, w.sock
	n := w.batchSize
	if g.limited && uint64(n) > g.left {
		n = uint32(g.left)
	}
	// Never more descriptors in flight than frames: each one in flight
	// has a frame of its own.
	if free := g.frames - w.txOutstanding; n > free {
		n = free
	}
	if g.pace.perNs != 0 && n > 0 {
		n = g.pace.allow(now, n)
	}
	var got uint32
	if n > 0 {
		var idx uint32
		idx, got = s.Tx.Reserve(n)
		next, v, k := g.next, g.variant, uint32(len(g.lens))
		for i := uint32(0); i < got; i++ {
			s.Tx.Set(idx+i, uint64(next)<<g.shift, g.lens[v])
			if next++; next == g.frames {
				next = 0
			}
			if v++; v == k {
				v = 0
			}
		}
		g.next, g.variant = next, v
		if got > 0 {
			s.Tx.Submit(got)
			w.txOutstanding += got
			g.left -= uint64(got)
			g.pace.spend(got)
			w.c.batches++
		}
	}
	// In copy mode each sendto transmits a bounded number of frames (32),
	// so kick as long as anything waits, not just after a submit.
	if got > 0 || s.Tx.Pending() > 0 {
		w.kickTx(s)
	}
	return got
}

// txComplete reaps the completion ring and counts what was sent.
func (w *Worker) txComplete() uint32 {
	g, s := w.tx, w.sock
	idx, n := s.Completion.Peek(s.Completion.Size())
	if n == 0 {
		return 0
	}
	var bytes uint64
	if k := uint32(len(g.lens)); k == 1 {
		bytes = uint64(n) * uint64(g.lens[0])
	} else {
		for i := uint32(0); i < n; i++ {
			bytes += uint64(g.lens[uint32(s.Completion.Addr(idx+i)>>g.shift)%k])
		}
	}
	s.Completion.Release(n)
	w.txOutstanding -= n
	w.c.txPackets += uint64(n)
	w.c.txBytes += bytes
	return n
}

// txIdle is called when a generator loop neither sent nor reaped anything:
// it waits for the pacer, or for the kernel to complete frames.
func (w *Worker) txIdle(spins *int) error {
	g := w.tx
	if g.pace.perNs != 0 && (!g.limited || g.left > 0) && w.txOutstanding < g.frames {
		if d := g.pace.wait(); d > 20*time.Microsecond {
			w.publish()
			g.clock.Sleep(min(d, w.pollTimeout()))
		}
		return nil
	}
	switch w.wait {
	case WaitBusy, WaitBusyPoll:
		return nil
	case WaitPoll:
		return w.sleep()
	}
	if *spins++; *spins < w.spinLimit {
		return nil
	}
	*spins = 0
	w.publish()
	// Completions of copy mode come when the receiver frees the frames,
	// with no event to wait for; a short sleep stops the spinning.
	g.clock.Sleep(50 * time.Microsecond)
	return nil
}

func (w *Worker) pollTimeout() time.Duration { return time.Duration(w.pollMs) * time.Millisecond }
