package xdperr

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf/btf"
)

// Missing is a tracepoint that Start did not attach, and why.
type Missing struct {
	Tracepoint string `json:"tracepoint"`
	Reason     string `json:"reason"`
}

func (m Missing) String() string { return m.Tracepoint + ": " + m.Reason }

// tracepoints are those bpf/xdperr.c counts, in the order of
// bpf.XDPErrTracepoints, each with the arguments its program reads: 'p' a
// pointer, 'i' a 32-bit integer or enum. The kernel's prototype, from the
// btf_trace_NAME typedef in its BTF, must have the same, or the program
// would read the wrong argument.
var tracepoints = []struct {
	name, args string
}{
	{"xdp_exception", "ppi"},        // dev, xdp prog, act
	{"xdp_redirect_err", "pppiiii"}, // dev, xdp prog, tgt, err, map_type, map_id, index
	{"xdp_bulk_tx", "piii"},         // dev, sent, drops, err
	{"xdp_devmap_xmit", "ppiii"},    // from_dev, to_dev, sent, drops, err
	{"xdp_cpumap_enqueue", "iiii"},  // map_id, processed, drops, to_cpu
	{"xdp_cpumap_kthread", "iiiip"}, // map_id, processed, drops, sched, stats
}

// checkTracepoints sorts the tracepoints into those kernel (the kernel's
// BTF) has with the arguments the programs read, and the missing rest.
func checkTracepoints(kernel *btf.Spec) (have []string, missing []Missing, err error) {
	for _, tp := range tracepoints {
		var td *btf.Typedef
		if err := kernel.TypeByName("btf_trace_"+tp.name, &td); err != nil {
			if errors.Is(err, btf.ErrNotFound) {
				missing = append(missing, Missing{tp.name, "not in this kernel"})
				continue
			}
			return nil, nil, fmt.Errorf("look up tracepoint %s in the kernel's BTF: %w", tp.name, err)
		}
		got, err := protoArgs(td)
		if err != nil {
			missing = append(missing, Missing{tp.name, err.Error()})
			continue
		}
		if got != tp.args {
			missing = append(missing, Missing{tp.name, fmt.Sprintf(
				"its arguments here (%s) differ from those the program reads (%s); p: pointer, i: 32-bit integer", got, tp.args)})
			continue
		}
		have = append(have, tp.name)
	}
	return have, missing, nil
}

// protoArgs describes the arguments of a btf_trace_NAME typedef, a pointer
// to a function whose first argument is the tracepoint's private data.
func protoArgs(td *btf.Typedef) (string, error) {
	ptr, ok := btf.UnderlyingType(td.Type).(*btf.Pointer)
	if !ok {
		return "", fmt.Errorf("%s is not a function pointer in the kernel's BTF", td.Name)
	}
	fp, ok := btf.UnderlyingType(ptr.Target).(*btf.FuncProto)
	if !ok || len(fp.Params) == 0 {
		return "", fmt.Errorf("%s is not a tracepoint prototype in the kernel's BTF", td.Name)
	}
	args := make([]byte, 0, len(fp.Params)-1)
	for _, p := range fp.Params[1:] {
		switch t := btf.UnderlyingType(p.Type).(type) {
		case *btf.Pointer:
			args = append(args, 'p')
		case *btf.Int:
			args = append(args, sizeCode(t.Size))
		case *btf.Enum:
			args = append(args, sizeCode(t.Size))
		default:
			args = append(args, '?')
		}
	}
	return string(args), nil
}

func sizeCode(size uint32) byte {
	if size == 4 {
		return 'i'
	}
	return '?'
}
