/* SPDX-License-Identifier: Apache-2.0 */
/* histogram — log-linear latency histogram (16 sub-buckets per power of two,
 * so quantiles are within ~6%), constant memory, for the bench tools. */
#ifndef FG_HISTOGRAM_H
#define FG_HISTOGRAM_H

#include <stdint.h>

#define FG_HIST_SUB 16u
#define FG_HIST_BUCKETS (64u * FG_HIST_SUB)

struct fg_hist {
	uint64_t count;
	uint64_t buckets[FG_HIST_BUCKETS];
};

static inline unsigned fg_hist_bucket(uint64_t v)
{
	if (v < FG_HIST_SUB)
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v); /* v >= 16 so e >= 4 */
	unsigned sub = (unsigned)(v >> (e - 4)) & (FG_HIST_SUB - 1);
	return (e - 3) * FG_HIST_SUB + sub;
}

/* The smallest value a bucket holds. */
static inline uint64_t fg_hist_bucket_low(unsigned b)
{
	if (b < FG_HIST_SUB)
		return b;
	unsigned e = b / FG_HIST_SUB + 3, sub = b % FG_HIST_SUB;
	return (uint64_t)(FG_HIST_SUB + sub) << (e - 4);
}

static inline void fg_hist_add(struct fg_hist *h, uint64_t v)
{
	h->buckets[fg_hist_bucket(v)]++;
	h->count++;
}

/* Quantile q in [0,1]; 0 for an empty histogram. */
static inline uint64_t fg_hist_quantile(const struct fg_hist *h, double q)
{
	if (!h->count)
		return 0;
	uint64_t rank = (uint64_t)(q * (double)(h->count - 1)) + 1, seen = 0;
	for (unsigned b = 0; b < FG_HIST_BUCKETS; b++) {
		seen += h->buckets[b];
		if (seen >= rank)
			return fg_hist_bucket_low(b);
	}
	return 0;
}

#endif
