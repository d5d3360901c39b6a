/* Unit tests of the incremental max-min fair share (common/fairshare.c)
 * against direct water-filling. */
#include <math.h>
#include <stdlib.h>

#include "fairshare.h"
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

TEST_MAIN
