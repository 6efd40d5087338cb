package engine

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cilium/ebpf"

	"github.com/xdpeng/xdpeng/internal/cpuset"
	"github.com/xdpeng/xdpeng/xsk"
)

// WaitMode says what a worker does when its rx ring is empty.
type WaitMode int

const (
	// WaitAdaptive spins while frames arrive and sleeps in poll() once the
	// rx ring has stayed empty for a millisecond. When another thread
	// wants the worker's CPU (a NAPI thread, a generator) it naps between
	// batches instead of spinning, so it never starves that thread.
	WaitAdaptive WaitMode = iota
	// WaitBusy never sleeps: for a CPU that does nothing else.
	WaitBusy
	// WaitPoll calls poll() before every batch, like xdpsock -p.
	WaitPoll
	// WaitBusyPoll sets SO_PREFER_BUSY_POLL and drives the driver's NAPI
	// from recvfrom/sendto calls in the worker's own context, never
	// sleeping. Where the socket turns out to have no NAPI instance to
	// poll once frames arrive (veth), the worker waits as WaitAdaptive
	// instead (QueueStats.BusyPollInert).
	WaitBusyPoll
	// WaitThreadedBusyPoll has the kernel thread of each queue's NAPI poll
	// it without stopping, the device's interrupt left off (threaded busy
	// polling, Linux 6.19): the NAPI's receive work moves to a thread that
	// takes a CPU whole, and the worker only reads the rings, waiting as
	// WaitAdaptive. New sets each NAPI's threaded mode and Close puts back
	// what it was (NAPIChange.Threaded). On a kernel without the mode New
	// fails with ErrNoThreadedBusyPoll, before it sets anything up; with a
	// driver that does not link every queue served to its NAPI, with an
	// error that wraps errors.ErrUnsupported. The thread runs where
	// the scheduler puts it (its PID is Engine.BusyPollNAPI's
	// NAPIChange.ThreadPID): give it a CPU of its own, away from the
	// workers'.
	WaitThreadedBusyPoll
)

func (m WaitMode) String() string {
	switch m {
	case WaitBusy:
		return "busy"
	case WaitPoll:
		return "poll"
	case WaitBusyPoll:
		return "busy-poll"
	case WaitThreadedBusyPoll:
		return "threaded-busy-poll"
	default:
		return "adaptive"
	}
}

// HugePageMode chooses the pages behind an engine's UMEMs.
type HugePageMode int

const (
	// HugePagesAuto puts the UMEMs of unaligned mode in huge pages when the
	// pool has enough free (HugePages_Free in /proc/meminfo), and in normal
	// pages otherwise, saying so (UmemInfo.Note); aligned UMEMs are in
	// normal pages, which the kernel may merge into transparent huge
	// pages.
	HugePagesAuto HugePageMode = iota
	// HugePagesOn requires huge pages, aligned or unaligned: New fails with
	// ErrNoHugePages when the pool has too few free.
	HugePagesOn
	// HugePagesOff keeps the UMEMs in normal pages.
	HugePagesOff
)

func (m HugePageMode) String() string {
	switch m {
	case HugePagesOn:
		return "on"
	case HugePagesOff:
		return "off"
	default:
		return "auto"
	}
}

// ParseHugePageMode reads a huge page mode by name: auto, on or off.
func ParseHugePageMode(s string) (HugePageMode, error) {
	switch s {
	case "auto":
		return HugePagesAuto, nil
	case "on":
		return HugePagesOn, nil
	case "off":
		return HugePagesOff, nil
	}
	return 0, fmt.Errorf("huge pages %q: want auto, on or off", s)
}

// CheckRingSize returns an error unless size is a ring size the engine
// takes: a power of two from 1 to 65536.
func CheckRingSize(size uint32) error { return xsk.CheckRingSize("", size) }

// KernelHeadroom is what the kernel keeps in front of every received frame
// in its UMEM frame (XDP_PACKET_HEADROOM), before FrameHeadroom.
const KernelHeadroom = xsk.KernelHeadroom

