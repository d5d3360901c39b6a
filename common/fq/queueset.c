/* SPDX-License-Identifier: Apache-2.0 */
/* queueset — max-min fair queuing for one priority level; see queueset.h. */
#include "queueset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define later fg_qs_later

/*
 * What a queue contributes to the rate of R.  A queue with waiting requests
 * demands its waiting + executing seats and takes part in the water-filling;
 * a queue with nothing waiting simply consumes its executing seats (they are
 * not preemptible, so they are subtracted from the capacity as they are).
 */
struct contribution {
	bool waiting;
	uint32_t weight; /* weighted levels: the head's (the flow being served), else the last dispatched */
	uint64_t seats;
};

static inline struct contribution contribution_of(const struct fg_qs_queue *q)
{
	if (q->n_waiting)
		return (struct contribution){ true, fg_qs_queue_weight(q), (uint64_t)q->seats_waiting + q->seats_executing };
	return (struct contribution){ false, fg_qs_queue_weight(q), q->seats_executing };
}

/* Demands are clamped to the seats the level may ever have (at least 1, for
 * a jailed level): clamping above the limit changes no max-min share. */
static inline uint32_t share_size(const struct fg_qs_config *c)
{
	uint32_t size = c->capacity > c->concurrency_limit ? c->capacity : c->concurrency_limit;
	return size ? size : 1;
}

/* A contribution entered into (or, sign < 0, taken out of) the demand
 * structures: the weighted ones on a weighted level, else the exact ones. */
static void contribute(struct fg_qs_demands *d, bool weighted, struct contribution c, int sign)
{
	uint64_t from = sign > 0 ? 0 : c.seats, to = sign > 0 ? c.seats : 0;
	if (weighted)
		fg_wfairshare_update(c.waiting ? &d->wshare : &d->wbusy, from, c.weight, to, c.weight);
	else
		fg_fairshare_update(c.waiting ? &d->share : &d->busy, from, to);
}

static void demands_fini(struct fg_qs_demands *d)
{
	if (d->share.size)
		fg_fairshare_fini(&d->share);
	if (d->busy.size)
		fg_fairshare_fini(&d->busy);
	if (d->wshare.n_buckets)
		fg_wfairshare_fini(&d->wshare);
	if (d->wbusy.n_buckets)
		fg_wfairshare_fini(&d->wbusy);
}

/* Empty demand structures for a configuration. */
static int demands_init(struct fg_qs_demands *d, const struct fg_qs_config *cfg)
{
	memset(d, 0, sizeof(*d));
	int rc;
	if ((rc = fg_fairshare_init(&d->share, share_size(cfg))) ||
	    (rc = fg_fairshare_init_counts(&d->busy, share_size(cfg))) ||
	    (cfg->weighted && ((rc = fg_wfairshare_init(&d->wshare, true)) ||
			       (rc = fg_wfairshare_init(&d->wbusy, false)))))
		demands_fini(d);
	return rc;
}

/* A blocked head holds free seats (rare: only while a wide head waits). */
static inline bool unlikely_held(const struct fg_queueset *qs) { return unlikely(qs->held_for != NULL); }

static inline bool queue_active(const struct fg_qs_queue *q) { return q->n_waiting || q->n_executing; }

static void update_rate(struct fg_queueset *qs);
static void fold_usage(struct fg_queueset *qs, uint64_t now);

/* Dispatch by usage (the level is UsageBased and its table exists). */
static inline bool usage_on(const struct fg_queueset *qs) { return qs->cfg.usage_based && qs->usage.flows; }

/* The free seats idled for the blocked head until now (out of line: rare). */
static __attribute__((noinline, cold)) void count_held(struct fg_queueset *qs, uint64_t now)
{
	if (qs->seats_in_use >= qs->cfg.concurrency_limit)
		return;
	/* Saturating: the credit is capped at one head's cost anyway. */
	unsigned __int128 idled = (unsigned __int128)(qs->cfg.concurrency_limit - qs->seats_in_use) *
				  (now - qs->last_ns) + qs->held_seat_ns;
	qs->held_seat_ns = idled > UINT64_MAX ? UINT64_MAX : (uint64_t)idled;
}

/* R moves at the current fair share until now (not on a UsageBased level:
 * its order needs no virtual time); a due usage fold happens. */
static void advance(struct fg_queueset *qs, uint64_t now)
{
	if (now <= qs->last_ns)
		return;
	if (unlikely_held(qs))
		count_held(qs, now);
	if (!qs->cfg.usage_based) {
		if (qs->rate_stale)
			update_rate(qs);
		/* The fraction is carried: with many queues the share is below
		 * one seat-ns per call, and R would never move. */
		unsigned __int128 dr = (unsigned __int128)(now - qs->last_ns) * qs->r_rate + qs->r_frac;
		uint64_t next = qs->r + (uint64_t)(dr >> FG_FAIRSHARE_FRAC_BITS);
		/* R does not pass the smallest finish waiting to be dispatched:
		 * virtual time follows the dispatches that happen, not the ones
		 * the seats would make if they all completed.  While seats are
		 * stuck (a paused backend holds them) R would otherwise run ahead
		 * of every queue, and a newcomer starting at R would wait behind
		 * the whole backlog (issue 29). */
		uint32_t first = qs->order.count ? fg_order_first(&qs->order) : FG_ORDER_NIL;
		if (first != FG_ORDER_NIL) {
			uint64_t bound = later(qs->r, fg_order_key(&qs->order, first));
			if ((int64_t)(next - bound) > 0) {
				next = bound;
				dr = 0;
			}
		}
		qs->r_frac = (uint64_t)dr & ((1ull << FG_FAIRSHARE_FRAC_BITS) - 1);
		if (next < qs->r)
			qs->stats.epochs++;
		qs->r = next;
	}
	qs->last_ns = now;
	if (usage_on(qs) && fg_usage_fold_due(&qs->usage, now))
		fold_usage(qs, now);
}

