/* worker — one worker's dispatcher logic; see worker.h. */
#include "worker.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "flowcontrol.h"
#include "flowhash.h"
#include "proto.h"

#define unlikely(x) __builtin_expect(!!(x), 0)

static inline uint32_t slot_of(const struct fg_worker *w, const struct fg_qs_req *q)
{
	const struct fg_req *r = (const struct fg_req *)((const char *)q - offsetof(struct fg_req, qs));
	return (uint32_t)(r - w->reqs.slots);
}

static void dispatch_level(struct fg_worker *w, const struct fg_config *cfg, uint32_t level, uint64_t now);

int fg_worker_init(struct fg_worker *w, unsigned id, struct fg_io io, uint32_t max_requests)
{
	memset(w, 0, sizeof(*w));
	if (id >= FG_MAX_WORKERS)
		return -EINVAL;
	w->id = id;
	w->io = io;
	fg_reqlist_init(&w->waiting);
	fg_reqlist_init(&w->executing);
	fg_stats_init(&w->stats);
	w->lingering = malloc(sizeof(*w->lingering) * max_requests);
	if (!w->lingering)
		return -ENOMEM;
	int rc = fg_reqtable_init(&w->reqs, max_requests);
	if (rc) {
		free(w->lingering);
		w->lingering = NULL;
	}
	return rc;
}

void fg_worker_fini(struct fg_worker *w)
{
	/* Any held packet goes back to its pool. */
	for (uint32_t i = 0; w->reqs.slots && i < w->reqs.cap; i++)
		if (w->reqs.slots[i].state != FG_REQ_FREE && w->reqs.slots[i].pkt.handle)
			w->io.ops->free(w->io.ctx, &w->reqs.slots[i].pkt);
	fg_reqtable_fini(&w->reqs);
	for (uint32_t i = 0; i < w->n_levels; i++)
		if (w->levels[i].used)
			fg_qs_fini(&w->levels[i].qs);
	free(w->level_of_cfg);
	free(w->lingering);
	w->lingering = NULL;
}

static struct fg_qs_config qs_config_of(const struct fg_fc_level *l, unsigned worker, uint32_t slot)
{
	return (struct fg_qs_config){
		.mode = l->exempt ? FG_QS_EXEMPT : l->reject ? FG_QS_REJECT : FG_QS_QUEUE,
		.queues = l->queues, .hand_size = l->hand_size, .queue_length_limit = l->queue_length_limit,
		.concurrency_limit = l->limit, .max_seats = l->max_seats,
		.seed = 0x1040u + worker * 977u + slot,
	};
}

static void publish_level_shape(struct fg_worker *w, uint32_t slot, const struct fg_fc_level *l)
{
	struct fg_level_stats *ls = &w->stats.levels[slot];
	FG_STAT_SET(ls->limit, l->exempt ? 0 : l->limit);
	FG_STAT_SET(ls->queues, l->queues);
	FG_STAT_SET(ls->live, 1);
}

/* A removed level's slot is freed once nothing waits or holds a seat in it. */
static void retire_idle_levels(struct fg_worker *w)
{
	for (uint32_t i = 0; i < w->n_levels; i++) {
		struct fg_level_rt *rt = &w->levels[i];
		if (rt->used && !rt->live && fg_qs_idle(&rt->qs)) {
			fg_qs_fini(&rt->qs);
			rt->used = false;
			__atomic_store_n(&w->stats.levels[i].used, 0, __ATOMIC_RELEASE);
		}
	}
}

