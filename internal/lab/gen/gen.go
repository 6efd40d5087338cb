// Package gen is xdpeng's traffic generator. Every Method hands the device
// XDP frames through its ndo_xdp_xmit; where the kernel refuses live frames,
// XSK and Packet send into a veth relay whose copy of the program redirects
// them (relay.go, senders.go). What follows describes Live, the technique of
// xdp-trafficgen: a tiny XDP program (bpf/gen.c) that returns
// bpf_redirect(ifindex) is run with BPF_PROG_TEST_RUN and the
// BPF_F_TEST_XDP_LIVE_FRAMES flag, so the kernel itself repeats one template
// frame N times per syscall and hands each copy to the device's
// ndo_xdp_xmit. Go does no per-frame work.
//
// # Few, long syscalls
//
// Each BPF_PROG_TEST_RUN in live-frames mode sets up and tears down a page
// pool, and the tear-down waits: measured on Linux 6.18 in a 2-CPU VM, a run
// of 64 frames took 54 ms and one of 65536 frames 83 ms, against 600 ms for
// 4 Mi frames (7 Mpps). So each thread asks for all its frames in one call
// (up to 2^32-1) and the run is ended early, for a Duration or a cancelled
// context, by a signal (SIGURG, which the Go runtime ignores when it did not
// send it) to the sending threads: the kernel stops after the current batch
// of 64 frames and returns EINTR. The program counts the frames it
// redirects in a per-CPU map, so the count is exact however the call ends.
// A Rate is kept by the program itself, frame by frame: it waits (in a
// bpf_loop) until each frame is due, so a rate-limited run has no bursts
// for the receiver to absorb, and the kernel flushes small batches so the
// frames do not wait long for the flush either. A thread that falls behind
// (kept off its CPU) sends the frames it owes at once, up to 64; further
// behind, it starts afresh without them and counts them (Stats.Skipped):
// a run offered Sent / (Sent + Skipped) of its rate.
//
// # What Sent means
//
// BPF_PROG_TEST_RUN reports no per-frame outcome: a frame whose redirect
// fails is freed silently (only the xdp:xdp_redirect_err and
// xdp:xdp_devmap_xmit tracepoints see it). Stats.Sent is therefore the number
// of frames the program redirected to the device, as counted by the program
// itself; every one was flushed to the driver before the kernel returned.
// What the device did with them comes from its own counters where it has
// them; veth does, per queue (`ethtool -S`): tx_queue_N_xdp_xmit counts
// frames its ndo_xdp_xmit queued to the peer (Stats.Xmit) and
// tx_queue_N_xdp_xmit_errors those it refused because the peer's ring was
// full or the frame too long (Stats.Errors). Sent - Xmit - Errors
// (Stats.Unaccounted) are frames dropped before the driver counted them: the
// device was down, or the veth peer had neither an XDP program nor GRO and so
// no NAPI to receive with. The device counters are read before and after the
// run, so another sender into the same device at the same time would be
// counted too.
//
// Live-frames mode recycles its pages without rewriting them: a program (ours
// rewrites the UDP port) sees either the template or what it wrote before,
// and so would the next frame if a receiver on the same host rewrote a frame
// and then dropped it back into the pool.
//
// # How long a frame may be
//
// Live frames live in one page each, so a frame is at most MaxFrameSize
// bytes (3408 with 4 KiB pages): the kernel refuses longer ones in
// live-frames mode, frags or not; the relay's program, without frags, sees
// each frame in one page as well. Jumbo frames come from the AF_XDP
// generator (engine.Generator with MultiBuffer, xdpeng txonly -F), which
// splits each over several UMEM frames.
//
// # Stamped frames
//
// With Config.Stamp the program writes a stamp (stamp.Stamp) at the start of
// each frame's UDP payload: the run's id (already in the template), a
// sequence number and bpf_ktime_get_ns(), read after the frame's pacing
// wait, right before the program hands the frame to the device. The UDP
// checksum is updated to match (RFC 1624), for IPv4 and IPv6 alike, so a
// stamped frame is valid for any receiver. Thread i of T sends the sequence
// numbers i, i+T, i+2T, ...: with a Count split as Run splits it, the run's
// numbers are exactly 0..Count-1. By default a rate-limited stamped run
// flushes every frame to the device as soon as the program returns (a
// Batch of 1), so the stamp is not followed by a wait for the rest of a
// batch; that costs rate, as every frame is a flush of its own. With a
// larger Batch (and at full speed, BatchSize) a stamp may wait for up to
// Batch-1 later frames' program runs, and their pacing, before its frame
// leaves: the delays then include that wait.
//
// # Threads and CPUs
//
// Each thread is a goroutine locked to an OS thread pinned to its own CPU. On
// veth the receiving queue is chosen by the sending CPU (smp_processor_id()
// modulo the peer's rx queues), so threads on different CPUs feed different
// queues, and the peer's NAPI for them runs on the sending CPU.
package gen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/engine/packet"
	"github.com/xdpeng/xdpeng/internal/counter"
	"github.com/xdpeng/xdpeng/internal/cpuset"
	"github.com/xdpeng/xdpeng/internal/lab/stamp"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

