/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the per-class work estimates (common/fq/classguess.c) and of
 * a queue set that takes the caller's price (queueset.h, caller_prices). */
#include <string.h>

#include "classguess.h"
#include "queueset.h"
#include "test.h"

#define MS 1000000ull

TEST(verb_classes)
{
	static const struct {
		const char *verb;
		enum fg_verb_class c;
	} cases[] = {
		{ "get", FG_VERB_GET },        { "list", FG_VERB_LIST },         { "watch", FG_VERB_WATCH },
		{ "create", FG_VERB_MUTATING }, { "update", FG_VERB_MUTATING },   { "patch", FG_VERB_MUTATING },
		{ "delete", FG_VERB_MUTATING }, { "deletecollection", FG_VERB_MUTATING },
		{ "proxy", FG_VERB_OTHER },    { "LIST", FG_VERB_OTHER },        { "", FG_VERB_OTHER },
		{ "lis", FG_VERB_OTHER },      { "lists", FG_VERB_OTHER },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CHECK_EQ(fg_verb_class_of(cases[i].verb, strlen(cases[i].verb)), cases[i].c);
	CHECK_EQ(fg_verb_class_of(NULL, 0), FG_VERB_OTHER);
	CHECK_STR(fg_verb_class_name(FG_VERB_MUTATING), "mutating");
	CHECK_STR(fg_verb_class_name(FG_VERB_CLASSES), "?");
}

/* The mean of the first answers, then an EWMA; the level's guess before
 * any; every value given out within the bounds; indexes past the table
 * ignored. */
TEST(learns_per_class_within_bounds)
{
	struct fg_classguess g;
	CHECK_EQ(fg_classguess_init(&g, 2, 1 * MS, 1000 * MS), 0);
	CHECK_EQ(g.n, 2u * FG_VERB_CLASSES);
	uint32_t list = fg_classguess_index(1, FG_VERB_LIST), get = fg_classguess_index(1, FG_VERB_GET);
	CHECK_EQ(fg_classguess_get(&g, list, 3 * MS), 3 * MS); /* nothing learned: the level's */
	fg_classguess_learn(&g, list, 100 * MS);
	fg_classguess_learn(&g, list, 300 * MS);
	CHECK_EQ(fg_classguess_get(&g, list, 3 * MS), 200 * MS);
	for (int i = 0; i < 6; i++)
		fg_classguess_learn(&g, list, 200 * MS);
	CHECK_EQ(fg_classguess_get(&g, list, 3 * MS), 200 * MS);
	fg_classguess_learn(&g, list, 1000 * MS); /* past the first 8: an eighth of the difference */
	CHECK_EQ(fg_classguess_get(&g, list, 3 * MS), 300 * MS);
	fg_classguess_learn(&g, get, 10 * MS);
	CHECK_EQ(fg_classguess_get(&g, get, 3 * MS), 10 * MS); /* classes apart */
	/* Bounds: a hanging class cannot price itself above max, an instant
	 * one below min, nor the level's guess either. */
	for (int i = 0; i < 200; i++)
		fg_classguess_learn(&g, list, 30000 * MS);
	CHECK_EQ(fg_classguess_get(&g, list, 3 * MS), 1000 * MS);
	fg_classguess_learn(&g, fg_classguess_index(0, FG_VERB_WATCH), 0);
	CHECK_EQ(fg_classguess_get(&g, fg_classguess_index(0, FG_VERB_WATCH), 3 * MS), 1 * MS);
	CHECK_EQ(fg_classguess_get(&g, fg_classguess_index(0, FG_VERB_OTHER), 0), 1 * MS);
	fg_classguess_learn(&g, g.n, 5 * MS); /* past the table: ignored */
	CHECK_EQ(fg_classguess_get(&g, g.n, 5000 * MS), 1000 * MS);
	fg_classguess_set_bounds(&g, 50 * MS, 10 * MS); /* max below min: min */
	CHECK_EQ(g.max_ns, 50 * MS);
	fg_classguess_fini(&g);
	CHECK(g.e == NULL);
	CHECK_EQ(fg_classguess_init(&g, 0, 1 * MS, 1000 * MS), 0); /* no schemas: a table of nothing */
	CHECK_EQ(fg_classguess_get(&g, 0, 7 * MS), 7 * MS);
	fg_classguess_fini(&g);
}

static void init_set(struct fg_queueset *qs, bool caller_prices)
{
	struct fg_qs_config c = { .mode = FG_QS_QUEUE, .queues = 8, .hand_size = 1, .queue_length_limit = 100,
				  .concurrency_limit = 1, .initial_guess_ns = 3 * MS, .caller_prices = caller_prices,
				  .seed = 5 };
	CHECK_EQ(fg_qs_init(qs, &c, 0), 0);
}

/* A set that takes the caller's price keeps it from arrival to completion
 * (a LIST priced at its class's 200 ms sorts after a get's 10 ms: its flow's
 * next request starts that much later in virtual time); one that does not
 * prices with its own guess whatever the caller says. */
TEST(caller_prices_are_kept)
{
	struct fg_queueset qs;
	init_set(&qs, true);
	struct fg_qs_req busy, list, get;
	CHECK_EQ(fg_qs_arrive_priced(&qs, &busy, FG_QS_NO_QUEUE, 1, 1, 0, 0, 0, 5 * MS, 0), FG_QS_EXECUTE);
	CHECK_EQ(busy.guess_ns, 5 * MS);
	CHECK_EQ(fg_qs_arrive_priced(&qs, &list, FG_QS_NO_QUEUE, 2, 1, 0, 0, 0, 200 * MS, 0), FG_QS_QUEUED);
	CHECK_EQ(fg_qs_arrive_priced(&qs, &get, FG_QS_NO_QUEUE, 3, 1, 0, 0, 0, 10 * MS, 0), FG_QS_QUEUED);
	CHECK_EQ(list.guess_ns, 200 * MS);
	CHECK_EQ(get.guess_ns, 10 * MS);
	CHECK_EQ(fg_qs_req_cost(&list), 20 * fg_qs_req_cost(&get));
	fg_qs_finish(&qs, &busy, 5 * MS);
	struct fg_qs_req *next = fg_qs_dispatch_next(&qs, 5 * MS);
	CHECK(next == &list || next == &get);
	CHECK_EQ(next->guess_ns, next == &list ? 200 * MS : 10 * MS); /* not re-priced at the head */
	struct fg_qs_req zero;
	fg_qs_finish(&qs, next, 6 * MS);
	CHECK(fg_qs_dispatch_next(&qs, 6 * MS) != NULL);
	CHECK_EQ(fg_qs_arrive_priced(&qs, &zero, FG_QS_NO_QUEUE, 4, 1, 0, 0, 0, 0, 7 * MS), FG_QS_QUEUED);
	CHECK(zero.guess_ns > 0); /* 0: the set's own guess */
	fg_qs_fini(&qs);

	init_set(&qs, false);
	CHECK_EQ(fg_qs_arrive_priced(&qs, &busy, FG_QS_NO_QUEUE, 1, 1, 0, 0, 0, 500 * MS, 0), FG_QS_EXECUTE);
	CHECK_EQ(busy.guess_ns, 3 * MS);
	fg_qs_fini(&qs);
}

TEST_MAIN
