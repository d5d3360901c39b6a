/* SPDX-License-Identifier: Apache-2.0 */
/*
 * worker — one worker's request life cycle: admission (here, where the
 * request arrived), dispatch to backends, answers, rejects, expiry, drain.  See
 * worker.h; the mesh and board are in worker_board.c, following
 * configurations in worker_config.c, visibility snapshots in
 * worker_snapshot.c.
 *
 * Why this file is large (near 1,000 lines): it is the per-datagram path — a
 * burst's stages, classification, admission, dispatch, the answer — as
 * static functions in one compilation unit, so that the compiler may inline
 * across them (the build has no LTO); what is not per datagram lives in the
 * files above.
 */
#include "worker.h"
#include "worker_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "flowcontrol.h"
#include "flowhash.h"
#include "proto.h"
#include "shuffle.h"
#include "trust.h"

static inline uint32_t slot_of(const struct fg_worker *w, const struct fg_qs_req *q)
{
	const struct fg_req *r = (const struct fg_req *)((const char *)q - offsetof(struct fg_req, qs));
	return (uint32_t)(r - w->reqs.slots);
}

static void dispatch_level(struct fg_worker *w, const struct fg_config *cfg, uint32_t level, uint64_t now);
static void refill_reserve(struct fg_worker *w);

/* --- Kubernetes' metrics per (level, schema) (apfstats.h) ---------------- */

static inline struct fg_apf_pair *apf_pair(struct fg_worker *w, uint16_t pair)
{
	return &w->stats.apf.pairs[pair];
}

/* The request's wait is over: it executes, or it is rejected. */
static inline void apf_waited(struct fg_worker *w, const struct fg_req *r, bool execute, uint64_t now)
{
	if (w->apf_metrics)
		fg_apf_observe_ns(apf_pair(w, r->pair), execute ? FG_APF_WAIT_DISPATCHED : FG_APF_WAIT_REJECTED,
				  now - r->qs.arrival_ns);
}

/* A request was classified: its (level, schema) pair (the per-class
 * estimates' group too), and its estimate observed. */
static inline uint16_t apf_classified(struct fg_worker *w, const struct fg_fc_match *match, const struct fg_work *work)
{
	uint16_t pair = w->pair_of_schema[match->schema];
	if (!w->apf_metrics)
		return pair;
	uint32_t seats = work->initial_seats > work->final_seats ? work->initial_seats : work->final_seats;
	fg_apf_observe_count(apf_pair(w, pair), FG_APF_SEATS, seats ? seats : 1);
	return pair;
}

static inline void apf_seats_released(struct fg_worker *w, const struct fg_req *r)
{
	if (w->apf_metrics)
		fg_apf_gauge(&apf_pair(w, r->pair)->executing_seats, -(int32_t)r->qs.seats);
}

int fg_worker_init(struct fg_worker *w, unsigned id, struct fg_io io, uint32_t max_requests)
{
	memset(w, 0, sizeof(*w));
	if (id >= FG_MAX_WORKERS)
		return -EINVAL;
	w->id = id;
	w->io = io;
	fg_reqlist_init(&w->waiting);
	fg_reqlist_init(&w->executing);
	fg_reqlist_init(&w->held);
	fg_stats_init(&w->stats);
	fg_wheel_init(&w->lingering, 0);
	if (fg_nonces_init(&w->nonces, NULL) || fg_cookie_jar_init(&w->cookies, NULL))
		return -EIO;
	int rc = fg_reqtable_init(&w->reqs, max_requests);
	if (!rc)
		refill_reserve(w);
	return rc;
}

void fg_worker_share_cookie_master(struct fg_worker *w, const uint8_t master[FG_COOKIE_MASTER_LEN])
{
	fg_cookie_jar_init(&w->cookies, master);
}

void fg_worker_fini(struct fg_worker *w)
{
	/* Any held packet goes back to its pool. */
	for (uint32_t i = 0; w->reqs.slots && i < w->reqs.cap; i++)
		if (w->reqs.slots[i].state != FG_REQ_FREE && w->reqs.slots[i].pkt_handle) {
			struct fg_pkt pkt = fg_req_pkt(&w->reqs.slots[i]);
			w->io.ops->free(w->io.ctx, &pkt);
		}
	fg_reqtable_fini(&w->reqs);
	while (w->n_reserve)
		w->io.ops->free(w->io.ctx, &w->reserve[--w->n_reserve]);
	FG_STAT_SET(w->stats.buffers_reserved, 0);
	for (uint32_t i = 0; i < w->n_levels; i++)
		if (w->levels[i].used)
			fg_qs_fini(&w->levels[i].qs);
	free(w->level_of_cfg);
	free(w->pair_of_schema);
	fg_classguess_fini(&w->classguess);
	free(w->adapt_table);
}

static void flush(struct fg_worker *w)
{
	unsigned answers = 0, dropped = w->io.ops->flush(w->io.ctx, &answers);
	if (unlikely(dropped)) {
		FG_STAT_ADD(w->stats.tx_failed, dropped);
		/* A request the I/O refused towards a backend times out and is
		 * answered; an answer it refused is lost (counted, not sent). */
		FG_STAT_ADD(w->stats.answers_unsent, answers);
	}
}

/* answer: to a client (a response, a REJECT); else a request to a backend. */
static void send_pkt(struct fg_worker *w, struct fg_pkt *pkt, bool answer)
{
	FG_STAT_ADD(w->stats.tx_datagrams, 1);
	pkt->answer = answer;
	w->io.ops->tx(w->io.ctx, pkt);
}

/* Turn a received datagram into a REJECT in place and send it back to its
 * sender: no allocation, and never larger than what arrived. */
static void reject_in_place(struct fg_worker *w, struct fg_pkt *pkt, uint64_t client_id, enum fg_reject_reason reason,
			    uint32_t retry_after_ms)
{
	pkt->len = (uint32_t)fg_proto_encode_reject(pkt->data, pkt->cap, client_id, reason, retry_after_ms);
	send_pkt(w, pkt, true);
}

static void count_reject(struct fg_worker *w, uint32_t flow, uint32_t level, enum fg_reject_reason reason)
{
	FG_STAT_ADD(w->stats.rejected[reason], 1);
	FG_STAT_ADD(w->stats.flows[flow].rejected, 1);
	FG_STAT_ADD(w->stats.flows[flow].rejected_by[reason], 1);
	if (level < FG_MAX_LEVELS) {
		FG_STAT_ADD(w->stats.levels[level].rejected, 1);
		FG_STAT_ADD(w->stats.levels[level].rejected_by[reason], 1);
	}
}

/* The retry-after a REJECT outside any level carries. */
static uint32_t fixed_retry_ms(const struct fg_config *cfg)
{
	return cfg->retry_after_ms ? cfg->retry_after_ms : FG_FALLBACK_RETRY_AFTER_MS;
}

/* The retry-after of a REJECT fairgate sends for a request of a level: the
 * operator's fixed value, or the level's adaptive one (retryafter.h), which
 * the APF drops (queue-full, concurrency-limit, time-out) feed. */
