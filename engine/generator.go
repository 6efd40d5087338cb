package engine

// The AF_XDP generator (xdpsock -t, xdpeng txonly): frames are built once
// into each socket's UMEM; the loop then only moves descriptors.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/xsk"
)

// GeneratorConfig describes a generator: the tx queues of a device and the
// frames to send. Start from DefaultGeneratorConfig() and change what you
// need: a zero GeneratorConfig has no frame size, rings or batch, and
// Validate refuses it.
type GeneratorConfig struct {
	// Interface is the device to transmit on.
	Interface string
	// Queues are the tx queues to bind; nil means all of the device's.
	Queues []int
	// CPUs pins the worker of Queues[i] to CPUs[i]; nil picks CPUs from the
	// last online one down.
	CPUs []int
	// Batch is the most descriptors a worker puts on its tx ring at once.
	Batch int
	// FrameSize is the UMEM frame size, a power of two from 2048 to the
	// page size; every frame of Frames must fit in it, or with
	// MultiBuffer in up to 18 of them.
	FrameSize uint32
	// Unaligned registers the UMEMs in unaligned chunk mode, in huge pages
	// where the pool has them free (see Config.Unaligned, HugePages).
	Unaligned bool
	HugePages HugePageMode
	// MultiBuffer sends frames longer than FrameSize as several
	// descriptors (XDP_USE_SG), each frame in consecutive UMEM frames: up
	// to 18 of them (netdev.CopyModeMaxFrags: what copy mode transmits on
	// every kernel).
	MultiBuffer bool
	// NumFrames is the number of UMEM frames per socket; 0 means what the
	// tx and completion rings hold at once.
	NumFrames uint32
	// Ring sizes, powers of two.
	CompletionSize, TxSize uint32
	// BindMode chooses copy or zero-copy.
	BindMode BindMode
	// NeedWakeup lets the kernel tell when a system call is needed.
	NeedWakeup bool
	// Wait is what a worker does when it can neither send nor reap.
	Wait WaitMode
	// BusyPollUsecs and BusyPollBudget are SO_BUSY_POLL and
	// SO_BUSY_POLL_BUDGET for WaitBusyPoll.
	BusyPollUsecs, BusyPollBudget int
	// BusyPollNAPI and NAPIGuard are Config's, for WaitBusyPoll: the
	// settings NewGenerator gives the NAPI each queue's socket busy-polls
	// (that queue's receive side's), and who hears of each change.
	// DefaultGeneratorConfig asks for DefaultConfig's.
	BusyPollNAPI NAPIConfig
	NAPIGuard    NAPIGuard
	// PollTimeout bounds each poll() so that a stop is noticed promptly;
	// 0 means 100 ms (NewGenerator fills it in).
	PollTimeout time.Duration
	// Sched and SchedPriority are the workers' scheduling policy and
	// priority, as Config's.
	Sched         SchedPolicy
	SchedPriority int

	// Frames are the frames to send, each at least an Ethernet header and
	// at most FrameSize bytes (18 times that with MultiBuffer), and at most
	// the device's MTU and an Ethernet header (and a VLAN tag, for a frame
	// that has one): NewGenerator fails with ErrFrameTooLong otherwise.
	// They go out in the order given, cycling.
	Frames [][]byte
	// Count is the number of frames to send in total, split exactly over
	// the queues; 0 sends until the context of Run is done.
	Count uint64
	// Rate, if not zero, is an upper bound in frames per second over all
	// queues. Each worker paces its share in bursts of at most 50 µs worth
	// of frames (and at most a batch), never catching up in a big burst.
	Rate uint64
	// Cycle, if not zero, makes each worker send one batch (Batch frames)
	// at the start of every cycle, as xdpsock's -T: the first cycle
	// starts when the worker first sends; a worker that wakes late sends
	// its batch late, and skips the cycles it woke too late for.
	// Generator.TxCycles says how late. Not with Rate.
	Cycle time.Duration
	// OnLinkChange, if set, hears the device going down and coming back
	// while Run runs, as Config.OnLinkChange does.
	OnLinkChange func(LinkChange)
	// TxChecksum has each frame's UDP or TCP checksum filled as it is
	// sent, through AF_XDP TX metadata (Linux 6.8 and later): by the kernel
	// in copy mode, by the device in zero-copy mode (its xsk-features must
	// have tx-checksum; BindAuto binds in copy mode on a device without).
	// Every frame must be a whole UDP or TCP packet over IP; what its
	// checksum field holds is replaced. Not with MultiBuffer or
	// Unaligned.
	TxChecksum bool
	// TxTimestamp has each frame ask for a completion timestamp (AF_XDP TX
	// metadata, Linux 6.8 and later) and keeps the distribution of the
	// time from its descriptor going onto the tx ring to that timestamp
	// (Generator.TxTimes). Copy mode only (BindAuto binds in copy mode):
	// there the kernel stamps the completion with CLOCK_TAI when the
	// device frees the frame, the clock the sending time is taken in; a
	// zero-copy driver stamps it with its NIC's clock. Not with
	// MultiBuffer or Unaligned.
	TxTimestamp bool
	// LaunchDelay, if not zero, has each frame ask to leave no earlier
	// than LaunchDelay after its descriptor goes onto the tx ring (AF_XDP
	// TX launch time, Linux 6.14 and later), as ns of CLOCK_TAI: the
	// device's PTP clock must follow CLOCK_TAI (phc2sys). Zero-copy only
	// (BindAuto binds zero-copy), on a device whose xsk-features have
	// tx-launch-time-fifo; NewGenerator refuses it elsewhere. The device
	// sends its tx queue in order, so a frame waiting for its time holds
	// back those behind it. Not with MultiBuffer or Unaligned.
	LaunchDelay time.Duration
}

