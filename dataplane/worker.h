/* SPDX-License-Identifier: Apache-2.0 */
/*
 * worker — the dispatcher logic of one worker: parse, classify, admit or
 * reject, queue with the fair-queuing core (common/fq/queueset), dispatch under
 * the seat limit, relay responses, hold seats for the extra latency, expire.
 *
 * It owns its request table, its queue set and its statistics; it reads the
 * published fg_config passed in for each step and the time passed in (no
 * clock reads), and talks to the network only through a struct fg_io, so
 * tests drive it with a fake io and a virtual clock.
 *
 * Every valid REQUEST ends in exactly one answer to its client: the backend's
 * RESPONSE (or backend-sent REJECT) or a REJECT from fairgate.  A REJECT for
 * a request whose packet went to a backend needs a fresh buffer: it comes
 * from the pool or, when that is dry, from a reserve kept for it; only when
 * both are empty is it lost (answers_lost).  Accounting invariant (tests
 * check it):
 *   received == responded + sum(rejected) + answers_lost + waiting + executing
 *
 * Thread contract: all functions are called by the owning worker thread only.
 */
#ifndef FG_WORKER_H
#define FG_WORKER_H

#include <stdbool.h>
#include <stdint.h>

#include "backendpool.h"
#include "classguess.h"
#include "cookie.h"
#include "nonce.h"
#include "config.h"
#include "io.h"
#include "pending.h"
#include "queueset.h"
#include "reqtable.h"
#include "retryafter.h"
#include "wheel.h"
#include "workest.h"
#include "seatshare.h"
#include "spsc.h"
#include "stats.h"

/*
 * A priority level as the worker runs it.  Matched to configurations by
 * name; a level removed from the configuration stays (live = false) until
 * nothing waits or executes in it, then its slot is freed.
 */
struct fg_level_rt {
	bool used, live;
	uint32_t cfg_index;          /* in the followed configuration (live levels) */
	bool blocked;                /* several workers: the next request does not fit the allotment */
	struct fg_queueset qs;
	struct fg_retry_after retry; /* the level's adaptive retry-after (retryAfterMillis 0) */
	/* The head last counted as waiting for seats (no_accommodation, once
	 * per head): its slot and arrival. */
	uint32_t noted_head;
	uint64_t noted_head_arrival;
};

/*
 * Several workers: a request waits and executes at the worker that received
 * it, in that worker's own queue set (every worker has all of a level's
 * queues); the allotter splits each level's seats per flow over the workers
 * (common/seats/seatshare.h) and each worker queues a flow's requests with
 * the weight of the share it has there.  Only a backend's answer that
 * arrives at another worker than its request's (dispatch ids name the
 * worker) crosses, through the SPSC ring from the receiving worker to the
 * owner.
 */
struct fg_handoff {
	struct fg_pkt pkt;            /* the answer, owned by the ring while in it */
	struct fg_hdr hdr;            /* its decoded header */
};

struct fg_mesh {
	unsigned n_workers;
	struct fg_spsc *rings;        /* rings[from * n_workers + to] */
	/* Backends as all workers see them: timeouts counted over all of
	 * them, an ejection by one applies to all (common/req/backendpool.h). */
	struct fg_backend_shared backends[FG_MAX_BACKENDS];
};

/* The capacity of each ring between n workers: FG_HANDOFF_RING_SIZE into a
 * worker split over the n - 1 others (a power of two, at least
 * FG_HANDOFF_RING_MIN), so that the buffers rings can hold grow with n, not
 * with n squared, up to 128 workers (DPDK pools are sized for them). */
static inline uint32_t fg_handoff_ring_capacity(unsigned n_workers)
{
	uint32_t c = FG_HANDOFF_RING_SIZE;
	while (n_workers > 2 && c > FG_HANDOFF_RING_MIN && c * (n_workers - 1) > FG_HANDOFF_RING_SIZE * 2)
		c /= 2;
	return c;
}

/* Rings of ring_capacity hand-offs (a power of two) between n workers. */
int fg_mesh_init(struct fg_mesh *m, unsigned n_workers, uint32_t ring_capacity);
/* Frees what is still in the rings through io_of_worker's io. */
void fg_mesh_fini(struct fg_mesh *m, const struct fg_io *ios);

/* Laid out by access: what every datagram touches first (identity, I/O,
 * request table, lists, the maps classification reads), what every poll
 * touches next, then the large per-level and per-backend arrays, then the
 * statistics (hot counters first, common/req/stats.h). */
