//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// gen is the traffic generator's program: run with BPF_PROG_TEST_RUN in
// live-frames mode, it sends every frame out of ifindex (ndo_xdp_xmit), as
// xdp-trafficgen does. With port_count > 1 it rewrites the UDP destination
// port of each frame, cycling over port_count values from port_min.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

volatile const __u32 ifindex = 0;
volatile const __u16 port_min = 0;
volatile const __u16 port_count = 0;

// Next port index, per CPU so threads do not share a cache line.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} next_port SEC(".maps");

SEC("xdp")
int xdp_gen(struct xdp_md *ctx)
{
	if (port_count > 1) {
		void *data = (void *)(long)ctx->data;
		void *end = (void *)(long)ctx->data_end;
		struct ethhdr *eth = data;
		struct iphdr *ip = (void *)(eth + 1);
		struct udphdr *udp = (void *)(ip + 1);
		__u32 key = 0, *n;

		// The frame is built by us: Ethernet, IPv4 without options, UDP.
		if ((void *)(udp + 1) > end)
			return XDP_ABORTED;
		n = bpf_map_lookup_elem(&next_port, &key);
		if (!n)
			return XDP_ABORTED;
		udp->dest = bpf_htons(port_min + *n);
		udp->check = 0; // zero is "no checksum" for UDP over IPv4
		if (++*n >= port_count)
			*n = 0;
	}
	return bpf_redirect(ifindex, 0);
}

char _license[] SEC("license") = "Dual BSD/GPL";
