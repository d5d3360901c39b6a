/* SPDX-License-Identifier: Apache-2.0 */
/* allotter — the allotment-round policy; see allotter.h. */
#include "allotter.h"

#include "defs.h"
#include "stats.h"

bool fg_allotter_step(struct fg_allotter *a, const struct fg_config *cfg, bool all_follow, uint64_t now)
{
	if (!cfg->board)
		return false;
	/* A moved limit at once: the grants of the old one may exceed it. */
	bool due = now >= a->next_round_ns || fg_board_limit_moved(cfg->board);
	bool signal = fg_board_take_signal(cfg->board); /* taken every step, see allotter.h */
	if (!due && !signal)
		return false;
	a->next_round_ns = now + cfg->allotment_period_ns;
	if (!all_follow)
		return false;
	bool contended = true;
	unsigned grants = fg_board_allot(cfg->board, &contended);
	if (!contended) /* every demand met with seats to spare: a worker that runs out signals */
		a->next_round_ns = now + cfg->allotment_period_ns * FG_ALLOT_RELAXED_PERIODS;
	FG_STAT_ADD(a->stats.rounds, 1);
	FG_STAT_ADD(a->stats.signalled_rounds, signal && !due);
	FG_STAT_ADD(a->stats.grants, grants);
	return true;
}

uint64_t fg_allotter_nap_ns(const struct fg_config *cfg)
{
	return cfg->allotment_period_ns < FG_ALLOT_SIGNAL_POLL_NS ? cfg->allotment_period_ns : FG_ALLOT_SIGNAL_POLL_NS;
}
