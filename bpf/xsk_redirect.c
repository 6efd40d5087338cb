//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// xsk_redirect steers each receive queue's frames into the AF_XDP socket
// bound to that queue. Queues without a socket fall through to the stack
// (the XSKMAP lookup's fallback action), so no second map lookup is needed.
//
// The options below are set at load time; the verifier removes what is off.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>

#define MAX_QUEUES 256

// Count per rx queue (per CPU) what was redirected and what was passed.
volatile const __u8 enable_counters = 0;
// What goes to userspace (xsk_filter.h); everything else goes to the stack
// (so SSH, ARP and routing protocols keep working on a real NIC).
#include "xsk_filter.h"

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

struct queue_counters {
	__u64 redirected;
	__u64 passed;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_QUEUES);
	__type(key, __u32);
	__type(value, struct queue_counters);
} queue_stats SEC(".maps");

SEC("xdp")
int xsk_redirect(struct xdp_md *ctx)
{
	__u32 q = ctx->rx_queue_index;
	__u8 rules = filter_rules;
	int act;

	if (rules && !is_wanted(ctx, rules))
		act = XDP_PASS;
	else
		act = bpf_redirect_map(&xsks_map, q, XDP_PASS);

	if (enable_counters) {
		struct queue_counters *c = bpf_map_lookup_elem(&queue_stats, &q);
		if (c) {
			if (act == XDP_REDIRECT)
				c->redirected++;
			else
				c->passed++;
		}
	}
	return act;
}

char _license[] SEC("license") = "Dual BSD/GPL";
