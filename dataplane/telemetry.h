/* SPDX-License-Identifier: Apache-2.0 */
/*
 * telemetry — DPDK mode's figures for dpdk-telemetry.py (the telemetry
 * library's socket): /fairgate/levels ("0", "1", ...: each level's name and
 * figures summed over the workers: seats in use, limit, queues, waiting,
 * executing, received, dispatched, responded, rejected; numbered because
 * telemetry keys cannot hold '-' or '.'), /fairgate/workers (by worker number: its
 * datagrams, requests, hand-offs, refused hand-offs, allotment changes,
 * configuration generation and error) and /fairgate/counters (the daemon's
 * totals).  DPDK answers at most 16 KiB: a configuration with very many
 * levels gets null from /fairgate/levels (status has them all).
 *
 * The telemetry callbacks take no context: the statistics they read are
 * this module's one piece of process-wide state, set once before the
 * workers start and left alone until exit.
 *
 * Thread contract: fg_telemetry_register from main after EAL init; the
 * callbacks run on DPDK's telemetry thread and read worker statistics with
 * relaxed loads, as every reader does (common/req/stats.h).
 */
#ifndef FG_TELEMETRY_H
#define FG_TELEMETRY_H

#include "stats.h"

/* 0, or -errno from the telemetry library. */
int fg_telemetry_register(struct fg_worker_stats *const *stats, unsigned n_workers);

#endif
