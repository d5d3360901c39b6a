/* SPDX-License-Identifier: Apache-2.0 */
/*
 * skiplist — an ordered set of up to `capacity` items (named by index), keyed
 * by (key, tie): the queue set's order (common/fq/order.h) keeps in it the
 * queues whose head's virtual finish lies below its calendar's horizon (and
 * those beyond its ring), or every queue on a UsageBased level, with the
 * tie giving round-robin order among equal keys.
 *
 * Keys are virtual times that wrap around 2^64; they compare by signed
 * difference, which orders correctly while all live keys lie within 2^63 of
 * each other (the queue set guarantees it).  Levels are fixed per item at
 * creation from a deterministic generator, so runs are reproducible.
 *
 * Links go both ways on every level, between a head and a tail sentinel, so
 * removal needs no search (O(1) expected), the minimum and maximum are
 * O(1), and an insertion searches from whichever end its key is nearer (the
 * tail when as near: ties grow), touching O(log N) nodes, mostly hot ones
 * near the ends.  A node is two aligned cache lines, the key beside the
 * links of the six lowest levels, so each step of a search touches one line
 * of the node it visits.  An insertion in the middle of many items still
 * walks O(log N) cold nodes: what the order's calendar avoids.  Memory: 128
 * bytes per item, allocated at creation.
 *
 * Several lists (up to FG_SKIP_MAX_LISTS) may share one node array, each
 * item in at most one: the order is then the merge of the lists, its first
 * item the smallest of their first ones (common/fq/order uses list 0 for near
 * and list 1 for far).
 *
 * Thread contract: single owner; no internal locking.
 */
#ifndef FG_SKIPLIST_H
#define FG_SKIPLIST_H

#include <stdbool.h>
#include <stdint.h>
#include "compiler.h"

#define FG_SKIP_MAX_LEVEL 12 /* p = 1/4: comfortable up to 4^12 = 16M items */
#define FG_SKIP_NIL UINT32_MAX
#define FG_SKIP_MAX_LISTS 8

/* Two cache lines, aligned: the key and the links of the six lowest
 * levels, where nearly every search step is, share the first one, so a
 * step either way touches one line of the node it visits. */
struct fg_skipnode {
	uint64_t key;
	uint64_t tie;
	struct {
		uint32_t next, prev;
	} link[FG_SKIP_MAX_LEVEL];
	uint8_t level;
	uint8_t list;              /* the list it is linked in */
	bool linked;
} __attribute__((aligned(FG_CACHE_LINE)));

struct fg_skiplist {
	struct fg_skipnode *nodes; /* capacity + 2 * FG_SKIP_MAX_LISTS: then each list's head and tail sentinels */
	uint32_t capacity;
	uint32_t head, tail;       /* list 0's sentinel indices */
	uint32_t count;            /* items in all lists */
	uint8_t n_lists;           /* lists in use: 0 .. n_lists - 1 */
};

static inline bool fg_skip_before(uint64_t ka, uint64_t ta, uint64_t kb, uint64_t tb)
{
	int64_t d = (int64_t)(ka - kb);
	return d < 0 || (d == 0 && ta < tb);
}

/* One list in use (fg_skiplist_init) or n_lists (1..FG_SKIP_MAX_LISTS); more
 * can come into use later (fg_skiplist_use_lists). */
int fg_skiplist_init(struct fg_skiplist *s, uint32_t capacity, uint64_t seed);
int fg_skiplist_init_lists(struct fg_skiplist *s, uint32_t capacity, unsigned n_lists, uint64_t seed);
void fg_skiplist_fini(struct fg_skiplist *s);

/* Into list `list` (fg_skiplist_insert: list 0). */
void fg_skiplist_insert_in(struct fg_skiplist *s, unsigned list, uint32_t item, uint64_t key, uint64_t tie);
static inline void fg_skiplist_insert(struct fg_skiplist *s, uint32_t item, uint64_t key, uint64_t tie)
{
	fg_skiplist_insert_in(s, 0, item, key, tie);
}
void fg_skiplist_remove(struct fg_skiplist *s, uint32_t item);

/* Lists 0 .. n - 1 in use from now on (never fewer than now). */
static inline void fg_skiplist_use_lists(struct fg_skiplist *s, unsigned n)
{
	if (n > s->n_lists && n <= FG_SKIP_MAX_LISTS)
		s->n_lists = (uint8_t)n;
}

static inline uint32_t fg_skiplist__head(const struct fg_skiplist *s, unsigned list) { return s->capacity + 2 * list; }
static inline bool fg_skiplist__is_tail(const struct fg_skiplist *s, uint32_t x)
{
	return x >= s->capacity && ((x - s->capacity) & 1);
}

/* The smallest item of one list, or FG_SKIP_NIL. */
static inline uint32_t fg_skiplist_first_in(const struct fg_skiplist *s, unsigned list)
{
	uint32_t x = s->nodes[fg_skiplist__head(s, list)].link[0].next;
	return fg_skiplist__is_tail(s, x) ? FG_SKIP_NIL : x;
}

/* The largest item of one list, or FG_SKIP_NIL. */
static inline uint32_t fg_skiplist_last_in(const struct fg_skiplist *s, unsigned list)
{
	uint32_t head = fg_skiplist__head(s, list), x = s->nodes[head + 1].link[0].prev;
	return x == head ? FG_SKIP_NIL : x;
}

/* The smallest item of all lists, or FG_SKIP_NIL. */
static inline uint32_t fg_skiplist_first(const struct fg_skiplist *s)
{
	uint32_t best = fg_skiplist_first_in(s, 0);
	for (unsigned l = 1; l < s->n_lists; l++) {
		uint32_t x = fg_skiplist_first_in(s, l);
		if (x != FG_SKIP_NIL && (best == FG_SKIP_NIL || fg_skip_before(s->nodes[x].key, s->nodes[x].tie,
									       s->nodes[best].key, s->nodes[best].tie)))
			best = x;
	}
	return best;
}

/* The item after `item` in its own list, or FG_SKIP_NIL. */
static inline uint32_t fg_skiplist_next(const struct fg_skiplist *s, uint32_t item)
{
	uint32_t x = s->nodes[item].link[0].next;
	return fg_skiplist__is_tail(s, x) ? FG_SKIP_NIL : x;
}

static inline bool fg_skiplist_contains(const struct fg_skiplist *s, uint32_t item)
{
	return s->nodes[item].linked;
}

#endif