struct fg_worker {
	unsigned id;
	bool draining;               /* shutting down: admit nothing new */
	bool apf_metrics;            /* flowcontrolMetrics, fixed by the first configuration */
	struct fg_io io;
	struct fg_reqtable reqs;
	struct fg_reqlist waiting;   /* arrival order, so the head's wait limit expires first */
	struct fg_reqlist executing; /* dispatch order, so the head's backend timeout expires first */
	struct fg_reqlist held;      /* admitted while every usable backend was full: first come, first sent */
	uint64_t config_generation;  /* the configuration the levels follow */
	uint16_t *level_of_cfg;      /* config level index -> runtime slot */
	uint16_t *pair_of_schema;    /* config schema index -> stats.apf pair (apf_metrics) */
	uint32_t n_level_map;
	uint32_t n_levels;           /* slots ever used: scan bound */
	uint32_t n_retiring;         /* used slots the configuration no longer has: they drain, then go */
	uint32_t limits_seq;         /* one worker: the levels' current limits followed (config.h) */
	struct fg_mesh *mesh;        /* NULL: the only worker */
	struct fg_board *board;      /* the followed configuration's, with a mesh */
	uint64_t periodic_due;       /* when the levels' R and the backends' state go to the statistics next */
	struct fg_nonces nonces;     /* dispatch ids' unpredictable part */
	struct fg_wheel lingering;   /* answered requests holding seats for their extra latency */
	uint32_t n_reserve;          /* buffers kept for answers fairgate owes when the pool runs dry */
	struct fg_pkt reserve[FG_ANSWER_RESERVE];
	struct fg_snap_box *snap;    /* visibility snapshots asked by the control side (pending.h); NULL: none */
	/* workEstimates PerClass: the service time per (level slot, verb
	 * class), learned at completion, each arrival priced with its class's
	 * (classguess.h; a slot a new level takes starts afresh). */
	bool work_per_class;
	struct fg_classguess classguess;
	struct fg_backendpool pool;
	struct fg_adapt *adapt_table; /* the pool's controllers, made at the first Adaptive configuration */
	uint32_t pool_changes_seen;  /* pool.changes when the levels last followed its capacity */
	/* serverConcurrencyLimitMode Adaptive: this worker's part of
	 * serverConcurrencyLimit (the levels' scale at 1:1) and of its bounds. */
	struct {
		bool on;
		uint32_t start, max;
		uint64_t refusals_seen; /* the levels' refusals for want of seats, at the last look */
		uint64_t holds_seen;    /* requests held for backend room (held_for_backend), at the last look */
		uint64_t board_held_seen; /* several workers: the sum of their held_looks at the last look */
	} adaptive;
	struct fg_cookie_jar cookies; /* address validation; every worker of a set shares the master */
	struct fg_level_rt levels[FG_MAX_LEVELS];
	struct fg_worker_stats stats;
};

/* 0, or -EINVAL / -ENOMEM / -EIO (no random source for the secrets). */
int fg_worker_init(struct fg_worker *w, unsigned id, struct fg_io io, uint32_t max_requests);
/* Accept and make the same cookies as every worker given this master (the
 * worker set gives all its workers one; a lone worker keeps its own). */
void fg_worker_share_cookie_master(struct fg_worker *w, const uint8_t master[FG_COOKIE_MASTER_LEN]);
/* Join the mesh of several workers (before the first configure); id < n. */
int fg_worker_join(struct fg_worker *w, struct fg_mesh *mesh);
void fg_worker_fini(struct fg_worker *w);

/*
 * Follow a (new) configuration: levels are matched by name and their queue
 * sets reconfigured in place, new levels start, removed ones linger until
 * idle (KEP "Reaction to Configuration Changes").  Called before the first
 * poll and whenever the published generation changes; fg_worker_poll does it
 * by itself.  0, or -EINVAL / -ENOMEM / -ENOSPC (the worker keeps following
 * the previous configuration's levels).
 */
int fg_worker_configure(struct fg_worker *w, const struct fg_config *cfg, uint64_t now);

/* Handle received datagrams (takes ownership of them): stage by stage over
 * the burst (decode every header, classify every request, then queue and
 * relay in arrival order; worker.c), with the outcome of handling them one
 * after the other. */
void fg_worker_handle_burst(struct fg_worker *w, const struct fg_config *cfg, struct fg_pkt *pkts, unsigned n,
			    uint64_t now);
/* Handle one received datagram (a burst of one). */
void fg_worker_handle(struct fg_worker *w, const struct fg_config *cfg, struct fg_pkt *pkt, uint64_t now);

/* Time out waiting and executing requests whose limits passed; release
 * lingering seats whose extra latency is over. */
void fg_worker_expire(struct fg_worker *w, const struct fg_config *cfg, uint64_t now);

/* Dispatch waiting requests in fair order while seats are free. */
void fg_worker_dispatch(struct fg_worker *w, const struct fg_config *cfg, uint64_t now);

/* One poll-loop step: hand-offs, rx burst, handle, expire, dispatch, flush.
 * Returns the datagrams received plus the hand-offs taken (0: idle). */
unsigned fg_worker_poll(struct fg_worker *w, const struct fg_config *cfg, uint64_t now);

/* Shutdown, stage 1: stop admitting, answer everything waiting with
 * shutting-down.  Stage 2 (after the grace period): answer what still
 * executes with shutting-down. */
void fg_worker_drain(struct fg_worker *w, const struct fg_config *cfg, uint64_t now);
void fg_worker_abort_executing(struct fg_worker *w, const struct fg_config *cfg, uint64_t now);

/* Shutdown with several workers, once this worker is done: take what the
 * others still hand over (answered shutting-down) without receiving more. */
void fg_worker_poll_handoffs(struct fg_worker *w, const struct fg_config *cfg, uint64_t now);

/* The next instant something expires, for an idle socket worker's sleep. */
uint64_t fg_worker_next_deadline(const struct fg_worker *w);

#endif
