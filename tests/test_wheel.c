/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the timing wheel (common/req/wheel.c) against the rule it
 * promises: never early, at most one tick late, each request exactly once. */
#include <stdlib.h>

#include "test.h"
#include "wheel.h"

#define TICK (1ull << FG_WHEEL_TICK_SHIFT)

struct seen {
	uint64_t now;
	uint32_t *released_at_call; /* per slot: the call index, or UINT32_MAX */
	uint64_t *released_ns;
	uint32_t call;
	uint32_t n;
};

static void on_expired(void *ctx, uint32_t i)
{
	struct seen *s = ctx;
	CHECK(s->released_at_call[i] == UINT32_MAX); /* once */
	s->released_at_call[i] = s->call;
	s->released_ns[i] = s->now;
	s->n++;
}

TEST(never_early_at_most_a_tick_late_exactly_once)
{
	enum { N = 3000 };
	struct fg_reqtable t;
	CHECK_EQ(fg_reqtable_init(&t, N), 0);
	static struct fg_wheel wh;
	uint64_t now = 5000000000ull;
	fg_wheel_init(&wh, now);
	struct seen s = { .released_at_call = malloc(N * sizeof(uint32_t)), .released_ns = malloc(N * sizeof(uint64_t)) };
	for (uint32_t i = 0; i < N; i++)
		s.released_at_call[i] = UINT32_MAX;
	unsigned seed = 7;
	uint32_t added = 0;
	static uint64_t last_now[N], added_ns[N];
	for (int step = 0; step < 200000 && (added < N || s.n < added); step++) {
		/* Delays from 0 to ~4 turns of the wheel, some already past. */
		if (added < N && rand_r(&seed) % 3 == 0) {
			uint32_t i = fg_reqtable_alloc(&t);
			uint64_t d = (uint64_t)rand_r(&seed) % (4 * FG_WHEEL_SLOTS * TICK);
			t.slots[i].release_ns = rand_r(&seed) % 20 == 0 ? now - d % (5 * TICK) : now + d;
			fg_wheel_add(&wh, &t, i);
			added_ns[i] = now;
			added++;
		}
		/* Time moves in small steps, now and then a long idle jump. */
		uint64_t prev = now;
		now += rand_r(&seed) % 1000 == 0 ? 3 * FG_WHEEL_SLOTS * TICK : (uint64_t)rand_r(&seed) % (TICK / 2);
		s.now = now;
		s.call++;
		fg_wheel_expire(&wh, &t, now, on_expired, &s);
		for (uint32_t i = 0; i < added; i++)
			if (s.released_at_call[i] == s.call)
				last_now[i] = prev; /* the call before released it not */
		CHECK(fg_wheel_next(&wh) == UINT64_MAX ? wh.count == 0 : fg_wheel_next(&wh) > now);
	}
	CHECK_EQ(s.n, added);
	CHECK_EQ(wh.count, 0);
	unsigned early = 0, late = 0;
	for (uint32_t i = 0; i < added; i++) {
		uint64_t rel = t.slots[i].release_ns, due = rel > added_ns[i] ? rel : added_ns[i];
		if (s.released_ns[i] < rel)
			early++;
		/* The call before this one was already past the tick that held
		 * its due time (its release, or its adding when that was later). */
		if (last_now[i] >= (due / TICK + 1) * TICK)
			late++;
	}
	CHECK_EQ(early, 0);
	CHECK_EQ(late, 0);
	free(s.released_at_call);
	free(s.released_ns);
	fg_reqtable_fini(&t);
}

TEST(everything_goes_at_shutdown)
{
	struct fg_reqtable t;
	CHECK_EQ(fg_reqtable_init(&t, 10), 0);
	static struct fg_wheel wh;
	fg_wheel_init(&wh, 0);
	uint32_t released[10];
	struct seen s = { .released_at_call = released, .released_ns = (uint64_t[10]){ 0 } };
	for (uint32_t k = 0; k < 10; k++) {
		released[k] = UINT32_MAX;
		uint32_t i = fg_reqtable_alloc(&t);
		t.slots[i].release_ns = (uint64_t)k * 1000000000ull;
		fg_wheel_add(&wh, &t, i);
	}
	CHECK(fg_wheel_next(&wh) != UINT64_MAX);
	s.now = UINT64_MAX;
	fg_wheel_expire(&wh, &t, UINT64_MAX, on_expired, &s);
	CHECK_EQ(s.n, 10);
	CHECK_EQ(wh.count, 0);
	CHECK_EQ(fg_wheel_next(&wh), UINT64_MAX);
	fg_reqtable_fini(&t);
}

TEST_MAIN
