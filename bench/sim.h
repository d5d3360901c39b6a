/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim — the deterministic discrete-event simulator behind `fairgate-bench
 * sim` (docs/simulator.md): clients with closed-loop threads or open-loop
 * Poisson arrivals drive the real queue set (common/fq/queueset), per-worker
 * allotments (common/seats/seatshare) and borrowing between levels
 * (common/seats/borrowing) on a virtual clock; results per client and
 * measurement window, and per level its limits.
 *
 * Thread contract: a scenario is used by one thread at a time.
 */
#ifndef FG_SIM_H
#define FG_SIM_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct fg_sim;

/* Parse a scenario (JSON text).  NULL and a message naming the field on error. */
struct fg_sim *fg_sim_load(const uint8_t *buf, size_t len, char *err, size_t errlen);
void fg_sim_free(struct fg_sim *s);

/* Run to the end; returns the result document ({"windows": [...]}). */
json_t *fg_sim_run(struct fg_sim *s);

/* `fairgate-bench sim` */
int fg_bench_sim(int argc, char **argv);

#endif
