/* SPDX-License-Identifier: Apache-2.0 */
/*
 * histogram — log-linear latency histogram for the bench tools (HdrHistogram's
 * scheme): values below 2^FG_HIST_SUB_BITS have a bucket each; above, every
 * power of two [2^e, 2^(e+1)) is cut into FG_HIST_SUB equal buckets of width
 * 2^(e - FG_HIST_SUB_BITS).
 *
 * Invariants: a bucket [low, high] has (high - low + 1) <= low / FG_HIST_SUB,
 * so its midpoint is within 1 / (2 * FG_HIST_SUB) = 0.39% of any value in it
 * (quantiles report the midpoint, clamped to the exact min and max).  Values
 * of 2^FG_HIST_MAX_BITS and more count in the last bucket (max stays exact).
 * Constant memory (sizeof(struct fg_hist), ~35 KiB); count, sum, min and max
 * are exact; two histograms merge by a bucket-wise sum (fg_hist_merge).
 *
 * Thread contract: none; a histogram is used by one thread at a time (the
 * owner locks around it when another thread reads it).
 */
#ifndef FG_HISTOGRAM_H
#define FG_HISTOGRAM_H

#include <stdint.h>
#include <string.h>

#define FG_HIST_SUB_BITS 7u
#define FG_HIST_SUB (1u << FG_HIST_SUB_BITS)
#define FG_HIST_MAX_BITS 40u /* 2^40 us is 12.7 days */
#define FG_HIST_BUCKETS ((FG_HIST_MAX_BITS - FG_HIST_SUB_BITS + 1u) * FG_HIST_SUB)

struct fg_hist {
	uint64_t count, sum, min, max;
	uint64_t buckets[FG_HIST_BUCKETS];
};

static inline void fg_hist_reset(struct fg_hist *h)
{
	memset(h, 0, sizeof(*h));
}

static inline unsigned fg_hist_bucket(uint64_t v)
{
	if (v < FG_HIST_SUB)
		return (unsigned)v;
	if (v >> FG_HIST_MAX_BITS)
		return FG_HIST_BUCKETS - 1;
	unsigned e = 63u - (unsigned)__builtin_clzll(v); /* FG_HIST_SUB_BITS <= e < FG_HIST_MAX_BITS */
	unsigned sub = (unsigned)(v >> (e - FG_HIST_SUB_BITS)) & (FG_HIST_SUB - 1);
	return (e - FG_HIST_SUB_BITS + 1) * FG_HIST_SUB + sub;
}

/* The smallest value a bucket holds. */
static inline uint64_t fg_hist_bucket_low(unsigned b)
{
	if (b < FG_HIST_SUB)
		return b;
	unsigned e = b / FG_HIST_SUB + FG_HIST_SUB_BITS - 1, sub = b % FG_HIST_SUB;
	return (uint64_t)(FG_HIST_SUB + sub) << (e - FG_HIST_SUB_BITS);
}

/* The largest value a bucket holds (the last bucket also holds the clamped). */
static inline uint64_t fg_hist_bucket_high(unsigned b)
{
	if (b < FG_HIST_SUB)
		return b;
	unsigned e = b / FG_HIST_SUB + FG_HIST_SUB_BITS - 1;
	return fg_hist_bucket_low(b) + ((uint64_t)1 << (e - FG_HIST_SUB_BITS)) - 1;
}

static inline void fg_hist_add(struct fg_hist *h, uint64_t v)
{
	h->buckets[fg_hist_bucket(v)]++;
	if (!h->count || v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->count++;
	h->sum += v;
}

/* into += from */
static inline void fg_hist_merge(struct fg_hist *into, const struct fg_hist *from)
{
	if (!from->count)
		return;
	for (unsigned b = 0; b < FG_HIST_BUCKETS; b++)
		into->buckets[b] += from->buckets[b];
	if (!into->count || from->min < into->min)
		into->min = from->min;
	if (from->max > into->max)
		into->max = from->max;
	into->count += from->count;
	into->sum += from->sum;
}

/* Quantile q in [0,1] (nearest rank): the midpoint of the bucket holding that
 * rank, clamped to [min, max]; 0 for an empty histogram. */
static inline double fg_hist_quantile(const struct fg_hist *h, double q)
{
	if (!h->count)
		return 0;
	if (q <= 0)
		return (double)h->min;
	if (q >= 1)
		return (double)h->max;
	uint64_t rank = (uint64_t)(q * (double)(h->count - 1)) + 1, seen = 0;
	for (unsigned b = 0; b < FG_HIST_BUCKETS; b++) {
		seen += h->buckets[b];
		if (seen >= rank) {
			double mid = ((double)fg_hist_bucket_low(b) + (double)fg_hist_bucket_high(b)) / 2;
			return mid < (double)h->min ? (double)h->min : mid > (double)h->max ? (double)h->max : mid;
		}
	}
	return (double)h->max;
}

static inline double fg_hist_mean(const struct fg_hist *h)
{
	return h->count ? (double)h->sum / (double)h->count : 0;
}

#endif
