/* SPDX-License-Identifier: Apache-2.0 */
/*
 * queueset — one priority level's fair-queuing core (KEP-1040 queuing and
 * dispatching, with max-min fairness and no windup).  docs/fair-queuing.md
 * explains the algorithm; this header is the contract.
 *
 * - Modes: EXEMPT (never queued or rejected; seats still counted), REJECT (no
 *   queues: runs now if the seats fit, else concurrency-limit) and QUEUE.
 * - Arrival: shuffle sharding deals a hand of queues from the flow hash; the
 *   request joins the queue of the hand its flow waits in alone (with room),
 *   else the hand's queue with the least waiting work, one no other flow
 *   holds first on ties (the first card rotates per arrival, so ties
 *   spread).  It is refused (queue-full) when no seat is free and that queue
 *   holds queue_length_limit requests.
 * - Virtual time R advances at the max-min fair share of the seats left by
 *   queues with nothing waiting (their executing seats are not preemptible)
 *   over the demands (waiting + executing seats) of the queues that wait;
 *   when every demand fits, at the largest consumption; and it never passes
 *   the smallest virtual finish waiting to be dispatched, so that it follows
 *   the dispatches that happen (seats stuck at a paused backend do not move
 *   it ahead of every queue).  A queue's next
 *   request starts at S = max(F_prev, R at its arrival) and finishes at
 *   F = S + cost, cost = initial_seats * guess + final_seats * extra_latency
 *   (seat-nanoseconds), priced when the request reaches the head.  Dispatch
 *   takes the smallest F (common/fq/order: a calendar of finishes in front of a
 *   skip list; ties in round-robin order) while the head's seats fit; a head that does not fit
 *   blocks the level (nothing bypasses it); a head wider than the limit runs
 *   alone.  A queue using less than its share is bumped to R on arrival, so
 *   it banks no credit; a flow served ahead of its share keeps that debt,
 *   even across idle periods and into another queue of its hand (a table of
 *   the flows' last finishes, struct fg_qs_flow_debt); while a flow waits in
 *   several queues it took (spilled over a full one), each starts after the
 *   flow's last finish in any of them, so it is served as one flow.
 * - Idle credit: the seat-time that idles while the first head waits for
 *   room (this queue set's free seats, from its block until its dispatch)
 *   is not its service: its queue's F_prev is set to S + cost - credit at
 *   its dispatch, credit <= the head's cost.  Dropped when another head is
 *   dispatched first, the head leaves, the limit (a worker's allotment)
 *   moves or the set is reconfigured; not kept on UsageBased levels.
 * - Completion corrects F_prev by initial_seats * (actual - guess); seats stay
 *   held for the extra latency, then are released.  The guess is learned:
 *   the mean of the first 8 durations, then an EWMA with weight 1/8
 *   (fixed_guess keeps Kubernetes' constant).
 * - R is a uint64 in seat-ns that wraps; comparisons use signed differences
 *   (`epochs` counts the wraps).
 * - Weights (cfg.weighted): a request carries its flow's weight w; its cost
 *   is divided by w, and R advances at the weighted fair share of one unit
 *   of weight (a waiting queue of demand d takes min(d, w * rate); w is its
 *   head's): common/fq/wfairshare.  Without cfg.weighted every weight is 1 and
 *   the exact common/fq/fairshare is used.
 * - UsageBased (cfg.usage_based): queues are ordered by their head's flow's
 *   decayed usage / weight (common/fq/usage.h), ties by arrival, instead of by
 *   virtual finish; everything else above holds.  The usage table outlives
 *   a switch back to MaxMin (requests refer to it).
 *
 * Costs: per arrival, dispatch, completion and removal an order insertion
 * or removal, O(1) into the calendar's ring (common/fq/order.h; O(log N) where
 * a key lands in near or far, and on UsageBased levels: N = queues with
 * waiting requests), plus O(hand^2) for the deal and O(log C) for the fair
 * share (weighted: O(1) per change, plus the crossing's moves).  UsageBased
 * adds O(queues) once per sampling interval (the fold).  No allocation
 * after creation.
 *
 * Thread contract: one owner thread; time is passed in (ns, non-decreasing).
 */
#ifndef FG_QUEUESET_H
#define FG_QUEUESET_H

#include <stdbool.h>
#include <stdint.h>