int fg_worker_configure(struct fg_worker *w, const struct fg_config *cfg, uint64_t now)
{
	const struct fg_fc_config *fc = cfg->fc;
	uint16_t *map = calloc(fc->n_levels ? fc->n_levels : 1, sizeof(*map));
	if (!map)
		return -ENOMEM;
	bool keep[FG_MAX_LEVELS] = { false };
	int rc = 0;
	for (uint32_t i = 0; i < fc->n_levels && !rc; i++) {
		const struct fg_fc_level *l = &fc->levels[i];
		uint32_t slot = FG_MAX_LEVELS, free_slot = FG_MAX_LEVELS;
		for (uint32_t k = 0; k < w->n_levels; k++) {
			if (w->levels[k].used && !strcmp(w->stats.levels[k].name, l->name))
				slot = k;
			else if (!w->levels[k].used && free_slot == FG_MAX_LEVELS)
				free_slot = k;
		}
		if (slot < FG_MAX_LEVELS) {
			struct fg_qs_config qc = qs_config_of(l, w->id, slot);
			rc = fg_qs_reconfigure(&w->levels[slot].qs, &qc, now);
		} else {
			slot = free_slot < FG_MAX_LEVELS ? free_slot : w->n_levels;
			if (slot >= FG_MAX_LEVELS) {
				rc = -ENOSPC;
				break;
			}
			struct fg_qs_config qc = qs_config_of(l, w->id, slot);
			if (!(rc = fg_qs_init(&w->levels[slot].qs, &qc, now))) {
				struct fg_level_stats *ls = &w->stats.levels[slot];
				memset(ls, 0, sizeof(*ls));
				snprintf(ls->name, sizeof(ls->name), "%s", l->name);
				w->levels[slot].used = true;
				__atomic_store_n(&ls->used, 1, __ATOMIC_RELEASE);
				if (slot == w->n_levels)
					w->n_levels++;
			}
		}
		if (!rc) {
			map[i] = (uint16_t)slot;
			keep[slot] = true;
			publish_level_shape(w, slot, l);
		}
	}
	if (rc) {
		free(map);
		return rc;
	}
	for (uint32_t k = 0; k < w->n_levels; k++) {
		w->levels[k].live = w->levels[k].used && keep[k];
		if (w->levels[k].used && !keep[k])
			FG_STAT_SET(w->stats.levels[k].live, 0);
	}
	free(w->level_of_cfg);
	w->level_of_cfg = map;
	w->n_level_map = fc->n_levels;
	if (!w->config_generation)
		fg_backendpool_init(&w->pool, cfg->n_backends, cfg->eject_after, cfg->eject_ns, cfg->max_eject_ns);
	else
		fg_backendpool_resize(&w->pool, cfg->n_backends);
	w->config_generation = cfg->generation;
	retire_idle_levels(w);
	return 0;
}

/* --- lingering seats: a binary min-heap on release_ns ------------------ */

static inline uint64_t linger_key(const struct fg_worker *w, uint32_t i)
{
	return w->reqs.slots[w->lingering[i]].release_ns;
}

static void linger_push(struct fg_worker *w, uint32_t slot)
{
	uint32_t i = w->n_lingering++;
	w->lingering[i] = slot;
	while (i && linger_key(w, (i - 1) / 2) > linger_key(w, i)) {
		uint32_t p = (i - 1) / 2, t = w->lingering[p];
		w->lingering[p] = w->lingering[i];
		w->lingering[i] = t;
		i = p;
	}
}

static uint32_t linger_pop(struct fg_worker *w)
{
	uint32_t top = w->lingering[0];
	w->lingering[0] = w->lingering[--w->n_lingering];
	for (uint32_t i = 0;;) {
		uint32_t c = 2 * i + 1;
		if (c >= w->n_lingering)
			break;
		if (c + 1 < w->n_lingering && linger_key(w, c + 1) < linger_key(w, c))
			c++;
		if (linger_key(w, i) <= linger_key(w, c))
			break;
		uint32_t t = w->lingering[c];
		w->lingering[c] = w->lingering[i];
		w->lingering[i] = t;
		i = c;
	}
	return top;
}

/* --- sending ----------------------------------------------------------- */

static void flush(struct fg_worker *w)
{
	unsigned dropped = w->io.ops->flush(w->io.ctx);
	if (unlikely(dropped))
		FG_STAT_ADD(w->stats.tx_failed, dropped);
}

static void send_pkt(struct fg_worker *w, struct fg_pkt *pkt)
{
	FG_STAT_ADD(w->stats.tx_datagrams, 1);
	w->io.ops->tx(w->io.ctx, pkt);
}

/* Turn a received datagram into a REJECT in place and send it back to its
 * sender: no allocation, and never larger than what arrived. */
