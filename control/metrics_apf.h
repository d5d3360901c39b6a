/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics_apf — the /metrics families read from the workers' statistics
 * beyond the plain counters of http.c: Kubernetes' APF set per (priority
 * level, flow schema) (common/req/apfstats.h) summed over the workers, the queue
 * sets' virtual time per level and worker, the workers' busy ratio, and the
 * backends.  docs/metrics.md lists every family and when it moves.
 *
 * Thread contract: any thread; reads the statistics with relaxed loads (a
 * pair's names after an acquire load of `used`), so the figures are
 * eventually consistent snapshots.  Allocates only for the pair merge.
 */
#ifndef FG_METRICS_APF_H
#define FG_METRICS_APF_H

#include "config.h"
#include "expfmt.h"
#include "stats.h"

/* fairgate_flowcontrol_* per (priority_level, flow_schema): counters,
 * gauges and histograms, pairs of the same names summed over the workers,
 * in (level, schema) order. */
void fg_metrics_flowcontrol(struct fg_expfmt *e, struct fg_worker_stats *const *ws, unsigned n_workers);

/* current_r, dispatch_r (seat-seconds) and epoch_advance_total per
 * (priority_level, worker); each worker runs its own queue set of a level. */
void fg_metrics_virtual_time(struct fg_expfmt *e, struct fg_worker_stats *const *ws, unsigned n_workers);

/* fairgate_worker_polls_total, ..._busy_polls_total, ..._busy_ratio. */
void fg_metrics_busy(struct fg_expfmt *e, struct fg_worker_stats *const *ws, unsigned n_workers);

/* fairgate_backend_* by backend address (cfg's list): outstanding seats and
 * capacity summed over the workers, state as the number of workers that see
 * the backend in it, timeouts and ejections.  cfg read under RCU by the
 * caller. */
void fg_metrics_backends(struct fg_expfmt *e, const struct fg_config *cfg, struct fg_worker_stats *const *ws,
			 unsigned n_workers);

/* fairgate_work_estimate_seconds{priority_level, flow_schema, verb}: the service time
 * each class is priced with (workEstimates PerClass, classguess.h), the
 * largest over the workers; classes without a completion are left out.
 * cfg read under RCU by the caller. */
void fg_metrics_work_estimates(struct fg_expfmt *e, const struct fg_config *cfg, struct fg_worker_stats *const *ws,
			       unsigned n_workers);

#endif
