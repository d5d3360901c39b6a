/* SPDX-License-Identifier: Apache-2.0 */
/*
 * worker_board — several workers: the mesh between them (answers for another
 * worker's requests), and each worker's side of the board (publishing its
 * queues' loads and seat use, following the allotter's grants, the weight a
 * flow queues with here), and a lone worker's side of the levels' current
 * limits.  See
 * worker.h and common/seats/seatshare.h.
 */
#include "worker.h"
#include "worker_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shuffle.h"

int fg_mesh_init(struct fg_mesh *m, unsigned n_workers, uint32_t ring_capacity)
{
	memset(m, 0, sizeof(*m));
	if (n_workers < 2 || n_workers > FG_SEATSHARE_MAX_WORKERS)
		return -EINVAL;
	m->rings = aligned_alloc(FG_CACHE_LINE, sizeof(*m->rings) * n_workers * n_workers);
	if (!m->rings)
		return -ENOMEM;
	memset(m->rings, 0, sizeof(*m->rings) * n_workers * n_workers);
	m->n_workers = n_workers;
	for (unsigned from = 0; from < n_workers; from++)
		for (unsigned to = 0; to < n_workers; to++) {
			if (from == to)
				continue; /* no ring to itself */
			int rc = fg_spsc_init(&m->rings[from * n_workers + to], ring_capacity, sizeof(struct fg_handoff));
			if (rc) {
				fg_mesh_fini(m, NULL);
				return rc;
			}
		}
	return 0;
}

void fg_mesh_fini(struct fg_mesh *m, const struct fg_io *ios)
{
	for (unsigned i = 0; m->rings && i < m->n_workers * m->n_workers; i++) {
		struct fg_spsc *r = &m->rings[i];
		struct fg_handoff h;
		while (r->items && ios && fg_spsc_pop(r, &h, 1, sizeof(h)))
			ios[i % m->n_workers].ops->free(ios[i % m->n_workers].ctx, &h.pkt);
		fg_spsc_fini(r);
	}
	free(m->rings);
	m->rings = NULL;
}

int fg_worker_join(struct fg_worker *w, struct fg_mesh *mesh)
{
	if (w->id >= mesh->n_workers || w->config_generation)
		return -EINVAL;
	w->mesh = mesh;
	return 0;
}

static inline void store_load(const struct fg_level_board *lb, unsigned worker, uint32_t queue,
			      const struct fg_queueset *qs, const struct fg_qs_queue *q)
{
	struct fg_queue_load *ld = fg_board_load(lb, worker, queue);
	FG_STAT_SET(ld->demand, q->seats_waiting + q->seats_executing);
	FG_STAT_SET(ld->flow, q->n_foreign ? FG_QUEUE_SHARED : q->flow_hash);
	FG_STAT_SET(ld->usage_key, fg_qs_queue_usage_key(qs, q));
}

/* One queue's load, and the level's seats in use here, for the allotter
 * (relaxed stores: this worker is their only writer). */
void fg_worker__publish_queue(struct fg_worker *w, uint32_t level, uint32_t queue)
{
	struct fg_level_rt *rt = &w->levels[level];
	if (!w->board || !rt->live)
		return;
	const struct fg_level_board *lb = &w->board->levels[rt->cfg_index];
	/* Not a queue that drains after a shrink: the board has no row for it. */
	if (queue < lb->n_queues)
		store_load(lb, w->id, queue, &rt->qs, &rt->qs.queues[queue]);
	if (!lb->exempt) {
		uint32_t head = fg_qs_next_seats(&rt->qs);
		FG_STAT_SET(lb->shares[w->id].used, rt->qs.seats_in_use);
		FG_STAT_SET(lb->shares[w->id].head, head);
		/* A request that starts waiting for want of allotted seats asks
		 * the allotter for a round now rather than at the period's end. */
		bool blocked = head && !fg_qs_fits(&rt->qs, head);
		if (blocked && !rt->blocked)
			fg_board_signal(w->board);
		rt->blocked = blocked;
	}
}

