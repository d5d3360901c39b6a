/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for bench/histogram.h: bucket bounds tile the value range, every
 * quantile is within 1% of the exact one over values from 0 to 2^40, merging
 * equals adding everything to one histogram. */
#include <math.h>
#include <stdlib.h>

#include "histogram.h"
#include "test.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The exact nearest-rank quantile, as fg_hist_quantile ranks. */
static uint64_t exact_quantile(const uint64_t *sorted, size_t n, double q)
{
	if (q >= 1)
		return sorted[n - 1];
	return sorted[(size_t)(q * (double)(n - 1))];
}

TEST(buckets_tile_the_range)
{
	/* Consecutive buckets are adjacent, and each is at most 1/128 of its low. */
	for (unsigned b = 0; b + 1 < FG_HIST_BUCKETS; b++) {
		CHECK_EQ(fg_hist_bucket_high(b) + 1, fg_hist_bucket_low(b + 1));
		CHECK(fg_hist_bucket_high(b) >= fg_hist_bucket_low(b));
		if (b >= FG_HIST_SUB)
			CHECK((fg_hist_bucket_high(b) - fg_hist_bucket_low(b) + 1) * FG_HIST_SUB <= fg_hist_bucket_low(b));
	}
	/* A value lands in the bucket whose bounds hold it. */
	uint64_t probes[] = { 0, 1, 127, 128, 129, 255, 256, 1000, 65535, 65536, 999999, (1ull << 40) - 1 };
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		unsigned b = fg_hist_bucket(probes[i]);
		CHECK(fg_hist_bucket_low(b) <= probes[i] && probes[i] <= fg_hist_bucket_high(b));
	}
	CHECK_EQ(fg_hist_bucket(1ull << 40), FG_HIST_BUCKETS - 1);
	CHECK_EQ(fg_hist_bucket(UINT64_MAX), FG_HIST_BUCKETS - 1);
}

TEST(quantiles_within_one_percent)
{
	/* Log-uniform values over [1, 2^40): every decade and bucket position. */
	enum { N = 200000 };
	uint64_t *v = malloc(N * sizeof(*v));
	static struct fg_hist h;
	fg_hist_reset(&h);
	unsigned seed = 12345;
	long double sum = 0;
	for (size_t i = 0; i < N; i++) {
		double e = 40.0 * rand_r(&seed) / ((double)RAND_MAX + 1);
		v[i] = (uint64_t)pow(2, e);
		fg_hist_add(&h, v[i]);
		sum += v[i];
	}
	qsort(v, N, sizeof(*v), cmp_u64);
	double worst = 0;
	for (double q = 0; q <= 1.0; q += 0.0005) {
		double want = (double)exact_quantile(v, N, q), got = fg_hist_quantile(&h, q);
		double err = want > 0 ? fabs(got - want) / want : fabs(got);
		if (err > worst)
			worst = err;
	}
	printf("  worst relative quantile error %.4f%%\n", worst * 100);
	CHECK(worst <= 0.01);
	CHECK(worst > 0); /* the buckets are not exact above 128: the check can fail */
	CHECK_EQ(h.count, N);
	CHECK_EQ(h.min, v[0]);
	CHECK_EQ(h.max, v[N - 1]);
	CHECK(fabs(fg_hist_mean(&h) - (double)(sum / N)) <= 1e-9 * (double)(sum / N));
	CHECK(fg_hist_quantile(&h, 1.0) == (double)v[N - 1]);
	CHECK(fg_hist_quantile(&h, 0.0) == (double)v[0]);
	free(v);
}

TEST(small_values_are_exact)
{
	static struct fg_hist h;
	fg_hist_reset(&h);
	for (uint64_t x = 0; x < 100; x++)
		fg_hist_add(&h, x);
	CHECK(fg_hist_quantile(&h, 0.5) == 49);
	CHECK(fg_hist_quantile(&h, 0.9) == 89);
	CHECK(fg_hist_quantile(&h, 0.99) == 98);
	static struct fg_hist empty;
	fg_hist_reset(&empty);
	CHECK(fg_hist_quantile(&empty, 0.5) == 0 && fg_hist_mean(&empty) == 0);
}

TEST(merge_equals_one_histogram)
{
	static struct fg_hist a, b, all;
	fg_hist_reset(&a);
	fg_hist_reset(&b);
	fg_hist_reset(&all);
	unsigned seed = 7;
	for (int i = 0; i < 50000; i++) {
		uint64_t x = (uint64_t)rand_r(&seed) % 5000000;
		fg_hist_add(i % 3 ? &a : &b, x);
		fg_hist_add(&all, x);
	}
	static struct fg_hist m;
	fg_hist_reset(&m);
	fg_hist_merge(&m, &a);
	fg_hist_merge(&m, &b);
	CHECK(!memcmp(&m, &all, sizeof(m)));
	/* Merging an empty histogram changes nothing (min stays). */
	static struct fg_hist empty;
	fg_hist_reset(&empty);
	fg_hist_merge(&m, &empty);
	CHECK(!memcmp(&m, &all, sizeof(m)));
}

TEST_MAIN
