/* SPDX-License-Identifier: Apache-2.0 */
/*
 * worker_snapshot — the worker's side of a visibility snapshot
 * (common/req/pending.h): a bounded piece of the copy per poll, then done.
 */
#include <stddef.h>
#include <string.h>

#include "proto.h"
#include "worker_int.h"

enum { PHASE_LEVELS = 0, PHASE_QUEUES, PHASE_EXECUTING, PHASE_DONE };

struct budget {
	uint32_t reqs, queues, slots;
};

static uint32_t slot_of(const struct fg_worker *w, const struct fg_qs_req *qr)
{
	const struct fg_req *r = (const struct fg_req *)((const char *)qr - offsetof(struct fg_req, qs));
	return (uint32_t)(r - w->reqs.slots);
}

static void put_str(struct fg_snapshot *s, struct fg_snap_req *out, enum fg_snap_str k, const char *p, size_t len)
{
	if (len > s->cap_strs - s->n_strs) {
		s->truncated = true;
		len = 0;
	}
	out->str_off[k] = s->n_strs;
	out->str_len[k] = (uint16_t)len;
	memcpy(s->strs + s->n_strs, p, len);
	s->n_strs += (uint32_t)len;
}

/* The request's strings: flow schema and distinguisher from its flow's
 * statistics row ("schema/distinguisher", already escaped), and with
 * FG_SNAP_DETAILS its attributes, decoded again from the held datagram. */
static void copy_strings(struct fg_worker *w, struct fg_snapshot *s, struct fg_snap_req *out, const struct fg_req *r)
{
	const char *flow = w->stats.flows[r->flow].name;
	size_t flen = strnlen(flow, FG_FLOW_NAME_MAX);
	const char *slash = memchr(flow, '/', flen);
	size_t slen = slash ? (size_t)(slash - flow) : flen;
	put_str(s, out, FG_SNAP_FLOW_SCHEMA, flow, slen);
	put_str(s, out, FG_SNAP_DISTINGUISHER, slash ? slash + 1 : "", slash ? flen - slen - 1 : 0);
	if (!(s->flags & FG_SNAP_DETAILS) || !r->pkt_handle)
		return;
	struct fg_msg m;
	struct fg_pkt pkt = fg_req_pkt(r);
	if (fg_proto_decode(pkt.data, pkt.len, &m) != FG_PROTO_OK)
		return;
	const struct fg_str *attrs[] = { &m.user, &m.ns, &m.verb, &m.api_group, &m.resource, &m.subresource, &m.name,
					 &m.path };
	_Static_assert(sizeof(attrs) / sizeof(attrs[0]) == FG_SNAP_STR__COUNT - FG_SNAP_USER, "an attribute per string");
	for (unsigned i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++)
		if (attrs[i]->ptr)
			put_str(s, out, (enum fg_snap_str)(FG_SNAP_USER + i), attrs[i]->ptr, attrs[i]->len);
}

static struct fg_snap_req *new_req(struct fg_worker *w, struct fg_snapshot *s, const struct fg_req *r, uint32_t slot,
				   uint16_t row)
{
	if (s->n_reqs >= s->cap_reqs) {
		s->truncated = true;
		return NULL;
	}
	struct fg_snap_req *o = &s->reqs[s->n_reqs++];
	memset(o, 0, sizeof(*o));
	o->arrival_ns = r->qs.arrival_ns;
	o->client_id = r->client_id;
	o->slot = slot;
	o->level = row;
	o->initial_seats = r->qs.initial_seats;
	o->final_seats = r->qs.final_seats;
	o->extra_latency_ns = fg_qs_req_extra_ns(&r->qs);
	o->dispatch_ns = r->qs.state == FG_QS_WAITING ? 0 : r->qs.dispatch_ns; /* (shares arrival_r's bytes) */
	o->queue = r->qs.queue;
	o->client = r->client;
	copy_strings(w, s, o, r);
	return o;
}