static uint32_t retry_after_ms(struct fg_worker *w, const struct fg_config *cfg, uint32_t level,
			       enum fg_reject_reason reason, uint64_t now)
{
	if (cfg->retry_after_ms || level >= FG_MAX_LEVELS)
		return fixed_retry_ms(cfg);
	struct fg_retry_after *t = &w->levels[level].retry;
	bool drop = reason == FG_REJECT_QUEUE_FULL || reason == FG_REJECT_CONCURRENCY_LIMIT ||
		    reason == FG_REJECT_TIME_OUT;
	return (drop ? fg_retry_after_drop(t, now / FG_NS_PER_SEC) : t->retry_after_s) * 1000u;
}

/* answerLoad: put the level's LOAD attribute (control/load.h publishes its
 * value) first in the answer pkt holds, for a client answerLoad names; an
 * answer that would then pass `most` bytes, or the attribute count, goes
 * without it (counted).  A relayed answer's own LOAD attributes are blanked
 * first, whoever the client (a backend does not speak for fairgate). */
static void attach_load(struct fg_worker *w, const struct fg_config *cfg, struct fg_pkt *pkt, uint32_t level,
			uint32_t most, bool relayed)
{
	int attrs = relayed ? fg_proto_blank_loads(pkt->data, pkt->len) : 0;
	if (level >= FG_MAX_LEVELS ||
	    (cfg->answer_load == FG_ANSWER_LOAD_TRUSTED && !fg_trust_source(&cfg->trust, pkt->peer.ip)))
		return;
	if (attrs < 0 || attrs >= (int)FG_PROTO_MAX_ATTRS) { /* a client could not decode it with one more */
		FG_STAT_ADD(w->stats.answers_without_load, 1);
		return;
	}
	uint64_t value = __atomic_load_n(&w->stats.levels[level].answer_load, __ATOMIC_RELAXED);
	uint32_t cap = w->io.ops->max_datagram ? w->io.ops->max_datagram : FG_PROTO_MAX_DATAGRAM;
	if (cap > pkt->cap)
		cap = pkt->cap;
	if (cap > most)
		cap = most;
	int len = fg_proto_insert_load(pkt->data, pkt->len, cap, (const uint8_t *)&value);
	if (len < 0)
		FG_STAT_ADD(w->stats.answers_without_load, 1);
	else
		pkt->len = (uint32_t)len;
}

/* Count and answer a REJECT fairgate decided, in place of the request's
 * datagram (pkt->len its length; 0: a fresh buffer).  A REJECT carries the
 * LOAD attribute only where it stays no longer than the request it answers
 * (no amplification from a spoofed source). */
static void reject_request(struct fg_worker *w, const struct fg_config *cfg, struct fg_pkt *pkt, uint64_t client_id,
			   uint32_t flow, uint32_t level, uint16_t pair, enum fg_reject_reason reason, uint64_t now)
{
	count_reject(w, flow, level, reason);
	if (w->apf_metrics)
		fg_apf_add(&apf_pair(w, pair)->rejected[reason], 1);
	uint32_t asked = pkt->len;
	pkt->len = (uint32_t)fg_proto_encode_reject(pkt->data, pkt->cap, client_id, reason,
						    retry_after_ms(w, cfg, level, reason, now));
	if (unlikely(cfg->answer_load) && asked)
		attach_load(w, cfg, pkt, level, asked, false);
	send_pkt(w, pkt, true);
}

/* Keep the reserve full while the pool has buffers (a few per poll). */
static void refill_reserve(struct fg_worker *w)
{
	while (w->n_reserve < FG_ANSWER_RESERVE && !w->io.ops->alloc(w->io.ctx, &w->reserve[w->n_reserve]))
		w->n_reserve++;
	FG_STAT_SET(w->stats.buffers_reserved, w->n_reserve);
}

/* Answer a request whose packet is gone (it went to a backend): a fresh
 * buffer, from the reserve when the pool is dry. */
static void reject_to_client(struct fg_worker *w, const struct fg_config *cfg, struct fg_req *r,
			     enum fg_reject_reason reason, uint64_t now)
{
	struct fg_pkt pkt;
	if (unlikely(w->io.ops->alloc(w->io.ctx, &pkt))) {
		if (!w->n_reserve) {
			FG_STAT_ADD(w->stats.answers_lost, 1); /* never sent: not a send that failed */
			return;
		}
		pkt = w->reserve[--w->n_reserve];
		FG_STAT_SET(w->stats.buffers_reserved, w->n_reserve);
	}
	pkt.peer = r->client;
	pkt.len = 0; /* a fresh buffer: no request to measure the REJECT against */
	reject_request(w, cfg, &pkt, r->client_id, r->flow, r->level, r->pair, reason, now);
}

/* --- state changes ----------------------------------------------------- */

/* Gauges (and, with several workers, the board) after a change in the
 * request's level and queue. */
static void publish_level(struct fg_worker *w, const struct fg_req *r)
{
	uint32_t level = r->level;
	struct fg_queueset *qs = &w->levels[level].qs;
	if (w->board) /* several workers only: a call into worker_board.c */
		fg_worker__publish_queue(w, level, r->qs.queue);
	FG_STAT_SET(w->stats.waiting, w->waiting.count);
	FG_STAT_SET(w->stats.executing, w->executing.count + w->held.count);
	FG_STAT_SET(w->stats.levels[level].waiting, qs->n_waiting);
	FG_STAT_SET(w->stats.levels[level].seats_in_use, qs->seats_in_use);
	FG_STAT_SET(w->stats.levels[level].seats_waiting, qs->seats_waiting);
}

/* Whether requests wait or were refused in the levels for want of seats
 * since the last look: a level's head that does not fit its limit in force
 * (or this worker's allotment of it), or a refusal by a level
 * (concurrency-limit on a Reject level, queue-full or time-out on a queuing
 * one).  (Requests held for backend room are the backends' limit, told
 * apart: fg_backendpool_set_pressure.) */
static bool levels_pressed(struct fg_worker *w)
{
	uint64_t refusals = 0;
	for (uint32_t i = 0; i < w->n_levels; i++) {
		const uint64_t *by = w->stats.levels[i].rejected_by;
		refusals += FG_STAT_GET(by[FG_REJECT_CONCURRENCY_LIMIT]) + FG_STAT_GET(by[FG_REJECT_QUEUE_FULL]) +
			    FG_STAT_GET(by[FG_REJECT_TIME_OUT]);
	}
	bool refused = refusals != w->adaptive.refusals_seen;
	w->adaptive.refusals_seen = refusals;
	if (refused)
		return true;
	for (uint32_t i = 0; i < w->n_levels; i++) {
		const struct fg_queueset *qs = &w->levels[i].qs;
		if (w->levels[i].used && qs->cfg.mode == FG_QS_QUEUE && qs->n_waiting &&
		    !fg_qs_fits(qs, fg_qs_next_seats(qs)))
			return true;
	}
	return false;
}