/*
 * dR/dt: the max-min fair share of the seats that busy-only queues leave,
 * over the demands of the queues that wait.  When every demand fits, R moves
 * at the largest consumption of any queue, so that no queue runs ahead of R
 * (runs ahead = builds debt that would later starve it: the windup of
 * Kubernetes issue 95979).
 */
static void update_rate(struct fg_queueset *qs)
{
	qs->rate_stale = false;
	uint64_t cap = qs->cfg.concurrency_limit;
	if (qs->cfg.weighted) {
		/* The same per unit of weight: a queue of weight w gets w times it. */
		struct fg_wfairshare *share = &qs->demands.wshare, *busy = &qs->demands.wbusy;
		uint64_t avail = busy->total < cap ? cap - busy->total : 0;
		if (share->total <= avail) {
			uint64_t a = fg_wfairshare_max_rate(share), b = fg_wfairshare_max_rate(busy);
			qs->r_rate = a > b ? a : b;
		} else {
			qs->r_rate = fg_wfairshare_rate(share, avail);
		}
		return;
	}
	const struct fg_fairshare *share = &qs->demands.share, *busy = &qs->demands.busy;
	uint64_t avail = busy->total < cap ? cap - busy->total : 0;
	if (share->total <= avail) {
		uint64_t a = fg_fairshare_max(share), b = fg_fairshare_max(busy);
		qs->r_rate = (a > b ? a : b) << FG_FAIRSHARE_FRAC_BITS;
	} else {
		qs->r_rate = fg_fairshare_level(share, avail);
	}
}

/* Demands change often within one instant (a receive burst); the rate is
 * recomputed once, when R next moves. */
static void demand_changed(struct fg_queueset *qs, struct contribution before, struct contribution after)
{
	if (qs->cfg.usage_based) /* no virtual time to pace: rebuilt if the level goes back to MaxMin */
		return;
	if (before.waiting == after.waiting && before.seats == after.seats &&
	    (before.weight == after.weight || !qs->cfg.weighted))
		return;
	contribute(&qs->demands, qs->cfg.weighted, before, -1);
	contribute(&qs->demands, qs->cfg.weighted, after, +1);
	qs->rate_stale = true;
}

/* A head's cost uses the guess current when it reached the head: requests
 * may wait long, and the guess learns meanwhile. */
static inline void price_head(struct fg_queueset *qs, struct fg_qs_req *r)
{
	if (!qs->cfg.caller_prices)
		r->guess_ns = qs->guess_ns;
}

/* At arrival: the caller's price (caller_prices, classguess.h), else the
 * set's guess now. */
static inline void price_arrival(const struct fg_queueset *qs, struct fg_qs_req *r)
{
	if (!qs->cfg.caller_prices || !r->guess_ns)
		r->guess_ns = qs->guess_ns;
}

static inline struct fg_qs_flow_debt *debt_of(const struct fg_queueset *qs, uint64_t flow_hash)
{
	return &qs->debts[(flow_hash ^ flow_hash >> 32) & (FG_QS_DEBTS - 1)];
}

/* The flow's own chain of finish times when queue q is held by one flow
 * alone (struct fg_qs_flow_debt), kept in this wrap of R; else NULL. */
static inline struct fg_qs_flow_debt *flow_chain(const struct fg_queueset *qs, const struct fg_qs_queue *q)
{
	if (q->mixed)
		return NULL;
	struct fg_qs_flow_debt *d = debt_of(qs, q->flow_hash);
	return d->flow_hash == q->flow_hash && d->epoch == (uint32_t)qs->stats.epochs ? d : NULL;
}

/* Where queue q's next request starts in virtual time (before R): after
 * its queue's last finish and, while its flow waits in other queues it
 * holds too (it spilled over: its queue was full), after that flow's last
 * finish in any of them — so a flow backlogged in several queues of its
 * hand is served as one flow, not one per queue (per-flow fairness,
 * docs/fair-queuing.md §1).  A flow that waits in one queue keeps that
 * queue's own chain (its requests still executing elsewhere do not count:
 * taken as several queues, a 1-seat flow beside 2-seat heads lost the
 * seat-time idled before them, k8s_different_widths 0.24% -> 7.4%). */
static inline uint64_t queue_start(const struct fg_queueset *qs, const struct fg_qs_queue *q)
{
	const struct fg_qs_flow_debt *d = flow_chain(qs, q);
	return d && d->waiting_in > 1 ? later(q->f_prev, d->f) : q->f_prev;
}

