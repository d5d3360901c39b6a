/* SPDX-License-Identifier: Apache-2.0 */
/* ledger — a cluster member's share of a level's seats; see ledger.h. */
#include "ledger.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "maxmin.h"

int fg_ledger_targets(uint32_t limit, const double *demands, size_t n, uint32_t *targets)
{
	if (n == 0 || n > FG_MAXMIN_MAX_ITEMS)
		return -EINVAL;
	/* Whole seats: a member that needs part of a seat needs the seat —
	 * but a demand within FG_LEDGER_DEMAND_SLACK above a whole number is
	 * that number (a smoothed demand decays towards it from above and
	 * would otherwise hold one seat more for ever). */
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(demands[i]))
			return -EINVAL;
		double d = demands[i] <= 0 ? 0 : ceil(demands[i] - FG_LEDGER_DEMAND_SLACK);
		targets[i] = d >= (double)limit ? limit : (uint32_t)d;
		sum += targets[i];
	}
	if (sum <= limit) {
		/* Every demand met; the rest evenly, the first members one more. */
		uint64_t left = limit - sum, each = left / n, extra = left % n;
		for (size_t i = 0; i < n; i++)
			targets[i] += (uint32_t)(each + (i < extra));
		return 0;
	}
	struct fg_maxmin_item *items = malloc(n * sizeof(*items));
	double *alloc = malloc(n * sizeof(*alloc));
	uint64_t *whole = malloc(n * sizeof(*whole));
	int rc = -ENOMEM;
	if (items && alloc && whole) {
		for (size_t i = 0; i < n; i++)
			items[i] = (struct fg_maxmin_item){ .weight = 1, .lower = 0, .upper = targets[i] };
		rc = fg_maxmin_solve(limit, items, n, 0, alloc, NULL, NULL);
		if (!rc)
			rc = fg_maxmin_round(alloc, n, limit, whole);
		if (!rc)
			for (size_t i = 0; i < n; i++)
				targets[i] = (uint32_t)whole[i];
	}
	free(items);
	free(alloc);
	free(whole);
	return rc;
}

struct fg_ledger_decision fg_ledger_decide(const struct fg_ledger_level *l)
{
	struct fg_ledger_decision d = { .grant = l->grant, .guarded = false };
	uint32_t t = l->target, g = l->grant;
	d.local_limit = t < g ? t : g;
	if (t < g) {
		/* Give up only what the workers can no longer use. */
		uint32_t busy = l->may_use < g ? l->may_use : g;
		d.grant = busy > t ? busy : t;
		d.limit_after = t;
	} else if (t > g) {
		uint64_t room = l->limit > l->others ? l->limit - l->others : 0;
		uint32_t want = room < t ? (uint32_t)room : t;
		d.grant = want > g ? want : g;
		d.guarded = d.grant > g;
		d.limit_after = d.grant;
	} else {
		d.limit_after = t;
	}
	return d;
}