/* Every FG_PERIODIC_PUBLISH_NS rather than per request (a scrape comes at
 * most once a second): the levels' virtual time, and the backends' state,
 * which a pick can change for backends it does not pick (an ejection
 * followed from another worker, an ejection that ran out). */
static void publish_periodic(struct fg_worker *w, uint64_t now)
{
	w->periodic_due = now + FG_PERIODIC_PUBLISH_NS;
	for (uint32_t i = 0; w->apf_metrics && i < w->n_levels; i++)
		if (w->levels[i].used) {
			FG_STAT_SET(w->stats.levels[i].current_r, w->levels[i].qs.r);
			FG_STAT_SET(w->stats.levels[i].r_wraps, w->levels[i].qs.stats.epochs);
		}
	for (uint32_t i = 0; i < w->n_levels; i++) {
		if (w->levels[i].used && w->levels[i].qs.usage.flows)
			FG_STAT_SET(w->stats.levels[i].usage_overflowed, w->levels[i].qs.usage.overflowed);
		if (w->levels[i].used) /* the load estimate's (control/load.h) */
			FG_STAT_SET(w->stats.levels[i].guess_ns, w->levels[i].qs.guess_ns);
	}
	if (w->work_per_class) {
		uint32_t n = w->classguess.n < FG_WORK_CLASSES_EXPORTED ? w->classguess.n : FG_WORK_CLASSES_EXPORTED;
		for (uint32_t i = 0; i < n; i++)
			FG_STAT_SET(w->stats.work_estimate_ns[i], /* what it is priced with: within the bounds */
				    w->classguess.e[i].samples ? fg_classguess_get(&w->classguess, i, 0) : 0);
	}
	if (w->adaptive.on) {
		/* Held since the last look (a hold may last less than a look's
		 * interval), at any worker: the backends' limits bind. */
		uint64_t holds = FG_STAT_GET(w->stats.held_for_backend);
		bool held_here = holds != w->adaptive.holds_seen || w->held.head != FG_REQ_NIL;
		w->adaptive.holds_seen = holds;
		bool held = w->board ? fg_worker__held_anywhere(w, held_here) : held_here;
		fg_backendpool_set_pressure(&w->pool, levels_pressed(w), held_here, held);
	}
	fg_backendpool_refresh(&w->pool, now);
	for (uint32_t b = 0; b < w->pool.n; b++) {
		fg_worker__publish_backend(w, b, now);
		struct fg_backend_stats *bs = &w->stats.backends[b];
		FG_STAT_SET(bs->capacity, w->pool.b[b].capacity); /* an adaptive limit moves */
		FG_STAT_SET(bs->latency_ns, w->pool.b[b].latency_samples ? w->pool.b[b].latency_ns : 0);
		bool adaptive = w->pool.b[b].adaptive;
		const struct fg_adapt *a = adaptive ? &w->pool.adapt[b] : NULL;
		FG_STAT_SET(bs->learned_limit, adaptive ? a->limit : 0);
		FG_STAT_SET(bs->noload_ns, adaptive ? fg_adapt_noload_ns(a, FG_ADAPT_NARROW) : 0);
		FG_STAT_SET(bs->limit_reason, adaptive ? a->last_reason : 0);
		for (unsigned r = 0; r < FG_ADAPT_REASONS; r++)
			FG_STAT_SET(bs->limit_moves[r], adaptive ? a->moves[r] : 0);
	}
}

static inline struct fg_queueset *level_qs(struct fg_worker *w, const struct fg_req *r)
{
	return &w->levels[r->level].qs;
}

/* A flow's decayed usage at this worker (UsageBased levels), for status. */
static inline void publish_usage(struct fg_worker *w, const struct fg_req *r)
{
	if (r->qs.flow != FG_USAGE_NONE)
		FG_STAT_SET(w->stats.flows[r->flow].usage_us,
			    (uint64_t)(fg_usage_of(&level_qs(w, r)->usage, r->qs.flow) * 1e6));
}

static void leave_waiting(struct fg_worker *w, uint32_t slot)
{
	struct fg_req *r = &w->reqs.slots[slot];
	fg_reqlist_remove(&w->reqs, &w->waiting, slot);
	FG_STAT_ADD(w->stats.flows[r->flow].waiting, -1);
	FG_STAT_ADD(w->stats.flows[r->flow].seats_waiting, -(int32_t)r->qs.seats);
	if (w->apf_metrics) {
		struct fg_apf_pair *p = apf_pair(w, r->pair);
		fg_apf_gauge(&p->inqueue, -1);
		fg_apf_gauge(&p->inqueue_seats, -(int32_t)r->qs.seats);
	}
}

static void release_lingering(struct fg_worker *w, uint32_t slot, uint64_t now)
{
	struct fg_req *r = &w->reqs.slots[slot];
	fg_qs_release(level_qs(w, r), &r->qs, now);
	apf_seats_released(w, r);
	fg_reqtable_release(&w->reqs, slot);
	publish_level(w, r);
}

struct lingering_done {
	struct fg_worker *w;
	uint64_t now;
};

/* The wheel's callback: an answered request's extra latency is over. */
static void lingering_over(void *ctx, uint32_t slot)
{
	struct lingering_done *d = ctx;
	release_lingering(d->w, slot, d->now);
}

struct release_levels {
	struct lingering_done done;
	const bool *levels;
};

static int lingers_in(void *ctx, uint32_t slot)
{
	struct release_levels *rl = ctx;
	return rl->levels[rl->done.w->reqs.slots[slot].level];
}

static void release_in(void *ctx, uint32_t slot)
{
	struct release_levels *rl = ctx;
	release_lingering(rl->done.w, slot, rl->done.now);
}

void fg_worker__release_lingering(struct fg_worker *w, const bool levels[FG_MAX_LEVELS], uint64_t now)
{
	struct release_levels rl = { { w, now }, levels };
	fg_wheel_expire_if(&w->lingering, &w->reqs, lingers_in, release_in, &rl);
}

/* How a request stopped executing. */
enum left_by { LEFT_UNANSWERED, LEFT_RESPONSE, LEFT_BACKEND_REJECT };

/* The request stops executing; its seats go back now or after its extra
 * latency.  Only a RESPONSE teaches the backend's latency (adaptive limit,
 * stall check) and the class's service time: a backend that refuses fast
 * has not shown it can serve more (adaptive-limit.md). */
