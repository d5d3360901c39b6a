/* SPDX-License-Identifier: Apache-2.0 */
/* usage — decayed per-flow usage (UsageBased policy); see usage.h. */
#include "usage.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define WEIGHT_ONE 1000.0 /* weights are thousandths, as everywhere */
#define KEY_MAX (1ull << 62)

static bool params_ok(const struct fg_usage_params *p) { return p->half_life_ns && p->sampling_ns; }

/* A = 1 - 0.5^(d / H): the weight of the newest sample over d ns. */
static double alpha_of(uint64_t d_ns, uint64_t half_life_ns)
{
	return 1.0 - exp2(-(double)d_ns / (double)half_life_ns);
}

int fg_usage_init(struct fg_usage *u, uint32_t flows, const struct fg_usage_params *p, uint64_t now)
{
	memset(u, 0, sizeof(*u));
	if (!params_ok(p) || flows == 0 || flows > FG_USAGE_MAX_FLOWS)
		return -EINVAL;
	u->cap = flows;
	u->index_cap = 2;
	while (u->index_cap < 2 * flows)
		u->index_cap *= 2;
	u->flows = calloc((size_t)flows + 1, sizeof(*u->flows));
	u->index = calloc(u->index_cap, sizeof(*u->index));
	u->free_list = malloc(sizeof(*u->free_list) * flows);
	u->scratch = malloc(sizeof(*u->scratch) * flows);
	if (!u->flows || !u->index || !u->free_list || !u->scratch) {
		fg_usage_fini(u);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < flows; i++)
		u->free_list[i] = flows - 1 - i; /* the lowest slots first */
	u->n_free = flows;
	u->flows[flows] = (struct fg_usage_flow){ .used = true, .weight = (uint32_t)WEIGHT_ONE, .last_ns = now };
	u->last_fold_ns = now;
	u->scale = 1.0;
	return fg_usage_set_params(u, p, now);
}

void fg_usage_fini(struct fg_usage *u)
{
	free(u->flows);
	free(u->index);
	free(u->free_list);
	free(u->scratch);
	memset(u, 0, sizeof(*u));
}

int fg_usage_set_params(struct fg_usage *u, const struct fg_usage_params *p, uint64_t now)
{
	if (!params_ok(p))
		return -EINVAL;
	u->p = *p;
	u->penalty_alpha = alpha_of(p->sampling_ns, p->half_life_ns);
	u->next_fold_ns = now + p->sampling_ns;
	return 0;
}

static inline uint32_t slot_of(const struct fg_usage *u, uint64_t hash)
{
	return (uint32_t)((hash ^ (hash >> 29)) * 0x9E3779B97F4A7C15ull >> 32) & (u->index_cap - 1);
}

/* Seats held so far count into held_ns. */
static inline void integrate(struct fg_usage_flow *f, uint64_t now)
{
	if (now > f->last_ns) {
		f->held_ns += (uint64_t)f->seats * (now - f->last_ns);
		f->last_ns = now;
	}
}

uint32_t fg_usage_join(struct fg_usage *u, uint64_t hash, uint32_t weight, uint64_t now)
{
	uint32_t i = slot_of(u, hash), id;
	for (;; i = (i + 1) & (u->index_cap - 1)) {
		if (!u->index[i]) {
			if (!u->n_free) { /* full: the overflow entry stands for every new flow */
				u->overflowed++;
				id = u->cap;
				break;
			}
			id = u->free_list[--u->n_free];
			u->index[i] = id + 1;
			u->flows[id] = (struct fg_usage_flow){ .hash = hash, .used = true, .last_ns = now };
			break;
		}
		if (u->flows[u->index[i] - 1].hash == hash) {
			id = u->index[i] - 1;
			break;
		}
	}
	struct fg_usage_flow *f = &u->flows[id];
	f->requests++;
	if (weight && weight != f->weight) {
		f->weight = weight;
		f->gen++;
	}
	return id;
}

void fg_usage_leave(struct fg_usage *u, uint32_t flow, uint64_t now)
{
	struct fg_usage_flow *f = &u->flows[flow];
	if (f->requests)
		f->requests--;
	f->active_ns = now;
}

