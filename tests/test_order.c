/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the dispatch order (common/fq/order.c) against a brute-force model. */
#include <stdlib.h>

#include "order.h"
#include "test.h"

#define N 1500

/* The model: what is in, with which key, tie and insertion number; the
 * order is (key by signed difference, tie, newest first). */
struct model {
	uint64_t key[N], tie[N], seq[N];
	int in[N];
	uint64_t inserts;
	uint32_t count;
};

static bool model_before(const struct model *m, uint32_t a, uint32_t b)
{
	if (m->key[a] != m->key[b] || m->tie[a] != m->tie[b])
		return fg_skip_before(m->key[a], m->tie[a], m->key[b], m->tie[b]);
	return m->seq[a] > m->seq[b];
}

static uint32_t model_first(const struct model *m)
{
	uint32_t best = FG_ORDER_NIL;
	for (uint32_t j = 0; j < N; j++)
		if (m->in[j] && (best == FG_ORDER_NIL || model_before(m, j, best)))
			best = j;
	return best;
}

static void put(struct fg_order *o, struct model *m, uint32_t i, uint64_t key, uint64_t tie)
{
	fg_order_insert(o, i, key, tie);
	m->key[i] = key;
	m->tie[i] = tie;
	m->seq[i] = ++m->inserts;
	m->in[i] = 1;
	m->count++;
}

static void take(struct fg_order *o, struct model *m, uint32_t i)
{
	fg_order_remove(o, i);
	m->in[i] = 0;
	m->count--;
}

/* One order and its model for a test, empty. */
static struct fg_order *start(struct model **m, uint64_t hint)
{
	static struct fg_order o;
	static struct model model;
	memset(&model, 0, sizeof(model));
	*m = &model;
	CHECK_EQ(fg_order_init(&o, N, hint, 1), 0);
	return &o;
}

static void check(const struct fg_order *o, const struct model *m)
{
	CHECK_EQ(fg_order_first(o), model_first(m));
	CHECK_EQ(o->count, m->count);
	CHECK_EQ(o->count, o->sl.count + o->in_ring);
	for (uint32_t j = 0; j < N; j += 97)
		CHECK_EQ(fg_order_contains(o, j), m->in[j] != 0);
}

/* The queue set's pattern and its disturbances: the first goes and comes
 * back further on by a step of one to four costs (mixed widths), now and
 * then much further (per mille: a request far wider, a queue in debt);
 * newcomers arrive around where the last one served was, some below it (a
 * light flow starts at R); any item leaves (time-out); the whole set drains now and then, and
 * its first key after a drain may be an outlier (a queue in debt).  Ties
 * unique, as the calendar requires; keys start just below the wrap. */
struct pattern {
	uint64_t hint, cost;
	unsigned far_per_mille;  /* steps of far_mult costs */
	uint64_t far_mult;
	unsigned seed;
};

static void queue_set_pattern(struct pattern p)
{
	struct model *m;
	struct fg_order *o = start(&m, p.hint);
	/* r: where the last served one was (the queue set's R, roughly). */
	uint64_t tie = 0, cost = p.cost, r_now = UINT64_MAX - 20 * cost * N;
	unsigned seed = p.seed;
	for (int step = 0; step < 200000; step++) {
		unsigned r = (unsigned)rand_r(&seed) % 1000;
		uint32_t first = fg_order_first(o);
		if (first != FG_ORDER_NIL && r < 600) { /* served: back at its next finish */
			uint64_t k = r_now = m->key[first];
			uint64_t by = (unsigned)rand_r(&seed) % 1000 < p.far_per_mille ? cost * p.far_mult
										: cost * (1 + (uint64_t)(rand_r(&seed) % 4));
			take(o, m, first);
			put(o, m, first, k + by, ++tie);
		} else if (r < 850) { /* a queue becomes active: around R */
			uint32_t i = (uint32_t)rand_r(&seed) % N;
			if (m->in[i])
				continue;
			uint64_t at = r_now;
			if (first == FG_ORDER_NIL && step % 2) /* after a drain, a queue in debt first */
				at += cost * p.far_mult;
			int64_t off = (int64_t)(rand_r(&seed) % (int)(24 * cost)) - (int64_t)(4 * cost);
			put(o, m, i, at + (uint64_t)off, ++tie);
		} else if (r < 999) { /* any one leaves */
			uint32_t i = (uint32_t)rand_r(&seed) % N;
			if (m->in[i])
				take(o, m, i);
		} else if (step % 3 == 0) { /* drained */
			for (uint32_t i = 0; i < N; i++)
				if (m->in[i])
					take(o, m, i);
		}
		if (step % 7 == 0)
			check(o, m);
	}
	check(o, m);
	/* A copy into a larger order goes on the same. */
	static struct fg_order big;
	CHECK_EQ(fg_order_init(&big, 2 * N, p.hint, 7), 0);
	fg_order_copy(&big, o);
	fg_order_fini(o);
	check(&big, m);
	for (int step = 0; step < 20000; step++) {
		uint32_t first = fg_order_first(&big);
		if (first == FG_ORDER_NIL)
			break;
		uint64_t k = m->key[first];
		take(&big, m, first);
		if (step % 3)
			put(&big, m, first, k + cost * (1 + (uint64_t)(step % 4)), ++tie);
		check(&big, m);
	}
	fg_order_fini(&big);
}