#include "fairshare.h"
#include "order.h"
#include "shuffle.h"
#include "usage.h"
#include "wfairshare.h"

enum fg_qs_mode { FG_QS_EXEMPT = 0, FG_QS_REJECT = 1, FG_QS_QUEUE = 2 };

enum fg_qs_verdict {
	FG_QS_QUEUED = 0,             /* waiting: dispatch with fg_qs_dispatch_next */
	FG_QS_EXECUTE,                /* executing now (exempt, reject mode with room, or nothing waits) */
	FG_QS_REJECT_QUEUE_FULL,
	FG_QS_REJECT_CONCURRENCY,
};

enum fg_qs_state { FG_QS_IDLE = 0, FG_QS_WAITING, FG_QS_EXECUTING, FG_QS_LINGERING };

#define FG_QS_NO_QUEUE UINT32_MAX
#define FG_QS_DEFAULT_GUESS_NS 3000000ull /* Kubernetes' G = 3 ms */
/* Flow weights in thousandths (the same scale as flowcontrol's). */
#define FG_QS_WEIGHT_ONE FG_WFAIRSHARE_WEIGHT_ONE
#define FG_QS_WEIGHT_MAX FG_WFAIRSHARE_MAX_WEIGHT

struct fg_qs_config {
	enum fg_qs_mode mode;
	uint32_t queues;             /* QUEUE mode: number of queues */
	uint32_t hand_size;
	uint32_t queue_length_limit; /* requests per queue */
	uint32_t concurrency_limit;  /* seats */
	uint32_t capacity;           /* seats the fair-share trees are sized for: borrowing may raise the
				      * limits up to it (fg_qs_set_level_limit); below concurrency_limit:
				      * concurrency_limit */
	uint32_t max_seats;          /* width cap; 0 = none */
	uint32_t wide_limit;         /* a request wider than this is too wide for the level (runs alone, its
				      * final seats capped to it); 0: the level limit.  Cluster mode: the
				      * cluster-wide limit, so a member below its share waits for seats
				      * instead of running a request alone past them (scale-out.md) */
	uint64_t initial_guess_ns;   /* first service-time guess; 0 = 3 ms */
	bool fixed_guess;            /* keep the guess (Kubernetes); else learn it (EWMA of durations) */
	bool caller_prices;          /* each arrival's guess_ns is the caller's (classguess.h; 0: the set's), kept until it completes */
	bool weighted;               /* requests may carry weights other than 1: weighted max-min
				      * (wfairshare); without it every weight counts as 1 */
	bool usage_based;            /* UsageBased: dispatch by the head's flow's decayed usage /
				      * weight (common/fq/usage.h), ties by arrival, instead of by
				      * virtual finish */
	struct fg_usage_params usage; /* UsageBased: half-life, sampling interval, reset period */
	uint32_t usage_flows;        /* UsageBased: flows tracked; 0: 4 per queue within [1024, 65536] */
	uint64_t seed;               /* the order's skip-list levels */
};

/* The ordering rule, shared with the pending-order replay (common/req/pending.h)
 * so that both agree: the later of two wrapping virtual times, a request's
 * cost (priced with the guess current when it reaches the head; a weighted
 * request's is divided by its weight, fg_qs_weighted) and its virtual finish
 * after its queue's F_prev. */
static inline uint64_t fg_qs_later(uint64_t a, uint64_t b) { return (int64_t)(a - b) >= 0 ? a : b; }
static inline uint64_t fg_qs_price(uint32_t initial_seats, uint32_t final_seats, uint64_t extra_latency_ns,
				   uint64_t guess_ns)
{
	return (uint64_t)initial_seats * guess_ns + (uint64_t)final_seats * extra_latency_ns;
}
/* Seat-ns as virtual time for a flow of this weight (thousandths): a flow of
 * weight w moves its queue's finish times 1/w as fast, so it is served w
 * times as fast as a flow of weight 1 when both are backlogged. */
static inline uint64_t fg_qs_weighted(uint64_t seat_ns, uint32_t weight)
{
	if (weight == FG_QS_WEIGHT_ONE || weight == 0)
		return seat_ns;
	return (uint64_t)((unsigned __int128)seat_ns * FG_QS_WEIGHT_ONE / weight);
}
static inline uint64_t fg_qs_virtual_finish(uint64_t f_prev, uint64_t arrival_r, uint64_t cost)
{
	return fg_qs_later(f_prev, arrival_r) + cost;
}