/* Queue q's first request started waiting (+1) or its last stopped (-1):
 * its flow's count of queues it waits in.  Counted only when the queue's
 * flow is the one that waits (a request of another flow waiting in a queue
 * where the flow only executes is not the flow spilling); an entry another
 * flow took since only forgets. */
static inline void count_waiting_queue(struct fg_queueset *qs, struct fg_qs_queue *q, int delta)
{
	struct fg_qs_flow_debt *d = debt_of(qs, q->flow_hash);
	if (delta > 0) {
		q->waiting_counted = !q->head->foreign && d->flow_hash == q->flow_hash;
		d->waiting_in += q->waiting_counted;
	} else if (q->waiting_counted) {
		q->waiting_counted = false;
		if (d->flow_hash == q->flow_hash && d->waiting_in)
			d->waiting_in--;
	}
}

/* Queue q's finish moved on (a dispatch): so does its flow's chain. */
static inline void chain_dispatch(struct fg_queueset *qs, const struct fg_qs_queue *q)
{
	struct fg_qs_flow_debt *d = flow_chain(qs, q);
	if (d)
		d->f = later(d->f, q->f_prev);
}

static inline uint64_t head_finish(const struct fg_queueset *qs, const struct fg_qs_queue *q)
{
	return fg_qs_virtual_finish(queue_start(qs, q), q->head->arrival_r, fg_qs_req_cost(q->head));
}

/* Put a queue back in dispatch order after its head or F_prev changed:
 * by the head's virtual finish, or (UsageBased) by its flow's usage key,
 * ties by arrival. */
static void rekey(struct fg_queueset *qs, uint32_t qi)
{
	if (fg_order_contains(&qs->order, qi))
		fg_order_remove(&qs->order, qi);
	struct fg_qs_queue *q = &qs->queues[qi];
	if (!q->head)
		return;
	price_head(qs, q->head);
	if (usage_on(qs)) {
		uint32_t flow = q->head->flow;
		/* A request from before the level was UsageBased goes first: it drains. */
		q->key_gen = flow == FG_USAGE_NONE ? 0 : qs->usage.flows[flow].gen;
		fg_order_insert(&qs->order, qi, flow == FG_USAGE_NONE ? 0 : fg_usage_key(&qs->usage, flow),
				q->head->arrival_ns);
		return;
	}
	fg_order_insert(&qs->order, qi, head_finish(qs, q), ++qs->tie);
}

/* Every queue with a waiting head in order again (the policy or all the keys changed). */
static void rekey_all(struct fg_queueset *qs)
{
	for (uint32_t qi = 0; qi < qs->n_alloc; qi++)
		if (qs->queues[qi].head)
			rekey(qs, qi);
}

/* Usages folded: the queues whose head's flow used seats since the last
 * fold move (the others keep their keys: usage.h), or all of them when the
 * keys' scale was reset. */
static void fold_usage(struct fg_queueset *qs, uint64_t now)
{
	if (fg_usage_fold(&qs->usage, now)) {
		rekey_all(qs);
		return;
	}
	for (uint32_t qi = 0; qi < qs->n_alloc; qi++) {
		const struct fg_qs_req *h = qs->queues[qi].head;
		if (h && h->flow != FG_USAGE_NONE && qs->usage.flows[h->flow].gen != qs->queues[qi].key_gen)
			rekey(qs, qi);
	}
}

/* UsageBased keys only grow between folds (entry penalties), so a queue
 * keyed before its head's flow last changed is keyed too low: re-keyed
 * when it comes first, until the first one is current. */
static uint32_t first_current(struct fg_queueset *qs)
{
	uint32_t qi;
	while ((qi = fg_order_first(&qs->order)) != FG_ORDER_NIL && usage_on(qs)) {
		uint32_t flow = qs->queues[qi].head->flow;
		if (flow == FG_USAGE_NONE || qs->usage.flows[flow].gen == qs->queues[qi].key_gen)
			break;
		rekey(qs, qi);
	}
	return qi;
}

static uint32_t usage_flows_of(const struct fg_qs_config *c)
{
	if (c->usage_flows)
		return c->usage_flows > FG_USAGE_MAX_FLOWS ? FG_USAGE_MAX_FLOWS : c->usage_flows;
	uint64_t n = (uint64_t)c->queues * 4;
	return n < 1024 ? 1024 : n > 65536 ? 65536 : (uint32_t)n;
}

/* A limit as the callers set it, scaled by the backends' usable capacity
 * (fg_qs_set_capacity): rounded up, at least 1 seat where there is any. */
static uint32_t scaled_by_capacity(const struct fg_queueset *qs, uint32_t given)
{
	return qs->cfg.mode == FG_QS_EXEMPT ? given
					    : fg_qs_scale_by_capacity(given, qs->capacity_usable, qs->capacity_total);
}

/* The limits in force from the given ones: scaled, and never above the
 * limit the fair-share trees were sized for. */
static void apply_limits(struct fg_queueset *qs)
{
	uint32_t size = qs->demands.share.size;
	uint32_t limit = scaled_by_capacity(qs, qs->given_limit);
	uint32_t level_limit = scaled_by_capacity(qs, qs->given_level_limit);
	uint32_t was = qs->cfg.concurrency_limit;
	qs->cfg.concurrency_limit = size && limit > size ? size : limit;
	qs->level_limit = size && level_limit > size ? size : level_limit;
	/* A moved allotment: the allotter is handing seats around (its own
	 * credit covers the blocked head), so the idle seat-time is not ours. */
	if (qs->cfg.concurrency_limit != was)
		qs->held_for = NULL;
	qs->rate_stale = true;
}