static void leave_executing(struct fg_worker *w, uint32_t slot, uint64_t now, enum left_by how)
{
	struct fg_req *r = &w->reqs.slots[slot];
	bool answered = how != LEFT_UNANSWERED;
	fg_reqlist_remove(&w->reqs, &w->executing, slot);
	uint64_t ejections = w->pool.b[r->backend].ejections;
	if (how == LEFT_RESPONSE) {
		fg_backendpool_learn_latency(&w->pool, r->backend, r->qs.seats, now - r->qs.dispatch_ns, now);
		if (w->work_per_class)
			fg_classguess_learn(&w->classguess, fg_classguess_index(r->pair, (enum fg_verb_class)r->verb_class),
					    now - r->qs.dispatch_ns);
	}
	fg_backendpool_done(&w->pool, r->backend, r->qs.seats, answered, now);
	struct fg_backend_stats *bs = &w->stats.backends[r->backend];
	if (unlikely(w->pool.b[r->backend].ejections != ejections)) {
		FG_STAT_ADD(w->stats.backend_ejections, 1);
		FG_STAT_ADD(bs->ejections, 1);
	}
	fg_worker__publish_backend(w, r->backend, now);
	FG_STAT_ADD(w->stats.flows[r->flow].executing, -1);
	FG_STAT_ADD(w->stats.flows[r->flow].seats_executing, -(int32_t)r->qs.seats);
	FG_STAT_ADD(w->stats.levels[r->level].executing, -1);
	if (w->apf_metrics) {
		struct fg_apf_pair *p = apf_pair(w, r->pair);
		fg_apf_gauge(&p->executing, -1);
		fg_apf_observe_ns(p, FG_APF_EXECUTION, now - r->qs.dispatch_ns);
	}
	uint64_t release = fg_qs_finish(level_qs(w, r), &r->qs, now);
	publish_usage(w, r);
	if (release && answered) {
		r->state = FG_REQ_LINGERING;
		r->release_ns = release;
		fg_wheel_add(&w->lingering, &w->reqs, slot);
	} else {
		if (release)
			fg_qs_release(level_qs(w, r), &r->qs, now); /* a failed request holds nothing longer */
		apf_seats_released(w, r);
		fg_reqtable_release(&w->reqs, slot);
	}
	publish_level(w, r);
}

/* Send a request the queue set just admitted to backend b (the caller chose
 * a usable one).  The packet's id becomes the dispatch id; the client's id
 * stays in the slot. */
static void send_to_backend(struct fg_worker *w, const struct fg_config *cfg, uint32_t slot, uint32_t b,
			    uint64_t now)
{
	struct fg_req *r = &w->reqs.slots[slot];
	r->state = FG_REQ_EXECUTING;
	r->backend = (uint8_t)b;
	r->deadline_ns = now + cfg->backend_timeout_ns;
	fg_reqlist_push_tail(&w->reqs, &w->executing, slot);
	r->nonce = fg_nonce_next(&w->nonces);
	struct fg_pkt pkt = fg_req_pkt(r);
	r->pkt_handle = NULL;
	fg_proto_set_request_id(pkt.data, fg_dispatch_id(w->id, r, slot));
	pkt.peer = cfg->backends[b].ep;
	FG_STAT_ADD(w->stats.backends[b].dispatched, 1);
	fg_worker__publish_backend(w, b, now);
	send_pkt(w, &pkt, false);
}

static bool start_executing(struct fg_worker *w, const struct fg_config *cfg, uint32_t slot, uint64_t now)
{
	struct fg_req *r = &w->reqs.slots[slot];
	/* Behind requests already held for room: first come, first sent. */
	uint32_t b = w->held.head == FG_REQ_NIL ? fg_backendpool_pick(&w->pool, r->qs.seats, now) : FG_BACKEND_NONE;
	if (b == FG_BACKEND_NONE && !fg_backendpool_usable(&w->pool, now))
		return false;
	FG_STAT_ADD(w->stats.dispatched, 1);
	FG_STAT_ADD(w->stats.levels[r->level].dispatched, 1);
	FG_STAT_ADD(w->stats.levels[r->level].executing, 1);
	FG_STAT_ADD(w->stats.flows[r->flow].dispatched, 1);
	FG_STAT_ADD(w->stats.flows[r->flow].executing, 1);
	FG_STAT_ADD(w->stats.flows[r->flow].seats_executing, r->qs.seats);
	publish_usage(w, r);
	if (w->apf_metrics) {
		struct fg_apf_pair *p = apf_pair(w, r->pair);
		fg_apf_gauge(&p->executing, 1);
		fg_apf_gauge(&p->executing_seats, (int32_t)r->qs.seats);
		FG_STAT_SET(w->stats.levels[r->level].dispatch_r, level_qs(w, r)->r);
	}
	if (b == FG_BACKEND_NONE) {
		/* Every usable backend is at its capacity: hold the packet (the
		 * seats are taken) until one has room, at most the backend timeout. */
		r->state = FG_REQ_HELD;
		r->deadline_ns = now + cfg->backend_timeout_ns;
		fg_reqlist_push_tail(&w->reqs, &w->held, slot);
		FG_STAT_ADD(w->stats.held_for_backend, 1);
	} else {
		send_to_backend(w, cfg, slot, b, now);
	}
	publish_level(w, r);
	return true;
}

/* Held requests go out first come, first served as backends get room. */
static void send_held(struct fg_worker *w, const struct fg_config *cfg, uint64_t now)
{
	while (w->held.head != FG_REQ_NIL) {
		uint32_t slot = w->held.head;
		uint32_t b = fg_backendpool_pick(&w->pool, w->reqs.slots[slot].qs.seats, now);
		if (b == FG_BACKEND_NONE)
			return;
		fg_reqlist_remove(&w->reqs, &w->held, slot);
		/* Its execution starts now: the hold is not service time (the
		 * level's learned guess, the backend's learned latency). */
		w->reqs.slots[slot].qs.dispatch_ns = now;
		send_to_backend(w, cfg, slot, b, now);
	}
}


/* Answer a request that still holds its packet with a REJECT, and free its
 * slot (the queue set has already let it go). */
static void reject_held(struct fg_worker *w, const struct fg_config *cfg, uint32_t slot, enum fg_reject_reason reason,
			uint64_t now)
{
	struct fg_req *r = &w->reqs.slots[slot];
	struct fg_pkt pkt = fg_req_pkt(r);
	uint64_t id = r->client_id;
	uint32_t flow = r->flow, level = r->level;
	uint16_t pair = r->pair;
	fg_reqtable_release(&w->reqs, slot);
	publish_level(w, r);
	reject_request(w, cfg, &pkt, id, flow, level, pair, reason, now);
}

/* A request the queue set let go that will not execute (its client gave up,
 * or no backend is usable): the queue keeps the cost of its turn and the
 * seats come back now. */
static void refuse_admitted(struct fg_worker *w, const struct fg_config *cfg, uint32_t slot,
			    enum fg_reject_reason reason, uint64_t now)
{
	struct fg_req *r = &w->reqs.slots[slot];
	fg_qs_release(level_qs(w, r), &r->qs, now);
	reject_held(w, cfg, slot, reason, now);
}

/* A held request that will not be sent (no backend got room within the
 * backend timeout, or shutdown): its seats come back, its client is answered. */
static void give_up_held(struct fg_worker *w, const struct fg_config *cfg, uint32_t slot,
			 enum fg_reject_reason reason, uint64_t now)
{
	struct fg_req *r = &w->reqs.slots[slot];
	fg_reqlist_remove(&w->reqs, &w->held, slot);
	FG_STAT_ADD(w->stats.levels[r->level].executing, -1);
	FG_STAT_ADD(w->stats.flows[r->flow].executing, -1);
	FG_STAT_ADD(w->stats.flows[r->flow].seats_executing, -(int32_t)r->qs.seats);
	if (w->apf_metrics)
		fg_apf_gauge(&apf_pair(w, r->pair)->executing, -1);
	apf_seats_released(w, r);
	refuse_admitted(w, cfg, slot, reason, now);
}