/* A request as the queue set sees it; embed it in the caller's request.
 * One cache line: what can be derived is (its cost from its widths, guess,
 * extra latency and weight), and arrival_r and dispatch_ns share bytes
 * (waiting vs executing). */
struct fg_qs_req {
	struct fg_qs_req *prev, *next; /* queue links while waiting */
	uint64_t arrival_ns;
	union {
		uint64_t arrival_r;    /* waiting: R at its arrival */
		uint64_t dispatch_ns;  /* executing, lingering: when it was dispatched */
	};
	uint64_t guess_ns;             /* the service-time guess it is priced with (when it became head) */
	uint32_t extra_latency_us;     /* its final seats' extra latency, whole microseconds */
	uint32_t queue;
	uint32_t weight;               /* the flow's weight in thousandths (FG_QS_WEIGHT_ONE: 1) */
	uint32_t flow;                 /* its entry in the usage table, or FG_USAGE_NONE */
	uint16_t initial_seats, final_seats, seats; /* seats = held for the whole life */
	uint8_t state;
	bool foreign;                  /* not of the flow its queue was taken by (fg_qs_queue.flow_hash) */
};
_Static_assert(sizeof(struct fg_qs_req) <= 64, "a request's queue-set part is one cache line");

static inline uint64_t fg_qs_req_extra_ns(const struct fg_qs_req *r) { return (uint64_t)r->extra_latency_us * 1000; }

/* Its estimated seat-ns with the guess it is priced with, divided by its
 * weight: its virtual cost (ordering). */
static inline uint64_t fg_qs_req_cost(const struct fg_qs_req *r)
{
	return fg_qs_weighted(fg_qs_price(r->initial_seats, r->final_seats, fg_qs_req_extra_ns(r), r->guess_ns),
			      r->weight);
}

struct fg_qs_queue {
	struct fg_qs_req *head, *tail;
	uint64_t f_prev;         /* virtual finish of the last dispatched request */
	uint64_t waiting_extra;  /* the waiting requests' final seats x extra latency (seat-ns) */
	uint32_t waiting_initial; /* and their initial seats: waiting work = these x the guess + that */
	uint32_t n_waiting;
	uint32_t seats_waiting, seats_executing;
	uint32_t n_executing;    /* executing or lingering requests */
	uint32_t weight;         /* weighted levels: the weight of the last request dispatched */
	uint32_t key_gen;        /* UsageBased: the head's flow's generation its key was taken at */
	uint32_t idle_epoch;     /* wraps of R (low 32 bits) when the queue last went idle */
	/* The flow that took the queue when it was idle, and how many of its
	 * waiting or executing requests are of other flows: a flow keeps to
	 * the queue it waits in alone (choose_queue, per-flow fairness);
	 * whether any request of another flow joined since it went busy (its
	 * finish time is then not that flow's own to keep: queue_went_idle). */
	uint32_t n_foreign;
	bool mixed;
	bool waiting_counted;    /* counted in its flow's fg_qs_flow_debt.waiting_in */
	uint64_t flow_hash;
};

struct fg_qs_stats {
	uint64_t arrived, dispatched, finished, removed;
	uint64_t rejected_queue_full, rejected_concurrency;
	uint64_t epochs;            /* wraps of R */
	uint64_t blocked_by_width;  /* dispatch stopped on a head that did not fit */
};

/* What R's rate is computed from: the demands of the queues that wait and
 * the executing seats of the queues that do not.  share and busy are exact
 * and always allocated (their size is the largest limit the level may
 * have); a weighted level keeps its contributions in wshare and wbusy
 * instead. */
struct fg_qs_demands {
	struct fg_fairshare share, busy;
	struct fg_wfairshare wshare, wbusy;
};

/* What a flow owed when a queue it held alone last went idle: its finish
 * time there (valid in R's wrap `epoch`).  A direct-mapped table of
 * FG_QS_DEBTS entries by flow hash: a flow that comes back to any queue of
 * its hand starts from it, so that no flow sheds what it owes by taking a
 * fresh idle queue (per-flow fairness).  A queue that other flows' requests
 * joined while it was busy leaves no entry: its finish time is theirs too
 * (taken as the first flow's, a light flow that shared its queue with a
 * heavy one started behind the heavy one's backlog).  A collision only
 * forgets. */
