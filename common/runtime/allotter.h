/* SPDX-License-Identifier: Apache-2.0 */
/*
 * allotter — when the seats of each priority level are re-split between
 * workers: the policy around fg_board_allot (seatshare.h).  A round runs
 * when the allotment period has passed since the last one, or sooner when a
 * worker raised the board's demand signal (a request waits for want of
 * allotted seats); and only once every worker follows the configuration the
 * board belongs to (a worker still on an older one may hold seats the board
 * does not know of).  After a round that found no level contended (every
 * demand met, with headroom: seatshare.h), the next periodic round waits
 * FG_ALLOT_RELAXED_PERIODS periods: nothing needs moving until a worker runs
 * out of its headroom, and then it signals; meanwhile the rounds cost the
 * workers' CPUs nothing and leave the board's lines in their caches.  A
 * level limit that moved (borrowing) is split at the next step whatever the
 * period.  The signal is taken on every step, so that a signal raised
 * before a periodic round does not cause a second round right after.
 *
 * The daemon's allotter thread, the dataplane benchmark, the simulator's
 * workers and the tests all step this one policy; time is an argument.
 *
 * Thread contract: one thread steps an allotter; it reads the board as
 * seatshare.h allows the allotter to.
 */
#ifndef FG_ALLOTTER_H
#define FG_ALLOTTER_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "seatshare.h"

/* Periods between rounds while no level is contended (see above). */
#define FG_ALLOT_RELAXED_PERIODS 8u

struct fg_allotter {
	uint64_t next_round_ns;          /* the next periodic round is due at this time */
	struct fg_allotter_stats stats;  /* read by status (relaxed) */
};

/* One step at `now` for configuration cfg (with a board: several workers).
 * `all_follow`: every worker follows cfg's generation.  Returns whether a
 * round ran. */
bool fg_allotter_step(struct fg_allotter *a, const struct fg_config *cfg, bool all_follow, uint64_t now);

/* How long the stepping thread may sleep before its next step: the period,
 * but no longer than the signal poll interval (FG_ALLOT_SIGNAL_POLL_NS). */
uint64_t fg_allotter_nap_ns(const struct fg_config *cfg);

#endif
