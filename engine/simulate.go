package engine

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/xdpeng/xdpeng/internal/netdev"
	"github.com/xdpeng/xdpeng/xsk"
)

// SimFrame is what became of one frame in a simulation.
type SimFrame struct {
	// Verdict is the verdict the handler left on the frame.
	Verdict Verdict
	// Dest is where a Transmit or Forward verdict sent it: ToInput for
	// Transmit.
	Dest Dest
	// Reason is the reason Batch.DropFor gave a frame whose verdict is
	// Drop, 0 for none.
	Reason DropReason
	// Sent reports whether the worker put the frame on Dest's tx ring:
	// what a device would transmit.
	Sent bool
	// Data is the frame as the handler left it (with any change of its
	// start or length): the bytes that were sent, or would have been.
	Data []byte
	// TxChecksum reports whether the frame went out asking for its
	// checksum to be filled (Batch.SetTxChecksum, Sim.TxChecksum); Data
	// then holds the field as the handler left it, seeded with the
	// pseudo-header's sum, which the kernel or the NIC completes.
	TxChecksum bool
}

// SimResult is the outcome of a simulation.
type SimResult struct {
	// Frames[i] is what became of the i-th frame given.
	Frames []SimFrame
	// Stats are the worker's counters, as Engine.Stats reports them (XDP
	// is the simulated kernel's count for the receiving socket).
	Stats QueueStats
}

// Sent returns the frames that went back out of the queue they arrived on
// (ToInput), in order.
func (r SimResult) Sent() [][]byte { return r.SentOn(ToInput) }

// SentOn returns the frames sent to d, in order.
func (r SimResult) SentOn(d Dest) [][]byte {
	var out [][]byte
	for _, f := range r.Frames {
		if f.Sent && f.Dest == d {
			out = append(out, f.Data)
		}
	}
	return out
}

// SimBatch is the number of frames a simulation hands a handler at once by
// default, the engine's default batch size.
const SimBatch = 64

// Sim describes a simulated engine for Run: a worker on in-memory rings,
// with no device and no privilege.
type Sim struct {
	// Outputs is how many outputs the simulated engine has, destinations
	// ToOutput(0) to ToOutput(Outputs-1).
	Outputs int
	// Batch is the most frames the handler sees at once; 0 means
	// SimBatch. With MultiBuffer it bounds the descriptors of a batch, as
	// Config.Batch does, so a handler may see fewer frames at once.
	Batch int
	// FrameSize, FrameHeadroom, Unaligned and MultiBuffer are those of
	// Config; FrameSize 0 means an engine's default,
	// DefaultConfig().FrameSize (2048), so that a handler sees the
	// Headroom and Tailroom it would see in an engine. A frame longer than
	// a UMEM frame holds after the headroom (the kernel's 256 bytes and
	// FrameHeadroom: 1792 bytes of 2048) arrives in several segments with
	// MultiBuffer (at most 18) and is an error without.
	FrameSize     uint32
	FrameHeadroom uint32
	Unaligned     bool
	MultiBuffer   bool
	// TxChecksum is Config.TxChecksum: with it, Batch.SetTxChecksum
	// works, and SimFrame.TxChecksum says which frames asked.
	TxChecksum bool
}

// Simulate runs h over frames on an engine without outputs; see Sim.Run.
//
//	res, err := engine.Simulate(myHandler, [][]byte{frame1, frame2})
//	// res.Frames[1].Sent, res.Frames[1].Data: was it sent, and as what?
func Simulate(h Handler, frames [][]byte) (SimResult, error) {
	return Sim{}.Run(h, frames)
}

// frameSize is c.FrameSize with its default.
func (c Sim) frameSize() uint32 {
	if c.FrameSize == 0 {
		return DefaultConfig().FrameSize
	}
	return c.FrameSize
}

