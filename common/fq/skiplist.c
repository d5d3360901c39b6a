/* SPDX-License-Identifier: Apache-2.0 */
/* skiplist — see skiplist.h. */
#include "skiplist.h"

#include <errno.h>
#include <stdlib.h>

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int fg_skiplist_init(struct fg_skiplist *s, uint32_t capacity, uint64_t seed)
{
	return fg_skiplist_init_lists(s, capacity, 1, seed);
}

int fg_skiplist_init_lists(struct fg_skiplist *s, uint32_t capacity, unsigned n_lists, uint64_t seed)
{
	if (capacity == 0 || capacity >= FG_SKIP_NIL - 2 * FG_SKIP_MAX_LISTS || n_lists == 0 ||
	    n_lists > FG_SKIP_MAX_LISTS)
		return -EINVAL;
	/* Sentinels for every list there may be: lists come into use later
	 * (fg_skiplist_use_lists) without a reallocation. */
	s->nodes = aligned_alloc(64, sizeof(*s->nodes) * ((size_t)capacity + 2 * FG_SKIP_MAX_LISTS));
	if (!s->nodes)
		return -ENOMEM;
	s->capacity = capacity;
	s->n_lists = (uint8_t)n_lists;
	s->head = capacity;
	s->tail = capacity + 1;
	s->count = 0;
	for (uint32_t i = 0; i < capacity; i++) {
		/* Geometric levels with p = 1/4: two random bits per level. */
		uint64_t r = splitmix64(&seed);
		uint8_t lvl = 1;
		while (lvl < FG_SKIP_MAX_LEVEL && (r & 3) == 0) {
			lvl++;
			r >>= 2;
		}
		s->nodes[i].level = lvl;
		s->nodes[i].linked = false;
	}
	for (unsigned k = 0; k < FG_SKIP_MAX_LISTS; k++) {
		uint32_t head = capacity + 2 * k, tail = head + 1;
		for (int l = 0; l < FG_SKIP_MAX_LEVEL; l++) {
			s->nodes[head].link[l].next = tail;
			s->nodes[head].link[l].prev = FG_SKIP_NIL;
			s->nodes[tail].link[l].prev = head;
			s->nodes[tail].link[l].next = FG_SKIP_NIL;
		}
		s->nodes[head].level = s->nodes[tail].level = FG_SKIP_MAX_LEVEL;
		s->nodes[head].linked = s->nodes[tail].linked = false;
	}
	return 0;
}

void fg_skiplist_fini(struct fg_skiplist *s)
{
	free(s->nodes);
	s->nodes = NULL;
}

/* Is node x (not a sentinel) before (key, tie)? */
static inline bool node_before(const struct fg_skiplist *s, uint32_t x, uint64_t key, uint64_t tie)
{
	return fg_skip_before(s->nodes[x].key, s->nodes[x].tie, key, tie);
}

void fg_skiplist_insert_in(struct fg_skiplist *s, unsigned list, uint32_t item, uint64_t key, uint64_t tie)
{
	struct fg_skipnode *nodes = s->nodes, *n = &nodes[item];
	uint32_t pred[FG_SKIP_MAX_LEVEL], head = fg_skiplist__head(s, list), tail = head + 1;
	n->key = key;
	n->tie = tie;
	n->list = (uint8_t)list;
	uint32_t first = nodes[head].link[0].next, last = nodes[tail].link[0].prev;
	if (first == tail || node_before(s, last, key, tie)) {
		/* After everything (a queue served with one width; a bucket moved
		 * into the order's near): the end of every level, no search. */
		for (int l = 0; l < n->level; l++)
			pred[l] = nodes[tail].link[l].prev;
	} else if ((int64_t)(key - nodes[first].key) >= (int64_t)(nodes[last].key - key)) {
		/* Walk back from the tail: stop before the first node not after us. */
		uint32_t x = tail;
		for (int l = FG_SKIP_MAX_LEVEL - 1; l >= 0; l--) {
			for (;;) {
				uint32_t p = nodes[x].link[l].prev;
				if (p == head || node_before(s, p, key, tie))
					break;
				x = p;
			}
			pred[l] = nodes[x].link[l].prev;
		}
	} else {
		uint32_t x = head;
		for (int l = FG_SKIP_MAX_LEVEL - 1; l >= 0; l--) {
			for (;;) {
				uint32_t nx = nodes[x].link[l].next;
				if (nx == tail || !node_before(s, nx, key, tie))
					break;
				x = nx;
			}
			pred[l] = x;
		}
	}
	for (int l = 0; l < n->level; l++) {
		uint32_t p = pred[l], nx = nodes[p].link[l].next;
		n->link[l].next = nx;
		n->link[l].prev = p;
		nodes[p].link[l].next = item;
		nodes[nx].link[l].prev = item;
	}
	n->linked = true;
	s->count++;
}

void fg_skiplist_remove(struct fg_skiplist *s, uint32_t item)
{
	struct fg_skipnode *nodes = s->nodes, *n = &nodes[item];
	for (int l = 0; l < n->level; l++) {
		nodes[n->link[l].prev].link[l].next = n->link[l].next;
		nodes[n->link[l].next].link[l].prev = n->link[l].prev;
	}
	n->linked = false;
	s->count--;
}
