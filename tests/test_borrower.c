/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of borrowing wired to the workers' gauges and the configuration
 * (common/runtime/borrower.c) on a virtual clock: demand summed over workers by level
 * name, a round every borrowingPeriod publishing current limits, a
 * configuration change keeping a level's state, and the round's cost over
 * the most levels a configuration and a worker can hold. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "borrower.h"
#include "flowcontrol.h"
#include "settings.h"
#include "test.h"

#define MS 1000000ull
#define SEC FG_NS_PER_SEC

/* n Limited levels "<prefix>-<i>" of equal shares, each lending half. */
static struct fg_fc_config *levels_named(const char *prefix, unsigned n, uint32_t seats)
{
	size_t cap = 1024 + (size_t)n * 1024, len = 0;
	char *text = malloc(cap);
	len += (size_t)snprintf(text + len, cap - len, "{\"kind\":\"List\",\"items\":[");
	for (unsigned i = 0; i < n; i++)
		len += (size_t)snprintf(text + len, cap - len, "%s"
			"{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"PriorityLevelConfiguration\","
			"\"metadata\":{\"name\":\"%s-%u\"},\"spec\":{\"type\":\"Limited\",\"limited\":{"
			"\"nominalConcurrencyShares\":100,\"lendablePercent\":50,\"limitResponse\":{\"type\":\"Queue\","
			"\"queuing\":{\"queues\":4,\"handSize\":1,\"queueLengthLimit\":10}}}}}",
			i ? "," : "", prefix, i);
	snprintf(text + len, cap - len, "]}");
	struct fg_fc_set *set = fg_fc_set_new();
	struct fg_errors e = { .len = 0 };
	CHECK_EQ(fg_fc_set_apply(set, (const uint8_t *)text, strlen(text), NULL, &e), n);
	struct fg_fc_config *fc = fg_fc_compile(set, seats, &e);
	fg_fc_set_free(set);
	free(text);
	return fc;
}

static struct fg_config *config_of(struct fg_fc_config *fc, uint64_t generation, uint64_t period_ns)
{
	struct fg_settings s;
	fg_settings_defaults(&s);
	s.borrowing_period_ns = (int64_t)period_ns;
	struct fg_config *c = fg_config_build(&s, fc, generation);
	CHECK(c && c->limits);
	return c;
}

/* A worker's gauges for the level named `name` (slot k). */
static void gauge(struct fg_worker_stats *ws, uint32_t k, const char *name, uint32_t in_use, uint32_t waiting)
{
	struct fg_level_stats *ls = &ws->levels[k];
	snprintf(ls->name, sizeof(ls->name), "%s", name);
	ls->used = 1;
	ls->seats_in_use = in_use;
	ls->seats_waiting = waiting;
}

static int level_named(const struct fg_config *c, const char *name) { return fg_fc_level_index(c->fc, name); }

/* Two levels of 10 nominal seats (20 seats; catch-all and exempt from the
 * mandatory objects): "l-0" saturated on two workers, "l-1" idle.  The busy
 * level's limit rises at the first round after a period, the idle one lends
 * half, and the limits land in the configuration with a new sequence. */