// segments checks that frames fit and returns the most UMEM frames one of
// them takes.
func (c Sim) segments(frames [][]byte) (int, error) {
	room := int(c.frameSize()) - KernelHeadroom - int(c.FrameHeadroom)
	segs := 1
	for i, f := range frames {
		n := (len(f) + room - 1) / room
		switch {
		case n > 1 && !c.MultiBuffer:
			larger := ""
			if page := uint32(os.Getpagesize()); c.frameSize() < page {
				larger = fmt.Sprintf("set FrameSize to %d (the default is an engine's, %d), or ", page, DefaultConfig().FrameSize)
			}
			return 0, fmt.Errorf("simulate: frame %d is %d bytes, longer than the %d bytes a %d-byte UMEM frame holds after %d bytes of headroom: %sset MultiBuffer to have it in several",
				i, len(f), room, c.frameSize(), KernelHeadroom+int(c.FrameHeadroom), larger)
		case n > netdev.CopyModeMaxFrags:
			return 0, fmt.Errorf("simulate: frame %d is %d bytes, more than %d UMEM frames hold (%d bytes each after the headroom)",
				i, len(f), netdev.CopyModeMaxFrags, room)
		}
		segs = max(segs, n)
	}
	return segs, nil
}

// Run runs h over frames as a worker of an engine would, without a device
// or root: the frames arrive on an in-memory rx ring in batches and go
// through the same worker code as in an Engine (h's Hints and Idle
// included: Idle is called after the last batch), and the simulated kernel
// transmits what the worker queues on each port. It is meant for
// unit-testing handlers. Output sockets share the receiving socket's UMEM,
// as an Engine's do by default.
//
// The simulated kernel is as strict as Linux: it refuses the tx
// descriptors the kernel refuses (the checks of net/xdp/xsk_queue.h), and
// it publishes its fill-ring consumer index a round of frames late, so
// that the worker finds its fill ring full and keeps frames on its free
// stack meanwhile. After every batch Run checks that every UMEM frame is
// in a ring or on a free stack, once; a refused descriptor or a lost frame
// is an engine bug, returned as an error.
//
// The frames are copied in, so the caller's slices are not modified. A frame
// longer than a UMEM frame holds after the headroom is an error without
// MultiBuffer; a panic in h is returned as a *HandlerPanicError, wrapped.
func (c Sim) Run(h Handler, frames [][]byte) (res SimResult, err error) {
	segs, err := c.segments(frames)
	if err != nil {
		return res, err
	}
	sw, err := c.setup(h, simRings{segs: segs})
	if err != nil {
		return res, err
	}
	w, kernels, k, batch := sw.w, sw.kernels, sw.kernels[0], sw.batch
	// The kernel publishes its fill-ring consumer index a round late, so
	// that the worker finds its fill ring full and parks frames on the
	// free stack, as it does with a real kernel.
	k.FillLag = uint32(batch * segs)

	res.Frames = make([]SimFrame, len(frames))
	for start := 0; start < len(frames); start += batch {
		end := min(start+batch, len(frames))
		posted := k.Received
		for _, f := range frames[start:end] {
			if k.ReceiveLong(1, uint32(len(f)), f) != 1 {
				return res, fmt.Errorf("simulate: the rx ring took no frame (fill ring empty)")
			}
		}
		descs := uint32(k.Received - posted)
		if kd := k.Stats.Drops(); kd != 0 {
			return res, fmt.Errorf("simulate: the simulated kernel dropped %d frames", kd)
		}
		// A batch of the worker's is at most Batch descriptors: with
		// multi-buffer, a round's frames may take several.
		next := start
		for taken := uint32(0); taken < descs; {
			before := make([]uint64, len(kernels))
			for p, pk := range kernels {
				before[p] = pk.Transmitted
			}
			counted := w.c
			got := w.receive()
			if got == 0 {
				return res, fmt.Errorf("simulate: worker took %d of %d descriptors", taken, descs)
			}
			taken += got
			n := w.batch.n
			if w.dropAll {
				// The handler declared DropAll: the worker recycled the
				// frames without calling it, as an engine's would; a
				// frame counts in the batch that took its last
				// descriptor.
				n = int(w.c.rxPackets - counted.rxPackets)
			}
			if next+n > end {
				return res, fmt.Errorf("simulate: engine bug: the worker counted %d frames of a round of %d", next+n-start, end-start)
			}
			if w.dropAll {
				for i := range n {
					res.Frames[next+i] = SimFrame{Data: append([]byte(nil), frames[next+i]...)}
				}
				if w.fillGap > 0 {
					w.refill() // as step does
				}
			} else {
				sw.record(res.Frames[next:next+n], before)
			}
			if err := w.checkBatch(counted, res.Frames[next:next+n], c.Outputs); err != nil {
				return res, err
			}
			if err := sw.audit(); err != nil {
				return res, err
			}
			next += n
			if w.panicked != nil {
				res.Stats = w.stats(SocketStats(k.Stats))
				return res, fmt.Errorf("simulate: %w", w.panicked)
			}
		}
		if next != end {
			return res, fmt.Errorf("simulate: engine bug: the worker counted %d frames of a round of %d", next-start, end-start)
		}
	}
	if w.idler != nil {
		w.idle1()
		if w.panicked != nil {
			return res, fmt.Errorf("simulate: %w", w.panicked)
		}
	}
	res.Stats = w.stats(SocketStats(k.Stats))
	return res, nil
}

