/* SPDX-License-Identifier: Apache-2.0 */
/*
 * apfstats — Kubernetes' APF metric set per (priority level, flow schema)
 * pair, as one worker counts it: dispatched and rejected requests, requests
 * and seats waiting and executing, and the histograms of queue wait,
 * execution time, queue length after enqueue and estimated seats, with
 * Kubernetes' bucket bounds (docs/apf-facts.md §6.1).  docs/metrics.md says when
 * each figure moves.
 *
 * A pair is found or added by names when a worker follows a configuration
 * (never on the fast path); requests carry their pair's index.  Pairs are
 * never taken back while the daemon runs, so a pair's counters never go
 * backwards; past FG_APF_PAIRS pairs a worker counts new ones in entry 0,
 * named FG_APF_OTHER for both labels.  The pairs are kept whether the
 * series are (flowcontrolMetrics) or not: they are also the groups of the
 * per-class work estimates (classguess.h).  Labels are levels and schemas only —
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
#include <stddef.h>
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

/* A pair's histograms. */
enum fg_apf_hist {
	FG_APF_WAIT_REJECTED,   /* request_wait_duration_seconds{execute="false"} */
	FG_APF_WAIT_DISPATCHED, /* ...{execute="true"}: its count is the dispatched requests */
	FG_APF_EXECUTION,       /* request_execution_seconds */
	FG_APF_QUEUE_LENGTH,    /* request_queue_length_after_enqueue */
	FG_APF_SEATS,           /* work_estimated_seats */
	FG_APF__HISTS
};

/*
 * Laid out for the fast path: a request's figures land on few cache lines
 * — the gauges and every histogram's sum on the first, and bucket i of all
 * histograms side by side (a request dispatched at once, 1 seat, answered
 * within 5 ms touches rows 0 and 1 only).  Names, rejects and the lookup
 * key are cold.  Count histograms use the first FG_APF_COUNT_BOUNDS + 1
 * rows.
 */
struct fg_apf_pair {
	uint32_t inqueue, inqueue_seats;       /* gauges: waiting */
	uint32_t executing, executing_seats;   /* gauges: executing (seats until released) */
	uint64_t sum[FG_APF__HISTS];           /* ns for durations */
	uint64_t no_accommodation;             /* heads that waited for seats (once per head) */
	uint64_t bucket[FG_APF_WAIT_BOUNDS + 1][FG_APF__HISTS];
	uint64_t rejected[FG_REJECT__COUNT];   /* fairgate's own rejects (never a backend's) */
	uint64_t key;                          /* hash of the names (owner's lookup) */
	char level[FG_APF_NAME_MAX];
	char schema[FG_APF_NAME_MAX];
	uint8_t used;                          /* published last (release) */
};
/* Not aligned (the statistics are calloc'ed, and a wider alignment would be a
 * lie to the sanitizers): the hot part is 64 contiguous bytes, then rows. */
_Static_assert(offsetof(struct fg_apf_pair, bucket) == FG_CACHE_LINE, "gauges and sums take 64 bytes");

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

/* Observations in histogram h: its count (a reader: relaxed loads). */
uint64_t fg_apf_hist_count(const struct fg_apf_pair *p, enum fg_apf_hist h);

static inline void fg_apf_add(uint64_t *field, uint64_t n)
{
	__atomic_store_n(field, *field + n, __ATOMIC_RELAXED);
}

static inline void fg_apf_gauge(uint32_t *field, int32_t delta)
{
	__atomic_store_n(field, *field + (uint32_t)delta, __ATOMIC_RELAXED);
}

/* A duration into FG_APF_WAIT_* or FG_APF_EXECUTION. */
static inline void fg_apf_observe_ns(struct fg_apf_pair *p, enum fg_apf_hist h, uint64_t ns)
{
	unsigned i = 0;
	while (i < FG_APF_WAIT_BOUNDS && ns > fg_apf_duration_bounds_ns[i]) /* short waits leave first */
		i++;
	fg_apf_add(&p->bucket[i][h], 1);
	fg_apf_add(&p->sum[h], ns);
}

/* A count into FG_APF_QUEUE_LENGTH or FG_APF_SEATS. */
static inline void fg_apf_observe_count(struct fg_apf_pair *p, enum fg_apf_hist h, uint32_t v)
{
	const uint32_t *bounds = h == FG_APF_SEATS ? fg_apf_seats_bounds : fg_apf_queue_length_bounds;
	unsigned i = 0;
	while (i < FG_APF_COUNT_BOUNDS && v > bounds[i])
		i++;
	fg_apf_add(&p->bucket[i][h], 1);
	fg_apf_add(&p->sum[h], v);
}

#endif
