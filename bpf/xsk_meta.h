/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
// The receive metadata xsk_redirect_meta.c writes in front of each frame,
// ending where the frame's data starts; engine/metadata.go reads it. Host
// byte order, but vlan_proto, which is the TPID as it is on the wire.
#ifndef XDPENG_XSK_META_H
#define XDPENG_XSK_META_H

#include <linux/types.h>

#define XSK_META_TIMESTAMP (1U << 0)
#define XSK_META_HASH (1U << 1)
#define XSK_META_VLAN (1U << 2)

struct xsk_rx_meta {
	__u64 rx_timestamp; // ns of the device's clock
	__u32 rx_hash;
	__u32 rx_hash_type; // enum xdp_rss_hash_type
	__u16 vlan_tci;
	__be16 vlan_proto;
	__u32 valid; // XSK_META_*: which fields the driver gave
};

_Static_assert(sizeof(struct xsk_rx_meta) == 24, "the metadata is 24 bytes");

#endif