/* --- arrivals and answers ---------------------------------------------- */

/* The flow-statistics key of a classified request: its flow hash, or, on
 * levels without queues (no flows: hash 0), a hash that still keeps schema
 * and distinguisher apart. */
static uint64_t stats_key_of(const struct fg_config *cfg, const struct fg_fc_match *match)
{
	if (match->flow_hash)
		return match->flow_hash;
	const char *schema = cfg->fc->schema_names[match->schema];
	return fg_flow_hash(schema, strlen(schema), match->distinguisher.ptr, match->distinguisher.len);
}

/* Count a classified request as received here: the totals, its flow's row
 * (found or taken) and its level.  Returns the flow's row, which its answer
 * is then charged to, so that each row's answers add up to its arrivals. */
static uint32_t count_received(struct fg_worker *w, const struct fg_config *cfg, const struct fg_fc_match *match,
			       uint64_t stats_key, uint16_t level)
{
	FG_STAT_ADD(w->stats.received, 1);
	uint32_t flow = fg_stats_flow(&w->stats, stats_key, level, cfg->fc->schema_names[match->schema],
				      match->distinguisher.ptr, match->distinguisher.len);
	FG_STAT_ADD(w->stats.flows[flow].received, 1);
	if (unlikely(w->stats.flows[flow].weight != match->weight))
		FG_STAT_SET(w->stats.flows[flow].weight, match->weight);
	FG_STAT_ADD(w->stats.levels[level].received, 1);
	return flow;
}

/* The one way an arrival that was classified is refused: counted as
 * received (its flow's row, its level) and as rejected, observed with no
 * wait as Kubernetes does, and answered in place of its datagram. */
static void refuse_arrival(struct fg_worker *w, const struct fg_config *cfg, struct fg_pkt *pkt,
			   const struct fg_hdr *hdr, const struct fg_work *work, const struct fg_fc_match *match,
			   uint64_t stats_key, uint16_t level, enum fg_reject_reason reason, uint64_t now)
{
	uint32_t flow = count_received(w, cfg, match, stats_key, level);
	uint16_t pair = apf_classified(w, match, work);
	if (w->apf_metrics)
		fg_apf_observe_ns(apf_pair(w, pair), FG_APF_WAIT_REJECTED, 0);
	reject_request(w, cfg, pkt, hdr->request_id, flow, level, pair, reason, now);
}

/* Why a classified arrival cannot be admitted into its level here, or
 * FG_REJECT_NONE with *slot its new request slot, already in the queue set. */
static enum fg_reject_reason try_admit(struct fg_worker *w, const struct fg_work *work,
				       const struct fg_fc_match *match, uint16_t level, uint64_t now, uint32_t *slot)
{
	if (unlikely(w->draining))
		return FG_REJECT_SHUTTING_DOWN;
	if (unlikely(!fg_backendpool_usable(&w->pool, now)))
		return FG_REJECT_NO_BACKEND; /* none configured, or all ejected */
	if (unlikely((*slot = fg_reqtable_alloc(&w->reqs)) == FG_REQ_NIL))
		return FG_REJECT_QUEUE_FULL; /* the table is sized by validation; defensive */
	struct fg_req *r = &w->reqs.slots[*slot];
	r->level = (uint8_t)level;
	uint32_t weight = match->weight, queue = FG_QS_NO_QUEUE; /* the queue set's own choice */
	struct fg_queueset *qs = level_qs(w, r);
	if (w->board && qs->cfg.mode == FG_QS_QUEUE)
		weight = fg_worker__local_weight(w, level, match, &queue);
	/* Priced with its class's service time (a set that does not take the
	 * caller's price ignores it). */
	r->verb_class = work->verb_class;
	r->pair = w->pair_of_schema[match->schema];
	uint64_t guess = w->work_per_class ? fg_classguess_get(&w->classguess,
							       fg_classguess_index(r->pair, (enum fg_verb_class)r->verb_class),
							       qs->guess_ns)
					   : 0;
	switch (fg_qs_arrive_priced(qs, &r->qs, queue, match->flow_hash, work->initial_seats, work->final_seats,
				    work->extra_latency_ns, weight, guess, now)) {
	case FG_QS_REJECT_QUEUE_FULL:
		fg_reqtable_release(&w->reqs, *slot);
		return FG_REJECT_QUEUE_FULL;
	case FG_QS_REJECT_CONCURRENCY:
		fg_reqtable_release(&w->reqs, *slot);
		return FG_REJECT_CONCURRENCY_LIMIT;
	default:
		return FG_REJECT_NONE;
	}
}

/* Admit a classified request (stage 3 of a burst) into this worker's queue
 * set of its level: with several workers too, a request waits and runs at
 * the worker that received it (worker.h). */
static void admit(struct fg_worker *w, const struct fg_config *cfg, struct fg_pkt *pkt, const struct fg_hdr *hdr,
		  const struct fg_work *work, const struct fg_fc_match *match, uint64_t stats_key, uint64_t now)
{
	uint16_t level = w->level_of_cfg[match->level];
	uint32_t slot = FG_REQ_NIL;
	enum fg_reject_reason reason = try_admit(w, work, match, level, now, &slot);
	if (reason) {
		refuse_arrival(w, cfg, pkt, hdr, work, match, stats_key, level, reason, now);
		return;
	}
	uint32_t flow = count_received(w, cfg, match, stats_key, level);
	uint16_t pair = apf_classified(w, match, work);
	struct fg_req *r = &w->reqs.slots[slot];
	r->flow = flow;
	r->pair = pair;
	r->client_id = hdr->request_id;
	r->client_deadline_ms = hdr->deadline_ms; /* after qs.arrival_ns, which the queue set set to now */
	fg_req_hold_pkt(r, pkt);
	if (r->qs.state == FG_QS_EXECUTING) { /* exempt or reject-type level with room */
		bool started = start_executing(w, cfg, slot, now);
		apf_waited(w, r, started, now);
		if (!started)
			refuse_admitted(w, cfg, slot, FG_REJECT_NO_BACKEND, now);
		return;
	}
	r->state = FG_REQ_WAITING;
	r->deadline_ns = now + cfg->queue_wait_ns;
	fg_reqlist_push_tail(&w->reqs, &w->waiting, slot);
	FG_STAT_ADD(w->stats.flows[flow].waiting, 1);
	FG_STAT_ADD(w->stats.flows[flow].seats_waiting, r->qs.seats);
	if (w->apf_metrics) {
		struct fg_apf_pair *p = apf_pair(w, pair);
		fg_apf_gauge(&p->inqueue, 1);
		fg_apf_gauge(&p->inqueue_seats, (int32_t)r->qs.seats);
		fg_apf_observe_count(p, FG_APF_QUEUE_LENGTH, level_qs(w, r)->queues[r->qs.queue].n_waiting);
	}
	publish_level(w, r);
	/* Dispatch at once, so that the next arrival's queue-full test sees the
	 * seats this one took (KEP "Queuing"). */
	dispatch_level(w, cfg, level, now);
}