static void reject_in_place(struct fg_worker *w, const struct fg_config *cfg, struct fg_pkt *pkt,
			    uint64_t client_id, enum fg_reject_reason reason)
{
	pkt->len = (uint32_t)fg_proto_encode_reject(pkt->data, pkt->cap, client_id, reason, cfg->retry_after_ms);
	send_pkt(w, pkt);
}

static void count_reject(struct fg_worker *w, uint32_t flow, uint32_t level, enum fg_reject_reason reason)
{
	FG_STAT_ADD(w->stats.rejected[reason], 1);
	FG_STAT_ADD(w->stats.flows[flow].rejected, 1);
	if (level < FG_MAX_LEVELS)
		FG_STAT_ADD(w->stats.levels[level].rejected, 1);
}

/* Answer a request whose packet is gone (it went to a backend): a fresh buffer. */
static void reject_to_client(struct fg_worker *w, const struct fg_config *cfg, struct fg_req *r,
			     enum fg_reject_reason reason)
{
	struct fg_pkt pkt;
	count_reject(w, r->flow, r->level, reason);
	if (unlikely(w->io.ops->alloc(w->io.ctx, &pkt))) {
		FG_STAT_ADD(w->stats.tx_failed, 1);
		return;
	}
	pkt.peer = r->client;
	reject_in_place(w, cfg, &pkt, r->client_id, reason);
}

/* --- state changes ----------------------------------------------------- */

/* Gauges after a change in the request's level. */
static void publish_level(struct fg_worker *w, uint32_t slot)
{
	struct fg_queueset *qs = &w->levels[slot].qs;
	FG_STAT_SET(w->stats.waiting, w->waiting.count);
	FG_STAT_SET(w->stats.executing, w->executing.count);
	FG_STAT_SET(w->stats.levels[slot].waiting, qs->n_waiting);
	FG_STAT_SET(w->stats.levels[slot].seats_in_use, qs->seats_in_use);
}

static inline struct fg_queueset *level_qs(struct fg_worker *w, const struct fg_req *r)
{
	return &w->levels[r->level].qs;
}

static void leave_waiting(struct fg_worker *w, uint32_t slot)
{
	struct fg_req *r = &w->reqs.slots[slot];
	fg_reqlist_remove(&w->reqs, &w->waiting, slot);
	FG_STAT_ADD(w->stats.flows[r->flow].waiting, -1);
}

static void release_lingering(struct fg_worker *w, uint32_t slot, uint64_t now)
{
	struct fg_req *r = &w->reqs.slots[slot];
	fg_qs_release(level_qs(w, r), &r->qs, now);
	fg_reqtable_release(&w->reqs, slot);
	publish_level(w, r->level);
}

/* The request stops executing; its seats go back now or after its extra latency. */
static void leave_executing(struct fg_worker *w, uint32_t slot, uint64_t now, bool answered)
{
	struct fg_req *r = &w->reqs.slots[slot];
	fg_reqlist_remove(&w->reqs, &w->executing, slot);
	uint64_t ejections = w->pool.b[r->backend].ejections;
	fg_backendpool_done(&w->pool, r->backend, r->qs.seats, answered, now);
	if (unlikely(w->pool.b[r->backend].ejections != ejections))
		FG_STAT_ADD(w->stats.backend_ejections, 1);
	FG_STAT_ADD(w->stats.flows[r->flow].executing, -1);
	FG_STAT_ADD(w->stats.levels[r->level].executing, -1);
	uint64_t release = fg_qs_finish(level_qs(w, r), &r->qs, now);
	if (release && answered) {
		r->state = FG_REQ_LINGERING;
		r->release_ns = release;
		linger_push(w, slot);
	} else {
		if (release)
			fg_qs_release(level_qs(w, r), &r->qs, now); /* a failed request holds nothing longer */
		fg_reqtable_release(&w->reqs, slot);
	}
	publish_level(w, r->level);
}

/* Send a request the queue set just admitted to a backend.  The packet's id
 * becomes the dispatch id; the client's id stays in the slot.  False when no
 * backend is usable (the caller answers no-backend). */