const (
	// BatchSize is how many frames the kernel runs before it flushes them
	// to the device; 64 is the NAPI budget and the kernel's default.
	BatchSize = 64
	// MaxBatch is the largest Batch the kernel takes (TEST_XDP_MAX_BATCH).
	// The kernel gives a run's live frames a page pool whose ring holds a
	// batch: where the frames are freed on another CPU (a receiver's
	// threaded NAPI), a ring of 256 takes back what a ring of 64 would
	// spill to the page allocator, whose lock both CPUs then take.
	MaxBatch = 256
	// DefaultInterval is the progress interval when Config.Interval is 0.
	DefaultInterval = time.Second
	// stopSignal interrupts a sending thread's BPF_PROG_TEST_RUN.
	stopSignal = unix.SIGURG
)

// Config describes a run. The frame goes out of Ifindex in the network
// namespace of the thread that calls Run.
type Config struct {
	Ifindex int
	// Frame is the UDP frame to repeat; with Ports > 1 its DstPort is the
	// first of the Ports consecutive destination ports.
	Frame packet.UDPConfig
	// Ports is how many destination ports (DstPort, DstPort+1, ...) the
	// frames cycle through, 1 (or 0) for one port. With more than one the
	// program rewrites the port and updates the UDP checksum per frame.
	Ports int
	// Count bounds the frames sent, split across threads so that the total
	// is exactly Count; 0 means no count limit.
	Count uint64
	// Duration bounds the run's length; 0 means no time limit. A run needs
	// a Count, a Duration or a context with a deadline.
	Duration time.Duration
	// Rate is an upper bound in frames per second over all threads, 0 for
	// as fast as possible. It is split across threads like Count.
	Rate uint64
	// Threads is the number of sending threads, at least 1 (0 means one
	// per entry of CPUs, or 1).
	Threads int
	// CPUs pins thread i to CPUs[i], one thread per CPU; empty means the
	// first Threads online CPUs.
	CPUs []int
	// Interval is how often progress is called; 0 means DefaultInterval.
	Interval time.Duration
	// Batch is how many frames the kernel runs before it flushes them to
	// the device, 1..MaxBatch. 0 chooses: FullSpeedBatch at full speed;
	// with a Rate, one flush about every 100 us, at most BatchSize, or
	// every frame with Stamp.
	Batch int
	// FullSpeedBatch is the batch a run without a Rate chooses when Batch
	// is 0, up to MaxBatch; 0 means BatchSize.
	FullSpeedBatch int
	// Stamp writes a stamp (stamp.Stamp) into each frame: RunID, a sequence
	// number and the send time (see the package documentation). It needs
	// a Count of at most MaxStampCount, a non-zero RunID and a Frame.Size
	// with room for the stamp after the UDP header.
	Stamp bool
	// RunID goes into every stamp, so that a receiver can tell this run's
	// frames from others.
	RunID uint32
	// Method is how the frames are made and sent (see Method); Auto
	// chooses the fastest the kernel grants.
	Method Method
	// Copies is, for the relayed methods (XSK, Packet), how many times
	// the relay's program sends each frame it gets, 1..MaxCopies; 0
	// chooses DefaultCopies, or 1 with Stamp. The kernel makes the copies
	// (a devmap broadcast: a page and a copy of the frame each, no skb),
	// so that a sender makes one frame in Copies: each copy costs the
	// sending CPU a fraction of what a frame from the sender does. The
	// copies of a frame are alike (one destination port of Ports) and
	// leave back to back.
	Copies int
}

// MaxCopies is the largest Config.Copies (the relay's devmap).
const MaxCopies = 64

// DefaultCopies is the Copies that 0 chooses for the relayed methods.
const DefaultCopies = 64

// CopiesFor is the number of frames a run of c with method m sends for
// each frame its sender makes (Copies resolved).
func (c *Config) CopiesFor(m Method) int {
	switch {
	case !m.Relayed():
		return 1
	case c.Copies > 0:
		return c.Copies
	case c.Stamp:
		return 1
	}
	return DefaultCopies
}

