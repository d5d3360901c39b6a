/* SPDX-License-Identifier: Apache-2.0 */
/* order — a calendar of keys in front of a skip list; see order.h. */
#include "order.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { NEAR = 0, FAR = 1 }; /* the skip list's lists */

static inline uint64_t ring_span(const struct fg_order *o) { return (uint64_t)(o->mask + 1) << o->shift; }

/* The smallest shift whose ring spans more than `span`. */
static unsigned shift_for(const struct fg_order *o, uint64_t span)
{
	unsigned s = 0;
	while (s < FG_ORDER_MAX_SHIFT && ((uint64_t)(o->mask + 1) << s) <= span)
		s++;
	return s;
}

int fg_order_init(struct fg_order *o, uint32_t capacity, uint64_t hint, uint64_t seed)
{
	memset(o, 0, sizeof(*o));
	if (capacity == 0 || capacity > FG_ORDER_MAX_BUCKETS)
		return -EINVAL;
	uint32_t buckets = FG_ORDER_MIN_BUCKETS;
	while (buckets < FG_ORDER_MAX_BUCKETS && buckets < 2 * (uint64_t)capacity)
		buckets <<= 1;
	int rc = fg_skiplist_init_lists(&o->sl, capacity, 2, seed);
	if (rc)
		return rc;
	o->link = malloc(sizeof(*o->link) * 2 * (size_t)capacity);
	o->bucket = malloc(sizeof(*o->bucket) * 2 * (size_t)buckets);
	o->place = calloc(capacity, sizeof(*o->place));
	if (!o->link || !o->bucket || !o->place || (rc = fg_hbitmap_init(&o->busy, buckets))) {
		fg_order_fini(o);
		return rc ? rc : -ENOMEM;
	}
	for (uint32_t b = 0; b < 2 * buckets; b++)
		o->bucket[b] = FG_ORDER_NIL;
	o->mask = buckets - 1;
	o->calendar = true;
	o->shift = shift_for(o, hint > UINT64_MAX / FG_ORDER_RING_HINTS ? UINT64_MAX : hint * FG_ORDER_RING_HINTS);
	return 0;
}

void fg_order_fini(struct fg_order *o)
{
	if (o->sl.nodes)
		fg_skiplist_fini(&o->sl);
	free(o->link);
	free(o->bucket);
	free(o->place);
	fg_hbitmap_fini(&o->busy);
	memset(o, 0, sizeof(*o));
}

void fg_order_set_calendar(struct fg_order *o, bool calendar)
{
	if (!o->count)
		o->calendar = calendar;
}

static void to_near(struct fg_order *o, uint32_t item, uint64_t key, uint64_t tie)
{
	o->place[item] = FG_ORDER_NEAR;
	fg_skiplist_insert_in(&o->sl, NEAR, item, key, tie);
}

/* Appended to its bucket (its key and tie in its node, as for the lists). */
static void to_ring(struct fg_order *o, uint32_t item, uint64_t key, uint64_t tie)
{
	struct fg_skipnode *n = &o->sl.nodes[item];
	n->key = key;
	n->tie = tie;
	uint32_t b = (uint32_t)(key >> o->shift) & o->mask, last = o->bucket[2 * b + 1];
	o->link[2 * item] = FG_ORDER_NIL;
	o->link[2 * item + 1] = last;
	if (last == FG_ORDER_NIL) {
		o->bucket[2 * b] = item;
		fg_hbitmap_set(&o->busy, b);
	} else {
		o->link[2 * last] = item;
	}
	o->bucket[2 * b + 1] = item;
	o->place[item] = FG_ORDER_RING;
	o->in_ring++;
}

static void out_of_ring(struct fg_order *o, uint32_t item)
{
	uint32_t b = (uint32_t)(o->sl.nodes[item].key >> o->shift) & o->mask;
	uint32_t next = o->link[2 * item], prev = o->link[2 * item + 1];
	if (prev == FG_ORDER_NIL)
		o->bucket[2 * b] = next;
	else
		o->link[2 * prev] = next;
	if (next == FG_ORDER_NIL)
		o->bucket[2 * b + 1] = prev;
	else
		o->link[2 * next + 1] = prev;
	if (o->bucket[2 * b] == FG_ORDER_NIL)
		fg_hbitmap_clear(&o->busy, b);
	o->in_ring--;
}