TEST(queue_set_pattern_hint_right)
{
	queue_set_pattern((struct pattern){ .hint = 1000, .cost = 1000, .far_per_mille = 5, .far_mult = 50, .seed = 1 });
	queue_set_pattern((struct pattern){ .hint = 1000, .cost = 1000, .far_per_mille = 1, .far_mult = 100000, .seed = 2 });
}

/* Buckets far too narrow (the ring widens) or far too wide. */
TEST(queue_set_pattern_hint_wrong)
{
	queue_set_pattern((struct pattern){ .hint = 1, .cost = 100000, .far_per_mille = 2, .far_mult = 30, .seed = 3 });
	queue_set_pattern((struct pattern){ .hint = 1000000000, .cost = 10, .far_per_mille = 1, .far_mult = 1000, .seed = 4 });
	queue_set_pattern((struct pattern){ .hint = 0, .cost = 3, .far_per_mille = 50, .far_mult = 7, .seed = 5 });
}

/* Every item removed first to last, each time the model's first. */
static void drain_in_order(struct fg_order *o, struct model *m)
{
	uint32_t first;
	while ((first = model_first(m)) != FG_ORDER_NIL) {
		CHECK_EQ(fg_order_first(o), first);
		take(o, m, first);
	}
	CHECK_EQ(fg_order_first(o), FG_ORDER_NIL);
}

/* Keys in near's middle while it holds everything: the horizon comes
 * down to the first's bucket and the rest goes to the ring.  Then near
 * crowded again below the ring's keys: now the horizon must stay (the
 * ring's keys would wrap round a lower ring and go first). */
TEST(near_crowded_below_a_ring_key)
{
	struct model *m;
	struct fg_order *o = start(&m, 1000);
	uint64_t x = 1ull << 40, tie = 0;
	put(o, m, 0, x, ++tie);
	for (uint32_t i = 1; i < 100; i++)
		put(o, m, i, x - 100000 - 100 * i, ++tie);
	CHECK(o->in_ring > 0 && o->in_far > 0);
	for (uint32_t i = 100; i < 200; i++)
		put(o, m, i, x - 200000 - i, ++tie);
	for (uint32_t i = 200; i < 200 + FG_ORDER_WIDEN_FAR / 2; i++) /* between the two groups (too few to widen the ring) */
		put(o, m, i, x - 150000 - 100 * i, ++tie);
	drain_in_order(o, m);
	fg_order_fini(o);
}

/* Keys far beyond narrow buckets: the ring widens, its horizon rounded up
 * so that a key just below near's first still goes first. */
TEST(widening_keeps_near_below_the_horizon)
{
	struct model *m;
	struct fg_order *o = start(&m, 1);
	uint64_t x = 1000 * 512 + 300, tie = 0;
	for (uint32_t i = 0; i < 70; i++) /* in order: near grows at its end */
		put(o, m, i, x + 10 * i, ++tie);
	CHECK_EQ(o->in_ring, 0);
	put(o, m, 70, x + 5, ++tie); /* in the middle: the rest goes to the ring */
	CHECK(o->in_ring > 0);
	unsigned shift = o->shift;
	for (uint32_t i = 100; i < 100 + 2 * FG_ORDER_WIDEN_FAR; i++)
		put(o, m, i, x + 1000000 + i, ++tie);
	CHECK(o->shift > shift);
	put(o, m, 200, x - 1, ++tie);
	CHECK_EQ(fg_order_first(o), 200);
	drain_in_order(o, m);
	fg_order_fini(o);
}

/* Without the calendar: arbitrary keys, equal (key, tie) pairs newest
 * first, as in one skip list. */
TEST(without_calendar_a_skip_list)
{
	struct model *m;
	struct fg_order *o = start(&m, 1000);
	fg_order_set_calendar(o, false);
	CHECK(!o->calendar);
	unsigned seed = 5;
	for (int step = 0; step < 100000; step++) {
		uint32_t i = (uint32_t)rand_r(&seed) % N;
		if (m->in[i])
			take(o, m, i);
		else
			put(o, m, i, (uint64_t)(rand_r(&seed) % 20) << 40, (uint64_t)(rand_r(&seed) % 3));
		if (step % 11 == 0)
			check(o, m);
	}
	CHECK_EQ(o->in_ring, 0);
	/* The mode stays while anything is in. */
	fg_order_set_calendar(o, true);
	CHECK(!o->calendar);
	fg_order_fini(o);
	CHECK_EQ(fg_order_init(o, FG_ORDER_MAX_BUCKETS + 1, 0, 1), -22);
}

TEST_MAIN
