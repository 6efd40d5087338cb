//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// latency is the receiver of stamped frames (stamp.h): attached where the
// frames come back to the generator's side (XDP, or tc for frames that come
// back as skbs), it takes the time a frame arrives, puts the delay since its
// stamp into a per-CPU log-linear histogram and accounts for the frame by
// its sequence number: duplicated (seen before: a bitmap over sequence
// numbers), reordered (below the highest number seen so far in its stream).
// It drops what it measured, so nothing goes up the stack; anything else
// (not UDP, no stamp, another run's stamp) passes untouched and is counted
// as other.
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "stamp.h"

// The histogram (internal/lab/latency.Histogram is its Go twin): bucket 0
// holds delays below 2^MIN_EXP ns, the last one those of 2^MAX_EXP ns and
// more; in between, each power of two from 2^MIN_EXP to 2^(MAX_EXP-1) is
// split into 2^SUB_BITS equal buckets, so a bucket is at most 1/32 (3.1%)
// of its lower bound wide. 32 ns .. 134 ms covers 1 us .. 100 ms, and the
// sub-microsecond delays of in-kernel paths.
#define SUB_BITS 5
#define SUB (1 << SUB_BITS)
#define MIN_EXP 5
#define MAX_EXP 27
#define HIST_BUCKETS (2 + (MAX_EXP - MIN_EXP) * SUB)
_Static_assert(MIN_EXP >= SUB_BITS, "the first power of two holds SUB buckets of 1 ns or more");

// How often reorder() retries its compare-and-swap when other CPUs raise
// the same stream's highest number meanwhile; frames it gives up on are
// counted as order_unknown.
#define CAS_TRIES 64

// The run whose stamps are measured.
volatile const __u32 run_id = 0;
// Sequence number s belongs to stream s % streams: the generator's thread
// i sends i, i + streams, i + 2*streams, ... Reordering is within a stream.
volatile const __u32 streams = 1;

struct cpu_stats {
	__u64 received;	     // stamped frames of this run, duplicates included
	__u64 duplicated;    // of which their sequence number was seen before
	__u64 reordered;     // below the highest number seen in their stream
	__u64 beyond;	     // sequence number past the bitmap: not checked
	__u64 order_unknown; // reorder() gave up: not decided
	__u64 ahead;	     // stamp later than the arrival: not in the histogram
	__u64 other;	     // not a stamped frame of this run: passed on
	__u64 count;	     // delays in the histogram
	__u64 sum_ns;
	__u64 min_ns; // valid when count > 0
	__u64 max_ns;
	__u64 hist[HIST_BUCKETS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_stats);
} stats SEC(".maps");

// One bit per sequence number; userspace sizes it (max_entries words) to
// the frames of the run.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} seen SEC(".maps");

// Per stream, the highest sequence number seen plus one (0: none yet);
// userspace sizes it to streams.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} highest SEC(".maps");

// bucket_of is the histogram bucket of a delay of v ns: integer operations
// only, no loop.
static __always_inline __u32 bucket_of(__u64 v)
{
	__u64 x = v;
	__u32 e = 0;

	if (v < (1ULL << MIN_EXP))
		return 0;
	if (v >= (1ULL << MAX_EXP))
		return HIST_BUCKETS - 1;
	// e = the index of the highest set bit, by halving.
	if (x >> 32) {
		x >>= 32;
		e += 32;
	}
	if (x >> 16) {
		x >>= 16;
		e += 16;
	}
	if (x >> 8) {
		x >>= 8;
		e += 8;
	}
	if (x >> 4) {
		x >>= 4;
		e += 4;
	}
	if (x >> 2) {
		x >>= 2;
		e += 2;
	}
	if (x >> 1)
		e += 1;
	return 1 + (e - MIN_EXP) * SUB + ((v >> (e - SUB_BITS)) & (SUB - 1));
}

struct vlan_hdr {
	__be16 tci;
	__be16 proto;
};

// find_stamp returns the stamp at the start of the UDP payload, or NULL for
// a frame that is not UDP over IPv4 (no fragment) or IPv6 (UDP as the first
// next header), behind up to two VLAN tags, or too short to hold a stamp.
static __always_inline struct stamp *find_stamp(void *data, void *end)
{
	struct ethhdr *eth = data;
	void *l3 = eth + 1;
	struct udphdr *udp;
	struct stamp *s;
	__u16 proto;
	int i;

	if (l3 > end)
		return NULL;
	proto = eth->h_proto;
#pragma unroll
	for (i = 0; i < 2; i++) {
		struct vlan_hdr *vlan = l3;

		if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD))
			break;
		if ((void *)(vlan + 1) > end)
			return NULL;
		proto = vlan->proto;
		l3 = vlan + 1;
	}
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = l3;

		if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_UDP || ip->ihl < 5)
			return NULL;
		// Offset and more-fragments bits: only whole datagrams.
		if (ip->frag_off & bpf_htons(0x3fff))
			return NULL;
		udp = l3 + ip->ihl * 4;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = l3;

		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_UDP)
			return NULL;
		udp = (void *)(ip6 + 1);
	} else {
		return NULL;
	}
	s = (void *)(udp + 1);
	if ((void *)(s + 1) > end)
		return NULL;
	return s;
}

