/* SPDX-License-Identifier: Apache-2.0 */
/* seatshare — per-worker seat allotments of a level; see seatshare.h. */
#include "seatshare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flowcontrol.h"
#include "maxmin.h"
#include "queueset.h"
#include "queueset.h"

struct fg_board *fg_board_new(const struct fg_fc_config *fc, unsigned n_workers)
{
	if (n_workers == 0 || n_workers > FG_SEATSHARE_MAX_WORKERS)
		return NULL;
	struct fg_board *b = calloc(1, sizeof(*b) + sizeof(b->levels[0]) * (fc->n_levels ? fc->n_levels : 1));
	if (!b)
		return NULL;
	b->n_workers = n_workers;
	b->n_levels = fc->n_levels;
	for (uint32_t i = 0; i < fc->n_levels; i++) {
		const struct fg_fc_level *fl = &fc->levels[i];
		struct fg_level_board *l = &b->levels[i];
		l->exempt = fl->exempt;
		l->usage_based = fl->policy == FG_FC_POLICY_USAGE_BASED;
		l->limit = fl->exempt ? 0 : fl->limit;
		l->allotted_limit = l->limit_in_force = l->limit;
		l->n_queues = fl->queues;
		l->shares = aligned_alloc(FG_CACHE_LINE, sizeof(*l->shares) * n_workers);
		l->loads = calloc(l->n_queues ? (size_t)l->n_queues * n_workers : 1, sizeof(*l->loads));
		l->credit = calloc(n_workers, sizeof(*l->credit));
		if (!l->shares || !l->loads || !l->credit) {
			fg_board_free(b);
			return NULL;
		}
		memset(l->shares, 0, sizeof(*l->shares) * n_workers);
		for (unsigned w = 0; w < n_workers; w++)
			l->shares[w].applied = fg_seatshare_static(l->limit, n_workers, w);
	}
	return b;
}

void fg_board_reset_level(struct fg_board *b, uint32_t i)
{
	struct fg_level_board *l = &b->levels[i];
	l->allotted_limit = l->limit_in_force = l->limit;
	for (unsigned w = 0; w < b->n_workers; w++)
		l->shares[w].applied = l->exempt ? 0 : fg_seatshare_static(l->limit, b->n_workers, w);
}

void fg_board_free(struct fg_board *b)
{
	if (!b)
		return;
	for (uint32_t i = 0; i < b->n_levels; i++) {
		free(b->levels[i].shares);
		free(b->levels[i].loads);
		free(b->levels[i].credit);
	}
	free(b);
}

/* Adds to each owner's share the (weighted) max-min allocation of `total`
 * seats over the queues idx[0..m) (idx NULL: queues 0..m-1), each demand
 * capped at `cap`: the shared allocator (common/seats/maxmin), upper bounds the
 * demands, weights the queues' flow weights (NULL: all 1). */
static void add_maxmin_shares(double total, uint32_t cap, unsigned n_workers, const uint32_t *idx, uint32_t m,
			      const uint32_t *demand, const uint32_t *weight, double *share)
{
	size_t n_alloc = m ? m : 1;
	struct fg_maxmin_item *items = calloc(n_alloc, sizeof(*items));
	double *alloc = calloc(n_alloc, sizeof(*alloc));
	bool solved = false;
	if (items && alloc) {
		for (uint32_t k = 0; k < m; k++) {
			uint32_t q = idx ? idx[k] : k;
			items[k] = (struct fg_maxmin_item){
				.weight = weight && weight[q] ? weight[q] / (double)FG_QS_WEIGHT_ONE : 1.0,
				.upper = demand[q] < cap ? demand[q] : cap };
		}
		solved = fg_maxmin_solve(total, items, m, FG_MAXMIN_SLACK, alloc, NULL, NULL) == 0;
	}
	for (uint32_t k = 0; k < m; k++) { /* out of memory: equal shares, still within the total */
		uint32_t q = idx ? idx[k] : k;
		share[q % n_workers] += solved ? alloc[k] : fmin(fmin(demand[q], cap), total / m);
	}
	free(items);
	free(alloc);
}