// FrameReserve is what the kernel keeps of every UMEM frame besides
// FrameHeadroom, as it checks the headroom at registration:
// XDP_PACKET_HEADROOM, struct skb_shared_info and 128 bytes of data.
const FrameReserve = xsk.HeadroomReserve

// FrameSizes are the FrameSize values Validate takes on this machine,
// smallest first: the powers of two from 2048 to the page size.
func FrameSizes() []uint32 { return xsk.FrameSizes() }

// MaxFrameHeadroom is the largest FrameHeadroom frames of frameSize bytes
// take: frameSize - FrameReserve.
func MaxFrameHeadroom(frameSize uint32) uint32 { return xsk.MaxHeadroom(frameSize) }

// XDPMode says where the steering program runs. The zero value is
// XDPAuto.
type XDPMode int

const (
	// XDPAuto is native where the kernel reports native XDP for the device
	// (the basic XDP feature, Linux 6.3 and later), generic where it does
	// not; native where the kernel does not report XDP features. New
	// resolves it: Engine.Config says which it became.
	XDPAuto XDPMode = iota
	// XDPNative runs it in the driver (XDP_FLAGS_DRV_MODE), before an skb
	// is made: the fast path, where the driver has XDP support.
	XDPNative
	// XDPGeneric runs it on the skb (XDP_FLAGS_SKB_MODE): every device
	// has it, at the cost of an skb per frame.
	XDPGeneric
)

// String returns "auto", "native" or "generic".
func (m XDPMode) String() string {
	switch m {
	case XDPAuto:
		return "auto"
	case XDPNative:
		return "native"
	case XDPGeneric:
		return "generic"
	}
	return fmt.Sprintf("XDPMode(%d)", int(m))
}

// ParseXDPMode reads an XDP mode by name: "native", "generic" or "auto",
// or the names ip-link and the kernel use, "drv" and "skb".
func ParseXDPMode(s string) (XDPMode, error) {
	switch s {
	case "native", "drv", "driver":
		return XDPNative, nil
	case "generic", "skb":
		return XDPGeneric, nil
	case "auto":
		return XDPAuto, nil
	}
	return 0, fmt.Errorf("XDP mode %q: want native, generic or auto", s)
}

// BindMode chooses how the kernel moves frames between the device and the
// UMEM.
type BindMode int

const (
	// BindAuto takes zero-copy where the driver has it and copy mode
	// elsewhere.
	BindAuto BindMode = iota
	// BindCopy forces copy mode (XDP_COPY): the kernel copies every frame.
	BindCopy
	// BindZeroCopy requires zero-copy (XDP_ZEROCOPY): the device reads and
	// writes the UMEM itself. New fails with ErrNoZeroCopy where the driver
	// does not support it.
	BindZeroCopy
)

func (m BindMode) String() string {
	switch m {
	case BindCopy:
		return "copy"
	case BindZeroCopy:
		return "zero-copy"
	default:
		return "auto"
	}
}

// xsk is the mode as package xsk spells it.
func (m BindMode) xsk() xsk.BindMode {
	switch m {
	case BindCopy:
		return xsk.Copy
	case BindZeroCopy:
		return xsk.ZeroCopy
	default:
		return xsk.Auto
	}
}

// Output is a further device a handler can send frames to, with
// Batch.Forward and the output's Port (ToOutput). Each queue of the
// engine's device gets a transmit socket on the same queue number of the
// output device, so the output needs at least as many queues as the highest
// queue of Config.Queues plus one.
type Output struct {
	// Interface is the device to transmit on; it must differ from the
	// engine's own device and from the other outputs.
	Interface string
	// Copy gives the output's sockets UMEMs of their own, into which each
	// forwarded frame is copied. By default they share the UMEM of the
	// queue they serve (XDP_SHARED_UMEM across devices, Linux 5.10 and
	// later), so a frame goes out without a copy; where the kernel refuses
	// that, the engine copies (see Engine.Outputs).
	Copy bool
}

// MaxOutputs bounds Config.Outputs.
const MaxOutputs = 64