// record fills in frames, the fates of the frames of the batch the worker
// just handled: the verdict and the data the handler left, and, once the
// simulated kernels have transmitted what the worker queued on each port
// (their counts were before), whether and where each went out. Each frame
// sent is matched to the batch's frames by the address of its first
// descriptor; the worker then reaps the completions.
func (sw *simWorld) record(frames []SimFrame, before []uint64) {
	w, u, txSize := sw.w, sw.u, int(sw.cfg.TxSize)
	// The batch still holds each frame's addresses, lengths and verdict;
	// the frames' bytes stay in the UMEM until the next Receive.
	b := &w.batch
	for i := 0; i < b.n; i++ {
		r := &frames[i]
		r.Verdict = b.Verdict(i)
		switch r.Verdict {
		case VerdictForward:
			r.Dest = b.Dest(i)
		case VerdictDrop:
			if b.anyReason && b.reasons[i] <= MaxDropReasons {
				r.Reason = b.reasons[i]
			}
		}
		r.Data = b.AppendPacket(nil, i)
	}
	for p, pk := range sw.kernels {
		sent := pk.Transmit(txSize)
		var data []byte
		var first uint64
		inFrame, meta := false, false
		for j := 0; j < sent; j++ {
			d := pk.TxDesc(uint32(before[p]) + uint32(j))
			if !inFrame {
				first, inFrame = d.Addr, true
				meta = d.Options&xsk.TxMetadataOption != 0
			}
			data = append(data, u.Frame(d.Addr, d.Len)...)
			if d.Options&xsk.PacketContinues != 0 {
				continue
			}
			for i := 0; i < b.n; i++ {
				if b.addrs[i] == first {
					r := &frames[i]
					r.Sent, r.Dest, r.TxChecksum = true, Dest(p), meta
					r.Data = data
					break
				}
			}
			data, inFrame = nil, false
		}
	}
	w.complete()
}

// audit checks, after a batch's transmits have completed, that the
// simulated kernels took every tx descriptor the worker queued (they check
// each as the kernel does) and that every UMEM frame of every socket is
// in one of its rings or on its free stack, none missing and none twice.
func (sw *simWorld) audit() error {
	for p, k := range sw.kernels {
		if n := k.Stats.TxInvalidDescs; n != 0 {
			return fmt.Errorf("simulate: engine bug: the kernel refused %d tx descriptors of port %v", n, Dest(p))
		}
	}
	for p, s := range sw.w.ports {
		if err := s.CountFrames().Check(); err != nil {
			return fmt.Errorf("simulate: engine bug: port %v: %w", Dest(p), err)
		}
	}
	return nil
}

