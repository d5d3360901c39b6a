/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of borrowing between priority levels (common/seats/borrowing.c): the
 * demand integrator, the 0.977 smoothing, Kubernetes' TestUpdateBorrowing
 * (borrowing_test.go, its three exempt scenarios) as a table of steps,
 * TestBorrowing's steady states, seats given back as the smoothing decays,
 * and the backstop. */
#include <errno.h>
#include <math.h>

#include "borrowing.h"
#include "flowcontrol.h"
#include "test.h"

#define SEC FG_NS_PER_SEC
#define PERIOD FG_BORROWING_DEFAULT_PERIOD_NS

static double rel_diff(double a, double b)
{
	double den = fmax(fabs(a), fabs(b));
	return den == 0 ? 0 : fabs(a - b) / den;
}

TEST(integrator_moments)
{
	struct fg_borrowing_demand d;
	fg_borrowing_demand_init(&d, 5 * SEC, 2);
	fg_borrowing_demand_add(&d, 6 * SEC, 2); /* 2 for 1 s, then 4 for 3 s */
	struct fg_borrowing_obs o = fg_borrowing_demand_reset(&d, 9 * SEC);
	CHECK(o.duration == 4);
	CHECK(rel_diff(o.avg, 3.5) < 1e-12);
	CHECK(rel_diff(o.stddev, sqrt(0.75)) < 1e-9); /* E[x^2] = 13, avg^2 = 12.25 */
	CHECK(o.min == 2 && o.max == 4);
	/* A reset restarts from the current value. */
	fg_borrowing_demand_set(&d, 9 * SEC, 1);
	o = fg_borrowing_demand_reset(&d, 11 * SEC);
	CHECK(o.max == 4 && o.min == 1); /* the value at the reset counts */
	CHECK(rel_diff(o.avg, 1) < 1e-12 && o.stddev == 0);
	/* No time: no average (Kubernetes' NaN), and the statistics keep theirs. */
	o = fg_borrowing_demand_reset(&d, 11 * SEC);
	CHECK(o.duration == 0 && isnan(o.avg));
	struct fg_borrowing_stats s = { .avg = 7, .smoothed = 7 };
	fg_borrowing_stats_update(&s, &o);
	CHECK(s.avg == 7 && s.smoothed == 7 && s.hwm == 1);
}

/* smoothed = max(envelope, 0.977 smoothed + 0.023 envelope): a rise is taken
 * at once, a fall decays by 0.977 per period (half-life ~30 periods). */
TEST(smoothing_constant)
{
	CHECK(FG_BORROWING_SMOOTHING == 0.977);
	struct fg_borrowing_stats s = { 0 };
	struct fg_borrowing_obs up = { .duration = 10, .avg = 8, .stddev = 2, .max = 12 };
	fg_borrowing_stats_update(&s, &up);
	CHECK(s.smoothed == 10 && s.hwm == 12 && s.avg == 8 && s.stddev == 2);
	struct fg_borrowing_obs idle = { .duration = 10, .avg = 0, .stddev = NAN, .max = 0 };
	for (int k = 1; k <= 30; k++) {
		fg_borrowing_stats_update(&s, &idle);
		CHECK(rel_diff(s.smoothed, 10 * pow(0.977, k)) < 1e-12);
	}
	CHECK(s.stddev == 0);                        /* a NaN deviation counts as 0 */
	CHECK(s.smoothed > 4.9 && s.smoothed < 5.0); /* about half after 30 periods (5 minutes) */
	/* A small envelope still counts with 0.023. */
	struct fg_borrowing_obs some = { .duration = 10, .avg = 1, .stddev = 0, .max = 1 };
	double before = s.smoothed;
	fg_borrowing_stats_update(&s, &some);
	CHECK(rel_diff(s.smoothed, 0.977 * before + 0.023) < 1e-12);
}

