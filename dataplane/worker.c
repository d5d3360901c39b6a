/* worker — one worker's dispatcher logic; see worker.h. */
#include "worker.h"

#include <errno.h>
#include <string.h>

#include "flowhash.h"
#include "proto.h"

#define unlikely(x) __builtin_expect(!!(x), 0)

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
	return fg_reqtable_init(&w->reqs, max_requests);
}

void fg_worker_fini(struct fg_worker *w)
{
	/* Any held packet goes back to its pool. */
	for (uint32_t i = 0; w->reqs.slots && i < w->reqs.cap; i++)
		if (w->reqs.slots[i].state != FG_REQ_FREE && w->reqs.slots[i].pkt.handle)
			w->io.ops->free(w->io.ctx, &w->reqs.slots[i].pkt);
	fg_reqtable_fini(&w->reqs);
}

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

static void count_reject(struct fg_worker *w, uint32_t flow, enum fg_reject_reason reason)
{
	FG_STAT_ADD(w->stats.rejected[reason], 1);
	FG_STAT_ADD(w->stats.flows[flow].rejected, 1);
}

/* Answer a request whose packet is gone (executing): a fresh buffer. */
static void reject_to_client(struct fg_worker *w, const struct fg_config *cfg, struct fg_req *r,
			     enum fg_reject_reason reason)
{
	struct fg_pkt pkt;
	count_reject(w, r->flow, reason);
	if (unlikely(w->io.ops->alloc(w->io.ctx, &pkt))) {
		FG_STAT_ADD(w->stats.tx_failed, 1);
		return;
	}
	pkt.peer = r->client;
	reject_in_place(w, cfg, &pkt, r->client_id, reason);
}

static void leave_waiting(struct fg_worker *w, uint32_t slot)
{
	struct fg_req *r = &w->reqs.slots[slot];
	fg_reqlist_remove(&w->reqs, &w->waiting, slot);
	FG_STAT_SET(w->stats.waiting, w->waiting.count);
	FG_STAT_ADD(w->stats.flows[r->flow].waiting, -1);
}

static void leave_executing(struct fg_worker *w, uint32_t slot)
{
	struct fg_req *r = &w->reqs.slots[slot];
	fg_reqlist_remove(&w->reqs, &w->executing, slot);
	w->seats_in_use -= r->seats;
	w->backend_outstanding[r->backend] -= r->seats;
	FG_STAT_SET(w->stats.executing, w->executing.count);
	FG_STAT_SET(w->stats.seats_in_use, w->seats_in_use);
	FG_STAT_ADD(w->stats.flows[r->flow].executing, -1);
	fg_reqtable_release(&w->reqs, slot);
}

/* Least outstanding seats wins; ties go to the lowest index. */
static unsigned pick_backend(const struct fg_worker *w, const struct fg_config *cfg)
{
	unsigned best = 0;
	for (unsigned i = 1; i < cfg->n_backends; i++)
		if (w->backend_outstanding[i] < w->backend_outstanding[best])
			best = i;
	return best;
}

/* Send a waiting (or just admitted) request to a backend.  The packet's id
 * becomes the dispatch id; the client's id stays in the slot. */
static void start_executing(struct fg_worker *w, const struct fg_config *cfg, uint32_t slot, uint64_t now)
{
	struct fg_req *r = &w->reqs.slots[slot];
	unsigned b = pick_backend(w, cfg);
	r->state = FG_REQ_EXECUTING;
	r->backend = (uint8_t)b;
	r->deadline_ns = now + cfg->backend_timeout_ns;
	w->seats_in_use += r->seats;
	w->backend_outstanding[b] += r->seats;
	fg_reqlist_push_tail(&w->reqs, &w->executing, slot);
	FG_STAT_SET(w->stats.executing, w->executing.count);
	FG_STAT_SET(w->stats.seats_in_use, w->seats_in_use);
	FG_STAT_ADD(w->stats.dispatched, 1);
	FG_STAT_ADD(w->stats.flows[r->flow].dispatched, 1);
	FG_STAT_ADD(w->stats.flows[r->flow].executing, 1);

	struct fg_pkt pkt = r->pkt;
	r->pkt.handle = NULL;
	fg_proto_set_request_id(pkt.data, fg_dispatch_id(w->id, r, slot));
	pkt.peer = cfg->backends[b].ep;
	send_pkt(w, &pkt);
}

static uint16_t request_seats(const struct fg_msg *m, const struct fg_config *cfg)
{
	uint32_t seats = m->hdr.seats ? m->hdr.seats : 1;
	return (uint16_t)(seats < cfg->seat_limit ? seats : cfg->seat_limit);
}

