/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the incremental max-min fair share (common/fq/fairshare.c)
 * against direct water-filling. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "fairshare.h"
#include "hbitmap.h"
#include "test.h"

/* Reference: sort-free bisection on the level. */
static double reference_level(const uint64_t *d, int n, double c)
{
	double total = 0, maxd = 0;
	int nz = 0;
	for (int i = 0; i < n; i++) {
		total += (double)d[i];
		if (d[i]) nz++;
		if (d[i] > maxd) maxd = (double)d[i];
	}
	if (!nz) return 0;
	if (total <= c) return maxd;
	double lo = 0, hi = maxd;
	for (int it = 0; it < 200; it++) {
		double mid = (lo + hi) / 2, s = 0;
		for (int i = 0; i < n; i++) s += fmin((double)d[i], mid);
		if (s > c) hi = mid; else lo = mid;
	}
	return lo;
}

TEST(matches_water_filling)
{
	enum { Q = 300, C = 100 };
	struct fg_fairshare f;
	CHECK_EQ(fg_fairshare_init(&f, C), 0);
	static uint64_t d[Q];
	unsigned seed = 5;
	for (int step = 0; step < 20000; step++) {
		int i = rand_r(&seed) % Q;
		uint64_t nd = rand_r(&seed) % 4 == 0 ? 0 : (uint64_t)(rand_r(&seed) % (step % 3 ? 8 : 150));
		if (nd > C) nd = C;
		fg_fairshare_update(&f, d[i], nd);
		d[i] = nd;
		if (step % 11 == 0) {
			double want = reference_level(d, Q, C);
			double got = (double)fg_fairshare_level(&f, C) / 4294967296.0;
			if (fabs(got - want) > 1e-6 * (1 + want)) {
				fprintf(stderr, "  step %d: level %.9f want %.9f\n", step, got, want);
				CHECK(0);
				break;
			}
		}
	}
	fg_fairshare_fini(&f);
}

TEST(simple_cases)
{
	struct fg_fairshare f;
	fg_fairshare_init(&f, 10);
	CHECK_EQ(fg_fairshare_level(&f, 10), 0);
	fg_fairshare_update(&f, 0, 2);
	fg_fairshare_update(&f, 0, 1);
	CHECK_EQ(fg_fairshare_level(&f, 10) >> 32, 2);          /* all fit: the largest demand */
	fg_fairshare_update(&f, 0, 10);                          /* demands 2, 1, 10 over C = 3 */
	uint64_t lvl = fg_fairshare_level(&f, 3);
	CHECK_EQ(lvl, 1ull << 32);                               /* 1 + 1 + 1 */
	lvl = fg_fairshare_level(&f, 6);                         /* 2 + 1 + 3 */
	CHECK_EQ(lvl, 3ull << 32);
	lvl = fg_fairshare_level(&f, 4);                         /* 1 + 1.5 + 1.5 */
	CHECK_EQ(lvl, 3ull << 31);
	fg_fairshare_fini(&f);
}

/* The tree of bitmaps against a plain array, over sizes that need 1 to 3
 * levels (and sit just off the level boundaries). */
TEST(hbitmap_matches_naive_set)
{
	static const uint32_t sizes[] = { 1, 63, 64, 65, 4095, 4096, 4097, 70000 };
	unsigned seed = 11;
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		uint32_t n = sizes[k];
		struct fg_hbitmap b;
		CHECK_EQ(fg_hbitmap_init(&b, n), 0);
		uint8_t *naive = calloc(n, 1);
		CHECK_EQ(fg_hbitmap_max(&b), FG_HBITMAP_NONE);
		for (int step = 0; step < 20000; step++) {
			/* mostly near the top, so that the maximum moves often */
			uint32_t i = rand_r(&seed) % 2 ? n - 1 - (uint32_t)rand_r(&seed) % (n < 100 ? n : 100)
						      : (uint32_t)rand_r(&seed) % n;
			if (naive[i]) {
				fg_hbitmap_clear(&b, i);
				naive[i] = 0;
			} else {
				fg_hbitmap_set(&b, i);
				naive[i] = 1;
			}
			uint32_t want = FG_HBITMAP_NONE;
			for (uint32_t j = n; j-- > 0;)
				if (naive[j]) {
					want = j;
					break;
				}
			if (fg_hbitmap_max(&b) != want || fg_hbitmap_has(&b, i) != naive[i]) {
				fprintf(stderr, "  n %u step %d: max %u want %u\n", n, step, fg_hbitmap_max(&b), want);
				CHECK(0);
				break;
			}
			/* next and prev of a random position (and of its neighbours) */
			uint32_t at = (uint32_t)rand_r(&seed) % n, nx = FG_HBITMAP_NONE, pv = FG_HBITMAP_NONE;
			for (uint32_t j = at; j < n; j++)
				if (naive[j]) {
					nx = j;
					break;
				}
			for (uint32_t j = at + 1; j-- > 0;)
				if (naive[j]) {
					pv = j;
					break;
				}
			if (fg_hbitmap_next(&b, at) != nx || fg_hbitmap_prev(&b, at) != pv ||
			    fg_hbitmap_next(&b, n) != FG_HBITMAP_NONE || fg_hbitmap_prev(&b, n + 5) != want) {
				fprintf(stderr, "  n %u step %d at %u: next %u want %u, prev %u want %u\n", n, step, at,
					fg_hbitmap_next(&b, at), nx, fg_hbitmap_prev(&b, at), pv);
				CHECK(0);
				break;
			}
		}
		free(naive);
		fg_hbitmap_fini(&b);
	}
	struct fg_hbitmap empty;
	CHECK_EQ(fg_hbitmap_init(&empty, 0), -EINVAL);
}

/* A counts-only share answers total and max exactly like the full one. */
TEST(counts_only_matches_full)
{
	enum { Q = 200, C = 5000 };
	struct fg_fairshare full, counts;
	CHECK_EQ(fg_fairshare_init(&full, C), 0);
	CHECK_EQ(fg_fairshare_init_counts(&counts, C), 0);
	static uint64_t d[Q];
	unsigned seed = 9;
	for (int step = 0; step < 50000; step++) {
		int i = rand_r(&seed) % Q;
		uint64_t nd = rand_r(&seed) % 5 == 0 ? 0 : (uint64_t)(rand_r(&seed) % (step % 2 ? 20 : 2 * C));
		fg_fairshare_update(&full, d[i], nd);
		fg_fairshare_update(&counts, d[i], nd);
		d[i] = nd;
		if (fg_fairshare_max(&full) != fg_fairshare_max(&counts) || full.total != counts.total ||
		    full.n != counts.n) {
			fprintf(stderr, "  step %d: max %" PRIu64 " vs %" PRIu64 "\n", step, fg_fairshare_max(&full),
				fg_fairshare_max(&counts));
			CHECK(0);
			break;
		}
	}
	fg_fairshare_fini(&full);
	fg_fairshare_fini(&counts);
}

TEST_MAIN
