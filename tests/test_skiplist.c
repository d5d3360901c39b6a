/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the skip list (common/fq/skiplist.c) against a brute-force model. */
#include <stdlib.h>

#include "skiplist.h"
#include "test.h"

#define N 2000

/* The list's first item and count against the model's (the smallest
 * (key, tie) of the items in). */
static void check_against_model(const struct fg_skiplist *s, const uint64_t *key, const uint64_t *tie, const int *in)
{
	uint32_t best = FG_SKIP_NIL, count = 0;
	for (uint32_t j = 0; j < N; j++)
		if (in[j]) {
			count++;
			if (best == FG_SKIP_NIL || fg_skip_before(key[j], tie[j], key[best], tie[best]))
				best = j;
		}
	CHECK_EQ(fg_skiplist_first(s), best);
	CHECK_EQ(s->count, count);
}

TEST(random_operations_match_a_model)
{
	struct fg_skiplist s;
	CHECK_EQ(fg_skiplist_init(&s, N, 42), 0);
	static uint64_t key[N], tie[N];
	static int in[N];
	unsigned seed = 9;
	uint64_t t = 0;
	for (int step = 0; step < 200000; step++) {
		uint32_t i = (uint32_t)rand_r(&seed) % N;
		if (in[i]) {
			fg_skiplist_remove(&s, i);
			in[i] = 0;
		} else {
			key[i] = step % 2 ? (uint64_t)(rand_r(&seed) % 50) /* many equal keys: ties matter */
					 : (uint64_t)rand_r(&seed) * 1000;
			tie[i] = ++t;
			fg_skiplist_insert(&s, i, key[i], tie[i]);
			in[i] = 1;
		}
		if (step % 97 == 0)
			check_against_model(&s, key, tie, in);
	}
	/* Walking level 0 gives sorted order. */
	uint32_t prev = FG_SKIP_NIL;
	for (uint32_t x = fg_skiplist_first(&s); x != FG_SKIP_NIL; x = fg_skiplist_next(&s, x)) {
		if (prev != FG_SKIP_NIL)
			CHECK(fg_skip_before(key[prev], tie[prev], key[x], tie[x]));
		prev = x;
	}
	fg_skiplist_fini(&s);
}

TEST(wrapping_keys_order_by_signed_difference)
{
	struct fg_skiplist s;
	fg_skiplist_init(&s, 4, 1);
	fg_skiplist_insert(&s, 0, UINT64_MAX - 10, 1); /* just before the wrap */
	fg_skiplist_insert(&s, 1, 5, 2);               /* just after it: later */
	fg_skiplist_insert(&s, 2, UINT64_MAX - 20, 3);
	CHECK_EQ(fg_skiplist_first(&s), 2);
	fg_skiplist_remove(&s, 2);
	CHECK_EQ(fg_skiplist_first(&s), 0);
	fg_skiplist_remove(&s, 0);
	CHECK_EQ(fg_skiplist_first(&s), 1);
	fg_skiplist_remove(&s, 1);
	CHECK_EQ(fg_skiplist_first(&s), FG_SKIP_NIL);
	fg_skiplist_fini(&s);
}

/* Several lists in one node array: the first item is the smallest of all
 * lists, each list stays sorted, lists come into use as they are given. */
TEST(several_lists_merge_to_one_order)
{
	struct fg_skiplist s;
	CHECK_EQ(fg_skiplist_init(&s, N, 7), 0);
	CHECK_EQ(fg_skiplist_init_lists(&s, N, FG_SKIP_MAX_LISTS + 1, 7), -22);
	static uint64_t key[N], tie[N];
	static int in[N], list_of[N];
	unsigned seed = 5;
	uint64_t t = 0;
	for (int step = 0; step < 100000; step++) {
		uint32_t i = (uint32_t)rand_r(&seed) % N;
		if (in[i]) {
			fg_skiplist_remove(&s, i);
			in[i] = 0;
			continue;
		}
		unsigned l = (unsigned)rand_r(&seed) % FG_SKIP_MAX_LISTS;
		fg_skiplist_use_lists(&s, l + 1);
		key[i] = (uint64_t)(rand_r(&seed) % 1000);
		tie[i] = ++t;
		list_of[i] = (int)l;
		fg_skiplist_insert_in(&s, l, i, key[i], tie[i]);
		in[i] = 1;
		if (step % 89 == 0)
			check_against_model(&s, key, tie, in);
	}
	uint32_t total = 0;
	for (unsigned l = 0; l < s.n_lists; l++) {
		uint32_t prev = FG_SKIP_NIL;
		for (uint32_t x = fg_skiplist_first_in(&s, l); x != FG_SKIP_NIL; x = fg_skiplist_next(&s, x), total++) {
			CHECK_EQ(list_of[x], (int)l);
			if (prev != FG_SKIP_NIL)
				CHECK(fg_skip_before(key[prev], tie[prev], key[x], tie[x]));
			prev = x;
		}
	}
	CHECK_EQ(total, s.count);
	fg_skiplist_fini(&s);
}

TEST_MAIN
