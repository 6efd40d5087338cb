//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// kern holds the in-kernel paths that xdpeng compares its AF_XDP engine with,
// the xdp-bench set: XDP drop, pass, tx (swap MACs, send back), redirect to
// one port (DEVMAP), redirect to every listed port (DEVMAP_HASH broadcast),
// drop after counting per IP protocol (so the cost of reading the headers
// shows), and a tc ingress drop.
//
// Every program counts per rx queue and per CPU in the same map layout
// (queue_stats, like xdp_rxq_info), so one Go reader serves them all. The
// counters are a load-time switch (a const volatile global): off, the verifier
// removes the code and progbench measures the bare program.
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define MAX_QUEUES 256
#define MAX_PORTS 64
// IP protocol numbers are 0-255; one more slot counts frames that are
// neither IPv4 nor IPv6.
#define PROTO_NOT_IP 256
#define PROTO_SLOTS 257

// Count packets and bytes per rx queue (per CPU).
volatile const __u8 enable_counters = 0;
// If not zero, count only UDP frames (IPv4 or IPv6, up to two VLAN tags)
// to this destination port, in host order: a sink then counts a
// generator's frames and not what the kernel sends on the link besides
// (a bridge's IGMP reports). Every frame is still handled alike.
volatile const __u16 count_udp_dst_port = 0;

// What an XDP path does to each frame before its verdict, xdp-bench's
// packet operations (-p): nothing, read the Ethernet header, parse it and
// the IP header, or swap the MAC addresses. A frame the operation finds
// malformed (shorter than its headers, no EtherType, a bad IP header) gets
// XDP_ABORTED, which the xdp:xdp_exception tracepoint counts.
#define OP_NO_TOUCH 0
#define OP_READ_DATA 1
#define OP_PARSE_IP 2
#define OP_SWAP_MACS 3
volatile const __u8 packet_op = OP_NO_TOUCH;
// Read (and write) the frame through bpf_xdp_load_bytes and
// bpf_xdp_store_bytes instead of direct packet access (xdp-bench's -l
// load-bytes, which also reaches the fragments of a multi-buffer frame).
volatile const __u8 load_bytes = 0;

struct queue_counters {
	__u64 packets;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_QUEUES + 1);
	__type(key, __u32);
	__type(value, struct queue_counters);
} queue_stats SEC(".maps");

// The key of frames whose rx queue the driver did not record (tc only).
#define QUEUE_UNRECORDED MAX_QUEUES

// Packets per IP protocol (per CPU), for xdp_drop_count_proto.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROTO_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} proto_stats SEC(".maps");

// The single egress port of xdp_redirect, at key 0.
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} tx_ports SEC(".maps");

// The egress ports of xdp_redirect_multi, keyed by ifindex; a broadcast
// redirect sends a copy of the frame to each.
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} tx_ports_multi SEC(".maps");

// The CPUs xdp_redirect_cpu sends frames to, round robin: cpus_count
// entries of cpus_available, each a key of cpu_map. The loader sizes both
// maps to the machine's possible CPUs.
volatile const __u32 cpus_count = 1;

struct {
	__uint(type, BPF_MAP_TYPE_CPUMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bpf_cpumap_val);
} cpu_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cpus_available SEC(".maps");

// Each receiving CPU's place in the round.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cpus_iterator SEC(".maps");

// What xdp_cpumap_remote saw, per CPU: the frames that reached the CPUs
// they were sent to.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct queue_counters);
} remote_stats SEC(".maps");

// What xdp_cpumap_remote does with a frame on the CPU it was sent to:
// drop it, or (1) pass it to the network stack there.
volatile const __u8 remote_pass = 0;

struct vlan_hdr {
	__be16 tci;
	__be16 proto;
};

// l3 returns the ethertype of the frame after up to two VLAN tags (802.1Q,
// 802.1ad) and sets *l3p to the header that follows; 0 if the frame is too
// short to tell.
static __always_inline __u16 l3(void *data, void *end, void **l3p)
{
	struct ethhdr *eth = data;
	void *p = eth + 1;
	__u16 proto;
	int i;

	if (p > end)
		return 0;
	proto = eth->h_proto;
#pragma unroll
	for (i = 0; i < 2; i++) {
		struct vlan_hdr *vlan = p;

		if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD))
			break;
		if ((void *)(vlan + 1) > end)
			return 0;
		proto = vlan->proto;
		p = vlan + 1;
	}
	*l3p = p;
	return proto;
}