#define FG_QS_DEBTS 256
struct fg_qs_flow_debt {
	uint64_t flow_hash;
	uint64_t f;        /* the flow's last finish, over the queues it held alone */
	uint32_t epoch;
	uint32_t waiting_in; /* queues the flow took while idle in which requests wait now */
};

struct fg_queueset {
	struct fg_qs_config cfg;
	struct fg_qs_flow_debt *debts; /* [FG_QS_DEBTS], allocated for every mode (a level may become Queue) */
	struct fg_dealer dealer;
	struct fg_qs_queue *queues;
	uint32_t n_alloc;            /* queues allocated: >= cfg.queues after a shrink, until restart */
	struct fg_order order;       /* queues with a waiting head, by head finish (UsageBased: by
				      * usage key) */
	struct fg_qs_demands demands;
	struct fg_usage usage;       /* allocated once the level is UsageBased; kept until fini, since
				      * requests refer to its flows */
	uint64_t r;                  /* virtual time, seat-ns (wrapping) */
	uint64_t r_rate;             /* dR/dt in seats, FG_FAIRSHARE_FRAC_BITS fraction bits */
	uint64_t r_frac;             /* R's fraction below one seat-ns, FG_FAIRSHARE_FRAC_BITS bits */
	bool rate_stale;             /* demands changed since r_rate was computed */
	uint64_t last_ns;
	uint64_t guess_ns;
	uint64_t guess_samples;
	uint64_t tie;                /* round-robin counter for equal finishes */
	uint32_t rotation;           /* the first card visited: deals modulo the hand */
	uint32_t seats_in_use;
	uint32_t level_limit;        /* the level's seats; cfg.concurrency_limit may be a smaller allotment */
	/* The limits as the callers set them (configuration, fg_qs_set_limit,
	 * fg_qs_set_level_limit), before the backends' usable capacity scales
	 * them (fg_qs_set_capacity; 0 of 0: all of it, no scaling). */
	uint32_t given_limit, given_level_limit;
	uint32_t capacity_usable, capacity_total;
	uint32_t n_waiting;
	uint32_t seats_waiting;
	struct fg_qs_req *blocked;   /* the head that did not fit: valid right after fg_qs_dispatch_next
				 * returned NULL and counted stats.blocked_by_width */
	struct fg_qs_req *held_for;  /* the blocked head the free seats are held for, until it is
				      * dispatched or leaves (NULL: none) */
	uint64_t held_seat_ns;       /* seat-ns that idled for held_for so far */
	struct fg_qs_stats stats;
};

/* A queue's waiting work in seat-ns, for the shortest-queue choice: its
 * waiting requests priced with the current guess. */
static inline uint64_t fg_qs_queue_work(const struct fg_queueset *qs, const struct fg_qs_queue *q)
{
	return (uint64_t)q->waiting_initial * qs->guess_ns + q->waiting_extra;
}

/* The weight a queue takes part in the max-min share with: its head's (the
 * flow being served), or with nothing waiting the last dispatched one's; 0
 * for a queue never used (counts as 1). */
static inline uint32_t fg_qs_queue_weight(const struct fg_qs_queue *q)
{
	return q->n_waiting ? q->head->weight : q->weight;
}

/* UsageBased: a queue's place in the usage order, comparable between
 * workers (the unscaled key of its head's flow); 0 for a queue with no
 * waiting head (its seats execute: first) or on other levels. */
static inline uint64_t fg_qs_queue_usage_key(const struct fg_queueset *qs, const struct fg_qs_queue *q)
{
	if (!qs->cfg.usage_based || !qs->usage.flows || !q->n_waiting || q->head->flow == FG_USAGE_NONE)
		return 0;
	return fg_usage_key_unscaled(&qs->usage, q->head->flow);
}

/* 0, or -EINVAL (bad config: see fg_dealer_init for queues/hand) / -ENOMEM. */
int fg_qs_init(struct fg_queueset *qs, const struct fg_qs_config *cfg, uint64_t now_ns);
void fg_qs_fini(struct fg_queueset *qs);

