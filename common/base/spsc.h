/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spsc — a single-producer/single-consumer ring of fixed-size items, copied
 * by value: the hand-off channel between two worker cores.
 *
 * Lock-free and wait-free: the producer writes only `tail`, the consumer only
 * `head`, each on its own cache line, and each keeps a private copy of the
 * other's index so it touches the shared line only when its copy says the
 * ring looks full (producer) or empty (consumer).  Release stores publish the
 * items; acquire loads see them.  Items are copied in and out, so nothing is
 * allocated per item.
 *
 * Contract: exactly one thread calls push, exactly one (maybe another) calls
 * pop; init/fini when neither runs.  Capacity is a power of two.
 */
#ifndef FG_SPSC_H
#define FG_SPSC_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "defs.h"

struct fg_spsc {
	/* producer's line */
	uint32_t tail __attribute__((aligned(FG_CACHE_LINE)));
	uint32_t head_seen;          /* producer's copy of head */
	uint64_t full;               /* pushes refused */
	/* consumer's line */
	uint32_t head __attribute__((aligned(FG_CACHE_LINE)));
	uint32_t tail_seen;          /* consumer's copy of tail */
	/* read-only after init */
	uint32_t mask __attribute__((aligned(FG_CACHE_LINE)));
	uint32_t item_size;
	uint8_t *items;
};

/* 0, -EINVAL (capacity not a power of two >= 2) or -ENOMEM. */
static inline int fg_spsc_init(struct fg_spsc *r, uint32_t capacity, uint32_t item_size)
{
	memset(r, 0, sizeof(*r));
	if (capacity < 2 || (capacity & (capacity - 1)) || !item_size)
		return -EINVAL;
	r->items = aligned_alloc(FG_CACHE_LINE, FG_CACHE_ALIGN((size_t)capacity * item_size));
	if (!r->items)
		return -ENOMEM;
	r->mask = capacity - 1;
	r->item_size = item_size;
	return 0;
}

static inline void fg_spsc_fini(struct fg_spsc *r)
{
	free(r->items);
	r->items = NULL;
}

/* Producer: copy one item in; false when the ring is full. */
static inline bool fg_spsc_push(struct fg_spsc *r, const void *item, size_t size)
{
	uint32_t t = r->tail;
	if (t - r->head_seen > r->mask) {
		r->head_seen = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
		if (t - r->head_seen > r->mask) {
			r->full++;
			return false;
		}
	}
	memcpy(r->items + (size_t)(t & r->mask) * size, item, size);
	__atomic_store_n(&r->tail, t + 1, __ATOMIC_RELEASE);
	return true;
}

/* Consumer: copy up to max items out; returns how many. */
static inline unsigned fg_spsc_pop(struct fg_spsc *r, void *items, unsigned max, size_t size)
{
	uint32_t h = r->head;
	if (r->tail_seen == h)
		r->tail_seen = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
	uint32_t n = r->tail_seen - h;
	if (n > max)
		n = max;
	for (uint32_t i = 0; i < n; i++)
		memcpy((uint8_t *)items + (size_t)i * size, r->items + (size_t)((h + i) & r->mask) * size, size);
	if (n)
		__atomic_store_n(&r->head, h + n, __ATOMIC_RELEASE);
	return n;
}

/* Items in the ring (exact for either side, a snapshot for anyone else). */
static inline uint32_t fg_spsc_count(const struct fg_spsc *r)
{
	return __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) - __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
}

#endif