/* Per-worker (weighted) max-min shares of the limit. */
static void shares_of(uint32_t limit, unsigned n_workers, const uint32_t *demand, const uint32_t *weight,
		      uint32_t n_queues, double *share)
{
	for (unsigned w = 0; w < n_workers; w++)
		share[w] = 0;
	add_maxmin_shares(limit, limit, n_workers, NULL, n_queues, demand, weight, share);
}

static int by_key(const void *a, const void *b, void *keys)
{
	uint64_t x = ((const uint64_t *)keys)[*(const uint32_t *)a], y = ((const uint64_t *)keys)[*(const uint32_t *)b];
	return x < y ? -1 : x > y;
}

/* UsageBased: demands met in key order; the queues of equal key that do
 * not all fit share what is left max-min. */
static void shares_by_usage(uint32_t limit, unsigned n_workers, const uint32_t *demand, const uint64_t *key,
			    uint32_t n_queues, double *share)
{
	uint32_t *order = malloc(sizeof(*order) * (n_queues ? n_queues : 1));
	if (!order) { /* out of memory: max-min instead, still within C */
		shares_of(limit, n_workers, demand, NULL, n_queues, share);
		return;
	}
	for (unsigned w = 0; w < n_workers; w++)
		share[w] = 0;
	uint32_t n = 0;
	for (uint32_t q = 0; q < n_queues; q++)
		if (demand[q])
			order[n++] = q;
	qsort_r(order, n, sizeof(*order), by_key, (void *)key);
	double left = limit;
	for (uint32_t i = 0; i < n && left > 0;) {
		uint32_t j = i;
		double sum = 0;
		for (; j < n && key[order[j]] == key[order[i]]; j++)
			sum += demand[order[j]] < limit ? demand[order[j]] : limit;
		if (sum <= left) {
			for (uint32_t k = i; k < j; k++)
				share[order[k] % n_workers] += demand[order[k]] < limit ? demand[order[k]] : limit;
			left -= sum;
		} else {
			add_maxmin_shares(left, limit, n_workers, order + i, j - i, demand, NULL, share);
			left = 0;
		}
		i = j;
	}
	free(order);
}

/* Whole seats adding up to at most C: floors, then the largest remainders
 * (stable from round to round while the shares are). */
/* A worker that holds a remainder seat keeps it until another is owed this
 * many seats more: turns last about FG_SEATSHARE_CREDIT_ROUNDS rounds per
 * seat of difference, so a seat is not moved (and idled for a round) every
 * round. */
#define FG_SEATSHARE_TURN_HYSTERESIS 1.0

static void round_shares(uint32_t limit, unsigned n_workers, const double *share, const double *credit,
			 const struct fg_seatshare_view *v, uint32_t *target)
{
	uint64_t sum = 0;
	for (unsigned w = 0; w < n_workers; w++)
		sum += target[w] = (uint32_t)share[w];
	/* The seats left go by largest remainder, or with credit (the per-flow
	 * round: fractional shares are the rule there) by largest remainder
	 * plus credit, the worker holding one now ahead by the hysteresis, so
	 * that they take turns and each worker averages its share. */
	while (sum < limit) {
		int best = -1;
		double best_key = 0;
		for (unsigned w = 0; w < n_workers; w++) {
			double key = share[w] - target[w];
			if (credit)
				key += credit[w] + (v[w].grant > (uint32_t)share[w] ? FG_SEATSHARE_TURN_HYSTERESIS : 0);
			if (share[w] - target[w] > 1e-9 && (best < 0 || key > best_key)) {
				best = (int)w;
				best_key = key;
			}
		}
		if (best < 0)
			break;
		target[best]++;
		sum++;
	}
}

/*
 * Whole seats cannot be split, so a worker whose share is not a multiple of
 * its head's width holds seats it cannot use (share 3 and 2-seat requests:
 * one idles).  A worker whose next request needs several seats, does not fit
 * its target and is owed at least that many (credit >= width) gets the
 * seats it lacks from workers owed clearly less (credit lower by more than
 * that width), the most over-served first: most owed first, each at most
 * once a round.  The gap keeps seats from moving back and forth; narrow heads
 * are left to the rounding (moving a seat idles it for a period, which costs
 * narrow requests more than the rounding does).
 */
