// Package xdperr tells why XDP frames were lost, from the kernel's xdp
// tracepoints, as xdp-bench -e does: XDP exceptions by action
// (xdp_exception), redirect errors by errno and target (xdp_redirect_err),
// and the drops of XDP_TX bulk flushes (xdp_bulk_tx), devmap transmits
// (xdp_devmap_xmit) and cpumap queues (xdp_cpumap_enqueue,
// xdp_cpumap_kthread). These are the losses no device or socket counter
// explains with a reason: a redirect to a device that is down, for one,
// shows only as a drop in the receiving driver's counters.
//
// Start loads bpf/xdperr.c and attaches one program per tracepoint the
// kernel has; the tracepoints it lacks, or whose arguments differ from what
// the programs read, are listed by Missing with the reason rather than
// failing the start. Read returns cumulative counts; Snapshot.Sub gives what
// happened in an interval, ForDevice narrows it to one device and Reasons
// sums it the way a "lost" line prints it.
//
// The programs are tp_btf (BTF-typed raw tracepoints), attached with bpf
// links: they need no tracefs mount (link.Tracepoint reads the event id
// from tracefs, which is not mounted on every host, and mounting it would
// change the host), the verifier checks the pointers they follow against the
// kernel's BTF, and the kernel detaches them when the last file descriptor
// closes, so a killed process leaves nothing behind. They need a kernel
// with BTF (CONFIG_DEBUG_INFO_BTF, /sys/kernel/btf/vmlinux) and root
// (CAP_BPF and CAP_PERFMON).
//
// The tracepoints fire for every device on the host, in every network
// namespace: entries carry the namespace cookie and ifindex of the device
// (NetnsCookie gives the caller's namespace's cookie) and, where the
// tracepoint has one, the id of the XDP program that made the verdict. An
// attached program costs a map update per event, and on success paths
// (devmap and XDP_TX flushes, cpumap batches) once per flushed batch.
//
// This package loads and attaches programs itself, although internal/hook
// is where programs are attached to a device's data path: these observe and
// attach to no device, so none of hook's rules (never replace another
// tool's program, netlink fallback, detach on every exit) apply.
package xdperr
