/* SPDX-License-Identifier: Apache-2.0 */
/*
 * worker_int — what the files of the worker module share and no one else
 * uses: worker.c (the request life cycle), worker_board.c (the mesh and the
 * board), worker_config.c (following configurations), worker_snapshot.c
 * (visibility snapshots, common/req/pending.h).  Same thread contract
 * as worker.h: each function runs on the worker's own thread.
 */
#ifndef FG_WORKER_INT_H
#define FG_WORKER_INT_H

#include "worker.h"

#include "compiler.h"
#include "flowcontrol.h"

/* Several workers: a queue's load and the level's seat use on the board
 * (and the demand signal when the level's next request stops fitting). */
void fg_worker__publish_queue(struct fg_worker *w, uint32_t level, uint32_t queue);
/* One worker: the levels' current limits of generation seq. */
void fg_worker__follow_limits(struct fg_worker *w, const struct fg_level_limits *lim, uint32_t seq, uint64_t now);
/* Following a configuration with a board: the level's starting allotment
 * and this worker's loads on the new board. */
void fg_worker__join_board(struct fg_worker *w, const struct fg_config *cfg, uint32_t level, uint32_t held,
			   uint64_t now);
/* Apply the seat grants the allotter made since the last poll. */
void fg_worker__follow_grants(struct fg_worker *w, uint64_t now);
/* The backends' usable capacity may have moved (w->pool.changes), or the
 * levels are new (a configuration followed): every level's limits follow
 * it (fg_qs_set_capacity). */
void fg_worker__follow_capacity(struct fg_worker *w, uint64_t now);
/* Several workers, Adaptive: publish whether this worker held requests for
 * backend room since its last look, and whether any worker did since then. */
bool fg_worker__held_anywhere(struct fg_worker *w, bool held_here);
/* Several workers: the queue of this worker's queue set a classified
 * request joins (*queue) and the weight it queues with there: its flow's
 * share at this worker from the allotter's last round (thousandths of a
 * seat), or its flow weight before the flow has one. */
uint32_t fg_worker__local_weight(struct fg_worker *w, uint32_t level, const struct fg_fc_match *match,
				 uint32_t *queue);
/* Release at once the seats that answered requests of these runtime levels
 * still hold for their extra latency (the level shrank or went away). */
void fg_worker__release_lingering(struct fg_worker *w, const bool levels[FG_MAX_LEVELS], uint64_t now);
/* Backend b's seats and state into the statistics (after a dispatch or an
 * end; its capacity goes there when a configuration is followed).  Only
 * this worker writes them, so comparing with them costs no shared line. */
static inline void fg_worker__publish_backend(struct fg_worker *w, uint32_t b, uint64_t now)
{
	const struct fg_backend *be = &w->pool.b[b];
	struct fg_backend_stats *s = &w->stats.backends[b];
	FG_STAT_SET(s->outstanding, be->outstanding);
	if (unlikely(s->stalled != be->stalled || s->stalls != be->stalls)) {
		FG_STAT_SET(s->stalled, be->stalled);
		FG_STAT_SET(s->stalls, be->stalls);
	}
	if (unlikely(s->state != be->state || s->admin != be->admin)) {
		FG_STAT_SET(s->until_ns, be->until_ns);
		FG_STAT_SET(s->state, be->state);
		FG_STAT_SET(s->admin, be->admin);
		FG_STAT_SET(s->last_change_ns, now);
	}
}
/* End what is in flight at backend slot b (answered backend-timeout): the
 * slot is about to name another backend, whose answers could not be told
 * from its predecessor's. */
void fg_worker__end_at_backend(struct fg_worker *w, const struct fg_config *cfg, uint32_t b, uint64_t now);

/* Free the slots of removed levels once nothing waits or holds seats there. */
void fg_worker__retire_idle_levels(struct fg_worker *w);

/* Visibility snapshots (common/req/pending.h, worker_snapshot.c): a bounded
 * piece of the asked copy; a relaxed load when nothing is asked. */
void fg_worker__snapshot_step(struct fg_worker *w, uint64_t now);
static inline void fg_worker__snapshot_poll(struct fg_worker *w, uint64_t now)
{
	if (unlikely(w->snap != NULL) && fg_snap_box_pending(w->snap))
		fg_worker__snapshot_step(w, now);
}

#endif