static void fit_heads(unsigned n_workers, const struct fg_seatshare_view *v, const double *credit, uint32_t *target)
{
	bool done[FG_SEATSHARE_MAX_WORKERS] = { false };
	for (;;) {
		int best = -1;
		for (unsigned w = 0; w < n_workers; w++)
			if (!done[w] && v[w].head > 1 && target[w] < v[w].used + v[w].head && credit[w] >= v[w].head &&
			    (best < 0 || credit[w] > credit[best]))
				best = (int)w;
		if (best < 0)
			return;
		done[best] = true;
		double below = credit[best] - v[best].head;
		uint32_t need = v[best].used + v[best].head - target[best], can = 0;
		for (unsigned d = 0; d < n_workers; d++)
			if (credit[d] < below)
				can += target[d];
		if (can < need)
			continue; /* not this round */
		target[best] += need;
		while (need) {
			int donor = -1;
			for (unsigned d = 0; d < n_workers; d++)
				if (target[d] && credit[d] < below && (donor < 0 || credit[d] < credit[donor]))
					donor = (int)d;
			uint32_t take = target[donor] < need ? target[donor] : need;
			target[donor] -= take;
			need -= take;
		}
	}
}

/*
 * A worker whose next request is wider than the seats its target leaves it
 * beyond its use would hold those seats idle (nothing bypasses its head).
 * Until its credit covers the head (then fit_heads gathers the seats for
 * it), they go, one at a time, to the waiting worker owed most whose head
 * one more seat lets start: the seats work, and the lender's credit keeps
 * growing for the turn of its wide head.
 */
static void lend_spares(unsigned n_workers, const struct fg_seatshare_view *v, const double *credit, uint32_t *target)
{
	for (unsigned w = 0; w < n_workers; w++) {
		if (v[w].head <= 1 || credit[w] >= v[w].head)
			continue;
		while (target[w] > v[w].used && target[w] - v[w].used < v[w].head) {
			int best = -1;
			for (unsigned d = 0; d < n_workers; d++) {
				if (d == w || !v[d].head || target[d] >= v[d].used + v[d].head ||
				    target[d] + 1 < v[d].used + v[d].head)
					continue; /* nothing waits, it fits already, or one seat is not enough */
				if (best < 0 || credit[d] > credit[best])
					best = (int)d;
			}
			if (best < 0)
				break;
			target[w]--;
			target[best]++;
		}
	}
}

/* Seats no share claims (the demands add up to less than the limit) as
 * headroom, split evenly over the workers, the odd seats to the workers
 * with the largest shares (ties: the lower index): an arrival where seats
 * are free then starts at once, as in one queue set, instead of waiting a
 * round for a seat the level has free.  Shares only fall short of the limit
 * when every demand is met, so this takes nobody's share; the next round
 * takes the headroom back as demands grow. */
static void spread_headroom(uint32_t limit, unsigned n_workers, const double *share, uint32_t *target)
{
	uint64_t sum = 0;
	for (unsigned w = 0; w < n_workers; w++)
		sum += target[w];
	if (sum >= limit)
		return;
	uint32_t spare = (uint32_t)(limit - sum), odd = spare % n_workers;
	bool got[FG_SEATSHARE_MAX_WORKERS] = { false };
	for (unsigned w = 0; w < n_workers; w++)
		target[w] += spare / n_workers;
	while (odd--) {
		unsigned best = n_workers;
		for (unsigned w = 0; w < n_workers; w++)
			if (!got[w] && (best == n_workers || share[w] > share[best]))
				best = w;
		got[best] = true;
		target[best]++;
	}
}

/* Whole-seat targets from the shares: the largest-remainder rounding, the
 * headroom no share claims spread (spread_headroom), the spares of blocked
 * wide heads lent (lend_spares), then wide heads fitted by credit
 * (fit_heads). */
