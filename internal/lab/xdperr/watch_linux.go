//go:build linux

package xdperr

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/xdpeng/xdpeng/bpf"
)

// ErrNoBTF means the kernel has no BTF, which the tp_btf programs need.
var ErrNoBTF = errors.New("the kernel has no BTF (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF), which the xdp tracepoint programs need")

// NoTracepointsError is returned by Start when the kernel has none of the
// tracepoints.
type NoTracepointsError struct {
	Missing []Missing
}

func (e *NoTracepointsError) Error() string {
	return fmt.Sprintf("none of the xdp tracepoints can be attached: %v", e.Missing)
}

// Watcher counts the xdp tracepoints from Start to Close.
type Watcher struct {
	objs     *bpf.XDPErr
	links    []link.Link
	attached []string
	missing  []Missing
	notes    []string
}

// Start attaches a counting program to each xdp tracepoint the kernel has;
// counting starts at zero. It needs root. Close detaches them; so does the
// kernel when the process ends, however it ends.
func Start() (*Watcher, error) {
	kernel, err := btf.LoadKernelSpec()
	if err != nil {
		if errors.Is(err, ebpf.ErrNotSupported) {
			return nil, fmt.Errorf("%w: %w", ErrNoBTF, err)
		}
		return nil, fmt.Errorf("read the kernel's BTF: %w", err)
	}
	have, missing, err := checkTracepoints(kernel)
	if err != nil {
		return nil, err
	}
	if len(have) == 0 {
		return nil, &NoTracepointsError{Missing: missing}
	}
	objs, err := bpf.NewXDPErr(have)
	var notes []string
	if err != nil && slices.Contains(have, redirectErr) && strings.Contains(err.Error(), "program on_redirect_err:") {
		// Some kernels' verifiers do not let a tp_btf program read the
		// tracepoint's void * argument: count it as a raw tracepoint.
		raw, rerr := bpf.NewXDPErr(have, redirectErr)
		if rerr != nil {
			return nil, errors.Join(err, fmt.Errorf("and as a raw tracepoint: %w", rerr))
		}
		notes = append(notes, fmt.Sprintf("%s counted as a raw tracepoint: this kernel's verifier refuses its tp_btf program (%s)", redirectErr, verifierReason(err)))
		objs, err = raw, nil
	}
	if err != nil {
		return nil, err
	}
	w := &Watcher{objs: objs, missing: missing, notes: notes}
	for _, tp := range have {
		var l link.Link
		var err error
		if objs.Raw[tp] {
			l, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: tp, Program: objs.Programs[tp]})
		} else {
			l, err = link.AttachTracing(link.TracingOptions{Program: objs.Programs[tp], AttachType: ebpf.AttachTraceRawTp})
		}
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("attach to tracepoint xdp:%s: %w", tp, err)
		}
		w.links = append(w.links, l)
		w.attached = append(w.attached, tp)
	}
	return w, nil
}

// Attached lists the tracepoints being counted.
func (w *Watcher) Attached() []string { return slices.Clone(w.attached) }

// Missing lists the tracepoints not counted on this kernel, with the
// reason; empty when all are.
func (w *Watcher) Missing() []Missing { return slices.Clone(w.missing) }

// Notes says how this kernel is counted differently, if it is: a
// tracepoint counted through a raw_tp program instead of tp_btf.
func (w *Watcher) Notes() []string { return slices.Clone(w.notes) }

const redirectErr = "xdp_redirect_err"

// verifierReason is the last two lines of the verifier's log, which say
// why it refused, without the instructions before them.
func verifierReason(err error) string {
	var ve *ebpf.VerifierError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var why []string
	for i := len(ve.Log) - 1; i >= 0 && len(why) < 2; i-- {
		if l := strings.TrimSpace(ve.Log[i]); l != "" && !strings.HasPrefix(l, "processed ") && !strings.HasPrefix(l, "verification time") {
			why = append([]string{l}, why...)
		}
	}
	if len(why) == 0 {
		return err.Error()
	}
	return strings.Join(why, ": ")
}

