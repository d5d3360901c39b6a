/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the weighted max-min fair share (common/fq/wfairshare.c)
 * against direct weighted water-filling. */
#include <math.h>
#include <stdlib.h>

#include "test.h"
#include "wfairshare.h"

#define FIX 4294967296.0 /* FG_FAIRSHARE_FRAC_BITS */

/* Reference: bisection on lambda (seats per unit of weight). */
static double reference_rate(const uint64_t *d, const uint32_t *w, int n, double c)
{
	double total = 0, max_ratio = 0;
	int nz = 0;
	for (int i = 0; i < n; i++) {
		if (!d[i])
			continue;
		nz++;
		total += (double)d[i];
		double r = (double)d[i] * 1000.0 / w[i];
		if (r > max_ratio)
			max_ratio = r;
	}
	if (!nz)
		return 0;
	if (total <= c)
		return max_ratio;
	double lo = 0, hi = max_ratio;
	for (int it = 0; it < 200; it++) {
		double mid = (lo + hi) / 2, s = 0;
		for (int i = 0; i < n; i++)
			s += fmin((double)d[i], w[i] / 1000.0 * mid);
		if (s > c)
			hi = mid;
		else
			lo = mid;
	}
	return lo;
}

/* What the allocation at rate `lambda` hands out. */
static double allocated(const uint64_t *d, const uint32_t *w, int n, double lambda)
{
	double s = 0;
	for (int i = 0; i < n; i++)
		s += fmin((double)d[i], w[i] / 1000.0 * lambda);
	return s;
}

TEST(matches_weighted_water_filling)
{
	enum { Q = 300 };
	const double C = 100;
	static const uint32_t weights[] = { 1, 250, 1000, 1000, 2000, 4000, 33333, 1000000 };
	struct fg_wfairshare f;
	CHECK_EQ(fg_wfairshare_init(&f, true), 0);
	static uint64_t d[Q];
	static uint32_t w[Q];
	for (int i = 0; i < Q; i++)
		w[i] = 1000;
	unsigned seed = 7;
	int checked = 0;
	for (int step = 0; step < 30000; step++) {
		int i = rand_r(&seed) % Q;
		uint64_t nd = rand_r(&seed) % 4 == 0 ? 0 : (uint64_t)(rand_r(&seed) % (step % 3 ? 8 : 150));
		uint32_t nw = weights[rand_r(&seed) % (sizeof(weights) / sizeof(weights[0]))];
		fg_wfairshare_update(&f, d[i], w[i], nd, nw);
		d[i] = nd;
		w[i] = nw;
		if (step % 13)
			continue;
		double want = reference_rate(d, w, Q, C);
		double got = (double)fg_wfairshare_rate(&f, (uint64_t)C) / FIX;
		/* The rate within one bucket (1/128) of the truth, and what it
		 * hands out within the same of C, never far above it. */
		double handed = allocated(d, w, Q, got), total = allocated(d, w, Q, 1e300);
		double goal = total < C ? total : C;
		if (fabs(got - want) > want / 128 + 1e-9 || fabs(handed - goal) > goal / 128 + 1e-9) {
			fprintf(stderr, "  step %d: rate %.9f want %.9f; hands out %.6f of %.6f\n", step, got, want, handed,
				goal);
			CHECK(0);
			break;
		}
		checked++;
	}
	CHECK(checked > 2000);
	fg_wfairshare_fini(&f);
}

/* Volcano's proportion example (seed 004): 9 seats, weights 2 and 4 asking
 * 5 and 10 -> 3 and 6 (lambda 1.5). */
TEST(volcano_example)
{
	struct fg_wfairshare f;
	CHECK_EQ(fg_wfairshare_init(&f, true), 0);
	fg_wfairshare_update(&f, 0, 0, 5, 2000);
	fg_wfairshare_update(&f, 0, 0, 10, 4000);
	double lambda = (double)fg_wfairshare_rate(&f, 9) / FIX;
	CHECK(fabs(lambda - 1.5) <= 1.5 / 128);
	CHECK(fabs(fmin(5, 2 * lambda) - 3) < 0.03 && fabs(fmin(10, 4 * lambda) - 6) < 0.05);
	/* Weights 1:2:4, all saturating 14 seats: 2, 4 and 8. */
	struct fg_wfairshare g;
	CHECK_EQ(fg_wfairshare_init(&g, true), 0);
	fg_wfairshare_update(&g, 0, 0, 14, 1000);
	fg_wfairshare_update(&g, 0, 0, 14, 2000);
	fg_wfairshare_update(&g, 0, 0, 14, 4000);
	CHECK(fabs((double)fg_wfairshare_rate(&g, 14) / FIX - 2.0) <= 2.0 / 128);
	/* A weighted flow asking less than its share gets what it asks; the
	 * rest goes to the other: weight 4 asking 2 of 10, weight 1 asking 10. */
	fg_wfairshare_update(&g, 14, 4000, 2, 4000);
	fg_wfairshare_update(&g, 14, 2000, 0, 2000);
	CHECK(fabs((double)fg_wfairshare_rate(&g, 10) / FIX - 8.0) <= 8.0 / 128);
	fg_wfairshare_fini(&f);
	fg_wfairshare_fini(&g);
}

TEST(max_rate_and_bounds)
{
	struct fg_wfairshare f;
	CHECK_EQ(fg_wfairshare_init(&f, false), 0);
	CHECK_EQ(fg_wfairshare_max_rate(&f), 0);
	fg_wfairshare_update(&f, 0, 0, 3, 500); /* 6 per unit of weight */
	fg_wfairshare_update(&f, 0, 0, 7, 2000);
	double m = (double)fg_wfairshare_max_rate(&f) / FIX;
	CHECK(m >= 6.0 && m <= 6.0 * (1 + 1.0 / 128));
	fg_wfairshare_update(&f, 3, 500, 0, 500);
	m = (double)fg_wfairshare_max_rate(&f) / FIX;
	CHECK(m >= 3.5 && m <= 3.5 * (1 + 1.0 / 128));
	/* Weight 0 counts as the smallest, demands and weights are clamped:
	 * nothing overflows at the extremes. */
	fg_wfairshare_update(&f, 0, 0, UINT64_MAX, 0);
	fg_wfairshare_update(&f, 0, 0, 1, UINT32_MAX);
	CHECK_EQ(fg_wfairshare_max_rate(&f), UINT64_MAX); /* saturated, not wrapped */
	fg_wfairshare_update(&f, UINT64_MAX, 0, 0, 0);
	fg_wfairshare_update(&f, 1, UINT32_MAX, 0, 0);
	fg_wfairshare_update(&f, 7, 2000, 0, 2000);
	CHECK_EQ(f.n, 0);
	CHECK_EQ(f.total, 0);
	CHECK_EQ(f.total_w, 0);
	CHECK_EQ(fg_wfairshare_max_rate(&f), 0);
	fg_wfairshare_fini(&f);

	struct fg_wfairshare g;
	CHECK_EQ(fg_wfairshare_init(&g, true), 0);
	fg_wfairshare_update(&g, 0, 0, FG_WFAIRSHARE_MAX_DEMAND, 1);
	fg_wfairshare_update(&g, 0, 0, 1, FG_WFAIRSHARE_MAX_WEIGHT);
	double r = (double)fg_wfairshare_rate(&g, 1000) / FIX;
	CHECK(r > 0 && isfinite(r));
	fg_wfairshare_fini(&g);
}

TEST_MAIN
