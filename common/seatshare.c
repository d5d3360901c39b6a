/* seatshare — per-worker seat allotments of a level; see seatshare.h. */
#include "seatshare.h"

#include <stdlib.h>
#include <string.h>

#include "flowcontrol.h"

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
		l->limit = fl->exempt ? 0 : fl->limit;
		l->n_queues = fl->queues;
		l->per_owner = (fl->queues + n_workers - 1) / n_workers;
		l->shares = aligned_alloc(64, sizeof(*l->shares) * n_workers);
		l->loads = calloc(l->per_owner ? (size_t)l->per_owner * n_workers : 1, sizeof(*l->loads));
		if (!l->shares || !l->loads) {
			fg_board_free(b);
			return NULL;
		}
		memset(l->shares, 0, sizeof(*l->shares) * n_workers);
		for (unsigned w = 0; w < n_workers; w++)
			l->shares[w].applied = fg_seatshare_static(l->limit, n_workers, w);
	}
	return b;
}

void fg_board_free(struct fg_board *b)
{
	if (!b)
		return;
	for (uint32_t i = 0; i < b->n_levels; i++) {
		free(b->levels[i].shares);
		free(b->levels[i].loads);
	}
	free(b);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

void fg_seatshare_targets(uint32_t limit, unsigned n_workers, const uint32_t *demand, uint32_t n_queues,
			  uint32_t *target)
{
	double share[FG_SEATSHARE_MAX_WORKERS] = { 0 };
	if (n_queues == 0) {
		for (unsigned w = 0; w < n_workers; w++)
			target[w] = fg_seatshare_static(limit, n_workers, w);
		return;
	}
	/* The water level: everyone under it gets their demand, the rest get it. */
	uint64_t total = 0;
	for (uint32_t q = 0; q < n_queues; q++)
		total += demand[q] < limit ? demand[q] : limit;
	double level = 1e300;
	if (total > limit) {
		uint32_t *sorted = malloc(sizeof(*sorted) * n_queues);
		if (sorted) {
			for (uint32_t q = 0; q < n_queues; q++)
				sorted[q] = demand[q] < limit ? demand[q] : limit;
			qsort(sorted, n_queues, sizeof(*sorted), cmp_u32);
			double left = limit;
			for (uint32_t i = 0; i < n_queues; i++) {
				double fair = left / (double)(n_queues - i);
				if ((double)sorted[i] >= fair) {
					level = fair;
					break;
				}
				left -= sorted[i];
			}
			free(sorted);
		} else {
			level = (double)limit / n_queues; /* out of memory: equal shares, still within C */
		}
	}
	for (uint32_t q = 0; q < n_queues; q++) {
		double d = demand[q] < limit ? demand[q] : limit;
		share[q % n_workers] += d < level ? d : level;
	}
	/* Whole seats adding up to at most C: floors, then the largest remainders. */
	uint64_t sum = 0;
	for (unsigned w = 0; w < n_workers; w++)
		sum += target[w] = (uint32_t)share[w];
	while (sum < limit) {
		int best = -1;
		for (unsigned w = 0; w < n_workers; w++)
			if (share[w] - target[w] > 1e-9 && (best < 0 || share[w] - target[w] > share[best] - target[best]))
				best = (int)w;
		if (best < 0)
			break;
		target[best]++;
		sum++;
	}
}

void fg_seatshare_grants(uint32_t limit, unsigned n_workers, const uint32_t *target, const uint32_t *reserved,
			 const bool *pending, uint32_t *grant)
{
	uint64_t held = 0;
	for (unsigned w = 0; w < n_workers; w++)
		held += reserved[w];
	uint64_t free_seats = limit > held ? limit - held : 0;
	for (unsigned w = 0; w < n_workers; w++) {
		if (pending[w])
			continue;
		if (target[w] <= reserved[w]) {
			grant[w] = target[w]; /* a shrink: stop dispatching above it */
			continue;
		}
		uint64_t extra = target[w] - reserved[w];
		if (extra > free_seats)
			extra = free_seats;
		free_seats -= extra;
		grant[w] = reserved[w] + (uint32_t)extra;
	}
}

static inline uint32_t load_u32(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

unsigned fg_board_allot(struct fg_board *b)
{
	unsigned W = b->n_workers, changed = 0;
	uint32_t target[FG_SEATSHARE_MAX_WORKERS], reserved[FG_SEATSHARE_MAX_WORKERS], grant[FG_SEATSHARE_MAX_WORKERS];
	bool pending[FG_SEATSHARE_MAX_WORKERS];
	uint32_t *demand = NULL;
	uint32_t demand_cap = 0;
	for (uint32_t i = 0; i < b->n_levels; i++) {
		struct fg_level_board *l = &b->levels[i];
		if (!l->limit)
			continue; /* exempt */
		/* Shares first (acknowledgement, then what it covers), demands after:
		 * a demand read late only makes the split newer, never unsafe. */
		for (unsigned w = 0; w < W; w++) {
			struct fg_seat_share *s = &l->shares[w];
			uint32_t seq = load_u32(&s->grant_seq);
			pending[w] = __atomic_load_n(&s->acked_seq, __ATOMIC_ACQUIRE) != seq;
			uint32_t applied = load_u32(&s->applied), used = load_u32(&s->used);
			reserved[w] = applied > used ? applied : used;
			if (pending[w] && s->grant > reserved[w])
				reserved[w] = s->grant;
			grant[w] = s->grant;
		}
		if (l->n_queues > demand_cap) {
			uint32_t *nd = realloc(demand, sizeof(*demand) * l->n_queues);
			if (!nd)
				continue; /* keep the current grants: safe */
			demand = nd;
			demand_cap = l->n_queues;
		}
		for (uint32_t q = 0; q < l->n_queues; q++)
			demand[q] = load_u32(&fg_board_load(l, W, q)->demand);
		fg_seatshare_targets(l->limit, W, demand, l->n_queues, target);
		fg_seatshare_grants(l->limit, W, target, reserved, pending, grant);
		for (unsigned w = 0; w < W; w++) {
			struct fg_seat_share *s = &l->shares[w];
			if (pending[w] || grant[w] == load_u32(&s->applied))
				continue;
			__atomic_store_n(&s->grant, grant[w], __ATOMIC_RELAXED);
			__atomic_store_n(&s->grant_seq, s->grant_seq + 1, __ATOMIC_RELEASE);
			changed++;
		}
	}
	free(demand);
	return changed;
}