// Config describes an engine: which queues of which device, the socket and
// ring geometry, and what each worker does with the frames. Start from
// DefaultConfig() and change what you need: a zero Config has no frame
// size, rings or batch, and Validate refuses it.
type Config struct {
	// Interface is the device to receive from.
	Interface string
	// Queues are the rx queues to bind; nil means all of the device's.
	Queues []int
	// CPUs pins the worker of Queues[i] to CPUs[i]; nil picks CPUs from the
	// last online one down, away from CPU 0 where a generator usually runs.
	CPUs []int
	// Batch is the most descriptors a worker takes from a ring at once.
	Batch int
	// FrameSize is the UMEM frame size: a power of two from 2048 to the
	// page size (4096 on most machines), what the kernel takes. A
	// received frame must fit in it after the kernel's 256 bytes of XDP
	// headroom and FrameHeadroom: 2048 takes an MTU of up to 1774 (with a
	// VLAN tag), 4096 one of 3822, unless MultiBuffer spreads a frame over
	// several.
	FrameSize uint32
	// FrameHeadroom is the UMEM headroom (XDP_UMEM_REG headroom): bytes
	// the kernel leaves free at the start of every receive buffer, in
	// front of its own 256, for a handler to push headers into
	// (Batch.AdjustHead). It takes from the room for the frame: at most
	// FrameSize - FrameReserve (MaxFrameHeadroom).
	FrameHeadroom uint32
	// Unaligned registers the UMEMs in unaligned chunk mode
	// (XDP_UMEM_UNALIGNED_CHUNK_FLAG), as DPDK and VPP do: the kernel takes
	// buffer addresses as they are and descriptors carry the data's offset
	// in their upper 16 bits. Handlers see no difference. Huge pages back
	// the UMEMs where the system has them free (see HugePages).
	Unaligned bool
	// HugePages chooses the pages behind the UMEMs; see HugePageMode.
	HugePages HugePageMode
	// MultiBuffer lets a received frame span several UMEM frames (XDP
	// multi-buffer: the sockets bind with XDP_USE_SG, the steering
	// program is loaded with BPF_F_XDP_HAS_FRAGS), so that a device's MTU
	// may exceed what one UMEM frame holds, up to 18 UMEM frames per frame
	// (what copy mode transmits on every kernel). A handler sees whole
	// frames (Batch.Segments), and a frame is transmitted or forwarded
	// whole. In native mode the device must have rx-sg among its XDP
	// features (New fails with ErrMultiBuffer otherwise).
	MultiBuffer bool
	// NumFrames is the number of UMEM frames per socket; 0 means enough to
	// fill the fill ring and the tx ring at once.
	NumFrames uint32
	// Ring sizes, powers of two.
	FillSize, CompletionSize, RxSize, TxSize uint32
	// XDPMode is where the steering program runs; the zero value is
	// XDPAuto. XDPNative on a device the kernel reports without native XDP
	// is refused before anything is set up (ErrNoNativeXDP).
	XDPMode XDPMode
	// BindMode chooses copy or zero-copy. BindZeroCopy on a device the
	// kernel reports without xsk-zerocopy is refused before anything is
	// set up (ErrNoZeroCopy).
	BindMode BindMode
	// NeedWakeup lets the kernel tell when a system call is needed.
	NeedWakeup bool
	// Wait is what a worker does when there is nothing to do.
	Wait WaitMode
	// BusyPollUsecs and BusyPollBudget are SO_BUSY_POLL and
	// SO_BUSY_POLL_BUDGET for WaitBusyPoll.
	BusyPollUsecs, BusyPollBudget int
	// BusyPollNAPI, with WaitBusyPoll, are the settings New gives the NAPI
	// instance of each queue served, so that busy polling does the
	// queue's receive work instead of its interrupt: where the kernel has
	// settings of a NAPI's own (Linux 6.13) and the driver links every
	// queue served to its NAPI (netdev queue-get, Linux 6.8). Else the
	// device's own, which its NAPIs share (NAPIChange.Device; not on veth,
	// which has no interrupt). Close puts back what was there; two
	// engines on different queues of a device do not undo each other's.
	// Engine.BusyPollNAPI says what was done.
	// The zero value leaves every NAPI as it is; DefaultConfig asks for
	// DeferHardIRQs 2 and GROFlushTimeout 200 µs.
	BusyPollNAPI NAPIConfig
	// NAPIGuard, if set, hears of each change to a NAPI (BusyPollNAPI)
	// before it is made and after it is put back.
	NAPIGuard NAPIGuard
	// Sched is the scheduling policy of the worker threads, as chrt and
	// xdpsock -W set it: SchedOther (the zero value, the kernel's default
	// time sharing), SchedFIFO or SchedRR, the last two with
	// SchedPriority 1-99 (CAP_SYS_NICE). A real-time worker that never
	// sleeps (WaitBusy) keeps every task of a lower priority off its CPU,
	// the softirq thread that feeds its queue included, save what the
	// kernel's real-time throttling leaves them (5% by default).
	Sched         SchedPolicy
	SchedPriority int
	// SharedUmem makes all queues' sockets share one UMEM
	// (XDP_SHARED_UMEM), each with its own share of the frames.
	SharedUmem bool
	// Force replaces an XDP program that someone else attached through
	// netlink and no running process holds open (ip link, xdp-loader, a
	// loader gone). A program held by another process's bpf_link is never
	// replaced.
	Force bool
	// ForceInUse, with Force, replaces also a program attached through
	// netlink that a running process holds open (xdp-bench, a daemon):
	// that process loses the device without noticing.
	ForceInUse bool
	// Match chooses what the engine's steering program sends to the
	// sockets; the rest goes to the stack. The zero Match sends every
	// frame. Not with XSKMap.
	Match Match
	// UDPPort, if not zero, is Match{IPProto: 17, DstPort: UDPPort}: only
	// UDP frames to this port reach the sockets. Not with Match or XSKMap.
	UDPPort uint16
	// XSKMap, if set, is the caller's XSKMAP (BPF_MAP_TYPE_XSKMAP), in
	// which New puts each queue's socket at the queue's id, in place of
	// the engine's own steering program. Its program must redirect each
	// frame it wants in userspace to the map at the frame's
	// rx_queue_index and let the others go on (bpf_redirect_map(&map,
	// ctx->rx_queue_index, XDP_PASS)): a frame redirected to a queue
	// without a socket is lost. The map needs an entry for every queue
	// served (MaxEntries above the highest). Without Program the engine
	// attaches nothing: the program is the caller's to attach (before or
	// after New) and to remove, and it may serve other users too. Close
	// deletes the entries New put, and leaves the map (and the caller's
	// program) to the caller. Not with UDPPort or RxMetadata, which are
	// the engine's program's.
	XSKMap *ebpf.Map
	// Program, with XSKMap, is the caller's XDP program, which New
	// attaches to the device as it attaches its own (a bpf_link, in
	// XDPMode, refused where another program is attached unless Force
	// allows it) and Close detaches; the program stays the caller's.
	Program *ebpf.Program
	// RxMetadata asks the driver for each frame's RX hash, timestamp or
	// VLAN tag, for the handler (Batch.RxHash, RxTimestamp, RxVLAN); see
	// RxMetadata. The zero value asks for none.
	RxMetadata RxMetadata
	// TxChecksum lets a handler ask, frame by frame, that the UDP or TCP
	// checksum of a frame it transmits or forwards be filled as it is sent
	// (Batch.SetTxChecksum): by the NIC for a zero-copy socket whose driver
	// has tx-checksum, by the kernel in copy mode (AF_XDP TX metadata,
	// Linux 6.8 and later). New fails with ErrTxMetadata where the kernel
	// or the device cannot, and with multi-buffer, unaligned chunks or an
	// output of its own UMEM (Output.Copy); BindAuto on a device whose
	// zero-copy cannot fill checksums binds in copy mode.
	TxChecksum bool
	// Handler makes the handler of each queue's worker. New calls it once
	// per queue, in the order of Queues, from New's goroutine. The
	// handler's methods (Handle, and Idle for an Idler) are then called
	// only by that queue's worker, one batch at a time, while Run runs:
	// from a goroutine locked to an OS thread pinned to the queue's CPU,
	// so a handler locks nothing for its own state. When Run has returned
	// every worker has ended, and the handler's state may be read without
	// locking; a handler that is read while Run runs (a counter shown
	// each second) publishes what it shares with atomics. nil drops every
	// frame unread, the fastest receive loop (rxdrop).
	Handler func(queue int) Handler
	// Outputs are the devices a handler can forward to, destination
	// ToOutput(i) for Outputs[i].
	Outputs []Output
	// PollTimeout bounds each poll() so that a stop is noticed promptly;
	// 0 means 100 ms (New fills it in).
	PollTimeout time.Duration
	// OnLinkChange, if set, hears the device or an output going down
	// (set down, carrier lost) and coming back while Run runs; the run goes
	// on through it. It is called from Run's goroutine and must return
	// quickly. A device that goes away ends Run instead (ErrDeviceGone).
	OnLinkChange func(LinkChange)
}

