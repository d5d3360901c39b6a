/* SPDX-License-Identifier: Apache-2.0 */
/*
 * io — what the worker needs from an I/O mode (kernel sockets or DPDK).
 *
 * Buffers: rx hands out pkts the worker now owns; tx takes ownership back
 * (queued and sent on flush, which reports what it could not send); free returns a pkt unsent; alloc gives a fresh
 * buffer for messages the worker originates (e.g. a backend-timeout REJECT).
 * All calls come from the worker thread that owns the io context.
 */
#ifndef FG_IO_H
#define FG_IO_H

#include <stdbool.h>
#include <stdint.h>

#include "pkt.h"

struct fg_backend_cfg;

struct fg_io_ops {
	unsigned (*rx)(void *ctx, struct fg_pkt *pkts, unsigned max);
	void (*tx)(void *ctx, struct fg_pkt *pkt); /* to pkt->peer */
	/* Returns datagrams it had to drop; *answers_dropped: how many of them
	 * were answers to clients (pkt.answer). */
	unsigned (*flush)(void *ctx, unsigned *answers_dropped);
	int (*alloc)(void *ctx, struct fg_pkt *pkt); /* 0 or -ENOBUFS */
	void (*free)(void *ctx, struct fg_pkt *pkt);
	/* Block up to timeout_ns for input (socket mode); NULL in poll mode. */
	void (*wait)(void *ctx, uint64_t timeout_ns);
	/* Periodic housekeeping (ARP in DPDK mode); may be NULL. */
	void (*tick)(void *ctx, uint64_t now_ns);
	/* Buffers currently out of the pool (for leak checks). */
	uint64_t (*in_use)(void *ctx);
	/* Buffers the pool holds in all (metrics); may be NULL. */
	uint64_t (*pool_size)(void *ctx);
	/* The worker followed a configuration with these backends (slots,
	 * removed ones included): resolve new ones (ARP in DPDK mode); may be
	 * NULL. */
	void (*follow_backends)(void *ctx, const struct fg_backend_cfg *b, uint32_t n);
	/* Datagrams dropped for a martian source (see pool_per_lane); any
	 * thread (relaxed loads: the control thread logs them); may be NULL. */
	uint64_t (*martians)(void *ctx);
	/* Each lane has its own buffer pool and martian count (socket mode),
	 * which its worker reports, and a buffer never leaves its worker (an
	 * answer that reaches another worker cannot be passed on); else one of
	 * each for all lanes (DPDK), which worker 0's lane reports, and buffers
	 * may cross between workers. */
	bool pool_per_lane;
	/* The longest fairgate message one datagram may carry out (0:
	 * FG_PROTO_MAX_DATAGRAM): a message that grows on its way (the LOAD
	 * attribute) stays within it. */
	uint32_t max_datagram;
};

struct fg_io {
	const struct fg_io_ops *ops;
	void *ctx;
};

#endif