/*
 * TestUpdateBorrowing: the bootstrap levels exempt (shares 0), workload-high
 * (40, lend 50%), workload-low (100, lend 90%) and catch-all (5, lend 0%),
 * ServerCL = 6 x 145 = 870.  Derived (docs/apf-facts.md §1.3):
 *   exempt   nominal   0, min   0
 *   high     nominal 240, min 120, max 240 + 870 (no borrowing limit)
 *   mid      nominal 600, min  60, max 600 + 870
 *   low      nominal  30, min  30, max  30 + 870
 * nominalCLSum 870.
 */
enum { EX, HI, MID, LO, NLEV };
#define SERVER_CL 870
#define SAME (-1)

static const struct {
	unsigned at_periods; /* time of this step, in borrowing periods */
	int demand[NLEV];    /* set at this time (SAME: unchanged) */
	bool round;          /* run a round at this time (after the demands) */
	int current[NLEV];   /* expected after the round (SAME: not checked) */
	enum fg_borrowing_case kase;
} update_borrowing[] = {
	/* Scenario 1: everybody wants ServerCL + 100; exempt takes it all,
	 * every other level is held to its minCL. */
	{ 0, { 970, 970, 970, 970 }, false, { SAME, SAME, SAME, SAME }, 0 },
	{ 1, { SAME, SAME, SAME, SAME }, true, { 970, 120, 60, 30 }, FG_BORROWING_AT_MIN },
	/* Scenario 2: exempt wants 870 - (180 + 330 + 30) = 330: the others get
	 * halfway between minCL and nominal (the high watermark needs a
	 * second period to forget 970). */
	{ 1, { 330, SAME, SAME, SAME }, false, { SAME, SAME, SAME, SAME }, 0 },
	{ 2, { SAME, SAME, SAME, SAME }, true, { SAME, SAME, SAME, SAME }, 0 },
	{ 3, { SAME, SAME, SAME, SAME }, true, { 330, 180, 330, 30 }, FG_BORROWING_BETWEEN },
	/* Scenario 3: only mid lends (demand 1) and exempt borrows all of it:
	 * 870 - (240 + 60 + 30) = 540. */
	{ 3, { 540, SAME, 1, SAME }, false, { SAME, SAME, SAME, SAME }, 0 },
	{ 4, { SAME, SAME, SAME, SAME }, true, { SAME, SAME, SAME, SAME }, 0 },
	{ 5, { SAME, SAME, SAME, SAME }, true, { 540, 240, 60, 30 }, FG_BORROWING_BETWEEN },
};

/* The four levels of the test from the embedded bootstrap objects, the
 * others deleted, compiled at ServerCL 870: the derived limits are
 * fairgate's own (flowcontrol_compile.c), checked against the table above. */
static int levels_from_bootstrap(struct fg_borrowing_level *lv, uint32_t *nominal_sum)
{
	static const char *const names[NLEV] = { "exempt", "workload-high", "workload-low", "catch-all" };
	static const char *const gone[] = { "system", "node-high", "leader-election", "global-default" };
	static const uint32_t want[NLEV][3] = { { 0, 0, 870 }, { 240, 120, 1110 }, { 600, 60, 1470 }, { 30, 30, 900 } };
	struct fg_fc_set *set = fg_fc_set_bootstrap();
	if (!set)
		return -ENOMEM;
	for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
		CHECK_EQ(fg_fc_set_delete(set, FG_FC_PRIORITYLEVEL, gone[i]), 0);
	struct fg_errors e = { .len = 0 };
	struct fg_fc_config *c = fg_fc_compile(set, SERVER_CL, &e);
	fg_fc_set_free(set);
	if (!c)
		return -EINVAL;
	CHECK_EQ(c->n_levels, NLEV);
	*nominal_sum = 0;
	for (int i = 0; i < NLEV; i++) {
		int k = fg_fc_level_index(c, names[i]);
		CHECK(k >= 0);
		if (k < 0)
			continue;
		const struct fg_fc_level *l = &c->levels[k];
		CHECK(l->nominal == want[i][0] && l->min == want[i][1] && l->max == want[i][2]);
		fg_borrowing_level_init(&lv[i], l->exempt, l->nominal, l->min, l->max, 0);
		*nominal_sum += l->nominal;
	}
	fg_fc_config_free(c);
	return 0;
}