static void handle_request(struct fg_worker *w, const struct fg_config *cfg, struct fg_pkt *pkt,
			   const struct fg_msg *m, uint64_t now)
{
	FG_STAT_ADD(w->stats.received, 1);
	uint64_t hash = fg_flow_hash(FG_SCHEMA_NAME, sizeof(FG_SCHEMA_NAME) - 1,
				     m->user.ptr ? m->user.ptr : "", m->user.len);
	uint32_t flow = fg_stats_flow(&w->stats, hash, m->user.ptr ? m->user.ptr : "", m->user.len);
	FG_STAT_ADD(w->stats.flows[flow].received, 1);

	enum fg_reject_reason reason = FG_REJECT_NONE;
	uint16_t seats = request_seats(m, cfg);
	bool runs_now = w->waiting.count == 0 && w->seats_in_use + seats <= cfg->seat_limit;
	if (unlikely(w->draining))
		reason = FG_REJECT_SHUTTING_DOWN;
	else if (unlikely(cfg->n_backends == 0))
		reason = FG_REJECT_NO_BACKEND;
	else if (!runs_now && w->waiting.count >= cfg->queue_length_limit)
		reason = FG_REJECT_QUEUE_FULL;
	uint32_t slot = reason ? FG_REQ_NIL : fg_reqtable_alloc(&w->reqs);
	if (reason == FG_REJECT_NONE && slot == FG_REQ_NIL)
		reason = FG_REJECT_QUEUE_FULL; /* table sized by validation; defensive */
	if (reason) {
		count_reject(w, flow, reason);
		reject_in_place(w, cfg, pkt, m->hdr.request_id, reason);
		return;
	}
	struct fg_req *r = &w->reqs.slots[slot];
	r->seats = seats;
	r->flow = flow;
	r->client_id = m->hdr.request_id;
	r->client = pkt->peer;
	r->arrival_ns = now;
	r->client_deadline_ns = m->hdr.deadline_ms ? now + m->hdr.deadline_ms * 1000000ull : UINT64_MAX;
	r->pkt = *pkt;
	if (runs_now) {
		start_executing(w, cfg, slot, now);
		return;
	}
	r->state = FG_REQ_WAITING;
	r->deadline_ns = now + cfg->queue_wait_ns;
	fg_reqlist_push_tail(&w->reqs, &w->waiting, slot);
	FG_STAT_SET(w->stats.waiting, w->waiting.count);
	FG_STAT_ADD(w->stats.flows[flow].waiting, 1);
}

static void handle_answer(struct fg_worker *w, const struct fg_config *cfg, struct fg_pkt *pkt,
			  const struct fg_msg *m)
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
		count_reject(w, r->flow, (enum fg_reject_reason)m->hdr.reason);
	else {
		FG_STAT_ADD(w->stats.responded, 1);
		FG_STAT_ADD(w->stats.flows[r->flow].responded, 1);
	}
	fg_proto_set_request_id(pkt->data, r->client_id);
	pkt->peer = r->client;
	leave_executing(w, slot);
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
		handle_answer(w, cfg, pkt, &m);
	else {
		FG_STAT_ADD(w->stats.rx_unexpected, 1);
		w->io.ops->free(w->io.ctx, pkt);
	}
}

static void reject_waiting(struct fg_worker *w, const struct fg_config *cfg, uint32_t slot,
			   enum fg_reject_reason reason)
{
	struct fg_req *r = &w->reqs.slots[slot];
	struct fg_pkt pkt = r->pkt;
	uint64_t id = r->client_id;
	count_reject(w, r->flow, reason);
	leave_waiting(w, slot);
	fg_reqtable_release(&w->reqs, slot);
	reject_in_place(w, cfg, &pkt, id, reason);
}

void fg_worker_expire(struct fg_worker *w, const struct fg_config *cfg, uint64_t now)
{
	/* Both lists are in deadline order as long as the limits stay put; after
	 * a limit change an entry waits at most until the older head expires. */
	while (w->waiting.head != FG_REQ_NIL && w->reqs.slots[w->waiting.head].deadline_ns <= now)
		reject_waiting(w, cfg, w->waiting.head, FG_REJECT_TIME_OUT);
	while (w->executing.head != FG_REQ_NIL && w->reqs.slots[w->executing.head].deadline_ns <= now) {
		uint32_t slot = w->executing.head;
		reject_to_client(w, cfg, &w->reqs.slots[slot], FG_REJECT_BACKEND_TIMEOUT);
		leave_executing(w, slot);
	}
}

void fg_worker_dispatch(struct fg_worker *w, const struct fg_config *cfg, uint64_t now)
{
	while (w->waiting.head != FG_REQ_NIL) {
		uint32_t slot = w->waiting.head;
		struct fg_req *r = &w->reqs.slots[slot];
		if (r->client_deadline_ns <= now) { /* the client gave up already */
			reject_waiting(w, cfg, slot, FG_REJECT_TIME_OUT);
			continue;
		}
		if (cfg->n_backends == 0) {
			reject_waiting(w, cfg, slot, FG_REJECT_NO_BACKEND);
			continue;
		}
		if (w->seats_in_use + r->seats > cfg->seat_limit)
			break; /* FIFO: nothing bypasses the head */
		leave_waiting(w, slot);
		start_executing(w, cfg, slot, now);
	}
}

unsigned fg_worker_poll(struct fg_worker *w, const struct fg_config *cfg, uint64_t now)
{
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

void fg_worker_drain(struct fg_worker *w, const struct fg_config *cfg)
{
	w->draining = true;
	while (w->waiting.head != FG_REQ_NIL)
		reject_waiting(w, cfg, w->waiting.head, FG_REJECT_SHUTTING_DOWN);
	flush(w);
}

void fg_worker_abort_executing(struct fg_worker *w, const struct fg_config *cfg)
{
	while (w->executing.head != FG_REQ_NIL) {
		uint32_t slot = w->executing.head;
		reject_to_client(w, cfg, &w->reqs.slots[slot], FG_REJECT_SHUTTING_DOWN);
		leave_executing(w, slot);
	}
	flush(w);
}

uint64_t fg_worker_next_deadline(const struct fg_worker *w)
{
	uint64_t d = UINT64_MAX;
	if (w->waiting.head != FG_REQ_NIL)
		d = w->reqs.slots[w->waiting.head].deadline_ns;
	if (w->executing.head != FG_REQ_NIL && w->reqs.slots[w->executing.head].deadline_ns < d)
		d = w->reqs.slots[w->executing.head].deadline_ns;
	return d;
}
