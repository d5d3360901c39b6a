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
	if (capacity == 0 || capacity >= FG_SKIP_NIL - 2)
		return -EINVAL;
	s->nodes = malloc(sizeof(*s->nodes) * ((size_t)capacity + 2));
	if (!s->nodes)
		return -ENOMEM;
	s->capacity = capacity;
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
	for (int l = 0; l < FG_SKIP_MAX_LEVEL; l++) {
		s->nodes[s->head].next[l] = s->tail;
		s->nodes[s->head].prev[l] = FG_SKIP_NIL;
		s->nodes[s->tail].prev[l] = s->head;
		s->nodes[s->tail].next[l] = FG_SKIP_NIL;
	}
	s->nodes[s->head].level = s->nodes[s->tail].level = FG_SKIP_MAX_LEVEL;
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

void fg_skiplist_insert(struct fg_skiplist *s, uint32_t item, uint64_t key, uint64_t tie)
{
	struct fg_skipnode *nodes = s->nodes, *n = &nodes[item];
	uint32_t pred[FG_SKIP_MAX_LEVEL];
	n->key = key;
	n->tie = tie;
	uint32_t first = nodes[s->head].next[0], last = nodes[s->tail].prev[0];
	bool from_tail = first != s->tail &&
			 (int64_t)(key - nodes[first].key) > (int64_t)(nodes[last].key - key);
	if (from_tail) {
		/* Walk back from the tail: stop before the first node not after us. */
		uint32_t x = s->tail;
		for (int l = FG_SKIP_MAX_LEVEL - 1; l >= 0; l--) {
			for (;;) {
				uint32_t p = nodes[x].prev[l];
				if (p == s->head || node_before(s, p, key, tie))
					break;
				x = p;
			}
			pred[l] = nodes[x].prev[l];
		}
	} else {
		uint32_t x = s->head;
		for (int l = FG_SKIP_MAX_LEVEL - 1; l >= 0; l--) {
			for (;;) {
				uint32_t nx = nodes[x].next[l];
				if (nx == s->tail || !node_before(s, nx, key, tie))
					break;
				x = nx;
			}
			pred[l] = x;
		}
	}
	for (int l = 0; l < n->level; l++) {
		uint32_t p = pred[l], nx = nodes[p].next[l];
		n->next[l] = nx;
		n->prev[l] = p;
		nodes[p].next[l] = item;
		nodes[nx].prev[l] = item;
	}
	n->linked = true;
	s->count++;
}

void fg_skiplist_remove(struct fg_skiplist *s, uint32_t item)
{
	struct fg_skipnode *nodes = s->nodes, *n = &nodes[item];
	for (int l = 0; l < n->level; l++) {
		nodes[n->prev[l]].next[l] = n->next[l];
		nodes[n->next[l]].prev[l] = n->prev[l];
	}
	n->linked = false;
	s->count--;
}
