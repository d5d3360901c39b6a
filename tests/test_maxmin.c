/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the bounded weighted max-min allocator (common/seats/maxmin.c):
 * worked examples as a table, Kubernetes' error cases and messages, the
 * property test of Kubernetes' TestConcAlloc (conc_alloc_test.go: its three
 * generator styles and zero targets), a bisection oracle, huge N, rounding. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "fairshare.h"
#include "maxmin.h"
#include "test.h"

#define MAX_ITEMS 9
#define INF INFINITY

/* Kubernetes' fpSlack: the relative error its test tolerates. */
#define FP_SLACK 1e-10

static double rel_diff(double a, double b)
{
	double den = fmax(fabs(a), fabs(b));
	return den == 0 ? 0 : fabs(a - b) / den;
}

/* Worked examples; each checked by hand (sources in the comments). */
static const struct {
	const char *name;
	unsigned flags;
	double total;
	unsigned n;
	struct fg_maxmin_item items[MAX_ITEMS];
	double alloc[MAX_ITEMS];
	double prop;
} cases[] = {
	/* docs/fair-sharing-facts.md §4, the seed: capacity 9, weights 2 and 4,
	 * requests 5 and 10 -> deserved 3 and 6. */
	{ "volcano seed", 0, 9, 2, { { 2, 0, 5 }, { 4, 0, 10 } }, { 3, 6 }, 1.5 },
	/* docs/fair-sharing-facts.md §4, water-filling: 12 CPU, weights 1 1 2,
	 * requests 2 20 20 -> 2, 3.33, 6.67. */
	{ "volcano water-filling",
	  0,
	  12,
	  3,
	  { { 1, 0, 2 }, { 1, 0, 20 }, { 2, 0, 20 } },
	  { 2, 10.0 / 3, 20.0 / 3 },
	  10.0 / 3 },
	{ "no bound matters", FG_MAXMIN_KUBE, 10, 2, { { 1, 0, INF }, { 4, 0, INF } }, { 2, 8 }, 2 },
	{ "all at lower (no room)", FG_MAXMIN_KUBE, 6, 3, { { 5, 1, 9 }, { 5, 2, 9 }, { 5, 3, 9 } }, { 1, 2, 3 }, 0.2 },
	{ "all at upper (no room)", 0, 6, 3, { { 1, 0, 1 }, { 1, 0, 2 }, { 1, 0, 3 } }, { 1, 2, 3 }, 3 },
	{ "a lower bound binds", 0, 10, 2, { { 1, 6, INF }, { 1, 0, INF } }, { 6, 4 }, 4 },
	{ "an upper bound binds", 0, 10, 3, { { 1, 0, 1 }, { 1, 0, INF }, { 1, 0, INF } }, { 1, 4.5, 4.5 }, 4.5 },
	/* docs/apf-facts.md §4.7 TestBorrowing, lendable-limited: ServerCL 24, two
	 * levels nominal 12 (lend 50%/33%, borrow 67%/50%) and catch-all 1;
	 * steady demands 24 and 6 -> 16 and 8 (flow 0 runs ~16). */
	{ "TestBorrowing lendable-limited",
	  FG_MAXMIN_KUBE,
	  25,
	  3,
	  { { 24, 12, 20 }, { 8, 8, 18 }, { 1, 1, 1 } },
	  { 16, 8, 1 },
	  2.0 / 3 },
	/* Borrowing-limited (lend 50%/67%, borrow 33%/50%): 16 and 8. */
	{ "TestBorrowing borrowing-limited",
	  FG_MAXMIN_KUBE,
	  25,
	  3,
	  { { 24, 12, 16 }, { 6, 6, 18 }, { 1, 1, 1 } },
	  { 16, 8, 1 },
	  4.0 / 3 },
	/* A zero target is raised to MinTarget: it gets a sliver. */
	{ "zero target",
	  FG_MAXMIN_KUBE,
	  10,
	  2,
	  { { 0, 0, 5 }, { 10, 0, INF } },
	  { 0.001 * 10 / 10.001, 10 * 10 / 10.001 },
	  10 / 10.001 },
	{ "zero total", FG_MAXMIN_KUBE, 0, 2, { { 3, 0, 5 }, { 1, 0, 5 } }, { 0, 0 }, 0 },
	{ "no items, zero total", 0, 0, 0, { { 0 } }, { 0 }, 0 },
	/* FG_MAXMIN_SLACK: more than everyone asks; each gets its request. */
	{ "slack", FG_MAXMIN_SLACK, 20, 2, { { 1, 0, 5 }, { 1, 0, 10 } }, { 5, 10 }, 10 },
	/* Both bounds of one item at the same proportion as another's lower. */
	{ "ties", 0, 7, 3, { { 1, 2, 2 }, { 1, 2, INF }, { 2, 0, INF } }, { 2, 2, 3 }, 1.5 },
};