int fg_qs_init(struct fg_queueset *qs, const struct fg_qs_config *cfg, uint64_t now)
{
	memset(qs, 0, sizeof(*qs));
	qs->cfg = *cfg;
	if (cfg->mode > FG_QS_QUEUE)
		return -EINVAL;
	qs->guess_ns = cfg->initial_guess_ns ? cfg->initial_guess_ns : FG_QS_DEFAULT_GUESS_NS;
	qs->last_ns = now;
	qs->level_limit = qs->given_limit = qs->given_level_limit = cfg->concurrency_limit;
	if (!(qs->debts = calloc(FG_QS_DEBTS, sizeof(*qs->debts))))
		return -ENOMEM;
	if (cfg->mode != FG_QS_QUEUE)
		return 0;
	int rc = fg_dealer_init(&qs->dealer, cfg->queues, cfg->hand_size);
	if (rc || cfg->queue_length_limit == 0) {
		fg_qs_fini(qs);
		return -EINVAL;
	}
	qs->queues = calloc(cfg->queues, sizeof(*qs->queues));
	if (!qs->queues) {
		fg_qs_fini(qs);
		return -ENOMEM;
	}
	qs->n_alloc = cfg->queues;
	if ((rc = fg_order_init(&qs->order, cfg->queues, qs->guess_ns, cfg->seed)) || (rc = demands_init(&qs->demands, cfg)) ||
	    (cfg->usage_based && (rc = fg_usage_init(&qs->usage, usage_flows_of(cfg), &cfg->usage, now)))) {
		fg_qs_fini(qs);
		return rc;
	}
	fg_order_set_calendar(&qs->order, !cfg->usage_based);
	return 0;
}

/* The allocations of a reconfiguration, made while the live queue set is
 * still untouched: a grown queue array and order, new fair-share trees. */
int fg_qs_prepare(const struct fg_queueset *qs, const struct fg_qs_config *cfg, struct fg_qs_prep *p)
{
	memset(p, 0, sizeof(*p));
	p->cfg = *cfg;
	p->cfg.seed = qs->cfg.seed;
	p->dealer = qs->dealer;
	if (cfg->mode > FG_QS_QUEUE ||
	    (cfg->mode == FG_QS_QUEUE && (fg_dealer_init(&p->dealer, cfg->queues, cfg->hand_size) || !cfg->queue_length_limit)))
		return -EINVAL;
	uint32_t n_alloc = qs->n_alloc;
	int rc = 0;
	if (cfg->mode == FG_QS_QUEUE && cfg->queues > qs->n_alloc) { /* more queues: at once */
		n_alloc = cfg->queues;
		p->queues = calloc(n_alloc, sizeof(*p->queues));
		if (!p->queues)
			return -ENOMEM;
		if (qs->n_alloc)
			memcpy(p->queues, qs->queues, sizeof(*p->queues) * qs->n_alloc);
		if ((rc = fg_order_init(&p->order, n_alloc, qs->guess_ns, qs->cfg.seed)))
			goto err;
		p->new_order = true;
		if (qs->order.place)
			fg_order_copy(&p->order, &qs->order);
		else
			fg_order_set_calendar(&p->order, !qs->cfg.usage_based);
	}
	/* Fewer queues: the dealer stops choosing the extra ones, which drain.
	 * A new seat limit, or weights turned on or off: the demand structures
	 * are rebuilt from every queue. */
	if (n_alloc && (share_size(&p->cfg) != qs->demands.share.size || p->cfg.weighted != qs->cfg.weighted ||
			p->cfg.usage_based != qs->cfg.usage_based)) {
		if ((rc = demands_init(&p->demands, &p->cfg)))
			goto err;
		p->new_share = true;
		for (uint32_t i = 0; i < qs->n_alloc && !p->cfg.usage_based; i++)
			contribute(&p->demands, p->cfg.weighted, contribution_of(&qs->queues[i]), +1);
	}
	/* UsageBased from now on: its table (an existing one is kept, with
	 * what it learned; the new parameters are checked here). */
	if (cfg->mode == FG_QS_QUEUE && cfg->usage_based) {
		struct fg_usage_params up = cfg->usage;
		if (!up.half_life_ns || !up.sampling_ns) {
			rc = -EINVAL;
			goto err;
		}
		if (!qs->usage.flows) {
			if ((rc = fg_usage_init(&p->usage, usage_flows_of(cfg), &up, 0)))
				goto err;
			p->new_usage = true;
		}
	}
	p->n_alloc = n_alloc;
	return 0;
err:
	fg_qs_prep_abort(p);
	return rc;
}

void fg_qs_prep_abort(struct fg_qs_prep *p)
{
	free(p->queues);
	if (p->new_order)
		fg_order_fini(&p->order);
	if (p->new_share)
		demands_fini(&p->demands);
	if (p->new_usage)
		fg_usage_fini(&p->usage);
	memset(p, 0, sizeof(*p));
}

