/* SPDX-License-Identifier: Apache-2.0 */
/*
 * logwatch — the workers' events, logged by the control thread: backend
 * ejections and recoveries, stalls, adaptive limits that moved by a quarter
 * or more since last told (adaptlimit.h), workers that cannot follow a
 * configuration, and dropped datagrams by reason.  Workers never write a log line (logging
 * must not slow a poll loop); they count, as they do for status and
 * /metrics, and this module compares the counters with what it saw last.
 *
 * Invariants: nothing is logged per request.  Ejections, recoveries and
 * refused configurations are told within FG_LOGWATCH_PERIOD_NS, one line
 * each; drops at most one line per reason per FG_LOGWATCH_DROP_INTERVAL_NS
 * (with the count over that interval; the drain tells the last one at
 * once).  An ejection and recovery that both
 * fall within one period are both told (the ejection count moved).
 *
 * Thread contract: the control thread only, RCU-offline on entry and exit
 * (it goes online for the instant it reads the configuration's backends);
 * counters are read with relaxed loads (common/req/stats.h).
 */
#ifndef FG_LOGWATCH_H
#define FG_LOGWATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "control.h"
#include "logfmt.h"

#define FG_LOGWATCH_PERIOD_NS (250ull * 1000 * 1000)            /* backends and configurations */
#define FG_LOGWATCH_DROP_INTERVAL_NS (10ull * 1000 * 1000 * 1000) /* drop lines, per reason */

struct fg_logwatch {
	uint64_t next_ns;
	struct fg_log_tally drops;
	uint32_t n_backends;
	struct {
		char addr[32];
		uint64_t ejections;
		uint64_t stalls;
		uint64_t learned;      /* the adaptive limit last told (0: Static) */
		bool down;             /* some worker has it ejected or probing */
	} backends[FG_MAX_BACKENDS];
	uint64_t refused_generation[FG_MAX_WORKER_CORES];
	bool stopping;             /* the drain has been told */
};

/* Start from the counters as they are now (nothing before is told). */
void fg_logwatch_init(struct fg_logwatch *w, const struct fg_control_view *v, uint64_t now);

/* Log what changed since the last call (cheap when called more often than
 * FG_LOGWATCH_PERIOD_NS).  Returns true once, when the drain has begun. */
bool fg_logwatch_poll(struct fg_logwatch *w, const struct fg_control_view *v, uint64_t now);

/* At the end: tell what is still untold now (the last interval's drops). */
void fg_logwatch_flush(struct fg_logwatch *w, const struct fg_control_view *v, uint64_t now);

#endif