TEST(worked_examples)
{
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		double alloc[MAX_ITEMS], prop = -1;
		struct fg_maxmin_error err;
		int rc =
			fg_maxmin_solve(cases[k].total, cases[k].items, cases[k].n, cases[k].flags, alloc, &prop, &err);
		if (rc) {
			fprintf(stderr, "  %s: rc %d\n", cases[k].name, rc);
			CHECK(0);
			continue;
		}
		bool ok = rel_diff(prop, cases[k].prop) < 1e-9;
		for (unsigned i = 0; i < cases[k].n; i++)
			ok = ok && rel_diff(alloc[i], cases[k].alloc[i]) < 1e-9;
		if (!ok) {
			fprintf(stderr, "  %s: prop %.12g (want %.12g)", cases[k].name, prop, cases[k].prop);
			for (unsigned i = 0; i < cases[k].n; i++)
				fprintf(stderr, " %.12g/%.12g", alloc[i], cases[k].alloc[i]);
			fprintf(stderr, "\n");
		}
		CHECK(ok);
	}
}

/* Kubernetes' errors (conc_alloc.go) and fairgate's additions. */
static const struct {
	unsigned flags;
	double total;
	unsigned n;
	struct fg_maxmin_item items[3];
	int rc;
	enum fg_maxmin_reason reason;
	const char *msg;
} errors_table[] = {
	{ FG_MAXMIN_KUBE, -1, 1, { { 1, 0, 1 } }, -EINVAL, FG_MAXMIN_NEGATIVE_SUM, "negative sums are not supported" },
	{ FG_MAXMIN_KUBE,
	  5,
	  2,
	  { { 1, 0, 9 }, { 1, -1, 9 } },
	  -EINVAL,
	  FG_MAXMIN_NEGATIVE_LOWER,
	  "lower bound 1 is -1 but negative lower bounds are not allowed" },
	{ FG_MAXMIN_KUBE,
	  5,
	  1,
	  { { 1, 2, 9 } },
	  -EINVAL,
	  FG_MAXMIN_TARGET_BELOW_LOWER,
	  "target 0 is 1, which is below its lower bound of 2" },
	{ 0,
	  5,
	  1,
	  { { 3, 2, 1 } },
	  -EINVAL,
	  FG_MAXMIN_UPPER_BELOW_LOWER,
	  "upper bound 0 is 1 but should not be less than the lower bound 2" },
	{ FG_MAXMIN_KUBE,
	  5,
	  2,
	  { { 3, 3, 9 }, { 3, 3, 9 } },
	  -ERANGE,
	  FG_MAXMIN_LOWERS_ABOVE_SUM,
	  "lower bounds sum to 6, which is higher than the required sum of 5" },
	{ FG_MAXMIN_KUBE,
	  5,
	  2,
	  { { 1, 0, 1 }, { 1, 0, 1 } },
	  -ERANGE,
	  FG_MAXMIN_UPPERS_BELOW_SUM,
	  "upper bounds sum to 2, which is lower than the required sum of 5" },
	{ 0,
	  5,
	  0,
	  { { 0 } },
	  -ERANGE,
	  FG_MAXMIN_UPPERS_BELOW_SUM,
	  "upper bounds sum to 0, which is lower than the required sum of 5" },
	/* Zero weights: refused outside Kubernetes' mode, which raises them. */
	{ 0,
	  5,
	  2,
	  { { 1, 0, 9 }, { 0, 0, 9 } },
	  -EINVAL,
	  FG_MAXMIN_BAD_WEIGHT,
	  "weight 1 is 0 but weights must be positive and finite" },
	{ 0,
	  5,
	  1,
	  { { NAN, 0, 9 } },
	  -EINVAL,
	  FG_MAXMIN_BAD_WEIGHT,
	  "weight 0 is nan but weights must be positive and finite" },
	{ 0, NAN, 1, { { 1, 0, 9 } }, -EINVAL, FG_MAXMIN_NEGATIVE_SUM, "negative sums are not supported" },
};