static bool start_executing(struct fg_worker *w, const struct fg_config *cfg, uint32_t slot, uint64_t now)
{
	struct fg_req *r = &w->reqs.slots[slot];
	uint32_t b = fg_backendpool_pick(&w->pool, r->qs.seats, now);
	if (b == FG_BACKEND_NONE)
		return false;
	r->state = FG_REQ_EXECUTING;
	r->backend = (uint8_t)b;
	r->deadline_ns = now + cfg->backend_timeout_ns;
	fg_reqlist_push_tail(&w->reqs, &w->executing, slot);
	FG_STAT_ADD(w->stats.dispatched, 1);
	FG_STAT_ADD(w->stats.levels[r->level].dispatched, 1);
	FG_STAT_ADD(w->stats.levels[r->level].executing, 1);
	FG_STAT_ADD(w->stats.flows[r->flow].dispatched, 1);
	FG_STAT_ADD(w->stats.flows[r->flow].executing, 1);
	publish_level(w, r->level);

	struct fg_pkt pkt = r->pkt;
	r->pkt.handle = NULL;
	fg_proto_set_request_id(pkt.data, fg_dispatch_id(w->id, r, slot));
	pkt.peer = cfg->backends[b].ep;
	send_pkt(w, &pkt);
	return true;
}

/* Answer a request that still holds its packet with a REJECT, and free its
 * slot (the queue set has already let it go). */
static void reject_held(struct fg_worker *w, const struct fg_config *cfg, uint32_t slot, enum fg_reject_reason reason)
{
	struct fg_req *r = &w->reqs.slots[slot];
	struct fg_pkt pkt = r->pkt;
	uint64_t id = r->client_id;
	count_reject(w, r->flow, r->level, reason);
	fg_reqtable_release(&w->reqs, slot);
	publish_level(w, r->level);
	reject_in_place(w, cfg, &pkt, id, reason);
}

/* A request the queue set let go that will not execute (its client gave up,
 * or no backend is usable): the queue keeps the cost of its turn and the
 * seats come back now. */
static void refuse_admitted(struct fg_worker *w, const struct fg_config *cfg, uint32_t slot,
			    enum fg_reject_reason reason, uint64_t now)
{
	struct fg_req *r = &w->reqs.slots[slot];
	fg_qs_release(level_qs(w, r), &r->qs, now);
	reject_held(w, cfg, slot, reason);
}

/* --- arrivals and answers ---------------------------------------------- */

static void handle_request(struct fg_worker *w, const struct fg_config *cfg, struct fg_pkt *pkt,
			   const struct fg_msg *m, uint64_t now)
{
	FG_STAT_ADD(w->stats.received, 1);
	struct fg_fc_request fr;
	struct fg_fc_match match;
	fg_fc_request_from_msg(m, &fr);
	fg_fc_classify(cfg->fc, &fr, &match);
	uint16_t level = w->level_of_cfg[match.level];
	const char *schema = cfg->fc->schema_names[match.schema];
	/* Levels without queues have no flows (hash 0); statistics still keep
	 * schema and distinguisher apart. */
	uint64_t stats_key = match.flow_hash ? match.flow_hash
		: fg_flow_hash(schema, strlen(schema), match.distinguisher.ptr, match.distinguisher.len);
	uint32_t flow = fg_stats_flow(&w->stats, stats_key, level, schema, match.distinguisher.ptr,
				      match.distinguisher.len);
	FG_STAT_ADD(w->stats.flows[flow].received, 1);
	FG_STAT_ADD(w->stats.levels[level].received, 1);

	enum fg_reject_reason reason = FG_REJECT_NONE;
	uint32_t slot = FG_REQ_NIL;
	if (unlikely(w->draining))
		reason = FG_REJECT_SHUTTING_DOWN;
	else if (unlikely(!fg_backendpool_usable(&w->pool, now)))
		reason = FG_REJECT_NO_BACKEND; /* none configured, or all ejected */
	else if (unlikely((slot = fg_reqtable_alloc(&w->reqs)) == FG_REQ_NIL))
		reason = FG_REJECT_QUEUE_FULL; /* the table is sized by validation; defensive */
	if (!reason) {
		struct fg_req *r = &w->reqs.slots[slot];
		r->level = level;
		switch (fg_qs_arrive(level_qs(w, r), &r->qs, match.flow_hash, m->hdr.seats, m->hdr.final_seats,
				     (uint64_t)m->hdr.extra_latency_us * 1000, now)) {
		case FG_QS_REJECT_QUEUE_FULL: reason = FG_REJECT_QUEUE_FULL; break;
		case FG_QS_REJECT_CONCURRENCY: reason = FG_REJECT_CONCURRENCY_LIMIT; break;
		default: break;
		}
		if (reason)
			fg_reqtable_release(&w->reqs, slot);
	}
	if (reason) {
		count_reject(w, flow, level, reason);
		reject_in_place(w, cfg, pkt, m->hdr.request_id, reason);
		return;
	}
	struct fg_req *r = &w->reqs.slots[slot];
	r->flow = flow;
	r->client_id = m->hdr.request_id;
	r->client = pkt->peer;
	r->arrival_ns = now;
	r->client_deadline_ns = m->hdr.deadline_ms ? now + m->hdr.deadline_ms * 1000000ull : UINT64_MAX;
	r->pkt = *pkt;
	if (r->qs.state == FG_QS_EXECUTING) { /* exempt or reject-type level with room */
		if (!start_executing(w, cfg, slot, now))
			refuse_admitted(w, cfg, slot, FG_REJECT_NO_BACKEND, now);
		return;
	}
	r->state = FG_REQ_WAITING;
	r->deadline_ns = now + cfg->queue_wait_ns;
	fg_reqlist_push_tail(&w->reqs, &w->waiting, slot);
	FG_STAT_ADD(w->stats.flows[flow].waiting, 1);
	publish_level(w, r->level);
	/* Dispatch at once, so that the next arrival's queue-full test sees the
	 * seats this one took (KEP "Queuing"). */
	dispatch_level(w, cfg, level, now);
}

