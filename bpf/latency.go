//go:build linux

package bpf

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
)

// Limits of LatencyOptions.
const (
	// MaxLatencyStreams bounds LatencyOptions.Streams (sending threads).
	MaxLatencyStreams = 1024
	// MaxLatencyCapacity is the number of distinct sequence numbers a stamp
	// can carry (they are 32 bits).
	MaxLatencyCapacity = 1 << 32
)

// LatencyOptions are the load-time choices of the latency receiver.
type LatencyOptions struct {
	// RunID is the run whose stamped frames are measured; frames of other
	// runs pass as "other".
	RunID uint32
	// Streams is the number of sending threads of the run, 1 or more:
	// sequence number s belongs to stream s % Streams, and reordering is
	// counted within a stream.
	Streams int
	// Capacity is how many sequence numbers (0..Capacity-1) the duplicate
	// bitmap covers, 1..MaxLatencyCapacity; it costs a bit each. Frames
	// numbered beyond it are counted (Beyond) but not checked.
	Capacity uint64
}

// LatencyReceiver is the loaded receiver of latency.c: XDP and TC are the
// same measurement for the two hooks, sharing the maps. Attaching is the
// caller's job (internal/hook).
type LatencyReceiver struct {
	XDP *ebpf.Program
	TC  *ebpf.Program

	stats, seen, highest *ebpf.Map
}

// NewLatencyReceiver loads the receiver with opts, its counters and bitmap
// zeroed.
func NewLatencyReceiver(opts LatencyOptions) (*LatencyReceiver, error) {
	if opts.Streams < 1 || opts.Streams > MaxLatencyStreams {
		return nil, fmt.Errorf("load latency receiver: %d streams: need 1..%d", opts.Streams, MaxLatencyStreams)
	}
	if opts.Capacity < 1 || opts.Capacity > MaxLatencyCapacity {
		return nil, fmt.Errorf("load latency receiver: capacity of %d sequence numbers: need 1..%d", opts.Capacity, uint64(MaxLatencyCapacity))
	}
	spec, err := LoadLatency()
	if err != nil {
		return nil, fmt.Errorf("load latency receiver: %w", err)
	}
	// The probe is for tests (LatencyBuckets); a syscall program needs a
	// newer kernel than the receiver itself.
	delete(spec.Programs, LatencyProgBucketProbe)
	if err := spec.Variables[LatencyVarRunId].Set(opts.RunID); err != nil {
		return nil, fmt.Errorf("load latency receiver: set run id: %w", err)
	}
	if err := spec.Variables[LatencyVarStreams].Set(uint32(opts.Streams)); err != nil {
		return nil, fmt.Errorf("load latency receiver: set streams: %w", err)
	}
	spec.Maps[LatencyMapSeen].MaxEntries = uint32((opts.Capacity + 63) / 64)
	spec.Maps[LatencyMapHighest].MaxEntries = uint32(opts.Streams)

	var objs struct {
		LatencyMaps
		XDP *ebpf.Program `ebpf:"xdp_latency"`
		TC  *ebpf.Program `ebpf:"tc_latency"`
	}
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		return nil, fmt.Errorf("load latency receiver: %w", err)
	}
	return &LatencyReceiver{
		XDP:     objs.XDP,
		TC:      objs.TC,
		stats:   objs.Stats,
		seen:    objs.Seen,
		highest: objs.Highest,
	}, nil
}

// ReadStats returns the counters and histogram of each possible CPU,
// cumulative since load.
func (l *LatencyReceiver) ReadStats() ([]LatencyCpuStats, error) {
	var per []LatencyCpuStats
	if err := l.stats.Lookup(uint32(0), &per); err != nil {
		return nil, fmt.Errorf("read latency receiver stats: %w", err)
	}
	return per, nil
}

// Close releases the programs and maps; a program stays attached while a
// link holds it.
func (l *LatencyReceiver) Close() error {
	return errors.Join(l.XDP.Close(), l.TC.Close(), l.stats.Close(), l.seen.Close(), l.highest.Close())
}

// LatencyBuckets runs latency.c's own bucket function in the kernel on each
// value and returns the histogram bucket of each: the reference that the Go
// histogram is tested against. It needs BPF_PROG_TYPE_SYSCALL (Linux 5.14).
func LatencyBuckets(values []uint64) ([]uint32, error) {
	spec, err := LoadLatency()
	if err != nil {
		return nil, fmt.Errorf("load bucket probe: %w", err)
	}
	keepOnly(spec, LatencyProgBucketProbe)
	prog, err := ebpf.NewProgram(spec.Programs[LatencyProgBucketProbe])
	if err != nil {
		return nil, fmt.Errorf("load bucket probe: %w", err)
	}
	defer prog.Close()
	out := make([]uint32, len(values))
	for i, v := range values {
		ret, err := prog.Run(&ebpf.RunOptions{Context: v})
		if err != nil {
			return nil, fmt.Errorf("run bucket probe on %d: %w", v, err)
		}
		out[i] = ret
	}
	return out, nil
}
