//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// xsk_selftest steers the frames of xdpeng selftest (EtherType 0x9000) that
// arrive on receive queue 0 into the AF_XDP socket at key 0 of xsks, and
// leaves every other frame to the stack, so a device under test keeps its
// other traffic. It counts what it did with each test frame, so that a test
// can compare the counts with what it sent.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define SELFTEST_ETH_P 0x9000 // ETH_P_LOOPBACK

// Set at load time: drop every second test frame (XDP_DROP_HALF).
volatile const __u8 drop_half = 0;

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

// Counts of test frames, by what became of them.
enum {
	COUNT_REDIRECTED,  // to the socket at key 0
	COUNT_DROPPED,     // by drop_half
	COUNT_OTHER_QUEUE, // arrived on another queue: passed to the stack
	COUNT_NO_SOCKET,   // no socket at key 0: passed to the stack
	COUNT_SEEN,        // every test frame on queue 0
	COUNT_MAX,
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, COUNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

static __always_inline __u64 count(__u32 what)
{
	__u64 *c = bpf_map_lookup_elem(&counts, &what);

	if (!c)
		return 0;
	return __sync_fetch_and_add(c, 1);
}

SEC("xdp")
int xsk_selftest(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	int act;

	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(SELFTEST_ETH_P))
		return XDP_PASS;
	if (ctx->rx_queue_index != 0) {
		count(COUNT_OTHER_QUEUE);
		return XDP_PASS;
	}
	if (count(COUNT_SEEN) & 1 && drop_half) {
		count(COUNT_DROPPED);
		return XDP_DROP;
	}
	act = bpf_redirect_map(&xsks, 0, XDP_PASS);
	count(act == XDP_REDIRECT ? COUNT_REDIRECTED : COUNT_NO_SOCKET);
	return act;
}

char _license[] SEC("license") = "Dual BSD/GPL";
