/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reqtable — a worker's fixed table of request slots, plus O(1) intrusive
 * lists over them (waiting requests in arrival order, executing ones in
 * dispatch order: with uniform limits the heads expire first).
 *
 * A dispatch id is (worker 8 bits, slot 24 bits, nonce 32 bits): the nonce
 * is drawn from the worker's unpredictable stream (common/edge/nonce.h) each time
 * a request is sent to a backend, and slots are reused first in, first out,
 * so a stale, late or forged answer matches a later request only by
 * guessing 32 random bits, and an answer whose request has timed out or been
 * answered matches nothing.
 *
 * Thread contract: a table belongs to one worker; only that thread touches it.
 */
#ifndef FG_REQTABLE_H
#define FG_REQTABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "pkt.h"
#include "proto.h"
#include "queueset.h"

#define FG_REQ_NIL UINT32_MAX
#define FG_DISPATCH_SLOT_BITS 24u
#define FG_DISPATCH_SLOT_MASK ((1u << FG_DISPATCH_SLOT_BITS) - 1)
#define FG_MAX_WORKERS 256u /* the dispatch id's worker field is 8 bits (docs/protocol.md) */

#include "defs.h"
_Static_assert(FG_MAX_WORKER_CORES <= FG_MAX_WORKERS, "every worker core must fit the dispatch id's worker field");
_Static_assert(FG_MAX_BACKENDS <= 256, "fg_req.backend is a uint8_t");
_Static_assert(FG_MAX_MAX_REQUESTS <= (1u << FG_DISPATCH_SLOT_BITS), "every slot fits the dispatch id's slot field");
_Static_assert(FG_MAX_LEVELS <= 65536, "fg_req.level and a worker's level_of_cfg are uint16_t");

/* LINGERING: answered, but its seats stay held for the extra latency. */
/* HELD: admitted, waiting for a backend with room (every usable one full). */
enum fg_req_state { FG_REQ_FREE = 0, FG_REQ_WAITING, FG_REQ_EXECUTING, FG_REQ_LINGERING, FG_REQ_HELD };

/*
 * A request slot: what a worker keeps for each request, waiting or
 * executing (docs/benchmarks.md, "Memory": the bytes of state per waiting
 * request; `fairgate-bench memory` prints them).  Fields that only one
 * state uses share their bytes: the client's deadline hint while waiting
 * with the nonce once sent; the wait limit or backend timeout with the
 * seats' release time once answered.  The request's arrival is
 * qs.arrival_ns.  A waiting (or held) request keeps its datagram as a
 * handle, where the message starts in it and its length and room, 16 bits
 * each (pkt.h says why they fit); fg_req_hold_pkt and fg_req_pkt convert.
 */
struct fg_req {
	uint32_t prev, next;   /* links in the list the request is on */
	uint32_t flow;         /* flow statistics slot */
	union {
		uint32_t client_deadline_ms; /* waiting: the client's deadline hint after arrival; 0 = none */
		uint32_t nonce;              /* executing: the dispatch id's unpredictable part */
	};
	struct fg_endpoint client; /* where the answer goes: the datagram's sender */
	uint8_t level;         /* the worker's runtime level (< FG_MAX_LEVELS) */
	uint8_t verb_class;    /* its service-time estimate's class with pair (classguess.h) */
	uint16_t pair;         /* (level, schema) statistics entry (apfstats.h), the estimate's group */
	uint8_t state;
	uint8_t backend;       /* index into the config's backends while executing */
	uint16_t pkt_off, pkt_len, pkt_cap; /* the held datagram: its message at pkt_handle + pkt_off */
	void *pkt_handle;      /* the I/O layer's buffer, held while waiting or held; NULL otherwise */
	uint64_t client_id;    /* the client's own request id, restored on answers */
	union {
		uint64_t deadline_ns; /* waiting: wait limit; held, executing: backend timeout */
		uint64_t release_ns;  /* lingering: when the seats are released (wheel.h) */
	};
	struct fg_qs_req qs;   /* the queue set's view of the request */
};

_Static_assert(FG_PROTO_MAX_DATAGRAM <= UINT16_MAX, "a held request's length fits fg_req.pkt_len");
_Static_assert(FG_MAX_LEVELS <= 256, "a runtime level fits fg_req.level");

/* Keep a received request's datagram in its slot (the client is its sender). */
static inline void fg_req_hold_pkt(struct fg_req *r, const struct fg_pkt *p)
{
	r->pkt_handle = p->handle;
	r->pkt_off = (uint16_t)(p->data - (const uint8_t *)p->handle);
	r->pkt_len = (uint16_t)p->len;
	r->pkt_cap = (uint16_t)(p->cap > UINT16_MAX ? UINT16_MAX : p->cap);
	r->client = p->peer;
}