static void copy_levels(struct fg_worker *w, struct fg_snapshot *s, struct fg_snap_cursor *c)
{
	for (uint32_t slot = 0; slot < FG_MAX_LEVELS; slot++)
		c->row_of_slot[slot] = -1;
	for (uint32_t slot = 0; slot < w->n_levels; slot++) {
		const struct fg_level_rt *lv = &w->levels[slot];
		const struct fg_level_stats *ls = &w->stats.levels[slot];
		if (!lv->used || (!(s->flags & FG_SNAP_ALL_LEVELS) && strcmp(ls->name, s->level)))
			continue;
		const struct fg_queueset *qs = &lv->qs;
		struct fg_snap_level *o = &s->levels[s->n_levels];
		memset(o, 0, sizeof(*o));
		memcpy(o->name, ls->name, sizeof(o->name));
		o->live = lv->live;
		o->queuing = qs->queues != NULL;
		o->r = qs->r;
		o->guess_ns = qs->guess_ns;
		o->n_waiting = qs->n_waiting;
		o->n_executing = ls->executing;
		o->seats_in_use = qs->seats_in_use;
		o->dispatched = qs->stats.dispatched;
		o->rejected = qs->stats.rejected_queue_full + qs->stats.rejected_concurrency;
		o->timed_out = qs->stats.removed;
		c->slot_of_row[s->n_levels] = (uint16_t)slot;
		c->row_of_slot[slot] = (int16_t)s->n_levels;
		s->n_levels++;
	}
}

/* Is the walk's next request still waiting where the walk left it? */
static const struct fg_qs_req *resume(const struct fg_worker *w, const struct fg_snap_cursor *c, uint32_t slot)
{
	if (c->next >= w->reqs.cap)
		return NULL;
	const struct fg_req *r = &w->reqs.slots[c->next];
	if (r->state != FG_REQ_WAITING || r->level != slot || r->qs.queue != c->queue ||
	    r->qs.arrival_ns != c->next_arrival)
		return NULL;
	return &r->qs;
}

/* Walk the queues of the copied levels; false when the budget ran out. */
static bool copy_queues(struct fg_worker *w, struct fg_snapshot *s, struct fg_snap_cursor *c, struct budget *b)
{
	for (; c->level < s->n_levels; c->level++, c->queue = 0, c->next = FG_REQ_NIL) {
		uint32_t slot = c->slot_of_row[c->level];
		const struct fg_level_rt *lv = &w->levels[slot];
		if (!lv->used || strcmp(w->stats.levels[slot].name, s->levels[c->level].name) || !lv->qs.queues)
			continue; /* retired (or reused) since the copy began, or no queues */
		const struct fg_queueset *qs = &lv->qs;
		unsigned n_workers = w->mesh ? w->mesh->n_workers : 1;
		for (; c->queue < qs->n_alloc; c->queue++, c->next = FG_REQ_NIL) {
			if (!b->queues || !b->reqs)
				return false;
			b->queues--;
			const struct fg_qs_queue *q = &qs->queues[c->queue];
			/* Every worker has its own queue q; an idle one is listed by
			 * worker q % n only, so that the dump lists each index once
			 * (control/visibility.c adds the workers' queues q up). */
			bool listed = (s->flags & FG_SNAP_ALL_QUEUES) && c->queue < qs->cfg.queues &&
				      c->queue % n_workers == w->id;
			if (!q->n_waiting && !q->n_executing && !listed)
				continue;
			const struct fg_qs_req *qr = NULL;
			if (c->next != FG_REQ_NIL)
				qr = resume(w, c, slot);
			if (!qr) { /* a new queue, or the walk's place left it: from the head */
				if (c->next == FG_REQ_NIL) {
					if (s->n_queues >= s->cap_queues) {
						s->truncated = true;
						continue;
					}
					c->qrow = s->n_queues++;
					s->levels[c->level].n_queues++;
					if (s->levels[c->level].n_queues == 1)
						s->levels[c->level].first_queue = c->qrow;
					s->levels[c->level].active_queues += q->n_waiting != 0;
				}
				struct fg_snap_queue *row = &s->queues[c->qrow];
				*row = (struct fg_snap_queue){ .level = (uint16_t)c->level, .index = c->queue,
							       .n_waiting = q->n_waiting, .n_executing = q->n_executing,
							       .seats_executing = q->seats_executing, .f_prev = q->f_prev };
				if (q->head && fg_order_contains(&qs->order, c->queue))
					row->head_tie = fg_order_tie(&qs->order, c->queue);
				qr = q->head;
				c->finish = q->f_prev;
			}
			for (; qr; qr = qr->next) {
				if (!b->reqs) {
					c->next = slot_of(w, qr);
					c->next_arrival = qr->arrival_ns;
					return false;
				}
				b->reqs--;
				uint32_t rslot = slot_of(w, qr);
				struct fg_snap_queue *row = &s->queues[c->qrow];
				/* The head was priced when it became head; the others will be
				 * with the guess as it is now.  Virtual time divides by the
				 * flow's weight; the work summed is seat-ns. */
				uint64_t work = fg_qs_price(qr->initial_seats, qr->final_seats, fg_qs_req_extra_ns(qr),
							    qr == q->head ? qr->guess_ns : qs->guess_ns);
				uint64_t cost = fg_qs_weighted(work, qr->weight);
				c->finish = fg_qs_virtual_finish(c->finish, qr->arrival_r, cost);
				row->initial_seats_sum += qr->initial_seats;
				row->max_seats_sum += qr->seats;
				row->work_sum += work;
				struct fg_snap_req *o = new_req(w, s, &w->reqs.slots[rslot], rslot, (uint16_t)c->level);
				if (!o)
					continue;
				o->state = FG_SNAP_WAITING;
				o->finish = c->finish;
				o->qrow = c->qrow;
				o->walk = c->walk++;
			}
		}
	}
	return true;
}

