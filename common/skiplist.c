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
	if (capacity == 0 || capacity == FG_SKIP_NIL)
		return -EINVAL;
	s->nodes = malloc(sizeof(*s->nodes) * ((size_t)capacity + 1));
	if (!s->nodes)
		return -ENOMEM;
	s->capacity = capacity;
	s->count = 0;
	s->top = 1;
	for (uint32_t i = 0; i <= capacity; i++) {
		struct fg_skipnode *n = &s->nodes[i];
		/* Geometric levels with p = 1/4: two random bits per level. */
		uint64_t r = splitmix64(&seed);
		uint8_t lvl = 1;
		while (lvl < FG_SKIP_MAX_LEVEL && (r & 3) == 0) {
			lvl++;
			r >>= 2;
		}
		n->level = i == capacity ? FG_SKIP_MAX_LEVEL : lvl;
		n->linked = false;
		for (int l = 0; l < FG_SKIP_MAX_LEVEL; l++)
			n->next[l] = FG_SKIP_NIL;
	}
	return 0;
}

void fg_skiplist_fini(struct fg_skiplist *s)
{
	free(s->nodes);
	s->nodes = NULL;
}

/* Fill pred[l] with the last node before (key, tie) on each level. */
static void find_preds(const struct fg_skiplist *s, uint64_t key, uint64_t tie, uint32_t *pred)
{
	uint32_t x = s->capacity;
	for (int l = s->top - 1; l >= 0; l--) {
		for (;;) {
			uint32_t nx = s->nodes[x].next[l];
			if (nx == FG_SKIP_NIL || !fg_skip_before(s->nodes[nx].key, s->nodes[nx].tie, key, tie))
				break;
			x = nx;
		}
		pred[l] = x;
	}
}

void fg_skiplist_insert(struct fg_skiplist *s, uint32_t item, uint64_t key, uint64_t tie)
{
	struct fg_skipnode *n = &s->nodes[item];
	uint32_t pred[FG_SKIP_MAX_LEVEL];
	n->key = key;
	n->tie = tie;
	while (s->top < n->level)
		s->nodes[s->capacity].next[s->top++] = FG_SKIP_NIL;
	find_preds(s, key, tie, pred);
	for (int l = 0; l < n->level; l++) {
		n->next[l] = s->nodes[pred[l]].next[l];
		s->nodes[pred[l]].next[l] = item;
	}
	n->linked = true;
	s->count++;
}

void fg_skiplist_remove(struct fg_skiplist *s, uint32_t item)
{
	struct fg_skipnode *n = &s->nodes[item];
	uint32_t pred[FG_SKIP_MAX_LEVEL];
	find_preds(s, n->key, n->tie, pred);
	for (int l = 0; l < n->level && l < s->top; l++)
		if (s->nodes[pred[l]].next[l] == item)
			s->nodes[pred[l]].next[l] = n->next[l];
	n->linked = false;
	s->count--;
	while (s->top > 1 && s->nodes[s->capacity].next[s->top - 1] == FG_SKIP_NIL)
		s->top--;
}