// checkBatch checks, after a batch's transmits have completed, that every
// frame of it went where its verdict says, or is counted as not sent
// (frames holds their fates): a frame that is neither is the engine's bug,
// which no handler may cause. before is the worker's counters before the
// batch. The counts close as they do in an engine: received = transmitted
// (on every port) + dropped (the Drop verdict, and ports the engine does
// not have) + tx ring full (no room on the port).
func (w *rxWorker) checkBatch(before local, frames []SimFrame, outputs int) error {
	c := &w.c
	rx, tx := c.rxPackets-before.rxPackets, c.txPackets-before.txPackets
	dropped, full := c.dropped-before.dropped, c.txRingFull-before.txRingFull
	if w.txOutstanding != 0 {
		return fmt.Errorf("simulate: engine bug: %d descriptors still in flight after the simulated kernel transmitted all", w.txOutstanding)
	}
	if rx != uint64(len(frames)) || rx != tx+dropped+full {
		return fmt.Errorf("simulate: engine bug: a batch of %d frames counted %d received, %d transmitted, %d dropped, %d tx ring full",
			len(frames), rx, tx, dropped, full)
	}
	var sent, drops, unsent uint64
	var reasons [MaxDropReasons + 1]uint64
	for i, f := range frames {
		want, known := ToInput, true
		switch f.Verdict {
		case VerdictDrop:
			if f.Sent {
				return fmt.Errorf("simulate: engine bug: frame %d has the Drop verdict and went out of %v", i, f.Dest)
			}
			drops++
			reasons[f.Reason]++
			continue
		case VerdictForward:
			want, known = f.Dest, int(f.Dest) <= outputs
		}
		switch {
		case f.Sent && (!known || f.Dest != want):
			return fmt.Errorf("simulate: engine bug: frame %d (%v to %v) went out of %v", i, f.Verdict, want, f.Dest)
		case f.Sent:
			sent++
		case known:
			unsent++
		default:
			drops++
		}
	}
	if sent != tx || drops != dropped || unsent != full {
		return fmt.Errorf("simulate: engine bug: the frames' fates (%d sent, %d dropped, %d without room) differ from the counts (%d transmitted, %d dropped, %d tx ring full)",
			sent, drops, unsent, tx, dropped, full)
	}
	for r := 1; r <= MaxDropReasons; r++ {
		if n := c.droppedFor[r] - before.droppedFor[r]; n != reasons[r] {
			return fmt.Errorf("simulate: engine bug: %d frames dropped for reason %d, counted %d", reasons[r], r, n)
		}
	}
	if len(w.out) > 1 {
		var ptx, pfull uint64
		for i := range w.out {
			ptx += w.out[i].c.txPackets
			pfull += w.out[i].c.txRingFull
		}
		if ptx != c.txPackets || pfull != c.txRingFull {
			return fmt.Errorf("simulate: engine bug: the ports count %d transmitted and %d tx ring full, the queue %d and %d",
				ptx, pfull, c.txPackets, c.txRingFull)
		}
	}
	return nil
}

// simWorld is a simulated engine: a worker on in-memory sockets, the first
// receiving, one per output after it, all on one UMEM.
type simWorld struct {
	cfg     Config
	batch   int
	u       *xsk.Umem
	w       *rxWorker
	kernels []*xsk.MemKernel // one per port
}

// simRings are the ring sizes of a simulation, and how its outputs hold
// frames.
type simRings struct {
	// segs is the most UMEM frames a frame takes.
	segs int
	// engine gives the rings an engine's default sizes (DefaultConfig)
	// rather than a few batches.
	engine bool
	// copyOutputs gives each output a UMEM of its own, as Output.Copy.
	copyOutputs bool
}