// reorder tells whether seq is below the highest sequence number its stream
// has seen, and raises that to seq otherwise: 1 reordered, 0 in order, -1
// undecided (the compare-and-swap kept losing to other CPUs).
static __always_inline int reorder(__u32 seq)
{
	__u32 stream = seq % streams;
	__u64 want = (__u64)seq + 1;
	__u64 *hp = bpf_map_lookup_elem(&highest, &stream);
	__u64 cur, old;
	int i;

	if (!hp)
		return -1;
	cur = *(volatile __u64 *)hp;
	for (i = 0; i < CAS_TRIES; i++) {
		// A number is never seen twice here (duplicates are filtered
		// out before), so cur == want cannot happen.
		if (cur > want)
			return 1;
		old = __sync_val_compare_and_swap(hp, cur, want);
		if (old == cur)
			return 0;
		cur = old;
	}
	return -1;
}

// measure accounts for the frame in [data, end) that arrived at now and
// returns 1 if it was a stamped frame of this run (to be dropped).
static __always_inline int measure(void *data, void *end, __u64 now)
{
	struct stamp *s = find_stamp(data, end);
	struct cpu_stats *st;
	__u32 zero = 0, seq, key;
	__u64 sent, d, *word;
	int dup = 0;

	st = bpf_map_lookup_elem(&stats, &zero);
	if (!st)
		return 0;
	if (!s || s->magic != bpf_htonl(STAMP_MAGIC) || s->run_id != bpf_htonl(run_id)) {
		st->other++;
		return 0;
	}
	seq = bpf_ntohl(s->seq);
	sent = bpf_be64_to_cpu(s->time_ns);
	st->received++;

	key = seq / 64;
	word = bpf_map_lookup_elem(&seen, &key);
	if (!word) {
		st->beyond++;
	} else {
		__u64 bit = 1ULL << (seq % 64);

		if (__sync_fetch_and_or(word, bit) & bit) {
			st->duplicated++;
			dup = 1;
		}
	}
	if (word && !dup) {
		int r = reorder(seq);

		if (r > 0)
			st->reordered++;
		else if (r < 0)
			st->order_unknown++;
	}

	if (now < sent) {
		st->ahead++;
		return 1;
	}
	d = now - sent;
	key = bucket_of(d);
	if (key < HIST_BUCKETS)
		st->hist[key]++;
	if (!st->count || d < st->min_ns)
		st->min_ns = d;
	if (d > st->max_ns)
		st->max_ns = d;
	st->count++;
	st->sum_ns += d;
	return 1;
}

SEC("xdp")
int xdp_latency(struct xdp_md *ctx)
{
	__u64 now = bpf_ktime_get_ns();

	if (measure((void *)(long)ctx->data, (void *)(long)ctx->data_end, now))
		return XDP_DROP;
	return XDP_PASS;
}

// The headers find_stamp may read: Ethernet, two VLAN tags, IPv6, UDP and
// the stamp.
#define MAX_HEADERS (14 + 8 + 40 + 8 + 20)

SEC("tc")
int tc_latency(struct __sk_buff *skb)
{
	__u64 now = bpf_ktime_get_ns();

	// Only the linear part of an skb is readable directly: make sure
	// it holds the headers, if the packet has them.
	if (skb->data + MAX_HEADERS > skb->data_end && skb->len > skb->data_end - skb->data)
		bpf_skb_pull_data(skb, skb->len < MAX_HEADERS ? skb->len : MAX_HEADERS);
	if (measure((void *)(long)skb->data, (void *)(long)skb->data_end, now))
		return TC_ACT_SHOT;
	// Not ours: on to the next program, or the stack.
	return TC_ACT_UNSPEC;
}

// bucket_probe returns bucket_of(value): run with BPF_PROG_TEST_RUN, it lets
// the Go histogram be checked against this very function.
struct bucket_args {
	__u64 value;
};

SEC("syscall")
int bucket_probe(struct bucket_args *args)
{
	return bucket_of(args->value);
}

char _license[] SEC("license") = "Dual BSD/GPL";
