/* SPDX-License-Identifier: Apache-2.0 */
/*
 * borrower — borrowing between priority levels in the running daemon: the
 * levels' seat demand sampled from the workers' gauges into the borrowing
 * integrators (common/seats/borrowing.h), a borrowing round every borrowingPeriod,
 * and each level's new current limit published to the configuration in
 * force (fg_config_set_level_limit: one worker follows it at its next poll,
 * several through the board's level limits and the allotter's grants).
 *
 * Demand: every FG_BORROWING_SAMPLE_NS the sum over workers of a level's
 * seats_in_use + seats_waiting (struct fg_level_stats, matched by level
 * name).  Kubernetes integrates every change; sampling sees a step function
 * at that resolution, which keeps the fast path free of any new work.
 *
 * Configuration changes (a new generation): levels are matched by name;
 * one that stays keeps its demand integrator, statistics and current limit
 * (clamped to its new bounds), a new one starts as fg_borrowing_level_init
 * says (nominal - lendable / 2; fg_config_keep_level_limits started the
 * workers there too); then a round runs at once (Kubernetes also adjusts
 * at the end of every configuration digest) and its limits apply.
 *
 * Invariants: a published non-exempt limit is within the level's [min, max]
 * once the allocator's case ran, and always >= min; limits are written only
 * to the configuration they were computed for (no index is shared between
 * generations).
 *
 * Cluster mode (b->cluster set, common/seats/clustershare.h): the levels' limits
 * are the cluster's caps instead of borrowing's (rounds still run and keep
 * the demand statistics that status shows); each sample also publishes the
 * levels' local figures for the cluster thread, and caps that changed are
 * applied at the next step.
 *
 * Thread contract: one thread steps a borrower (the daemon's allotter
 * thread, RCU online, with cfg from rcu_dereference; tests and the
 * benchmark call it directly); time is an argument.  Its view is read by
 * any thread with fg_borrower_read (a sequence lock: a consistent copy, the
 * writer never waits).
 */
#ifndef FG_BORROWER_H
#define FG_BORROWER_H

#include <stdbool.h>
#include <stdint.h>

#include "borrowing.h"
#include "clustershare.h"
#include "config.h"
#include "defs.h"
#include "stats.h"

/* One level as status and metrics show it. */
struct fg_borrower_level_view {
	char name[FG_LEVEL_NAME_MAX];
	bool exempt;
	uint32_t nominal, min, max; /* the derived limits (docs/apf-facts.md §1.3) */
	uint32_t current;           /* the current limit in force */
	uint32_t lower;             /* the last round's minCurrentCL */
	double target;              /* the last round's target */
	double demand;              /* the latest sample: seats in use + waiting */
	struct fg_borrowing_stats stats;
};

struct fg_borrower_view {
	uint64_t seq;               /* odd while the writer is in the middle (fg_borrower_read) */
	uint64_t generation;        /* the configuration the levels follow */
	uint64_t period_ns;         /* borrowingPeriod in force */
	uint64_t rounds, backstops; /* rounds run; of which the allocator failed */
	uint64_t round_ns;          /* how long the last round took (its CPU time on the stepping thread) */
	uint64_t last_round_ns;     /* when (the stepping thread's clock) */
	int64_t remaining;          /* the last round's R */
	uint32_t kase;              /* enum fg_borrowing_case; 0: no round yet */
	double fair_frac;           /* apiserver_flowcontrol_seat_fair_frac */
	uint32_t n;
	struct fg_borrower_level_view levels[FG_MAX_LEVELS];
};

struct fg_borrower {
	struct fg_clustershare *cluster; /* cluster mode: the caps it applies; NULL: borrowing's limits */
	uint64_t generation;        /* 0: no configuration followed yet */
	uint32_t n, nominal_sum;
	uint64_t next_sample_ns, last_round_ns;
	struct fg_borrowing_level levels[FG_MAX_LEVELS];
	char names[FG_MAX_LEVELS][FG_LEVEL_NAME_MAX];
	double demand[FG_MAX_LEVELS];
	/* Per worker: the stats slot of each configuration level (FG_MAX_LEVELS:
	 * none), for the worker generation it was found for. */
	uint64_t slot_gen[FG_MAX_WORKER_CORES];
	uint16_t slot[FG_MAX_WORKER_CORES][FG_MAX_LEVELS];
	struct fg_borrower_view view;
	struct fg_borrower_prev {   /* scratch: the levels before a new generation */
		uint32_t n;
		struct fg_borrowing_level levels[FG_MAX_LEVELS];
		char names[FG_MAX_LEVELS][FG_LEVEL_NAME_MAX];
		double demand[FG_MAX_LEVELS];
	} prev;
	struct fg_cluster_caps caps_scratch; /* cluster mode: the caps being applied */
};

/* A borrower with nothing followed (NULL: out of memory). */
struct fg_borrower *fg_borrower_new(void);
void fg_borrower_free(struct fg_borrower *b);

/*
 * One step at now: follow cfg's generation if it is new (and run a round),
 * sample the demand when FG_BORROWING_SAMPLE_NS passed, run a round when
 * cfg->borrowing_period_ns passed since the last.  Returns whether a round
 * ran (and so limits may have moved).
 */
bool fg_borrower_step(struct fg_borrower *b, const struct fg_config *cfg, struct fg_worker_stats *const *ws,
		      unsigned n_workers, uint64_t now);

/* A round now, whatever the period (the benchmark and tests). */
int fg_borrower_round(struct fg_borrower *b, const struct fg_config *cfg, uint64_t now);

/* How long the stepping thread may sleep: until the next sample. */
uint64_t fg_borrower_nap_ns(const struct fg_borrower *b, uint64_t now);

/* A consistent copy of the view (any thread); false if the writer kept it
 * busy for every one of a few tries (out then holds a torn copy). */
bool fg_borrower_read(const struct fg_borrower_view *v, struct fg_borrower_view *out);

#endif
