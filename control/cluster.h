/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cluster — cluster mode's member thread (docs/scale-out.md): several
 * fairgate instances in front of one backend pool share each priority
 * level's seats through etcd.
 *
 * Every clusterPeriod the thread
 *   1. keeps its lease alive (a new one when it has none or it expired);
 *   2. reads every member's grant record (grant/<member>: seats per level)
 *      at one revision R, then every demand record (demand/<member>: its
 *      configuration generation and, per level, its limit and smoothed
 *      demand) — both under the member's lease, so a member that stops
 *      renewing it vanishes with its grants; nothing else under
 *      /fairgate/<cluster>/ is read;
 *   3. per non-exempt level: the targets (common/seats/ledger.h) over the members
 *      that run the level, and this member's decision (ledger.h); a level
 *      that left the configuration but still executes (retiring) gets no
 *      share, and its grant falls only as its seats end;
 *   4. one transaction: its demand and grant records, guarded by its own
 *      grant record as read and, when any grant rises, by "nothing under
 *      grant/ modified since R";
 *   5. publishes the local limits (caps, common/seats/clustershare.h) the
 *      allotter thread applies: after a successful write the decision's
 *      limit_after, else the lower of the caps in force and its
 *      local_limit.  The caps expire when the lease may have; the allotter
 *      thread then applies the fallback shares itself.
 * Demand: the allotter thread's samples (executing + waiting seats, and one
 * per rejected request, every 10 ms) averaged over the period, smoothed
 * upward at once and downward by FG_CLUSTER_DEMAND_DECAY per period.
 *
 * States: joining (from start until the first exchange succeeded: caps 0;
 * after one lease TTL without success, fallback), joined, fallback (past
 * the caps' deadline — the earlier of the last successful keep-alive's send
 * time + TTL and the last successful exchange + TTL, each less one period:
 * every level's cap is the fallback share, floor(limit / expected members),
 * at least 1, expected being clusterExpectedMembers or the most members
 * seen at once — and 0 for a member that never saw the cluster and was not
 * told), duplicate-member (a record of this member id under a lease of
 * another process: caps 0, nothing written).
 *
 * Invariants: the thread never blocks a worker or the allotter thread (it
 * only reads and writes clustershare.h's snapshots); no etcd call outlasts
 * the caps' deadline, which is checked at every quarter period; everything
 * read from etcd is bounded and checked (fg_cluster_parse_record) — a
 * malformed record of another member makes that member count as absent, an
 * unreadable grant makes the room unknown (no seat taken from it).
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
#include "etcd.h"

struct fg_expfmt;

/* Per period, how much of the smoothed demand above the new average stays. */
#define FG_CLUSTER_DEMAND_DECAY 0.7
/* Lines about malformed records in etcd: at most this many per window, the rest counted. */
#define FG_CLUSTER_BAD_RECORD_LOG_MAX 3u
#define FG_CLUSTER_BAD_RECORD_LOG_WINDOW_NS 60000000000ull

struct fg_cluster_opts {
	const char *etcd;       /* clusterEtcd */
	const char *name;       /* clusterName */
	const char *member;     /* clusterMember, already defaulted */
	struct fg_etcd_opts tls; /* TLS and authentication to etcd (etcd.h) */
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