// Read returns the counts since Start, summed over CPUs.
func (w *Watcher) Read() (Snapshot, error) {
	var s Snapshot
	var err error
	m := w.objs.XDPErrMaps
	s.Exceptions, err = readHash(m.Exceptions, func(k bpf.XDPErrExceptionKey, vs []uint64) Exception {
		return Exception{Netns: k.Netns, Ifindex: int(k.Ifindex), ProgID: k.ProgId, Action: Action(k.Action), Frames: sum(vs)}
	})
	if err != nil {
		return Snapshot{}, err
	}
	s.RedirectErrors, err = readHash(m.RedirectErrors, func(k bpf.XDPErrRedirectErrKey, vs []uint64) RedirectError {
		e := RedirectError{Netns: k.Netns, Ifindex: int(k.Ifindex), ProgID: k.ProgId, Errno: errno(k.Err),
			ToIfindex: int(k.ToIfindex), MapType: ebpf.MapType(k.MapType), MapID: k.MapId, Frames: sum(vs)}
		if e.MapType == ebpf.UnspecifiedMap && e.MapID == redirectNoMapID {
			e.MapID = 0
		}
		return e
	})
	if err != nil {
		return Snapshot{}, err
	}
	readXmit := func(m *ebpf.Map) ([]Xmit, error) {
		return readHash(m, func(k bpf.XDPErrXmitKey, vs []bpf.XDPErrXmitValue) Xmit {
			x := Xmit{Netns: k.Netns, Ifindex: int(k.Ifindex), ToIfindex: int(k.ToIfindex), Errno: errno(k.Err)}
			for _, v := range vs {
				x.Flushes += v.Calls
				x.Sent += v.Sent
				x.Drops += v.Drops
			}
			return x
		})
	}
	if s.BulkTx, err = readXmit(m.BulkTx); err != nil {
		return Snapshot{}, err
	}
	if s.DevmapXmit, err = readXmit(m.DevmapXmit); err != nil {
		return Snapshot{}, err
	}
	readCPUMap := func(m *ebpf.Map) ([]CPUMap, error) {
		return readHash(m, func(k bpf.XDPErrCpumapKey, vs []bpf.XDPErrCpumapValue) CPUMap {
			c := CPUMap{MapID: k.MapId, CPU: int(k.Cpu)}
			for _, v := range vs {
				c.Batches += v.Calls
				c.Processed += v.Processed
				c.Drops += v.Drops
			}
			return c
		})
	}
	if s.CPUMapEnqueue, err = readCPUMap(m.CpumapEnqueue); err != nil {
		return Snapshot{}, err
	}
	if s.CPUMapKthread, err = readCPUMap(m.CpumapKthread); err != nil {
		return Snapshot{}, err
	}
	var unrecorded []uint64
	if err := m.Unrecorded.Lookup(uint32(0), &unrecorded); err != nil {
		return Snapshot{}, fmt.Errorf("read %s: %w", m.Unrecorded, err)
	}
	s.Unrecorded = sum(unrecorded)
	s.sort()
	return s, nil
}

// redirectNoMapID is the map id xdp_redirect_err gives a bpf_redirect
// (INT_MAX).
const redirectNoMapID = 0x7fffffff

// readHash converts every entry of a per-CPU hash map.
func readHash[K, V, T any](m *ebpf.Map, conv func(K, []V) T) ([]T, error) {
	var out []T
	var k K
	var vs []V
	it := m.Iterate()
	for it.Next(&k, &vs) {
		out = append(out, conv(k, vs))
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", m, err)
	}
	return out, nil
}

func sum(vs []uint64) uint64 {
	var n uint64
	for _, v := range vs {
		n += v
	}
	return n
}

// errno turns a tracepoint's negative errno into a syscall.Errno.
func errno(err int32) syscall.Errno {
	if err < 0 {
		return syscall.Errno(-err)
	}
	return syscall.Errno(err)
}

func (s *Snapshot) sort() {
	slices.SortFunc(s.Exceptions, func(a, b Exception) int {
		return cmp.Or(cmp.Compare(a.Netns, b.Netns), cmp.Compare(a.Ifindex, b.Ifindex),
			cmp.Compare(a.ProgID, b.ProgID), cmp.Compare(a.Action, b.Action))
	})
	slices.SortFunc(s.RedirectErrors, func(a, b RedirectError) int {
		return cmp.Or(cmp.Compare(a.Netns, b.Netns), cmp.Compare(a.Ifindex, b.Ifindex),
			cmp.Compare(a.ProgID, b.ProgID), cmp.Compare(a.Errno, b.Errno), cmp.Compare(a.ToIfindex, b.ToIfindex),
			cmp.Compare(a.MapType, b.MapType), cmp.Compare(a.MapID, b.MapID))
	})
	xmit := func(a, b Xmit) int {
		return cmp.Or(cmp.Compare(a.Netns, b.Netns), cmp.Compare(a.Ifindex, b.Ifindex),
			cmp.Compare(a.ToIfindex, b.ToIfindex), cmp.Compare(a.Errno, b.Errno))
	}
	slices.SortFunc(s.BulkTx, xmit)
	slices.SortFunc(s.DevmapXmit, xmit)
	cpumap := func(a, b CPUMap) int { return cmp.Or(cmp.Compare(a.MapID, b.MapID), cmp.Compare(a.CPU, b.CPU)) }
	slices.SortFunc(s.CPUMapEnqueue, cpumap)
	slices.SortFunc(s.CPUMapKthread, cpumap)
}

// Close detaches the programs and frees them and their maps.
func (w *Watcher) Close() error {
	var errs []error
	for _, l := range w.links {
		errs = append(errs, l.Close())
	}
	w.links = nil
	if w.objs != nil {
		errs = append(errs, w.objs.Close())
		w.objs = nil
	}
	return errors.Join(errs...)
}

// NetnsCookie returns the cookie of the calling thread's network namespace,
// the Netns of the entries of its devices. It needs Linux 5.14
// (SO_NETNS_COOKIE); call it on a locked OS thread, or from
// testbed.Do, to ask about another namespace.
func NetnsCookie() (uint64, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("netns cookie: open socket: %w", err)
	}
	defer unix.Close(fd)
	c, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE)
	if err != nil {
		return 0, fmt.Errorf("netns cookie: SO_NETNS_COOKIE (Linux 5.14 and later): %w", err)
	}
	return c, nil
}