// setup makes the simulated engine.
func (c Sim) setup(h Handler, r simRings) (*simWorld, error) {
	if h == nil {
		return nil, fmt.Errorf("simulate: nil handler")
	}
	if c.Outputs < 0 || c.Outputs > MaxOutputs {
		return nil, fmt.Errorf("simulate: %d outputs: want 0..%d", c.Outputs, MaxOutputs)
	}
	batch := c.Batch
	if batch == 0 {
		batch = SimBatch
	}
	if batch < 1 || batch > MaxBatch {
		return nil, fmt.Errorf("simulate: batch %d: want 1..%d", batch, MaxBatch)
	}
	cfg := DefaultConfig()
	cfg.Interface = "sim"
	cfg.FrameSize, cfg.FrameHeadroom = c.frameSize(), c.FrameHeadroom
	cfg.Unaligned, cfg.MultiBuffer, cfg.TxChecksum = c.Unaligned, c.MultiBuffer, c.TxChecksum
	cfg.Batch = batch
	if !r.engine {
		// Rings of a few batches (a power of two): everything fits, and
		// a simulation costs a few MiB of UMEM rather than an engine's 32.
		ring := uint32(4)
		for ring < 4*uint32(batch*r.segs) {
			ring <<= 1
		}
		cfg.FillSize, cfg.CompletionSize, cfg.RxSize, cfg.TxSize = ring, ring, ring, ring
	}
	if err := cfg.checkSockets(true); err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	if c.TxChecksum && (c.MultiBuffer || c.Unaligned || r.copyOutputs) {
		return nil, &kindError{ErrTxMetadata, errors.New("simulate: TX checksum offload does not combine with multi-buffer, unaligned chunks or outputs of their own UMEM")}
	}
	per := cfg.framesPerSocket()
	u, err := xsk.NewMemUmem(cfg.umemConfig(per + uint32(c.Outputs)*outFrames))
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	txSize := cfg.TxSize
	if hintsOf(h).ReceiveOnly && c.Outputs == 0 {
		txSize = 0 // as an engine binds it: no tx ring
	}
	s, err := xsk.NewMemSocket(u, xsk.SocketConfig{
		FillSize: cfg.FillSize, CompletionSize: cfg.CompletionSize, RxSize: cfg.RxSize, TxSize: txSize,
		NumFrames: per, MultiBuffer: cfg.MultiBuffer,
	})
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	s.Kernel().Headroom = u.RxOffset()
	sw := &simWorld{cfg: cfg, batch: batch, u: u, kernels: []*xsk.MemKernel{s.Kernel()}}
	sw.w = newRxWorker(0, 0, s, h, workerOptions(&cfg))
	if cfg.TxChecksum {
		sw.w.batch.txMeta = make([]bool, len(sw.w.batch.addrs))
	}
	for k := 0; k < c.Outputs; k++ {
		ou, oc := u, xsk.SocketConfig{
			FillSize: outFillSize, CompletionSize: cfg.CompletionSize, TxSize: cfg.TxSize,
			FirstFrame: per + uint32(k)*outFrames, NumFrames: outFrames, MultiBuffer: cfg.MultiBuffer,
		}
		if r.copyOutputs {
			// As bindOutput makes it: a UMEM of the output's own, a
			// frame for each tx slot and one for the fill ring.
			oc.FirstFrame, oc.NumFrames = 0, cfg.TxSize+outFrames
			if ou, err = xsk.NewMemUmem(cfg.umemConfig(oc.NumFrames)); err != nil {
				return nil, fmt.Errorf("simulate: output %d: %w", k, err)
			}
		}
		o, err := xsk.NewMemSocket(ou, oc)
		if err != nil {
			return nil, fmt.Errorf("simulate: output %d: %w", k, err)
		}
		sw.w.ports = append(sw.w.ports, o)
		sw.kernels = append(sw.kernels, o.Kernel())
	}
	sw.w.syncPorts()
	return sw, nil
}

// SimLoop runs a handler batch after batch on in-memory rings, for
// benchmarks of handlers: what a worker and its handler cost per frame,
// with the frames already in the UMEM as a zero-copy device would have
// written them. Its rings have an engine's default sizes (DefaultConfig).
type SimLoop struct {
	sw     *simWorld
	frames [][]byte
}

// NewLoop prepares a simulated worker with handler h. Step and Run have
// the simulated kernel deliver frames as a device does, writing each into
// the buffer it delivers it in (the buffer of UMEM frame i gets frames[i %
// len(frames)]), run the worker on them as an engine's would (h.Handle, or
// the drop-all loop for a handler that declares DropAll), and have the
// simulated kernel transmit what the worker queued on every port. Each
// frame must fit in one UMEM frame, MultiBuffer or not.
func (c Sim) NewLoop(h Handler, frames [][]byte) (*SimLoop, error) {
	return c.newLoop(h, frames, false)
}

// newLoop is NewLoop, with outputs on UMEMs of their own if copyOutputs.
func (c Sim) newLoop(h Handler, frames [][]byte, copyOutputs bool) (*SimLoop, error) {
	if len(frames) == 0 {
		return nil, fmt.Errorf("simulate: no frames")
	}
	single := c
	single.MultiBuffer = false
	if _, err := single.segments(frames); err != nil {
		return nil, err
	}
	sw, err := c.setup(h, simRings{segs: 1, engine: true, copyOutputs: copyOutputs})
	if err != nil {
		return nil, err
	}
	l := &SimLoop{sw: sw}
	for _, f := range frames {
		l.frames = append(l.frames, append([]byte(nil), f...))
	}
	return l, nil
}

