/* SPDX-License-Identifier: Apache-2.0 */
/* config — build, publish and free the dispatch configuration; see config.h. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "backendpool.h"
#include "flowcontrol.h"
#include "seatshare.h"

static void free_config_cb(struct rcu_head *h)
{
	fg_config_free(caa_container_of(h, struct fg_config, rcu));
}

void fg_config_publish(struct fg_config **slot, struct fg_config *next)
{
	struct fg_config *old = rcu_xchg_pointer(slot, next);
	if (old)
		call_rcu(&old->rcu, free_config_cb);
}

struct fg_config *fg_config_build(const struct fg_settings *s, struct fg_fc_config *fc, uint64_t generation)
{
	struct fg_config *c = calloc(1, sizeof(*c));
	if (!c) {
		fg_fc_config_free(fc);
		return NULL;
	}
	c->generation = generation;
	c->seat_limit = s->seat_limit;
	c->adaptive = s->seat_limit_mode == FG_SEAT_LIMIT_ADAPTIVE;
	c->seat_limit_min = s->seat_limit_min;
	c->seat_limit_max = fg_settings_seat_limit_max(s);
	c->work_per_class = s->work_estimates == FG_WORK_ESTIMATES_PER_CLASS;
	c->answer_load = (uint8_t)s->answer_load;
	c->work_estimate_min_ns = (uint64_t)s->work_estimate_min_ns;
	c->work_estimate_max_ns = (uint64_t)s->work_estimate_max_ns;
	c->fc = fc;
	c->queue_wait_ns = (uint64_t)s->queue_wait_ns;
	c->backend_timeout_ns = (uint64_t)s->backend_timeout_ns;
	c->retry_after_ms = s->retry_after_ms;
	c->eject_after = s->eject_after;
	c->eject_ns = (uint64_t)s->eject_ns;
	c->max_eject_ns = (uint64_t)s->max_eject_ns;
	c->n_backends = s->n_backends;
	memcpy(c->backends, s->backends, sizeof(c->backends[0]) * s->n_backends);
	c->n_workers = s->workers ? s->workers : 1;
	c->allotment_period_ns = (uint64_t)s->allotment_period_ns;
	c->borrowing_period_ns = (uint64_t)s->borrowing_period_ns;
	c->cluster = s->cluster_etcd[0] != 0;
	c->max_extra_latency_ns = (uint64_t)s->max_extra_latency_ns;
	c->flowcontrol_metrics = s->flowcontrol_metrics;
	c->metrics_flow_labels = s->metrics_flow_labels;
	fg_trust_init(&c->trust, s);
	if (c->n_workers > 1 && !(c->board = fg_board_new(fc, c->n_workers))) {
		fg_config_free(c);
		return NULL;
	}
	uint32_t n_levels = fc ? fc->n_levels : 0;
	if (c->n_workers == 1) {
		c->limits = calloc(1, sizeof(*c->limits) + sizeof(c->limits->current[0]) * (n_levels ? n_levels : 1));
		if (!c->limits) {
			fg_config_free(c);
			return NULL;
		}
		c->limits->n = n_levels;
		for (uint32_t i = 0; i < n_levels; i++)
			c->limits->current[i] = fc->levels[i].limit;
	}
	return c;
}

uint32_t fg_config_level_limit(const struct fg_config *c, uint32_t i)
{
	if (c->limits && i < c->limits->n)
		return __atomic_load_n(&c->limits->current[i], __ATOMIC_RELAXED);
	if (c->board && i < c->board->n_levels && !c->board->levels[i].exempt)
		return __atomic_load_n(&c->board->levels[i].limit, __ATOMIC_RELAXED);
	return c->fc->levels[i].limit;
}

void fg_config_set_level_limit(const struct fg_config *c, uint32_t i, uint32_t limit)
{
	if (c->limits && i < c->limits->n)
		__atomic_store_n(&c->limits->current[i], limit, __ATOMIC_RELAXED);
	else if (c->board && i < c->board->n_levels && !c->board->levels[i].exempt)
		__atomic_store_n(&c->board->levels[i].limit, limit, __ATOMIC_RELAXED);
}

void fg_config_keep_level_limits(struct fg_config *next, const struct fg_config *prev)
{
	const struct fg_fc_config *fc = next->fc;
	for (uint32_t i = 0; fc && i < fc->n_levels; i++) {
		const struct fg_fc_level *l = &fc->levels[i];
		if (l->exempt)
			continue;
		/* A new level starts at nominal - lendable / 2 (Kubernetes; the
		 * borrowing state's start, borrowing.h) — in cluster mode at 0
		 * until the cluster grants it seats (clustershare.h); one that
		 * stays keeps its current limit within its new bounds. */
		uint32_t limit = next->cluster ? 0 : l->nominal - (l->nominal - l->min) / 2;
		for (uint32_t j = 0; prev && prev->fc && j < prev->fc->n_levels; j++)
			if (!prev->fc->levels[j].exempt && !strcmp(prev->fc->levels[j].name, l->name)) {
				uint32_t was = fg_config_level_limit(prev, j);
				limit = was < l->min ? l->min : was > l->max ? l->max : was;
				break;
			}
		fg_config_set_level_limit(next, i, limit);
		if (next->board)
			fg_board_reset_level(next->board, i);
	}
}

void fg_config_keep_backend_slots(struct fg_config *next, const struct fg_config *prev)
{
	if (!prev)
		return;
	struct fg_backend_cfg listed[FG_MAX_BACKENDS];
	uint32_t n_listed = next->n_backends, n = prev->n_backends;
	bool placed[FG_MAX_BACKENDS] = { false }, taken[FG_MAX_BACKENDS] = { false };
	memcpy(listed, next->backends, sizeof(listed[0]) * n_listed);
	memcpy(next->backends, prev->backends, sizeof(next->backends[0]) * n);
	for (uint32_t j = 0; j < n; j++)
		next->backends[j].admin = FG_BACKEND_REMOVED;
	for (uint32_t i = 0; i < n_listed; i++)
		for (uint32_t j = 0; j < n && !placed[i]; j++)
			if (!taken[j] && fg_endpoint_same_addr(&prev->backends[j].ep, &listed[i].ep)) {
				next->backends[j] = listed[i];
				placed[i] = taken[j] = true;
			}
	/* New ones: never used slots first, so removed ones keep taking the
	 * answers in flight as long as they can.  There is always a slot:
	 * n_listed <= FG_MAX_BACKENDS and every listed one matched at most one. */
	uint32_t reuse = 0;
	for (uint32_t i = 0; i < n_listed; i++) {
		if (placed[i])
			continue;
		uint32_t j = n;
		if (n < FG_MAX_BACKENDS) {
			n++;
		} else {
			while (reuse < n && taken[reuse])
				reuse++;
			j = reuse;
		}
		if (j >= FG_MAX_BACKENDS) /* cannot happen (above); defensive */
			break;
		next->backends[j] = listed[i];
		taken[j] = true;
	}
	next->n_backends = n;
}

void fg_config_free(struct fg_config *c)
{
	if (!c)
		return;
	fg_board_free(c->board);
	free(c->limits);
	fg_fc_config_free(c->fc);
	free(c);
}
