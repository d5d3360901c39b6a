/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config — the compiled, immutable dispatch configuration the workers read:
 * its one home (built from the settings and the compiled objects, published,
 * the levels' current limits, freed).
 *
 * The control thread builds one fg_config, publishes it with liburcu QSBR
 * (rcu_xchg_pointer) and frees the previous one after a grace period, so a
 * worker that took a pointer with rcu_dereference at the top of its loop
 * iteration may use it until its next quiescent state.  Nothing in it changes
 * after publication, except the seat board it points to (common/seats/seatshare.h:
 * shared, single-writer fields with their own protocol) and the levels'
 * current limits (struct fg_level_limits), which live and die with their
 * configuration.
 */
#ifndef FG_CONFIG_H
#define FG_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <urcu-qsbr.h>

#include "defs.h"
#include "settings.h"
#include "trust.h"

struct fg_fc_config;
struct fg_board;

/*
 * The levels' current limits (borrowing between levels, common/runtime/borrower.h),
 * one per configuration level in its order: with one worker, the second
 * mutable part of a configuration.  Written by the thread that runs the
 * borrowing rounds (relaxed stores of current[], then seq with release); the
 * worker applies them when it sees seq change (acquire).  With several
 * workers the board's level limits carry them (seatshare.h).
 */
struct fg_level_limits {
	uint32_t seq;
	uint32_t n;
	uint32_t current[];
};

struct fg_config {
	struct rcu_head rcu;
	uint64_t generation;
	uint32_t seat_limit;         /* serverConcurrencyLimit, split over the levels */
	bool adaptive;               /* serverConcurrencyLimitMode: Adaptive */
	uint32_t seat_limit_min, seat_limit_max; /* Adaptive: bounds (max in force: never 0) */
	bool work_per_class;         /* workEstimates: PerClass */
	uint64_t work_estimate_min_ns, work_estimate_max_ns;
	struct fg_fc_config *fc;     /* schemas and levels; owned, freed with this config */
	uint64_t queue_wait_ns;
	uint64_t backend_timeout_ns;
	uint32_t retry_after_ms;
	uint32_t eject_after;
	uint64_t eject_ns, max_eject_ns;
	uint32_t n_backends;
	struct fg_backend_cfg backends[FG_MAX_BACKENDS];
	unsigned n_workers;
	uint64_t allotment_period_ns;
	uint64_t borrowing_period_ns;  /* borrowingPeriod */
	struct fg_board *board;      /* several workers: queue loads and seat shares; else NULL */
	struct fg_level_limits *limits; /* one worker: the levels' current limits; else NULL */
	uint64_t max_extra_latency_ns;
	bool flowcontrol_metrics;    /* workers count per (level, schema) (apfstats.h); fixed at start */
	bool metrics_flow_labels;    /* /metrics names the busiest flows (settings metricsFlowLabels) */
	struct fg_trust trust;       /* who is believed, and who must show a cookie */
	uint8_t answer_load;         /* enum fg_answer_load_mode: whose answers carry the LOAD attribute */
	bool cluster;                /* cluster mode: limits are the cluster's caps (clustershare.h); fixed at start */
};

/* The outcome of configuration changes (apply, delete, SIGHUP reload; not
 * dry runs): written by the control thread with relaxed atomic stores, read
 * by the HTTP thread for /metrics. */
struct fg_config_changes {
	uint64_t succeeded, failed;
	uint64_t last_success_s, last_failure_s; /* Unix time; 0: none yet */
};

/* Build the dispatch configuration workers read from the settings and the
 * compiled objects, taking ownership of fc: the one way a configuration is
 * made (the daemon, the control thread and the tests' rigs).  NULL on
 * allocation failure (fc is freed). */
struct fg_config *fg_config_build(const struct fg_settings *s, struct fg_fc_config *fc, uint64_t generation);
/* Publish next in *slot (rcu_xchg_pointer) and free the previous one after a
 * grace period (call_rcu): the control thread, or main before the workers run. */
void fg_config_publish(struct fg_config **slot, struct fg_config *next);
/* Give next's backends the slots they had in prev (the configuration in
 * force): a backend keeps its slot while its address stays listed, so
 * requests in flight keep naming it (backendpool.h); a backend no longer
 * listed leaves its slot marked FG_BACKEND_REMOVED, so that the answers of
 * requests in flight there are still taken; a new one takes a never used
 * slot, else the lowest removed one (whose requests still in flight are
 * then answered backend-timeout by the workers).  next->n_backends becomes
 * the number of slots, removed ones included. */
void fg_config_keep_backend_slots(struct fg_config *next, const struct fg_config *prev);
/* The levels' starting current limits in a configuration not yet published
 * (prev: the one in force, or NULL): a level that stays keeps its current
 * limit clamped to its new [min, max], a new one starts at nominal -
 * lendable / 2, as Kubernetes does on a configuration change (in cluster
 * mode at 0: the cluster grants its seats, clustershare.h).  Without
 * this call every level starts at its nominal limit. */
void fg_config_keep_level_limits(struct fg_config *next, const struct fg_config *prev);
/* Level i's current limit (any thread: a relaxed read), and setting it (the
 * thread that runs the borrowing rounds only; fg_level_limits.seq is the
 * caller's to bump after). */
uint32_t fg_config_level_limit(const struct fg_config *c, uint32_t i);
void fg_config_set_level_limit(const struct fg_config *c, uint32_t i, uint32_t limit);
/* Free a configuration built by fg_config_build (not yet published, or
 * after its grace period). */
void fg_config_free(struct fg_config *c);

#endif
