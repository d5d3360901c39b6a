/* SPDX-License-Identifier: Apache-2.0 */
/*
 * apfstats — Kubernetes' APF metric set per (priority level, flow schema)
 * pair, as one worker counts it: dispatched and rejected requests, requests
 * and seats waiting and executing, and the histograms of queue wait,
 * execution time, queue length after enqueue and estimated seats, with
 * Kubernetes' bucket bounds (apf-facts.md §6.1).  docs/metrics.md says when
 * each figure moves.
 *
 * A pair is found or added by names when a worker follows a configuration
 * (never on the fast path); requests carry their pair's index.  Pairs are
 * never taken back while the daemon runs, so a pair's counters never go
 * backwards; past FG_APF_PAIRS pairs a worker counts new ones in entry 0,
 * named FG_APF_OTHER for both labels.  Labels are levels and schemas only —
 * never flows or clients — so a scrape's size is bounded by FG_APF_PAIRS.
 *
 * Histograms keep one count per bucket (not cumulative: the worker adds 1 to
 * one bucket) and the sum; readers accumulate.  Bucket i counts values v with
 * bound[i-1] < v <= bound[i]; the last bucket is +Inf.
 *
 * Thread contract: as stats.h — one writer (the owning worker: relaxed
 * load+store, no atomic read-modify-write), any number of readers (relaxed
 * loads).  A pair is published by storing `used` last (release); readers load
 * it with acquire before reading the names.
 */
#ifndef FG_APFSTATS_H
#define FG_APFSTATS_H

#include <stdbool.h>
#include <stdint.h>

#include "defs.h"
#include "proto.h"

#define FG_APF_PAIRS 512u           /* (level, schema) pairs a worker counts apart */
#define FG_APF_NAME_MAX 256u        /* a Kubernetes object name (253) and its NUL */
#define FG_APF_OTHER "(other)"      /* both labels of the pair counting past FG_APF_PAIRS */
#define FG_APF_WAIT_BOUNDS 13u      /* request_wait_duration_seconds, request_execution_seconds */
#define FG_APF_COUNT_BOUNDS 8u      /* request_queue_length_after_enqueue, work_estimated_seats */
_Static_assert(FG_APF_PAIRS <= UINT16_MAX, "requests carry a pair index in 16 bits");

/* The bucket bounds: durations in ns, counts as they are. */
extern const uint64_t fg_apf_duration_bounds_ns[FG_APF_WAIT_BOUNDS];
extern const uint32_t fg_apf_queue_length_bounds[FG_APF_COUNT_BOUNDS];
extern const uint32_t fg_apf_seats_bounds[FG_APF_COUNT_BOUNDS];

struct fg_apf_duration_hist {
	uint64_t bucket[FG_APF_WAIT_BOUNDS + 1];
	uint64_t sum_ns;
};

struct fg_apf_count_hist {
	uint64_t bucket[FG_APF_COUNT_BOUNDS + 1];
	uint64_t sum;
};

struct fg_apf_pair {
	uint64_t key;                          /* hash of the names (owner's lookup) */
	char level[FG_APF_NAME_MAX];
	char schema[FG_APF_NAME_MAX];
	uint64_t dispatched;
	uint64_t no_accommodation;             /* heads that waited for seats (once per head) */
	uint64_t rejected[FG_REJECT__COUNT];   /* fairgate's own rejects (never a backend's) */
	uint32_t inqueue, inqueue_seats;       /* gauges: waiting */
	uint32_t executing, executing_seats;   /* gauges: executing (seats until released) */
	struct fg_apf_duration_hist wait[2];   /* [execute]: 0 rejected, 1 dispatched */
	struct fg_apf_duration_hist execution;
	struct fg_apf_count_hist queue_length;
	struct fg_apf_count_hist seats;
	uint8_t used;                          /* published last (release) */
};

struct fg_apf_stats {
	uint32_t n_used;                       /* owner only: entries taken */
	struct fg_apf_pair pairs[FG_APF_PAIRS];
};

/* Empty table; entry 0 is the FG_APF_OTHER pair. */
void fg_apf_init(struct fg_apf_stats *s);

/* The pair of (level, schema), added when new; 0 (FG_APF_OTHER) when the
 * table is full.  Names longer than FG_APF_NAME_MAX - 1 are cut.  Owner
 * only; O(pairs) — called when following a configuration. */
uint16_t fg_apf_pair(struct fg_apf_stats *s, const char *level, const char *schema);

static inline void fg_apf_add(uint64_t *field, uint64_t n)
{
	__atomic_store_n(field, *field + n, __ATOMIC_RELAXED);
}

static inline void fg_apf_gauge(uint32_t *field, int32_t delta)
{
	__atomic_store_n(field, *field + (uint32_t)delta, __ATOMIC_RELAXED);
}

static inline void fg_apf_observe_ns(struct fg_apf_duration_hist *h, uint64_t ns)
{
	unsigned i = 0;
	while (i < FG_APF_WAIT_BOUNDS && ns > fg_apf_duration_bounds_ns[i]) /* short waits leave first */
		i++;
	fg_apf_add(&h->bucket[i], 1);
	fg_apf_add(&h->sum_ns, ns);
}

static inline void fg_apf_observe_count(struct fg_apf_count_hist *h, const uint32_t bounds[FG_APF_COUNT_BOUNDS],
					uint32_t v)
{
	unsigned i = 0;
	while (i < FG_APF_COUNT_BOUNDS && v > bounds[i])
		i++;
	fg_apf_add(&h->bucket[i], 1);
	fg_apf_add(&h->sum, v);
}

#endif