// MaxStampCount is the largest Count of a stamped run: sequence numbers are
// 32 bits.
const MaxStampCount = 1 << 32

// liveFrameOverhead is what a page of live frames keeps besides the frame:
// XDP_PACKET_HEADROOM (256), struct skb_shared_info (320) and struct
// xdp_page_head (112). bpf_prog_test_run_xdp refuses longer frames in
// live-frames mode ("disallow live data mode for jumbo frames", EINVAL):
// 3408 bytes with 4 KiB pages, measured on Linux 6.18.
const liveFrameOverhead = 256 + 320 + 112

// MaxFrameSize is the longest frame the generator sends, by any method:
// live frames live in one page each, and the relay's XDP program sees each
// frame in one page too. Longer (jumbo) frames need a sender that can split a
// frame over several buffers: the AF_XDP generator (engine.Generator with
// MultiBuffer, xdpeng txonly -F).
func MaxFrameSize() int { return unix.Getpagesize() - liveFrameOverhead }

// FieldError reports an invalid Config field; Field is its name as in
// Config ("Rate", "Frame.Size"), so that a CLI can name its own flag.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return fmt.Sprintf("gen: %s: %s", e.Field, e.Msg) }

// ErrUnbounded is returned by Run for a configuration that would never stop
// by itself.
var ErrUnbounded = errors.New("gen: refusing an unbounded run: set Count or Duration, or give a context with a deadline")

// Validate checks cfg without touching the kernel (CPUs excepted: they must
// be online) and fills in defaults: Threads, CPUs and Ports.
func (c *Config) Validate() error {
	if c.Ifindex <= 0 {
		return &FieldError{"Ifindex", fmt.Sprintf("%d is not an interface index (must be > 0)", c.Ifindex)}
	}
	if err := c.Frame.ValidateUDP(); err != nil {
		var fe *packet.FieldError
		if errors.As(err, &fe) {
			return &FieldError{"Frame." + fe.Field, fe.Msg}
		}
		return &FieldError{"Frame", err.Error()}
	}
	if c.Frame.Size > MaxFrameSize() {
		return &FieldError{"Frame.Size", fmt.Sprintf("%d bytes: the generator's frames take at most %d, a page less the kernel's headroom and tailroom, as its XDP program sees each in one page, live or through its relay (the AF_XDP generator, engine.Generator with MultiBuffer, sends longer frames)",
			c.Frame.Size, MaxFrameSize())}
	}
	if c.Ports == 0 {
		c.Ports = 1
	}
	if c.Ports < 0 || int(c.Frame.DstPort)+c.Ports-1 > math.MaxUint16 {
		return &FieldError{"Ports", fmt.Sprintf("%d ports counted up from destination port %d go past port 65535: at most %d fit",
			c.Ports, c.Frame.DstPort, math.MaxUint16-int(c.Frame.DstPort)+1)}
	}
	if c.Duration < 0 {
		return &FieldError{"Duration", fmt.Sprintf("%v is negative", c.Duration)}
	}
	if c.Threads < 0 {
		return &FieldError{"Threads", fmt.Sprintf("%d: need at least 1 thread", c.Threads)}
	}
	if c.Threads == 0 {
		c.Threads = max(1, len(c.CPUs))
	}
	if len(c.CPUs) == 0 {
		online, err := cpuset.Online()
		if err != nil {
			return err
		}
		if len(online) < c.Threads {
			return &FieldError{"Threads", fmt.Sprintf("%d threads but only %d CPUs online (%s): one thread per CPU",
				c.Threads, len(online), cpuset.Format(online))}
		}
		c.CPUs = online[:c.Threads]
	}
	// Each CPU first: "--cpus 4000" is about CPU 4000, not the count.
	if err := cpuset.CheckOnline(c.CPUs); err != nil {
		return &FieldError{"CPUs", err.Error()}
	}
	if len(c.CPUs) != c.Threads {
		return &FieldError{"CPUs", fmt.Sprintf("%s for %s: give one CPU per thread", plural(len(c.CPUs), "CPU"), plural(c.Threads, "thread"))}
	}
	seen := make(map[int]bool, len(c.CPUs))
	for _, cpu := range c.CPUs {
		if seen[cpu] {
			// The program counts per CPU: two threads on one CPU could
			// not be told apart.
			return &FieldError{"CPUs", fmt.Sprintf("CPU %d given twice: one thread per CPU", cpu)}
		}
		seen[cpu] = true
	}
	if c.Rate != 0 && c.Rate < uint64(c.Threads) {
		return &FieldError{"Rate", fmt.Sprintf("%d pps is less than 1 pps per thread (%d threads)", c.Rate, c.Threads)}
	}
	if c.Interval < 0 {
		return &FieldError{"Interval", fmt.Sprintf("%v is negative", c.Interval)}
	}
	if c.Method < Auto || c.Method > Packet {
		return &FieldError{"Method", fmt.Sprintf("%v: use one of %v", c.Method, methodNames)}
	}
	if c.Copies < 0 || c.Copies > MaxCopies {
		return &FieldError{"Copies", fmt.Sprintf("%d: use 1..%d, or 0 to choose", c.Copies, MaxCopies)}
	}
	if c.Copies > 1 {
		if c.Method == Live {
			return copiesWithout(c.Copies, c.Method)
		}
		if c.Stamp {
			return &FieldError{"Copies", fmt.Sprintf("%d copies of a stamped frame would share its sequence number: one copy with Stamp", c.Copies)}
		}
	}
	if c.Batch < 0 || c.Batch > MaxBatch {
		return &FieldError{"Batch", fmt.Sprintf("%d frames per flush: use 1..%d, or 0 to choose by rate", c.Batch, MaxBatch)}
	}
	if c.FullSpeedBatch < 0 || c.FullSpeedBatch > MaxBatch {
		return &FieldError{"FullSpeedBatch", fmt.Sprintf("%d frames per flush: use 1..%d, or 0 for %d", c.FullSpeedBatch, MaxBatch, BatchSize)}
	}
	if c.Stamp {
		if c.Count == 0 || c.Count > MaxStampCount {
			return &FieldError{"Count", fmt.Sprintf("%d: a stamped run needs a count of 1..%d frames (sequence numbers are 32 bits)",
				c.Count, uint64(MaxStampCount))}
		}
		if c.RunID == 0 {
			return &FieldError{"RunID", "0: a stamped run needs a non-zero run id, so that a receiver can tell its frames"}
		}
		if need := stamp.Offset(&c.Frame) + stamp.Len; c.Frame.Size < need {
			return &FieldError{"Frame.Size", fmt.Sprintf("%d bytes leave no room for a stamp: this frame needs at least %d", c.Frame.Size, need)}
		}
	}
	return nil
}

