/* SPDX-License-Identifier: Apache-2.0 */
/* sharingview — a level's flows against their deserved shares; see sharingview.h. */
#include "sharingview.h"

#include <stdlib.h>
#include <string.h>

#include "maxmin.h"

const char *fg_sharing_policy_name(enum fg_fc_policy p)
{
	return p == FG_FC_POLICY_USAGE_BASED ? "UsageBased" : "MaxMin";
}

/* One flow over all workers. */
struct flow_row {
	uint32_t level;     /* index into the levels given */
	char name[FG_FLOW_NAME_MAX];
	uint32_t weight;
	uint64_t usage_us;
	int64_t seats, demand;
	double deserved;
};

static int by_level_then_name(const void *a, const void *b)
{
	const struct flow_row *x = a, *y = b;
	if (x->level != y->level)
		return x->level < y->level ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int busiest_first(const void *a, const void *b)
{
	const struct flow_row *x = a, *y = b;
	if (x->level != y->level)
		return x->level < y->level ? -1 : 1;
	if (x->seats != y->seats)
		return x->seats > y->seats ? -1 : 1;
	if (x->demand != y->demand)
		return x->demand > y->demand ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int level_of(const struct fg_sharing_level *levels, unsigned n, const char *name)
{
	for (unsigned i = 0; i < n; i++)
		if (!strcmp(levels[i].name, name))
			return (int)i;
	return -1;
}

/* Every tracked flow of the given levels, merged over workers (sorted by
 * level, then name); NULL on no memory. */
static struct flow_row *collect(struct fg_worker_stats *const *worker_stats, unsigned n_workers,
				const struct fg_sharing_level *levels, unsigned n_levels, size_t *n_out)
{
	size_t cap = 64, n = 0; /* grown as active flows are found: most entries are idle */
	struct flow_row *rows = malloc(sizeof(*rows) * cap);
	if (!rows)
		return NULL;
	for (unsigned w = 0; w < n_workers; w++) {
		struct fg_worker_stats *s = worker_stats[w];
		for (unsigned i = 0; i < FG_FLOW_TABLE_SIZE; i++) {
			struct fg_flow_snapshot f;
			if (!fg_stats_flow_read(s, i, &f) || f.level >= FG_MAX_LEVELS)
				continue;
			int l = level_of(levels, n_levels, s->levels[f.level].name);
			if (l < 0 || (f.waiting <= 0 && f.executing <= 0 && !f.usage_us))
				continue;
			if (n == cap) {
				struct flow_row *more = realloc(rows, sizeof(*rows) * cap * 2);
				if (!more)
					goto done; /* what was found so far */
				rows = more;
				cap *= 2;
			}
			struct flow_row *r = &rows[n++];
			memset(r, 0, sizeof(*r));
			r->level = (uint32_t)l;
			memcpy(r->name, f.name, sizeof(r->name));
			r->weight = f.weight ? f.weight : FG_FC_WEIGHT_ONE;
			r->usage_us = f.usage_us;
			r->seats = f.seats_executing > 0 ? f.seats_executing : 0;
			r->demand = r->seats + (f.seats_waiting > 0 ? f.seats_waiting : 0);
		}
	}
done:
	qsort(rows, n, sizeof(*rows), by_level_then_name);
	size_t m = 0;
	for (size_t i = 0; i < n; i++) { /* a flow's requests may be at several workers */
		if (m && rows[m - 1].level == rows[i].level && !strcmp(rows[m - 1].name, rows[i].name)) {
			rows[m - 1].usage_us += rows[i].usage_us; /* each worker keeps the usage it saw */
			rows[m - 1].seats += rows[i].seats;
			rows[m - 1].demand += rows[i].demand;
			continue;
		}
		rows[m++] = rows[i];
	}
	*n_out = m;
	return rows;
}

/* Deserved shares of one level's flows rows[0..n): weighted max-min of its limit. */
static void deserve(struct flow_row *rows, size_t n, uint32_t limit)
{
	struct fg_maxmin_item *items = malloc(sizeof(*items) * (n ? n : 1));
	double *alloc = malloc(sizeof(*alloc) * (n ? n : 1));
	if (items && alloc) {
		for (size_t i = 0; i < n; i++)
			items[i] = (struct fg_maxmin_item){ .weight = rows[i].weight / (double)FG_FC_WEIGHT_ONE,
							    .upper = (double)rows[i].demand };
		if (fg_maxmin_solve(limit, items, n, FG_MAXMIN_SLACK, alloc, NULL, NULL) == 0)
			for (size_t i = 0; i < n; i++)
				rows[i].deserved = alloc[i];
	}
	free(items);
	free(alloc);
}

json_t *fg_sharing_json(struct fg_worker_stats *const *worker_stats, unsigned n_workers,
			const struct fg_sharing_level *levels, unsigned n_levels, unsigned top)
{
	json_t *out = json_object();
	size_t n = 0;
	struct flow_row *rows = collect(worker_stats, n_workers, levels, n_levels, &n);
	for (unsigned l = 0; l < n_levels; l++) {
		size_t first = 0, count = 0;
		while (rows && first < n && rows[first].level < l)
			first++;
		while (rows && first + count < n && rows[first + count].level == l)
			count++;
		if (count)
			deserve(rows + first, count, levels[l].limit);
		if (count)
			qsort(rows + first, count, sizeof(*rows), busiest_first);
		json_t *flows = json_array();
		for (size_t i = first; i < first + count && i - first < top; i++) {
			const struct flow_row *r = &rows[i];
			json_t *usage = levels[l].policy == FG_FC_POLICY_USAGE_BASED ? json_real((double)r->usage_us / 1e6)
										: json_null();
			json_array_append_new(flows, json_pack("{s:s, s:f, s:o, s:I, s:I, s:f}", "flow", r->name, "weight",
							       r->weight / (double)FG_FC_WEIGHT_ONE, "usage", usage,
							       "seatsInUse", (json_int_t)r->seats, "demand",
							       (json_int_t)r->demand, "deserved", r->deserved));
		}
		json_object_set_new(out, levels[l].name,
				    json_pack("{s:s, s:b, s:I, s:o}", "policy", fg_sharing_policy_name(levels[l].policy),
					      "weighted", levels[l].weighted, "activeFlows", (json_int_t)count, "flows", flows));
	}
	free(rows);
	return out;
}
