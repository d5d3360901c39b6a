/* SPDX-License-Identifier: Apache-2.0 */
/*
 * worker_config — a worker following a configuration generation: levels
 * matched by name and reconfigured in place, new ones created, removed ones
 * lingering until idle (KEP "Reaction to Configuration Changes"), the
 * backends followed slot by slot, and with several workers the new board
 * joined.  See worker.h.
 */
#include "worker.h"
#include "worker_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "flowcontrol.h"
#include "settings.h"

/* The seats a level may ever have: its maximum (nominal + borrowing), but
 * no more than the configuration's nominal limits together, which no
 * borrowing round exceeds (borrowing.h: the allocator shares out that sum). */
static uint32_t capacity_of(const struct fg_config *cfg, const struct fg_fc_level *l)
{
	const struct fg_fc_config *fc = cfg->fc;
	uint64_t sum = 0;
	for (uint32_t i = 0; i < fc->n_levels; i++)
		sum += fc->levels[i].exempt ? 0 : fc->levels[i].nominal;
	uint64_t most = l->max < sum ? l->max : sum;
	/* Adaptive: the levels scale with the learned limit, up to its maximum. */
	if (cfg->adaptive && cfg->seat_limit && cfg->seat_limit_max > cfg->seat_limit)
		most = (most * cfg->seat_limit_max + cfg->seat_limit - 1) / cfg->seat_limit;
	return most > FG_MAX_SEAT_LIMIT ? FG_MAX_SEAT_LIMIT : (uint32_t)most;
}

/* limit: the level's current limit as the configuration starts it
 * (fg_config_level_limit). */
static struct fg_qs_config qs_config_of(const struct fg_config *cfg, const struct fg_fc_level *l, uint32_t limit,
					unsigned worker, uint32_t level_slot)
{
	return (struct fg_qs_config){
		.mode = l->exempt ? FG_QS_EXEMPT : l->reject ? FG_QS_REJECT : FG_QS_QUEUE,
		.queues = l->queues, .hand_size = l->hand_size, .queue_length_limit = l->queue_length_limit,
		.concurrency_limit = l->exempt ? l->limit : limit, .capacity = l->exempt ? 0 : capacity_of(cfg, l),
		.max_seats = l->max_seats, .seed = 0x1040u + worker * 977u + level_slot,
		.wide_limit = cfg->cluster && !l->exempt ? (l->nominal ? l->nominal : 1) : 0,
		/* Several workers: each queues its flows with the weight of
		 * their share there (worker.h), so every level with queues is
		 * run weighted. */
		.weighted = l->weighted || (cfg->board && l->queues && l->policy != FG_FC_POLICY_USAGE_BASED),
		.caller_prices = cfg->work_per_class && !l->exempt, /* classguess.h */
		.usage_based = l->policy == FG_FC_POLICY_USAGE_BASED,
		.usage = fg_fc_level_usage_params(l),
	};
}

static void publish_level_shape(struct fg_worker *w, uint32_t level_slot, const struct fg_fc_level *l, uint32_t limit)
{
	struct fg_level_stats *ls = &w->stats.levels[level_slot];
	FG_STAT_SET(ls->limit, l->exempt ? 0 : limit);
	FG_STAT_SET(ls->queues, l->queues);
	FG_STAT_SET(ls->live, 1);
}

/* A removed level's slot is freed once nothing waits or holds a seat in it. */
void fg_worker__retire_idle_levels(struct fg_worker *w)
{
	for (uint32_t i = 0; w->n_retiring && i < w->n_levels; i++) {
		struct fg_level_rt *rt = &w->levels[i];
		if (rt->used && !rt->live && fg_qs_idle(&rt->qs)) {
			fg_qs_fini(&rt->qs);
			rt->used = false;
			w->n_retiring--;
			__atomic_store_n(&w->stats.levels[i].used, 0, __ATOMIC_RELEASE);
		}
	}
}

/* The runtime slot following a level of that name, or FG_MAX_LEVELS. */
static uint32_t slot_named(const struct fg_worker *w, const char *name)
{
	for (uint32_t k = 0; k < w->n_levels; k++)
		if (w->levels[k].used && !strcmp(w->stats.levels[k].name, name))
			return k;
	return FG_MAX_LEVELS;
}

/* Whether the configuration's new levels fit the free slots: checked before
 * anything changes, so a configuration that cannot be followed is not
 * half-followed. */
