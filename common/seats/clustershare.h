/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clustershare — what passes between the cluster thread (control/cluster.h,
 * which talks to etcd) and the allotter thread (which owns the levels'
 * current limits, common/runtime/borrower.h) in cluster mode (docs/scale-out.md).
 *
 * Two snapshots, each with one writer and a sequence lock (seqlock.h):
 *   - local: the allotter thread's per-level figures at every demand sample
 *     (FG_BORROWING_SAMPLE_NS): the level's cluster-wide limit (its nominal
 *     limit), seats executing, demand (executing + waiting), and may_use —
 *     the most seats this instance's workers could be using or could start
 *     using under the limits already handed out:
 *         max(the limit in force, sum over workers of max(what the worker
 *             applies, its pending grant, its seats in use)),
 *     so a grant no larger than may_use was never given up while in use;
 *     the demand counts each request the level rejected since the previous
 *     sample as one more seat, so that unmet demand shows where nothing can
 *     wait (a level that rejects instead of queuing, full queues, a member
 *     with no seats yet);
 *   - caps: the cluster thread's local limit per level, by level name.  The
 *     allotter thread applies them as the levels' current limits (a level
 *     without a cap: 0 seats) at its next step, and the fallback shares
 *     instead once the caps expire (the cluster thread did not renew them
 *     in time); borrowing between levels does not move limits in cluster
 *     mode.
 * Levels no longer configured but still executing at a worker are listed
 * after the configuration's, as retiring, so that their grants are kept
 * until their seats are free.
 *
 * Invariant: a level's limit in force is its cap, or lower while the
 * allotter thread has not yet seen a lowered one — never higher than the
 * cap the cluster thread last published and the one before it (may_use
 * covers the lag).
 *
 * Thread contract: `local` is written by the allotter thread only, `caps`
 * by the cluster thread only; both read by any thread (fg_seq_read).
 */
#ifndef FG_CLUSTERSHARE_H
#define FG_CLUSTERSHARE_H

#include <stdbool.h>
#include <stdint.h>

#include "defs.h"

struct fg_cluster_local_level {
	char name[FG_LEVEL_NAME_MAX];
	bool exempt;            /* not shared: no limit */
	bool retiring;          /* no longer configured, still executing at a worker: only executing and
				 * may_use (its seats in use) mean anything; its grant must outlive them */
	uint32_t limit;         /* the cluster-wide limit: the level's nominal limit */
	uint32_t in_force;      /* the level's current limit as published to the workers */
	uint32_t executing;     /* seats in use, summed over workers */
	uint32_t may_use;       /* see above */
	double demand;          /* seats executing + waiting, + requests rejected since the last sample */
};

struct fg_cluster_local {
	uint64_t seq;
	uint64_t generation;    /* the configuration the levels are from (0: none yet) */
	uint64_t sampled_ns;    /* when (the allotter thread's clock) */
	uint64_t backend_timeout_ns; /* the configuration's backendTimeout: how long a request may run */
	uint32_t n;             /* the configuration's levels, then the retiring ones */
	struct fg_cluster_local_level levels[FG_MAX_LEVELS];
};

struct fg_cluster_caps {
	uint64_t seq;
	/* The caps hold until then (fg_now_ns clock; 0: no end): the time the
	 * member's lease may expire.  Past it the allotter thread applies each
	 * level's fallback instead, should the cluster thread be late. */
	uint64_t expires_ns;
	uint32_t n;
	struct fg_cluster_cap {
		char name[FG_LEVEL_NAME_MAX];
		uint32_t cap;
		uint32_t fallback;  /* the level's fallback share */
	} levels[FG_MAX_LEVELS];
};

struct fg_clustershare {
	struct fg_cluster_local local;
	struct fg_cluster_caps caps;
	uint64_t caps_applied_seq; /* the allotter thread's: the caps it last applied */
	bool caps_expired;         /* the allotter thread's: it applied the fallbacks of expired caps */
	/* The allotter thread's: each worker's level rejections at the last
	 * sample, by the worker's stats slot. */
	uint64_t rejected_seen[FG_MAX_WORKER_CORES][FG_MAX_LEVELS];
};

/* The cap of the level named name in caps (NULL when it has none). */
const struct fg_cluster_cap *fg_cluster_cap_of(const struct fg_cluster_caps *caps, const char *name);

#endif
