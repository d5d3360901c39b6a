/* stats — flow table of the per-worker statistics. */
#include "stats.h"

#include <string.h>

#define FLOW_OTHER 0u
#define FLOW_MASK (FG_FLOW_TABLE_SIZE - 1)

void fg_stats_init(struct fg_worker_stats *s)
{
	memset(s, 0, sizeof(*s));
	strcpy(s->flows[FLOW_OTHER].name, "(other)");
	s->flows[FLOW_OTHER].hash = 1; /* never matched: real hashes start probing at 1 */
}

uint32_t fg_stats_flow(struct fg_worker_stats *s, uint64_t hash, const char *name, uint16_t name_len)
{
	if (hash <= 1)
		hash += 2; /* keep 0 (free) and 1 (other) reserved */
	uint32_t i = (uint32_t)hash & FLOW_MASK;
	for (uint32_t probes = 0; probes < FG_FLOW_TABLE_SIZE; probes++, i = (i + 1) & FLOW_MASK) {
		if (i == FLOW_OTHER)
			continue;
		struct fg_flow_stats *f = &s->flows[i];
		if (f->hash == hash)
			return i;
		if (f->hash == 0) {
			if (s->flows_used >= FG_FLOW_TABLE_SIZE / 4 * 3)
				break;
			FG_STAT_ADD(s->flows_used, 1);
			size_t n = name_len < FG_FLOW_NAME_MAX - 1 ? name_len : FG_FLOW_NAME_MAX - 1;
			memcpy(f->name, name, n);
			f->name[n] = 0;
			__atomic_store_n(&f->hash, hash, __ATOMIC_RELEASE);
			return i;
		}
	}
	FG_STAT_ADD(s->flows_overflow, 1);
	return FLOW_OTHER;
}