static bool levels_fit(const struct fg_worker *w, const struct fg_fc_config *fc)
{
	uint32_t free_slots = FG_MAX_LEVELS - w->n_levels, needed = 0;
	for (uint32_t k = 0; k < w->n_levels; k++)
		free_slots += !w->levels[k].used;
	for (uint32_t i = 0; i < fc->n_levels; i++)
		needed += slot_named(w, fc->levels[i].name) == FG_MAX_LEVELS;
	return needed <= free_slots;
}

/* The configuration could not be followed: dispatch nothing more (seats only
 * come back, so no level's limit can be passed whatever the others do), let
 * go of the old configuration's board (it is freed after its grace period),
 * and refuse new requests until a configuration is followed. */
static int refuse_to_follow(struct fg_worker *w, const struct fg_config *cfg, int rc, uint64_t now)
{
	for (uint32_t k = 0; k < w->n_levels; k++)
		if (w->levels[k].used)
			fg_qs_set_limit(&w->levels[k].qs, 0, now);
	w->board = NULL;
	FG_STAT_SET(w->stats.config_error, (uint32_t)-rc);
	__atomic_store_n(&w->stats.config_refused_generation, cfg->generation, __ATOMIC_RELEASE); /* after the error */
	return rc;
}

/* One level of the configuration to follow: its runtime slot, and what was
 * made for it before anything changed. */
struct level_change {
	uint32_t level_slot;
	bool fresh;               /* a new level: qs initialised in its (unused) slot */
	struct fg_qs_prep prep;   /* an existing level's reconfiguration */
};

/* Undo the preparation of changes[0..n): nothing live was touched. */
static void abort_changes(struct fg_worker *w, struct level_change *changes, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		if (changes[i].fresh)
			fg_qs_fini(&w->levels[changes[i].level_slot].qs);
		else
			fg_qs_prep_abort(&changes[i].prep);
	}
}

/* Prepare: for every level its slot, and every allocation — new queue sets
 * in unused slots, existing ones' reconfigurations on the side.  0 or
 * -errno with nothing changed. */
static int prepare_levels(struct fg_worker *w, const struct fg_config *cfg, struct level_change *changes,
			  uint64_t now)
{
	const struct fg_fc_config *fc = cfg->fc;
	bool claimed[FG_MAX_LEVELS] = { false };
	for (uint32_t i = 0; i < fc->n_levels; i++) {
		const struct fg_fc_level *l = &fc->levels[i];
		struct level_change *c = &changes[i];
		c->level_slot = slot_named(w, l->name);
		int rc;
		if (c->level_slot < FG_MAX_LEVELS) {
			struct fg_qs_config qc = qs_config_of(cfg, l, fg_config_level_limit(cfg, i), w->id, c->level_slot);
			rc = fg_qs_prepare(&w->levels[c->level_slot].qs, &qc, &c->prep);
		} else {
			c->level_slot = 0;
			while (c->level_slot < FG_MAX_LEVELS && (w->levels[c->level_slot].used || claimed[c->level_slot]))
				c->level_slot++;
			if (c->level_slot == FG_MAX_LEVELS) { /* levels_fit said otherwise: defensive */
				abort_changes(w, changes, i);
				return -ENOSPC;
			}
			claimed[c->level_slot] = c->fresh = true;
			struct fg_qs_config qc = qs_config_of(cfg, l, fg_config_level_limit(cfg, i), w->id, c->level_slot);
			if ((rc = fg_qs_init(&w->levels[c->level_slot].qs, &qc, now)))
				c->fresh = false; /* fg_qs_init cleaned up after itself */
		}
		if (rc) {
			abort_changes(w, changes, i);
			return rc;
		}
	}
	return 0;
}

/* A worker's part of v seats, at least one. */
static uint32_t part_of(uint32_t v, unsigned n_workers, unsigned id)
{
	uint32_t part = fg_seatshare_static(v, n_workers, id);
	return part ? part : 1;
}

/* Backends by slot (the configuration keeps an address's slot, settings.h):
 * a slot that names another address now, or none, first ends what is in
 * flight there — answers from the old address could no longer be matched —
 * and starts afresh, counters included.  Nothing here can fail. */
