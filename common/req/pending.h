/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pending — snapshots of what the workers' priority levels hold, asked for by
 * the control side and copied by each worker a bounded piece per poll, and
 * the pure functions that turn them into the visibility answers: the waiting
 * requests of a level in the order fairgate would dispatch them if nothing
 * else arrived (docs/visibility.md), and the rows of the APF debug dumps.
 *
 * The hand-off (one fg_snap_box per worker, living as long as the workers):
 *
 *   requester (control side, serialized by its own mutex)   worker (its poll)
 *   1. waits for done == asked (the box is free)
 *   2. fills a buffer it allocated, sets box->buf, then
 *      asked = seq (release)                         --> sees asked != done
 *                                                        (acquire), copies a
 *                                                        bounded piece into
 *                                                        box->buf per poll
 *   4. waits for done == seq (acquire), bounded       <-- 3. done = seq (release)
 *
 * The buffer belongs to the box from step 2 until done == seq: the worker is
 * the only writer in between, and the requester neither reads nor frees it.
 * A requester that gives up (the bound passed) leaves the buffer lent; it is
 * freed by whoever next finds done == asked (the next query, which discards
 * the late result) or, after the workers have stopped, by the box's owner.  So
 * no worker can ever write into freed memory, and nothing leaks.  The worker
 * never waits, allocates or frees: a query costs it one relaxed load per poll
 * while idle and at most FG_SNAP_REQS_PER_POLL requests copied (and
 * FG_SNAP_QUEUES_PER_POLL queues or FG_SNAP_SLOTS_PER_POLL table slots
 * visited) per poll while a snapshot is being taken.
 *
 * Consistency: a snapshot is taken over several polls while the worker keeps
 * dispatching, so it is not one instant.  Each queue is walked head to tail;
 * when the request the walk stopped at left the queue between two polls, the
 * walk starts that queue again from its head and the copies are deduplicated
 * by identity (slot, arrival, client id).  A request dispatched after it was
 * copied may still be listed; one that arrived behind the walk is not.
 *
 * Order: each waiting request carries the virtual finish the queue set would
 * give it (fg_qs_price / fg_qs_virtual_finish, the queue set's own rule,
 * chained along its queue from the queue's F_prev).  fg_pending_order then
 * replays the queue set's dispatch: the queue whose next request has the
 * smallest finish goes first, ties to the queue keyed earliest (the
 * order's round-robin tie), a queue re-keyed after a dispatch ties after the
 * others.  Several workers: finishes are compared relative to each worker's
 * own virtual time R (how far ahead of its worker's "now" a request is due).
 *
 * Thread contract: fg_snap_box_* helpers as annotated; the pure functions
 * (fg_pending_*) on any thread, on buffers the caller owns.
 */
#ifndef FG_PENDING_H
#define FG_PENDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "defs.h"
#include "endpoint.h"

#define FG_SNAP_REQS_PER_POLL 256u    /* requests a worker copies per poll iteration */
#define FG_SNAP_QUEUES_PER_POLL 4096u /* queues it visits (empty ones included) per poll */
#define FG_SNAP_SLOTS_PER_POLL 8192u  /* table slots it scans for executing requests per poll */
#define FG_SNAP_TIMEOUT_NS 1000000000ull /* a worker that has not answered by then: 503 */
#define FG_PENDING_DEFAULT_LIMIT 1000u
#define FG_PENDING_MAX_LIMIT 100000u
#define FG_PENDING_MAX_OFFSET (1u << 30) /* beyond every table: FG_MAX_MAX_REQUESTS * FG_MAX_WORKER_CORES */
#define FG_PENDING_MAX_FILTER 512u       /* bytes of a flowSchema or distinguisher filter */
#define FG_PENDING_MAX_PARAMS 8u         /* query parameters looked at; more is a 400 */
#define FG_SNAP_STR_BYTES 96u            /* string arena bytes reserved per request (details need more) */
_Static_assert(FG_PENDING_MAX_OFFSET >= (uint64_t)FG_MAX_MAX_REQUESTS * FG_MAX_WORKER_CORES,
	       "an offset can reach past every request of every worker");
_Static_assert(FG_PENDING_MAX_LIMIT <= FG_PENDING_MAX_OFFSET, "limits and offsets share one range check");

/* Strings of a request, as offsets into the snapshot's arena. */
enum fg_snap_str {
	FG_SNAP_FLOW_SCHEMA = 0, /* from the flow's statistics row (stats.h): escaped, printable */
	FG_SNAP_DISTINGUISHER,
	FG_SNAP_USER,            /* the rest only with FG_SNAP_DETAILS: the request's attributes, raw bytes */
	FG_SNAP_NAMESPACE,
	FG_SNAP_VERB,
	FG_SNAP_API_GROUP,
	FG_SNAP_RESOURCE,
	FG_SNAP_SUBRESOURCE,
	FG_SNAP_NAME,
	FG_SNAP_PATH,
	FG_SNAP_STR__COUNT
};

enum fg_snap_flags {
	FG_SNAP_DETAILS = 1u,   /* decode each request's attributes */
	FG_SNAP_EXECUTING = 2u, /* executing requests too (dump_requests) */
	FG_SNAP_ALL_LEVELS = 4u, /* every level (dumps); else the named one */
	FG_SNAP_ALL_QUEUES = 8u  /* idle queues too (dump_queues): an idle queue q from worker q % n only */
};

/* One runtime level of one worker, as the copy began. */
struct fg_snap_level {
	char name[FG_LEVEL_NAME_MAX];
	bool live;                     /* false: removed from the configuration, draining */
	bool queuing;                  /* has queues (QUEUE mode) */
	uint64_t r;                    /* the queue set's virtual time, seat-ns */
	uint64_t guess_ns;
	uint32_t n_waiting, n_executing, seats_in_use, active_queues;
	uint64_t dispatched, rejected, timed_out;
	uint32_t first_queue, n_queues; /* rows in fg_snapshot.queues (this worker's queues listed) */
};

struct fg_snap_queue {
	uint16_t level;                 /* index into fg_snapshot.levels */
	uint32_t index;                 /* the queue's index in this worker's queue set of the level */
	uint32_t n_waiting, n_executing, seats_executing;
	uint64_t f_prev;                /* Kubernetes' nextDispatchR */
	uint64_t head_tie;              /* the order's tie of its head (dispatch order of equal finishes) */
	uint64_t initial_seats_sum, max_seats_sum, work_sum; /* of the waiting requests; work in seat-ns */
};

enum fg_snap_state { FG_SNAP_WAITING = 1, FG_SNAP_EXECUTING_REQ = 2 };

struct fg_snap_req {
	uint64_t finish;                /* waiting: the virtual finish (seat-ns, the worker's R scale) */
	uint64_t arrival_ns, dispatch_ns, extra_latency_ns, client_id;
	uint32_t slot;                  /* identity inside the worker, with arrival_ns and client_id */
	uint32_t queue;                 /* level's queue index; UINT32_MAX: none (executing, no queues) */
	uint32_t qrow;                  /* waiting: row in fg_snapshot.queues */
	uint32_t walk;                  /* waiting: order of the copy along its queue */
	uint16_t level;                 /* index into fg_snapshot.levels */
	uint16_t initial_seats, final_seats;
	uint8_t state;                  /* enum fg_snap_state */
	struct fg_endpoint client;
	uint32_t str_off[FG_SNAP_STR__COUNT];
	uint16_t str_len[FG_SNAP_STR__COUNT];
};

/* The worker's place in a copy that spans polls; the worker's own. */
struct fg_snap_cursor {
	uint32_t phase;                 /* 0 levels, 1 queues, 2 executing slots, 3 done */
	uint32_t level, queue, slot;    /* runtime level slot, queue index, table slot */
	uint32_t next;                  /* slot of the next request to copy in this queue, or UINT32_MAX */
	uint64_t next_arrival;          /* its arrival, to see that it is still the same request */
	uint64_t finish;                /* the previous request's virtual finish in this queue */
	uint32_t walk, qrow;
	uint16_t slot_of_row[FG_MAX_LEVELS]; /* the runtime level of each level row */
	int16_t row_of_slot[FG_MAX_LEVELS];  /* and back; -1: not copied */
};
_Static_assert(FG_MAX_LEVELS <= INT16_MAX, "level rows fit an int16_t");

/* A snapshot buffer: the requester sets what is asked and the capacities,
 * the worker fills the rest. */
struct fg_snapshot {
	char level[FG_LEVEL_NAME_MAX];  /* asked: the level (unless FG_SNAP_ALL_LEVELS) */
	uint32_t flags;                 /* asked: enum fg_snap_flags */
	struct fg_snap_level levels[FG_MAX_LEVELS];
	uint32_t n_levels;
	struct fg_snap_queue *queues;
	uint32_t n_queues, cap_queues;
	struct fg_snap_req *reqs;
	uint32_t n_reqs, cap_reqs;
	char *strs;
	uint32_t n_strs, cap_strs;
	bool truncated;                 /* something did not fit a capacity */
	unsigned worker;
	uint64_t now_ns;                /* the worker's time when the copy began */
	uint32_t polls, max_poll_copies; /* how the copy was spread over polls */
};

struct fg_snap_box {
	uint64_t asked;                 /* requester: sequence of the snapshot in buf (release) */
	uint64_t done;                  /* worker: sequence it finished (release) */
	struct fg_snapshot *buf;        /* lent to the worker while asked != done */
	struct fg_snap_cursor cur;      /* the worker's own */
	uint64_t working;               /* the worker's own: sequence it is copying, 0 none */
} __attribute__((aligned(FG_CACHE_LINE)));

/* Worker: is a snapshot asked for or under way?  One relaxed load. */
static inline bool fg_snap_box_pending(const struct fg_snap_box *b)
{
	return __atomic_load_n(&b->asked, __ATOMIC_RELAXED) != b->done;
}

/* Allocate a buffer for one worker's snapshot: at most cap_reqs requests
 * and cap_queues queue rows.  NULL when out of memory.  Any thread. */
struct fg_snapshot *fg_snapshot_new(const char *level, uint32_t flags, uint32_t cap_reqs, uint32_t cap_queues);
void fg_snapshot_free(struct fg_snapshot *s);

/* A request's string (not NUL-terminated), or "" with *len 0. */
static inline const char *fg_snap_str(const struct fg_snapshot *s, const struct fg_snap_req *r, enum fg_snap_str k,
				      size_t *len)
{
	*len = r->str_len[k];
	return *len ? s->strs + r->str_off[k] : "";
}

/* --- pending requests: query, order, filter --------------------------------- */

struct fg_pending_query {
	uint32_t limit, offset;
	bool details;
	bool has_schema, has_dist;
	char schema[FG_PENDING_MAX_FILTER + 1];
	char dist[FG_PENDING_MAX_FILTER + 1];
};

/* One query parameter, as the HTTP layer or a control request gives it:
 * key and value NUL-terminated (NULL value: the key alone, "?details"). */
struct fg_kv {
	const char *key, *value;
};

/* Parse the parameters of a pendingrequests query (names and bounds in
 * docs/visibility.md).  0, or -EINVAL with a one-line, printable reason in
 * err: an unknown or repeated parameter, a number out of range or not a
 * plain decimal, a filter too long or with control bytes. */
int fg_pending_parse_query(const struct fg_kv *kv, size_t n, struct fg_pending_query *q, char *err, size_t errlen);

/* A request of the answer: which snapshot and request, and its positions. */
struct fg_pending_item {
	uint32_t snap, req;
	uint32_t pos_level, pos_queue;
};

struct fg_pending_counts {
	uint64_t waiting;  /* waiting requests in the snapshots, duplicates dropped */
	uint64_t matched;  /* of those, the ones the filters let through (before offset and limit) */
};

/*
 * The waiting requests of the n snapshots (one per worker, the same level) in
 * dispatch order, duplicates dropped, filtered by q's flowSchema and
 * distinguisher, then cut by offset and limit.  Writes at most q->limit items
 * to out (malloc'd, *out NULL when none) and the counts.  Returns the number
 * of items, or -ENOMEM.  (Snapshots of several levels: positions in a queue
 * are right, positions in the level mix the levels.)
 */
long fg_pending_order(struct fg_snapshot *const *snaps, unsigned n, const struct fg_pending_query *q,
		      struct fg_pending_item **out, struct fg_pending_counts *counts);

/* A virtual time in seat-ns as Kubernetes prints R: "%d.%08dss". */
void fg_pending_format_r(uint64_t seat_ns, char *buf, size_t cap);

#endif
