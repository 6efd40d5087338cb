//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// gen is the traffic generator's program: run with BPF_PROG_TEST_RUN in
// live-frames mode, it sends every frame out of ifindex (ndo_xdp_xmit), as
// xdp-trafficgen does. It counts the frames it redirects per CPU, which is
// how userspace learns how many went out when it interrupts a run. With
// port_count > 1 it rewrites the UDP destination port of each frame,
// cycling over port_count values from port_min. With stamp set it writes a
// sequence number and the kernel clock into each frame's stamp (stamp.h).
//
// With relay set the same program is attached instead (XDP, native) to the
// receiving end of a veth pair that a sender without live frames (AF_XDP or
// AF_PACKET) transmits into, and redirects what arrives through the devmap
// out, whose one entry is the device to send from: the device then gets
// xdp_frames through its ndo_xdp_xmit, as with live frames. The devmap lets
// the relay live in a network namespace of its own.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "stamp.h"

volatile const __u32 ifindex = 0;
volatile const __u16 port_min = 0;
volatile const __u16 port_count = 0;
// Offset of the UDP header in the frame: 34 for Ethernet + IPv4, 54 for
// IPv6, 4 more with a VLAN tag. Userspace built the frame, so it knows.
volatile const __u16 udp_off = 34;
// If not zero, frames are paced to one every ns_per_frame nanoseconds on
// this CPU: the program waits (bpf_loop) until a frame is due, so that a
// rate is kept frame by frame, without bursts a receiver has to absorb.
volatile const __u64 ns_per_frame = 0;
// If not zero, each frame's stamp (at the start of the UDP payload, which
// userspace filled with the magic and run id) gets the CPU's next sequence
// number and the time, and the UDP checksum is updated to match. Each CPU
// starts at the sequence number userspace put in its state and steps by
// seq_stride, so that the CPUs of a run share out the numbers.
volatile const __u8 stamp = 0;
volatile const __u32 seq_stride = 1;
// If not zero, redirect through out[0] rather than to ifindex.
volatile const __u8 relay = 0;
// With relay, how many times each frame goes out: above 1 the kernel sends
// a copy to each of out's first copies entries (all the device), a page
// and a copy of the frame each, no skb.
volatile const __u8 copies = 1;

#define MAX_COPIES 64

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, MAX_COPIES);
	__type(key, __u32);
	__type(value, __u32);
} out SEC(".maps");

struct gen_state {
	__u64 sent;	// frames redirected on this CPU
	__u64 next;	// when the next frame is due (ns), with ns_per_frame
	__u32 port;	// index of the next destination port
	__u32 pad;
	__u64 seq;	// the next sequence number, with stamp
	__u64 skipped;	// frames owed when pacing started afresh, not sent
	__u64 limit;	// with copies: send no more than this many, 0 for no bound
};

// Per CPU: each sending thread is pinned to its own CPU, so the threads
// share no cache line and the count of each is its CPU's entry.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gen_state);
} state SEC(".maps");

static long wait_until(__u64 index, void *ctx)
{
	return bpf_ktime_get_ns() >= *(__u64 *)ctx; // 1 ends the loop
}

// csum_words adds n 16-bit words at p to a one's complement sum, as they lie
// in memory (the sum is byte-order independent, RFC 1071), complemented when
// neg is set: subtracting old content and adding new is RFC 1624's update.
static __always_inline __u32 csum_words(__u32 sum, const __u16 *p, int n, int neg)
{
	int i;

#pragma unroll
	for (i = 0; i < n; i++)
		sum += neg ? (__u16)~p[i] : p[i];
	return sum;
}

// write_stamp fills in the stamp after the UDP header: sequence number and
// time. The frame holds either the template or what an earlier run of this
// program wrote (live frames recycle pages unwritten), so the checksum is
// updated from what is there now, which is right in both cases.
static __always_inline int write_stamp(struct xdp_md *ctx, struct gen_state *st)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct udphdr *udp = data + udp_off;
	struct stamp *s = (void *)(udp + 1);
	// seq and time_ns: six 16-bit words from offset 8 of the stamp.
	__u16 *words = (void *)s + 8;
	__u32 sum;

	if ((void *)(s + 1) > end)
		return -1;
	sum = csum_words((__u16)~udp->check, words, 6, 1);
	s->seq = bpf_htonl((__u32)st->seq);
	s->time_ns = bpf_cpu_to_be64(bpf_ktime_get_ns());
	st->seq += seq_stride;
	if (udp->check) { // zero: IPv4 "no checksum", leave it so
		__u16 check;

		sum = csum_words(sum, words, 6, 0);
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		check = ~(__u16)sum;
		udp->check = check ? check : 0xffff;
	}
	return 0;
}

// pace waits until the next frame is due. A CPU that fell behind (it was
// preempted, or the frames are slower than the rate) catches up on at most
// 64 frames; one further behind starts afresh rather than catch up in a
// burst, and counts the frames it owed in skipped: they are not sent, so
// the run offered that much less than its rate.
static __always_inline void pace(struct gen_state *st)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 due = st->next;

	if (!due) {
		due = now;
	} else if (now > due + 64 * ns_per_frame) {
		st->skipped += (now - due) / ns_per_frame;
		due = now;
	} else if (now < due) {
		bpf_loop(1 << 23, wait_until, &due, 0);
	}
	st->next = due + ns_per_frame;
}

SEC("xdp")
int xdp_gen(struct xdp_md *ctx)
{
	__u32 key = 0;
	struct gen_state *st = bpf_map_lookup_elem(&state, &key);

	if (!st)
		return XDP_ABORTED;
	if (ns_per_frame)
		pace(st);
	if (port_count > 1) {
		void *data = (void *)(long)ctx->data;
		void *end = (void *)(long)ctx->data_end;
		struct udphdr *udp = data + udp_off;
		__u16 old, new;
		__u32 sum;

		if ((void *)(udp + 1) > end)
			return XDP_ABORTED;
		// Live-frames mode recycles pages without rewriting them, so
		// this frame holds either the original port or one we wrote
		// before: set the port outright and update the checksum from
		// what is there now (RFC 1624), which is right in both cases.
		old = udp->dest;
		new = bpf_htons(port_min + st->port);
		udp->dest = new;
		if (udp->check) { // zero: IPv4 "no checksum", leave it so
			sum = (__u16)~udp->check + (__u32)(__u16)~old + new;
			sum = (sum & 0xffff) + (sum >> 16);
			sum = (sum & 0xffff) + (sum >> 16);
			// A result of zero goes out as all ones (RFC 768).
			new = ~(__u16)sum;
			udp->check = new ? new : 0xffff;
		}
		if (++st->port >= port_count)
			st->port = 0;
	}
	// Last, so that the time is taken as close to the send as the
	// program can.
	if (stamp && write_stamp(ctx, st))
		return XDP_ABORTED;
	if (relay && copies > 1 && (!st->limit || st->sent + copies <= st->limit)) {
		st->sent += copies;
		return bpf_redirect_map(&out, 0, BPF_F_BROADCAST);
	}
	st->sent++;
	if (relay)
		return bpf_redirect_map(&out, 0, 0);
	return bpf_redirect(ifindex, 0);
}

char _license[] SEC("license") = "Dual BSD/GPL";