// is_udp_to reports whether the frame is UDP to destination port port (host
// order). IPv6 extension headers are not walked.
static __always_inline int is_udp_to(void *data, void *end, __u16 port)
{
	void *p = data;
	struct udphdr *udp;
	__u16 proto = l3(data, end, &p);

	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = p;

		if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_UDP || ip->ihl < 5)
			return 0;
		udp = p + ip->ihl * 4;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = p;

		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_UDP)
			return 0;
		udp = (void *)(ip6 + 1);
	} else {
		return 0;
	}
	if ((void *)(udp + 1) > end)
		return 0;
	return udp->dest == bpf_htons(port);
}

static __always_inline void count(__u32 queue, __u64 bytes, void *data, void *end)
{
	struct queue_counters *c;

	if (!enable_counters)
		return;
	if (count_udp_dst_port && !is_udp_to(data, end, count_udp_dst_port))
		return;
	c = bpf_map_lookup_elem(&queue_stats, &queue);
	if (c) {
		c->packets++;
		c->bytes += bytes;
	}
}

static __always_inline void count_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;

	count(ctx->rx_queue_index, end - data, data, end);
}

// ip_ok reports whether the IP header of a frame whose EtherType is proto
// is sound as far as a router would look before forwarding (version, IPv4
// header length); a frame of another EtherType passes.
static __always_inline int ip_ok(__u16 proto, __u8 first)
{
	if (proto == bpf_htons(ETH_P_IP))
		return first >> 4 == 4 && (first & 0xf) >= 5;
	if (proto == bpf_htons(ETH_P_IPV6))
		return first >> 4 == 6;
	return 1;
}

// touch applies packet_op to the frame; it returns 0, or -1 for a frame
// to abort.
static __always_inline int touch(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct ethhdr e;
	void *l3p = data;
	__u16 proto;
	__u8 first;

	if (packet_op == OP_NO_TOUCH)
		return 0;
	if (load_bytes) {
		if (bpf_xdp_load_bytes(ctx, 0, &e, sizeof(e)))
			return -1;
		switch (packet_op) {
		case OP_READ_DATA:
			return bpf_ntohs(e.h_proto) < ETH_P_802_3_MIN ? -1 : 0;
		case OP_PARSE_IP:
			// No VLAN tags walked: the header follows at once.
			if (e.h_proto != bpf_htons(ETH_P_IP) && e.h_proto != bpf_htons(ETH_P_IPV6))
				return bpf_ntohs(e.h_proto) < ETH_P_802_3_MIN ? -1 : 0;
			if (bpf_xdp_load_bytes(ctx, sizeof(e), &first, 1))
				return -1;
			return ip_ok(e.h_proto, first) ? 0 : -1;
		case OP_SWAP_MACS: {
			struct ethhdr s = e;

			__builtin_memcpy(s.h_dest, e.h_source, ETH_ALEN);
			__builtin_memcpy(s.h_source, e.h_dest, ETH_ALEN);
			return bpf_xdp_store_bytes(ctx, 0, &s, 2 * ETH_ALEN) ? -1 : 0;
		}
		}
		return 0;
	}
	if ((void *)(eth + 1) > end)
		return -1;
	switch (packet_op) {
	case OP_READ_DATA:
		return bpf_ntohs(eth->h_proto) < ETH_P_802_3_MIN ? -1 : 0;
	case OP_PARSE_IP:
		proto = l3(data, end, &l3p);
		if (!proto || bpf_ntohs(proto) < ETH_P_802_3_MIN)
			return -1;
		if (proto != bpf_htons(ETH_P_IP) && proto != bpf_htons(ETH_P_IPV6))
			return 0;
		if (l3p + 1 > end)
			return -1;
		first = *(__u8 *)l3p;
		if (!ip_ok(proto, first))
			return -1;
		if (proto == bpf_htons(ETH_P_IP))
			return l3p + (first & 0xf) * 4 > end ? -1 : 0;
		return l3p + sizeof(struct ipv6hdr) > end ? -1 : 0;
	case OP_SWAP_MACS: {
		__u8 tmp[ETH_ALEN];

		__builtin_memcpy(tmp, eth->h_dest, ETH_ALEN);
		__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
		__builtin_memcpy(eth->h_source, tmp, ETH_ALEN);
		return 0;
	}
	}
	return 0;
}

