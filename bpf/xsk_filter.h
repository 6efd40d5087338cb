/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
// What the AF_XDP steering programs (xsk_redirect.c, xsk_redirect_meta.c)
// send to userspace: load-time constants, each 0 for "any", every one set
// to be met. The verifier removes the checks of the rules that are off.
#ifndef XDPENG_XSK_FILTER_H
#define XDPENG_XSK_FILTER_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

// Any rule set: without one, every frame is wanted.
volatile const __u8 filter_on = 0;
// The frame's EtherType (untagged frames), in host order.
volatile const __u16 filter_ethertype = 0;
// The IPv4 protocol or IPv6 next header (no extension headers).
volatile const __u8 filter_ip_proto = 0;
// The UDP or TCP destination port, in host order.
volatile const __u16 filter_dst_port = 0;
// 4 or 6: the destination address in filter_addr under filter_mask, in
// network order (IPv4 in the first word).
volatile const __u8 filter_prefix = 0;
volatile const __u32 filter_addr[4] = {};
volatile const __u32 filter_mask[4] = {};

// is_wanted reports whether the frame meets every rule that is set. An IPv4
// fragment after the first has no transport header, whatever its bytes
// there say: it never meets a port rule.
static __always_inline int is_wanted(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	void *l4;
	__u16 type;
	__u8 proto;

	if ((void *)(eth + 1) > end)
		return 0;
	type = bpf_ntohs(eth->h_proto);
	if (filter_ethertype && type != filter_ethertype)
		return 0;
	if (!filter_ip_proto && !filter_dst_port && !filter_prefix)
		return 1;
	if (type == ETH_P_IP) {
		struct iphdr *ip = (void *)(eth + 1);
		if ((void *)(ip + 1) > end || ip->ihl < 5)
			return 0;
		if (filter_prefix == 6)
			return 0;
		if (filter_prefix == 4 && (ip->daddr & filter_mask[0]) != filter_addr[0])
			return 0;
		if (filter_dst_port && (ip->frag_off & bpf_htons(0x1fff))) // IP_OFFSET
			return 0;
		proto = ip->protocol;
		l4 = (void *)ip + ip->ihl * 4;
	} else if (type == ETH_P_IPV6) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		if ((void *)(ip6 + 1) > end)
			return 0;
		if (filter_prefix == 4)
			return 0;
		if (filter_prefix == 6 &&
		    ((ip6->daddr.in6_u.u6_addr32[0] & filter_mask[0]) != filter_addr[0] ||
		     (ip6->daddr.in6_u.u6_addr32[1] & filter_mask[1]) != filter_addr[1] ||
		     (ip6->daddr.in6_u.u6_addr32[2] & filter_mask[2]) != filter_addr[2] ||
		     (ip6->daddr.in6_u.u6_addr32[3] & filter_mask[3]) != filter_addr[3]))
			return 0;
		proto = ip6->nexthdr;
		l4 = (void *)(ip6 + 1);
	} else {
		return 0;
	}
	if (filter_ip_proto && proto != filter_ip_proto)
		return 0;
	if (!filter_dst_port)
		return 1;
	if (proto == IPPROTO_UDP) {
		struct udphdr *udp = l4;
		if ((void *)(udp + 1) > end)
			return 0;
		return udp->dest == bpf_htons(filter_dst_port);
	}
	if (proto == IPPROTO_TCP) {
		struct tcphdr *tcp = l4;
		if ((void *)(tcp + 1) > end)
			return 0;
		return tcp->dest == bpf_htons(filter_dst_port);
	}
	return 0;
}

#endif
