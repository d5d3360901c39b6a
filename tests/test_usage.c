/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the decayed per-flow usage (common/fq/usage.c), with Kueue's
 * admission-fair-sharing numbers (docs/fair-sharing-facts.md §1). */
#include <math.h>
#include <stdlib.h>

#include "test.h"
#include "usage.h"

#define SEC 1000000000ull
#define MIN (60 * SEC)

static bool near(double got, double want, double tol)
{
	bool ok = fabs(got - want) <= tol;
	if (!ok)
		fprintf(stderr, "  got %.9f want %.9f\n", got, want);
	return ok;
}

/* localqueue_controller_test.go: consumed 8, a 4-unit workload running,
 * 5 minutes: H = 5m -> 6, H = 10m -> 6.828427124.  Here the units are
 * seat-seconds per sampling interval (5m): 8 -> 2400, 4 seats -> 1200. */
TEST(kueue_decay_numbers)
{
	for (int k = 0; k < 2; k++) {
		struct fg_usage u;
		struct fg_usage_params p = { .half_life_ns = (k ? 10 : 5) * MIN, .sampling_ns = 5 * MIN,
					     .reset_ns = 100 * MIN };
		CHECK_EQ(fg_usage_init(&u, 16, &p, 0), 0);
		uint32_t f = fg_usage_join(&u, 42, 1000, 0);
		/* Usage 2400 seat-s: 8 seats held over one whole interval with A = 1. */
		u.flows[f].usage = 2400e6;
		fg_usage_start(&u, f, 4, 0, 0); /* guess 0: no penalty to subtract */
		CHECK(fg_usage_fold_due(&u, 5 * MIN) && !fg_usage_fold_due(&u, 5 * MIN - 1));
		fg_usage_fold(&u, 5 * MIN);
		CHECK(near(fg_usage_of(&u, f) / 300, k ? 6.828427124 : 6.0, 1e-6));
		fg_usage_fini(&u);
	}
}

/* An idle flow keeps half its usage after one half-life, sampled often. */
TEST(idle_usage_halves_per_half_life)
{
	struct fg_usage u;
	struct fg_usage_params p = { .half_life_ns = 10 * SEC, .sampling_ns = SEC, .reset_ns = 1000 * SEC };
	CHECK_EQ(fg_usage_init(&u, 4, &p, 0), 0);
	uint32_t f = fg_usage_join(&u, 1, 1000, 0);
	fg_usage_start(&u, f, 3, 0, 0);
	for (uint64_t t = 1; t <= 100; t++) /* 100 s at 3 seats: near 3 seat-s per interval */
		fg_usage_fold(&u, t * SEC);
	double full = fg_usage_of(&u, f);
	CHECK(near(full, 3 * (1 - exp2(-10)), 1e-9));
	fg_usage_stop(&u, f, 3, 100 * SEC);
	for (uint64_t t = 101; t <= 110; t++)
		fg_usage_fold(&u, t * SEC);
	CHECK(near(fg_usage_of(&u, f), full / 2, 1e-9));
	/* An uneven fold interval decays by the time that really passed. */
	fg_usage_fold(&u, 120 * SEC);
	CHECK(near(fg_usage_of(&u, f), full / 4, 1e-9));
	fg_usage_fini(&u);
}

/* The entry penalty: A_S * seats * guess at once, replaced at the fold. */
TEST(entry_penalty_then_measure)
{
	struct fg_usage u;
	struct fg_usage_params p = { .half_life_ns = 10 * SEC, .sampling_ns = SEC, .reset_ns = 100 * SEC };
	CHECK_EQ(fg_usage_init(&u, 4, &p, 0), 0);
	double a = 1 - exp2(-0.1); /* Kueue's example: (1 - 0.5^0.1) * 4 = 0.27 */
	CHECK(near(u.penalty_alpha, a, 1e-12));
	uint32_t f = fg_usage_join(&u, 1, 2000, 0), g = fg_usage_join(&u, 2, 1000, 0);
	uint32_t gen = u.flows[f].gen;
	fg_usage_start(&u, f, 4, SEC, 0);
	CHECK(u.flows[f].gen != gen);
	CHECK(near(fg_usage_of(&u, f), a * 4, 1e-12));
	CHECK_EQ(fg_usage_key(&u, f), (uint64_t)(a * 4e6 / 2)); /* weight 2 */
	CHECK(fg_usage_key(&u, g) == 0 && fg_usage_key(&u, g) < fg_usage_key(&u, f));
	fg_usage_stop(&u, f, 4, SEC / 2);
	fg_usage_fold(&u, SEC); /* held 2 seat-s over the interval: A * 2, no penalty */
	CHECK(near(fg_usage_of(&u, f), a * 2, 1e-12));
	fg_usage_fini(&u);
}

/* Forgotten after the reset period with nothing in flight; a full table
 * sends new flows to the overflow entry; slots are reused. */