// DefaultGeneratorConfig returns the defaults of DefaultConfig for the
// settings a generator has.
func DefaultGeneratorConfig() GeneratorConfig {
	d := DefaultConfig()
	return GeneratorConfig{
		Batch: d.Batch, FrameSize: d.FrameSize, CompletionSize: d.CompletionSize, TxSize: d.TxSize,
		BindMode: d.BindMode, NeedWakeup: d.NeedWakeup, Wait: d.Wait,
		BusyPollUsecs: d.BusyPollUsecs, BusyPollBudget: d.BusyPollBudget, PollTimeout: d.PollTimeout,
		BusyPollNAPI: d.BusyPollNAPI,
	}
}

// sockets is c as the settings it shares with an engine's Config.
func (c *GeneratorConfig) sockets() Config {
	return Config{
		Interface: c.Interface, Queues: c.Queues, CPUs: c.CPUs, Batch: c.Batch,
		FrameSize: c.FrameSize, NumFrames: c.NumFrames, CompletionSize: c.CompletionSize, TxSize: c.TxSize,
		BindMode: c.BindMode, NeedWakeup: c.NeedWakeup, Wait: c.Wait,
		BusyPollUsecs: c.BusyPollUsecs, BusyPollBudget: c.BusyPollBudget, PollTimeout: c.PollTimeout,
		Unaligned: c.Unaligned, HugePages: c.HugePages, MultiBuffer: c.MultiBuffer,
	}
}