void fg_qs_commit(struct fg_queueset *qs, struct fg_qs_prep *p, uint64_t now)
{
	advance(qs, now);
	bool rekey_needed = p->cfg.usage_based != qs->cfg.usage_based;
	if (rekey_needed) /* back to MaxMin, or away from it: no flow keeps a debt from before */
		memset(qs->debts, 0, sizeof(*qs->debts) * FG_QS_DEBTS);
	qs->cfg = p->cfg;
	qs->given_limit = qs->given_level_limit = p->cfg.concurrency_limit;
	qs->dealer = p->dealer;
	if (p->queues) {
		free(qs->queues);
		qs->queues = p->queues;
	}
	if (p->new_order) {
		fg_order_fini(&qs->order);
		qs->order = p->order;
	}
	if (p->new_share) {
		demands_fini(&qs->demands);
		qs->demands = p->demands;
	}
	apply_limits(qs); /* the backends' usable capacity still scales them */
	if (p->new_usage) {
		qs->usage = p->usage;
		qs->usage.last_fold_ns = now;
		qs->usage.next_fold_ns = now + qs->usage.p.sampling_ns;
	}
	if (p->cfg.usage_based && qs->usage.flows && memcmp(&qs->usage.p, &p->cfg.usage, sizeof(qs->usage.p)))
		fg_usage_set_params(&qs->usage, &p->cfg.usage, now); /* checked in prepare */
	qs->n_alloc = p->n_alloc;
	qs->rate_stale = true;
	qs->held_for = NULL; /* the seats were counted against the old limits */
	if (rekey_needed) { /* the order's meaning changed */
		/* Back to MaxMin: R stood still meanwhile, so every queue starts
		 * afresh at it (no debt from the UsageBased period). */
		for (uint32_t i = 0; i < qs->n_alloc && !p->cfg.usage_based; i++)
			qs->queues[i].f_prev = qs->r;
		/* Emptied first: the calendar serves virtual finishes only. */
		for (uint32_t i = 0; i < qs->n_alloc; i++)
			if (fg_order_contains(&qs->order, i))
				fg_order_remove(&qs->order, i);
		fg_order_set_calendar(&qs->order, !p->cfg.usage_based);
		rekey_all(qs);
	}
	memset(p, 0, sizeof(*p));
}

int fg_qs_reconfigure(struct fg_queueset *qs, const struct fg_qs_config *cfg, uint64_t now)
{
	struct fg_qs_prep p;
	int rc = fg_qs_prepare(qs, cfg, &p);
	if (!rc)
		fg_qs_commit(qs, &p, now);
	return rc;
}

bool fg_qs_idle(const struct fg_queueset *qs)
{
	return qs->n_waiting == 0 && qs->seats_in_use == 0;
}

void fg_qs_fini(struct fg_queueset *qs)
{
	free(qs->queues);
	qs->queues = NULL;
	free(qs->debts);
	qs->debts = NULL;
	fg_order_fini(&qs->order);
	demands_fini(&qs->demands);
	if (qs->usage.flows)
		fg_usage_fini(&qs->usage);
}

void fg_qs_hand(const struct fg_queueset *qs, uint64_t flow_hash, uint32_t *cards)
{
	fg_dealer_deal(&qs->dealer, flow_hash, cards);
}

struct choice {
	const struct fg_queueset *qs;
	uint64_t flow_hash;
};

/* Whether the flow waits in the queue and has it to itself, with room: it
 * took it while idle, no request of another flow waits or executes there,
 * and some but fewer than queueLengthLimit of its requests wait.  (Keeping
 * to a queue where the flow only executes made 2-seat heads idle seats in
 * lockstep: k8s_different_widths went from 0.24% to 7.1% off.) */
static inline bool queue_held_alone(const struct fg_queueset *qs, const struct fg_qs_queue *q, uint64_t flow_hash)
{
	return q->n_waiting && !q->n_foreign && q->flow_hash == flow_hash &&
	       q->n_waiting < qs->cfg.queue_length_limit;
}

/* A card's rank for the flow, lowest taken, in one visit of the hand:
 * 0 for a queue the flow already waits in alone, so that a flow with many
 * requests takes one queue's share, not one per card it spreads over
 * (per-flow fairness, docs/fair-queuing.md); otherwise 1 + the queue's
 * waiting work doubled, plus one when another flow holds it (waits or
 * executes there) — the least loaded card as in Kubernetes, which still lets
 * a flow that collides with a heavy one move to a free card, and of cards
 * with equal work one nobody else holds, so that flows stay apart. */
static inline uint64_t queue_rank_for(const void *ctx, uint32_t queue)
{
	const struct choice *c = ctx;
	const struct fg_qs_queue *q = &c->qs->queues[queue];
	if (queue_held_alone(c->qs, q, c->flow_hash))
		return 0;
	uint64_t work = fg_qs_queue_work(c->qs, q);
	bool other = queue_active(q) && (q->n_foreign || q->flow_hash != c->flow_hash);
	return 1 + (work > UINT64_MAX / 2 - 2 ? UINT64_MAX / 2 - 2 : work) * 2 + other;
}

static uint32_t choose_queue(struct fg_queueset *qs, uint64_t flow_hash, uint32_t *cards)
{
	fg_dealer_deal(&qs->dealer, flow_hash, cards);
	const struct choice c = { qs, flow_hash };
	return fg_hand_least_loaded(cards, qs->cfg.hand_size, &qs->rotation, queue_rank_for, &c);
}