/*
 * A request of a flow of `weight` (thousandths; 0 means 1, clamped to
 * FG_QS_WEIGHT_MAX, and 1 whatever it says on a level without cfg.weighted)
 * arrives into `queue`, or, with FG_QS_NO_QUEUE, into the least loaded queue
 * of the hand dealt from flow_hash (docs/fair-queuing.md §1; a caller that
 * needs the queue first takes it from fg_qs_choose_queue).
 * initial/final seats of 0 mean 1/0; widths are capped by max_seats; extra
 * latency in ns.  On FG_QS_QUEUED call fg_qs_dispatch_next.
 */
enum fg_qs_verdict fg_qs_arrive_priced(struct fg_queueset *qs, struct fg_qs_req *r, uint32_t queue, uint64_t flow_hash,
				       uint16_t initial_seats, uint16_t final_seats, uint64_t extra_latency_ns,
				       uint32_t weight, uint64_t guess_ns, uint64_t now_ns);

/* Priced by the set (its guess; also for a caller_prices set). */
static inline enum fg_qs_verdict fg_qs_arrive_weighted(struct fg_queueset *qs, struct fg_qs_req *r, uint32_t queue,
						       uint64_t flow_hash, uint16_t initial_seats,
						       uint16_t final_seats, uint64_t extra_latency_ns, uint32_t weight,
						       uint64_t now_ns)
{
	return fg_qs_arrive_priced(qs, r, queue, flow_hash, initial_seats, final_seats, extra_latency_ns, weight, 0,
				   now_ns);
}

/* A flow of weight 1, dealt from its flow hash. */
static inline enum fg_qs_verdict fg_qs_arrive(struct fg_queueset *qs, struct fg_qs_req *r, uint64_t flow_hash,
					      uint16_t initial_seats, uint16_t final_seats,
					      uint64_t extra_latency_ns, uint64_t now_ns)
{
	return fg_qs_arrive_weighted(qs, r, FG_QS_NO_QUEUE, flow_hash, initial_seats, final_seats, extra_latency_ns,
				     FG_QS_WEIGHT_ONE, now_ns);
}

/* A flow of weight 1 into the caller's queue. */
static inline enum fg_qs_verdict fg_qs_arrive_at(struct fg_queueset *qs, struct fg_qs_req *r, uint32_t queue,
						 uint16_t initial_seats, uint16_t final_seats,
						 uint64_t extra_latency_ns, uint64_t now_ns)
{
	return fg_qs_arrive_weighted(qs, r, queue, 0, initial_seats, final_seats, extra_latency_ns,
				     FG_QS_WEIGHT_ONE, now_ns);
}

/* A new seat allotment for this queue set (at most its capacity): it governs
 * the next dispatch; nothing running is aborted. */
void fg_qs_set_limit(struct fg_queueset *qs, uint32_t limit, uint64_t now_ns);

/* A limit scaled by the backends' usable capacity (issue 29): given x
 * usable / total rounded up, at least 1 seat where the given limit has any
 * (so that a probe can go); total 0, or usable == total: the given limit.
 * Above it only where usable can pass total: an adaptive limit that grew
 * past its start (the callers clamp to what their structures hold).  The one rule for a lone worker's
 * queue sets (fg_qs_set_capacity) and for the allotter's split of a level
 * (common/seats/seatshare.h). */
static inline uint32_t fg_qs_scale_by_capacity(uint32_t given, uint32_t usable, uint32_t total)
{
	if (!total || usable == total || !given)
		return given;
	uint64_t v = ((uint64_t)given * usable + total - 1) / total;
	return v > UINT32_MAX ? UINT32_MAX : v ? (uint32_t)v : 1;
}

/* The backends' usable capacity moved (a backend ejected, drained or
 * disabled, or back): this set's limits — the allotment and the level's —
 * become the ones the callers set, scaled (fg_qs_scale_by_capacity), so a
 * lone worker never holds more than the borrowing round gave it.  A shrink
 * only stops new dispatches.  Exempt sets are not scaled.  With several
 * workers the allotter scales the level it splits instead, and the workers'
 * sets are not scaled. */
void fg_qs_set_capacity(struct fg_queueset *qs, uint32_t usable, uint32_t total, uint64_t now_ns);

/* The level's own limit moved (borrowing between levels): the width cap and
 * "too wide, runs alone" follow it at once; with one worker the caller sets
 * the allotment (fg_qs_set_limit) to the same.  Clamped to the capacity. */
void fg_qs_set_level_limit(struct fg_queueset *qs, uint32_t level_limit);

