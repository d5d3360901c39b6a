/* SPDX-License-Identifier: Apache-2.0 */
/* stats — flow table of the per-worker statistics. */
#include "stats.h"

#include <stdio.h>
#include <string.h>

#define FLOW_OTHER 0u
#define FLOW_MASK (FG_FLOW_TABLE_SIZE - 1)
#define FG_FLOW_MAX_PROBES 16u

void fg_stats_init(struct fg_worker_stats *s)
{
	memset(s, 0, sizeof(*s));
	strcpy(s->flows[FLOW_OTHER].name, "(other)");
	s->flows[FLOW_OTHER].hash = s->flow_keys[FLOW_OTHER] = 1; /* never matched: real hashes are >= 2 */
}

uint32_t fg_stats_flow(struct fg_worker_stats *s, uint64_t hash, uint16_t level, const char *schema,
		       const char *dist, uint16_t dist_len)
{
	if (hash <= 1)
		hash += 2; /* keep 0 (free) and 1 (other) reserved */
	uint32_t i = (uint32_t)hash & FLOW_MASK;
	/* Bounded probing: a full table costs O(1), and later flows share "(other)". */
	for (uint32_t probes = 0; probes < FG_FLOW_MAX_PROBES; probes++, i = (i + 1) & FLOW_MASK) {
		uint64_t key = s->flow_keys[i];
		if (key == hash) {
			struct fg_flow_stats *f = &s->flows[i];
			if (f->level != level) /* its schema moved to another level */
				__atomic_store_n(&f->level, level, __ATOMIC_RELAXED);
			return i;
		}
		if (key == 0) {
			struct fg_flow_stats *f = &s->flows[i];
			if (s->flows_used >= FG_FLOW_TABLE_SIZE / 4 * 3)
				break;
			FG_STAT_ADD(s->flows_used, 1);
			if (dist_len)
				snprintf(f->name, sizeof(f->name), "%s/%.*s", schema, (int)dist_len, dist);
			else
				snprintf(f->name, sizeof(f->name), "%s", schema);
			f->level = level;
			s->flow_keys[i] = hash;
			__atomic_store_n(&f->hash, hash, __ATOMIC_RELEASE);
			return i;
		}
	}
	FG_STAT_ADD(s->flows_overflow, 1);
	return FLOW_OTHER;
}
