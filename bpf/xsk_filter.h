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

// Which rules are set (FILTER_*): without one, every frame is wanted. It
// is read once per frame; each rule's own constant only where it is set.
#define FILTER_ETHER 0x01
#define FILTER_PROTO 0x02
#define FILTER_PORT 0x04
#define FILTER_PREFIX4 0x08
#define FILTER_PREFIX6 0x10
#define FILTER_IP (FILTER_PROTO | FILTER_PORT | FILTER_PREFIX4 | FILTER_PREFIX6)
volatile const __u8 filter_rules = 0;
// The frame's EtherType (untagged frames), in network order.
volatile const __be16 filter_ethertype = 0;
// The IPv4 protocol or IPv6 next header (no extension headers).
volatile const __u8 filter_ip_proto = 0;
// The UDP or TCP destination port, in network order.
volatile const __be16 filter_dst_port = 0;
// The destination prefix: the address under the mask, in network order
// (IPv4 in the first word).
volatile const __u32 filter_addr[4] = {};
volatile const __u32 filter_mask[4] = {};

// is_wanted reports whether the frame meets every rule in rules
// (filter_rules). An IPv4 fragment after the first has no transport
// header, whatever its bytes there say: it never meets a port rule.
static __always_inline int is_wanted(struct xdp_md *ctx, __u8 rules)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	void *l4;
	__be16 type;
	__u8 proto;

	if ((void *)(eth + 1) > end)
		return 0;
	type = eth->h_proto;
	if ((rules & FILTER_ETHER) && type != filter_ethertype)
		return 0;
	if (!(rules & FILTER_IP))
		return 1;
	if (type == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		if ((void *)(ip + 1) > end || ip->ihl < 5)
			return 0;
		if (rules & FILTER_PREFIX6)
			return 0;
		if ((rules & FILTER_PREFIX4) && (ip->daddr & filter_mask[0]) != filter_addr[0])
			return 0;
		if ((rules & FILTER_PORT) && (ip->frag_off & bpf_htons(0x1fff))) // IP_OFFSET
			return 0;
		proto = ip->protocol;
		l4 = (void *)ip + ip->ihl * 4;
	} else if (type == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		if ((void *)(ip6 + 1) > end)
			return 0;
		if (rules & FILTER_PREFIX4)
			return 0;
		if ((rules & FILTER_PREFIX6) &&
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
	if ((rules & FILTER_PROTO) && proto != filter_ip_proto)
		return 0;
	if (!(rules & FILTER_PORT))
		return 1;
	if (proto == IPPROTO_UDP) {
		struct udphdr *udp = l4;
		if ((void *)(udp + 1) > end)
			return 0;
		return udp->dest == filter_dst_port;
	}
	if (proto == IPPROTO_TCP) {
		struct tcphdr *tcp = l4;
		if ((void *)(tcp + 1) > end)
			return 0;
		return tcp->dest == filter_dst_port;
	}
	return 0;
}

#endif
