/* SPDX-License-Identifier: Apache-2.0 */
/*
 * skiplist — an ordered set of up to `capacity` items (named by index), keyed
 * by (key, tie): the fair-queuing core keeps one entry per queue with a
 * waiting head, keyed by that head's estimated virtual finish, with the tie
 * counter giving round-robin order among equal finishes.
 *
 * Keys are virtual times that wrap around 2^64; they compare by signed
 * difference, which orders correctly while all live keys lie within 2^63 of
 * each other (the queue set guarantees it).  Levels are fixed per item at
 * creation from a deterministic generator, so runs are reproducible.
 *
 * Links go both ways on every level, between a head and a tail sentinel, so
 * removal needs no search (O(1) expected), the minimum is O(1), and an
 * insertion searches from whichever end its key is nearer: a queue that was
 * just served goes back near the tail, a newly active one near the head, and
 * either search touches O(log N) nodes, mostly hot ones.
 *
 * Thread contract: single owner; no internal locking.
 */
#ifndef FG_SKIPLIST_H
#define FG_SKIPLIST_H

#include <stdbool.h>
#include <stdint.h>

#define FG_SKIP_MAX_LEVEL 12 /* p = 1/4: comfortable up to 4^12 = 16M items */
#define FG_SKIP_NIL UINT32_MAX

struct fg_skipnode {
	uint64_t key;
	uint64_t tie;
	uint32_t next[FG_SKIP_MAX_LEVEL];
	uint32_t prev[FG_SKIP_MAX_LEVEL];
	uint8_t level;
	bool linked;
};

struct fg_skiplist {
	struct fg_skipnode *nodes; /* capacity + 2: then the head and the tail sentinels */
	uint32_t capacity;
	uint32_t head, tail;       /* sentinel indices */
	uint32_t count;
};

static inline bool fg_skip_before(uint64_t ka, uint64_t ta, uint64_t kb, uint64_t tb)
{
	int64_t d = (int64_t)(ka - kb);
	return d < 0 || (d == 0 && ta < tb);
}

int fg_skiplist_init(struct fg_skiplist *s, uint32_t capacity, uint64_t seed);
void fg_skiplist_fini(struct fg_skiplist *s);

void fg_skiplist_insert(struct fg_skiplist *s, uint32_t item, uint64_t key, uint64_t tie);
void fg_skiplist_remove(struct fg_skiplist *s, uint32_t item);

/* The smallest item, or FG_SKIP_NIL. */
static inline uint32_t fg_skiplist_first(const struct fg_skiplist *s)
{
	uint32_t x = s->nodes[s->head].next[0];
	return x == s->tail ? FG_SKIP_NIL : x;
}

/* The item after `item` in order, or FG_SKIP_NIL. */
static inline uint32_t fg_skiplist_next(const struct fg_skiplist *s, uint32_t item)
{
	uint32_t x = s->nodes[item].next[0];
	return x == s->tail ? FG_SKIP_NIL : x;
}

static inline bool fg_skiplist_contains(const struct fg_skiplist *s, uint32_t item)
{
	return s->nodes[item].linked;
}

#endif