TEST(errors_as_kubernetes_reports_them)
{
	for (size_t k = 0; k < sizeof(errors_table) / sizeof(errors_table[0]); k++) {
		double alloc[3] = { 42, 42, 42 };
		struct fg_maxmin_error err;
		char buf[160];
		int rc = fg_maxmin_solve(errors_table[k].total, errors_table[k].items, errors_table[k].n,
					 errors_table[k].flags, alloc, NULL, &err);
		CHECK_EQ(rc, errors_table[k].rc);
		CHECK_EQ(err.reason, errors_table[k].reason);
		CHECK_STR(fg_maxmin_strerror(&err, buf, sizeof(buf)), errors_table[k].msg);
		CHECK(alloc[0] == 42 && alloc[1] == 42); /* an error changes nothing */
	}
	/* Kubernetes' mode takes a zero target (raised to MinTarget). */
	struct fg_maxmin_item zero[] = { { 0, 0, 9 } };
	double a;
	CHECK_EQ(fg_maxmin_solve(5, zero, 1, FG_MAXMIN_KUBE, &a, NULL, NULL), 0);
	CHECK(fabs(a - 5) < 1e-12);
}

/* splitmix64: a fixed, portable stream so failures reproduce. */
static uint64_t rng_state = 1234567890;
static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
static double rng_float(void) { return (double)(rng_next() >> 11) / 9007199254740992.0; }
static unsigned rng_int(unsigned n) { return (unsigned)(rng_next() % n); }

/* n parts of x that sum to x (Kubernetes' partition64). */
static void partition(unsigned n, double x, double *part)
{
	double divs[MAX_ITEMS];
	for (unsigned i = 0; i + 1 < n; i++) {
		double d = rng_float();
		unsigned j = i;
		for (; j > 0 && divs[j - 1] > d; j--)
			divs[j] = divs[j - 1];
		divs[j] = d;
	}
	double last = 0;
	for (unsigned i = 0; i + 1 < n; i++) {
		part[i] = (divs[i] - last) * x;
		last = divs[i];
	}
	part[n - 1] = (1 - last) * x;
}

/*
 * TestConcAlloc's generator and checks, 10 000 problems: the sum matches,
 * an item whose fair share is at or below its lower bound sits on it, at or
 * above its upper bound on that, anything else is exactly proportional.
 */
