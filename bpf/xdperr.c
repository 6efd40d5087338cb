//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// xdperr counts why XDP frames were lost, from the kernel's xdp tracepoints,
// as xdp-bench -e does: XDP exceptions by action, redirect errors by errno,
// and the drops of XDP_TX bulk flushes, devmap transmits and cpumap queues.
//
// The programs are tp_btf (BTF-typed raw tracepoints): they need no tracefs
// mount, the verifier checks every pointer they follow against the kernel's
// BTF, and the structure offsets they read (ifindex, program id, netns
// cookie) are CO-RE relocated at load time. Counters are per-CPU hash maps
// keyed by what the tracepoint tells; an event that finds its table full is
// counted in "unrecorded" by the frames it lost, so the total stays exact.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define MAX_ENTRIES 1024
// map_id of a plain bpf_redirect(ifindex) in xdp_redirect_err: the
// tracepoint then carries the target ifindex in index.
#define REDIRECT_NO_MAP_ID 0x7fffffff

// The kernel structures read, only the fields used: CO-RE finds each field
// by name in the running kernel's BTF.
#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)
struct net {
	__u64 net_cookie;
};
typedef struct {
	struct net *net;
} possible_net_t;
struct net_device {
	int ifindex;
	possible_net_t nd_net;
};
struct bpf_prog_aux {
	__u32 id;
};
struct bpf_prog {
	struct bpf_prog_aux *aux;
};
struct bpf_dtab_netdev {
	struct net_device *dev;
};
struct xdp_cpumap_stats;
#pragma clang attribute pop

struct exception_key {
	__u64 netns; // netns cookie of the device
	__u32 prog_id;
	__u32 ifindex;
	__u32 action;
	__u32 pad;
};

struct redirect_err_key {
	__u64 netns;
	__u32 prog_id;
	__u32 ifindex;
	__s32 err; // negative errno
	__u32 to_ifindex; // 0 when the target is not a device (or unknown)
	__u32 map_type;
	__u32 map_id;
};

// A flush of frames to a device: XDP_TX bulk (to_ifindex 0) or devmap.
struct xmit_key {
	__u64 netns; // of the sending device
	__u32 ifindex;
	__u32 to_ifindex;
	__s32 err;
	__u32 pad;
};

struct xmit_value {
	__u64 calls;
	__u64 sent;
	__u64 drops;
};

struct cpumap_key {
	__u32 map_id;
	__u32 cpu; // the target CPU (enqueue) or the kthread's CPU
};

struct cpumap_value {
	__u64 calls;
	__u64 processed;
	__u64 drops;
};

#define COUNT_MAP(name, k, v)                              \
	struct {                                           \
		__uint(type, BPF_MAP_TYPE_PERCPU_HASH);    \
		__uint(max_entries, MAX_ENTRIES);          \
		__type(key, k);                            \
		__type(value, v);                          \
	} name SEC(".maps")

COUNT_MAP(exceptions, struct exception_key, __u64);
COUNT_MAP(redirect_errors, struct redirect_err_key, __u64);
COUNT_MAP(bulk_tx, struct xmit_key, struct xmit_value);
COUNT_MAP(devmap_xmit, struct xmit_key, struct xmit_value);
COUNT_MAP(cpumap_enqueue, struct cpumap_key, struct cpumap_value);
COUNT_MAP(cpumap_kthread, struct cpumap_key, struct cpumap_value);

// Frames lost in events that found their table full (per CPU, key 0).
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} unrecorded SEC(".maps");

static __always_inline void add_unrecorded(__u64 frames)
{
	__u32 zero = 0;
	__u64 *v = bpf_map_lookup_elem(&unrecorded, &zero);

	if (v)
		*v += frames;
}

// lookup_or_init returns this CPU's value for key, inserting a zero value if
// there is none; NULL when the table is full. Another CPU inserting the same
// key first makes our insert fail with EEXIST, and the second lookup finds
// its entry (whose value for this CPU is zero).
static __always_inline void *lookup_or_init(void *map, const void *key, const void *zero)
{
	void *v = bpf_map_lookup_elem(map, key);

	if (v)
		return v;
	bpf_map_update_elem(map, key, zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, key);
}

// netns_of returns the cookie of dev's network namespace (what
// SO_NETNS_COOKIE gives for a socket there), 0 on kernels before 5.12, whose
// net_cookie was an atomic64_t set only on first use.
static __always_inline __u64 netns_of(const struct net_device *dev)
{
	if (!dev || !bpf_core_field_exists(((struct net *)0)->net_cookie))
		return 0;
	return BPF_CORE_READ(dev, nd_net.net, net_cookie);
}

static __always_inline __u32 ifindex_of(const struct net_device *dev)
{
	if (!dev)
		return 0;
	return BPF_CORE_READ(dev, ifindex);
}

static __always_inline void count_xmit(void *map, const struct net_device *from, __u32 to_ifindex,
				       int sent, int drops, int err)
{
	struct xmit_key key = {
		.netns = netns_of(from),
		.ifindex = ifindex_of(from),
		.to_ifindex = to_ifindex,
		.err = err,
	};
	struct xmit_value zero = {};
	struct xmit_value *v = lookup_or_init(map, &key, &zero);

	if (!v) {
		if (drops > 0)
			add_unrecorded(drops);
		return;
	}
	v->calls++;
	if (sent > 0)
		v->sent += sent;
	if (drops > 0)
		v->drops += drops;
}