// Validate checks everything that can be checked without the device. It
// changes nothing: NewGenerator fills in the defaults (queues, CPUs,
// PollTimeout).
func (c *GeneratorConfig) Validate() error {
	if c.Interface == "" {
		return errors.New("no interface given")
	}
	if c.FrameSize == 0 && c.Batch == 0 && c.CompletionSize == 0 && c.TxSize == 0 {
		return errors.New("FrameSize, Batch and the ring sizes are 0, as in a zero GeneratorConfig: start from DefaultGeneratorConfig(), which sets them, and change what you need")
	}
	if c.Wait == WaitThreadedBusyPoll {
		return errors.New("threaded busy polling moves a queue's receive work to its NAPI's thread: a generator has none to move (its copy-mode transmit runs in its own sendto calls)")
	}
	sc := c.sockets()
	if err := sc.checkSockets(false); err != nil {
		return err
	}
	if uint32(c.Batch) > c.TxSize {
		return fmt.Errorf("batch size %d is larger than the tx ring (%d): a batch must fit in the ring", c.Batch, c.TxSize)
	}
	if err := checkSched(c.Sched, c.SchedPriority); err != nil {
		return err
	}
	switch {
	case c.Cycle < 0:
		return fmt.Errorf("tx cycle %v: must be positive", c.Cycle)
	case c.Cycle > 0 && c.Rate > 0:
		return errors.New("a tx cycle and a rate both pace the sending: give one")
	}
	if c.CPUs != nil && c.Queues != nil && len(c.CPUs) != len(c.Queues) {
		return cpuCountError(len(c.CPUs), len(c.Queues))
	}
	if len(c.Frames) == 0 {
		return errors.New("no frames to send")
	}
	for i, f := range c.Frames {
		switch {
		case len(f) < packet.EthHdrLen:
			return fmt.Errorf("frame %d is %d bytes: must be at least %d (an Ethernet header)", i, len(f), packet.EthHdrLen)
		case c.MultiBuffer && len(f) > int(c.FrameSize)*netdev.CopyModeMaxFrags:
			return fmt.Errorf("frame %d is %d bytes: at most %d in %d UMEM frames of %d bytes, the most a frame may span in copy mode",
				i, len(f), int(c.FrameSize)*netdev.CopyModeMaxFrags, netdev.CopyModeMaxFrags, c.FrameSize)
		case !c.MultiBuffer && len(f) > int(c.FrameSize):
			return fmt.Errorf("frame %d is %d bytes, more than the %d-byte UMEM frame holds: %w", i, len(f), c.FrameSize, errNeedsMultiBuffer)
		}
	}
	if need := uint32(len(c.Frames)) * c.segments(); c.NumFrames != 0 && c.NumFrames < need {
		return fmt.Errorf("%d UMEM frames cannot hold the %d frame variants (%d UMEM frames)", c.NumFrames, len(c.Frames), need)
	}
	return nil
}

// errNeedsMultiBuffer says that a frame longer than a UMEM frame needs
// multi-buffer; the CLI adds which flag that is.
var errNeedsMultiBuffer = errors.New("send it over several with MultiBuffer, or use larger UMEM frames")

// segments is the UMEM frames each frame variant gets: what the longest
// needs.
func (c *GeneratorConfig) segments() uint32 {
	k := uint32(1)
	for _, f := range c.Frames {
		k = max(k, (uint32(len(f))+c.FrameSize-1)/c.FrameSize)
	}
	return k
}

// txFrames is the number of UMEM frames of one generator socket: enough for
// every descriptor the tx and completion rings can hold at once, rounded up
// to a whole number of slots (segments() frames each, one variant per slot)
// and of variants, so that slot j always holds variant j % K and cycling
// slots cycles variants.
func (c *GeneratorConfig) txFrames() uint32 {
	k, seg := uint32(len(c.Frames)), c.segments()
	if c.NumFrames != 0 {
		return c.NumFrames / (k * seg) * k * seg // Validate made sure it is at least k * seg
	}
	slots := (c.TxSize + c.CompletionSize + seg - 1) / seg
	return (slots + k - 1) / k * k * seg
}

// Generator sends frames built in advance out of the tx queues of a
// device through AF_XDP sockets (xdpsock's txonly): no XDP program is
// attached and nothing is received. Each worker owns a UMEM whose frames
// hold copies of the frames, written once before the start; it puts their
// descriptors on its tx ring in batches, kicks the kernel when it asks to
// be (in copy mode: every time, as the copy happens inside sendto), and
// counts completions.
//
// In its statistics, TxPackets and TxBytes count completed frames (the
// kernel is done with them), not submitted ones.
type Generator struct {
	core
	cfg  GeneratorConfig
	napi napiState
}

// Config is the generator's configuration with defaults filled in (queues,
// CPUs).
func (g *Generator) Config() GeneratorConfig { return g.cfg }

// Device is the device the generator transmits on.
func (g *Generator) Device() Device { return deviceOf(g.dev) }

// Umem describes the generator's UMEMs as it set them up.
func (g *Generator) Umem() UmemInfo {
	sc := g.cfg.sockets()
	return g.umemInfo(&sc)
}

