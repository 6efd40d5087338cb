package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/xdpeng/xdpeng/internal/cpuset"
	"github.com/xdpeng/xdpeng/internal/hook"
	"github.com/xdpeng/xdpeng/internal/xsk"
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
	// from recvfrom/sendto calls in the worker's own context.
	WaitBusyPoll
)

func (m WaitMode) String() string {
	switch m {
	case WaitBusy:
		return "busy"
	case WaitPoll:
		return "poll"
	case WaitBusyPoll:
		return "busy-poll"
	default:
		return "adaptive"
	}
}

// Config describes an engine: which queues of which device, the socket and
// ring geometry, and what each worker does with the frames.
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
	// FrameSize is the UMEM frame size, 2048 or 4096. A received frame
	// must fit in it after the kernel's 256 bytes of XDP headroom: 2048
	// takes an MTU of up to 1774 (with a VLAN tag), 4096 one of 3822.
	FrameSize uint32
	// NumFrames is the number of UMEM frames per socket; 0 means enough to
	// fill the fill ring and the tx ring at once.
	NumFrames uint32
	// Ring sizes, powers of two.
	FillSize, CompletionSize, RxSize, TxSize uint32
	// XDPMode is the attach mode of the steering program.
	XDPMode hook.XDPMode
	// BindMode chooses copy or zero-copy.
	BindMode xsk.BindMode
	// NeedWakeup lets the kernel tell when a system call is needed.
	NeedWakeup bool
	// Wait is what a worker does when there is nothing to do.
	Wait WaitMode
	// BusyPollUsecs and BusyPollBudget are SO_BUSY_POLL and
	// SO_BUSY_POLL_BUDGET for WaitBusyPoll.
	BusyPollUsecs, BusyPollBudget int
	// SharedUmem makes all queues' sockets share one UMEM
	// (XDP_SHARED_UMEM), each with its own share of the frames.
	SharedUmem bool
	// Force replaces an XDP program someone else attached.
	Force bool
	// UDPPort, if not zero, steers only UDP frames to this port to the
	// sockets; the rest goes to the stack.
	UDPPort uint16
	// SteeringCounters turns on the steering program's per-queue counters.
	SteeringCounters bool
	// Handler makes the handler of each queue's worker; nil drops every
	// frame (rxdrop).
	Handler func(queue int) Handler
	// PollTimeout bounds each poll() so that a stop is noticed promptly.
	PollTimeout time.Duration
	// TxOnly, if set, makes the engine a generator (xdpsock -t): its
	// sockets only transmit, no program is attached, Queues are tx queues,
	// and Handler, UDPPort and SharedUmem do not apply.
	TxOnly *TxOnlyConfig
	// Forward, if set, forwards every frame received on Interface out of
	// another device (see ForwardConfig). Handler defaults to a
	// ForwardHandler that rewrites the destination MAC.
	Forward *ForwardConfig
}

// DefaultConfig returns xdpsock's defaults (batch 64, rings of 2048, native
// XDP, auto copy/zero-copy, need_wakeup on) but 2048-byte frames, not 4096:
// in copy mode the kernel writes every frame it receives, and with 4096-byte
// frames the data of all frames falls in the same few cache sets (see
// README, Performance).
func DefaultConfig() Config {
	return Config{
		Batch:          64,
		FrameSize:      2048,
		FillSize:       2048,
		CompletionSize: 2048,
		RxSize:         2048,
		TxSize:         2048,
		XDPMode:        hook.Native,
		BindMode:       xsk.Auto,
		NeedWakeup:     true,
		Wait:           WaitAdaptive,
		BusyPollUsecs:  20,
		BusyPollBudget: 64,
		PollTimeout:    100 * time.Millisecond,
	}
}

// MaxBatch bounds the batch size.
const MaxBatch = 2048

// Validate checks everything that can be checked without the device, so that
// bad input is refused before anything is attached.
func (c *Config) Validate() error {
	if c.Interface == "" {
		return errors.New("no interface given: use -i DEV")
	}
	if c.TxOnly != nil && c.Forward != nil {
		return errors.New("txonly and forward exclude each other")
	}
	if c.TxOnly != nil {
		if err := c.TxOnly.validate(c); err != nil {
			return err
		}
	}
	if c.Forward != nil {
		if err := c.Forward.validate(c); err != nil {
			return err
		}
	}
	if err := (xsk.UmemConfig{FrameSize: c.FrameSize, NumFrames: 1}).Validate(); err != nil {
		return err
	}
	for _, r := range []struct {
		name string
		size uint32
	}{{"fill", c.FillSize}, {"completion", c.CompletionSize}, {"rx", c.RxSize}, {"tx", c.TxSize}} {
		if err := xsk.CheckRingSize(r.name, r.size); err != nil {
			return err
		}
	}
	if c.Batch < 1 || c.Batch > MaxBatch {
		return fmt.Errorf("batch size %d: must be between 1 and %d", c.Batch, MaxBatch)
	}
	if c.TxOnly != nil {
		if uint32(c.Batch) > c.TxSize {
			return fmt.Errorf("batch size %d is larger than the tx ring (%d): a batch must fit in the ring", c.Batch, c.TxSize)
		}
	} else if uint32(c.Batch) > c.RxSize || uint32(c.Batch) > c.FillSize {
		return fmt.Errorf("batch size %d is larger than the rx ring (%d) or fill ring (%d): a batch must fit in the rings", c.Batch, c.RxSize, c.FillSize)
	}
	if c.CPUs != nil {
		// Each CPU first: "--cpus 4000" is about CPU 4000, not the count.
		if err := cpuset.CheckOnline(c.CPUs); err != nil {
			return err
		}
		if c.Queues != nil && len(c.CPUs) != len(c.Queues) {
			return cpuCountError(len(c.CPUs), len(c.Queues))
		}
	}
	if c.NumFrames != 0 && c.NumFrames < uint32(c.Batch) {
		return fmt.Errorf("%d UMEM frames cannot hold a batch of %d", c.NumFrames, c.Batch)
	}
	if c.Wait == WaitBusyPoll && (c.BusyPollUsecs <= 0 || c.BusyPollBudget <= 0) {
		return fmt.Errorf("busy polling needs a positive time (%d us) and budget (%d)", c.BusyPollUsecs, c.BusyPollBudget)
	}
	if c.PollTimeout <= 0 {
		c.PollTimeout = 100 * time.Millisecond
	}
	return nil
}

// cpuCountError says that the CPU list does not match the queue list.
func cpuCountError(cpus, queues int) error {
	return fmt.Errorf("the CPU list has %d CPU(s) for %d queue(s): give one CPU per queue, in queue order", cpus, queues)
}

// framesPerSocket is the UMEM frames one socket gets: what the fill ring
// and the tx ring hold. A socket without a tx ring keeps the surplus on
// its free stack, which hands the most recently received (cache-warm)
// frames back first: measured with 1500-byte frames in layout A, 3.0-3.8
// Mpps against 2.6-3.3 with only as many frames as the fill ring holds.
func (c *Config) framesPerSocket() uint32 {
	if c.NumFrames != 0 {
		return c.NumFrames
	}
	return c.FillSize + c.TxSize
}