static void targets_of(uint32_t limit, unsigned n_workers, const double *share, const struct fg_seatshare_view *v,
		       double *credit, bool turns, uint32_t *target)
{
	/* Credits are bounded: no windup beyond about a second of the level. */
	double bound = limit * FG_SEATSHARE_CREDIT_BOUND;
	for (unsigned w = 0; w < n_workers; w++)
		if (v[w].head > bound)
			bound = v[w].head;
	/* Relative to the other active workers: seats that idle (a head that
	 * fits nowhere) leave everyone short, and that is nobody's due.  A
	 * worker is active while something waits or runs there: one whose
	 * queues are all executing still runs above or below its share, and
	 * forgetting that each time its queues empty made a worker with a
	 * single wide queue (share 0.43, running 2 seats) look owed again at
	 * every arrival (issue 13: bench/widths_sweep.py k8s without this,
	 * 26 flows more than 5% off, the worst 23.7%). */
	double mean = 0;
	unsigned active = 0;
	for (unsigned w = 0; w < n_workers; w++)
		if (v[w].head || v[w].used) {
			mean += share[w] - (double)v[w].used;
			active++;
		}
	mean = active ? mean / active : 0;
	for (unsigned w = 0; w < n_workers; w++) {
		if (v[w].head || v[w].used) {
			double c = credit[w] + (share[w] - (double)v[w].used - mean) / FG_SEATSHARE_CREDIT_ROUNDS;
			credit[w] = c > bound ? bound : c < -bound ? -bound : c;
		} else {
			credit[w] = 0; /* idle: nothing is owed, nothing banked */
		}
	}
	round_shares(limit, n_workers, share, turns ? credit : NULL, v, target);
	spread_headroom(limit, n_workers, share, target);
	lend_spares(n_workers, v, credit, target);
	fit_heads(n_workers, v, credit, target);
}

/* Most owed first; equal credits by worker index (deterministic). */
static int by_credit(const void *a, const void *b, void *credit)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	double cx = ((const double *)credit)[x], cy = ((const double *)credit)[y];
	return cx > cy ? -1 : cx < cy ? 1 : (x > y) - (x < y);
}

/*
 * One dispatch order across the workers for the seats nobody runs on, as
 * one queue set goes through its heads: the waiting workers, most owed
 * first, each get the seats their next request needs while the free seats
 * cover it.  The first whose head does not fit, whose credit covers its
 * width and whose head is no wider than the level (a wider request runs
 * alone once its worker is empty, on no seats of the others) becomes the
 * holder: no worker behind it gets seats for its head this round, and every
 * blocked worker behind it gives up the seats it holds idle and does not
 * grow back to its target (those seats reach the order through the free
 * seats once the shrink is acknowledged; fit_heads gathers the rest for the
 * holder, and the free seats left after the order still go up to the
 * targets, the holder's included).  Without this two blocked wide heads on
 * two workers could each hold one of two free seats for a whole request
 * time, or a blocked wide head keep a seat a more owed narrow head could run
 * on (issue 13: 4 workers 6-7% short of the max-min ideal).
 *
 * A worker may take back seats its target just took from it (up to what it
 * holds) when the free seats cover the rest of its head, except an
 * over-served one (credit < 0) behind a more owed worker: it gets its head
 * only if the free seats could cover all of it (and then uses its own
 * first).  Workers whose last grant is not acknowledged keep their place in
 * the order but get nothing.  Not on UsageBased levels, whose targets
 * already are the order of usage.
 */
static void dispatch_order(uint32_t limit, unsigned n_workers, const double *credit, uint64_t *free_seats,
			   struct fg_seatshare_view *v, bool *released)
{
	unsigned order[FG_SEATSHARE_MAX_WORKERS], n = 0;
	for (unsigned w = 0; w < n_workers; w++)
		if (v[w].head)
			order[n++] = w;
	qsort_r(order, n, sizeof(*order), by_credit, (void *)credit);
	bool holding = false;
	for (unsigned i = 0; i < n; i++) {
		unsigned w = order[i];
		uint64_t want = (uint64_t)v[w].used + v[w].head;
		if (v[w].pending || v[w].grant >= want)
			continue;
		if (holding) {
			if (v[w].grant > v[w].used)
				v[w].grant = v[w].used;
			released[w] = true;
			continue;
		}
		uint64_t own = v[w].reserved > v[w].grant ? v[w].reserved : v[w].grant;
		uint64_t from = credit[w] >= 0 || i == 0 ? own : v[w].grant; /* may it take back its own? */
		uint64_t needs = want > from ? want - from : 0;            /* free seats that must be there */
		if (needs <= *free_seats) {
			*free_seats -= want > own ? want - own : 0;
			v[w].grant = (uint32_t)want;
		} else if (credit[w] >= v[w].head && v[w].head <= limit) {
			holding = true;
		}
	}
}