/* The flow's entry in the table, taken for it if another flow had it. */
static inline struct fg_qs_flow_debt *take_entry(struct fg_queueset *qs, uint64_t flow_hash)
{
	struct fg_qs_flow_debt *d = debt_of(qs, flow_hash);
	if (d->flow_hash != flow_hash)
		*d = (struct fg_qs_flow_debt){ .flow_hash = flow_hash, .f = qs->r, .epoch = (uint32_t)qs->stats.epochs };
	else if (d->epoch != (uint32_t)qs->stats.epochs) { /* a finish from another wrap of R: not comparable */
		d->f = qs->r;
		d->epoch = (uint32_t)qs->stats.epochs;
	}
	return d;
}

/* Queue q went idle: what its flow owes stays with the flow, not the queue. */
static void queue_went_idle(struct fg_queueset *qs, struct fg_qs_queue *q)
{
	q->idle_epoch = (uint32_t)qs->stats.epochs;
	struct fg_qs_flow_debt *d = debt_of(qs, q->flow_hash);
	/* Another flow took the entry since: forgotten.  A queue others
	 * joined: not one flow's finish time. */
	if (d->flow_hash == q->flow_hash && !q->mixed && d->epoch == q->idle_epoch)
		d->f = later(d->f, q->f_prev);
}

/* An arrival finds queue q idle: the queue starts where the flow left off
 * (its last finish in this wrap of R, if kept), else at R.  Either way the
 * start is max(F_prev, R) next, so a flow keeps what it owes (F_prev ahead
 * of R: it was served ahead of its share) but banks no credit; another
 * flow's debt, left in the queue, is not inherited. */
static void start_idle_queue(struct fg_queueset *qs, struct fg_qs_queue *q, uint64_t flow_hash)
{
	if (queue_active(q))
		return;
	q->f_prev = take_entry(qs, flow_hash)->f;
}

/* A request joins queue q: the first of an idle queue takes it for its flow;
 * one of another flow is counted until it leaves (leave_queue). */
static void join_queue(struct fg_qs_queue *q, struct fg_qs_req *r, uint64_t flow_hash)
{
	if (!queue_active(q)) {
		q->flow_hash = flow_hash;
		q->n_foreign = 0;
		q->mixed = false;
	}
	r->foreign = q->flow_hash != flow_hash;
	q->n_foreign += r->foreign;
	q->mixed |= r->foreign;
}

static void leave_queue(struct fg_qs_queue *q, const struct fg_qs_req *r)
{
	q->n_foreign -= r->foreign;
}

uint32_t fg_qs_choose_queue(struct fg_queueset *qs, uint64_t flow_hash, uint32_t *hand)
{
	uint32_t cards[FG_DEALER_MAX_HAND];
	return qs->cfg.mode == FG_QS_QUEUE && qs->queues ? choose_queue(qs, flow_hash, hand ? hand : cards)
							  : FG_QS_NO_QUEUE;
}

/* An arrival's common part: widths normalized, the request reset; for levels
 * without queues the verdict itself.  Returns -1 when a queue must be chosen. */
static int arrival_prologue(struct fg_queueset *qs, struct fg_qs_req *r, uint16_t initial_seats, uint16_t final_seats,
			    uint64_t extra_latency_ns, uint32_t weight, uint64_t guess_ns, uint64_t now)
{
	advance(qs, now);
	qs->stats.arrived++;
	uint32_t cap = qs->cfg.max_seats;
	if (initial_seats == 0)
		initial_seats = 1;
	if (cap && initial_seats > cap)
		initial_seats = (uint16_t)cap;
	if (cap && final_seats > cap)
		final_seats = (uint16_t)cap;
	uint32_t wide = fg_qs_wide_limit(qs);
	if (qs->cfg.mode != FG_QS_EXEMPT && wide && final_seats > wide)
		final_seats = (uint16_t)wide; /* never stretched: the latency stays as bounded */
	memset(r, 0, sizeof(*r));
	r->guess_ns = qs->cfg.caller_prices ? guess_ns : 0;
	r->initial_seats = initial_seats;
	r->final_seats = final_seats;
	r->seats = initial_seats > final_seats ? initial_seats : final_seats;
	/* Whole microseconds (the protocol's unit; the cap, 60 s, fits 32 bits). */
	r->extra_latency_us = final_seats ? (uint32_t)((extra_latency_ns + 999) / 1000) : 0;
	r->arrival_ns = now;
	r->queue = FG_QS_NO_QUEUE;
	r->flow = FG_USAGE_NONE;
	r->weight = !qs->cfg.weighted || weight == 0 ? FG_QS_WEIGHT_ONE : weight > FG_QS_WEIGHT_MAX ? FG_QS_WEIGHT_MAX : weight;

	if (qs->cfg.mode != FG_QS_QUEUE) {
		if (qs->cfg.mode == FG_QS_REJECT && !fg_qs_fits(qs, r->seats)) {
			qs->stats.rejected_concurrency++;
			return FG_QS_REJECT_CONCURRENCY;
		}
		r->state = FG_QS_EXECUTING;
		r->dispatch_ns = now;
		price_arrival(qs, r);
		qs->seats_in_use += r->seats;
		qs->stats.dispatched++;
		return FG_QS_EXECUTE;
	}
	return -1;
}