TEST(demand_summed_by_name_moves_the_limits_every_period)
{
	struct fg_borrower *b = fg_borrower_new();
	struct fg_config *c = config_of(levels_named("l", 2, 20), 1, 500 * MS);
	fg_config_keep_level_limits(c, NULL);
	int busy = level_named(c, "l-0"), idle = level_named(c, "l-1");
	CHECK_EQ(c->fc->levels[busy].nominal, 10);
	CHECK_EQ(fg_config_level_limit(c, busy), 10 - 5 / 2); /* a new level: nominal - lendable / 2 */
	static struct fg_worker_stats w0, w1;
	struct fg_worker_stats *ws[2] = { &w0, &w1 };
	/* Different slots on the two workers: matched by name. */
	gauge(&w0, 3, "l-0", 10, 8);
	gauge(&w1, 7, "l-0", 0, 12);
	gauge(&w0, 4, "l-1", 0, 0);
	w0.config_generation = w1.config_generation = 1;
	uint64_t now = 10 * SEC;
	CHECK(fg_borrower_step(b, c, ws, 2, now)); /* a new configuration: a round at once */
	uint32_t seq = c->limits->seq;
	unsigned rounds = 0;
	for (int i = 0; i < 100; i++) {
		now += 10 * MS;
		rounds += fg_borrower_step(b, c, ws, 2, now);
		CHECK(fg_borrower_nap_ns(b, now) <= FG_BORROWING_SAMPLE_NS);
	}
	CHECK_EQ(rounds, 2); /* 1 s: two periods */
	CHECK_EQ(c->limits->seq, seq + 2);
	struct fg_borrower_view *v = malloc(sizeof(*v));
	CHECK(fg_borrower_read(&b->view, v));
	CHECK_EQ(v->levels[busy].stats.hwm, 30);
	CHECK(v->levels[busy].stats.avg > 29.999 && v->levels[busy].stats.avg < 30.001);
	CHECK(v->levels[busy].demand == 30);
	CHECK(fg_config_level_limit(c, busy) > 10);
	CHECK_EQ(fg_config_level_limit(c, busy), v->levels[busy].current);
	CHECK_EQ(fg_config_level_limit(c, idle), 5); /* lent down to its minimum */
	CHECK_EQ(v->kase, FG_BORROWING_FAIR);
	CHECK(v->fair_frac > 0);
	CHECK_EQ(v->period_ns, 500 * MS);
	/* A live borrowingPeriod change takes effect at the next step. */
	c->borrowing_period_ns = 100 * MS;
	rounds = 0;
	for (int i = 0; i < 50; i++) {
		now += 10 * MS;
		rounds += fg_borrower_step(b, c, ws, 2, now);
	}
	CHECK_EQ(rounds, 5);
	free(v);
	fg_config_free(c);
	fg_borrower_free(b);
}

/* A configuration change: a level that stays keeps its statistics and its
 * limit (within its new bounds); a new one starts at nominal - lendable / 2;
 * the new configuration's workers start where the borrower is. */