TEST(kubernetes_update_borrowing)
{
	struct fg_borrowing_level lv[NLEV];
	uint32_t nominal_sum = 0;
	CHECK_EQ(levels_from_bootstrap(lv, &nominal_sum), 0);
	CHECK_EQ(nominal_sum, SERVER_CL); /* Kubernetes' test insists there is no rounding */
	CHECK(lv[EX].exempt && !lv[HI].exempt);
	CHECK_EQ(lv[HI].current, 240 - 120 / 2); /* a new level starts at nominal - lendable/2 */
	CHECK_EQ(lv[MID].current, 600 - 540 / 2);
	for (size_t k = 0; k < sizeof(update_borrowing) / sizeof(update_borrowing[0]); k++) {
		uint64_t now = update_borrowing[k].at_periods * PERIOD;
		for (int i = 0; i < NLEV; i++)
			if (update_borrowing[k].demand[i] != SAME)
				fg_borrowing_demand_set(&lv[i].demand, now, update_borrowing[k].demand[i]);
		if (!update_borrowing[k].round)
			continue;
		struct fg_borrowing_result res;
		CHECK_EQ(fg_borrowing_round(lv, NLEV, nominal_sum, now, &res), 0);
		CHECK(!res.backstop);
		if (update_borrowing[k].kase)
			CHECK_EQ(res.kase, update_borrowing[k].kase);
		for (int i = 0; i < NLEV; i++) {
			if (update_borrowing[k].current[i] == SAME)
				continue;
			if ((int)lv[i].current != update_borrowing[k].current[i])
				fprintf(stderr, "  step %zu level %d: current %u, want %d\n", k, i, lv[i].current,
					update_borrowing[k].current[i]);
			CHECK_EQ(lv[i].current, update_borrowing[k].current[i]);
		}
	}
}

/*
 * TestBorrowing's configuration (docs/apf-facts.md §4.7): ServerCL 24, two levels
 * of 100 shares (nominal 12 each) and catch-all (5 shares: nominal 1), so
 * nominalCLSum 25; steady demands 24 and 6.  Kubernetes expects flow 0 to
 * run ~16 seats in both cases: the allocator's current limits are 16 and 8.
 */
static const struct {
	const char *name;
	uint32_t min0, max0, min1, max1;
	uint32_t want0, want1;
	double fair_frac;
} test_borrowing[] = {
	/* lend 50% / 33%, borrow 67% / 50%: 12-6, 12+8; 12-4, 12+6 */
	{ "lendable-limited", 6, 20, 8, 18, 16, 8, 2.0 / 3 },
	/* lend 50% / 67%, borrow 33% / 50%: 12-6, 12+4; 12-8, 12+6.  Flow 0 is
	 * capped at 16; flow 1 (target 6) and catch-all (target 1, may borrow
	 * up to 25) share the rest: 16 + 6p + p = 25, p = 9/7 -> 7.7 and 1.3. */
	{ "borrowing-limited", 6, 16, 4, 18, 16, 8, 9.0 / 7 },
};

TEST(kubernetes_borrowing_steady_state)
{
	for (size_t k = 0; k < sizeof(test_borrowing) / sizeof(test_borrowing[0]); k++) {
		struct fg_borrowing_level lv[4];
		fg_borrowing_level_init(&lv[0], true, 0, 0, 24, 0);
		fg_borrowing_level_init(&lv[1], false, 12, test_borrowing[k].min0, test_borrowing[k].max0, 0);
		fg_borrowing_level_init(&lv[2], false, 12, test_borrowing[k].min1, test_borrowing[k].max1, 0);
		fg_borrowing_level_init(&lv[3], false, 1, 1, 1 + 24, 0);
		fg_borrowing_demand_set(&lv[1].demand, 0, 24);
		fg_borrowing_demand_set(&lv[2].demand, 0, 6);
		struct fg_borrowing_result res;
		for (unsigned p = 1; p <= 3; p++) {
			CHECK_EQ(fg_borrowing_round(lv, 4, 25, p * PERIOD, &res), 0);
			CHECK_EQ(res.kase, FG_BORROWING_FAIR);
			CHECK_EQ(lv[1].current, test_borrowing[k].want0);
			CHECK_EQ(lv[2].current, test_borrowing[k].want1);
			CHECK_EQ(lv[3].current, 1);
			CHECK(rel_diff(res.fair_frac, test_borrowing[k].fair_frac) < 1e-9);
			CHECK(lv[1].target == 24);
		}
	}
}