// DefaultConfig returns xdpsock's defaults (batch 64, rings of 2048, auto
// copy/zero-copy, need_wakeup on) but XDP in native or generic mode as the
// device allows (XDPAuto), and 2048-byte frames, not 4096:
// in copy mode the kernel writes every frame it receives, and with 4096-byte
// frames the data of every frame falls in the same few cache sets.
func DefaultConfig() Config {
	return Config{
		Batch:          64,
		FrameSize:      2048,
		FillSize:       2048,
		CompletionSize: 2048,
		RxSize:         2048,
		TxSize:         2048,
		XDPMode:        XDPAuto,
		BindMode:       BindAuto,
		NeedWakeup:     true,
		Wait:           WaitAdaptive,
		BusyPollUsecs:  20,
		BusyPollBudget: 64,
		BusyPollNAPI:   NAPIConfig{DeferHardIRQs: 2, GROFlushTimeout: 200 * time.Microsecond},
		PollTimeout:    defaultPollTimeout,
	}
}

// SchedPolicy is a scheduling policy of the worker threads; its values are
// Linux's.
type SchedPolicy int

// The scheduling policies Config.Sched takes.
const (
	SchedOther SchedPolicy = 0 // SCHED_OTHER, time sharing
	SchedFIFO  SchedPolicy = 1 // SCHED_FIFO, real time, first in first out
	SchedRR    SchedPolicy = 2 // SCHED_RR, real time, round robin
)