/* Following a new configuration with several workers: a level it had
 * already starts at min(the seats this worker could use, its even share of
 * the new limit, the seats it holds) — safe whatever the other workers still
 * follow or hold: no worker starts anything new there before the allotter's
 * first round counts what every worker holds; a new level at the even
 * share.  The new board gets this worker's loads; the allotter hands out the
 * rest. */
void fg_worker__join_board(struct fg_worker *w, const struct fg_config *cfg, uint32_t level, uint32_t held, uint64_t now)
{
	struct fg_level_rt *rt = &w->levels[level];
	const struct fg_level_board *lb = &cfg->board->levels[rt->cfg_index];
	unsigned n = cfg->board->n_workers;
	if (!lb->exempt) {
		uint32_t limit = FG_STAT_GET(lb->limit);
		uint32_t share = fg_seatshare_static(limit, n, w->id);
		uint32_t start = held < share ? held : share;
		/* A level it had already (held: its seats so far): a worker above
		 * its even share holds seats the others' even shares count on
		 * (the mesh seat-limit test found it).  A level new to this
		 * worker starts at the even share: right when it is new to every
		 * worker; a level removed and added back while another worker
		 * still drains it is the exception (that worker may hold more). */
		if (held != UINT32_MAX && start > rt->qs.seats_in_use)
			start = rt->qs.seats_in_use;
		fg_qs_set_level_limit(&rt->qs, limit);
		fg_qs_set_limit(&rt->qs, start, now);
		FG_STAT_SET(lb->shares[w->id].applied, start);
		FG_STAT_SET(lb->shares[w->id].used, rt->qs.seats_in_use);
	}
	for (uint32_t q = 0; q < lb->n_queues && q < rt->qs.n_alloc; q++)
		store_load(lb, w->id, q, &rt->qs, &rt->qs.queues[q]);
}

/* One worker: apply the levels' current limits (borrowing) when they
 * changed since the last poll. */
void fg_worker__follow_limits(struct fg_worker *w, const struct fg_level_limits *lim, uint32_t seq, uint64_t now)
{
	for (uint32_t i = 0; i < lim->n && i < w->n_level_map; i++) {
		struct fg_queueset *qs = &w->levels[w->level_of_cfg[i]].qs;
		if (qs->cfg.mode == FG_QS_EXEMPT)
			continue;
		uint32_t limit = FG_STAT_GET(lim->current[i]);
		fg_qs_set_level_limit(qs, limit);
		fg_qs_set_limit(qs, limit, now);
		FG_STAT_SET(w->stats.levels[w->level_of_cfg[i]].limit, qs->cfg.concurrency_limit);
	}
	w->limits_seq = seq;
}

/* Apply the seat grants the allotter made since the last poll. */
void fg_worker__follow_grants(struct fg_worker *w, uint64_t now)
{
	const struct fg_board *b = w->board;
	for (uint32_t i = 0; i < b->n_levels && i < w->n_level_map; i++) {
		struct fg_seat_share *s = &b->levels[i].shares[w->id];
		uint32_t seq = __atomic_load_n(&s->grant_seq, __ATOMIC_ACQUIRE);
		if (seq == s->acked_seq)
			continue;
		uint32_t grant = FG_STAT_GET(s->grant);
		struct fg_queueset *qs = &w->levels[w->level_of_cfg[i]].qs;
		/* The level's limit moves with borrowing and with what the
		 * backends can take; the allotter's grants follow it, and so do
		 * the widths this worker admits. */
		uint32_t limit = FG_STAT_GET(b->levels[i].limit_in_force);
		fg_qs_set_level_limit(qs, limit);
		fg_qs_set_limit(qs, grant, now);
		FG_STAT_SET(w->stats.levels[w->level_of_cfg[i]].limit, limit);
		FG_STAT_SET(s->applied, grant);
		__atomic_store_n(&s->acked_seq, seq, __ATOMIC_RELEASE);
		FG_STAT_ADD(w->stats.allotment_changes, 1);
	}
}