/* The next request to start executing, or NULL (nothing waits, or the chosen
 * head does not fit yet). */
struct fg_qs_req *fg_qs_dispatch_next(struct fg_queueset *qs, uint64_t now_ns);

/* Take a waiting request out (time-out, cancel).  O(log N). */
void fg_qs_remove_waiting(struct fg_queueset *qs, struct fg_qs_req *r, uint64_t now_ns);

/*
 * Execution ended (the response arrived).  Corrects the virtual finish by the
 * real duration.  Returns 0 when the seats were released now, or the time at
 * which the caller must call fg_qs_release (extra latency).
 */
uint64_t fg_qs_finish(struct fg_queueset *qs, struct fg_qs_req *r, uint64_t now_ns);
void fg_qs_release(struct fg_queueset *qs, struct fg_qs_req *r, uint64_t now_ns);

/*
 * Apply a new configuration to a live queue set (KEP "Reaction to
 * Configuration Changes"): more queues appear at once, fewer queues drain
 * (the dealer stops choosing them), a new seat limit governs the next
 * dispatch without aborting anything, a switch to Reject or Exempt still
 * drains what waits.  O(queues) for the rebuild.  0, -EINVAL or -ENOMEM
 * (nothing changed).
 *
 * In two steps, for a caller that changes several queue sets all or nothing:
 * fg_qs_prepare makes every allocation and checks the configuration without
 * touching the queue set (0, -EINVAL, -ENOMEM); fg_qs_commit then cannot
 * fail; fg_qs_prep_abort gives a prepared change up.  Nothing may happen to
 * the queue set between prepare and commit.
 */
struct fg_qs_prep {
	struct fg_qs_config cfg;
	struct fg_dealer dealer;
	struct fg_qs_queue *queues;   /* a grown copy, or NULL: keep */
	uint32_t n_alloc;
	bool new_order, new_share, new_usage;
	struct fg_order order;
	struct fg_qs_demands demands;
	struct fg_usage usage;
};
int fg_qs_prepare(const struct fg_queueset *qs, const struct fg_qs_config *cfg, struct fg_qs_prep *p);
void fg_qs_commit(struct fg_queueset *qs, struct fg_qs_prep *p, uint64_t now_ns);
void fg_qs_prep_abort(struct fg_qs_prep *p);
int fg_qs_reconfigure(struct fg_queueset *qs, const struct fg_qs_config *cfg, uint64_t now_ns);

/* Nothing waits and no seat is held. */
bool fg_qs_idle(const struct fg_queueset *qs);

/* Seats above which a request is too wide for the level. */
static inline uint32_t fg_qs_wide_limit(const struct fg_queueset *qs)
{
	return qs->cfg.wide_limit ? qs->cfg.wide_limit : qs->level_limit;
}

/* Would a request of this many seats start now? */
static inline bool fg_qs_fits(const struct fg_queueset *qs, uint32_t seats)
{
	if (qs->cfg.mode == FG_QS_EXEMPT)
		return true;
	if (seats > fg_qs_wide_limit(qs))
		return qs->seats_in_use == 0; /* too wide for the level: runs alone */
	return qs->seats_in_use + seats <= qs->cfg.concurrency_limit;
}

/* Seats the request this queue set would dispatch next needs (0: nothing
 * waits): what a worker tells the allotter its next seats must fit. */
static inline uint32_t fg_qs_next_seats(const struct fg_queueset *qs)
{
	if (!qs->n_waiting || !qs->queues)
		return 0;
	uint32_t qi = fg_order_first(&qs->order);
	return qi == FG_ORDER_NIL ? 0 : qs->queues[qi].head->seats;
}

/* The flow's hand (for explain and tests); cards must hold hand_size entries. */
void fg_qs_hand(const struct fg_queueset *qs, uint64_t flow_hash, uint32_t *cards);
/* The queue an arrival of the flow would join (the queue set's own choice,
 * docs/fair-queuing.md §1), for a caller that needs it before arriving with
 * it (a weight that depends on the queue); FG_QS_NO_QUEUE on levels without
 * queues.  Rotates the first card as an arrival does.  hand (NULL, or room
 * for hand_size cards) receives the hand it dealt, when it dealt one. */
uint32_t fg_qs_choose_queue(struct fg_queueset *qs, uint64_t flow_hash, uint32_t *hand);

#endif