var schedNames = map[SchedPolicy]string{SchedOther: "SCHED_OTHER", SchedFIFO: "SCHED_FIFO", SchedRR: "SCHED_RR"}

func (p SchedPolicy) String() string {
	if n, ok := schedNames[p]; ok {
		return n
	}
	return fmt.Sprintf("SchedPolicy(%d)", int(p))
}

// ParseSchedPolicy parses a policy as chrt and xdpsock name it:
// SCHED_OTHER, SCHED_FIFO, SCHED_RR, or other, fifo, rr.
func ParseSchedPolicy(s string) (SchedPolicy, error) {
	u := strings.ToUpper(s)
	if !strings.HasPrefix(u, "SCHED_") {
		u = "SCHED_" + u
	}
	for p, n := range schedNames {
		if n == u {
			return p, nil
		}
	}
	return 0, fmt.Errorf("unknown scheduling policy %q (want SCHED_OTHER, SCHED_FIFO or SCHED_RR)", s)
}

// checkSched checks a scheduling policy and priority against each other.
func checkSched(p SchedPolicy, priority int) error {
	switch p {
	case SchedOther:
		if priority != 0 {
			return fmt.Errorf("scheduling priority %d: SCHED_OTHER takes 0 (a real-time priority needs SCHED_FIFO or SCHED_RR)", priority)
		}
	case SchedFIFO, SchedRR:
		if priority < 1 || priority > 99 {
			return fmt.Errorf("scheduling priority %d: %v takes 1-99", priority, p)
		}
	default:
		return fmt.Errorf("unknown scheduling policy %v", p)
	}
	return nil
}

