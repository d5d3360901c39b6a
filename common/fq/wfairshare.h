/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wfairshare — the weighted max-min fair share ("water level") of a capacity
 * over a changing multiset of (demand, weight) pairs: fairshare.h's problem
 * with a weight per queue.  O(1) per change; a query costs the occupied
 * buckets the crossing moves over since the last one (O(1) in a steady
 * state), each a word per level of a bitmap tree.
 *
 * A queue with demand d (seats) and weight w (thousandths: 1000 is weight 1)
 * receives min(d, w/1000 * lambda); lambda, the rate of one unit of weight,
 * solves  sum(min(d, w/1000 * lambda)) = C.  The queues are ordered by their
 * ratio d/w, which is not an integer, so the ratios are kept in logarithmic
 * buckets (FG_WFAIRSHARE_SUB_BITS bits of mantissa per octave: a bucket spans
 * 1/128 = 0.8% of its value) with each bucket's sum of demands and of
 * weights, and the set of occupied buckets.  The bucket where the water line
 * crosses is cached with the sums below it: a change updates them in O(1),
 * and a query moves the crossing from occupied bucket to occupied bucket
 * (demands and capacity move a little between two queries: usually not at
 * all), then takes lambda exactly as if every queue from the next occupied
 * bucket on were held at its weighted share.  The answer is exact when the crossing bucket
 * holds no queue below the water line, and otherwise off by less than one
 * bucket's width (0.8%) — and the queues of that bucket get their share
 * within the same bound.  Ratios are doubles, their buckets read from the
 * exponent and mantissa bits (no integer division on the path).  The largest ratio (when every demand fits) is the
 * upper edge of its bucket: at most 0.8% high.  Rates saturate at
 * UINT64_MAX (2^32 seats per unit of weight).  The counts-only form keeps
 * no sums: the largest ratio only.
 *
 * Demands are clamped to FG_WFAIRSHARE_MAX_DEMAND, weights to
 * [1, FG_WFAIRSHARE_MAX_WEIGHT].  A demand of 0 is no queue.
 *
 * Thread contract: single owner.
 */
#ifndef FG_WFAIRSHARE_H
#define FG_WFAIRSHARE_H

#include <stdbool.h>
#include <stdint.h>

#include "fairshare.h"
#include "hbitmap.h"

#define FG_WFAIRSHARE_WEIGHT_ONE 1000u
#define FG_WFAIRSHARE_MAX_WEIGHT 1000000u       /* weight 1000 */
#define FG_WFAIRSHARE_MAX_DEMAND ((1u << 24) - 1) /* seats */
#define FG_WFAIRSHARE_SUB_BITS 7

struct fg_wfairshare_node {
	int64_t d, w;           /* a bucket's sums of demands and of weights */
};

struct fg_wfairshare {
	uint32_t n_buckets;
	struct fg_wfairshare_node *sums; /* per bucket 1..n_buckets (NULL when counts-only) */
	uint32_t *count;        /* queues per bucket */
	struct fg_hbitmap present; /* buckets with a queue */
	uint64_t n;             /* queues with demand > 0 */
	uint64_t total;         /* sum of demands */
	uint64_t total_w;       /* sum of weights */
	/* The crossing of the last fg_wfairshare_rate: a bucket q and the sums
	 * over buckets <= q, kept up to date by every change. */
	uint32_t q;
	int64_t acc_d, acc_w;
};

/* With sums (fg_wfairshare_rate), or counts only (fg_wfairshare_max_rate). */
int fg_wfairshare_init(struct fg_wfairshare *f, bool sums);
void fg_wfairshare_fini(struct fg_wfairshare *f);

/* A queue went from (old_d, old_w) to (new_d, new_w); a demand of 0 is no queue. */
void fg_wfairshare_update(struct fg_wfairshare *f, uint64_t old_d, uint32_t old_w, uint64_t new_d, uint32_t new_w);

/*
 * lambda for `capacity` seats, in seats per unit of weight with
 * FG_FAIRSHARE_FRAC_BITS fraction bits (a weight-1 queue's share).  When
 * every demand fits it is fg_wfairshare_max_rate; with no demand 0.
 */
uint64_t fg_wfairshare_rate(struct fg_wfairshare *f, uint64_t capacity);

/* The largest demand / weight present, per unit of weight, same fixed point
 * (0 when none): what a queue consuming its whole demand moves R at. */
uint64_t fg_wfairshare_max_rate(const struct fg_wfairshare *f);

#endif