// checkFrameLengths refuses frames longer than the device takes: its MTU
// and an Ethernet header, and a VLAN tag for a tagged frame. veth, and any
// device that forwards what it sends, drops the rest silently.
func checkFrameLengths(info *netdev.Info, frames [][]byte) error {
	if info.MTU <= 0 {
		return nil
	}
	for _, f := range frames {
		limit := info.MTU + packet.EthHdrLen
		if len(f) >= packet.EthHdrLen && binary.BigEndian.Uint16(f[12:14]) == packet.EtherTypeVLAN {
			limit += packet.VLANTagLen
		}
		if len(f) > limit {
			return &FrameTooLongError{Device: info.Name, MTU: info.MTU, Length: len(f), Max: limit}
		}
	}
	return nil
}

// TxTimes is the distribution of the completion times so far, over every
// worker (GeneratorConfig.TxTimestamp); zero without TxTimestamp. It may be
// read while Run runs.
func (g *Generator) TxTimes() TxTimes {
	var t TxTimes
	for _, w := range g.workers {
		if tw, ok := w.(*txWorker); ok && tw.tx.timer != nil {
			tw.tx.timer.addTo(&t)
		}
	}
	return t
}

// TxCycles is what each worker saw of its cycles so far
// (GeneratorConfig.Cycle), in queue order; nil without a Cycle. It may be
// read while Run runs, and after Close.
func (g *Generator) TxCycles() []CycleStats {
	if g.cfg.Cycle == 0 {
		return nil
	}
	g.life.RLock()
	defer g.life.RUnlock()
	out := []CycleStats{}
	for _, w := range g.workers {
		tw, ok := w.(*txWorker)
		if !ok || tw.tx.pace.cyc == nil {
			continue
		}
		c := tw.tx.pace.cyc
		s := CycleStats{Queue: tw.queue, Cycles: c.cycles.Load(), Missed: c.missed.Load(),
			LateMin: time.Duration(c.lateMin.Load()), LateMax: time.Duration(c.lateMax.Load())}
		if s.Cycles > 0 {
			s.LateAvg = time.Duration(c.lateSum.Load() / s.Cycles)
		}
		out = append(out, s)
	}
	return out
}

// ZeroCopy reports whether the kernel granted zero-copy to the sockets.
func (g *Generator) ZeroCopy() bool { return g.zeroCopy() }

// Run sends until every worker has sent its share of Count (and seen it
// completed), or ctx is done, or a worker fails, or the device goes away
// (a *DeviceGoneError, as for Engine.Run). Counters stay readable after
// Run returns.
func (g *Generator) Run(ctx context.Context) error { return g.run(ctx) }

// Started is when Run started the workers; zero before.
func (g *Generator) Started() time.Time { return g.startedAt() }

// Stats reads every worker's counters and its socket's XDP statistics, as
// Engine.Stats does.
func (g *Generator) Stats() (Snapshot, error) { return g.stats() }

// Close stops a Run that is running and waits for its workers to end, then
// closes the sockets, as Engine.Close does. It is safe to call at any
// time, more than once and after a failed NewGenerator.
func (g *Generator) Close() error {
	return g.shutdown(func() error {
		g.closeLinks()
		return errors.Join(g.napi.restore(), g.closeSockets())
	})
}

// BusyPollNAPI returns what NewGenerator did to the queues' NAPIs for busy
// polling (GeneratorConfig.BusyPollNAPI), as Engine.BusyPollNAPI does.
// A socket on a queue busy-polls the NAPI of that queue's receive side.
func (g *Generator) BusyPollNAPI() (changes []NAPIChange, note string) {
	return slices.Clone(g.napi.changes), g.napi.note
}

// writeTxFrames writes variant j % len(frames) into slot j of u's first n
// frames: frames seg*j to seg*j+seg-1, the variant's bytes split over them.
func writeTxFrames(u *xsk.Umem, frames [][]byte, n, seg uint32) {
	fs := u.FrameSize()
	for j := uint32(0); j < n/seg; j++ {
		f := frames[int(j)%len(frames)]
		for k := uint32(0); k < seg && k*fs < uint32(len(f)); k++ {
			part := f[k*fs : min(uint32(len(f)), (k+1)*fs)]
			copy(u.Frame(uint64(j*seg+k)*uint64(fs), uint32(len(part))), part)
		}
	}
}

