/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nonce — unpredictable 32-bit values for dispatch ids, cheap enough for the
 * per-request path: a ChaCha20 key stream (libsodium) under a key drawn from
 * the system's random source, consumed FG_NONCE_BATCH values at a time, so a
 * request costs one array read and the cipher runs once per batch.  Knowing
 * earlier values tells nothing about later ones without the key.
 *
 * Thread contract: one owner (a worker); no locks, no syscalls after init.
 */
#ifndef FG_NONCE_H
#define FG_NONCE_H

#include <stdint.h>
#include "compiler.h"

#define FG_NONCE_BATCH 256u
#define FG_NONCE_KEY_LEN 32u

struct fg_nonces {
	uint32_t next;                 /* index of the next unused value in buf */
	uint64_t block;                /* the stream's next nonce (counter) */
	uint8_t key[FG_NONCE_KEY_LEN];
	uint32_t buf[FG_NONCE_BATCH];
};

/* 0, or -EIO when libsodium cannot start (no random source).  key NULL:
 * a fresh random key; tests pass a fixed one to replay a run. */
int fg_nonces_init(struct fg_nonces *n, const uint8_t *key);

void fg_nonces__refill(struct fg_nonces *n);

static inline uint32_t fg_nonce_next(struct fg_nonces *n)
{
	if (unlikely(n->next == FG_NONCE_BATCH))
		fg_nonces__refill(n);
	return n->buf[n->next++];
}

#endif