// ThreadStats is one thread's share of a run.
type ThreadStats struct {
	CPU  int
	Sent uint64
	// Duration is how long the thread has sent: until it sent its share
	// of Count, or the whole run.
	Duration time.Duration
}

// Stats are a run's totals (or, given to the progress callback, the totals
// so far). See the package documentation for what Sent means.
type Stats struct {
	// Method is the method the run used (Auto resolved).
	Method Method
	// Copies is how many frames went out for each frame the sender made
	// (Config.Copies resolved; 1 with Live).
	Copies int
	// Sent is the number of frames the program ran on and redirected to
	// the device: repetitions completed by BPF_PROG_TEST_RUN, or frames
	// the relay's program redirected.
	Sent uint64
	// Bytes is Sent times the frame size (without FCS).
	Bytes     uint64
	Duration  time.Duration
	PerThread []ThreadStats
	// DeviceCounters tells whether the device has the XDP transmit
	// counters (veth) behind Xmit and Errors; when false both are 0.
	DeviceCounters bool
	// Xmit is the device's count of frames its ndo_xdp_xmit accepted during
	// the run (veth: tx_queue_N_xdp_xmit, summed over queues).
	Xmit uint64
	// Errors is the device's count of frames ndo_xdp_xmit refused during
	// the run (veth: tx_queue_N_xdp_xmit_errors: peer ring full, frame too
	// long).
	Errors uint64
	// Skipped counts, with a Rate, the frames the threads owed their
	// pacing when they fell more than 64 frames behind (kept off their
	// CPU, or unable to send that fast) and started afresh without them:
	// the run offered Sent frames where its rate asked for Sent + Skipped
	// over the time it sent. 0 means every thread kept the rate, catching
	// up at most 64 frames at a time.
	Skipped uint64
}

// Unaccounted is Sent - Xmit - Errors when the device has counters: frames
// dropped before the driver saw them (device down, veth peer without XDP
// program or GRO). It is 0 without counters, or if another sender into the
// same device made the device's counts exceed ours.
func (s Stats) Unaccounted() uint64 {
	if !s.DeviceCounters || s.Xmit+s.Errors >= s.Sent {
		return 0
	}
	return s.Sent - s.Xmit - s.Errors
}