// txGen is a generator worker's state. A slot is the seg UMEM frames that
// hold one frame variant; without multi-buffer a slot is one UMEM frame.
type txGen struct {
	frames  uint32   // UMEM frames in use, a multiple of seg * len(lens)
	next    uint32   // frame of the next descriptor
	variant uint32   // next / seg % len(lens), kept to avoid a division per frame
	lens    []uint32 // length of each variant
	shift   uint     // log2 of the frame size
	limited bool     // send left frames, then stop
	left    uint64
	pace    pacer
	clock   clock

	// Multi-buffer (seg > 1): each variant's descriptors, and the frames
	// in flight, which bound the slots in use.
	seg      uint32
	segLens  [][]uint32 // segLens[v][k]: length of variant v's k-th descriptor
	inFlight uint32

	// With TX metadata, each frame starts metaOff bytes into its UMEM
	// frame and its descriptors carry metaOpts; both 0 without. metaReq
	// is what each frame asks, csum each variant's checksum start and
	// offset (TxChecksum).
	metaOff  uint64
	metaOpts uint32
	metaReq  xsk.TxRequest
	csum     [][2]uint16
	umem     *xsk.Umem
	// With TxTimestamp: the completion times, and when each UMEM frame's
	// descriptor last went onto the ring (ns of tai).
	timer  *txTimer
	sentAt []uint64
	tai    taiClock
	// launch is LaunchDelay in ns, 0 without.
	launch uint64
}