/* Pass an answer to the worker that owns its request; false when the ring is
 * full (the caller drops it: its request times out and is answered). */
static bool hand_over(struct fg_worker *w, unsigned owner, const struct fg_handoff *h)
{
	struct fg_spsc *ring = &w->mesh->rings[w->id * w->mesh->n_workers + owner];
	if (unlikely(!fg_spsc_push(ring, h, sizeof(*h)))) {
		FG_STAT_ADD(w->stats.handoff_refused, 1);
		return false;
	}
	return true;
}

/* A source that has not shown a valid cookie: answer with one (REJECT
 * retry-with-cookie), never with more bytes than it sent, and nothing else.
 * Not a received request: it was neither classified nor counted there. */
static void challenge_source(struct fg_worker *w, struct fg_pkt *pkt, uint64_t id, uint64_t now)
{
	uint8_t cookie[FG_COOKIE_LEN];
	bool room = pkt->len >= FG_PROTO_HDR_LEN + FG_PROTO_ATTR_HDR + FG_COOKIE_LEN;
	if (room)
		fg_cookie_make(&w->cookies, pkt->peer.ip, now, cookie);
	FG_STAT_ADD(w->stats.cookie_challenges, 1);
	pkt->len = (uint32_t)fg_proto_encode_cookie_reject(pkt->data, pkt->cap, id, 0, room ? cookie : NULL,
							  FG_COOKIE_LEN);
	send_pkt(w, pkt, true);
}

/* Classify a decoded request (stage 2 of a burst).  False when it has been
 * answered already: a configuration this worker could not follow, or a
 * source that must first show a cookie. */
static bool classify_request(struct fg_worker *w, const struct fg_config *cfg, struct fg_pkt *pkt,
			     const struct fg_msg *m, struct fg_fc_match *match, struct fg_work *work, uint64_t now)
{
	if (unlikely(w->config_generation != cfg->generation)) {
		/* The new configuration could not be followed (out of memory):
		 * refuse rather than queue into levels it no longer describes. */
		FG_STAT_ADD(w->stats.received, 1);
		FG_STAT_ADD(w->stats.rejected[FG_REJECT_CONCURRENCY_LIMIT], 1);
		FG_STAT_ADD(w->stats.unfollowed_rejected, 1);
		reject_in_place(w, pkt, m->hdr.request_id, FG_REJECT_CONCURRENCY_LIMIT, fixed_retry_ms(cfg));
		return false;
	}
	bool trusted = fg_trust_source(&cfg->trust, pkt->peer.ip);
	if (unlikely(fg_trust_needs_cookie(&cfg->trust, trusted)) &&
	    !fg_cookie_valid(&w->cookies, pkt->peer.ip, (const uint8_t *)m->cookie.ptr, m->cookie.len, now)) {
		challenge_source(w, pkt, m->hdr.request_id, now);
		return false;
	}
	struct fg_fc_request fr;
	fg_fc_request_from_msg(m, &fr);
	if (unlikely(!trusted)) {
		/* Its identity claims are not believed (security.md), and the
		 * backend is told so. */
		FG_STAT_ADD(w->stats.untrusted_requests, 1);
		fg_trust_assign_identity(&cfg->trust, pkt->peer.ip, &fr);
		fr.claimed = true;
		fg_proto_add_flags(pkt->data, FG_FLAG_IDENTITY_UNVERIFIED);
	}
	fg_fc_classify(cfg->fc, &fr, match);
	fg_work_estimate(m->verb, &m->hdr, trusted, cfg->fc->levels[match->level].max_seats, cfg->max_extra_latency_ns,
			 work);
	return true;
}

static void handle_answer(struct fg_worker *w, const struct fg_config *cfg, struct fg_pkt *pkt,
			  const struct fg_hdr *hdr, uint64_t now)
{
	uint32_t slot = fg_reqtable_lookup(&w->reqs, w->id, hdr->request_id);
	struct fg_req *r = slot == FG_REQ_NIL ? NULL : &w->reqs.slots[slot];
	/* Only the backend the request went to may answer it. */
	if (!r || r->backend >= cfg->n_backends ||
	    !fg_endpoint_same_addr(&pkt->peer, &cfg->backends[r->backend].ep)) {
		FG_STAT_ADD(w->stats.responses_unmatched, 1);
		w->io.ops->free(w->io.ctx, pkt);
		return;
	}
	if (hdr->type == FG_MSG_REJECT)
		count_reject(w, r->flow, r->level, (enum fg_reject_reason)hdr->reason);
	else {
		FG_STAT_ADD(w->stats.responded, 1);
		FG_STAT_ADD(w->stats.levels[r->level].responded, 1);
		FG_STAT_ADD(w->stats.flows[r->flow].responded, 1);
	}
	fg_proto_set_request_id(pkt->data, r->client_id);
	pkt->peer = r->client;
	if (unlikely(cfg->answer_load))
		attach_load(w, cfg, pkt, r->level, UINT32_MAX, true);
	leave_executing(w, slot, now, hdr->type == FG_MSG_REJECT ? LEFT_BACKEND_REJECT : LEFT_RESPONSE);
	send_pkt(w, pkt, true);
}

/* --- a received burst, stage by stage ---------------------------------- */

/*
 * The datagrams of a burst go through each stage together rather than one
 * by one through every stage, so that each stage's memory accesses for the
 * next datagrams are already under way (prefetched) while it works on the
 * current one, as vector packet processors do:
 *   1. decode every fixed header; malformed datagrams are answered, answers
 *      for another worker forwarded; prefetch the request slot an answer names;
 *   2. decode and classify every request; prefetch the flow statistics
 *      each request and answer will touch;
 *   3. queue every request and relay every answer, in arrival order.
 * Nothing a later stage does for one datagram changes what an earlier stage
 * decided for another: stages 1 and 2 read only the configuration and the
 * datagram (and answer the ones that go no further), so the outcome is that
 * of handling the datagrams one after the other.
 */
enum rx_kind { RX_DONE = 0, RX_REQUEST, RX_ANSWER };

struct rx_item {
	struct fg_hdr hdr;
	uint8_t kind;
	uint64_t stats_key;        /* requests: their flow-statistics key */
	struct fg_fc_match match;  /* requests, once classified */
	struct fg_work work;
};

/* A datagram that does not decode: counted, and answered REJECT invalid
 * when it is at least a header long (no amplification), else dropped. */
static void rx_malformed(struct fg_worker *w, const struct fg_config *cfg, struct fg_pkt *pkt,
			 enum fg_proto_err err)
{
	FG_STAT_ADD(w->stats.rx_malformed, 1);
	FG_STAT_ADD(w->stats.malformed_by_err[err], 1);
	uint64_t id;
	if (pkt->len >= FG_PROTO_HDR_LEN && pkt->len <= FG_PROTO_MAX_DATAGRAM &&
	    fg_proto_peek_id(pkt->data, pkt->len, &id) == 0) {
		FG_STAT_ADD(w->stats.invalid_rejected, 1);
		reject_in_place(w, pkt, id, FG_REJECT_INVALID, fixed_retry_ms(cfg));
	} else {
		w->io.ops->free(w->io.ctx, pkt);
	}
}