TEST(forget_and_overflow)
{
	struct fg_usage u;
	struct fg_usage_params p = { .half_life_ns = SEC, .sampling_ns = SEC, .reset_ns = 5 * SEC };
	CHECK_EQ(fg_usage_init(&u, 2, &p, 0), 0);
	uint32_t a = fg_usage_join(&u, 10, 1000, 0), b = fg_usage_join(&u, 11, 1000, 0);
	CHECK(a != b && a < 2 && b < 2);
	CHECK_EQ(fg_usage_join(&u, 12, 1000, 0), 2); /* the overflow entry */
	CHECK_EQ(u.overflowed, 1);
	CHECK_EQ(fg_usage_join(&u, 10, 1000, 0), a);
	fg_usage_leave(&u, a, 0);
	fg_usage_leave(&u, a, 0);
	fg_usage_leave(&u, 2, 0);
	fg_usage_fold(&u, 3 * SEC);
	CHECK_EQ(u.forgotten, 0);
	fg_usage_fold(&u, 6 * SEC); /* a idle for 6 s > 5 s; b still has a request */
	CHECK_EQ(u.forgotten, 1);
	CHECK(!u.flows[a].used && u.flows[b].used);
	CHECK_EQ(fg_usage_join(&u, 13, 1000, 0), a);
	CHECK_EQ(fg_usage_join(&u, 11, 1000, 0), b);
	CHECK_EQ(u.flows[b].requests, 2);
	struct fg_usage_params bad = { 0, SEC, SEC };
	CHECK_EQ(fg_usage_set_params(&u, &bad, 0), -22);
	fg_usage_fini(&u);
}

/* The index against a reference under random joins and forgets (colliding
 * slots included: 64 flows in a 128-entry index). */
TEST(index_matches_reference)
{
	struct fg_usage u;
	struct fg_usage_params p = { .half_life_ns = SEC, .sampling_ns = SEC, .reset_ns = 0 };
	CHECK_EQ(fg_usage_init(&u, 64, &p, 0), 0);
	uint32_t id_of[200];
	bool live[200] = { false };
	unsigned seed = 9;
	uint64_t t = 0;
	for (int step = 0; step < 20000; step++) {
		unsigned h = (unsigned)rand_r(&seed) % 200;
		if (rand_r(&seed) % 3) {
			unsigned n_live = 0;
			for (int i = 0; i < 200; i++)
				n_live += live[i];
			if (!live[h] && n_live == 64)
				continue;
			uint32_t id = fg_usage_join(&u, 1000003ull * h, 1000, t);
			if (live[h])
				CHECK_EQ(id, id_of[h]);
			CHECK(id < 64);
			id_of[h] = id;
			live[h] = true;
			fg_usage_leave(&u, id, t);
		} else {
			t += SEC; /* reset 0: everything without requests is forgotten */
			fg_usage_fold(&u, t);
			for (int i = 0; i < 200; i++)
				live[i] = false;
			CHECK_EQ(u.n_free, 64);
		}
	}
	CHECK_EQ(u.overflowed, 0);
	fg_usage_fini(&u);
}

/* A flood of flows that each sent once: past 3/4 full, the fold forgets the
 * idle ones with the smallest usage, not the busy ones, long before the
 * reset period. */
TEST(flood_of_flows_evicted_smallest_first)
{
	struct fg_usage u;
	struct fg_usage_params p = { .half_life_ns = SEC, .sampling_ns = SEC, .reset_ns = 1000 * SEC };
	CHECK_EQ(fg_usage_init(&u, 100, &p, 0), 0);
	uint32_t busy = fg_usage_join(&u, 7, 1000, 0); /* keeps a request */
	fg_usage_start(&u, busy, 1, 0, 0);
	uint32_t heavy = fg_usage_join(&u, 8, 1000, 0); /* idle, but used a lot */
	fg_usage_start(&u, heavy, 50, 0, 0);
	fg_usage_stop(&u, heavy, 50, SEC / 2);
	fg_usage_leave(&u, heavy, SEC / 2);
	for (uint64_t h = 100; h < 198; h++) /* 98 one-shot flows fill the slab */
		fg_usage_leave(&u, fg_usage_join(&u, h, 1000, 0), 0);
	CHECK_EQ(u.n_free, 0);
	CHECK_EQ(fg_usage_join(&u, 999, 1000, 0), 100); /* full: the overflow entry */
	fg_usage_fold(&u, SEC);
	CHECK_EQ(u.cap - u.n_free, 75);
	CHECK_EQ(u.evicted, 25);
	CHECK(u.flows[busy].used && u.flows[heavy].used && u.flows[heavy].hash == 8);
	CHECK(fg_usage_join(&u, 1000, 1000, SEC) < 100); /* room again */
	fg_usage_fini(&u);
}

TEST_MAIN
