/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
// The UDP destination port filter of the AF_XDP steering programs
// (xsk_redirect.c, xsk_redirect_meta.c).
#ifndef XDPENG_XSK_FILTER_H
#define XDPENG_XSK_FILTER_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

// is_wanted reports whether the frame is UDP over IPv4 or IPv6 (without
// extension headers) to destination port filter_udp_port, a load-time
// constant that the file including this one declares. An IPv4 fragment
// after the first has no UDP header, whatever its bytes there say: never.
static __always_inline int is_wanted(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct udphdr *udp;
	__u8 proto;

	if ((void *)(eth + 1) > end)
		return 0;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		if ((void *)(ip + 1) > end || ip->ihl < 5)
			return 0;
		if (ip->frag_off & bpf_htons(0x1fff)) // IP_OFFSET
			return 0;
		proto = ip->protocol;
		udp = (void *)ip + ip->ihl * 4;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		if ((void *)(ip6 + 1) > end)
			return 0;
		proto = ip6->nexthdr;
		udp = (void *)(ip6 + 1);
	} else {
		return 0;
	}
	if (proto != IPPROTO_UDP || (void *)(udp + 1) > end)
		return 0;
	return udp->dest == bpf_htons(filter_udp_port);
}

#endif
