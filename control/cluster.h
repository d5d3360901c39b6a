/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cluster — cluster mode's member thread (docs/scale-out.md): several
 * fairgate instances in front of one backend pool share each priority
 * level's seats through etcd.
 *
 * Every clusterPeriod the thread
 *   1. keeps its lease alive (a new one when it has none or it expired);
 *   2. reads every key under /fairgate/<cluster>/ at one revision: each
 *      member's demand record (demand/<member>: its configuration
 *      generation and, per level, its limit and smoothed demand) and grant
 *      record (grant/<member>: seats per level), both under the member's
 *      lease, so a member that stops renewing it vanishes with its grants;
 *   3. per non-exempt level: the targets (common/ledger.h) over the members
 *      that run the level, and this member's decision (ledger.h);
 *   4. one transaction: its demand record and, when a grant changes, its
 *      grant record — guarded (nothing under grant/ modified since the
 *      revision read) when any grant rises;
 *   5. publishes the local limits (caps, common/clustershare.h) the
 *      allotter thread applies: after a successful write the decision's
 *      limit_after, else its local_limit.
 * Demand: the allotter thread's samples (executing + waiting seats, every
 * 10 ms) averaged over the period, smoothed upward at once and downward by
 * FG_CLUSTER_DEMAND_DECAY per period (a member's share does not collapse
 * between two bursts).
 *
 * States: joining (from start until the first exchange succeeded: caps 0;
 * after one lease TTL without success, fallback), joined, fallback (the
 * lease would have expired: from the send time of the last successful
 * keep-alive plus its TTL, less one period; every level's cap is then the
 * fallback share, floor(limit / expected members), at least 1 and at most
 * the limit, expected being clusterExpectedMembers or the most members seen
 * at once).  A member back from fallback starts again with a new lease and
 * no grant.
 *
 * Invariants: the thread never blocks a worker or the allotter thread (it
 * only reads and writes clustershare.h's snapshots); every etcd call is
 * bounded in time (max(period, 250 ms), at most a third of the TTL); a
 * member's records and everything read from etcd are bounded and checked
 * (fg_cluster_parse_record) — a malformed record of another member makes
 * that member count as absent, never stops this one.
 *
 * Thread contract: fg_cluster_start/stop from the daemon's main thread;
 * fg_cluster_status_json and fg_cluster_metrics from any thread (a mutex
 * around the thread's view, never held during I/O).
 */
#ifndef FG_CLUSTER_H
#define FG_CLUSTER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "clustershare.h"
#include "defs.h"

struct fg_expfmt;

/* Per period, how much of the smoothed demand above the new average stays. */
#define FG_CLUSTER_DEMAND_DECAY 0.7

struct fg_cluster_opts {
	const char *etcd;       /* clusterEtcd */
	const char *name;       /* clusterName */
	const char *member;     /* clusterMember, already defaulted */
	uint64_t period_ns, lease_ttl_ns;
	uint32_t expected_members; /* 0: the most seen at once */
};

struct fg_cluster;

/* Start the member thread (share: the snapshots it exchanges with the
 * allotter thread).  NULL with the reason in why. */
struct fg_cluster *fg_cluster_start(const struct fg_cluster_opts *o, struct fg_clustershare *share, char *why,
				    size_t whylen);
/* Stop: the member's grants are kept as they are, its lease renewed, until
 * hold_until_ns (fg_now_ns clock; 0 or past: not at all) — requests cut
 * short at shutdown may run at the backends until then — and then the
 * lease is given back, so the grants are freed at once. */
void fg_cluster_stop(struct fg_cluster *c, uint64_t hold_until_ns);

/* status's "cluster" object ({"enabled": false} for NULL). */
json_t *fg_cluster_status_json(struct fg_cluster *c);
/* The fairgate_cluster_* families (nothing for NULL). */
void fg_cluster_metrics(struct fg_cluster *c, struct fg_expfmt *e);

/* One member's record as published (bounded; also the fuzz target's entry). */
struct fg_cluster_record_level {
	char name[FG_LEVEL_NAME_MAX];
	uint32_t limit;   /* demand records: the member's limit for the level */
	double demand;    /* demand records: seats */
	uint32_t grant;   /* grant records: seats */
};

struct fg_cluster_record {
	uint64_t generation;
	uint32_t n;                              /* at most FG_MAX_LEVELS */
	struct fg_cluster_record_level *levels;  /* n of them (fg_cluster_record_free) */
};

/* Parse a demand record ({"generation": N, "levels": {"<level>": {"limit":
 * L, "demand": D}}}) or, with grant, a grant record ({"levels": {"<level>":
 * seats}}).  0 or -EINVAL (-ENOMEM) with the reason in why; out is freed by
 * the caller either way. */
int fg_cluster_parse_record(const char *text, size_t len, bool grant, struct fg_cluster_record *out, char *why,
			    size_t whylen);
void fg_cluster_record_free(struct fg_cluster_record *r);

#endif