/* Does (key, tie) come after everything in near? */
static inline bool after_near(const struct fg_order *o, uint64_t key, uint64_t tie)
{
	uint32_t last = fg_skiplist_last_in(&o->sl, NEAR);
	return last == FG_SKIP_NIL || fg_skip_before(o->sl.nodes[last].key, o->sl.nodes[last].tie, key, tie);
}

/* Near, ring or far by the key's place against the horizon.  With the
 * ring and far empty, a key after all of near extends near instead (the
 * horizon moves up past its bucket): with one width every queue served
 * goes back at the end, where the skip list takes it in O(1). */
static void beyond_horizon(struct fg_order *o, uint32_t item, uint64_t key, uint64_t tie)
{
	if (key - o->horizon < ring_span(o)) {
		to_ring(o, item, key, tie);
		o->ring_since++;
	} else {
		o->place[item] = FG_ORDER_FAR;
		o->in_far++;
		o->far_since++;
		fg_skiplist_insert_in(&o->sl, FAR, item, key, tie);
	}
}

static void place(struct fg_order *o, uint32_t item, uint64_t key, uint64_t tie)
{
	if (!o->calendar || (int64_t)(key - o->horizon) < 0) {
		to_near(o, item, key, tie);
	} else if (!o->in_ring && !o->in_far && after_near(o, key, tie)) {
		o->horizon = ((key >> o->shift) + 1) << o->shift;
		to_near(o, item, key, tie);
	} else {
		beyond_horizon(o, item, key, tie);
	}
}

/* Far keys the ring now covers move into it (or into near, below the horizon). */
static void pull_far(struct fg_order *o)
{
	uint64_t end = o->horizon + ring_span(o);
	uint32_t x;
	while ((x = fg_skiplist_first_in(&o->sl, FAR)) != FG_SKIP_NIL && (int64_t)(o->sl.nodes[x].key - end) < 0) {
		fg_skiplist_remove(&o->sl, x);
		o->in_far--;
		if ((int64_t)(o->sl.nodes[x].key - o->horizon) < 0)
			to_near(o, x, o->sl.nodes[x].key, o->sl.nodes[x].tie);
		else
			beyond_horizon(o, x, o->sl.nodes[x].key, o->sl.nodes[x].tie);
	}
}

/* Many keys went far since the last tuning (an eighth of those that went
 * into the ring): buckets too narrow for the keys' spread.  They widen so that the ring spans twice the distance from the
 * horizon to the last key, the horizon moves up to a multiple of the new
 * width (what the ring held below it goes to near), and every ring item
 * takes its new bucket: O(ring items + buckets in use), and the span at
 * least doubles each time. */
static void widen(struct fg_order *o)
{
	uint64_t reach = o->sl.nodes[fg_skiplist_last_in(&o->sl, FAR)].key - o->horizon;
	unsigned shift = shift_for(o, reach > UINT64_MAX / 2 ? UINT64_MAX : 2 * reach);
	o->far_since = o->ring_since = 0;
	if (shift <= o->shift)
		return;
	/* The ring's items as one chain through their next links, buckets emptied. */
	uint32_t chain = FG_ORDER_NIL, chain_end = FG_ORDER_NIL;
	for (uint32_t b = fg_hbitmap_next(&o->busy, 0); b != FG_HBITMAP_NONE; b = fg_hbitmap_next(&o->busy, b + 1)) {
		if (chain == FG_ORDER_NIL)
			chain = o->bucket[2 * b];
		else
			o->link[2 * chain_end] = o->bucket[2 * b];
		chain_end = o->bucket[2 * b + 1];
		o->bucket[2 * b] = o->bucket[2 * b + 1] = FG_ORDER_NIL;
		fg_hbitmap_clear(&o->busy, b);
	}
	o->in_ring = 0;
	uint64_t width = 1ull << shift;
	o->horizon = (o->horizon + width - 1) & ~(width - 1);
	o->shift = shift;
	while (chain != FG_ORDER_NIL) {
		uint32_t next = o->link[2 * chain];
		place(o, chain, o->sl.nodes[chain].key, o->sl.nodes[chain].tie);
		chain = next;
	}
	pull_far(o);
}

/* Near holds everything, and many, and a key went into its middle (the
 * horizon was set by an outlier, the first key of a queue in debt, or
 * keys stopped coming in order): the horizon comes down to just past the
 * first key's bucket and near's larger keys, taken from its end, go to the
 * ring or far.  Only with the ring and far empty, whose keys would
 * otherwise have to be checked against the lower ring.  O(items moved). */
