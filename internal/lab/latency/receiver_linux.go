package latency

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/xdpeng/xdpeng/bpf"
	"github.com/xdpeng/xdpeng/internal/hook"
	"github.com/xdpeng/xdpeng/internal/netdev"
)

// The Go histogram and the receiver's per-CPU one must have the same shape.
const (
	_ = uint(len(bpf.LatencyCpuStats{}.Hist) - Buckets)
	_ = uint(Buckets - len(bpf.LatencyCpuStats{}.Hist))
)

// Hook is where the receiver takes frames: XDP (native mode) for frames
// that come back through ndo_xdp_xmit or the driver (XDP_TX into a veth, a
// NIC's receive), XDPGeneric, or TC for frames that come back as skbs
// (AF_XDP copy-mode transmit, the stack, a bridge, a tc redirect). On veth,
// frames a peer sends back with XDP_TX reach this end only if it runs an XDP
// program: measure those at XDP.
type Hook = hook.Point

// The hooks, as package hook names them.
const (
	XDP        = hook.XDP
	XDPGeneric = hook.XDPGeneric
	TC         = hook.TC
)

// ParseHook accepts the names Hook.String returns.
func ParseHook(s string) (Hook, error) { return hook.ParsePoint(s) }

// NewRunID returns a random non-zero run id, for gen.Config.RunID and
// ReceiverConfig.RunID.
func NewRunID() uint32 {
	var b [4]byte
	for {
		rand.Read(b[:]) // never fails (crypto/rand)
		if id := binary.LittleEndian.Uint32(b[:]); id != 0 {
			return id
		}
	}
}

// ReceiverConfig describes a receiver for one run.
type ReceiverConfig struct {
	// Ifindex is the interface the frames come back on, in the calling
	// thread's network namespace.
	Ifindex int
	Hook    Hook
	// RunID is the run to measure (gen.Config.RunID).
	RunID uint32
	// Streams is the run's sending threads (gen.Config.Threads); 0 means 1.
	Streams int
	// Capacity is how many sequence numbers are checked for duplicates and
	// order: at least the frames the run sends (gen.Config.Count), at most
	// bpf.MaxLatencyCapacity. It costs one bit each.
	Capacity uint64
}

// Receiver is a receiver program attached to an interface for one run.
type Receiver struct {
	objs *bpf.LatencyReceiver
	link io.Closer
	cfg  ReceiverConfig

	once     sync.Once
	closeErr error
}

// Attach loads a receiver for cfg and attaches it. It never replaces an XDP
// program someone else attached (it fails, naming it); at tc ingress it
// runs after the programs already there. The attachment is a bpf_link, gone
// with the process however it ends.
func Attach(cfg ReceiverConfig) (*Receiver, error) {
	if cfg.Ifindex <= 0 {
		return nil, fmt.Errorf("latency receiver: interface index %d: must be > 0", cfg.Ifindex)
	}
	if cfg.Streams == 0 {
		cfg.Streams = 1
	}
	if cfg.Hook != XDP && cfg.Hook != XDPGeneric && cfg.Hook != TC {
		return nil, fmt.Errorf("latency receiver: unknown hook %v", cfg.Hook)
	}
	objs, err := bpf.NewLatencyReceiver(bpf.LatencyOptions{RunID: cfg.RunID, Streams: cfg.Streams, Capacity: cfg.Capacity})
	if err != nil {
		return nil, fmt.Errorf("latency receiver: %w", err)
	}
	prog := objs.XDP
	if cfg.Hook == TC {
		prog = objs.TC
	}
	l, err := hook.Attach(prog, cfg.Ifindex, cfg.Hook, netdev.ReplaceNone)
	if err != nil {
		objs.Close()
		return nil, fmt.Errorf("latency receiver: %w", err)
	}
	return &Receiver{objs: objs, link: l, cfg: cfg}, nil
}

// Close detaches the receiver and frees it; later calls return the first
// result.
func (r *Receiver) Close() error {
	r.once.Do(func() {
		r.closeErr = errors.Join(r.link.Close(), r.objs.Close())
	})
	return r.closeErr
}

// Counts is what the receiver has counted so far.
type Counts struct {
	// Received counts the stamped frames of the run, duplicates included.
	Received uint64
	// Duplicated counts frames whose sequence number arrived before.
	Duplicated uint64
	// Reordered counts frames whose sequence number is below the highest
	// one seen before in their stream (a sending thread's numbers).
	Reordered uint64
	// Beyond counts frames numbered past the receiver's Capacity: not
	// checked for duplicates or order.
	Beyond uint64
	// OrderUnknown counts frames whose order was not decided (the
	// receiver's compare-and-swap kept losing to other CPUs).
	OrderUnknown uint64
	// Ahead counts frames stamped later than they arrived: not stamped
	// with this host's clock. They are not in the histogram.
	Ahead uint64
	// Other counts frames that were not the run's stamped frames; they
	// went on untouched.
	Other uint64
	// Histogram holds the delays of Received - Ahead frames.
	Histogram Histogram
}

