/* SPDX-License-Identifier: Apache-2.0 */
/*
 * load — the load state for the tier in front (issue 29; KEP-1040's
 * "helping load balancers"): how full each priority level is and how long a
 * request arriving now would wait, for a balancer or client library in
 * front of several fairgate instances to prefer the least loaded one.
 * Served as a small JSON document at /debug/fairgate/load (http.c), as
 * gauges in /metrics, and (answerLoad) as the LOAD attribute on answers
 * (protocol.md): fg_load_publish writes each level's attribute value into
 * the workers' level statistics every FG_LOAD_PUBLISH_PERIOD_NS, and the
 * workers copy it into their answers.
 *
 * Per level: the seats in use, the limit in force, the seats waiting, and
 * an estimated wait = seats waiting x the level's service-time guess
 * (queueset.h: learned from completions) / the limit — the fluid time the
 * level needs to start what waits ahead of a newcomer, ignoring fair
 * queuing's order (a light flow waits less, a heavy one more).  The whole
 * instance's `load` is (seats in use + seats waiting) / the seats the
 * levels share (serverConcurrencyLimitInForce): 1 is full, above 1 requests
 * queue.  Exempt levels have no limit and are left out.
 *
 * Invariants: no tenant name appears (levels only).  Reads the workers'
 * counters with relaxed loads: figures of one instant, not one snapshot.
 *
 * Thread contract: json and metrics from any thread (the HTTP thread);
 * publish from the control thread alone (the only writer of answer_load).
 * The caller passes the serverConcurrencyLimit it read (under RCU, or its
 * own copy of the settings).
 */
#ifndef FG_LOAD_H
#define FG_LOAD_H

#include <jansson.h>
#include <stdint.h>

#include "expfmt.h"
#include "stats.h"

#define FG_LOAD_PUBLISH_PERIOD_NS (100ull * 1000 * 1000)

/* Each worker's levels' LOAD attribute value (stats.h, answer_load): the
 * level's load and estimated wait as in the document, the instance's load;
 * an exempt level's own figures are 0. */
void fg_load_publish(struct fg_worker_stats *const *ws, unsigned n_workers, uint32_t seat_limit);

/* The document (a new reference). */
json_t *fg_load_json(struct fg_worker_stats *const *ws, unsigned n_workers, uint32_t seat_limit);

/* fairgate_load_ratio and fairgate_level_estimated_wait_seconds{priority_level}. */
void fg_load_metrics(struct fg_expfmt *e, struct fg_worker_stats *const *ws, unsigned n_workers, uint32_t seat_limit);

#endif
