/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the per-worker flow statistics table (common/stats.c). */
#include <stdlib.h>

#include "defs.h"
#include "stats.h"
#include "test.h"

static struct fg_worker_stats *new_stats(void)
{
	struct fg_worker_stats *s = malloc(sizeof(*s));
	fg_stats_init(s);
	return s;
}

/* Every flow keeps its entry; past 3/4 of the table, new flows share
 * "(other)" and are counted; the reserved hashes 0 and 1 are real flows too. */
TEST(flows_keep_their_entry_and_overflow_to_other)
{
	struct fg_worker_stats *s = new_stats();
	enum { FLOWS = 4 * FG_FLOW_TABLE_SIZE };
	static uint32_t idx[FLOWS];
	uint64_t x = 0x243f6a8885a308d3ull;
	static uint64_t hashes[FLOWS];
	for (unsigned f = 0; f < FLOWS; f++) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		hashes[f] = f < 2 ? f : x; /* hashes 0 and 1 are remapped, not lost */
		idx[f] = fg_stats_flow(s, hashes[f], 3, "schema", "user", 4);
		CHECK(idx[f] < FG_FLOW_TABLE_SIZE);
	}
	unsigned named = 0, other = 0;
	for (unsigned f = 0; f < FLOWS; f++) {
		CHECK_EQ(fg_stats_flow(s, hashes[f], 3, "schema", "user", 4), idx[f]); /* found again */
		if (idx[f] == 0)
			other++;
		else
			named++;
	}
	CHECK(s->flows_used <= FG_FLOW_TABLE_SIZE / 4 * 3);
	CHECK(s->flows_used >= FG_FLOW_TABLE_SIZE / 2); /* bounded probing still fills most of it */
	CHECK_EQ(named, s->flows_used);
	CHECK_EQ(s->flows_overflow, 2 * other);
	CHECK(!strcmp(s->flows[0].name, "(other)"));
	CHECK(!strcmp(s->flows[idx[0]].name, "schema/user"));
	CHECK_EQ(s->flows[idx[0]].level, 3);
	CHECK(idx[0] != 0 && idx[1] != 0 && idx[0] != idx[1]);
	free(s);
}

/* A flow whose schema moved to another level follows it. */
TEST(a_flow_follows_its_level)
{
	struct fg_worker_stats *s = new_stats();
	uint32_t i = fg_stats_flow(s, 12345, 1, "exempt", "", 0);
	CHECK(!strcmp(s->flows[i].name, "exempt"));
	CHECK_EQ(fg_stats_flow(s, 12345, 4, "exempt", "", 0), i);
	CHECK_EQ(s->flows[i].level, 4);
	free(s);
}

TEST_MAIN