// Run sends frames as cfg says until Count frames are sent, Duration has
// passed or ctx is done, whichever comes first, and returns the totals. A
// cancelled ctx is a normal end, not an error. progress, if not nil, is
// called every cfg.Interval with the totals so far, from the goroutine that
// called Run.
//
// Run needs CAP_BPF and CAP_NET_ADMIN (root). It loads its program afresh
// for each call and leaves nothing attached.
func Run(ctx context.Context, cfg Config, progress func(Stats)) (Stats, error) {
	if err := cfg.Validate(); err != nil {
		return Stats{}, err
	}
	if _, ok := ctx.Deadline(); !ok && cfg.Count == 0 && cfg.Duration == 0 {
		return Stats{}, ErrUnbounded
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}

	// Everything that depends on the network namespace (the ifindex, the
	// device counters) is done on this thread, and the workers enter its
	// namespace, so a caller may switch namespace for the duration of Run.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ns, err := netns.Get()
	if err != nil {
		return Stats{}, fmt.Errorf("gen: get network namespace: %w", err)
	}
	defer ns.Close()

	link, err := netlink.LinkByIndex(cfg.Ifindex)
	if err != nil {
		return Stats{}, fmt.Errorf("gen: interface index %d: %w", cfg.Ifindex, err)
	}
	attrs := link.Attrs()
	if attrs.Flags&unix.IFF_UP == 0 {
		return Stats{}, fmt.Errorf("gen: interface %s is down (ip link set %s up)", attrs.Name, attrs.Name)
	}
	l2 := packet.EthHdrLen
	if cfg.Frame.VLAN != 0 {
		l2 += packet.VLANTagLen
	}
	if cfg.Frame.Size-l2 > attrs.MTU {
		return Stats{}, &FieldError{"Frame.Size", fmt.Sprintf("%d-byte frames carry %d bytes of IP, more than the MTU %d of %s",
			cfg.Frame.Size, cfg.Frame.Size-l2, attrs.MTU, attrs.Name)}
	}

	frame := make([]byte, cfg.Frame.Size)
	if cfg.Stamp {
		// Sequence number and time are written by the program.
		_, err = stamp.BuildUDP(frame, cfg.Frame, stamp.Stamp{RunID: cfg.RunID})
	} else {
		_, err = packet.BuildUDP(frame, cfg.Frame)
	}
	if err != nil {
		return Stats{}, fmt.Errorf("gen: %w", err)
	}
	method, err := ChooseMethod(cfg.Method)
	if err != nil {
		return Stats{Method: method}, err
	}
	relayed := method.Relayed()
	if cfg.Copies > 1 && !relayed {
		return Stats{Method: method}, copiesWithout(cfg.Copies, method)
	}
	cfg.Copies = cfg.CopiesFor(method)
	prog, err := load(cfg, relayed)
	if err != nil {
		return Stats{Method: method}, err
	}
	defer prog.Close()
	var senders []sender
	if relayed {
		// The devmap's entry is an ifindex of the namespace of the thread
		// that writes it: this one's.
		for k := range max(1, cfg.Copies) {
			if err := prog.objs.Out.Put(uint32(k), uint32(cfg.Ifindex)); err != nil {
				return Stats{Method: method}, fmt.Errorf("gen: relay: put %s in the program's devmap: %w", attrs.Name, err)
			}
		}
		queues := cfg.Threads
		for _, c := range cfg.CPUs {
			queues = max(queues, c+1)
		}
		r, err := newRelay(prog, queues, max(1500, cfg.Frame.Size))
		if err != nil {
			return Stats{Method: method}, err
		}
		defer r.close()
		for i := range cfg.Threads {
			var s sender
			switch method {
			case XSK:
				s = &xskSender{r: r, cpu: cfg.CPUs[i], frame: frame, rate: senderRate(cfg, i), copies: max(1, cfg.Copies)}
			default:
				if s, err = newPacketSender(r, cfg.CPUs[i], frame, senderRate(cfg, i), max(1, cfg.Copies), &prog.skipped); err != nil {
					for _, o := range senders {
						o.close()
					}
					return Stats{Method: method}, err
				}
			}
			senders = append(senders, s)
		}
	}

	if relayed && cfg.Copies > 1 && cfg.Count > 0 {
		if err := prog.limit(cfg); err != nil {
			return Stats{Method: method}, err
		}
	}
	before, haveCounters := xmitCounters(attrs.Name)

	workers := make([]worker, cfg.Threads)
	stop := make(chan struct{})
	sendCtx, cancelSend := context.WithCancel(context.Background())
	defer cancelSend()
	var stopping atomic.Bool
	failed := make(chan struct{}, cfg.Threads) // a worker's error stops the others
	start := time.Now()
	var wg sync.WaitGroup
	for i := range workers {
		w := &workers[i]
		w.cpu = cfg.CPUs[i]
		w.count = share(cfg.Count, cfg.Threads, i)
		w.rate = share(cfg.Rate, cfg.Threads, i)
		w.batch = batchSize(cfg, w.rate)
		w.copies = uint64(max(1, cfg.Copies))
		if cfg.Count > 0 && w.count == 0 {
			if relayed {
				senders[i].close()
			}
			continue // fewer frames than threads
		}
		w.running.Store(true)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.running.Store(false)
			defer func() { w.took.Store(int64(time.Since(start))) }()
			if relayed {
				w.err = w.runRelayed(sendCtx, prog, senders[i])
			} else {
				w.err = w.run(prog, frame, ns, start, stop, &stopping)
			}
			if w.err != nil {
				failed <- struct{}{}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	snapshot := func() Stats {
		s := Stats{Method: method, Copies: cfg.Copies, Duration: time.Since(start), PerThread: make([]ThreadStats, len(workers)), Skipped: prog.skipped.Load()}
		counts, skipped, _ := prog.state()
		for i := range workers {
			n := workers[i].sent.Load()
			if c := workers[i].cpu; c < len(counts) {
				n = max(n, counts[c])
				s.Skipped += skipped[c]
			}
			took := s.Duration
			if d := workers[i].took.Load(); d != 0 {
				took = time.Duration(d)
			}
			s.PerThread[i] = ThreadStats{CPU: workers[i].cpu, Sent: n, Duration: took}
			s.Sent += n
		}
		s.Bytes = s.Sent * uint64(cfg.Frame.Size)
		if haveCounters {
			if now, ok := xmitCounters(attrs.Name); ok {
				s.DeviceCounters = true
				s.Xmit = counter.Sub(now.TxXDPXmit, before.TxXDPXmit)
				s.Errors = counter.Sub(now.TxXDPXmitErrors, before.TxXDPXmitErrors)
			}
		}
		return s
	}

	tick := time.NewTicker(cfg.Interval)
	defer tick.Stop()
	var deadline <-chan time.Time
	if cfg.Duration > 0 {
		t := time.NewTimer(cfg.Duration)
		defer t.Stop()
		deadline = t.C
	}
	ctxDone := ctx.Done()
	var kick <-chan time.Time
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		case <-tick.C:
			if progress != nil {
				progress(snapshot())
			}
		case <-ctxDone:
			ctxDone, deadline = nil, nil
			kick = stopWorkers(workers, stop, &stopping, cancelSend)
		case <-deadline:
			ctxDone, deadline = nil, nil
			kick = stopWorkers(workers, stop, &stopping, cancelSend)
		case <-failed:
			if !stopping.Load() {
				ctxDone, deadline = nil, nil
				kick = stopWorkers(workers, stop, &stopping, cancelSend)
			}
		case <-kick:
			// A signal sent just before a worker entered the kernel
			// is lost on it: repeat until every worker is out.
			signalWorkers(workers)
		}
	}
	s := snapshot()
	for i := range workers {
		if err := workers[i].err; err != nil {
			return s, err
		}
	}
	return s, nil
}

