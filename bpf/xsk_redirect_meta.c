//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// xsk_redirect_meta is xsk_redirect with the frame's receive metadata: it
// asks the driver, through the XDP metadata kfuncs, for the RX hash, the
// receive timestamp and the VLAN tag the hardware (or the skb, on veth)
// holds for the frame, and writes them into the metadata area in front of
// the frame (bpf_xdp_adjust_meta), where the AF_XDP socket's reader finds
// them in the UMEM just before the frame's data.
//
// The kfuncs reach the driver only in a program loaded for one device
// (BPF_F_XDP_DEV_BOUND_ONLY and the device's ifindex), attached in native
// mode. Which fields are asked for is set at load time; the verifier
// removes the calls that are off.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "xsk_meta.h"

#define MAX_QUEUES 256

// Ask for the RX hash, the timestamp, the VLAN tag.
volatile const __u8 want_hash = 0;
volatile const __u8 want_timestamp = 0;
volatile const __u8 want_vlan = 0;
// What goes to userspace (xsk_filter.h); everything else goes to the stack
// (so SSH, ARP and routing protocols keep working on a real NIC).
#include "xsk_filter.h"

// The kernel's enum xdp_rss_hash_type (include/net/xdp.h) is not in the
// UAPI headers; the kfunc's signature needs an enum of that name.
enum xdp_rss_hash_type {
	XDP_RSS_TYPE_NONE = 0,
};

extern int bpf_xdp_metadata_rx_timestamp(const struct xdp_md *ctx, __u64 *timestamp) __ksym __weak;
extern int bpf_xdp_metadata_rx_hash(const struct xdp_md *ctx, __u32 *hash,
				    enum xdp_rss_hash_type *rss_type) __ksym __weak;
extern int bpf_xdp_metadata_rx_vlan_tag(const struct xdp_md *ctx, __be16 *vlan_proto,
					__u16 *vlan_tci) __ksym __weak;

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

SEC("xdp")
int xsk_redirect_meta(struct xdp_md *ctx)
{
	enum xdp_rss_hash_type type = XDP_RSS_TYPE_NONE;
	__u8 rules = filter_rules;
	struct xsk_rx_meta *meta;
	__u64 timestamp = 0;
	__u32 hash = 0, valid = 0;
	__be16 vlan_proto = 0;
	__u16 vlan_tci = 0;
	void *data;

	if (rules && !is_wanted(ctx, rules))
		return XDP_PASS;
	// The kfuncs are asked before the metadata area is made: a driver may
	// read its answer from the headroom in front of the frame, where the
	// area goes (virtio_net's hash report is in the virtio-net header
	// just before the frame's data).
	// A zero timestamp is none: veth gives the skb's hardware timestamp,
	// zero for frames the stack sent.
	if (want_timestamp && bpf_xdp_metadata_rx_timestamp(ctx, &timestamp) == 0 && timestamp != 0)
		valid |= XSK_META_TIMESTAMP;
	if (want_hash && bpf_xdp_metadata_rx_hash(ctx, &hash, &type) == 0)
		valid |= XSK_META_HASH;
	if (want_vlan && bpf_xdp_metadata_rx_vlan_tag(ctx, &vlan_proto, &vlan_tci) == 0)
		valid |= XSK_META_VLAN;
	// Every frame the sockets get carries the metadata: one without room
	// for it (a driver without a metadata area) is refused, not passed
	// on with stale bytes in front of it.
	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*meta)))
		return XDP_ABORTED;
	data = (void *)(long)ctx->data;
	meta = (void *)(long)ctx->data_meta;
	if ((void *)(meta + 1) > data)
		return XDP_ABORTED;
	meta->rx_timestamp = (valid & XSK_META_TIMESTAMP) ? timestamp : 0;
	meta->rx_hash = (valid & XSK_META_HASH) ? hash : 0;
	meta->rx_hash_type = (valid & XSK_META_HASH) ? type : 0;
	meta->vlan_tci = (valid & XSK_META_VLAN) ? vlan_tci : 0;
	meta->vlan_proto = (valid & XSK_META_VLAN) ? vlan_proto : 0;
	meta->valid = valid;
	return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
}

char _license[] SEC("license") = "Dual BSD/GPL";