// newTxGen gives worker i of cfg's its share of the count and rate.
func newTxGen(t *GeneratorConfig, i int, frames uint32) *txGen {
	cfg := t
	nq := uint64(len(cfg.Queues))
	g := &txGen{frames: frames, limited: t.Count > 0, clock: wallClock{}, seg: t.segments()}
	for _, f := range t.Frames {
		g.lens = append(g.lens, uint32(len(f)))
		var sl []uint32
		for left := uint32(len(f)); left > 0; left -= min(left, t.FrameSize) {
			sl = append(sl, min(left, t.FrameSize))
		}
		g.segLens = append(g.segLens, sl)
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
	if t.Cycle > 0 {
		g.pace = newCyclePacer(t.Cycle, cfg.Batch)
	}
	return g
}

// pacer is a token bucket: credit grows with time at the rate and is
// capped at a small burst, so that a worker that fell behind does not catch
// up at once. A sleep may overshoot (timer slack: about 1 ms here); what
// fell due during it may go at once, up to a batch, or sleeping would
// lower the rate.
type pacer struct {
	// cycle, if not zero, makes the pacer give a batch at the start of
	// each cycle instead (Cycle): next is when the next cycle starts, cyc
	// what the worker saw of them.
	cycle  time.Duration
	next   time.Time
	cyc    *cycleCounters
	perNs  float64 // frames per nanosecond; 0 means unpaced
	burst  float64 // credit cap between sleeps
	batch  float64 // credit cap after a long gap
	credit float64
	last   time.Time
}

// newCyclePacer paces a batch at the start of every cycle.
func newCyclePacer(cycle time.Duration, batch int) pacer {
	return pacer{perNs: float64(batch) / float64(cycle), batch: float64(batch), cycle: cycle, cyc: new(cycleCounters)}
}

// cycleCounters are a cycle-paced worker's cycles, written by the worker
// once a cycle and read by Generator.TxCycles.
type cycleCounters struct {
	cycles, missed            atomic.Uint64
	lateMin, lateMax, lateSum atomic.Uint64 // ns
}

// CycleStats is what a worker of a Generator with a Cycle saw of its
// cycles.
type CycleStats struct {
	Queue int `json:"queue"`
	// Cycles are the cycles a batch went out in; Missed those the worker
	// woke too late for, and skipped.
	Cycles uint64 `json:"cycles"`
	Missed uint64 `json:"missed"`
	// LateMin, LateAvg and LateMax are how long after its cycle's start a
	// batch went out (xdpsock -T's "cyclic TX latencies").
	LateMin time.Duration `json:"late_min_ns"`
	LateAvg time.Duration `json:"late_avg_ns"`
	LateMax time.Duration `json:"late_max_ns"`
}

// paceBurst is how much time's worth of frames a paced worker sends at once.
const paceBurst = 50 * time.Microsecond

func newPacer(rate float64, batch int) pacer {
	burst := math.Max(1, math.Min(float64(batch), rate*paceBurst.Seconds()))
	return pacer{perNs: rate / 1e9, burst: burst, batch: math.Max(burst, float64(batch)), credit: 1}
}

// allow returns how many of want frames may go now.
func (p *pacer) allow(now time.Time, want uint32) uint32 {
	if p.cycle > 0 {
		return p.allowCycle(now, want)
	}
	if p.last.IsZero() {
		p.last = now
	}
	due := float64(now.Sub(p.last)) * p.perNs
	p.last = now
	// What is due now, at most a batch, and what was left over from
	// the last call, at most a frame: a worker that always wakes a little
	// late neither loses the lateness nor saves it up for a burst.
	p.credit = math.Min(math.Max(p.burst, math.Min(due, p.batch))+math.Min(p.credit, 1), p.credit+due)
	if c := uint32(p.credit); c < want {
		return c
	}
	return want
}

func (p *pacer) spend(n uint32) { p.credit -= float64(n) }

// allowCycle is allow for a cycle pacer: at a cycle's start a fresh batch,
// what is left of the last one given up.
func (p *pacer) allowCycle(now time.Time, want uint32) uint32 {
	if p.next.IsZero() {
		p.next = now
	}
	if !now.Before(p.next) {
		late := now.Sub(p.next)
		missed := uint64(late / p.cycle)
		late -= time.Duration(missed) * p.cycle
		p.next = now.Add(p.cycle - late)
		p.credit = p.batch
		c := p.cyc
		n := c.cycles.Add(1)
		c.missed.Add(missed)
		c.lateSum.Add(uint64(late))
		if n == 1 || uint64(late) < c.lateMin.Load() {
			c.lateMin.Store(uint64(late))
		}
		if uint64(late) > c.lateMax.Load() {
			c.lateMax.Store(uint64(late))
		}
	}
	return min(uint32(p.credit), want)
}

// wait is how long after now the next frame may go.
func (p *pacer) wait(now time.Time) time.Duration {
	if p.cycle > 0 {
		if p.credit >= 1 {
			return 0
		}
		return p.next.Sub(now)
	}
	return time.Duration((1 - p.credit) / p.perNs)
}

// run is a generator worker's loop; it returns when the worker has sent
// its share and seen it completed, or when stop is set.
func (w *txWorker) run(stop *atomic.Bool) error {
	g := w.tx
	for !stop.Load() {
		if g.limited && g.left == 0 {
			break
		}
		var now time.Time
		if g.pace.perNs != 0 {
			now = g.clock.Now()
		}
		if sent, done := w.txStep(now); sent > 0 || done > 0 {
			w.wait.busy()
			continue
		}
		if err := w.txIdle(); err != nil {
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

// txStep is one turn of a generator worker's loop: a batch onto the tx
// ring, the completions that are there reaped, and the counters published
// every 16th batch. It returns the frames sent and the descriptors
// completed.
func (w *txWorker) txStep(now time.Time) (sent, done uint32) {
	if w.tx.seg > 1 {
		sent = w.txBatchMB(now)
	} else {
		sent = w.txBatch(now)
	}
	done = w.txComplete()
	if (sent > 0 || done > 0) && w.c.batches&15 == 0 {
		w.publish()
	}
	return sent, done
}

// txBatch puts up to a batch of descriptors on the tx ring and kicks the
// kernel if it asks for it.
func (w *txWorker) txBatch(now time.Time) uint32 {
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
		if g.metaOpts != 0 {
			var at uint64
			if g.sentAt != nil || g.launch != 0 {
				if now.IsZero() {
					now = g.clock.Now()
				}
				at = g.tai.ns(now)
			}
			next, v = g.setTxMeta(&s.Tx, idx, got, at)
		} else {
			for i := uint32(0); i < got; i++ {
				s.Tx.Set(idx+i, uint64(next)<<g.shift, g.lens[v])
				if next++; next == g.frames {
					next = 0
				}
				if v++; v == k {
					v = 0
				}
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
func (w *txWorker) txComplete() uint32 {
	g, s := w.tx, w.sock
	idx, n := s.Completion.Peek(s.Completion.Size())
	if n == 0 {
		return 0
	}
	if g.seg > 1 {
		return w.txCompleteMB(idx, n)
	}
	var bytes uint64
	if k := uint32(len(g.lens)); k == 1 {
		bytes = uint64(n) * uint64(g.lens[0])
	} else {
		for i := uint32(0); i < n; i++ {
			bytes += uint64(g.lens[uint32(s.Completion.Addr(idx+i)>>g.shift)%k])
		}
	}
	if g.timer != nil {
		g.stamps(&s.Completion, idx, n)
	}
	s.Completion.Release(n)
	w.txOutstanding -= n
	w.c.txPackets += uint64(n)
	w.c.txBytes += bytes
	return n
}

// txIdle is called when a generator loop neither sent nor reaped anything:
// it waits for the pacer, or for the kernel to complete frames.
func (w *txWorker) txIdle() error {
	g := w.tx
	if g.pace.perNs != 0 && (!g.limited || g.left > 0) && w.txOutstanding+g.seg <= g.frames {
		if d := g.pace.wait(g.clock.Now()); d > 20*time.Microsecond {
			w.publish()
			if _, real := g.clock.(wallClock); real {
				// The next frames go out on time, not when the
				// runtime's timer wakes, up to a millisecond late.
				sleepExact(min(d, w.wait.pollTimeout()))
			} else {
				g.clock.Sleep(min(d, w.wait.pollTimeout()))
			}
		}
		return nil
	}
	return w.wait.waitTx(g.clock)
}

// txBatchMB is txBatch for frames of several descriptors: whole frames
// only, up to a batch of them, and never more frames in flight than slots.
func (w *txWorker) txBatchMB(now time.Time) uint32 {
	g, s := w.tx, w.sock
	n := w.batchSize
	if g.limited && uint64(n) > g.left {
		n = uint32(g.left)
	}
	if free := g.frames/g.seg - g.inFlight; n > free {
		n = free
	}
	if g.pace.perNs != 0 && n > 0 {
		n = g.pace.allow(now, n)
	}
	var sent uint32
	if n > 0 {
		// The descriptors of n frames, as far as the ring has room for
		// whole ones.
		var descs uint32
		v, k := g.variant, uint32(len(g.lens))
		for range n {
			descs += uint32(len(g.segLens[v]))
			if v++; v == k {
				v = 0
			}
		}
		idx, got := s.Tx.Reserve(descs)
		next, v, used := g.next, g.variant, uint32(0)
		for sent < n && used+uint32(len(g.segLens[v])) <= got {
			sl := g.segLens[v]
			for j, l := range sl {
				var opts uint32
				if j < len(sl)-1 {
					opts = xsk.PacketContinues
				}
				s.Tx.SetOptions(idx+used, uint64(next+uint32(j))<<g.shift, l, opts)
				used++
			}
			if next += g.seg; next == g.frames {
				next = 0
			}
			if v++; v == k {
				v = 0
			}
			sent++
		}
		s.Tx.Cancel(got - used)
		g.next, g.variant = next, v
		if used > 0 {
			s.Tx.Submit(used)
			w.txOutstanding += used
			g.inFlight += sent
			g.left -= uint64(sent)
			g.pace.spend(sent)
			w.c.batches++
		}
	}
	if sent > 0 || s.Tx.Pending() > 0 {
		w.kickTx(s)
	}
	return sent
}

// txCompleteMB counts the completions of frames of several descriptors:
// a frame is done with its last. It returns the descriptors reaped.
func (w *txWorker) txCompleteMB(idx, n uint32) uint32 {
	g, s := w.tx, w.sock
	var frames, bytes uint64
	k := uint32(len(g.lens))
	for i := uint32(0); i < n; i++ {
		f := uint32(s.Completion.Addr(idx+i) >> g.shift)
		slot := f / g.seg
		v := slot % k
		if f-slot*g.seg == uint32(len(g.segLens[v]))-1 {
			frames++
			bytes += uint64(g.lens[v])
		}
	}
	s.Completion.Release(n)
	w.txOutstanding -= n
	g.inFlight -= uint32(frames)
	w.c.txPackets += frames
	w.c.txBytes += bytes
	return n
}