TEST(kubernetes_random_problems)
{
	static const unsigned lens[] = { 0, 1, 2, 3, 4, 6 };
	unsigned styles[3] = { 0 };
	for (int iter = 0; iter < 10000; iter++) {
		struct fg_maxmin_item it[MAX_ITEMS + 3];
		unsigned n = lens[rng_int(6)];
		double low_sum = 0, high_sum = 0, total = 0, part[MAX_ITEMS];
		unsigned style = n ? rng_int(20) : 3;
		if (style == 0) { /* bound from below */
			total = rng_int(n * 3);
			partition(n, total, part);
			for (unsigned j = 0; j < n; j++)
				it[j] = (struct fg_maxmin_item){ part[j] + 2 * rng_float(), part[j],
								 part[j] + 3 * rng_float() };
		} else if (style == 1) { /* bound from above */
			total = rng_int(n * 3) + 1;
			partition(n, total, part);
			for (unsigned j = 0; j < n; j++) {
				double lo = part[j] * fmax(0, 1.25 * rng_float() - 1);
				it[j] = (struct fg_maxmin_item){ lo + rng_float(), lo, part[j] };
			}
		} else if (n) { /* not set by bounds */
			for (unsigned j = 0; j < n; j++) {
				double x = fmax(0, rng_float() * 5 - 1);
				it[j] = (struct fg_maxmin_item){ x + 2 * rng_float(), x, x + 3 * rng_float() };
			}
		}
		styles[style > 2 ? 2 : style]++;
		for (unsigned j = 0; j < n; j++) {
			low_sum += it[j].lower;
			high_sum += it[j].upper;
		}
		if (style >= 2 && n)
			total = round(low_sum + (high_sum - low_sum) * rng_float());
		while (rng_float() < 0.25 && n < MAX_ITEMS + 3) { /* a class with a zero target */
			it[n] = (struct fg_maxmin_item){ 0, 0, rng_float() + 0.00001 };
			high_sum += it[n].upper;
			if (n > 1) {
				unsigned m = rng_int(n);
				struct fg_maxmin_item t = it[m];
				it[m] = it[n];
				it[n] = t;
			}
			n++;
		}
		double alloc[MAX_ITEMS + 3], prop;
		int rc = fg_maxmin_solve(total, it, n, FG_MAXMIN_KUBE, alloc, &prop, NULL);
		bool expect_err = low_sum - total > FP_SLACK || total - high_sum > FP_SLACK;
		if (expect_err) {
			CHECK(rc == -ERANGE);
			continue;
		}
		CHECK_EQ(rc, 0);
		if (rc)
			continue;
		double sum = 0;
		for (unsigned j = 0; j < n; j++)
			sum += alloc[j];
		CHECK(rel_diff(sum, total) <= FP_SLACK);
		for (unsigned j = 0; j < n; j++) {
			double share = prop * fmax(it[j].weight, FG_MAXMIN_MIN_TARGET);
			if (share <= it[j].lower)
				CHECK(alloc[j] == it[j].lower);
			else if (share >= it[j].upper)
				CHECK(alloc[j] == it[j].upper);
			else
				CHECK(rel_diff(share, alloc[j]) <= FP_SLACK);
		}
	}
	CHECK(styles[0] > 100 && styles[1] > 100 && styles[2] > 5000); /* every style was drawn */
}

