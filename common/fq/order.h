/* SPDX-License-Identifier: Apache-2.0 */
/*
 * order — the queue set's dispatch order: up to `capacity` items (queues
 * with a waiting head, named by index) keyed by (key, tie), smallest first.
 * The same order as one skip list (common/fq/skiplist.h) of all of them: keys
 * compare by signed difference (live keys within 2^63 of each other), equal
 * keys by tie, equal (key, tie) pairs newest insertion first.
 *
 * Keys that are virtual finish times (the calendar, on by default) go
 * through a calendar in front of the skip list, because a queue just served
 * goes back at its next finish, anywhere among N others when widths or
 * weights differ, and a skip-list insertion there walks O(log N) cold nodes:
 *
 *   near   list 0 of the skip list: every key below the horizon H, sorted;
 *          the minimum is its first item;
 *   ring   buckets of width 2^shift covering [H, H + buckets << shift),
 *          unsorted: an insertion there is an append, O(1);
 *   far    list 1 of the skip list: keys beyond the ring, sorted.
 *
 * Invariant: near is empty only when everything is.  When a removal empties
 * it, the next non-empty bucket (a hierarchical bitmap) moves into near and
 * H moves past it; far keys that the ring now covers move into the ring.
 * With the ring empty, its width is tuned to the far keys' spread (twice
 * it over the ring) and they move in.  An item thus goes through at most
 * far, ring and near once each between insertion and removal, and a near
 * insertion is into a small list (one bucket's keys, inserted in order when
 * their ties are).  The bucket width starts from a hint (init): the ring
 * then covers 16 hints, a few requests' cost.
 *
 * With the calendar, ties must be unique (the queue set's round-robin
 * counter), so that (key, tie) is a total order whatever the path an item
 * took.  Without it (arbitrary keys, ties by arrival: UsageBased), every
 * key goes into near: a plain skip list.  The mode changes only while the
 * order is empty.
 *
 * Memory, all at creation: the skip list's 128 bytes per item, 9 per item
 * of bucket links and place, and 8 per bucket (twice the capacity rounded
 * up to a power of two, between FG_ORDER_MIN_BUCKETS and
 * FG_ORDER_MAX_BUCKETS): at most ~169 bytes per item.
 *
 * Thread contract: single owner; no internal locking.
 */
#ifndef FG_ORDER_H
#define FG_ORDER_H

#include <stdbool.h>
#include <stdint.h>

#include "hbitmap.h"
#include "skiplist.h"

#define FG_ORDER_NIL FG_SKIP_NIL
#define FG_ORDER_MIN_BUCKETS 1024u
#define FG_ORDER_MAX_BUCKETS (1u << 26)
#define FG_ORDER_RING_HINTS 16u   /* the ring's first span, in hints */
#define FG_ORDER_MAX_SHIFT 36u    /* ring span below 2^63: 2^26 buckets of 2^36 */
#define FG_ORDER_WIDEN_FAR 16u    /* far insertions before the ring may widen */
#define FG_ORDER_NEAR_MAX 64u     /* near items beyond which, with nothing else, the horizon comes down */

enum fg_order_place { FG_ORDER_OUT = 0, FG_ORDER_NEAR, FG_ORDER_RING, FG_ORDER_FAR };

struct fg_order {
	struct fg_skiplist sl;     /* list 0: near, list 1: far; every item's key and tie are in its node */
	uint32_t *link;            /* per item: next and previous in its bucket */
	uint32_t *bucket;          /* per bucket: first and last item */
	uint8_t *place;            /* per item: enum fg_order_place */
	struct fg_hbitmap busy;    /* non-empty buckets */
	uint32_t mask;             /* buckets - 1 */
	uint32_t in_ring, in_far;
	uint32_t ring_since, far_since; /* insertions into each since the width was last tuned */
	uint32_t count;
	unsigned shift;            /* bucket width: 2^shift */
	uint64_t horizon;          /* near holds the keys below it; a multiple of the bucket width */
	bool calendar;
};

/* 0, -EINVAL or -ENOMEM.  hint: a typical distance between a queue's
 * successive keys (one request's cost); 0 for none. */
int fg_order_init(struct fg_order *o, uint32_t capacity, uint64_t hint, uint64_t seed);
void fg_order_fini(struct fg_order *o);

/* An empty order `dst` of at least src's capacity takes src's mode and
 * items, in the same order. */
void fg_order_copy(struct fg_order *dst, const struct fg_order *src);

/* Calendar on (virtual finish keys) or off (arbitrary keys); only while
 * the order is empty. */
void fg_order_set_calendar(struct fg_order *o, bool calendar);

/* The item must not be in. */
void fg_order_insert(struct fg_order *o, uint32_t item, uint64_t key, uint64_t tie);
/* The item must be in. */
void fg_order_remove(struct fg_order *o, uint32_t item);

/* The smallest item, or FG_ORDER_NIL.  O(1). */
static inline uint32_t fg_order_first(const struct fg_order *o)
{
	return fg_skiplist_first_in(&o->sl, 0);
}

static inline bool fg_order_contains(const struct fg_order *o, uint32_t item)
{
	return o->place[item] != FG_ORDER_OUT;
}

/* The key and tie an item was inserted with (while it is in). */
static inline uint64_t fg_order_key(const struct fg_order *o, uint32_t item) { return o->sl.nodes[item].key; }
static inline uint64_t fg_order_tie(const struct fg_order *o, uint32_t item) { return o->sl.nodes[item].tie; }

#endif
