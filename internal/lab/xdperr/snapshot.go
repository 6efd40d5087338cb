package xdperr

import (
	"cmp"
	"fmt"
	"slices"
	"syscall"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// Action is an XDP program's verdict, as xdp_exception reports it.
type Action uint32

// The XDP actions of linux/bpf.h.
const (
	Aborted  Action = 0
	Drop     Action = 1
	Pass     Action = 2
	TX       Action = 3
	Redirect Action = 4
)

func (a Action) String() string {
	switch a {
	case Aborted:
		return "XDP_ABORTED"
	case Drop:
		return "XDP_DROP"
	case Pass:
		return "XDP_PASS"
	case TX:
		return "XDP_TX"
	case Redirect:
		return "XDP_REDIRECT"
	}
	return fmt.Sprintf("action %d", uint32(a))
}

// Exception is an xdp_exception count: frames of device Ifindex whose XDP
// program ProgID returned XDP_ABORTED or an action the driver does not know,
// or whose XDP_TX (or, in some drivers, XDP_REDIRECT) the driver could not
// carry out.
type Exception struct {
	Netns   uint64 `json:"netns"`
	Ifindex int    `json:"ifindex"`
	ProgID  uint32 `json:"prog_id"`
	Action  Action `json:"action"`
	Frames  uint64 `json:"frames"`
}

// RedirectError is an xdp_redirect_err count: frames that program ProgID on
// device Ifindex redirected and the kernel could not, failing with Errno:
// ENETDOWN (the target device is down), EMSGSIZE (frame longer than its
// MTU), EOPNOTSUPP (it cannot transmit redirected frames), ENOSPC (an
// AF_XDP socket's rx ring is full), EINVAL (an AF_XDP socket bound to
// another queue), ENOENT (no map entry) and so on.
type RedirectError struct {
	Netns   uint64 `json:"netns"`
	Ifindex int    `json:"ifindex"`
	ProgID  uint32 `json:"prog_id"`
	// Errno is positive: unix.ENETDOWN, not -ENETDOWN.
	Errno syscall.Errno `json:"errno"`
	// ToIfindex is the target device: a DEVMAP or DEVMAP_HASH entry's, or
	// bpf_redirect's ifindex; 0 for other targets and broadcasts.
	ToIfindex int `json:"to_ifindex"`
	// MapType and MapID name the map redirected through; UnspecifiedMap
	// and 0 for bpf_redirect.
	MapType ebpf.MapType `json:"map_type"`
	MapID   uint32       `json:"map_id"`
	Frames  uint64       `json:"frames"`
}

// Xmit counts the flushes of frames to a driver: xdp_bulk_tx (a driver's
// XDP_TX queue, veth for one; ToIfindex is 0) or xdp_devmap_xmit (frames
// redirected through a devmap from Ifindex to ToIfindex). Drops were handed
// to the driver and not sent; Errno is what the driver returned, if anything.
type Xmit struct {
	Netns     uint64        `json:"netns"`
	Ifindex   int           `json:"ifindex"`
	ToIfindex int           `json:"to_ifindex"`
	Errno     syscall.Errno `json:"errno"`
	Flushes   uint64        `json:"flushes"`
	Sent      uint64        `json:"sent"`
	Drops     uint64        `json:"drops"`
}

// CPUMap counts a cpumap's batches: xdp_cpumap_enqueue (frames queued to
// CPU, Drops when its queue was full) or xdp_cpumap_kthread (frames the
// kthread on CPU processed, Drops those it found no memory for).
type CPUMap struct {
	MapID     uint32 `json:"map_id"`
	CPU       int    `json:"cpu"`
	Batches   uint64 `json:"batches"`
	Processed uint64 `json:"processed"`
	Drops     uint64 `json:"drops"`
}

// Snapshot is what the tracepoints counted since Start, every slice in a
// fixed order (by namespace, device, then the rest of the key). In every
// entry, Netns is the cookie of the device's network namespace (NetnsCookie
// gives the caller's), 0 where the kernel has none, and Ifindex the
// device's index in that namespace.
type Snapshot struct {
	Exceptions     []Exception     `json:"exceptions"`
	RedirectErrors []RedirectError `json:"redirect_errors"`
	BulkTx         []Xmit          `json:"bulk_tx"`
	DevmapXmit     []Xmit          `json:"devmap_xmit"`
	CPUMapEnqueue  []CPUMap        `json:"cpumap_enqueue"`
	CPUMapKthread  []CPUMap        `json:"cpumap_kthread"`
	// Unrecorded is the frames lost in events that found their table full
	// (1024 keys each), on any device.
	Unrecorded uint64 `json:"unrecorded"`
}

type exceptionKey struct {
	netns   uint64
	ifindex int
	prog    uint32
	action  Action
}

func (e Exception) key() exceptionKey { return exceptionKey{e.Netns, e.Ifindex, e.ProgID, e.Action} }

type redirectKey struct {
	netns   uint64
	ifindex int
	prog    uint32
	errno   syscall.Errno
	to      int
	mapType ebpf.MapType
	mapID   uint32
}

func (e RedirectError) key() redirectKey {
	return redirectKey{e.Netns, e.Ifindex, e.ProgID, e.Errno, e.ToIfindex, e.MapType, e.MapID}
}

type xmitKey struct {
	netns       uint64
	ifindex, to int
	errno       syscall.Errno
}

func (x Xmit) key() xmitKey { return xmitKey{x.Netns, x.Ifindex, x.ToIfindex, x.Errno} }

type cpumapKey struct {
	mapID uint32
	cpu   int
}

func (c CPUMap) key() cpumapKey { return cpumapKey{c.MapID, c.CPU} }

// Sub returns s minus an earlier snapshot prev of the same Watcher: what was
// counted in between. Entries with nothing new are left out.
func (s Snapshot) Sub(prev Snapshot) Snapshot {
	return Snapshot{
		Exceptions: subEntries(s.Exceptions, prev.Exceptions, Exception.key, func(a, b Exception) (Exception, bool) {
			a.Frames -= b.Frames
			return a, a.Frames != 0
		}),
		RedirectErrors: subEntries(s.RedirectErrors, prev.RedirectErrors, RedirectError.key, func(a, b RedirectError) (RedirectError, bool) {
			a.Frames -= b.Frames
			return a, a.Frames != 0
		}),
		BulkTx:        subEntries(s.BulkTx, prev.BulkTx, Xmit.key, subXmit),
		DevmapXmit:    subEntries(s.DevmapXmit, prev.DevmapXmit, Xmit.key, subXmit),
		CPUMapEnqueue: subEntries(s.CPUMapEnqueue, prev.CPUMapEnqueue, CPUMap.key, subCPUMap),
		CPUMapKthread: subEntries(s.CPUMapKthread, prev.CPUMapKthread, CPUMap.key, subCPUMap),
		Unrecorded:    s.Unrecorded - prev.Unrecorded,
	}
}

func subXmit(a, b Xmit) (Xmit, bool) {
	a.Flushes -= b.Flushes
	a.Sent -= b.Sent
	a.Drops -= b.Drops
	return a, a.Flushes != 0
}

func subCPUMap(a, b CPUMap) (CPUMap, bool) {
	a.Batches -= b.Batches
	a.Processed -= b.Processed
	a.Drops -= b.Drops
	return a, a.Batches != 0
}

// subEntries subtracts prev's entry of the same key from each entry of cur,
// keeping those sub says changed.
func subEntries[T any, K comparable](cur, prev []T, key func(T) K, sub func(a, b T) (T, bool)) []T {
	before := make(map[K]T, len(prev))
	for _, e := range prev {
		before[key(e)] = e
	}
	var out []T
	for _, e := range cur {
		if d, changed := sub(e, before[key(e)]); changed {
			out = append(out, d)
		}
	}
	return out
}

// ForDevice keeps the exceptions, redirect errors and flushes of the device
// with index ifindex in the network namespace whose cookie is netns (0
// matches any namespace, and so does an entry's 0). The cpumap entries and
// Unrecorded name no device and are kept as they are.
func (s Snapshot) ForDevice(netns uint64, ifindex int) Snapshot {
	match := func(n uint64, i int) bool {
		return i == ifindex && (netns == 0 || n == 0 || n == netns)
	}
	out := s
	out.Exceptions = filter(s.Exceptions, func(e Exception) bool { return match(e.Netns, e.Ifindex) })
	out.RedirectErrors = filter(s.RedirectErrors, func(e RedirectError) bool { return match(e.Netns, e.Ifindex) })
	out.BulkTx = filter(s.BulkTx, func(x Xmit) bool { return match(x.Netns, x.Ifindex) })
	out.DevmapXmit = filter(s.DevmapXmit, func(x Xmit) bool { return match(x.Netns, x.Ifindex) })
	return out
}

func filter[T any](in []T, keep func(T) bool) []T {
	var out []T
	for _, e := range in {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// Reason is one reason frames were lost, summed over devices and programs.
type Reason struct {
	// Tracepoint is where it was seen ("xdp_redirect_err"), or
	// "unrecorded" for Snapshot.Unrecorded.
	Tracepoint string `json:"tracepoint"`
	// Detail is the action of an exception ("XDP_ABORTED") or the errno
	// name of an error ("ENETDOWN"); "" when there is none.
	Detail string `json:"detail"`
	Frames uint64 `json:"frames"`
}

func (r Reason) String() string {
	if r.Detail == "" {
		return fmt.Sprintf("%s %d", r.Tracepoint, r.Frames)
	}
	return fmt.Sprintf("%s %s %d", r.Tracepoint, r.Detail, r.Frames)
}

// Reasons sums the lost frames of s by tracepoint and action or errno, most
// frames first; reasons with no lost frame are left out. Exceptions with
// action XDP_REDIRECT are not reasons of their own: the drivers that report
// them (i40e, ixgbe, ice) do so for frames whose redirect failed, which
// xdp_redirect_err counts already. Successful flushes are not losses.
func (s Snapshot) Reasons() []Reason {
	sums := map[[2]string]uint64{}
	for _, e := range s.Exceptions {
		if e.Action != Redirect {
			sums[[2]string{"xdp_exception", e.Action.String()}] += e.Frames
		}
	}
	for _, e := range s.RedirectErrors {
		sums[[2]string{"xdp_redirect_err", ErrnoName(e.Errno)}] += e.Frames
	}
	for _, x := range s.BulkTx {
		sums[[2]string{"xdp_bulk_tx", ErrnoName(x.Errno)}] += x.Drops
	}
	for _, x := range s.DevmapXmit {
		sums[[2]string{"xdp_devmap_xmit", ErrnoName(x.Errno)}] += x.Drops
	}
	for _, c := range s.CPUMapEnqueue {
		sums[[2]string{"xdp_cpumap_enqueue", ""}] += c.Drops
	}
	for _, c := range s.CPUMapKthread {
		sums[[2]string{"xdp_cpumap_kthread", ""}] += c.Drops
	}
	sums[[2]string{"unrecorded", ""}] += s.Unrecorded
	var out []Reason
	for k, n := range sums {
		if n != 0 {
			out = append(out, Reason{Tracepoint: k[0], Detail: k[1], Frames: n})
		}
	}
	slices.SortFunc(out, func(a, b Reason) int {
		return cmp.Or(cmp.Compare(b.Frames, a.Frames), cmp.Compare(a.Tracepoint, b.Tracepoint), cmp.Compare(a.Detail, b.Detail))
	})
	return out
}

// Lost is the number of frames lost for all of Reasons.
func (s Snapshot) Lost() uint64 {
	var n uint64
	for _, r := range s.Reasons() {
		n += r.Frames
	}
	return n
}

// XSKRefusal says, for a failed redirect into an AF_XDP socket (through
// an XSKMAP), which of the socket's own counters (XDP_STATISTICS) has the
// same frames, as the kernel's errno tells it; "" for other redirects.
func (e RedirectError) XSKRefusal() string {
	if e.MapType != ebpf.XSKMap {
		return ""
	}
	switch e.Errno {
	case syscall.ENOBUFS:
		return "the socket's rx ring was full: its xdp stats rx_ring_full counts the same frames"
	case syscall.ENOMEM:
		return "no buffer in the socket's fill ring: its xdp stats rx_dropped counts the same frames"
	case syscall.ENOSPC:
		return "frames longer than a UMEM frame: the socket's xdp stats rx_dropped counts the same frames"
	}
	return "the AF_XDP socket refused them"
}

// ErrnoName names an errno ("ENETDOWN"), "" for none, "errno N" for one
// without a name.
func ErrnoName(e syscall.Errno) string {
	if e == 0 {
		return ""
	}
	if name := unix.ErrnoName(e); name != "" {
		return name
	}
	return fmt.Sprintf("errno %d", int(e))
}