/* A queue-mode arrival into queue qi, after the prologue. */
static enum fg_qs_verdict arrive_in_queue(struct fg_queueset *qs, struct fg_qs_req *r, uint32_t qi, uint64_t flow_hash,
					  uint64_t now)
{
	struct fg_qs_queue *q = &qs->queues[qi];
	if (qs->n_waiting == 0 && fg_qs_fits(qs, r->seats)) {
		/* Nothing waits and the seats fit: exactly what queuing then
		 * dispatching would do, without the round trip through the order. */
		start_idle_queue(qs, q, flow_hash);
		struct contribution before = contribution_of(q);
		join_queue(q, r, flow_hash);
		r->queue = qi;
		r->arrival_r = qs->r;
		price_arrival(qs, r);
		if (usage_on(qs)) {
			r->flow = fg_usage_join(&qs->usage, flow_hash, r->weight, now);
			fg_usage_start(&qs->usage, r->flow, r->seats, r->guess_ns, now);
		}
		q->f_prev = later(queue_start(qs, q), r->arrival_r) + fg_qs_req_cost(r);
		chain_dispatch(qs, q);
		q->seats_executing += r->seats;
		q->n_executing++;
		q->weight = r->weight;
		demand_changed(qs, before, contribution_of(q));
		qs->seats_in_use += r->seats;
		r->state = FG_QS_EXECUTING;
		r->dispatch_ns = now;
		qs->stats.dispatched++;
		return FG_QS_EXECUTE;
	}
	if (qs->seats_in_use >= qs->cfg.concurrency_limit && q->n_waiting >= qs->cfg.queue_length_limit) {
		qs->stats.rejected_queue_full++;
		return FG_QS_REJECT_QUEUE_FULL; /* the youngest is the one refused */
	}
	start_idle_queue(qs, q, flow_hash);
	join_queue(q, r, flow_hash);
	r->queue = qi;
	r->arrival_r = qs->r;
	price_arrival(qs, r);
	r->state = FG_QS_WAITING;
	if (usage_on(qs))
		r->flow = fg_usage_join(&qs->usage, flow_hash, r->weight, now);

	struct contribution before = contribution_of(q);
	r->prev = q->tail;
	r->next = NULL;
	if (q->tail)
		q->tail->next = r;
	else
		q->head = r;
	q->tail = r;
	if (!q->n_waiting++)
		count_waiting_queue(qs, q, 1);
	q->seats_waiting += r->seats;
	q->waiting_initial += r->initial_seats;
	q->waiting_extra += (uint64_t)r->final_seats * fg_qs_req_extra_ns(r);
	qs->n_waiting++;
	qs->seats_waiting += r->seats;
	demand_changed(qs, before, contribution_of(q));
	if (q->head == r)
		rekey(qs, qi);
	return FG_QS_QUEUED;
}

enum fg_qs_verdict fg_qs_arrive_priced(struct fg_queueset *qs, struct fg_qs_req *r, uint32_t queue, uint64_t flow_hash,
				       uint16_t initial_seats, uint16_t final_seats, uint64_t extra_latency_ns,
				       uint32_t weight, uint64_t guess_ns, uint64_t now)
{
	int v = arrival_prologue(qs, r, initial_seats, final_seats, extra_latency_ns, weight, guess_ns, now);
	if (v >= 0)
		return (enum fg_qs_verdict)v;
	if (queue == FG_QS_NO_QUEUE) {
		uint32_t cards[FG_DEALER_MAX_HAND];
		queue = choose_queue(qs, flow_hash, cards);
	}
	return arrive_in_queue(qs, r, queue, flow_hash, now);
}

void fg_qs_set_limit(struct fg_queueset *qs, uint32_t limit, uint64_t now)
{
	advance(qs, now);
	qs->given_limit = limit;
	apply_limits(qs);
}

void fg_qs_set_level_limit(struct fg_queueset *qs, uint32_t level_limit)
{
	qs->given_level_limit = level_limit;
	apply_limits(qs);
}

void fg_qs_set_capacity(struct fg_queueset *qs, uint32_t usable, uint32_t total, uint64_t now)
{
	advance(qs, now);
	qs->capacity_usable = usable;
	qs->capacity_total = total;
	apply_limits(qs);
}

static void unlink_waiting(struct fg_queueset *qs, struct fg_qs_queue *q, struct fg_qs_req *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		q->head = r->next;
	if (r->next)
		r->next->prev = r->prev;
	else
		q->tail = r->prev;
	r->prev = r->next = NULL;
	if (!--q->n_waiting)
		count_waiting_queue(qs, q, -1);
	q->seats_waiting -= r->seats;
	q->waiting_initial -= r->initial_seats;
	q->waiting_extra -= (uint64_t)r->final_seats * fg_qs_req_extra_ns(r);
	qs->n_waiting--;
	qs->seats_waiting -= r->seats;
}

