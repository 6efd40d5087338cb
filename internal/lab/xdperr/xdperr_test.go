package xdperr

import (
	"strings"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func TestActionString(t *testing.T) {
	for a, want := range map[Action]string{Aborted: "XDP_ABORTED", Drop: "XDP_DROP", Pass: "XDP_PASS", TX: "XDP_TX", Redirect: "XDP_REDIRECT", 9: "action 9"} {
		if got := a.String(); got != want {
			t.Errorf("Action(%d) = %q, want %q", uint32(a), got, want)
		}
	}
}

// before and after are two reads of one Watcher: a device in namespace 7
// (ifindex 2, program 40) and one in namespace 8 with the same ifindex.
var (
	before = Snapshot{
		Exceptions: []Exception{{Netns: 7, Ifindex: 2, ProgID: 40, Action: Aborted, Frames: 5}},
		RedirectErrors: []RedirectError{
			{Netns: 7, Ifindex: 2, ProgID: 40, Errno: unix.ENETDOWN, ToIfindex: 3, MapType: ebpf.DevMap, MapID: 9, Frames: 100},
		},
		DevmapXmit: []Xmit{{Netns: 7, Ifindex: 2, ToIfindex: 3, Flushes: 10, Sent: 150, Drops: 10}},
		Unrecorded: 1,
	}
	after = Snapshot{
		Exceptions: []Exception{
			{Netns: 7, Ifindex: 2, ProgID: 40, Action: Aborted, Frames: 5}, // unchanged
			{Netns: 7, Ifindex: 2, ProgID: 40, Action: Redirect, Frames: 4},
			{Netns: 8, Ifindex: 2, ProgID: 41, Action: TX, Frames: 3},
		},
		RedirectErrors: []RedirectError{
			{Netns: 7, Ifindex: 2, ProgID: 40, Errno: unix.ENETDOWN, ToIfindex: 3, MapType: ebpf.DevMap, MapID: 9, Frames: 130},
			{Netns: 8, Ifindex: 2, ProgID: 41, Errno: unix.ENOSPC, MapType: ebpf.XSKMap, MapID: 10, Frames: 2},
		},
		BulkTx:        []Xmit{{Netns: 8, Ifindex: 2, Errno: unix.ENXIO, Flushes: 1, Sent: 0, Drops: 16}},
		DevmapXmit:    []Xmit{{Netns: 7, Ifindex: 2, ToIfindex: 3, Flushes: 12, Sent: 180, Drops: 12}},
		CPUMapEnqueue: []CPUMap{{MapID: 11, CPU: 1, Batches: 2, Processed: 64, Drops: 6}},
		CPUMapKthread: []CPUMap{{MapID: 11, CPU: 1, Batches: 1, Processed: 58}},
		Unrecorded:    3,
	}
)

func TestSub(t *testing.T) {
	want := Snapshot{
		Exceptions: []Exception{
			{Netns: 7, Ifindex: 2, ProgID: 40, Action: Redirect, Frames: 4},
			{Netns: 8, Ifindex: 2, ProgID: 41, Action: TX, Frames: 3},
		},
		RedirectErrors: []RedirectError{
			{Netns: 7, Ifindex: 2, ProgID: 40, Errno: unix.ENETDOWN, ToIfindex: 3, MapType: ebpf.DevMap, MapID: 9, Frames: 30},
			{Netns: 8, Ifindex: 2, ProgID: 41, Errno: unix.ENOSPC, MapType: ebpf.XSKMap, MapID: 10, Frames: 2},
		},
		BulkTx:        []Xmit{{Netns: 8, Ifindex: 2, Errno: unix.ENXIO, Flushes: 1, Sent: 0, Drops: 16}},
		DevmapXmit:    []Xmit{{Netns: 7, Ifindex: 2, ToIfindex: 3, Flushes: 2, Sent: 30, Drops: 2}},
		CPUMapEnqueue: []CPUMap{{MapID: 11, CPU: 1, Batches: 2, Processed: 64, Drops: 6}},
		CPUMapKthread: []CPUMap{{MapID: 11, CPU: 1, Batches: 1, Processed: 58}},
		Unrecorded:    2,
	}
	if diff := cmp.Diff(want, after.Sub(before)); diff != "" {
		t.Errorf("Sub (-want +got):\n%s", diff)
	}
	if got := after.Sub(after); !cmp.Equal(got, Snapshot{}) {
		t.Errorf("a snapshot minus itself = %+v, want nothing", got)
	}
}

func TestForDevice(t *testing.T) {
	got := after.ForDevice(7, 2)
	want := Snapshot{
		Exceptions: []Exception{
			{Netns: 7, Ifindex: 2, ProgID: 40, Action: Aborted, Frames: 5},
			{Netns: 7, Ifindex: 2, ProgID: 40, Action: Redirect, Frames: 4},
		},
		RedirectErrors: []RedirectError{
			{Netns: 7, Ifindex: 2, ProgID: 40, Errno: unix.ENETDOWN, ToIfindex: 3, MapType: ebpf.DevMap, MapID: 9, Frames: 130},
		},
		DevmapXmit:    []Xmit{{Netns: 7, Ifindex: 2, ToIfindex: 3, Flushes: 12, Sent: 180, Drops: 12}},
		CPUMapEnqueue: after.CPUMapEnqueue,
		CPUMapKthread: after.CPUMapKthread,
		Unrecorded:    3,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ForDevice(7, 2) (-want +got):\n%s", diff)
	}
	// Namespace 0 matches any: both devices with ifindex 2.
	if got := after.ForDevice(0, 2); len(got.Exceptions) != 3 || len(got.RedirectErrors) != 2 || len(got.BulkTx) != 1 {
		t.Errorf("ForDevice(0, 2) = %+v, want every entry of ifindex 2", got)
	}
	if got := after.ForDevice(7, 5); len(got.Exceptions)+len(got.RedirectErrors)+len(got.BulkTx)+len(got.DevmapXmit) != 0 {
		t.Errorf("ForDevice(7, 5) = %+v, want no device entry", got)
	}
}

func TestReasons(t *testing.T) {
	got := after.Reasons()
	// The XDP_REDIRECT exception is the same loss as a redirect error, so
	// it is not a reason of its own; the kthread dropped nothing.
	want := []Reason{
		{Tracepoint: "xdp_redirect_err", Detail: "ENETDOWN", Frames: 130},
		{Tracepoint: "xdp_bulk_tx", Detail: "ENXIO", Frames: 16},
		{Tracepoint: "xdp_devmap_xmit", Frames: 12},
		{Tracepoint: "xdp_cpumap_enqueue", Frames: 6},
		{Tracepoint: "xdp_exception", Detail: "XDP_ABORTED", Frames: 5},
		{Tracepoint: "unrecorded", Frames: 3},
		{Tracepoint: "xdp_exception", Detail: "XDP_TX", Frames: 3},
		{Tracepoint: "xdp_redirect_err", Detail: "ENOSPC", Frames: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Reasons (-want +got):\n%s", diff)
	}
	if got, want := after.Lost(), uint64(130+16+12+6+5+3+3+2); got != want {
		t.Errorf("Lost = %d, want %d", got, want)
	}
	if got := want[0].String(); got != "xdp_redirect_err ENETDOWN 130" {
		t.Errorf("Reason.String = %q", got)
	}
	if got := want[2].String(); got != "xdp_devmap_xmit 12" {
		t.Errorf("Reason.String = %q", got)
	}
	if got := (Snapshot{}).Reasons(); got != nil {
		t.Errorf("Reasons of nothing = %+v, want none", got)
	}
}

func TestErrnoName(t *testing.T) {
	for e, want := range map[int32]string{-int32(unix.ENETDOWN): "ENETDOWN", int32(unix.EMSGSIZE): "EMSGSIZE", 0: "", -4000: "errno 4000"} {
		if got := ErrnoName(errno(e)); got != want {
			t.Errorf("ErrnoName(errno(%d)) = %q, want %q", e, got, want)
		}
	}
}

// traceTypedef builds a btf_trace_NAME typedef whose prototype takes the
// tracepoint's private data and then args.
func traceTypedef(name string, args ...btf.Type) *btf.Typedef {
	params := []btf.FuncParam{{Type: &btf.Pointer{Target: &btf.Void{}}}}
	for _, a := range args {
		params = append(params, btf.FuncParam{Type: a})
	}
	return &btf.Typedef{Name: "btf_trace_" + name, Type: &btf.Pointer{Target: &btf.FuncProto{Return: &btf.Void{}, Params: params}}}
}

func TestCheckTracepoints(t *testing.T) {
	u32 := &btf.Typedef{Name: "u32", Type: &btf.Int{Name: "unsigned int", Size: 4}}
	i32 := &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	u64 := &btf.Int{Name: "long long unsigned int", Size: 8}
	dev := &btf.Pointer{Target: &btf.Const{Type: &btf.Struct{Name: "net_device"}}}
	prog := &btf.Pointer{Target: &btf.Const{Type: &btf.Struct{Name: "bpf_prog"}}}
	voidp := &btf.Pointer{Target: &btf.Const{Type: &btf.Void{}}}
	mapType := &btf.Enum{Name: "bpf_map_type", Size: 4}

	types := []btf.Type{
		traceTypedef("xdp_exception", dev, prog, u32),
		traceTypedef("xdp_redirect_err", dev, prog, voidp, i32, mapType, u32, u32),
		// An older prototype: (dev, prog, to_ifindex, err, map, map_index).
		traceTypedef("xdp_devmap_xmit", dev, i32, i32, i32, i32, i32),
		// A 64-bit count where the program reads 32 bits.
		traceTypedef("xdp_cpumap_enqueue", i32, u64, i32, i32),
		traceTypedef("xdp_cpumap_kthread", i32, u32, u32, i32, &btf.Pointer{Target: &btf.Struct{Name: "xdp_cpumap_stats"}}),
		// Not a function pointer.
		&btf.Typedef{Name: "btf_trace_xdp_bulk_tx", Type: i32},
	}
	b, err := btf.NewBuilder(types, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := b.Spec()
	if err != nil {
		t.Fatal(err)
	}
	have, missing, err := checkTracepoints(spec)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"xdp_exception", "xdp_redirect_err", "xdp_cpumap_kthread"}; !cmp.Equal(have, want) {
		t.Errorf("have %v, want %v", have, want)
	}
	reasons := map[string]string{}
	for _, m := range missing {
		reasons[m.Tracepoint] = m.Reason
	}
	for tp, want := range map[string]string{
		"xdp_bulk_tx":        "not a function pointer",
		"xdp_devmap_xmit":    "arguments here (piiiii) differ from those the program reads (ppiii)",
		"xdp_cpumap_enqueue": "arguments here (i?ii) differ",
	} {
		if !strings.Contains(reasons[tp], want) {
			t.Errorf("missing %s: reason %q, want it to say %q", tp, reasons[tp], want)
		}
	}
	if len(missing) != 3 {
		t.Errorf("missing = %v, want 3 entries", missing)
	}

	// A kernel without any of them.
	b, _ = btf.NewBuilder([]btf.Type{i32}, nil)
	empty, err := b.Spec()
	if err != nil {
		t.Fatal(err)
	}
	have, missing, err = checkTracepoints(empty)
	if err != nil || len(have) != 0 || len(missing) != len(tracepoints) || missing[0].Reason != "not in this kernel" {
		t.Errorf("empty kernel: have %v, missing %v, err %v", have, missing, err)
	}
}

// A failed redirect into an AF_XDP socket names the socket's counter that
// has the same frames; other redirects name none.
func TestXSKRefusal(t *testing.T) {
	for _, tc := range []struct {
		e    RedirectError
		want string
	}{
		{RedirectError{MapType: ebpf.XSKMap, Errno: syscall.ENOBUFS}, "rx_ring_full"},
		{RedirectError{MapType: ebpf.XSKMap, Errno: syscall.ENOMEM}, "fill ring"},
		{RedirectError{MapType: ebpf.XSKMap, Errno: syscall.ENOSPC}, "longer than a UMEM frame"},
		{RedirectError{MapType: ebpf.XSKMap, Errno: syscall.EINVAL}, "refused them"},
		{RedirectError{MapType: ebpf.DevMap, Errno: syscall.ENOBUFS}, ""},
	} {
		got := tc.e.XSKRefusal()
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%v %v: %q, want %q", tc.e.MapType, tc.e.Errno, got, tc.want)
		}
	}
}