/* Stage 1.  RX_DONE when the datagram is already dealt with. */
static enum rx_kind decode_header(struct fg_worker *w, const struct fg_config *cfg, struct fg_pkt *pkt,
				  struct fg_msg *m)
{
	FG_STAT_ADD(w->stats.rx_datagrams, 1);
	enum fg_proto_err err = fg_proto_decode_header(pkt->data, pkt->len, m);
	if (unlikely(err)) {
		rx_malformed(w, cfg, pkt, err);
		return RX_DONE;
	}
	if (m->hdr.type == FG_MSG_REQUEST) {
		if (likely(!pkt->backend_side))
			return RX_REQUEST;
		/* A request to the port the backends answer on: not a client's way in. */
		FG_STAT_ADD(w->stats.rx_unexpected, 1);
		w->io.ops->free(w->io.ctx, pkt);
		return RX_DONE;
	}
	unsigned owner = fg_dispatch_id_worker(m->hdr.request_id);
	if (owner == w->id) {
		/* Only an answer is relayed on its header: its request's slot is
		 * what it needs next. */
		uint32_t slot = fg_dispatch_id_slot(m->hdr.request_id);
		if (slot < w->reqs.cap)
			__builtin_prefetch(&w->reqs.slots[slot], 1);
		return RX_ANSWER;
	}
	if (w->mesh && owner < w->mesh->n_workers && w->io.ops->pool_per_lane) {
		/* Its buffer cannot leave this worker's pool (socket mode, where a
		 * backend answers the socket that sent the request): not for us. */
		FG_STAT_ADD(w->stats.responses_unmatched, 1);
		w->io.ops->free(w->io.ctx, pkt);
	} else if (w->mesh && owner < w->mesh->n_workers) {
		struct fg_handoff h = { .pkt = *pkt, .hdr = m->hdr };
		if (hand_over(w, owner, &h))
			FG_STAT_ADD(w->stats.answers_forwarded, 1);
		else
			w->io.ops->free(w->io.ctx, pkt); /* its request times out and is answered */
	} else {
		FG_STAT_ADD(w->stats.rx_unexpected, 1);
		w->io.ops->free(w->io.ctx, pkt);
	}
	return RX_DONE;
}

/* Stage 2 for one datagram: classify a request; prefetch for both kinds. */
static void classify_item(struct fg_worker *w, const struct fg_config *cfg, struct fg_pkt *pkt,
			  struct rx_item *it, struct fg_msg *m, uint64_t now)
{
	if (it->kind == RX_ANSWER) {
		/* Looked up again in stage 3: an earlier answer of the burst
		 * (a duplicate) may end the request first. */
		uint32_t slot = fg_reqtable_lookup(&w->reqs, w->id, it->hdr.request_id);
		if (slot != FG_REQ_NIL)
			fg_stats_flow_prefetch_entry(&w->stats, w->reqs.slots[slot].flow);
		return;
	}
	m->hdr = it->hdr;
	enum fg_proto_err err = fg_proto_decode_attrs(pkt->data, m);
	if (unlikely(err)) {
		rx_malformed(w, cfg, pkt, err);
		it->kind = RX_DONE;
		return;
	}
	if (!classify_request(w, cfg, pkt, m, &it->match, &it->work, now)) {
		it->kind = RX_DONE;
		return;
	}
	it->stats_key = stats_key_of(cfg, &it->match);
	fg_stats_flow_prefetch(&w->stats, it->stats_key);
}

void fg_worker_handle_burst(struct fg_worker *w, const struct fg_config *cfg, struct fg_pkt *pkts, unsigned n,
			    uint64_t now)
{
	struct rx_item items[FG_RX_BURST];
	struct fg_msg m;
	for (unsigned done = 0; done < n; done += FG_RX_BURST) {
		struct fg_pkt *p = pkts + done;
		unsigned k = n - done < FG_RX_BURST ? n - done : FG_RX_BURST;
		for (unsigned i = 0; i < k; i++) {
			items[i].kind = (uint8_t)decode_header(w, cfg, &p[i], &m);
			items[i].hdr = m.hdr;
		}
		for (unsigned i = 0; i < k; i++)
			if (items[i].kind != RX_DONE)
				classify_item(w, cfg, &p[i], &items[i], &m, now);
		for (unsigned i = 0; i < k; i++) {
			const struct rx_item *it = &items[i];
			if (it->kind == RX_REQUEST)
				admit(w, cfg, &p[i], &it->hdr, &it->work, &it->match, it->stats_key, now);
			else if (it->kind == RX_ANSWER)
				handle_answer(w, cfg, &p[i], &it->hdr, now);
		}
	}
}

void fg_worker_handle(struct fg_worker *w, const struct fg_config *cfg, struct fg_pkt *pkt, uint64_t now)
{
	fg_worker_handle_burst(w, cfg, pkt, 1, now);
}

/* --- expiry, dispatch, shutdown ---------------------------------------- */

static void reject_waiting(struct fg_worker *w, const struct fg_config *cfg, uint32_t slot,
			   enum fg_reject_reason reason, uint64_t now)
{
	struct fg_req *r = &w->reqs.slots[slot];
	leave_waiting(w, slot);
	apf_waited(w, r, false, now);
	fg_qs_remove_waiting(level_qs(w, r), &r->qs, now);
	reject_held(w, cfg, slot, reason, now);
}

void fg_worker_expire(struct fg_worker *w, const struct fg_config *cfg, uint64_t now)
{
	/* Both lists are in deadline order as long as the limits stay put; after
	 * a limit change an entry waits at most until the older head expires. */
	while (w->waiting.head != FG_REQ_NIL && w->reqs.slots[w->waiting.head].deadline_ns <= now)
		reject_waiting(w, cfg, w->waiting.head, FG_REJECT_TIME_OUT, now);
	while (w->held.head != FG_REQ_NIL && w->reqs.slots[w->held.head].deadline_ns <= now)
		give_up_held(w, cfg, w->held.head, FG_REJECT_NO_BACKEND, now);
	while (w->executing.head != FG_REQ_NIL && w->reqs.slots[w->executing.head].deadline_ns <= now) {
		uint32_t slot = w->executing.head;
		FG_STAT_ADD(w->stats.backends[w->reqs.slots[slot].backend].timeouts, 1); /* not shutdown aborts */
		reject_to_client(w, cfg, &w->reqs.slots[slot], FG_REJECT_BACKEND_TIMEOUT, now);
		leave_executing(w, slot, now, LEFT_UNANSWERED);
	}
	struct lingering_done done = { w, now };
	fg_wheel_expire(&w->lingering, &w->reqs, now, lingering_over, &done);
}