struct fg_qs_req *fg_qs_dispatch_next(struct fg_queueset *qs, uint64_t now)
{
	if (!qs->queues) /* a level that never queued; one that stopped still drains */
		return NULL;
	advance(qs, now);
	uint32_t qi = first_current(qs);
	if (qi == FG_ORDER_NIL)
		return NULL;
	struct fg_qs_queue *q = &qs->queues[qi];
	struct fg_qs_req *r = q->head;
	if (!fg_qs_fits(qs, r->seats)) {
		qs->stats.blocked_by_width++;
		qs->blocked = r;
		/* Not on UsageBased levels: F is not their order. */
		if (qs->held_for != r && r->seats <= qs->cfg.concurrency_limit && !qs->cfg.usage_based) {
			qs->held_for = r; /* the free seats idle for it from now */
			qs->held_seat_ns = 0;
		}
		return NULL; /* seats accumulate for this head; nothing bypasses it */
	}
	/* The seat-time that idled while this head waited for room is not its
	 * service: its queue is credited with it (at most the head's cost), so
	 * its next head leads the next burst instead of finding one seat left
	 * again (docs/fair-queuing.md, section 8). */
	uint64_t start = later(queue_start(qs, q), r->arrival_r), cost = fg_qs_req_cost(r);
	uint64_t credit = 0;
	if (unlikely_held(qs)) {
		if (qs->held_for == r) {
			credit = fg_qs_weighted(qs->held_seat_ns, r->weight);
			if (credit > cost)
				credit = cost;
		}
		qs->held_for = NULL; /* another head went first: the wait starts over */
	}
	q->f_prev = start + cost - credit;
	chain_dispatch(qs, q);
	struct contribution before = contribution_of(q);
	unlink_waiting(qs, q, r);
	q->seats_executing += r->seats;
	q->n_executing++;
	q->weight = r->weight;
	demand_changed(qs, before, contribution_of(q));
	if (r->flow != FG_USAGE_NONE)
		fg_usage_start(&qs->usage, r->flow, r->seats, r->guess_ns, now);
	rekey(qs, qi);
	qs->seats_in_use += r->seats;
	r->state = FG_QS_EXECUTING;
	r->dispatch_ns = now;
	qs->stats.dispatched++;
	return r;
}

void fg_qs_remove_waiting(struct fg_queueset *qs, struct fg_qs_req *r, uint64_t now)
{
	advance(qs, now);
	struct fg_qs_queue *q = &qs->queues[r->queue];
	bool was_head = q->head == r;
	if (qs->held_for == r)
		qs->held_for = NULL;
	struct contribution before = contribution_of(q);
	unlink_waiting(qs, q, r);
	leave_queue(q, r);
	demand_changed(qs, before, contribution_of(q));
	if (r->flow != FG_USAGE_NONE)
		fg_usage_leave(&qs->usage, r->flow, now);
	if (was_head)
		rekey(qs, r->queue);
	if (!queue_active(q))
		queue_went_idle(qs, q);
	r->state = FG_QS_IDLE;
	qs->stats.removed++;
}

uint64_t fg_qs_finish(struct fg_queueset *qs, struct fg_qs_req *r, uint64_t now)
{
	advance(qs, now);
	int64_t actual = (int64_t)(now - r->dispatch_ns);
	if (r->queue != FG_QS_NO_QUEUE) {
		/* Replace the guess inside the work by what the request really took. */
		struct fg_qs_queue *q = &qs->queues[r->queue];
		int64_t error = (int64_t)r->initial_seats * (actual - (int64_t)r->guess_ns);
		int64_t correction = error >= 0 ? (int64_t)fg_qs_weighted((uint64_t)error, r->weight)
						: -(int64_t)fg_qs_weighted((uint64_t)-error, r->weight);
		q->f_prev += (uint64_t)correction;
		struct fg_qs_flow_debt *d = debt_of(qs, q->flow_hash);
		if (!r->foreign && d->flow_hash == q->flow_hash && d->epoch == (uint32_t)qs->stats.epochs)
			d->f += (uint64_t)correction; /* its flow's chain took the guess too */
		if (correction && q->head)
			rekey(qs, r->queue);
	}
	if (!qs->cfg.fixed_guess) {
		/* Running mean over the first samples, then an EWMA (1/8). */
		int64_t n = qs->guess_samples < 8 ? ++qs->guess_samples : 8;
		qs->guess_ns += (uint64_t)((actual - (int64_t)qs->guess_ns) / n);
	}
	r->state = FG_QS_LINGERING;
	if (r->extra_latency_us == 0) {
		fg_qs_release(qs, r, now);
		return 0;
	}
	return now + fg_qs_req_extra_ns(r);
}

void fg_qs_release(struct fg_queueset *qs, struct fg_qs_req *r, uint64_t now)
{
	advance(qs, now);
	qs->seats_in_use -= r->seats;
	if (r->flow != FG_USAGE_NONE) {
		fg_usage_stop(&qs->usage, r->flow, r->seats, now);
		fg_usage_leave(&qs->usage, r->flow, now);
	}
	if (r->queue != FG_QS_NO_QUEUE) {
		struct fg_qs_queue *q = &qs->queues[r->queue];
		struct contribution before = contribution_of(q);
		q->seats_executing -= r->seats;
		q->n_executing--;
		leave_queue(q, r);
		demand_changed(qs, before, contribution_of(q));
		if (!queue_active(q))
			queue_went_idle(qs, q);
	}
	r->state = FG_QS_IDLE;
	qs->stats.finished++;
}
