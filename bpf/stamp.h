/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
// The stamp the generator (gen.c) writes at the start of a UDP payload and
// the latency receiver (latency.c) reads; internal/lab/stamp is its Go
// twin. All fields are big-endian. The payload starts at an even offset, so
// the stamp's fields lie on 16-bit words of the UDP checksum and 2-byte
// accesses are aligned (the struct says so, for strict-alignment targets).
#ifndef XDPENG_STAMP_H
#define XDPENG_STAMP_H

#include <linux/types.h>

#define STAMP_MAGIC 0x78646c74 // "xdlt"

struct stamp {
	__be32 magic;
	__be32 run_id;	// the run that sent the frame
	__be32 seq;	// sequence number within the run
	__be64 time_ns; // bpf_ktime_get_ns() when the generator's program ran
} __attribute__((packed, aligned(2)));

_Static_assert(sizeof(struct stamp) == 20, "the stamp is 20 bytes");

#endif