void fg_worker__end_at_backend(struct fg_worker *w, const struct fg_config *cfg, uint32_t b, uint64_t now)
{
	uint32_t slot = w->executing.head;
	while (slot != FG_REQ_NIL) {
		uint32_t next = w->reqs.slots[slot].next; /* leave_executing unlinks slot */
		if (w->reqs.slots[slot].backend == b) {
			reject_to_client(w, cfg, &w->reqs.slots[slot], FG_REJECT_BACKEND_TIMEOUT, now);
			leave_executing(w, slot, now, LEFT_UNANSWERED);
		}
		slot = next;
	}
}

/* A head that must wait for seats counts once in no_accommodation (the
 * dispatch is retried every poll, so counting attempts would count polls). */
static void note_blocked_head(struct fg_worker *w, struct fg_level_rt *rt)
{
	uint32_t slot = slot_of(w, rt->qs.blocked);
	const struct fg_req *r = &w->reqs.slots[slot];
	if (slot == rt->noted_head && r->qs.arrival_ns == rt->noted_head_arrival)
		return;
	rt->noted_head = slot;
	rt->noted_head_arrival = r->qs.arrival_ns;
	fg_apf_add(&apf_pair(w, r->pair)->no_accommodation, 1);
}

static void dispatch_level(struct fg_worker *w, const struct fg_config *cfg, uint32_t level, uint64_t now)
{
	struct fg_level_rt *rt = &w->levels[level];
	uint64_t blocked = rt->qs.stats.blocked_by_width;
	struct fg_qs_req *q;
	while ((q = fg_qs_dispatch_next(&rt->qs, now))) {
		uint32_t slot = slot_of(w, q);
		struct fg_req *r = &w->reqs.slots[slot];
		leave_waiting(w, slot);
		if (fg_req_client_deadline(r) <= now) {
			apf_waited(w, r, false, now);
			refuse_admitted(w, cfg, slot, FG_REJECT_TIME_OUT, now);
		} else if (!start_executing(w, cfg, slot, now)) {
			apf_waited(w, r, false, now);
			refuse_admitted(w, cfg, slot, FG_REJECT_NO_BACKEND, now);
		} else {
			apf_waited(w, r, true, now);
		}
	}
	if (unlikely(rt->qs.stats.blocked_by_width != blocked) && w->apf_metrics)
		note_blocked_head(w, rt);
}

void fg_worker_dispatch(struct fg_worker *w, const struct fg_config *cfg, uint64_t now)
{
	if (unlikely(w->held.head != FG_REQ_NIL))
		send_held(w, cfg, now);
	for (uint32_t i = 0; i < w->n_levels; i++)
		if (w->levels[i].used && w->levels[i].qs.n_waiting) /* nothing waits: nothing to dispatch */
			dispatch_level(w, cfg, i, now);
	fg_worker__retire_idle_levels(w);
}

/* What the other workers passed over: answers for this worker's requests
 * (the backend's answer arrived at another worker).  A burst per ring per
 * poll. */
static unsigned take_handoffs(struct fg_worker *w, const struct fg_config *cfg, uint64_t now)
{
	unsigned n_workers = w->mesh->n_workers, taken = 0;
	struct fg_handoff hs[FG_RX_BURST];
	for (unsigned from = 0; from < n_workers; from++) {
		if (from == w->id)
			continue;
		unsigned n = fg_spsc_pop(&w->mesh->rings[from * n_workers + w->id], hs, FG_RX_BURST, sizeof(hs[0]));
		taken += n;
		for (unsigned i = 0; i < n; i++)
			handle_answer(w, cfg, &hs[i].pkt, &hs[i].hdr, now);
	}
	return taken;
}

unsigned fg_worker_poll(struct fg_worker *w, const struct fg_config *cfg, uint64_t now)
{
	/* A new configuration: follow it before touching any request. */
	if (unlikely(cfg->generation != w->config_generation))
		fg_worker_configure(w, cfg, now);
	if (w->board && likely(w->config_generation == cfg->generation))
		fg_worker__follow_grants(w, now);
	if (cfg->limits && likely(w->config_generation == cfg->generation)) {
		uint32_t seq = __atomic_load_n(&cfg->limits->seq, __ATOMIC_ACQUIRE);
		if (unlikely(seq != w->limits_seq))
			fg_worker__follow_limits(w, cfg->limits, seq, now);
	}
	if (unlikely(w->pool.changes != w->pool_changes_seen))
		fg_worker__follow_capacity(w, now);
	unsigned taken = w->mesh ? take_handoffs(w, cfg, now) : 0;
	struct fg_pkt pkts[FG_RX_BURST];
	unsigned n = w->io.ops->rx(w->io.ctx, pkts, FG_RX_BURST);
	fg_worker_handle_burst(w, cfg, pkts, n, now);
	fg_worker_expire(w, cfg, now);
	fg_worker_dispatch(w, cfg, now);
	fg_worker__snapshot_poll(w, now);
	if (unlikely(w->n_reserve < FG_ANSWER_RESERVE))
		refill_reserve(w);
	if (unlikely(now >= w->periodic_due))
		publish_periodic(w, now);
	if (w->io.ops->tick)
		w->io.ops->tick(w->io.ctx, now);
	flush(w);
	return n + taken;
}

void fg_worker_poll_handoffs(struct fg_worker *w, const struct fg_config *cfg, uint64_t now)
{
	if (w->mesh)
		take_handoffs(w, cfg, now);
	flush(w);
}

void fg_worker_drain(struct fg_worker *w, const struct fg_config *cfg, uint64_t now)
{
	w->draining = true;
	while (w->waiting.head != FG_REQ_NIL)
		reject_waiting(w, cfg, w->waiting.head, FG_REJECT_SHUTTING_DOWN, now);
	flush(w);
}

void fg_worker_abort_executing(struct fg_worker *w, const struct fg_config *cfg, uint64_t now)
{
	while (w->executing.head != FG_REQ_NIL) {
		uint32_t slot = w->executing.head;
		reject_to_client(w, cfg, &w->reqs.slots[slot], FG_REJECT_SHUTTING_DOWN, now);
		leave_executing(w, slot, now, LEFT_UNANSWERED);
	}
	while (w->held.head != FG_REQ_NIL)
		give_up_held(w, cfg, w->held.head, FG_REJECT_SHUTTING_DOWN, now);
	struct lingering_done done = { w, now };
	fg_wheel_expire(&w->lingering, &w->reqs, UINT64_MAX, lingering_over, &done);
	flush(w);
}

uint64_t fg_worker_next_deadline(const struct fg_worker *w)
{
	uint64_t d = UINT64_MAX;
	if (w->waiting.head != FG_REQ_NIL)
		d = w->reqs.slots[w->waiting.head].deadline_ns;
	if (w->executing.head != FG_REQ_NIL && w->reqs.slots[w->executing.head].deadline_ns < d)
		d = w->reqs.slots[w->executing.head].deadline_ns;
	if (w->held.head != FG_REQ_NIL && w->reqs.slots[w->held.head].deadline_ns < d)
		d = w->reqs.slots[w->held.head].deadline_ns;
	uint64_t l = fg_wheel_next(&w->lingering);
	return l < d ? l : d;
}