/* Executing (and held) requests, by table slot: a cursor that no dispatch
 * or completion can invalidate. */
static bool copy_executing(struct fg_worker *w, struct fg_snapshot *s, struct fg_snap_cursor *c, struct budget *b)
{
	for (; c->slot < w->reqs.cap; c->slot++) {
		if (!b->slots || !b->reqs)
			return false;
		b->slots--;
		const struct fg_req *r = &w->reqs.slots[c->slot];
		if ((r->state != FG_REQ_EXECUTING && r->state != FG_REQ_HELD) || r->level >= w->n_levels ||
		    c->row_of_slot[r->level] < 0 ||
		    strcmp(w->stats.levels[r->level].name, s->levels[c->row_of_slot[r->level]].name))
			continue; /* not a copied level, or its slot went to another level meanwhile */
		b->reqs--;
		struct fg_snap_req *o = new_req(w, s, r, c->slot, (uint16_t)c->row_of_slot[r->level]);
		if (o) {
			o->state = FG_SNAP_EXECUTING_REQ;
			o->qrow = UINT32_MAX;
		}
	}
	return true;
}

void fg_worker__snapshot_step(struct fg_worker *w, uint64_t now)
{
	struct fg_snap_box *box = w->snap;
	struct fg_snap_cursor *c = &box->cur;
	if (!box->working) {
		uint64_t asked = __atomic_load_n(&box->asked, __ATOMIC_ACQUIRE); /* box->buf is ready */
		if (asked == box->done)
			return;
		box->working = asked;
		struct fg_snapshot *s = box->buf;
		s->n_levels = s->n_queues = s->n_reqs = s->n_strs = 0;
		s->truncated = false;
		s->worker = w->id;
		s->now_ns = now;
		s->polls = s->max_poll_copies = 0;
		memset(c, 0, offsetof(struct fg_snap_cursor, slot_of_row));
		c->next = FG_REQ_NIL;
	}
	struct fg_snapshot *s = box->buf;
	struct budget b = { FG_SNAP_REQS_PER_POLL, FG_SNAP_QUEUES_PER_POLL, FG_SNAP_SLOTS_PER_POLL };
	s->polls++;
	switch (c->phase) {
	case PHASE_LEVELS:
		copy_levels(w, s, c);
		c->phase = PHASE_QUEUES;
		/* fall through */
	case PHASE_QUEUES:
		if (!copy_queues(w, s, c, &b))
			break;
		c->phase = s->flags & FG_SNAP_EXECUTING ? PHASE_EXECUTING : PHASE_DONE;
		/* fall through */
	case PHASE_EXECUTING:
		if (c->phase == PHASE_EXECUTING && !copy_executing(w, s, c, &b))
			break;
		c->phase = PHASE_DONE;
		break;
	}
	uint32_t copied = FG_SNAP_REQS_PER_POLL - b.reqs;
	if (copied > s->max_poll_copies)
		s->max_poll_copies = copied;
	if (c->phase == PHASE_DONE) {
		__atomic_store_n(&box->done, box->working, __ATOMIC_RELEASE); /* the buffer goes back */
		box->working = 0;
	}
}
