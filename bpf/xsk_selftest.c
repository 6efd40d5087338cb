//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// xsk_selftest steers the frames of xdpeng selftest (EtherType 0x9000) that
// arrive on receive queue 0 into the AF_XDP socket at key 0 of xsks (or the
// key the frame selects), and
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
// Set at load time: the socket is the one at the key the frame's first
// byte after the EtherType selects, 0 or 1 (XDP_SHARED_UMEM).
volatile const __u8 by_selector = 0;
// Set at load time: put the frame's number among the test frames seen on
// queue 0 in front of it, as 8 bytes of metadata (XDP_METADATA_COPY).
volatile const __u8 metadata = 0;
// Set at load time: grow (positive) or shrink (negative) every test frame by
// this many bytes with bpf_xdp_adjust_tail (XDP_ADJUST_TAIL_*).
volatile const __s32 adjust_tail = 0;

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
	COUNT_ADJUST_FAILED, // bpf_xdp_adjust_tail failed: passed to the stack
	COUNT_ADJUST_ERR,  // the last error of bpf_xdp_adjust_tail, negated
	COUNT_MAX,
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, COUNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

// count adds one to a count. The add is atomic and fetches nothing
// (BPF_XADD), which every kernel takes: an atomic that returns the old
// value (BPF_FETCH) needs Linux 5.12.
static __always_inline void count(__u32 what)
{
	__u64 *c = bpf_map_lookup_elem(&counts, &what);

	if (c)
		__sync_fetch_and_add(c, 1);
}

// seen returns how many test frames queue 0 saw before this one, and
// counts this one. The frames of one receive queue are processed one at a
// time, so the read before the add is exact.
static __always_inline __u64 seen(void)
{
	__u32 what = COUNT_SEEN;
	__u64 *c = bpf_map_lookup_elem(&counts, &what);
	__u64 n;

	if (!c)
		return 0;
	n = *(volatile __u64 *)c;
	__sync_fetch_and_add(c, 1);
	return n;
}

SEC("xdp")
int xsk_selftest(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 key = 0;
	__u64 n;
	int act;

	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(SELFTEST_ETH_P))
		return XDP_PASS;
	if (ctx->rx_queue_index != 0) {
		count(COUNT_OTHER_QUEUE);
		return XDP_PASS;
	}
	if (by_selector) {
		__u8 *sel = (void *)(eth + 1);

		if ((void *)(sel + 1) > end)
			return XDP_PASS;
		key = *sel & 1;
	}
	n = seen();
	if (n & 1 && drop_half) {
		count(COUNT_DROPPED);
		return XDP_DROP;
	}
	if (adjust_tail) {
		int err = bpf_xdp_adjust_tail(ctx, adjust_tail);

		if (err) {
			__u32 k = COUNT_ADJUST_ERR;
			__u64 *e = bpf_map_lookup_elem(&counts, &k);

			if (e)
				*e = -err;
			count(COUNT_ADJUST_FAILED);
			return XDP_PASS;
		}
	}
	if (metadata) {
		__u64 *meta;

		if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*meta)))
			return XDP_PASS;
		meta = (void *)(long)ctx->data_meta;
		if ((void *)(meta + 1) > (void *)(long)ctx->data)
			return XDP_PASS;
		*meta = n;
	}
	act = bpf_redirect_map(&xsks, key, XDP_PASS);
	count(act == XDP_REDIRECT ? COUNT_REDIRECTED : COUNT_NO_SOCKET);
	return act;
}

char _license[] SEC("license") = "Dual BSD/GPL";
