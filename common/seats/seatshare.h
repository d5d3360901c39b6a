/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seatshare — how several worker cores share one priority level's seats.
 *
 * Every worker has all of a level's queues and queues a request where it
 * arrived.  A level's limit C is split into per-worker allotments by the
 * allotter thread with a global max-min over the level's flows (a flow that
 * waits at several workers is one item, its share split over them by
 * demand; fg_seatshare_round_flows), recomputed every allotment period and
 * when a worker signals; UsageBased levels meet the queues' demands in usage
 * order instead (fg_seatshare_round).  Seats that no share claims (every
 * demand met) go to the workers as headroom, split evenly, so an arrival
 * where seats are free starts without waiting for a round; the next round
 * takes them back as demands grow.  The split is pure arithmetic here
 * (also used by the simulator and the dataplane bench); the hand-over
 * between the allotter and the workers is the grant protocol below.
 *
 * The board: a per-configuration-generation table that the workers and the
 * allotter share (the only mutable memory a published fg_config points to).
 * Per level it has each worker's queues' loads (written by that worker, read
 * by the allotter for the demands; the allotter writes back each queue's
 * share, the weight its flow's requests queue with there) and one cache line
 * per worker with its seat share.  When rounds run is
 * common/runtime/allotter.h's policy.
 *
 * Grant protocol (keeps sum over workers of executing seats <= C):
 *   - a worker dispatches only while its seats in use fit its applied
 *     allotment, publishes `used` on every change, and applies a new grant
 *     (grant_seq != acked_seq) at its next poll: applied = grant, then
 *     acked_seq = grant_seq (release);
 *   - the allotter counts for each worker reserved = max(applied, used)
 *     (plus the pending grant while one is not acknowledged: the worker may
 *     apply it any moment) and grants more only out of C - sum(reserved); a
 *     shrink is a grant below `applied` that frees its seats only once
 *     acknowledged and the seats drained;
 *   - a worker following a new configuration starts each level it had at
 *     min(applied, its static share of the new limit, the seats it holds)
 *     (a level new to it at the static share: the exception is a level
 *     removed and added back while another worker still drains it),
 *     so workers on different generations together stay within the larger
 *     of the limits, and a worker above its static share starts nothing new
 *     until its own seats fall below that start or a round has counted what
 *     each holds;
 *   - the level's limit itself moves (borrowing) only on the allotter
 *     thread, between rounds: a smaller limit is a round of shrinking
 *     grants like any other, a larger one frees seats to grant.
 * Exceptions the KEP allows: the transient above a decreased limit while
 * executions finish, and a lone too-wide request.
 */
#ifndef FG_SEATSHARE_H
#define FG_SEATSHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "defs.h"

#define FG_SEATSHARE_MAX_WORKERS FG_MAX_WORKER_CORES /* a board has a share per worker core */
/* Rounds over which a steady shortfall of one seat builds one seat of
 * credit: slow enough that targets do not flap from round to round. */
#define FG_SEATSHARE_CREDIT_ROUNDS 64.0
/* Credits stay within +-this many times the level's limit: about one second
 * of all its seats at the default 1 ms period (1000 rounds / 64), so that a
 * worker that ran a whole 1 s wide request above its share still owes it in
 * full (a bound of 1x forgot most of it and starved 2-seat heads: issue 13),
 * while nothing winds up for longer than that. */
#define FG_SEATSHARE_CREDIT_BOUND 16.0

/* One worker's part of one level: one cache line. */
struct fg_seat_share {
	uint32_t grant_seq, grant;     /* allotter: grant, then grant_seq (release) */
	uint32_t acked_seq, applied;   /* worker: applied, then acked_seq (release) */
	uint32_t used;                 /* worker: seats held at this worker */
	uint32_t head;                 /* worker: seats its next waiting request needs (0: none) */
} __attribute__((aligned(FG_CACHE_LINE)));

/* One queue of one worker, as the worker publishes it (every worker has
 * all the level's queues: a request waits at the worker that received it),
 * and the share of the level the allotter's last round gave it. */
struct fg_queue_load {
	uint64_t flow;                 /* the flow that holds the queue alone (its hash), or
					* FG_QUEUE_SHARED: the allotter's max-min item */
	uint32_t demand;               /* seats waiting + executing: the max-min demand */
	uint32_t weight;               /* the flow's weight (thousandths; 0: 1) */
	uint64_t usage_key;            /* UsageBased levels: fg_qs_queue_usage_key */
	uint32_t share_milli;          /* allotter: the flow's share of the level here, thousandths
					* of a seat (0: none yet; kept while the queue has no demand);
					* the weight its requests queue with */
};
/* A queue that several flows hold: one max-min item of its own. */
#define FG_QUEUE_SHARED UINT64_MAX

struct fg_level_board {
	/* The level's current limit: nominal (or as fg_config_keep_level_limits
	 * starts it), then borrowing's — written by the thread that runs the
	 * borrowing rounds, the allotter thread, between its allotment rounds
	 * (relaxed); a worker joining the board reads it for its even split. */
	uint32_t limit;
	bool exempt;                   /* no limit, no sharing */
	bool usage_based;              /* seats go by the queues' usage order (fg_seatshare_round) */
	uint32_t n_queues;             /* 0: no queues (reject type): an even split */
	struct fg_queue_load *loads;   /* worker-major: loads[w * n_queues + q] */
	struct fg_seat_share *shares;  /* [W] */
	double *credit;                /* [W], the allotter's only (fg_seatshare_round) */
	uint32_t allotted_limit;       /* the allotter's only: the limit its last round split; when the
					* limit moved, every worker gets a grant (and with it the level's
					* new limit for its width checks), changed or not */
	/* The limit in force: `limit` scaled by the workers' usable backend
	 * capacity (struct fg_worker_capacity) — what the last round split,
	 * written by the allotter (relaxed), read by the workers for their
	 * width checks. */
	uint32_t limit_in_force;
};

/* What a worker's backend pool can take (fg_backendpool_capacity; its
 * parts of the backends' capacities): written by that worker when it
 * moves, read by the allotter, which splits each level's limit scaled by
 * the sums over the workers (fg_qs_scale_by_capacity; 0 of 0: no scaling). */
struct fg_worker_capacity {
	uint32_t usable, total;
	/* Adaptive: the worker's looks (every ~100 ms) that found requests
	 * held for backend room, counted, so that every worker takes back the
	 * levels' overbooking when any one is held (backendpool.h). */
	uint64_t held_looks;
} __attribute__((aligned(FG_CACHE_LINE)));

struct fg_board {
	unsigned n_workers;
	uint32_t n_levels;
	struct fg_worker_capacity capacity[FG_SEATSHARE_MAX_WORKERS];
	/* Set by a worker whose next request stopped fitting its allotment;
	 * the allotter runs a round early when it finds it set. */
	uint32_t demand_signal __attribute__((aligned(FG_CACHE_LINE)));
	struct fg_level_board levels[] __attribute__((aligned(FG_CACHE_LINE)));
};

/* Worker side: a plain store, and only when not already set (no syscall,
 * no write to a line others read while it stays set). */
static inline void fg_board_signal(struct fg_board *b)
{
	if (!__atomic_load_n(&b->demand_signal, __ATOMIC_RELAXED))
		__atomic_store_n(&b->demand_signal, 1, __ATOMIC_RELAXED);
}

/* Allotter side: whether a worker signalled since the last call. */
static inline bool fg_board_take_signal(struct fg_board *b)
{
	return __atomic_load_n(&b->demand_signal, __ATOMIC_RELAXED) &&
	       __atomic_exchange_n(&b->demand_signal, 0, __ATOMIC_RELAXED);
}

/* What the allotter did (written by the allotter thread only; status reads
 * them with relaxed loads). */
struct fg_allotter_stats {
	uint64_t rounds;            /* allotment rounds run */
	uint64_t signalled_rounds;  /* of which early, on a worker's demand signal */
	uint64_t grants;            /* new grants handed out */
};

struct fg_fc_config;

/* A board for a compiled configuration and W workers (NULL: out of memory). */
struct fg_board *fg_board_new(const struct fg_fc_config *fc, unsigned n_workers);
void fg_board_free(struct fg_board *b);
/* Before the board is published: level i's shares start at the even split
 * of its limit as it is now. */
void fg_board_reset_level(struct fg_board *b, uint32_t i);

static inline struct fg_queue_load *fg_board_load(const struct fg_level_board *l, unsigned worker, uint32_t q)
{
	return &l->loads[(size_t)worker * l->n_queues + q];
}

/* The even split a worker starts a level with: C / W, the remainder to the first workers. */
static inline uint32_t fg_seatshare_static(uint32_t limit, unsigned n_workers, unsigned worker)
{
	return limit / n_workers + (worker < limit % n_workers);
}

/* What the allotter knows of one worker's part of a level in one round. */
struct fg_seatshare_view {
	uint32_t used;       /* seats held at the worker */
	uint32_t reserved;   /* max(applied, used, a grant not yet acknowledged) */
	uint32_t head;       /* seats its next waiting request needs; 0: nothing waits */
	uint32_t grant;      /* in: the current grant; out: the new one */
	bool pending;        /* its last grant is not acknowledged: left as it is */
};

/*
 * One round for one level (limit C, W workers, the demands of n_queues
 * entries, entry e at worker e % W — the board passes each worker's queues
 * as entries q * W + w):
 *   - shares: the weighted max-min allocation of C over the queues'
 *     demands (each capped at C; weights in thousandths, NULL: all 1;
 *     common/seats/maxmin), summed per owner — real numbers; on a UsageBased
 *     level (usage_key not NULL) the queues' demands are met in the order
 *     of their keys instead (smallest first, equal keys max-min among
 *     themselves), as one worker would dispatch them;
 *   - credits: while a worker has requests waiting or executing, credit +=
 *     (share - used - the mean of that over such workers) /
 *     FG_SEATSHARE_CREDIT_ROUNDS each round, within +-FG_SEATSHARE_CREDIT_BOUND
 *     x C; cleared when it is idle (nothing is banked);
 *   - targets: whole seats by largest remainder (stable while the shares
 *     are); then the seats a worker's target leaves beyond its use, fewer
 *     than its waiting head needs, go to waiting workers whose heads they
 *     let start, while its credit does not cover its head (seatshare.c,
 *     lend_spares); then a worker whose waiting head is wider than one seat
 *     and does not fit gets the seats it lacks from workers owed less, once
 *     its credit covers the head (fit_heads);
 *   - grants: a grant above the target is lowered to it at once, and grows
 *     only out of the free seats C - sum(reserved).  On MaxMin levels, first
 *     one dispatch order across the workers (seatshare.c, dispatch_order):
 *     most owed first, each waiting worker gets up to used + its head's
 *     seats, above its target if need be (taking back what it holds, except
 *     an over-served worker behind a more owed one); the first blocked head
 *     owed its width becomes the holder, and blocked workers behind it give
 *     up the seats they hold idle and do not grow this round.  Then the
 *     free seats left go up to the targets.  A pending worker's grant is
 *     never changed.
 * With no queues (reject-type levels): the even split.  credit[W] is the
 * allotter's memory of the level (zeroed for a new board).
 */
void fg_seatshare_round(uint32_t limit, unsigned n_workers, const uint32_t *demand, const uint32_t *weight,
			const uint64_t *usage_key, uint32_t n_queues, struct fg_seatshare_view *v, double *credit);

/*
 * The same round when the requests stay at the worker that received them
 * (the simulator's "local" placements, docs/simulator.md): entry e is one
 * queue at worker e % W, flow[e] the flow it holds (entries of one flow on
 * several workers carry the same key; a queue shared by several flows a key
 * of its own).  Each flow, not each entry, is one max-min item, so a flow
 * that arrives at several workers gets one share in all; its allocation is
 * split over the workers in proportion to its demand at each (entry_share,
 * when not NULL, receives for each entry its flow's share at that entry's
 * worker, whatever queues the flow holds there).  Credits, targets and grants as in
 * fg_seatshare_round (MaxMin), except that the seats left after each
 * worker's whole share go by remainder plus credit, the worker that holds
 * one keeping it until another is owed a seat more: fractional shares are
 * the rule here, and turns make each worker average its share.
 */
void fg_seatshare_round_flows(uint32_t limit, unsigned n_workers, const uint32_t *demand, const uint32_t *weight,
			      const uint64_t *flow, uint32_t n_entries, struct fg_seatshare_view *v, double *credit,
			      double *entry_share);

/*
 * One allotment round over a board (the allotter): reads every worker's
 * share and queue loads, writes new grants.  Call only when every worker
 * follows the board's configuration generation.  Returns the grants changed;
 * *contended (when not NULL): some level's demands reach its limit, or some
 * worker's next request still does not fit its grant.
 */
unsigned fg_board_allot(struct fg_board *b, bool *contended);

/* Whether some level's limit moved (borrowing) since the round that last
 * split it: the allotter's thread only; a round is then due at once. */
bool fg_board_limit_moved(const struct fg_board *b);

#endif
