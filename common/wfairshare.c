/* SPDX-License-Identifier: Apache-2.0 */
/* wfairshare — weighted water-filling over logarithmic ratio buckets; see wfairshare.h. */
#include "wfairshare.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A ratio d/w is kept as x = d * 2^RATIO_SHIFT / w: with d < 2^24 and
 * 1 <= w <= 10^6 < 2^20, x lies in [2^18, 2^62), so its leading bit is one
 * of OCTAVES values and the SUB_BITS bits below it pick the bucket. */
#define RATIO_SHIFT 38
#define MIN_MSB 18
#define OCTAVES (62 - MIN_MSB)
#define SUB (1u << FG_WFAIRSHARE_SUB_BITS)
#define N_BUCKETS (OCTAVES * SUB)

typedef unsigned __int128 u128;

static inline uint64_t ratio_of(uint64_t d, uint32_t w) { return (d << RATIO_SHIFT) / w; }

/* Bucket 1..N_BUCKETS of a ratio. */
static inline uint32_t bucket_of(uint64_t x)
{
	unsigned msb = 63u - (unsigned)__builtin_clzll(x);
	return (msb - MIN_MSB) * SUB + (uint32_t)((x >> (msb - FG_WFAIRSHARE_SUB_BITS)) & (SUB - 1)) + 1;
}

/* The smallest ratio above every ratio of bucket b (0 for b = 0). */
static inline uint64_t upper_of(uint32_t b)
{
	if (b == 0)
		return 0;
	uint32_t i = b - 1, msb = i / SUB + MIN_MSB;
	return (uint64_t)(SUB + i % SUB + 1) << (msb - FG_WFAIRSHARE_SUB_BITS);
}

/* A ratio (x units) as seats per unit of weight, FG_FAIRSHARE_FRAC_BITS
 * fraction bits; saturated (a huge demand of a tiny weight). */
static inline uint64_t rate_of(u128 x)
{
	u128 r = (x * FG_WFAIRSHARE_WEIGHT_ONE) >> (RATIO_SHIFT - FG_FAIRSHARE_FRAC_BITS);
	return r > UINT64_MAX ? UINT64_MAX : (uint64_t)r;
}

int fg_wfairshare_init(struct fg_wfairshare *f, bool sums)
{
	memset(f, 0, sizeof(*f));
	f->n_buckets = N_BUCKETS;
	f->hist = calloc(N_BUCKETS + 1, sizeof(*f->hist));
	bool ok = f->hist && fg_hbitmap_init(&f->present, N_BUCKETS + 1) == 0;
	if (ok && sums) {
		f->sum_d = calloc(N_BUCKETS + 1, sizeof(*f->sum_d));
		f->sum_w = calloc(N_BUCKETS + 1, sizeof(*f->sum_w));
		ok = f->sum_d && f->sum_w;
	}
	if (!ok) {
		fg_wfairshare_fini(f);
		return -ENOMEM;
	}
	f->step0 = 1;
	while (f->step0 * 2u <= N_BUCKETS)
		f->step0 *= 2;
	return 0;
}

void fg_wfairshare_fini(struct fg_wfairshare *f)
{
	free(f->sum_d);
	free(f->sum_w);
	free(f->hist);
	if (f->present.depth)
		fg_hbitmap_fini(&f->present);
	memset(f, 0, sizeof(*f)); /* n_buckets 0: not initialized (callers test it) */
}

static void add(struct fg_wfairshare *f, uint64_t d, uint32_t w, int64_t sign)
{
	if (d == 0)
		return;
	uint32_t b = bucket_of(ratio_of(d, w));
	f->n += (uint64_t)sign;
	f->total += (uint64_t)(sign * (int64_t)d);
	f->total_w += (uint64_t)(sign * (int64_t)w);
	f->hist[b] += (uint32_t)sign;
	if (sign > 0 && f->hist[b] == 1)
		fg_hbitmap_set(&f->present, b);
	else if (sign < 0 && f->hist[b] == 0)
		fg_hbitmap_clear(&f->present, b);
	if (!f->sum_d)
		return;
	for (uint32_t i = b; i <= f->n_buckets; i += i & (~i + 1)) {
		f->sum_d[i] += sign * (int64_t)d;
		f->sum_w[i] += sign * (int64_t)w;
	}
}

static inline uint64_t clamp_d(uint64_t d) { return d > FG_WFAIRSHARE_MAX_DEMAND ? FG_WFAIRSHARE_MAX_DEMAND : d; }
static inline uint32_t clamp_w(uint32_t w)
{
	return w == 0 ? 1 : w > FG_WFAIRSHARE_MAX_WEIGHT ? FG_WFAIRSHARE_MAX_WEIGHT : w;
}

void fg_wfairshare_update(struct fg_wfairshare *f, uint64_t old_d, uint32_t old_w, uint64_t new_d, uint32_t new_w)
{
	old_d = clamp_d(old_d);
	new_d = clamp_d(new_d);
	old_w = clamp_w(old_w);
	new_w = clamp_w(new_w);
	if (old_d == new_d && old_w == new_w)
		return;
	add(f, old_d, old_w, -1);
	add(f, new_d, new_w, +1);
}

uint64_t fg_wfairshare_max_rate(const struct fg_wfairshare *f)
{
	uint32_t b = f->n ? fg_hbitmap_max(&f->present) : FG_HBITMAP_NONE;
	return b == FG_HBITMAP_NONE ? 0 : rate_of(upper_of(b));
}

uint64_t fg_wfairshare_rate(const struct fg_wfairshare *f, uint64_t capacity)
{
	if (f->n == 0)
		return 0;
	if (f->total <= capacity)
		return fg_wfairshare_max_rate(f);
	/* S(p) = sum(d, buckets <= p) + upper(p) * sum(w, buckets > p) grows
	 * with p (a queue of bucket p+1 demands at least upper(p) * w): descend
	 * to the largest p with S(p) <= C; from bucket p+1 on, every queue is
	 * taken at its weighted share, which fixes lambda. */
	u128 cap = (u128)capacity << RATIO_SHIFT;
	uint64_t pos = 0, acc_d = 0, acc_w = 0;
	for (uint64_t step = f->step0; step; step >>= 1) {
		uint64_t np = pos + step;
		if (np > f->n_buckets)
			continue;
		uint64_t d = acc_d + (uint64_t)f->sum_d[np], w = acc_w + (uint64_t)f->sum_w[np];
		if (((u128)d << RATIO_SHIFT) + (u128)upper_of((uint32_t)np) * (f->total_w - w) <= cap) {
			pos = np;
			acc_d = d;
			acc_w = w;
		}
	}
	uint64_t rest_w = f->total_w - acc_w;
	if (rest_w == 0) /* cannot happen while total > capacity; be safe */
		return fg_wfairshare_max_rate(f);
	u128 x = (((u128)(capacity - acc_d)) << RATIO_SHIFT) / rest_w;
	/* Within the crossing bucket (the queues there below the line are what
	 * the formula cannot see). */
	u128 lo = upper_of((uint32_t)pos), hi = pos < f->n_buckets ? upper_of((uint32_t)pos + 1) : x;
	if (x < lo)
		x = lo;
	if (x > hi)
		x = hi;
	return rate_of(x);
}