static void handle_answer(struct fg_worker *w, const struct fg_config *cfg, struct fg_pkt *pkt,
			  const struct fg_msg *m, uint64_t now)
{
	uint32_t slot = fg_reqtable_lookup(&w->reqs, w->id, m->hdr.request_id);
	struct fg_req *r = slot == FG_REQ_NIL ? NULL : &w->reqs.slots[slot];
	/* Only the backend the request went to may answer it. */
	if (!r || r->backend >= cfg->n_backends ||
	    !fg_endpoint_same_addr(&pkt->peer, &cfg->backends[r->backend].ep)) {
		FG_STAT_ADD(w->stats.responses_unmatched, 1);
		w->io.ops->free(w->io.ctx, pkt);
		return;
	}
	if (m->hdr.type == FG_MSG_REJECT)
		count_reject(w, r->flow, r->level, (enum fg_reject_reason)m->hdr.reason);
	else {
		FG_STAT_ADD(w->stats.responded, 1);
		FG_STAT_ADD(w->stats.levels[r->level].responded, 1);
		FG_STAT_ADD(w->stats.flows[r->flow].responded, 1);
	}
	fg_proto_set_request_id(pkt->data, r->client_id);
	pkt->peer = r->client;
	leave_executing(w, slot, now, true);
	send_pkt(w, pkt);
}

void fg_worker_handle(struct fg_worker *w, const struct fg_config *cfg, struct fg_pkt *pkt, uint64_t now)
{
	struct fg_msg m;
	FG_STAT_ADD(w->stats.rx_datagrams, 1);
	enum fg_proto_err err = fg_proto_decode(pkt->data, pkt->len, &m);
	if (unlikely(err)) {
		FG_STAT_ADD(w->stats.rx_malformed, 1);
		FG_STAT_ADD(w->stats.malformed_by_err[err], 1);
		uint64_t id;
		/* Answer only what is at least a header long: no amplification. */
		if (pkt->len >= FG_PROTO_HDR_LEN && pkt->len <= FG_PROTO_MAX_DATAGRAM &&
		    fg_proto_peek_id(pkt->data, pkt->len, &id) == 0) {
			FG_STAT_ADD(w->stats.invalid_rejected, 1);
			reject_in_place(w, cfg, pkt, id, FG_REJECT_INVALID);
		} else {
			w->io.ops->free(w->io.ctx, pkt);
		}
		return;
	}
	if (m.hdr.type == FG_MSG_REQUEST)
		handle_request(w, cfg, pkt, &m, now);
	else if (fg_dispatch_id_worker(m.hdr.request_id) == w->id)
		handle_answer(w, cfg, pkt, &m, now);
	else {
		FG_STAT_ADD(w->stats.rx_unexpected, 1);
		w->io.ops->free(w->io.ctx, pkt);
	}
}