/* The proportion by bisection: an oracle that shares no code with the sweep. */
static double bisect_prop(double total, const struct fg_maxmin_item *it, size_t n)
{
	double lo = 0, hi = 1;
	for (;;) {
		double s = 0;
		for (size_t i = 0; i < n; i++)
			s += fmin(fmax(it[i].weight * hi, it[i].lower), it[i].upper);
		if (s >= total || hi > 1e30)
			break;
		hi *= 2;
	}
	for (int k = 0; k < 200; k++) {
		double mid = (lo + hi) / 2, s = 0;
		for (size_t i = 0; i < n; i++)
			s += fmin(fmax(it[i].weight * mid, it[i].lower), it[i].upper);
		if (s >= total)
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

/*
 * General weights and bounds: within bounds, the sum is the total, and
 * max-min optimality: every item that could still grow (below its upper
 * bound) has a weighted level alloc/w at least that of every item that
 * could give (above its lower bound) — so no item below its fair share can
 * gain without taking from one at or below it.  Same answer as bisection.
 */
TEST(random_weighted_properties)
{
	for (int iter = 0; iter < 5000; iter++) {
		struct fg_maxmin_item it[MAX_ITEMS];
		unsigned n = 1 + rng_int(MAX_ITEMS);
		double low_sum = 0, high_sum = 0;
		for (unsigned j = 0; j < n; j++) {
			double lo = rng_int(3) ? 0 : 10 * rng_float();
			double hi = rng_int(4) ? lo + 20 * rng_float() : INF;
			it[j] = (struct fg_maxmin_item){ 0.1 + 5 * rng_float(), lo, hi };
			low_sum += lo;
			high_sum += hi;
		}
		double top = isinf(high_sum) ? low_sum + 100 : high_sum;
		double total = low_sum + (top - low_sum) * rng_float();
		double alloc[MAX_ITEMS], prop;
		CHECK_EQ(fg_maxmin_solve(total, it, n, 0, alloc, &prop, NULL), 0);
		double sum = 0, can_grow = INF, can_give = 0;
		for (unsigned j = 0; j < n; j++) {
			CHECK(alloc[j] >= it[j].lower && alloc[j] <= it[j].upper);
			sum += alloc[j];
			if (alloc[j] < it[j].upper)
				can_grow = fmin(can_grow, alloc[j] / it[j].weight);
			if (alloc[j] > it[j].lower)
				can_give = fmax(can_give, alloc[j] / it[j].weight);
		}
		CHECK(rel_diff(sum, total) < 1e-9);
		CHECK(can_grow >= can_give * (1 - 1e-9));
		double p = bisect_prop(total, it, n);
		for (unsigned j = 0; j < n; j++) {
			double want = fmin(fmax(it[j].weight * p, it[j].lower), it[j].upper);
			CHECK(fabs(want - alloc[j]) < 1e-7 * fmax(1, total));
		}
	}
}

/* Every item bounded on both sides, and every demand below the equal share. */
TEST(all_bounded_and_all_satisfied)
{
	struct fg_maxmin_item it[4] = { { 1, 1, 2 }, { 1, 1, 2 }, { 3, 0, 1 }, { 1, 2, 3 } };
	double a[4], prop;
	CHECK_EQ(fg_maxmin_solve(6, it, 4, 0, a, &prop, NULL), 0);
	CHECK(fabs(a[0] + a[1] + a[2] + a[3] - 6) < 1e-12);
	CHECK(a[2] == 1); /* its weight would give it most; its upper bound stops it */
	/* Demands 1, 2, 3 of 100 seats with FG_MAXMIN_SLACK: each its demand. */
	struct fg_maxmin_item d[3] = { { 1, 0, 1 }, { 1, 0, 2 }, { 1, 0, 3 } };
	CHECK_EQ(fg_maxmin_solve(100, d, 3, FG_MAXMIN_SLACK, a, &prop, NULL), 0);
	CHECK(a[0] == 1 && a[1] == 2 && a[2] == 3);
	CHECK_EQ(fg_maxmin_solve(100, d, 3, 0, a, &prop, NULL), -ERANGE);
}

/* 200 000 items (400 000 breakpoints): still exact against bisection. */
TEST(huge_n)
{
	enum { N = 200000 };
	struct fg_maxmin_item *it = malloc(sizeof(*it) * N);
	double *a = malloc(sizeof(*a) * N);
	CHECK(it && a);
	if (!it || !a) {
		free(it);
		free(a);
		return;
	}
	double low_sum = 0;
	for (size_t i = 0; i < N; i++) {
		double lo = rng_int(2) ? 0 : rng_int(5);
		it[i] = (struct fg_maxmin_item){ 1 + rng_int(7), lo, lo + rng_int(50) };
		low_sum += lo;
	}
	double total = low_sum + 1000000, prop, sum = 0;
	CHECK_EQ(fg_maxmin_solve(total, it, N, 0, a, &prop, NULL), 0);
	for (size_t i = 0; i < N; i++)
		sum += a[i];
	CHECK(rel_diff(sum, total) < 1e-9);
	CHECK(rel_diff(prop, bisect_prop(total, it, N)) < 1e-9);
	free(it);
	free(a);
}

TEST(rounding_to_whole_units)
{
	double a[3] = { 2, 10.0 / 3, 20.0 / 3 };
	uint64_t out[3];
	CHECK_EQ(fg_maxmin_round(a, 3, 12, out), 0);
	CHECK(out[0] == 2 && out[1] == 3 && out[2] == 7);
	/* A hair below a whole number is that number. */
	double b[2] = { 2.9999999999, 3.0000000001 };
	CHECK_EQ(fg_maxmin_round(b, 2, 6, out), 0);
	CHECK(out[0] == 3 && out[1] == 3);
	CHECK_EQ(fg_maxmin_round(a, 3, 14, out), -ERANGE);
	/* Random: each output is the floor or the ceiling, the sum exact. */
	for (int iter = 0; iter < 2000; iter++) {
		struct fg_maxmin_item it[MAX_ITEMS];
		double al[MAX_ITEMS];
		uint64_t o[MAX_ITEMS];
		unsigned n = 1 + rng_int(MAX_ITEMS);
		for (unsigned j = 0; j < n; j++)
			it[j] = (struct fg_maxmin_item){ 1 + rng_int(4), rng_int(3), 3 + rng_int(20) };
		uint64_t lo = 0, hi = 0;
		for (unsigned j = 0; j < n; j++) {
			lo += (uint64_t)it[j].lower;
			hi += (uint64_t)it[j].upper;
		}
		uint64_t total = lo + rng_int((unsigned)(hi - lo + 1));
		CHECK_EQ(fg_maxmin_solve((double)total, it, n, 0, al, NULL, NULL), 0);
		CHECK_EQ(fg_maxmin_round(al, n, total, o), 0);
		uint64_t s = 0;
		for (unsigned j = 0; j < n; j++) {
			s += o[j];
			CHECK((double)o[j] >= floor(al[j] + 1e-7) && (double)o[j] <= ceil(al[j] - 1e-7));
			CHECK((double)o[j] >= it[j].lower && (double)o[j] <= it[j].upper); /* integer bounds hold */
		}
		CHECK_EQ(s, total);
	}
}

/*
 * The per-worker seat split (common/seats/seatshare.c) is the unweighted case:
 * weights 1, upper = min(demand, C), FG_MAXMIN_SLACK.  Its water level is
 * the fair proportion; checked against the incremental one of
 * common/fq/fairshare (Fenwick trees), which shares no code with the sweep.
 */
TEST(unweighted_matches_fairshare_level)
{
	enum { Q = 64, C = 40 };
	struct fg_fairshare f;
	CHECK_EQ(fg_fairshare_init(&f, C), 0);
	uint64_t d[Q] = { 0 };
	for (int step = 0; step < 3000; step++) {
		unsigned q = rng_int(Q);
		uint64_t nd = rng_int(4) ? rng_int(step % 2 ? 3 : 30) : 0;
		fg_fairshare_update(&f, d[q], nd);
		d[q] = nd;
		struct fg_maxmin_item it[Q];
		size_t n = 0;
		for (unsigned i = 0; i < Q; i++)
			if (d[i]) /* idle queues take no part: fewer breakpoints */
				it[n++] = (struct fg_maxmin_item){ 1, 0, (double)d[i] };
		double a[Q], prop;
		CHECK_EQ(fg_maxmin_solve(C, it, n, FG_MAXMIN_SLACK, a, &prop, NULL), 0);
		double want = (double)fg_fairshare_level(&f, C) / 4294967296.0;
		if (fabs(prop - want) > 1e-6 * (1 + want)) {
			fprintf(stderr, "  step %d: level %.9f, fairshare %.9f\n", step, prop, want);
			CHECK(0);
			break;
		}
	}
	fg_fairshare_fini(&f);
}

TEST_MAIN