/*
 * Two levels of nominal 10 (min 5, max 20), nominalCLSum 20.  A asks 15
 * for one period, then nothing; B always asks 20.  While A's high watermark
 * remembers 15, both hold 10 (sum of lower bounds = 20); then A's target is
 * its smoothed demand s_k = 15 x 0.977^(k-1) and it keeps
 * round(20 s / (s + 20)) seats (p = 20 / (s + 20)), giving them back to B
 * period by period until it is down to its minimum of 5.
 */
TEST(seats_given_back_as_demand_decays)
{
	struct fg_borrowing_level lv[2];
	fg_borrowing_level_init(&lv[0], false, 10, 5, 20, 0);
	fg_borrowing_level_init(&lv[1], false, 10, 5, 20, 0);
	fg_borrowing_demand_set(&lv[0].demand, 0, 15);
	fg_borrowing_demand_set(&lv[1].demand, 0, 20);
	struct fg_borrowing_result res;
	CHECK_EQ(fg_borrowing_round(lv, 2, 20, PERIOD, &res), 0);
	CHECK(lv[0].current == 10 && lv[1].current == 10 && res.kase == FG_BORROWING_BETWEEN);
	fg_borrowing_demand_set(&lv[0].demand, PERIOD, 0);
	CHECK_EQ(fg_borrowing_round(lv, 2, 20, 2 * PERIOD, &res), 0);
	CHECK(lv[0].current == 10 && lv[1].current == 10);
	uint32_t prev = 10;
	unsigned at_min = 0;
	for (unsigned k = 2; k <= 60; k++) {
		CHECK_EQ(fg_borrowing_round(lv, 2, 20, (k + 1) * PERIOD, &res), 0);
		double s = 15 * pow(0.977, k);
		CHECK(rel_diff(lv[0].stats.smoothed, s) < 1e-9);
		double want = fmax(5, 20 * s / (s + 20));
		CHECK_EQ(lv[0].current, (uint32_t)round(want));
		CHECK_EQ(lv[1].current, (uint32_t)round(fmin(20, 400 / (fmax(s, 20.0 / 3) + 20))));
		CHECK(lv[0].current <= prev);
		prev = lv[0].current;
		if (lv[0].current == 5 && !at_min)
			at_min = k;
	}
	/* 20 s / (s + 20) = 5 at s = 20/3: 15 x 0.977^k = 6.67 at k ~ 35. */
	CHECK(at_min >= 30 && at_min <= 36);
	CHECK(lv[0].current == 5 && lv[1].current == 15);
}

/* The third case allocates nominalCLSum (Kubernetes' code, not R): when the
 * upper bounds cannot hold it the allocator fails and the limits stay. */
TEST(backstop_keeps_limits)
{
	struct fg_borrowing_level lv[3];
	fg_borrowing_level_init(&lv[0], true, 5, 0, 5, 0); /* exempt with shares, lending all */
	fg_borrowing_level_init(&lv[1], false, 10, 10, 10, 0);
	fg_borrowing_level_init(&lv[2], false, 10, 10, 10, 0);
	lv[1].current = lv[2].current = 7;
	struct fg_borrowing_result res;
	CHECK_EQ(fg_borrowing_round(lv, 3, 25, PERIOD, &res), 0);
	CHECK(res.kase == FG_BORROWING_FAIR && res.backstop && res.remaining == 25);
	CHECK(lv[1].current == 7 && lv[2].current == 7);
	CHECK_EQ(fg_borrowing_round(lv, 0, 25, PERIOD, &res), -EINVAL);
}

TEST_MAIN