static void shrink_near(struct fg_order *o)
{
	uint32_t first = fg_skiplist_first_in(&o->sl, NEAR), x;
	uint64_t horizon = ((o->sl.nodes[first].key >> o->shift) + 1) << o->shift;
	if ((int64_t)(horizon - o->horizon) >= 0)
		return;
	o->horizon = horizon;
	while ((x = fg_skiplist_last_in(&o->sl, NEAR)) != first && (int64_t)(o->sl.nodes[x].key - horizon) >= 0) {
		fg_skiplist_remove(&o->sl, x);
		beyond_horizon(o, x, o->sl.nodes[x].key, o->sl.nodes[x].tie);
	}
}

void fg_order_insert(struct fg_order *o, uint32_t item, uint64_t key, uint64_t tie)
{
	if (!o->count++) /* the first: near, the horizon just past its bucket */
		o->horizon = ((key >> o->shift) + 1) << o->shift;
	place(o, item, key, tie);
	uint32_t near = o->count - o->in_ring - o->in_far;
	if (o->calendar && o->place[item] == FG_ORDER_NEAR && near > FG_ORDER_NEAR_MAX && !o->in_ring && !o->in_far &&
	    fg_skiplist_last_in(&o->sl, NEAR) != item)
		shrink_near(o);
	if (o->far_since >= FG_ORDER_WIDEN_FAR && o->far_since > o->ring_since / 8 && o->in_far)
		widen(o);
}

/* Near is empty, something is not: the next bucket becomes near. */
static void refill(struct fg_order *o)
{
	if (!o->in_ring) {
		/* Only far keys: the ring is tuned to twice their spread and starts at the first. */
		uint32_t lo = fg_skiplist_first_in(&o->sl, FAR), hi = fg_skiplist_last_in(&o->sl, FAR);
		uint64_t spread = o->sl.nodes[hi].key - o->sl.nodes[lo].key;
		o->shift = shift_for(o, spread > UINT64_MAX / 2 ? UINT64_MAX : 2 * spread);
		o->far_since = o->ring_since = 0;
		o->horizon = o->sl.nodes[lo].key >> o->shift << o->shift;
		pull_far(o);
	}
	uint32_t b0 = (uint32_t)(o->horizon >> o->shift) & o->mask;
	uint32_t b = fg_hbitmap_next(&o->busy, b0);
	if (b == FG_HBITMAP_NONE)
		b = fg_hbitmap_next(&o->busy, 0);
	o->horizon += ((uint64_t)((b - b0) & o->mask) + 1) << o->shift;
	uint32_t x = o->bucket[2 * b];
	o->bucket[2 * b] = o->bucket[2 * b + 1] = FG_ORDER_NIL;
	fg_hbitmap_clear(&o->busy, b);
	/* In the order they came: ties that grow with it go in at near's end. */
	while (x != FG_ORDER_NIL) {
		uint32_t next = o->link[2 * x];
		o->in_ring--;
		to_near(o, x, o->sl.nodes[x].key, o->sl.nodes[x].tie);
		x = next;
	}
	pull_far(o);
}

void fg_order_remove(struct fg_order *o, uint32_t item)
{
	switch (o->place[item]) {
	case FG_ORDER_RING:
		out_of_ring(o, item);
		break;
	case FG_ORDER_FAR:
		o->in_far--;
		/* fall through */
	case FG_ORDER_NEAR:
		fg_skiplist_remove(&o->sl, item);
		break;
	default:
		return;
	}
	o->place[item] = FG_ORDER_OUT;
	if (--o->count && fg_skiplist_first_in(&o->sl, NEAR) == FG_SKIP_NIL)
		refill(o);
}

void fg_order_copy(struct fg_order *dst, const struct fg_order *src)
{
	dst->calendar = src->calendar;
	dst->horizon = src->horizon;
	dst->shift = src->shift;
	dst->count = src->count;
	/* Near first and in its order (ties between equal keys as they were),
	 * then the rest by their keys against the same horizon. */
	for (uint32_t x = fg_skiplist_first_in(&src->sl, NEAR); x != FG_SKIP_NIL; x = fg_skiplist_next(&src->sl, x))
		to_near(dst, x, src->sl.nodes[x].key, src->sl.nodes[x].tie);
	for (uint32_t x = 0; x < src->sl.capacity; x++)
		if (src->place[x] == FG_ORDER_RING || src->place[x] == FG_ORDER_FAR)
			place(dst, x, src->sl.nodes[x].key, src->sl.nodes[x].tie);
}