/* Shrinks at once; growth only out of the free seats (a shrink frees its
 * seats once acknowledged): first by the dispatch order (MaxMin levels),
 * then up to the targets. */
static void grants_of(uint32_t limit, unsigned n_workers, const uint32_t *target, const double *credit,
		      bool usage_based, struct fg_seatshare_view *v)
{
	uint64_t held = 0;
	for (unsigned w = 0; w < n_workers; w++)
		held += v[w].reserved;
	uint64_t free_seats = limit > held ? limit - held : 0;
	bool released[FG_SEATSHARE_MAX_WORKERS] = { false };
	for (unsigned w = 0; w < n_workers; w++)
		if (!v[w].pending)
			v[w].grant = target[w] < v[w].reserved ? target[w] : v[w].reserved;
	if (!usage_based && credit)
		dispatch_order(limit, n_workers, credit, &free_seats, v, released);
	for (unsigned w = 0; w < n_workers; w++) {
		if (v[w].pending || released[w] || target[w] <= v[w].grant)
			continue;
		uint32_t base = v[w].grant > v[w].reserved ? v[w].grant : v[w].reserved;
		if (target[w] <= base) {
			v[w].grant = target[w];
			continue;
		}
		uint64_t extra = target[w] - base;
		if (extra > free_seats)
			extra = free_seats;
		free_seats -= extra;
		v[w].grant = base + (uint32_t)extra;
	}
}

void fg_seatshare_round(uint32_t limit, unsigned n_workers, const uint32_t *demand, const uint32_t *weight,
			const uint64_t *usage_key, uint32_t n_queues, struct fg_seatshare_view *v, double *credit)
{
	uint32_t target[FG_SEATSHARE_MAX_WORKERS];
	if (n_queues == 0) {
		for (unsigned w = 0; w < n_workers; w++)
			target[w] = fg_seatshare_static(limit, n_workers, w);
	} else {
		double share[FG_SEATSHARE_MAX_WORKERS];
		if (usage_key)
			shares_by_usage(limit, n_workers, demand, usage_key, n_queues, share);
		else
			shares_of(limit, n_workers, demand, weight, n_queues, share);
		targets_of(limit, n_workers, share, v, credit, false, target);
	}
	grants_of(limit, n_workers, target, n_queues ? credit : NULL, usage_key != NULL, v);
}

/* Per-worker shares when the entries of one flow (equal flow key), one per
 * queue it waits or executes in at any worker, are one max-min item: demand
 * the sum of theirs (capped at the limit), weight the first one's.  The
 * flow's allocation is split over the workers in proportion to its demand at
 * each (entry e at worker e % W) and summed per worker; entry_share (when not
 * NULL) receives, for each entry, its flow's share at that entry's worker.
 * Out of memory: per entry, as shares_of. */
static void shares_of_flows(uint32_t limit, unsigned n_workers, const uint32_t *demand, const uint32_t *weight,
			    const uint64_t *flow, uint32_t n_entries, double *share, double *entry_share)
{
	for (unsigned w = 0; w < n_workers; w++)
		share[w] = 0;
	if (entry_share)
		for (uint32_t e = 0; e < n_entries; e++)
			entry_share[e] = 0;
	size_t cap = n_entries ? n_entries : 1;
	uint32_t *order = malloc(sizeof(*order) * cap);
	struct fg_maxmin_item *items = calloc(cap, sizeof(*items));
	double *alloc = calloc(cap, sizeof(*alloc)), *sum = calloc(cap, sizeof(*sum));
	uint32_t n = 0, n_flows = 0;
	if (order && items && alloc && sum) {
		for (uint32_t e = 0; e < n_entries; e++)
			if (demand[e])
				order[n++] = e;
		qsort_r(order, n, sizeof(*order), by_key, (void *)flow);
		for (uint32_t i = 0; i < n; i++) {
			if (i == 0 || flow[order[i]] != flow[order[i - 1]])
				items[n_flows++].weight = weight && weight[order[i]] ? weight[order[i]] / (double)FG_QS_WEIGHT_ONE : 1.0;
			sum[n_flows - 1] += demand[order[i]];
		}
		for (uint32_t f = 0; f < n_flows; f++)
			items[f].upper = sum[f] < limit ? sum[f] : limit;
	}
	if (!order || !items || !alloc || !sum || fg_maxmin_solve(limit, items, n_flows, FG_MAXMIN_SLACK, alloc, NULL, NULL)) {
		shares_of(limit, n_workers, demand, weight, n_entries, share);
	} else {
		double at[FG_SEATSHARE_MAX_WORKERS];
		for (uint32_t i = 0, f = 0; i < n; f++) {
			uint32_t j = i;
			for (unsigned w = 0; w < n_workers; w++)
				at[w] = 0;
			for (; j < n && flow[order[j]] == flow[order[i]]; j++)
				at[order[j] % n_workers] += alloc[f] * demand[order[j]] / sum[f];
			for (unsigned w = 0; w < n_workers; w++)
				share[w] += at[w];
			for (uint32_t k = i; entry_share && k < j; k++)
				entry_share[order[k]] = at[order[k] % n_workers];
			i = j;
		}
	}
	free(order);
	free(items);
	free(alloc);
	free(sum);
}