static void follow_backends(struct fg_worker *w, const struct fg_config *cfg, uint64_t now)
{
	uint32_t n = cfg->n_backends < FG_MAX_BACKENDS ? cfg->n_backends : FG_MAX_BACKENDS;
	for (uint32_t b = n; b < w->pool.n; b++)
		if (w->pool.b[b].outstanding)
			fg_worker__end_at_backend(w, cfg, b, now);
	for (uint32_t b = 0; b < n; b++) {
		const struct fg_endpoint *ep = &cfg->backends[b].ep;
		struct fg_backend *be = &w->pool.b[b];
		bool fresh = b >= w->pool.n || be->ip != ep->ip || be->port != ep->port;
		if (fresh && b < w->pool.n && be->outstanding)
			fg_worker__end_at_backend(w, cfg, b, now);
		fg_backendpool_follow(&w->pool, b, ep->ip, ep->port, cfg->backends[b].admin);
		struct fg_backend_stats *bs = &w->stats.backends[b];
		if (fresh) { /* another backend: its counters start again */
			FG_STAT_SET(bs->timeouts, 0);
			FG_STAT_SET(bs->dispatched, 0);
			FG_STAT_SET(bs->ejections, 0);
			FG_STAT_SET(bs->state, FG_BACKEND_UP);
			FG_STAT_SET(bs->admin, FG_BACKEND_ENABLED);
			FG_STAT_SET(bs->until_ns, 0);
			FG_STAT_SET(bs->last_change_ns, now);
		}
	}
	fg_backendpool_set_count(&w->pool, n);
	if (w->io.ops->follow_backends)
		w->io.ops->follow_backends(w->io.ctx, cfg->backends, n);
	/* Each worker takes an even part of a backend's capacity, and of the
	 * adaptive limit's start and bounds (at least a seat each). */
	unsigned n_workers = cfg->n_workers ? cfg->n_workers : 1;
	w->adaptive.on = cfg->adaptive;
	w->adaptive.start = part_of(cfg->seat_limit, n_workers, w->id);
	w->adaptive.max = part_of(cfg->seat_limit_max, n_workers, w->id);
	/* serverConcurrencyLimitMin as each backend's least: the backends and
	 * the levels then agree (levels above what the backends take would
	 * hold the rest first come, first served). */
	uint32_t each_min = n ? part_of((cfg->seat_limit_min + n - 1) / n, n_workers, w->id) : 1;
	for (uint32_t b = 0; b < n; b++) {
		uint32_t seats = cfg->backends[b].seats;
		if (cfg->adaptive) /* seats=N is where it starts; else an even part of serverConcurrencyLimit */
			fg_backendpool_set_adaptive(&w->pool, b,
						    part_of(seats ? seats : (cfg->seat_limit + n - 1) / n, n_workers, w->id),
						    each_min, w->adaptive.max, now);
		else
			fg_backendpool_set_capacity(&w->pool, b, seats ? fg_seatshare_static(seats, n_workers, w->id) : 0);
		fg_worker__publish_backend(w, b, now);
		FG_STAT_SET(w->stats.backends[b].capacity, w->pool.b[b].capacity);
	}
}