/* --- expiry, dispatch, shutdown ---------------------------------------- */

static void reject_waiting(struct fg_worker *w, const struct fg_config *cfg, uint32_t slot,
			   enum fg_reject_reason reason, uint64_t now)
{
	struct fg_req *r = &w->reqs.slots[slot];
	leave_waiting(w, slot);
	fg_qs_remove_waiting(level_qs(w, r), &r->qs, now);
	reject_held(w, cfg, slot, reason);
}

void fg_worker_expire(struct fg_worker *w, const struct fg_config *cfg, uint64_t now)
{
	/* Both lists are in deadline order as long as the limits stay put; after
	 * a limit change an entry waits at most until the older head expires. */
	while (w->waiting.head != FG_REQ_NIL && w->reqs.slots[w->waiting.head].deadline_ns <= now)
		reject_waiting(w, cfg, w->waiting.head, FG_REJECT_TIME_OUT, now);
	while (w->executing.head != FG_REQ_NIL && w->reqs.slots[w->executing.head].deadline_ns <= now) {
		uint32_t slot = w->executing.head;
		reject_to_client(w, cfg, &w->reqs.slots[slot], FG_REJECT_BACKEND_TIMEOUT);
		leave_executing(w, slot, now, false);
	}
	while (w->n_lingering && linger_key(w, 0) <= now)
		release_lingering(w, linger_pop(w), now);
}

static void dispatch_level(struct fg_worker *w, const struct fg_config *cfg, uint32_t level, uint64_t now)
{
	struct fg_qs_req *q;
	while ((q = fg_qs_dispatch_next(&w->levels[level].qs, now))) {
		uint32_t slot = slot_of(w, q);
		struct fg_req *r = &w->reqs.slots[slot];
		leave_waiting(w, slot);
		if (r->client_deadline_ns <= now)
			refuse_admitted(w, cfg, slot, FG_REJECT_TIME_OUT, now);
		else if (!start_executing(w, cfg, slot, now))
			refuse_admitted(w, cfg, slot, FG_REJECT_NO_BACKEND, now);
	}
}

void fg_worker_dispatch(struct fg_worker *w, const struct fg_config *cfg, uint64_t now)
{
	for (uint32_t i = 0; i < w->n_levels; i++)
		if (w->levels[i].used)
			dispatch_level(w, cfg, i, now);
	retire_idle_levels(w);
}

unsigned fg_worker_poll(struct fg_worker *w, const struct fg_config *cfg, uint64_t now)
{
	/* A new configuration: follow it before touching any request. */
	if (unlikely(cfg->generation != w->config_generation))
		fg_worker_configure(w, cfg, now);
	struct fg_pkt pkts[FG_RX_BURST];
	unsigned n = w->io.ops->rx(w->io.ctx, pkts, FG_RX_BURST);
	for (unsigned i = 0; i < n; i++)
		fg_worker_handle(w, cfg, &pkts[i], now);
	fg_worker_expire(w, cfg, now);
	fg_worker_dispatch(w, cfg, now);
	if (w->io.ops->tick)
		w->io.ops->tick(w->io.ctx, now);
	flush(w);
	return n;
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
		reject_to_client(w, cfg, &w->reqs.slots[slot], FG_REJECT_SHUTTING_DOWN);
		leave_executing(w, slot, now, false);
	}
	while (w->n_lingering)
		release_lingering(w, linger_pop(w), now);
	flush(w);
}

uint64_t fg_worker_next_deadline(const struct fg_worker *w)
{
	uint64_t d = UINT64_MAX;
	if (w->waiting.head != FG_REQ_NIL)
		d = w->reqs.slots[w->waiting.head].deadline_ns;
	if (w->executing.head != FG_REQ_NIL && w->reqs.slots[w->executing.head].deadline_ns < d)
		d = w->reqs.slots[w->executing.head].deadline_ns;
	if (w->n_lingering && linger_key(w, 0) < d)
		d = linger_key(w, 0);
	return d;
}