void fg_seatshare_round_flows(uint32_t limit, unsigned n_workers, const uint32_t *demand, const uint32_t *weight,
			      const uint64_t *flow, uint32_t n_entries, struct fg_seatshare_view *v, double *credit,
			      double *entry_share)
{
	if (n_entries == 0) {
		fg_seatshare_round(limit, n_workers, demand, weight, NULL, 0, v, credit);
		return;
	}
	uint32_t target[FG_SEATSHARE_MAX_WORKERS];
	double share[FG_SEATSHARE_MAX_WORKERS];
	shares_of_flows(limit, n_workers, demand, weight, flow, n_entries, share, entry_share);
	targets_of(limit, n_workers, share, v, credit, true, target);
	grants_of(limit, n_workers, target, credit, false, v);
}

static inline uint32_t load_u32(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

/* The workers' usable and listed backend capacity, summed (the board's
 * scaling of every level: once per step, not per level). */
struct capacity_sum {
	uint32_t usable, total;
};

static struct capacity_sum capacity_of_workers(const struct fg_board *b)
{
	uint64_t usable = 0, total = 0;
	for (unsigned w = 0; w < b->n_workers; w++) {
		usable += load_u32(&b->capacity[w].usable);
		total += load_u32(&b->capacity[w].total);
	}
	while (total > UINT32_MAX) { /* keep the ratio in 32 bits */
		usable >>= 1;
		total >>= 1;
	}
	return (struct capacity_sum){ (uint32_t)usable, (uint32_t)total };
}

/* Level l's limit scaled by that capacity. */
static uint32_t limit_in_force(const struct fg_level_board *l, struct capacity_sum c)
{
	return fg_qs_scale_by_capacity(load_u32(&l->limit), c.usable, c.total);
}

bool fg_board_limit_moved(const struct fg_board *b)
{
	struct capacity_sum c = capacity_of_workers(b);
	for (uint32_t i = 0; i < b->n_levels; i++)
		if (!b->levels[i].exempt && limit_in_force(&b->levels[i], c) != b->levels[i].allotted_limit)
			return true;
	return false;
}

unsigned fg_board_allot(struct fg_board *b, bool *contended)
{
	bool any_contended = false;
	unsigned W = b->n_workers, changed = 0;
	struct fg_seatshare_view v[FG_SEATSHARE_MAX_WORKERS];
	uint32_t *demand = NULL, *weight = NULL;
	uint64_t *key = NULL;
	double *entry_share = NULL;
	uint32_t demand_cap = 0;
	struct capacity_sum capacity = capacity_of_workers(b);
	for (uint32_t i = 0; i < b->n_levels; i++) {
		struct fg_level_board *l = &b->levels[i];
		if (l->exempt)
			continue;
		/* Ours to change, between rounds: read once all the same; scaled
		 * by what the backends can take. */
		uint32_t limit = limit_in_force(l, capacity);
		if (load_u32(&l->limit_in_force) != limit)
			__atomic_store_n(&l->limit_in_force, limit, __ATOMIC_RELAXED);
		/* Shares first (acknowledgement, then what it covers), demands after:
		 * a demand read late only makes the split newer, never unsafe. */
		for (unsigned w = 0; w < W; w++) {
			struct fg_seat_share *s = &l->shares[w];
			uint32_t seq = load_u32(&s->grant_seq);
			v[w].pending = __atomic_load_n(&s->acked_seq, __ATOMIC_ACQUIRE) != seq;
			uint32_t applied = load_u32(&s->applied);
			v[w].used = load_u32(&s->used);
			v[w].head = load_u32(&s->head);
			v[w].reserved = applied > v[w].used ? applied : v[w].used;
			if (v[w].pending && s->grant > v[w].reserved)
				v[w].reserved = s->grant;
			v[w].grant = s->grant;
		}
		/* Entry e = q * W + w is worker w's queue q (owner e % W). */
		uint32_t n = l->n_queues * W;
		if (n > demand_cap) {
			uint32_t *nd = realloc(demand, sizeof(*demand) * n);
			if (nd)
				demand = nd;
			uint32_t *nw = realloc(weight, sizeof(*weight) * n);
			if (nw)
				weight = nw;
			uint64_t *nk = realloc(key, sizeof(*key) * n);
			if (nk)
				key = nk;
			double *ns = realloc(entry_share, sizeof(*entry_share) * n);
			if (ns)
				entry_share = ns;
			if (!nd || !nw || !nk || !ns)
				continue; /* keep the current grants: safe */
			demand_cap = n;
		}
		for (uint32_t q = 0; q < l->n_queues; q++)
			for (unsigned w = 0; w < W; w++) {
				const struct fg_queue_load *ld = fg_board_load(l, w, q);
				uint32_t e = q * W + w;
				demand[e] = load_u32(&ld->demand);
				weight[e] = load_u32(&ld->weight);
				key[e] = __atomic_load_n(l->usage_based ? &ld->usage_key : &ld->flow, __ATOMIC_RELAXED);
				if (!l->usage_based && key[e] == FG_QUEUE_SHARED)
					key[e] = FG_QUEUE_SHARED - 1 - e; /* a max-min item of its own */
			}
		uint64_t total_demand = 0;
		for (uint32_t e = 0; e < n; e++)
			total_demand += demand[e];
		any_contended |= total_demand >= limit;
		if (l->usage_based) {
			fg_seatshare_round(limit, W, demand, weight, key, n, v, l->credit);
		} else {
			fg_seatshare_round_flows(limit, W, demand, weight, key, n, v, l->credit, entry_share);
			for (uint32_t q = 0; q < l->n_queues; q++)
				for (unsigned w = 0; w < W; w++) {
					/* A flow's share at this worker, thousandths of
					 * a seat: at least 1 when it has one (0 means none
					 * yet), stored only when it changed (the worker
					 * reads the line).  A queue with no demand keeps
					 * its flow's last share: a round that falls
					 * between a flow's answer and its next arrival
					 * must not make it a one-seat flow there (the
					 * worker uses the share only while the queue's
					 * flow is the arriving one). */
					if (!demand[q * W + w])
						continue;
					double milli = entry_share[q * W + w] * FG_QS_WEIGHT_ONE;
					uint32_t m = milli <= 0 ? 0 : milli < 1 ? 1 : milli > FG_QS_WEIGHT_MAX
						? FG_QS_WEIGHT_MAX : (uint32_t)milli;
					uint32_t *slot = &fg_board_load(l, w, q)->share_milli;
					if (load_u32(slot) != m)
						__atomic_store_n(slot, m, __ATOMIC_RELAXED);
				}
		}
		for (unsigned w = 0; w < W; w++) {
			struct fg_seat_share *s = &l->shares[w];
			any_contended |= v[w].head && v[w].grant < v[w].used + v[w].head; /* still blocked */
			if (v[w].pending || (v[w].grant == load_u32(&s->applied) && limit == l->allotted_limit))
				continue;
			__atomic_store_n(&s->grant, v[w].grant, __ATOMIC_RELAXED);
			__atomic_store_n(&s->grant_seq, s->grant_seq + 1, __ATOMIC_RELEASE);
			changed++;
		}
		l->allotted_limit = limit;
	}
	free(demand);
	free(weight);
	free(key);
	free(entry_share);
	if (contended)
		*contended = any_contended;
	return changed;
}