TEST(configuration_change_keeps_a_levels_state)
{
	struct fg_borrower *b = fg_borrower_new();
	struct fg_config *c1 = config_of(levels_named("l", 2, 20), 1, 500 * MS);
	fg_config_keep_level_limits(c1, NULL);
	static struct fg_worker_stats w0;
	struct fg_worker_stats *ws[1] = { &w0 };
	gauge(&w0, 0, "l-0", 10, 20);
	w0.config_generation = 1;
	uint64_t now = SEC;
	for (int i = 0; i < 200; i++, now += 10 * MS)
		fg_borrower_step(b, c1, ws, 1, now);
	int busy1 = level_named(c1, "l-0");
	uint32_t borrowed = fg_config_level_limit(c1, busy1);
	double smoothed = b->levels[busy1].stats.smoothed;
	CHECK(borrowed > 10 && smoothed >= 30);
	/* Generation 2: one level more, the busy one moved to another index. */
	struct fg_fc_config *fc2 = levels_named("l", 3, 30);
	struct fg_config *c2 = config_of(fc2, 2, 500 * MS);
	fg_config_keep_level_limits(c2, c1);
	int busy2 = level_named(c2, "l-0"), fresh = level_named(c2, "l-2");
	CHECK_EQ(fg_config_level_limit(c2, busy2), borrowed); /* kept for the workers' start */
	uint32_t nominal = c2->fc->levels[fresh].nominal, min = c2->fc->levels[fresh].min;
	CHECK_EQ(fg_config_level_limit(c2, fresh), nominal - (nominal - min) / 2);
	uint64_t rounds = b->view.rounds;
	CHECK(fg_borrower_step(b, c2, ws, 1, now)); /* a round at the change */
	CHECK_EQ(b->view.rounds, rounds + 1);
	CHECK(b->levels[busy2].stats.smoothed >= smoothed * 0.97); /* kept, then one period of decay at most */
	CHECK(!strcmp(b->names[busy2], "l-0"));
	CHECK(fg_config_level_limit(c2, busy2) > c2->fc->levels[busy2].nominal);
	fg_config_free(c1);
	fg_config_free(c2);
	fg_borrower_free(b);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

/* The round's cost on the stepping thread: FG_MAX_CONFIG_LEVELS levels
 * (126 and the mandatory exempt and catch-all) through the borrower (demand sampled, limits published), and
 * FG_MAX_LEVELS through fg_borrowing_round alone; varied demands so that
 * the allocator sorts.  Five runs of 200 rounds; min and median per round
 * (docs/benchmarks.md).  Must stay well under 1 ms. */
TEST(round_cost_over_the_most_levels)
{
	struct fg_borrower *b = fg_borrower_new();
	struct fg_config *c = config_of(levels_named("l", FG_MAX_CONFIG_LEVELS - 2, 6000), 1, 100 * MS);
	static struct fg_worker_stats w0;
	struct fg_worker_stats *ws[1] = { &w0 };
	char name[32];
	for (unsigned i = 0; i < FG_MAX_CONFIG_LEVELS - 2; i++) {
		snprintf(name, sizeof(name), "l-%u", i);
		gauge(&w0, i, name, (i * 7) % 50, (i * 13) % 80);
	}
	w0.config_generation = 1;
	uint64_t now = SEC, runs[5], runs256[5];
	fg_borrower_step(b, c, ws, 1, now);
	static struct fg_borrowing_level lv[FG_MAX_LEVELS];
	for (unsigned i = 0; i < FG_MAX_LEVELS; i++)
		fg_borrowing_level_init(&lv[i], false, 20, 10, 60, now);
	for (int r = 0; r < 5; r++) {
		uint64_t t0 = cpu_ns();
		for (int k = 0; k < 200; k++) {
			now += 100 * MS;
			for (unsigned i = 0; i < FG_MAX_CONFIG_LEVELS - 2; i++)
				w0.levels[i].seats_waiting = (uint32_t)((i * 13 + (unsigned)k * 5) % 80);
			CHECK(fg_borrower_step(b, c, ws, 1, now));
		}
		runs[r] = (cpu_ns() - t0) / 200;
		struct fg_borrowing_result res;
		t0 = cpu_ns();
		for (int k = 0; k < 200; k++) {
			now += 100 * MS;
			for (unsigned i = 0; i < FG_MAX_LEVELS; i++)
				fg_borrowing_demand_set(&lv[i].demand, now - 50 * MS, (double)((i * 11 + (unsigned)k * 3) % 90));
			CHECK_EQ(fg_borrowing_round(lv, FG_MAX_LEVELS, 20 * FG_MAX_LEVELS, now, &res), 0);
		}
		runs256[r] = (cpu_ns() - t0) / 200;
	}
	qsort(runs, 5, sizeof(runs[0]), cmp_u64);
	qsort(runs256, 5, sizeof(runs256[0]), cmp_u64);
	printf("  borrowing step with a round, %u levels: min %.1f us, median %.1f us (last round %.1f us)\n",
	       FG_MAX_CONFIG_LEVELS, runs[0] / 1e3, runs[2] / 1e3, b->view.round_ns / 1e3);
	printf("  fg_borrowing_round, %u levels: min %.1f us, median %.1f us\n", FG_MAX_LEVELS, runs256[0] / 1e3,
	       runs256[2] / 1e3);
	CHECK_EQ(b->view.n, FG_MAX_CONFIG_LEVELS);
	CHECK(runs[2] < 1000 * 1000);
	CHECK(runs256[2] < 1000 * 1000);
	fg_config_free(c);
	fg_borrower_free(b);
}

TEST_MAIN
