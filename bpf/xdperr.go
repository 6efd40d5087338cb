//go:build linux

package bpf

//go:generate go tool bpf2go -tags linux -cflags "-O2 -g -Wall -Werror" XDPErr xdperr.c -- -I/usr/include/x86_64-linux-gnu

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cilium/ebpf"
)

// XDPErrTracepoints lists the tracepoints of the xdp group that xdperr.c
// counts, one program each, in the order tools show them.
var XDPErrTracepoints = []string{
	"xdp_exception",
	"xdp_redirect_err",
	"xdp_bulk_tx",
	"xdp_devmap_xmit",
	"xdp_cpumap_enqueue",
	"xdp_cpumap_kthread",
}

// XDPErr is xdperr.c loaded: a tp_btf program for each tracepoint asked for
// (a raw_tp one for those asked for as raw) and all the counting maps.
// Attaching is the caller's job.
//
// (bpf2go already generated LoadXDPErr, returning the raw spec, so the
// constructor is NewXDPErr.)
type XDPErr struct {
	// Programs holds the loaded programs by tracepoint name.
	Programs map[string]*ebpf.Program
	// Raw holds the tracepoints whose program is a raw_tp one, attached
	// with link.AttachRawTracepoint rather than as tracing.
	Raw map[string]bool
	XDPErrMaps
}

// NewXDPErr loads the programs of tracepoints, a subset of
// XDPErrTracepoints, and every map. Loading needs the kernel's BTF
// (/sys/kernel/btf/vmlinux); a tracepoint the kernel does not have fails the
// load, so the caller leaves those out. The tracepoints in raw (only
// xdp_redirect_err has a raw_tp program) get their raw_tp program.
func NewXDPErr(tracepoints []string, raw ...string) (*XDPErr, error) {
	for _, tp := range tracepoints {
		if !slices.Contains(XDPErrTracepoints, tp) {
			return nil, fmt.Errorf("load xdperr: unknown tracepoint %q (known: %v)", tp, XDPErrTracepoints)
		}
	}
	spec, err := LoadXDPErr()
	if err != nil {
		return nil, fmt.Errorf("load xdperr: %w", err)
	}
	progOf := map[string]string{} // tracepoint -> program name
	for name, ps := range spec.Programs {
		isRaw := ps.Type == ebpf.RawTracepoint
		if !slices.Contains(tracepoints, ps.AttachTo) || isRaw != slices.Contains(raw, ps.AttachTo) {
			delete(spec.Programs, name)
			continue
		}
		progOf[ps.AttachTo] = name
	}
	for _, tp := range raw {
		if _, ok := progOf[tp]; !ok && slices.Contains(tracepoints, tp) {
			return nil, fmt.Errorf("load xdperr: tracepoint %s has no raw_tp program", tp)
		}
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return nil, fmt.Errorf("load xdperr: %w", err)
	}
	x := &XDPErr{Programs: map[string]*ebpf.Program{}, Raw: map[string]bool{}}
	for tp, name := range progOf {
		x.Programs[tp] = coll.DetachProgram(name)
		x.Raw[tp] = spec.Programs[name].Type == ebpf.RawTracepoint
	}
	err = coll.Assign(&x.XDPErrMaps)
	coll.Close()
	if err != nil {
		x.Close()
		return nil, fmt.Errorf("load xdperr: %w", err)
	}
	return x, nil
}

// Close releases the programs and maps. A program stays attached, and its
// maps alive, while a link holds it.
func (x *XDPErr) Close() error {
	var errs []error
	for _, p := range x.Programs {
		errs = append(errs, p.Close())
	}
	errs = append(errs, x.XDPErrMaps.Close())
	return errors.Join(errs...)
}