/* The datagram the slot holds, addressed to the client (handle NULL: none). */
static inline struct fg_pkt fg_req_pkt(const struct fg_req *r)
{
	struct fg_pkt p = { .handle = r->pkt_handle, .len = r->pkt_len, .cap = r->pkt_cap, .peer = r->client };
	p.data = r->pkt_handle ? (uint8_t *)r->pkt_handle + r->pkt_off : NULL;
	return p;
}

/* When a waiting request's client stops waiting for it. */
static inline uint64_t fg_req_client_deadline(const struct fg_req *r)
{
	return r->client_deadline_ms ? r->qs.arrival_ns + r->client_deadline_ms * 1000000ull : UINT64_MAX;
}

struct fg_reqlist {
	uint32_t head, tail, count;
};

struct fg_reqtable {
	struct fg_req *slots;
	uint32_t cap;
	uint32_t free_head, free_tail; /* FIFO: a freed slot is reused last */
	uint32_t in_use;
};

int fg_reqtable_init(struct fg_reqtable *t, uint32_t cap);
void fg_reqtable_fini(struct fg_reqtable *t);

/* Returns a slot index, or FG_REQ_NIL when the table is full. */
static inline uint32_t fg_reqtable_alloc(struct fg_reqtable *t)
{
	uint32_t i = t->free_head;
	if (i == FG_REQ_NIL)
		return i;
	t->free_head = t->slots[i].next;
	if (t->free_head == FG_REQ_NIL)
		t->free_tail = FG_REQ_NIL;
	else /* freed longest ago, so cold: the next request fills it */
		for (size_t off = 0; off < sizeof(struct fg_req); off += 64)
			__builtin_prefetch((const char *)&t->slots[t->free_head] + off, 1);
	t->in_use++;
	return i;
}

static inline void fg_reqtable_release(struct fg_reqtable *t, uint32_t i)
{
	struct fg_req *r = &t->slots[i];
	r->state = FG_REQ_FREE;
	r->pkt_handle = NULL;
	r->next = FG_REQ_NIL;
	if (t->free_tail != FG_REQ_NIL)
		t->slots[t->free_tail].next = i;
	else
		t->free_head = i;
	t->free_tail = i;
	t->in_use--;
}

static inline uint64_t fg_dispatch_id(unsigned worker, const struct fg_req *r, uint32_t slot)
{
	return (uint64_t)worker << 56 | (uint64_t)slot << 32 | r->nonce;
}

/* The parts of a dispatch id: the worker that sent the request, and its slot
 * in that worker's table (the nonce is the low 32 bits). */
static inline unsigned fg_dispatch_id_worker(uint64_t id) { return (unsigned)(id >> 56); }
static inline uint32_t fg_dispatch_id_slot(uint64_t id) { return (uint32_t)(id >> 32) & FG_DISPATCH_SLOT_MASK; }

/* The executing request a dispatch id names, or FG_REQ_NIL if it names none
 * (wrong worker, out of range, slot not executing, wrong nonce). */
static inline uint32_t fg_reqtable_lookup(const struct fg_reqtable *t, unsigned worker, uint64_t id)
{
	uint32_t slot = fg_dispatch_id_slot(id);
	if (fg_dispatch_id_worker(id) != worker || slot >= t->cap)
		return FG_REQ_NIL;
	const struct fg_req *r = &t->slots[slot];
	if (r->state != FG_REQ_EXECUTING || r->nonce != (uint32_t)id)
		return FG_REQ_NIL;
	return slot;
}

static inline void fg_reqlist_init(struct fg_reqlist *l)
{
	l->head = l->tail = FG_REQ_NIL;
	l->count = 0;
}

static inline void fg_reqlist_push_tail(struct fg_reqtable *t, struct fg_reqlist *l, uint32_t i)
{
	struct fg_req *r = &t->slots[i];
	r->next = FG_REQ_NIL;
	r->prev = l->tail;
	if (l->tail != FG_REQ_NIL)
		t->slots[l->tail].next = i;
	else
		l->head = i;
	l->tail = i;
	l->count++;
}

static inline void fg_reqlist_remove(struct fg_reqtable *t, struct fg_reqlist *l, uint32_t i)
{
	struct fg_req *r = &t->slots[i];
	if (r->prev != FG_REQ_NIL)
		t->slots[r->prev].next = r->next;
	else
		l->head = r->next;
	if (r->next != FG_REQ_NIL)
		t->slots[r->next].prev = r->prev;
	else
		l->tail = r->prev;
	l->count--;
}

#endif
