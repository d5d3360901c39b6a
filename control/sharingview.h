/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sharingview — how each priority level shares its seats between flows now,
 * for `status`, `get fairsharings -o wide` and /metrics: the level's fair-sharing
 * policy, and its busiest flows (by seats in use, summed over workers) with
 * their weight, decayed usage (UsageBased), seats in use, demand (seats
 * executing + waiting) and deserved share — the weighted max-min allocation
 * of the level's current limit over every flow's demand (common/seats/maxmin,
 * Volcano's "deserved"), so a flow above it is served beyond its share and
 * one below it is short.
 *
 * Reads the workers' flow statistics (relaxed, as every reader does); only
 * flows the statistics table tracks are seen (a flow folded into "(other)"
 * is not).
 *
 * Thread contract: any thread that may read the workers' statistics (the
 * control and HTTP threads); allocates.
 */
#ifndef FG_SHARINGVIEW_H
#define FG_SHARINGVIEW_H

#include <jansson.h>

#include "flowcontrol.h"
#include "stats.h"

#define FG_SHARING_TOP_FLOWS 10

/* A level as the published configuration has it, and its limit now. */
struct fg_sharing_level {
	char name[FG_LEVEL_NAME_MAX];
	enum fg_fc_policy policy;
	bool weighted;
	uint32_t limit; /* current seats (borrowing included) */
};

const char *fg_sharing_policy_name(enum fg_fc_policy p);

/*
 * {"<level>": {"policy", "weighted", "flows": [{"flow", "weight", "usage",
 *   "seatsInUse", "demand", "deserved"}...]}} for the given levels, the
 * flows sorted by seats in use (then demand, then name), at most `top` each.
 * usage is seat-seconds per sampling interval, null on MaxMin levels.
 */
json_t *fg_sharing_json(struct fg_worker_stats *const *worker_stats, unsigned n_workers,
			const struct fg_sharing_level *levels, unsigned n_levels, unsigned top);

#endif
