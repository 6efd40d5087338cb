//go:build linux

package bpf

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"
)

// XskMetaOptions are the load-time choices of the steering program with
// receive metadata (xsk_redirect_meta.c).
type XskMetaOptions struct {
	// Ifindex is the device the program is loaded for: the metadata
	// kfuncs reach a driver only from a program bound to its device.
	Ifindex int
	// Hash, Timestamp and VLAN choose the kfuncs called for each frame.
	Hash, Timestamp, VLAN bool
	// Match chooses what goes to the sockets, as XskOptions.Match does.
	Match XskMatch
	// Frags loads the program as multi-buffer aware, as XskOptions.Frags
	// does; the metadata goes in front of a frame's first fragment, where
	// the socket's reader finds it in front of the first descriptor.
	Frags bool
}

// Kfunc names the XDP receive metadata kfuncs, and the Linux version that
// brought each.
var (
	KfuncRxTimestamp = Kfunc{"bpf_xdp_metadata_rx_timestamp", "6.3"}
	KfuncRxHash      = Kfunc{"bpf_xdp_metadata_rx_hash", "6.3"}
	KfuncRxVLANTag   = Kfunc{"bpf_xdp_metadata_rx_vlan_tag", "6.8"}
)

// Kfunc is a kernel function a BPF program may call.
type Kfunc struct {
	Name  string
	Since string // the Linux version that has it
}

// ErrNoKfunc means the running kernel lacks a kfunc (*KfuncError).
var ErrNoKfunc = errors.New("kfunc not in this kernel")

// KfuncError is a kfunc the running kernel does not have.
type KfuncError struct {
	Kfunc Kfunc
	Err   error // why it was not found
}

func (e *KfuncError) Error() string {
	return fmt.Sprintf("the kernel has no %s kfunc (Linux %s and later): %v", e.Kfunc.Name, e.Kfunc.Since, e.Err)
}

// Is makes errors.Is(err, ErrNoKfunc) true.
func (e *KfuncError) Is(target error) bool { return target == ErrNoKfunc }

// Unwrap returns the lookup's error.
func (e *KfuncError) Unwrap() error { return e.Err }

// CheckKfuncs returns a *KfuncError for the first of fns the running
// kernel's BTF does not have.
func CheckKfuncs(fns ...Kfunc) error {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return fmt.Errorf("read the kernel's BTF to look for kfuncs: %w", err)
	}
	for _, f := range fns {
		var fn *btf.Func
		if err := spec.TypeByName(f.Name, &fn); err != nil {
			return &KfuncError{Kfunc: f, Err: err}
		}
	}
	return nil
}

// ErrNoAdjustMeta means the running kernel refuses bpf_xdp_adjust_meta in
// XDP programs, without which no program can put metadata in front of a
// frame (*AdjustMetaError).
var ErrNoAdjustMeta = errors.New("bpf_xdp_adjust_meta refused")

// AdjustMetaError is the kernel's refusal of bpf_xdp_adjust_meta.
type AdjustMetaError struct{ Err error }

func (e *AdjustMetaError) Error() string {
	return fmt.Sprintf("the kernel refuses bpf_xdp_adjust_meta in XDP programs, which receive metadata needs: %v", e.Err)
}

// Is makes errors.Is(err, ErrNoAdjustMeta) true.
func (e *AdjustMetaError) Is(target error) bool { return target == ErrNoAdjustMeta }

// Unwrap returns the verifier's error.
func (e *AdjustMetaError) Unwrap() error { return e.Err }

var (
	adjustMetaOnce sync.Once
	adjustMetaErr  error
)

// CheckAdjustMeta loads an XDP program that calls bpf_xdp_adjust_meta and
// returns an *AdjustMetaError if the kernel refuses it; nil where it
// loads. The answer is kept for the life of the process.
func CheckAdjustMeta() error {
	adjustMetaOnce.Do(func() {
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Type:    ebpf.XDP,
			License: "Dual BSD/GPL",
			Instructions: asm.Instructions{
				asm.Mov.Imm(asm.R2, -8),
				asm.FnXdpAdjustMeta.Call(),
				asm.Mov.Imm(asm.R0, 2), // XDP_PASS
				asm.Return(),
			},
		})
		if err != nil {
			adjustMetaErr = &AdjustMetaError{Err: err}
			return
		}
		prog.Close()
	})
	return adjustMetaErr
}

// NewXskRedirectMeta loads the steering program that writes each frame's
// receive metadata in front of it, bound to the device opts.Ifindex (in
// the caller's network namespace): it can be attached there only, in
// native mode. The kfuncs that opts asks for must be in the kernel
// (CheckKfuncs); a device whose driver does not implement one gets no
// value for it (the valid bit stays clear).
func NewXskRedirectMeta(opts XskMetaOptions) (*XskRedirect, error) {
	if opts.Ifindex <= 0 {
		return nil, fmt.Errorf("load xsk_redirect_meta: invalid interface index %d", opts.Ifindex)
	}
	var want []Kfunc
	if opts.Timestamp {
		want = append(want, KfuncRxTimestamp)
	}
	if opts.Hash {
		want = append(want, KfuncRxHash)
	}
	if opts.VLAN {
		want = append(want, KfuncRxVLANTag)
	}
	if err := CheckKfuncs(want...); err != nil {
		return nil, fmt.Errorf("load xsk_redirect_meta: %w", err)
	}
	if err := CheckAdjustMeta(); err != nil {
		return nil, fmt.Errorf("load xsk_redirect_meta: %w", err)
	}
	spec, err := LoadXskRedirectMeta()
	if err != nil {
		return nil, fmt.Errorf("load xsk_redirect_meta: %w", err)
	}
	for name, v := range map[string]any{
		XskRedirectMetaVarWantHash:      boolByte(opts.Hash),
		XskRedirectMetaVarWantTimestamp: boolByte(opts.Timestamp),
		XskRedirectMetaVarWantVlan:      boolByte(opts.VLAN),
	} {
		if err := spec.Variables[name].Set(v); err != nil {
			return nil, fmt.Errorf("load xsk_redirect_meta: set %s: %w", name, err)
		}
	}
	if err := setMatch(spec.Variables, opts.Match); err != nil {
		return nil, fmt.Errorf("load xsk_redirect_meta: %w", err)
	}
	p := spec.Programs[XskRedirectMetaProgXskRedirectMeta]
	p.Flags |= unix.BPF_F_XDP_DEV_BOUND_ONLY
	if opts.Frags {
		p.Flags |= unix.BPF_F_XDP_HAS_FRAGS
	}
	p.Ifindex = uint32(opts.Ifindex)
	var objs XskRedirectMetaObjects
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		return nil, fmt.Errorf("load xsk_redirect_meta for interface index %d: %w", opts.Ifindex, err)
	}
	return &XskRedirect{Program: objs.XskRedirectMeta, XsksMap: objs.XsksMap}, nil
}