// stopWorkers tells the workers to stop and interrupts their runs; the
// returned channel ticks for repeating the interruption.
func stopWorkers(workers []worker, stop chan struct{}, stopping *atomic.Bool, cancel context.CancelFunc) <-chan time.Time {
	stopping.Store(true)
	close(stop)
	cancel()
	signalWorkers(workers)
	return time.Tick(5 * time.Millisecond)
}

func signalWorkers(workers []worker) {
	pid := unix.Getpid()
	for i := range workers {
		w := &workers[i]
		if tid := w.tid.Load(); tid != 0 && w.running.Load() {
			// ESRCH (the thread just ended) is fine.
			_ = unix.Tgkill(pid, int(tid), stopSignal)
		}
	}
}

// share is thread i's part of total split over n threads, the remainder
// going to the first threads, so that the parts add up to total exactly.
func share(total uint64, n, i int) uint64 {
	p := total / uint64(n)
	if uint64(i) < total%uint64(n) {
		p++
	}
	return p
}

// xmitCounters reads the veth transmit counters of the interface, summed
// over queues; ok is false when the device has none.
func xmitCounters(name string) (netdev.VethQueue, bool) {
	qs, err := netdev.VethQueueCounters(name)
	if err != nil {
		return netdev.VethQueue{}, false
	}
	return netdev.SumVethQueues(qs), true
}

