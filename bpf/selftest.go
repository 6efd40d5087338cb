//go:build linux

package bpf

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// SelftestOptions are the load-time choices of xsk_selftest.c.
type SelftestOptions struct {
	// DropHalf drops every second test frame in the program.
	DropHalf bool
	// BySelector sends each test frame to the socket at the key (0 or 1)
	// its first byte after the EtherType selects.
	BySelector bool
	// Metadata puts each test frame's number among those seen on queue
	// 0 in front of it, as 8 bytes of metadata in host order.
	Metadata bool
	// AdjustTail grows (positive) or shrinks (negative) each test frame
	// by this many bytes with bpf_xdp_adjust_tail.
	AdjustTail int32
	// Frags loads the program as multi-buffer aware (BPF_F_XDP_HAS_FRAGS).
	Frags bool
}

// SelftestCounts are what the selftest program did with the test frames
// (EtherType 0x9000) it saw.
type SelftestCounts struct {
	Redirected uint64 // to the socket at key 0 of Xsks
	Dropped    uint64 // by DropHalf
	OtherQueue uint64 // arrived on a queue other than 0, passed to the stack
	NoSocket   uint64 // no socket at key 0, passed to the stack
	Seen       uint64 // all of them that arrived on queue 0
	// AdjustFailed counts frames bpf_xdp_adjust_tail failed on (passed
	// to the stack); AdjustErr is its last error number.
	AdjustFailed, AdjustErr uint64
}

// Selftest is xsk_selftest.c loaded: the steering program of xdpeng
// selftest, which sends only the test's frames on queue 0 to an AF_XDP
// socket and leaves the device's other traffic alone.
type Selftest struct {
	Program *ebpf.Program
	// Xsks holds the receiving socket at key 0.
	Xsks   *ebpf.Map
	counts *ebpf.Map
}

// NewSelftest loads the program with opts.
func NewSelftest(opts SelftestOptions) (*Selftest, error) {
	if opts.Metadata {
		if err := CheckAdjustMeta(); err != nil {
			return nil, fmt.Errorf("load xsk_selftest: %w", err)
		}
	}
	spec, err := LoadXskSelftest()
	if err != nil {
		return nil, fmt.Errorf("load xsk_selftest: %w", err)
	}
	for _, v := range []struct {
		name string
		on   bool
	}{{XskSelftestVarDropHalf, opts.DropHalf}, {XskSelftestVarBySelector, opts.BySelector}, {XskSelftestVarMetadata, opts.Metadata}} {
		if err := spec.Variables[v.name].Set(boolByte(v.on)); err != nil {
			return nil, fmt.Errorf("load xsk_selftest: set %s: %w", v.name, err)
		}
	}
	if err := spec.Variables[XskSelftestVarAdjustTail].Set(opts.AdjustTail); err != nil {
		return nil, fmt.Errorf("load xsk_selftest: set adjust_tail: %w", err)
	}
	if opts.Frags {
		spec.Programs[XskSelftestProgXskSelftest].Flags |= unix.BPF_F_XDP_HAS_FRAGS
	}
	var objs XskSelftestObjects
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		return nil, fmt.Errorf("load xsk_selftest: %w", err)
	}
	return &Selftest{Program: objs.XskSelftest, Xsks: objs.Xsks, counts: objs.Counts}, nil
}

// SetSocket puts the AF_XDP socket fd at key of Xsks.
func (s *Selftest) SetSocket(key, fd int) error {
	if err := s.Xsks.Put(uint32(key), uint32(fd)); err != nil {
		return fmt.Errorf("put AF_XDP socket fd %d at key %d: %w", fd, key, err)
	}
	return nil
}

// Counts reads the program's counts.
func (s *Selftest) Counts() (SelftestCounts, error) {
	var v [7]uint64
	for i := range v {
		if err := s.counts.Lookup(uint32(i), &v[i]); err != nil {
			return SelftestCounts{}, fmt.Errorf("read xsk_selftest counts: %w", err)
		}
	}
	return SelftestCounts{Redirected: v[0], Dropped: v[1], OtherQueue: v[2], NoSocket: v[3], Seen: v[4], AdjustFailed: v[5], AdjustErr: v[6]}, nil
}

// Close releases the program and maps.
func (s *Selftest) Close() error {
	return errors.Join(s.Program.Close(), s.Xsks.Close(), s.counts.Close())
}