// MaxBatch bounds the batch size.
const MaxBatch = 2048

// Validate checks everything that can be checked without the device, so that
// bad input is refused before anything is attached. It changes nothing: New
// fills in the defaults (queues, CPUs, PollTimeout).
func (c *Config) Validate() error {
	if c.Interface == "" {
		return errors.New("no interface given")
	}
	if len(c.Outputs) > MaxOutputs {
		return fmt.Errorf("%d outputs: at most %d", len(c.Outputs), MaxOutputs)
	}
	for i, o := range c.Outputs {
		if o.Interface == "" {
			return fmt.Errorf("output %d has no interface", i)
		}
		if o.Interface == c.Interface {
			return fmt.Errorf("output %s is the input device too: to send frames back out of the queue they came in on, use Batch.Transmit", o.Interface)
		}
		for _, p := range c.Outputs[:i] {
			if p.Interface == o.Interface {
				return fmt.Errorf("output %s is listed twice", o.Interface)
			}
		}
	}
	if c.FrameSize == 0 && c.Batch == 0 && c.FillSize == 0 && c.CompletionSize == 0 && c.RxSize == 0 && c.TxSize == 0 {
		return errors.New("FrameSize, Batch and the ring sizes are 0, as in a zero Config: start from DefaultConfig(), which sets them, and change what you need")
	}
	switch c.XDPMode {
	case XDPAuto, XDPNative, XDPGeneric:
	default:
		return fmt.Errorf("unknown XDP mode %d: use XDPAuto, XDPNative or XDPGeneric", int(c.XDPMode))
	}
	if err := c.checkSockets(true); err != nil {
		return err
	}
	if uint32(c.Batch) > c.RxSize || uint32(c.Batch) > c.FillSize {
		return fmt.Errorf("batch size %d is larger than the rx ring (%d) or fill ring (%d): a batch must fit in the rings", c.Batch, c.RxSize, c.FillSize)
	}
	if err := c.Match.Validate(); err != nil {
		return err
	}
	if c.UDPPort != 0 && !c.Match.IsZero() {
		return errors.New("UDPPort and Match both set: UDPPort is Match{IPProto: 17, DstPort: UDPPort}, give one")
	}
	if err := c.checkXSKMap(); err != nil {
		return err
	}
	for _, q := range c.Queues {
		if q < 0 || q >= MaxQueues {
			return fmt.Errorf("queue %d: an engine serves queues 0 to %d (its steering program's XSKMAP)", q, MaxQueues-1)
		}
	}
	if c.CPUs != nil && c.Queues != nil && len(c.CPUs) != len(c.Queues) {
		return cpuCountError(len(c.CPUs), len(c.Queues))
	}
	return nil
}

// MaxQueues bounds the queue ids an engine serves: its steering program's
// XSKMAP has room for queues 0 to MaxQueues-1.
const MaxQueues = 256

// steering is what the engine's steering program sends to the sockets:
// Match, or UDPPort's.
func (c *Config) steering() Match {
	if c.UDPPort != 0 {
		return Match{IPProto: ipProtoUDP, DstPort: c.UDPPort}
	}
	return c.Match
}

// checkXSKMap checks what can be checked of XSKMap and Program without the
// device: the map's type, its room for the queues named, the program's
// type, and the settings that belong to the engine's own program.
func (c *Config) checkXSKMap() error {
	if c.XSKMap == nil {
		if c.Program != nil {
			return errors.New("a Program needs its XSKMap: the map the program redirects to, in which the engine puts its sockets")
		}
		return nil
	}
	if t := c.XSKMap.Type(); t != ebpf.XSKMap {
		return fmt.Errorf("XSKMap is a map of type %v: it must be an XSKMAP (BPF_MAP_TYPE_XSKMAP)", t)
	}
	for _, q := range c.Queues {
		if q >= 0 && uint32(q) >= c.XSKMap.MaxEntries() {
			return fmt.Errorf("queue %d: XSKMap has room for queues 0 to %d only", q, c.XSKMap.MaxEntries()-1)
		}
	}
	if c.Program != nil && c.Program.Type() != ebpf.XDP {
		return fmt.Errorf("Program is of type %v: it must be an XDP program", c.Program.Type())
	}
	switch {
	case c.UDPPort != 0 || !c.Match.IsZero():
		return errors.New("UDPPort and Match are the engine's own program's: with XSKMap, the program that redirects to the map chooses what reaches the sockets")
	case c.RxMetadata != 0:
		return errors.New("RxMetadata is written by the engine's own program: not with XSKMap")
	}
	return nil
}