SEC("xdp")
int xdp_drop(struct xdp_md *ctx)
{
	count_xdp(ctx);
	if (touch(ctx))
		return XDP_ABORTED;
	return XDP_DROP;
}

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	count_xdp(ctx);
	if (touch(ctx))
		return XDP_ABORTED;
	return XDP_PASS;
}

// xdp_tx sends each frame back out of the port it came in on; with
// packet_op swap-macs (the loader's default for it) its MAC addresses
// swapped first.
SEC("xdp")
int xdp_tx(struct xdp_md *ctx)
{
	count_xdp(ctx);
	if (touch(ctx))
		return XDP_ABORTED;
	return XDP_TX;
}

SEC("xdp")
int xdp_redirect(struct xdp_md *ctx)
{
	count_xdp(ctx);
	if (touch(ctx))
		return XDP_ABORTED;
	// With flags 0 a missing entry gives XDP_ABORTED, which the
	// xdp:xdp_exception tracepoint shows.
	return bpf_redirect_map(&tx_ports, 0, 0);
}

SEC("xdp")
int xdp_redirect_multi(struct xdp_md *ctx)
{
	count_xdp(ctx);
	if (touch(ctx))
		return XDP_ABORTED;
	// The key is ignored with BPF_F_BROADCAST; never send a copy back out
	// of the port it came in on.
	return bpf_redirect_map(&tx_ports_multi, 0, BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS);
}

// xdp_redirect_cpu sends each frame to another CPU through a cpumap, as
// xdp-bench redirect-cpu does, round robin over the CPUs in
// cpus_available; there xdp_cpumap_remote takes it.
SEC("xdp")
int xdp_redirect_cpu(struct xdp_md *ctx)
{
	__u32 zero = 0, idx, *it, *cpu;

	count_xdp(ctx);
	if (touch(ctx))
		return XDP_ABORTED;
	it = bpf_map_lookup_elem(&cpus_iterator, &zero);
	if (!it)
		return XDP_ABORTED;
	idx = *it;
	*it = idx + 1 < cpus_count ? idx + 1 : 0;
	cpu = bpf_map_lookup_elem(&cpus_available, &idx);
	if (!cpu)
		return XDP_ABORTED;
	return bpf_redirect_map(&cpu_map, *cpu, 0);
}

// xdp_cpumap_remote runs on the CPU a frame was sent to (the cpumap
// entry's program, Linux 5.9): it counts the frame there, then drops it
// or passes it to the stack.
SEC("xdp/cpumap")
int xdp_cpumap_remote(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct queue_counters *c = bpf_map_lookup_elem(&remote_stats, &zero);

	if (c) {
		c->packets++;
		c->bytes += ctx->data_end - ctx->data;
	}
	return remote_pass ? XDP_PASS : XDP_DROP;
}

// ip_proto returns the IP protocol of the frame, PROTO_NOT_IP for anything
// else (or a frame too short to tell). It looks through up to two VLAN tags
// (802.1Q, 802.1ad); IPv6 extension headers are not walked: their first
// next-header value is what is counted.
static __always_inline __u32 ip_proto(void *data, void *end)
{
	void *p = data;
	__u16 proto = l3(data, end, &p);

	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = p;

		if ((void *)(ip + 1) > end)
			return PROTO_NOT_IP;
		return ip->protocol;
	}
	if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = p;

		if ((void *)(ip6 + 1) > end)
			return PROTO_NOT_IP;
		return ip6->nexthdr;
	}
	return PROTO_NOT_IP;
}

SEC("xdp")
int xdp_drop_count_proto(struct xdp_md *ctx)
{
	__u32 key = ip_proto((void *)(long)ctx->data, (void *)(long)ctx->data_end);
	__u64 *n;

	count_xdp(ctx);
	n = bpf_map_lookup_elem(&proto_stats, &key);
	if (n)
		*n += 1;
	return XDP_DROP;
}

SEC("tc")
int tc_drop(struct __sk_buff *skb)
{
	// queue_mapping holds the recorded rx queue plus one; zero when the
	// driver recorded none (veth does not), counted apart.
	__u32 q = skb->queue_mapping;

	q = q ? q - 1 : QUEUE_UNRECORDED;
	count(q, skb->len, (void *)(long)skb->data, (void *)(long)skb->data_end);
	return TC_ACT_SHOT;
}

char _license[] SEC("license") = "Dual BSD/GPL";