// program is the loaded generator program.
type program struct {
	objs bpf.GenObjects
	// skipped counts the frames the relay's senders owed their pacing
	// and did not send (the live program counts its own in its state).
	skipped atomic.Uint64
}

func (p *program) Close() error { return p.objs.Close() }

// counts returns the frames sent so far, by CPU.
func (p *program) counts() ([]uint64, error) {
	n, _, err := p.state()
	return n, err
}

// state returns the frames sent so far and the frames pacing skipped, by
// CPU.
func (p *program) state() (sent, skipped []uint64, err error) {
	var st []bpf.GenGenState
	if err := p.objs.State.Lookup(uint32(0), &st); err != nil {
		return nil, nil, fmt.Errorf("gen: read frame counters: %w", err)
	}
	sent, skipped = make([]uint64, len(st)), make([]uint64, len(st))
	for i := range st {
		sent[i], skipped[i] = st[i].Sent, st[i].Skipped
	}
	return sent, skipped, nil
}

// batchSize is the frames per flush of a thread sending at rate (0:
// unlimited).
func batchSize(cfg Config, rate uint64) uint32 {
	switch {
	case cfg.Batch > 0:
		return uint32(cfg.Batch)
	case rate == 0 && cfg.FullSpeedBatch > 0:
		return uint32(cfg.FullSpeedBatch)
	case rate == 0:
		return BatchSize
	case cfg.Stamp:
		return 1 // each frame leaves right after its stamp
	}
	// About one flush every 100 us, so that paced frames reach the device
	// soon after they are due.
	return uint32(min(BatchSize, max(1, rate/10000)))
}

// nsPerFrame is the gap between frames on each CPU that keeps the total at
// or under cfg.Rate, 0 without a rate.
func nsPerFrameOf(cfg Config, relay bool) uint64 {
	if relay {
		return 0 // the senders pace: the relay must not wait in NAPI
	}
	return nsPerFrame(cfg)
}

func nsPerFrame(cfg Config) uint64 {
	if cfg.Rate == 0 {
		return 0
	}
	// Rounded up, so that the rate is an upper bound.
	return (uint64(time.Second)*uint64(cfg.Threads) + cfg.Rate - 1) / cfg.Rate
}

func load(cfg Config, relay bool) (*program, error) {
	spec, err := bpf.LoadGen()
	if err != nil {
		return nil, fmt.Errorf("gen: load program spec: %w", err)
	}
	set := func(name string, v any) error {
		vs, ok := spec.Variables[name]
		if !ok {
			return fmt.Errorf("gen: program has no variable %q", name)
		}
		if err := vs.Set(v); err != nil {
			return fmt.Errorf("gen: set %s: %w", name, err)
		}
		return nil
	}
	for _, err := range []error{
		set(bpf.GenVarIfindex, uint32(cfg.Ifindex)),
		set(bpf.GenVarPortMin, cfg.Frame.DstPort),
		set(bpf.GenVarPortCount, uint16(cfg.Ports)),
		set(bpf.GenVarUdpOff, uint16(cfg.Frame.L4Offset())),
		set(bpf.GenVarRelay, boolByte(relay)),
		set(bpf.GenVarCopies, uint8(max(1, cfg.Copies))),
		set(bpf.GenVarStamp, boolByte(cfg.Stamp)),
		set(bpf.GenVarNsPerFrame, nsPerFrameOf(cfg, relay)),
		set(bpf.GenVarSeqStride, uint32(cfg.Threads)),
	} {
		if err != nil {
			return nil, err
		}
	}
	p := &program{}
	if err := spec.LoadAndAssign(&p.objs, nil); err != nil {
		return nil, fmt.Errorf("gen: load program into the kernel: %w", err)
	}
	if cfg.Stamp {
		if err := p.firstSeqs(cfg.CPUs); err != nil {
			p.Close()
			return nil, err
		}
	}
	return p, nil
}

// copiesWithout is the error of Copies with a method that has no relay.
func copiesWithout(copies int, m Method) error {
	return &FieldError{"Copies", fmt.Sprintf("%d copies with method %v: copies are made by the relay, which only the xsk and packet methods send through", copies, m)}
}

