/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pkt — a datagram buffer owned by an I/O backend (a kernel-socket buffer or a
 * DPDK mbuf).  `data`/`len` cover the fairgate message only (UDP payload); the
 * I/O layer adds and strips lower headers.  `peer` is the sender on receive and
 * the destination on transmit.  Whoever holds a pkt must hand it back through
 * the I/O layer's tx or free: buffers are counted.
 *
 * Every I/O layer keeps `data` within FG_PKT_MAX_SPAN bytes after `handle`
 * and `cap` within FG_PKT_MAX_SPAN, so a request slot holds a waiting
 * datagram in 16-bit offsets (reqtable.h); each layer asserts it for its
 * buffers.
 */
#ifndef FG_PKT_H
#define FG_PKT_H

#include <stdint.h>

#include "endpoint.h"

#define FG_PKT_MAX_SPAN UINT16_MAX

struct fg_pkt {
	void *handle;  /* I/O layer's buffer (mbuf, socket buffer) */
	uint8_t *data;
	uint32_t len;
	uint32_t cap;  /* bytes writable at data */
	struct fg_endpoint peer;
	uint8_t answer; /* on transmit: an answer to a client (a send that fails loses it) */
	uint8_t backend_side; /* on receive: it came to a worker's backend-side port, where only answers belong */
};

#endif
