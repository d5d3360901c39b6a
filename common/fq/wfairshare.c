/* SPDX-License-Identifier: Apache-2.0 */
/* wfairshare — weighted water-filling over logarithmic ratio buckets; see wfairshare.h. */
#include "wfairshare.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * A ratio d/w (seats per thousandth of weight) is a double; its exponent
 * and the top FG_WFAIRSHARE_SUB_BITS bits of its mantissa are the bucket,
 * read straight from its bits.  With 1 <= d < 2^24 and 1 <= w <= 10^6 < 2^20
 * the ratio lies in [2^-20, 2^24): MIN_EXP is the biased exponent of 2^-21,
 * so every ratio has a bucket, and upper_of is exact.
 */
#define MANTISSA_BITS 52
#define SHIFT (MANTISSA_BITS - FG_WFAIRSHARE_SUB_BITS)
#define MIN_EXP (1023 - 21)
#define MAX_EXP (1023 + 24)
#define N_BUCKETS ((MAX_EXP - MIN_EXP + 1) << FG_WFAIRSHARE_SUB_BITS)

static inline uint64_t bits_of(double x)
{
	uint64_t b;
	memcpy(&b, &x, sizeof(b));
	return b;
}

static inline double double_of(uint64_t b)
{
	double x;
	memcpy(&x, &b, sizeof(x));
	return x;
}

/* Bucket 1..N_BUCKETS of a ratio. */
static inline uint32_t bucket_of(uint64_t d, uint32_t w)
{
	return (uint32_t)((bits_of((double)d / (double)w) >> SHIFT) - ((uint64_t)MIN_EXP << FG_WFAIRSHARE_SUB_BITS)) + 1;
}

/* The smallest ratio above every ratio of bucket b (0 for b = 0). */
static inline double upper_of(uint64_t b)
{
	return b ? double_of((b + ((uint64_t)MIN_EXP << FG_WFAIRSHARE_SUB_BITS)) << SHIFT) : 0.0;
}

/* A ratio (seats per thousandth) as seats per unit of weight with
 * FG_FAIRSHARE_FRAC_BITS fraction bits, saturated. */
static inline uint64_t rate_of(double x)
{
	double r = x * FG_WFAIRSHARE_WEIGHT_ONE * (double)(1ull << FG_FAIRSHARE_FRAC_BITS);
	return r >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)r;
}

int fg_wfairshare_init(struct fg_wfairshare *f, bool sums)
{
	memset(f, 0, sizeof(*f));
	f->n_buckets = N_BUCKETS;
	f->count = calloc(N_BUCKETS + 1, sizeof(*f->count));
	bool ok = f->count && fg_hbitmap_init(&f->present, N_BUCKETS + 1) == 0;
	if (ok && sums) {
		f->sums = calloc(N_BUCKETS + 1, sizeof(*f->sums));
		ok = f->sums != NULL;
	}
	if (!ok) {
		fg_wfairshare_fini(f);
		return -ENOMEM;
	}
	return 0;
}

void fg_wfairshare_fini(struct fg_wfairshare *f)
{
	free(f->sums);
	free(f->count);
	if (f->present.depth)
		fg_hbitmap_fini(&f->present);
	memset(f, 0, sizeof(*f)); /* n_buckets 0: not initialized (callers test it) */
}

static void add(struct fg_wfairshare *f, uint64_t d, uint32_t w, int64_t sign)
{
	if (d == 0)
		return;
	uint32_t b = bucket_of(d, w);
	f->n += (uint64_t)sign;
	f->total += (uint64_t)(sign * (int64_t)d);
	f->total_w += (uint64_t)(sign * (int64_t)w);
	f->count[b] += (uint32_t)sign;
	if (sign > 0 && f->count[b] == 1)
		fg_hbitmap_set(&f->present, b);
	else if (sign < 0 && f->count[b] == 0)
		fg_hbitmap_clear(&f->present, b);
	if (!f->sums)
		return;
	f->sums[b].d += sign * (int64_t)d;
	f->sums[b].w += sign * (int64_t)w;
	if (b <= f->q) { /* inside the cached crossing's prefix */
		f->acc_d += sign * (int64_t)d;
		f->acc_w += sign * (int64_t)w;
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

/* S(p) = sum(d, buckets <= p) + upper(p) * sum(w, buckets > p), with the
 * prefix sums given. */
static inline double water_at(const struct fg_wfairshare *f, uint64_t p, int64_t acc_d, int64_t acc_w)
{
	return (double)acc_d + upper_of(p) * (double)((int64_t)f->total_w - acc_w);
}

uint64_t fg_wfairshare_rate(struct fg_wfairshare *f, uint64_t capacity)
{
	if (f->n == 0)
		return 0;
	if (f->total <= capacity || !f->sums)
		return fg_wfairshare_max_rate(f);
	/* S grows with p (a queue of bucket p+1 demands at least upper(p) * w).
	 * The crossing q is the last occupied bucket with S(q) <= C; from the
	 * next occupied bucket on, every queue is held at its weighted share,
	 * which fixes lambda.  It is cached: demands and the capacity move a
	 * little between two calls, and so does q, bucket by occupied bucket. */
	double cap = (double)capacity;
	while (f->q && water_at(f, f->q, f->acc_d, f->acc_w) > cap) {
		f->acc_d -= f->sums[f->q].d;
		f->acc_w -= f->sums[f->q].w;
		uint32_t p = fg_hbitmap_prev(&f->present, f->q - 1);
		f->q = p == FG_HBITMAP_NONE ? 0 : p;
	}
	uint32_t nx;
	while ((nx = fg_hbitmap_next(&f->present, f->q + 1)) != FG_HBITMAP_NONE &&
	       water_at(f, nx, f->acc_d + f->sums[nx].d, f->acc_w + f->sums[nx].w) <= cap) {
		f->acc_d += f->sums[nx].d;
		f->acc_w += f->sums[nx].w;
		f->q = nx;
	}
	int64_t rest_w = (int64_t)f->total_w - f->acc_w;
	if (rest_w <= 0) /* cannot happen while total > capacity; be safe */
		return fg_wfairshare_max_rate(f);
	double x = (cap - (double)f->acc_d) / (double)rest_w;
	/* Within the crossing (the queues of the next occupied bucket that lie
	 * below the line are what the formula cannot see). */
	double lo = upper_of(f->q);
	if (nx != FG_HBITMAP_NONE && x > upper_of(nx))
		x = upper_of(nx);
	return rate_of(x < lo ? lo : x);
}