// Unique is the number of distinct sequence numbers received.
func (c *Counts) Unique() uint64 { return c.Received - c.Duplicated }

// MergeCPUs sums the receiver's per-CPU counters and histograms.
func MergeCPUs(per []bpf.LatencyCpuStats) Counts {
	var c Counts
	for i := range per {
		s := &per[i]
		c.Received += s.Received
		c.Duplicated += s.Duplicated
		c.Reordered += s.Reordered
		c.Beyond += s.Beyond
		c.OrderUnknown += s.OrderUnknown
		c.Ahead += s.Ahead
		c.Other += s.Other
		h := Histogram{Counts: s.Hist, Count: s.Count, Sum: s.SumNs, Min: s.MinNs, Max: s.MaxNs}
		c.Histogram.Merge(&h)
	}
	return c
}

// Read returns the counts so far, over all CPUs.
func (r *Receiver) Read() (Counts, error) {
	per, err := r.objs.ReadStats()
	if err != nil {
		return Counts{}, fmt.Errorf("latency receiver: %w", err)
	}
	return MergeCPUs(per), nil
}

// WaitSettled waits for frames still on their way after the generator
// returned: it reads the counts until unique distinct frames have arrived,
// or nothing new has arrived for quiet, or ctx is done, and returns the last
// counts (with ctx's error in the last case).
func (r *Receiver) WaitSettled(ctx context.Context, unique uint64, quiet time.Duration) (Counts, error) {
	tick := time.NewTicker(max(time.Millisecond, quiet/8))
	defer tick.Stop()
	var last uint64
	lastChange := time.Now()
	for {
		c, err := r.Read()
		if err != nil {
			return c, err
		}
		if c.Unique() >= unique {
			return c, nil
		}
		if seen := c.Received + c.Other; seen != last {
			last, lastChange = seen, time.Now()
		} else if time.Since(lastChange) >= quiet {
			return c, nil
		}
		select {
		case <-ctx.Done():
			return c, ctx.Err()
		case <-tick.C:
		}
	}
}

// Result is the outcome of a run: the frames' fate and their delay.
type Result struct {
	Sent       uint64 `json:"sent"`
	Received   uint64 `json:"received"`
	Lost       uint64 `json:"lost"`
	Reordered  uint64 `json:"reordered"`
	Duplicated uint64 `json:"duplicated"`
	// Other counts frames that were not the run's (passed untouched).
	Other   uint64  `json:"other"`
	Latency Summary `json:"latency_ns"`
	// Histogram holds the delay of every received frame.
	Histogram Histogram `json:"-"`
}

// Result turns the counts into a run's result, given the frames the
// generator sent: Lost is Sent minus the distinct sequence numbers
// received. It fails, with the result as far as it goes, when the counts
// cannot be exact: frames numbered beyond the receiver's capacity, order
// undecided, stamps from another clock, or more distinct frames than sent
// (another sender with the same run id).
func (c *Counts) Result(sent uint64) (Result, error) {
	res := Result{
		Sent:       sent,
		Received:   c.Received,
		Reordered:  c.Reordered,
		Duplicated: c.Duplicated,
		Other:      c.Other,
		Latency:    c.Histogram.Summary(),
		Histogram:  c.Histogram,
	}
	var errs []error
	if c.Beyond > 0 {
		errs = append(errs, fmt.Errorf("%d frames carried sequence numbers beyond the receiver's capacity: attach it with a capacity of at least the frames sent", c.Beyond))
	}
	if c.OrderUnknown > 0 {
		errs = append(errs, fmt.Errorf("the order of %d frames was not decided (contention between CPUs)", c.OrderUnknown))
	}
	if c.Ahead > 0 {
		errs = append(errs, fmt.Errorf("%d frames carried a send time later than their arrival: they were not stamped with this host's clock", c.Ahead))
	}
	if u := c.Unique(); u > sent {
		errs = append(errs, fmt.Errorf("%d distinct frames of the run arrived but %d were sent: another sender uses the same run id", u, sent))
	} else {
		res.Lost = sent - u
	}
	if len(errs) > 0 {
		return res, fmt.Errorf("latency result: %w", errors.Join(errs...))
	}
	return res, nil
}
