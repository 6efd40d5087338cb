//go:build linux

package bpf

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// XskOptions are the load-time choices of the AF_XDP steering program.
type XskOptions struct {
	// Counters turns on the per rx queue, per CPU redirected/passed counters.
	Counters bool
	// Match chooses what goes to the sockets; everything else goes to the
	// stack. The zero XskMatch sends every frame.
	Match XskMatch
	// Frags loads the program as multi-buffer aware (BPF_F_XDP_HAS_FRAGS,
	// what an "xdp.frags" section does): the driver then hands it frames
	// larger than a page, in fragments, and the sockets get them as several
	// descriptors. Its filter reads only the first fragment, which holds
	// the headers.
	Frags bool
}

// XskRedirect is the loaded steering program of xsk_redirect.c: each rx
// queue's frames go to the AF_XDP socket in XsksMap at that queue's index,
// or to the stack if there is none.
//
// (bpf2go already generated LoadXskRedirect, returning the raw spec, so the
// constructor is NewXskRedirect.)
type XskRedirect struct {
	Program *ebpf.Program
	// XsksMap holds one AF_XDP socket per rx queue (key: queue, value: fd).
	XsksMap *ebpf.Map

	stats    *ebpf.Map
	counters bool
}

// NewXskRedirect loads the steering program with opts.
func NewXskRedirect(opts XskOptions) (*XskRedirect, error) {
	spec, err := LoadXskRedirect()
	if err != nil {
		return nil, fmt.Errorf("load xsk_redirect: %w", err)
	}
	if err := spec.Variables[XskRedirectVarEnableCounters].Set(boolByte(opts.Counters)); err != nil {
		return nil, fmt.Errorf("load xsk_redirect: set counters: %w", err)
	}
	if err := setMatch(spec.Variables, opts.Match); err != nil {
		return nil, fmt.Errorf("load xsk_redirect: %w", err)
	}
	if opts.Frags {
		spec.Programs[XskRedirectProgXskRedirect].Flags |= unix.BPF_F_XDP_HAS_FRAGS
	}
	var objs XskRedirectObjects
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		return nil, fmt.Errorf("load xsk_redirect: %w", err)
	}
	return &XskRedirect{
		Program:  objs.XskRedirect,
		XsksMap:  objs.XsksMap,
		stats:    objs.QueueStats,
		counters: opts.Counters,
	}, nil
}

// SetSocket steers rx queue to the AF_XDP socket fd.
func (x *XskRedirect) SetSocket(queue, fd int) error {
	if err := x.XsksMap.Put(uint32(queue), uint32(fd)); err != nil {
		return fmt.Errorf("steer queue %d to AF_XDP socket fd %d: %w", queue, fd, err)
	}
	return nil
}

// XskQueueStat is what one CPU counted for one rx queue.
type XskQueueStat struct {
	Queue      int    `json:"queue"`
	CPU        int    `json:"cpu"`
	Redirected uint64 `json:"redirected"` // to the queue's socket
	Passed     uint64 `json:"passed"`     // to the stack: no socket, or filtered out
}

// Stats reads the cumulative counters: one entry per (queue, CPU) that
// counted anything. It fails if the program was loaded without counters.
func (x *XskRedirect) Stats() ([]XskQueueStat, error) {
	if !x.counters {
		return nil, errors.New("read xsk_redirect stats: loaded without counters")
	}
	var out []XskQueueStat
	err := readPerCPU(x.stats, MaxQueues, func(queue, cpu int, v *XskRedirectQueueCounters) {
		if v.Redirected != 0 || v.Passed != 0 {
			out = append(out, XskQueueStat{Queue: queue, CPU: cpu, Redirected: v.Redirected, Passed: v.Passed})
		}
	})
	if err != nil {
		return nil, fmt.Errorf("read xsk_redirect stats: %w", err)
	}
	return out, nil
}

// Close releases the program and maps. Sockets in XsksMap are not closed.
func (x *XskRedirect) Close() error {
	return errors.Join(x.Program.Close(), x.XsksMap.Close(), x.stats.Close())
}
