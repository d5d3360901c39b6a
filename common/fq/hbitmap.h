/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hbitmap — a set of small integers [0, n) as a 64-ary tree of bitmaps:
 * insert, remove, "largest member" and the next or previous member of a
 * position each touch one word per tree level
 * (2 levels up to 4 096 members, 3 up to 262 144), usually just the first.
 *
 * Thread contract: single owner.
 */
#ifndef FG_HBITMAP_H
#define FG_HBITMAP_H

#include <stdbool.h>
#include <stdint.h>

#define FG_HBITMAP_MAX_DEPTH 6 /* 64^6 members: more than any uint32_t range we track */
#define FG_HBITMAP_NONE UINT32_MAX

struct fg_hbitmap {
	uint32_t n;
	unsigned depth;
	uint64_t *level[FG_HBITMAP_MAX_DEPTH]; /* level[0]: one bit per member; level[depth-1]: one word */
};

/* 0, -EINVAL (n == 0) or -ENOMEM. */
int fg_hbitmap_init(struct fg_hbitmap *b, uint32_t n);
void fg_hbitmap_fini(struct fg_hbitmap *b);

static inline bool fg_hbitmap_has(const struct fg_hbitmap *b, uint32_t i)
{
	return b->level[0][i >> 6] >> (i & 63) & 1;
}

static inline void fg_hbitmap_set(struct fg_hbitmap *b, uint32_t i)
{
	for (unsigned l = 0; l < b->depth; l++, i >>= 6) {
		uint64_t *w = &b->level[l][i >> 6], was = *w;
		*w = was | 1ull << (i & 63);
		if (was) /* the word was already non-empty: the levels above know */
			return;
	}
}

static inline void fg_hbitmap_clear(struct fg_hbitmap *b, uint32_t i)
{
	for (unsigned l = 0; l < b->depth; l++, i >>= 6) {
		uint64_t *w = &b->level[l][i >> 6];
		*w &= ~(1ull << (i & 63));
		if (*w) /* other members keep this word alive above */
			return;
	}
}

/* The largest member, or FG_HBITMAP_NONE when empty. */
static inline uint32_t fg_hbitmap_max(const struct fg_hbitmap *b)
{
	uint64_t top = b->level[b->depth - 1][0];
	if (!top)
		return FG_HBITMAP_NONE;
	uint32_t i = 63u - (uint32_t)__builtin_clzll(top);
	for (unsigned l = b->depth - 1; l-- > 0;)
		i = i * 64 + 63u - (uint32_t)__builtin_clzll(b->level[l][i]);
	return i;
}

/* Bits at level l (level 0: n). */
static inline uint64_t fg_hbitmap__bits(const struct fg_hbitmap *b, unsigned l)
{
	uint64_t n = b->n;
	while (l--)
		n = (n + 63) / 64;
	return n;
}

/* The smallest member >= i, or FG_HBITMAP_NONE. */
static inline uint32_t fg_hbitmap_next(const struct fg_hbitmap *b, uint32_t i)
{
	uint64_t pos = i;
	unsigned l = 0;
	for (;;) {
		if (pos >= fg_hbitmap__bits(b, l))
			return FG_HBITMAP_NONE;
		uint64_t bits = b->level[l][pos >> 6] & (~0ull << (pos & 63));
		if (bits) {
			pos = (pos & ~63ull) + (uint64_t)__builtin_ctzll(bits);
			break;
		}
		if (++l == b->depth)
			return FG_HBITMAP_NONE;
		pos = (pos >> 6) + 1; /* the next word, one level up */
	}
	while (l-- > 0)
		pos = pos * 64 + (uint64_t)__builtin_ctzll(b->level[l][pos]);
	return (uint32_t)pos;
}

/* The largest member <= i, or FG_HBITMAP_NONE. */
static inline uint32_t fg_hbitmap_prev(const struct fg_hbitmap *b, uint32_t i)
{
	if (i >= b->n)
		i = b->n - 1;
	uint64_t pos = i;
	unsigned l = 0;
	for (;;) {
		unsigned o = (unsigned)(pos & 63);
		uint64_t bits = b->level[l][pos >> 6] & (o == 63 ? ~0ull : (2ull << o) - 1);
		if (bits) {
			pos = (pos & ~63ull) + 63u - (uint64_t)__builtin_clzll(bits);
			break;
		}
		if (pos < 64 || ++l == b->depth)
			return FG_HBITMAP_NONE;
		pos = (pos >> 6) - 1; /* the word before, one level up */
	}
	while (l-- > 0)
		pos = pos * 64 + 63u - (uint64_t)__builtin_clzll(b->level[l][pos]);
	return (uint32_t)pos;
}

#endif
