/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fairshare — the max-min fair share ("water level") of a capacity over a
 * changing multiset of integer demands, in O(log C) per change and per query
 * (KEP-1040 "Computing the max-min fair allocation").
 *
 * Demands are seats (waiting + executing) per queue, clamped to the capacity
 * range [0, size]; two Fenwick trees over demand values hold the count of
 * queues and the sum of demands, and a descent finds the largest integer
 * level k with  sum(d <= k) + k * #(d > k) <= C,  then the exact fraction.
 *
 * Thread contract: single owner.
 */
#ifndef FG_FAIRSHARE_H
#define FG_FAIRSHARE_H

#include <stdint.h>

#include "hbitmap.h"

#define FG_FAIRSHARE_FRAC_BITS 32

struct fg_fairshare {
	uint32_t size;    /* largest demand value tracked */
	uint32_t step0;   /* largest power of two <= size */
	int64_t *count;   /* Fenwick tree, index 1..size (NULL when counts-only) */
	int64_t *sum;     /* Fenwick tree, index 1..size (NULL when counts-only) */
	/* Counts-only: queues per demand value and the set of values present —
	 * O(1) updates, where the trees take O(log size). */
	uint32_t *hist;
	struct fg_hbitmap present;
	uint64_t n;       /* queues with demand > 0 */
	uint64_t total;   /* sum of demands */
};

int fg_fairshare_init(struct fg_fairshare *f, uint32_t size);
/* Counts only: total and max, no water level; updates in O(1). */
int fg_fairshare_init_counts(struct fg_fairshare *f, uint32_t size);
void fg_fairshare_fini(struct fg_fairshare *f);

/* A queue's demand went from old_d to new_d (both clamped to size). */
void fg_fairshare_update(struct fg_fairshare *f, uint64_t old_d, uint64_t new_d);

/*
 * The fair share of `capacity` in fixed point (FG_FAIRSHARE_FRAC_BITS
 * fraction bits).  When every demand fits, every queue is satisfied and the
 * level is the largest demand; with no demand it is 0.
 */
uint64_t fg_fairshare_level(const struct fg_fairshare *f, uint64_t capacity);

/* The largest demand present (0 when none). */
uint64_t fg_fairshare_max(const struct fg_fairshare *f);

#endif