void fg_usage_start(struct fg_usage *u, uint32_t flow, uint32_t seats, uint64_t guess_ns, uint64_t now)
{
	struct fg_usage_flow *f = &u->flows[flow];
	integrate(f, now);
	f->seats += seats;
	f->penalty += u->penalty_alpha * (double)seats * (double)guess_ns / 1000.0;
	f->gen++;
}

void fg_usage_stop(struct fg_usage *u, uint32_t flow, uint32_t seats, uint64_t now)
{
	struct fg_usage_flow *f = &u->flows[flow];
	integrate(f, now);
	f->seats = f->seats > seats ? f->seats - seats : 0;
}

static uint64_t key_of(const struct fg_usage_flow *f, double scale)
{
	double k = (f->usage + f->penalty) * WEIGHT_ONE / (f->weight ? f->weight : WEIGHT_ONE) / scale;
	return k >= (double)KEY_MAX ? KEY_MAX : k <= 0 ? 0 : (uint64_t)k;
}

uint64_t fg_usage_key(const struct fg_usage *u, uint32_t flow) { return key_of(&u->flows[flow], u->scale); }
uint64_t fg_usage_key_unscaled(const struct fg_usage *u, uint32_t flow) { return key_of(&u->flows[flow], 1.0); }

double fg_usage_of(const struct fg_usage *u, uint32_t flow)
{
	const struct fg_usage_flow *f = &u->flows[flow];
	return (f->usage + f->penalty) / 1e6;
}

/* Take flow `id` out of the index (backward-shift deletion: the index
 * entries move, the slab does not) and free its slot. */
static void forget(struct fg_usage *u, uint32_t id)
{
	uint32_t mask = u->index_cap - 1, i = slot_of(u, u->flows[id].hash);
	while (u->index[i] != id + 1)
		i = (i + 1) & mask;
	for (uint32_t j = (i + 1) & mask; u->index[j]; j = (j + 1) & mask) {
		uint32_t home = slot_of(u, u->flows[u->index[j] - 1].hash);
		/* Move j into the hole at i unless its home lies in (i, j]. */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			u->index[i] = u->index[j];
			i = j;
		}
	}
	u->index[i] = 0;
	u->flows[id].used = false;
	u->free_list[u->n_free++] = id;
	u->forgotten++;
}

static int by_usage(const void *a, const void *b, void *flows)
{
	const struct fg_usage_flow *f = flows;
	double x = f[*(const uint32_t *)a].usage, y = f[*(const uint32_t *)b].usage;
	return x < y ? -1 : x > y;
}

/* Past 3/4 full: the idle flows with the smallest usage go. */
static void evict_smallest_idle(struct fg_usage *u)
{
	uint32_t used = u->cap - u->n_free, keep = u->cap - u->cap / 4, n = 0;
	if (used <= keep)
		return;
	for (uint32_t id = 0; id < u->cap; id++) {
		const struct fg_usage_flow *f = &u->flows[id];
		if (f->used && !f->requests && !f->seats)
			u->scratch[n++] = id;
	}
	qsort_r(u->scratch, n, sizeof(*u->scratch), by_usage, u->flows);
	for (uint32_t i = 0; i < n && used > keep; i++, used--) {
		forget(u, u->scratch[i]);
		u->evicted++;
	}
}

bool fg_usage_fold(struct fg_usage *u, uint64_t now)
{
	uint64_t d = now > u->last_fold_ns ? now - u->last_fold_ns : 0;
	if (d == 0)
		return false;
	double a = alpha_of(d, u->p.half_life_ns), scale = (double)u->p.sampling_ns / (double)d;
	u->scale *= 1 - a;
	bool reset = u->scale < 1.0 / 65536;
	if (reset)
		u->scale = 1.0;
	for (uint32_t id = 0; id <= u->cap; id++) {
		struct fg_usage_flow *f = &u->flows[id];
		if (!f->used)
			continue;
		integrate(f, now);
		if (f->held_ns || f->penalty != 0)
			f->gen++; /* its key moved otherwise than by the scale */
		double current = (double)f->held_ns / 1000.0 * scale;
		f->usage = (1 - a) * f->usage + a * current;
		f->penalty = 0;
		f->held_ns = 0;
		if (id < u->cap && !f->requests && !f->seats && now - f->active_ns > u->p.reset_ns)
			forget(u, id);
	}
	evict_smallest_idle(u);
	u->last_fold_ns = now;
	u->next_fold_ns = now + u->p.sampling_ns;
	u->folds++;
	return reset;
}