// catchUp is how many frames, at most, a paced relayed sender sends at
// once to catch up after a delay: 256 frames on the wire (a veth ring's
// worth), which the relay makes of copies of each. Enough to make up for
// a sleep's slack, and no burst that a path at the rate could not take.
func catchUp(copies int) uint64 { return uint64(max(1, 256/copies)) }

// senderRate is the rate of relayed thread i's sender: its share of
// cfg.Rate, in frames that the relay sends cfg.Copies times each.
func senderRate(cfg Config, i int) uint64 {
	r := share(cfg.Rate, cfg.Threads, i)
	if c := uint64(max(1, cfg.Copies)); r > 0 {
		r = max(1, r/c)
	}
	return r
}

// limit bounds each thread's CPU's frames to its share of cfg.Count: the
// program sends copies only while they fit, single frames after.
func (p *program) limit(cfg Config) error {
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	st := make([]bpf.GenGenState, n)
	for i, cpu := range cfg.CPUs {
		if cpu >= n {
			return fmt.Errorf("gen: CPU %d is beyond the %d possible CPUs", cpu, n)
		}
		st[cpu].Limit = share(cfg.Count, cfg.Threads, i)
	}
	if err := p.objs.State.Put(uint32(0), st); err != nil {
		return fmt.Errorf("gen: set the frame limits: %w", err)
	}
	return nil
}

// firstSeqs gives the thread on cpus[i] the first sequence number i.
func (p *program) firstSeqs(cpus []int) error {
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	st := make([]bpf.GenGenState, n)
	for i, cpu := range cpus {
		if cpu >= n {
			return fmt.Errorf("gen: CPU %d is beyond the %d possible CPUs", cpu, n)
		}
		st[cpu].Seq = uint64(i)
	}
	if err := p.objs.State.Put(uint32(0), st); err != nil {
		return fmt.Errorf("gen: set first sequence numbers: %w", err)
	}
	return nil
}

func boolByte(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// worker is one sending thread. sent, tid and running are read by Run while
// the worker runs; the padding keeps workers on separate cache lines.
type worker struct {
	sent    atomic.Uint64
	tid     atomic.Int64
	running atomic.Bool
	took    atomic.Int64 // ns from the start to the thread's end; 0 while it runs
	cpu     int
	count   uint64 // 0: unbounded
	rate    uint64 // 0: unlimited
	batch   uint32
	copies  uint64 // relayed: each frame sent goes out this many times
	err     error
	_       [64]byte
}

// run sends on the calling goroutine's own OS thread, pinned to w.cpu and in
// namespace ns, until its count is reached or stop is closed.
func (w *worker) run(prog *program, frame []byte, ns netns.NsHandle, start time.Time, stop chan struct{}, stopping *atomic.Bool) error {
	// The thread's affinity and namespace are changed below and never
	// restored: the goroutine exits without unlocking, so the runtime ends
	// the thread instead of reusing it.
	if err := cpuset.Pin(w.cpu); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	cur, err := netns.Get()
	if err != nil {
		return fmt.Errorf("gen: get the thread's network namespace: %w", err)
	}
	same := cur.Equal(ns)
	cur.Close()
	if !same {
		if err := netns.Set(ns); err != nil {
			return fmt.Errorf("gen: enter the caller's network namespace: %w", err)
		}
	}
	w.tid.Store(int64(unix.Gettid()))

	fd := prog.objs.XdpGen.FD()
	var sent uint64
	for !stopping.Load() {
		n := uint64(math.MaxUint32)
		if w.count > 0 {
			if sent >= w.count {
				return nil
			}
			n = min(n, w.count-sent)
		}
		// The count is relative to what this CPU has sent: the program's
		// counter (an interrupted run says nothing).
		err := runLive(fd, frame, uint32(n), w.batch)
		counts, cerr := prog.counts()
		if cerr != nil {
			return cerr
		}
		if w.cpu < len(counts) {
			sent = counts[w.cpu]
		}
		w.sent.Store(sent)
		if err != nil && !errors.Is(err, unix.EINTR) {
			if errors.Is(err, unix.EINVAL) && sent == 0 {
				// The frame's size was checked before: a kernel that
				// refuses the first run does not know the flag.
				return fmt.Errorf("gen: BPF_PROG_TEST_RUN on CPU %d: %w (live frames, BPF_F_TEST_XDP_LIVE_FRAMES, need Linux 5.18 or later; txonly sends without them)", w.cpu, err)
			}
			return fmt.Errorf("gen: BPF_PROG_TEST_RUN on CPU %d after %d frames: %w", w.cpu, sent, err)
		}
	}
	return nil
}

// plural is "1 CPU", "2 CPUs".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