// Step runs one batch and returns how many frames the worker took: the
// simulated kernel delivers a batch, the worker takes it, the simulated
// kernel transmits what it queued, and the worker reaps the completions.
// It allocates nothing.
func (l *SimLoop) Step() int {
	sw := l.sw
	sw.kernels[0].ReceiveFrames(sw.batch, l.frames)
	n := sw.w.receive()
	for _, k := range sw.kernels {
		k.Transmit(int(sw.cfg.TxSize))
	}
	sw.w.complete()
	return int(n)
}

// SimCost is what SimLoop.Run measured: the frames the worker took and the
// time each side of the rings spent on them.
type SimCost struct {
	// Frames is the number of frames the worker took.
	Frames uint64
	// Worker is the time spent in the worker's loop: taking batches off
	// the rx ring, the handler, carrying out its verdicts (fill and tx
	// rings, copies into an output's UMEM), reaping completions, refilling,
	// publishing counters. It is what the engine costs the CPU it runs on.
	Worker time.Duration
	// Kernel is the time the simulated kernel spent writing the frames
	// into their buffers and delivering them to the rx ring, and taking
	// what the worker queued off the tx rings into the completion rings:
	// work a device and the kernel do instead, on whichever CPU runs the
	// device's NAPI.
	Kernel time.Duration
}

// WorkerNs is the worker's time per frame, in nanoseconds.
func (c SimCost) WorkerNs() float64 { return perFrame(c.Worker, c.Frames) }

// KernelNs is the simulated kernel's time per frame, in nanoseconds.
func (c SimCost) KernelNs() float64 { return perFrame(c.Kernel, c.Frames) }

func perFrame(d time.Duration, frames uint64) float64 {
	if frames == 0 {
		return 0
	}
	return float64(d.Nanoseconds()) / float64(frames)
}

// Run runs the worker on at least frames frames and times its side of the
// rings apart from the simulated kernel's, batch by batch as an engine
// runs while its worker keeps up: the simulated kernel transmits what the
// worker queued on every port and delivers a batch, writing each frame
// into its buffer as a device does; then the worker takes the batch in one
// turn of its loop (the batch, the completions that are there, the
// counters every 16th batch). The simulated device transmits on its own,
// as a zero-copy NIC does while it is busy (tx need_wakeup clear), so the
// worker makes no system call. The clock is read twice a batch; what a
// reading costs (the least of a thousand, measured first) is taken off
// each side. It allocates nothing.
func (l *SimLoop) Run(frames int) SimCost {
	sw := l.sw
	w, rx := sw.w, sw.kernels[0]
	base := time.Now()
	clock := clockCost(base)
	var c SimCost
	last := time.Since(base)
	for c.Frames < uint64(frames) {
		for _, k := range sw.kernels {
			k.Transmit(int(sw.cfg.TxSize))
		}
		n := rx.ReceiveFrames(sw.batch, l.frames)
		t1 := time.Since(base)
		var taken uint64
		for taken < uint64(n) {
			got := w.step()
			if got == 0 {
				break
			}
			taken += uint64(got)
		}
		t2 := time.Since(base)
		c.Kernel += max(0, t1-last-clock)
		c.Worker += max(0, t2-t1-clock)
		last = t2
		c.Frames += taken
		if taken == 0 {
			break // nothing arrived: the fill ring ran dry
		}
	}
	return c
}

// clockCost is the least time between two readings of the monotonic
// clock: what a reading adds to a span timed with it.
func clockCost(base time.Time) time.Duration {
	least := time.Duration(1<<63 - 1)
	for range 1000 {
		a := time.Since(base)
		least = min(least, time.Since(base)-a)
	}
	return least
}

// Stats are the worker's counters so far.
func (l *SimLoop) Stats() QueueStats { return l.sw.w.stats(SocketStats(l.sw.kernels[0].Stats)) }
