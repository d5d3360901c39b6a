/* SPDX-License-Identifier: Apache-2.0 */
/* apfstats — see apfstats.h. */
#include "apfstats.h"

#include <stdio.h>
#include <string.h>

#include <xxhash.h>

#define MS 1000000ull
#define S 1000000000ull

/* Kubernetes' buckets (k8s.io/apiserver/pkg/util/flowcontrol/metrics). */
const uint64_t fg_apf_duration_bounds_ns[FG_APF_WAIT_BOUNDS] = {
	0, 5 * MS, 20 * MS, 50 * MS, 100 * MS, 200 * MS, 500 * MS, 1 * S, 2 * S, 5 * S, 10 * S, 15 * S, 30 * S,
};
const uint32_t fg_apf_queue_length_bounds[FG_APF_COUNT_BOUNDS] = { 0, 10, 25, 50, 100, 250, 500, 1000 };
const uint32_t fg_apf_seats_bounds[FG_APF_COUNT_BOUNDS] = { 1, 2, 4, 8, 16, 32, 64, 100 };

static uint64_t key_of(const char *level, const char *schema)
{
	/* The level's NUL keeps ("ab","c") apart from ("a","bc"). */
	return XXH64(schema, strlen(schema), XXH64(level, strlen(level) + 1, 0));
}

static void name(struct fg_apf_pair *p, const char *level, const char *schema)
{
	snprintf(p->level, sizeof(p->level), "%s", level);
	snprintf(p->schema, sizeof(p->schema), "%s", schema);
	p->key = key_of(level, schema);
}

void fg_apf_init(struct fg_apf_stats *s)
{
	memset(s, 0, sizeof(*s));
	name(&s->pairs[0], FG_APF_OTHER, FG_APF_OTHER);
	s->n_used = 1;
	__atomic_store_n(&s->pairs[0].used, 1, __ATOMIC_RELEASE);
}

uint16_t fg_apf_pair(struct fg_apf_stats *s, const char *level, const char *schema)
{
	uint64_t key = key_of(level, schema);
	for (uint32_t i = 1; i < s->n_used; i++)
		if (s->pairs[i].key == key && !strncmp(s->pairs[i].level, level, FG_APF_NAME_MAX - 1) &&
		    !strncmp(s->pairs[i].schema, schema, FG_APF_NAME_MAX - 1))
			return (uint16_t)i;
	if (s->n_used == FG_APF_PAIRS)
		return 0;
	uint16_t i = (uint16_t)s->n_used++;
	name(&s->pairs[i], level, schema);
	__atomic_store_n(&s->pairs[i].used, 1, __ATOMIC_RELEASE);
	return i;
}

uint64_t fg_apf_hist_count(const struct fg_apf_pair *p, enum fg_apf_hist h)
{
	uint64_t n = 0;
	for (unsigned i = 0; i <= FG_APF_WAIT_BOUNDS; i++)
		n += __atomic_load_n(&p->bucket[i][h], __ATOMIC_RELAXED);
	return n;
}