void fg_worker__follow_capacity(struct fg_worker *w, uint64_t now)
{
	w->pool_changes_seen = w->pool.changes;
	uint32_t usable, total;
	if (w->adaptive.on) /* the learned limits (overbooked) over where they started, at most Max */
		fg_backendpool_levels_capacity(&w->pool, w->adaptive.start, w->adaptive.max, &usable, &total);
	else
		fg_backendpool_capacity(&w->pool, &usable, &total);
	if (usable != FG_STAT_GET(w->stats.capacity_usable) || total != FG_STAT_GET(w->stats.capacity_total))
		FG_STAT_ADD(w->stats.capacity_changes, 1);
	FG_STAT_SET(w->stats.capacity_usable, usable);
	FG_STAT_SET(w->stats.capacity_total, total);
	if (w->board) {
		/* Several workers: the allotter scales the levels it splits (a
		 * worker scaling its own grant would hold less than the allotter
		 * counts on, and block heads the grant covers). */
		struct fg_worker_capacity *c = &w->board->capacity[w->id];
		/* A moved limit in force is the allotter's cue for a round at once
		 * (fg_board_limit_moved). */
		if (FG_STAT_GET(c->usable) != usable || FG_STAT_GET(c->total) != total) {
			FG_STAT_SET(c->usable, usable);
			FG_STAT_SET(c->total, total);
		}
		return;
	}
	for (uint32_t i = 0; i < w->n_levels; i++)
		if (w->levels[i].used && w->levels[i].qs.cfg.mode != FG_QS_EXEMPT) {
			struct fg_queueset *qs = &w->levels[i].qs;
			fg_qs_set_capacity(qs, usable, total, now);
			FG_STAT_SET(w->stats.levels[i].limit, qs->cfg.concurrency_limit);
		}
}

bool fg_worker__held_anywhere(struct fg_worker *w, bool held_here)
{
	struct fg_board *b = w->board;
	if (held_here) /* this worker is the line's only writer */
		FG_STAT_SET(b->capacity[w->id].held_looks, FG_STAT_GET(b->capacity[w->id].held_looks) + 1);
	uint64_t sum = 0;
	for (unsigned i = 0; i < b->n_workers; i++)
		sum += FG_STAT_GET(b->capacity[i].held_looks);
	bool any = sum != w->adaptive.board_held_seen;
	w->adaptive.board_held_seen = sum;
	return any;
}

uint32_t fg_worker__local_weight(struct fg_worker *w, uint32_t level, const struct fg_fc_match *match,
				 uint32_t *queue)
{
	struct fg_level_rt *rt = &w->levels[level];
	uint32_t cards[FG_DEALER_MAX_HAND];
	*queue = fg_qs_choose_queue(&rt->qs, match->flow_hash, cards);
	const struct fg_level_board *lb = &w->board->levels[rt->cfg_index];
	if (*queue >= lb->n_queues) /* a queue that drains after a shrink: defensive */
		return match->weight;
	struct fg_queue_load *ld = fg_board_load(lb, w->id, *queue);
	/* The flow's own weight, for the allotter's max-min over flows. */
	if (FG_STAT_GET(ld->weight) != match->weight)
		FG_STAT_SET(ld->weight, match->weight);
	/* The flow's share here, from any queue of its hand it holds here (a
	 * flow with nothing waiting may take another card than last time). */
	uint32_t share = FG_STAT_GET(ld->flow) == match->flow_hash ? FG_STAT_GET(ld->share_milli) : 0;
	if (!share) {
		for (uint32_t i = 0; i < rt->qs.cfg.hand_size && !share; i++) {
			const struct fg_queue_load *c = cards[i] < lb->n_queues ? fg_board_load(lb, w->id, cards[i]) : NULL;
			if (c && FG_STAT_GET(c->flow) == match->flow_hash)
				share = FG_STAT_GET(c->share_milli);
		}
	}
	/* No share yet (a flow new here): one seat's weight until a round. */
	return share ? share : FG_QS_WEIGHT_ONE;
}