static __always_inline void count_cpumap(void *map, __u32 map_id, __u32 cpu, __u32 processed, __u32 drops)
{
	struct cpumap_key key = { .map_id = map_id, .cpu = cpu };
	struct cpumap_value zero = {};
	struct cpumap_value *v = lookup_or_init(map, &key, &zero);

	if (!v) {
		add_unrecorded(drops);
		return;
	}
	v->calls++;
	v->processed += processed;
	v->drops += drops;
}

// An XDP program returned XDP_ABORTED or an invalid action, or the driver
// failed an XDP_TX (or, in some drivers, a redirect): one frame lost.
SEC("tp_btf/xdp_exception")
int BPF_PROG(on_exception, const struct net_device *dev, const struct bpf_prog *xdp, __u32 act)
{
	struct exception_key key = {
		.netns = netns_of(dev),
		.prog_id = BPF_CORE_READ(xdp, aux, id),
		.ifindex = ifindex_of(dev),
		.action = act,
	};
	__u64 zero = 0;
	__u64 *v = lookup_or_init(&exceptions, &key, &zero);

	if (!v) {
		add_unrecorded(1);
		return 0;
	}
	(*v)++;
	return 0;
}

static __always_inline int count_redirect_err(const struct net_device *dev, const struct bpf_prog *xdp,
					      const void *tgt, int err, enum bpf_map_type map_type, __u32 map_id,
					      __u32 index)
{
	struct redirect_err_key key = {
		.netns = netns_of(dev),
		.prog_id = BPF_CORE_READ(xdp, aux, id),
		.ifindex = ifindex_of(dev),
		.err = err,
		.map_type = map_type,
		.map_id = map_id,
	};
	__u64 zero = 0;
	__u64 *v;

	if (map_type == BPF_MAP_TYPE_DEVMAP || map_type == BPF_MAP_TYPE_DEVMAP_HASH) {
		// tgt is the map entry, NULL for a broadcast.
		if (tgt)
			key.to_ifindex = ifindex_of(BPF_CORE_READ((const struct bpf_dtab_netdev *)tgt, dev));
	} else if (map_type == BPF_MAP_TYPE_UNSPEC && map_id == REDIRECT_NO_MAP_ID) {
		key.to_ifindex = index;
	}
	v = lookup_or_init(&redirect_errors, &key, &zero);
	if (!v) {
		add_unrecorded(1);
		return 0;
	}
	(*v)++;
	return 0;
}

// xdp_do_redirect failed for one frame: target missing, device down
// (ENETDOWN), frame too long (EMSGSIZE), AF_XDP ring full (ENOSPC), ...
SEC("tp_btf/xdp_redirect_err")
int BPF_PROG(on_redirect_err, const struct net_device *dev, const struct bpf_prog *xdp, const void *tgt, int err,
	     enum bpf_map_type map_type, __u32 map_id, __u32 index)
{
	return count_redirect_err(dev, xdp, tgt, err, map_type, map_id, index);
}

// The same, as a plain raw tracepoint, for kernels whose verifier refuses
// a tp_btf program that reads a void * argument (tgt) (Debian's 6.1: "arg2
// type UNKNOWN is not a struct"). Its arguments are plain numbers; every
// pointer is followed with bpf_probe_read_kernel (BPF_CORE_READ).
SEC("raw_tp/xdp_redirect_err")
int BPF_PROG(on_redirect_err_raw, const struct net_device *dev, const struct bpf_prog *xdp, const void *tgt,
	     int err, enum bpf_map_type map_type, __u32 map_id, __u32 index)
{
	return count_redirect_err(dev, xdp, tgt, err, map_type, map_id, index);
}

// A driver flushed its XDP_TX queue: drops frames were not sent.
SEC("tp_btf/xdp_bulk_tx")
int BPF_PROG(on_bulk_tx, const struct net_device *dev, int sent, int drops, int err)
{
	count_xmit(&bulk_tx, dev, 0, sent, drops, err);
	return 0;
}

// A devmap flushed redirected frames to a device's ndo_xdp_xmit.
SEC("tp_btf/xdp_devmap_xmit")
int BPF_PROG(on_devmap_xmit, const struct net_device *from_dev, const struct net_device *to_dev, int sent, int drops,
	     int err)
{
	count_xmit(&devmap_xmit, from_dev, ifindex_of(to_dev), sent, drops, err);
	return 0;
}

// Frames queued to a cpumap CPU; drops when its queue was full.
SEC("tp_btf/xdp_cpumap_enqueue")
int BPF_PROG(on_cpumap_enqueue, int map_id, unsigned int processed, unsigned int drops, int to_cpu)
{
	count_cpumap(&cpumap_enqueue, map_id, to_cpu, processed, drops);
	return 0;
}

// A cpumap kthread ran a batch; drops are frames it could not allocate an
// skb for (its program's own XDP_DROPs are not in them).
SEC("tp_btf/xdp_cpumap_kthread")
int BPF_PROG(on_cpumap_kthread, int map_id, unsigned int processed, unsigned int drops, int sched,
	     struct xdp_cpumap_stats *xdp_stats)
{
	count_cpumap(&cpumap_kthread, map_id, bpf_get_smp_processor_id(), processed, drops);
	return 0;
}