// checkSockets checks what an engine and a generator share: frame and ring
// sizes, batch, CPUs, waiting. rx says whether the fill and rx rings are
// used.
func (c *Config) checkSockets(rx bool) error {
	if err := c.umemConfig(1).Validate(); err != nil {
		var fe *xsk.FrameSizeError
		if errors.As(err, &fe) {
			return &kindError{ErrFrameSize, err}
		}
		return err
	}
	switch c.HugePages {
	case HugePagesAuto, HugePagesOn, HugePagesOff:
	default:
		return fmt.Errorf("unknown huge page mode %d", c.HugePages)
	}
	rings := []struct {
		name string
		size uint32
	}{{"completion", c.CompletionSize}, {"tx", c.TxSize}}
	if rx {
		rings = append(rings, []struct {
			name string
			size uint32
		}{{"fill", c.FillSize}, {"rx", c.RxSize}}...)
	}
	for _, r := range rings {
		if err := xsk.CheckRingSize(r.name, r.size); err != nil {
			return err
		}
	}
	if c.Batch < 1 || c.Batch > MaxBatch {
		return fmt.Errorf("batch size %d: must be between 1 and %d", c.Batch, MaxBatch)
	}
	if c.CPUs != nil {
		// Each CPU first: CPU 4000 is about CPU 4000, not the count.
		if err := cpuset.CheckOnline(c.CPUs); err != nil {
			return err
		}
	}
	if c.NumFrames != 0 && c.NumFrames < uint32(c.Batch) {
		return fmt.Errorf("%d UMEM frames cannot hold a batch of %d", c.NumFrames, c.Batch)
	}
	if err := checkSched(c.Sched, c.SchedPriority); err != nil {
		return err
	}
	if c.Wait == WaitBusyPoll && (c.BusyPollUsecs <= 0 || c.BusyPollBudget <= 0) {
		return fmt.Errorf("busy polling needs a positive time (BusyPollUsecs %d) and budget (BusyPollBudget %d)", c.BusyPollUsecs, c.BusyPollBudget)
	}
	return nil
}

// defaultPollTimeout is PollTimeout's default.
const defaultPollTimeout = 100 * time.Millisecond

// pollTimeout is d, or defaultPollTimeout for 0 (or less).
func pollTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		return defaultPollTimeout
	}
	return d
}

// umemConfig is the configuration of a UMEM of n frames, in normal pages.
func (c *Config) umemConfig(n uint32) xsk.UmemConfig {
	return xsk.UmemConfig{FrameSize: c.FrameSize, NumFrames: n, Headroom: c.FrameHeadroom, Unaligned: c.Unaligned,
		TxMetadata: c.TxChecksum, TxSoftwareChecksum: c.TxChecksum}
}

// cpuCountError says that the CPU list does not match the queue list.
func cpuCountError(cpus, queues int) error {
	return fmt.Errorf("the CPU list has %d CPU(s) for %d queue(s): give one CPU per queue, in queue order", cpus, queues)
}

// framesPerSocket is the UMEM frames one socket gets: what the fill ring
// and the tx ring hold. A socket without a tx ring keeps the surplus on
// its free stack, which hands the most recently received (cache-warm)
// frames back first.
func (c *Config) framesPerSocket() uint32 {
	if c.NumFrames != 0 {
		return c.NumFrames
	}
	return c.FillSize + c.TxSize
}
