/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config — the compiled, immutable dispatch configuration the workers read.
 *
 * The control thread builds one fg_config, publishes it with liburcu QSBR
 * (rcu_xchg_pointer) and frees the previous one after a grace period, so a
 * worker that took a pointer with rcu_dereference at the top of its loop
 * iteration may use it until its next quiescent state.  Nothing in it changes
 * after publication, except the seat board it points to (common/seatshare.h:
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
 * The levels' current limits (borrowing between levels, common/borrower.h),
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
	bool cluster;                /* cluster mode: limits are the cluster's caps (clustershare.h); fixed at start */
};

/* The outcome of configuration changes (apply, delete, SIGHUP reload; not
 * dry runs): written by the control thread with relaxed atomic stores, read
 * by the HTTP thread for /metrics. */
struct fg_config_changes {
	uint64_t succeeded, failed;
	uint64_t last_success_s, last_failure_s; /* Unix time; 0: none yet */
};

#endif