int fg_worker_configure(struct fg_worker *w, const struct fg_config *cfg, uint64_t now)
{
	const struct fg_fc_config *fc = cfg->fc;
	uint32_t limits_seq = cfg->limits ? __atomic_load_n(&cfg->limits->seq, __ATOMIC_ACQUIRE) : 0;
	if (fc->n_levels > FG_MAX_LEVELS || !levels_fit(w, fc))
		return refuse_to_follow(w, cfg, -ENOSPC, now);
	bool apf = w->config_generation ? w->apf_metrics : cfg->flowcontrol_metrics; /* restart-only */
	uint16_t *map = calloc(fc->n_levels ? fc->n_levels : 1, sizeof(*map));
	/* Each schema's (level, schema) pair: the per-class estimates' group
	 * (classguess.h), and flowcontrolMetrics' series. */
	uint16_t *pairs = calloc(fc->n_schemas ? fc->n_schemas : 1, sizeof(*pairs));
	struct level_change *changes = calloc(fc->n_levels ? fc->n_levels : 1, sizeof(*changes));
	/* Per-class estimates: one table for every (level, schema) pair, made once. */
	bool new_classes = !w->classguess.e;
	struct fg_classguess classes = { 0 };
	int rc = new_classes ? fg_classguess_init(&classes, FG_APF_PAIRS, cfg->work_estimate_min_ns,
						  cfg->work_estimate_max_ns)
			     : 0;
	/* Adaptive mode: the backends' controllers, made once. */
	struct fg_adapt *adapt = NULL;
	if (!rc && cfg->adaptive && !w->adapt_table && !(adapt = calloc(FG_MAX_BACKENDS, sizeof(*adapt))))
		rc = -ENOMEM;
	if (!rc)
		rc = map && changes && pairs ? prepare_levels(w, cfg, changes, now) : -ENOMEM;
	if (rc) {
		free(adapt);
		fg_classguess_fini(&classes);
		free(map);
		free(pairs);
		free(changes);
		return refuse_to_follow(w, cfg, rc, now);
	}
	/* Commit: nothing below can fail. */
	bool keep[FG_MAX_LEVELS] = { false }, shrank[FG_MAX_LEVELS] = { false };
	for (uint32_t i = 0; i < fc->n_levels; i++) {
		const struct fg_fc_level *l = &fc->levels[i];
		uint32_t level_slot = changes[i].level_slot;
		uint32_t held = UINT32_MAX; /* the seats this worker could use so far */
		uint32_t limit = fg_config_level_limit(cfg, i);
		if (!changes[i].fresh) {
			/* The limits as given (a lone worker's are scaled by the
			 * backends' capacity: fg_qs_set_capacity). */
			held = w->levels[level_slot].qs.given_limit;
			shrank[level_slot] = limit < w->levels[level_slot].qs.given_level_limit;
			fg_qs_commit(&w->levels[level_slot].qs, &changes[i].prep, now);
		} else {
			fg_retry_after_init(&w->levels[level_slot].retry, now / FG_NS_PER_SEC);
			struct fg_level_stats *ls = &w->stats.levels[level_slot];
			/* All but answer_load, which the control thread writes (stats.h). */
			memset(ls, 0, offsetof(struct fg_level_stats, answer_load));
			__atomic_store_n(&ls->answer_load, 0, __ATOMIC_RELAXED);
			snprintf(ls->name, sizeof(ls->name), "%s", l->name);
			w->levels[level_slot].used = true;
			__atomic_store_n(&ls->used, 1, __ATOMIC_RELEASE);
			if (level_slot >= w->n_levels)
				w->n_levels = level_slot + 1;
		}
		map[i] = (uint16_t)level_slot;
		keep[level_slot] = true;
		w->levels[level_slot].cfg_index = i;
		publish_level_shape(w, level_slot, l, limit);
		if (cfg->board)
			fg_worker__join_board(w, cfg, level_slot, held, now);
	}
	free(changes);
	w->n_retiring = 0;
	for (uint32_t k = 0; k < w->n_levels; k++) {
		w->levels[k].live = w->levels[k].used && keep[k];
		if (w->levels[k].used && !keep[k]) {
			FG_STAT_SET(w->stats.levels[k].live, 0);
			w->n_retiring++;
		}
		shrank[k] |= w->levels[k].used && !keep[k];
	}
	if (new_classes)
		w->classguess = classes;
	fg_classguess_set_bounds(&w->classguess, cfg->work_estimate_min_ns, cfg->work_estimate_max_ns);
	w->work_per_class = cfg->work_per_class;
	free(w->level_of_cfg);
	w->level_of_cfg = map;
	w->n_level_map = fc->n_levels;
	w->apf_metrics = apf;
	FG_STAT_SET(w->stats.apf_metrics, apf);
	for (uint32_t i = 0; i < fc->n_schemas; i++)
		pairs[i] = fg_apf_pair(&w->stats.apf, fc->levels[fc->schema_level[i]].name, fc->schema_names[i]);
	free(w->pair_of_schema);
	w->pair_of_schema = pairs;
	if (!w->config_generation) {
		fg_backendpool_init(&w->pool, 0, cfg->eject_after, cfg->eject_ns, cfg->max_eject_ns);
		w->pool.shared = w->mesh ? w->mesh->backends : NULL;
	}
	if (adapt)
		w->adapt_table = adapt;
	w->pool.adapt = w->adapt_table;
	fg_backendpool_set_ejection(&w->pool, cfg->eject_after, cfg->eject_ns, cfg->max_eject_ns);
	follow_backends(w, cfg, now);
	FG_STAT_SET(w->stats.n_backends, cfg->n_backends);
	w->board = cfg->board;
	fg_worker__follow_capacity(w, now); /* new levels start scaled too */
	/* The queue sets started with limits read after limits_seq: a later
	 * round is followed at the next poll (again, at worst). */
	w->limits_seq = limits_seq;
	w->config_generation = cfg->generation;
	FG_STAT_SET(w->stats.config_error, 0);
	/* After the board entries: the allotter reads this first (acquire). */
	__atomic_store_n(&w->stats.config_generation, cfg->generation, __ATOMIC_RELEASE);
	/* Seats held only for extra latency are not worth keeping a shrunk or
	 * removed level over its new limit: they go back now. */
	fg_worker__release_lingering(w, shrank, now);
	fg_worker__retire_idle_levels(w);
	return 0;
}
