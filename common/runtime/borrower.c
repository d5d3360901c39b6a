/* SPDX-License-Identifier: Apache-2.0 */
/* borrower — borrowing wired to the workers and the configuration; see borrower.h. */
#include "borrower.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "flowcontrol.h"
#include "seatshare.h"
#include "seqlock.h"
#include "settings.h"

struct fg_borrower *fg_borrower_new(void)
{
	return calloc(1, sizeof(struct fg_borrower));
}

void fg_borrower_free(struct fg_borrower *b)
{
	free(b);
}

bool fg_borrower_read(const struct fg_borrower_view *v, struct fg_borrower_view *out)
{
	return fg_seq_read(&v->seq, v, out, sizeof(*out));
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * FG_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* The levels and their limits as status shows them (inside the view's write). */
static void publish_levels(struct fg_borrower *b)
{
	struct fg_borrower_view *v = &b->view;
	v->n = b->n;
	for (uint32_t i = 0; i < b->n; i++) {
		const struct fg_borrowing_level *l = &b->levels[i];
		struct fg_borrower_level_view *lv = &v->levels[i];
		memcpy(lv->name, b->names[i], sizeof(lv->name));
		lv->exempt = l->exempt;
		lv->nominal = l->nominal;
		lv->min = l->min;
		lv->max = l->max;
		lv->current = l->current;
		lv->lower = l->lower;
		lv->target = l->target;
		lv->demand = b->demand[i];
		lv->stats = l->stats;
	}
}

/* A new generation: levels matched by name (borrower.h). */
static void follow(struct fg_borrower *b, const struct fg_config *cfg, uint64_t now)
{
	struct fg_borrower_prev *old = &b->prev;
	const struct fg_fc_config *fc = cfg->fc;
	old->n = b->n;
	memcpy(old->levels, b->levels, sizeof(old->levels[0]) * b->n);
	memcpy(old->names, b->names, sizeof(old->names[0]) * b->n);
	memcpy(old->demand, b->demand, sizeof(old->demand[0]) * b->n);
	uint32_t n = fc->n_levels < FG_MAX_LEVELS ? fc->n_levels : FG_MAX_LEVELS;
	uint64_t nominal_sum = 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct fg_fc_level *fl = &fc->levels[i];
		struct fg_borrowing_level *l = &b->levels[i];
		nominal_sum += fl->nominal;
		uint32_t k = 0;
		while (k < old->n && strcmp(old->names[k], fl->name))
			k++;
		if (k < old->n) {
			*l = old->levels[k];
			b->demand[i] = old->demand[k];
			l->exempt = fl->exempt;
			l->nominal = fl->nominal;
			l->min = fl->min;
			l->max = fl->max;
			if (l->current < l->min)
				l->current = l->min;
			if (!l->exempt && l->current > l->max)
				l->current = l->max;
		} else {
			fg_borrowing_level_init(l, fl->exempt, fl->nominal, fl->min, fl->max, now);
			b->demand[i] = 0;
		}
		snprintf(b->names[i], sizeof(b->names[i]), "%s", fl->name);
	}
	b->n = n;
	b->nominal_sum = nominal_sum > UINT32_MAX ? UINT32_MAX : (uint32_t)nominal_sum;
	b->generation = cfg->generation;
	memset(b->slot_gen, 0, sizeof(b->slot_gen)); /* the slots are found again for these levels */
}

/* Worker w's stats slot of each configuration level, found by name again
 * whenever the worker follows another generation. */
static void map_slots(struct fg_borrower *b, unsigned w, struct fg_worker_stats *ws)
{
	uint64_t gen = __atomic_load_n(&ws->config_generation, __ATOMIC_ACQUIRE);
	if (gen == b->slot_gen[w] && gen)
		return;
	b->slot_gen[w] = gen;
	for (uint32_t i = 0; i < b->n; i++) {
		b->slot[w][i] = FG_MAX_LEVELS;
		for (uint32_t k = 0; k < FG_MAX_LEVELS; k++) {
			const struct fg_level_stats *ls = &ws->levels[k];
			if (__atomic_load_n(&ls->used, __ATOMIC_ACQUIRE) && !strcmp(ls->name, b->names[i])) {
				b->slot[w][i] = (uint16_t)k;
				break;
			}
		}
	}
}

/* Cluster mode: the levels' figures for the cluster thread (clustershare.h). */
static void publish_local(struct fg_borrower *b, const struct fg_config *cfg, struct fg_worker_stats *const *ws,
			  unsigned n_workers, const uint32_t *executing, const uint32_t *may_use, const uint64_t *rejected,
			  uint64_t now)
{
	struct fg_cluster_local *lo = &b->cluster->local;
	fg_seq_write_begin(&lo->seq);
	lo->generation = b->generation;
	lo->sampled_ns = now;
	lo->backend_timeout_ns = cfg->backend_timeout_ns;
	lo->n = b->n;
	/* Levels a worker still drains after they left the configuration: their
	 * seats in use, summed by name. */
	for (unsigned w = 0; w < n_workers; w++)
		for (uint32_t k = 0; k < FG_MAX_LEVELS; k++) {
			const struct fg_level_stats *ls = &ws[w]->levels[k];
			if (!__atomic_load_n(&ls->used, __ATOMIC_ACQUIRE) || FG_STAT_GET(ls->live))
				continue;
			/* Its waiting requests may still start, within the limit the
			 * worker kept for it. */
			uint32_t in_use = FG_STAT_GET(ls->seats_in_use), j = b->n;
			uint32_t waiting = FG_STAT_GET(ls->seats_waiting), limit = FG_STAT_GET(ls->limit);
			uint32_t most = waiting && limit > in_use ? limit : in_use;
			if (!in_use && !waiting)
				continue;
			while (j < lo->n && strncmp(lo->levels[j].name, ls->name, FG_LEVEL_NAME_MAX))
				j++;
			if (j == FG_MAX_LEVELS)
				continue;
			struct fg_cluster_local_level *l = &lo->levels[j];
			if (j == lo->n) {
				lo->n++;
				memset(l, 0, sizeof(*l));
				memcpy(l->name, ls->name, sizeof(l->name));
				l->name[sizeof(l->name) - 1] = 0;
				l->retiring = true;
			}
			l->executing += in_use;
			l->may_use += most;
		}
	for (uint32_t i = 0; i < b->n; i++) {
		struct fg_cluster_local_level *l = &lo->levels[i];
		memcpy(l->name, b->names[i], sizeof(l->name));
		l->retiring = false;
		l->exempt = b->levels[i].exempt;
		l->limit = b->levels[i].nominal;
		l->in_force = fg_config_level_limit(cfg, i);
		l->executing = executing[i];
		l->may_use = may_use[i] > l->in_force ? may_use[i] : l->in_force;
		l->demand = b->demand[i] + (double)rejected[i];
	}
	fg_seq_write_end(&lo->seq);
}

/* The most seats worker w could use at level i (clustershare.h): what it
 * applies (its board share with any pending grant, or its own limit) or
 * holds, whichever is more. */
static uint32_t worker_may_use(const struct fg_config *cfg, const struct fg_level_stats *ls, unsigned w, uint32_t i)
{
	uint32_t most = FG_STAT_GET(ls->seats_in_use);
	if (cfg->board && i < cfg->board->n_levels && w < cfg->board->n_workers) {
		const struct fg_seat_share *s = &cfg->board->levels[i].shares[w];
		uint32_t applied = FG_STAT_GET(s->applied), grant = FG_STAT_GET(s->grant), used = FG_STAT_GET(s->used);
		most = most > applied ? most : applied;
		most = most > grant ? most : grant;
		most = most > used ? most : used;
	} else {
		uint32_t limit = FG_STAT_GET(ls->limit);
		most = most > limit ? most : limit;
	}
	return most;
}

static void sample(struct fg_borrower *b, const struct fg_config *cfg, struct fg_worker_stats *const *ws,
		   unsigned n_workers, uint64_t now)
{
	uint32_t executing[FG_MAX_LEVELS], may_use[FG_MAX_LEVELS];
	uint64_t rejected[FG_MAX_LEVELS];
	if (n_workers > FG_MAX_WORKER_CORES)
		n_workers = FG_MAX_WORKER_CORES;
	for (unsigned w = 0; w < n_workers; w++)
		map_slots(b, w, ws[w]);
	for (uint32_t i = 0; i < b->n; i++) {
		uint64_t seats = 0, in_use = 0, most = 0;
		rejected[i] = 0;
		for (unsigned w = 0; w < n_workers; w++) {
			uint16_t k = b->slot[w][i];
			if (k == FG_MAX_LEVELS)
				continue;
			const struct fg_level_stats *ls = &ws[w]->levels[k];
			uint32_t u = FG_STAT_GET(ls->seats_in_use);
			in_use += u;
			seats += u + FG_STAT_GET(ls->seats_waiting);
			if (b->cluster) {
				most += worker_may_use(cfg, ls, w, i);
				uint64_t now_rejected = FG_STAT_GET(ls->rejected), *seen = &b->cluster->rejected_seen[w][k];
				rejected[i] += now_rejected > *seen ? now_rejected - *seen : 0;
				*seen = now_rejected;
			}
		}
		b->demand[i] = (double)seats;
		fg_borrowing_demand_set(&b->levels[i].demand, now, (double)seats);
		executing[i] = in_use > UINT32_MAX ? UINT32_MAX : (uint32_t)in_use;
		may_use[i] = most > UINT32_MAX ? UINT32_MAX : (uint32_t)most;
	}
	if (b->cluster)
		publish_local(b, cfg, ws, n_workers, executing, may_use, rejected, now);
}

/* Cluster mode: the caps as the levels' limits when they changed (or the
 * levels did); once they expired, the smaller of each cap and its fallback. */
static void apply_caps(struct fg_borrower *b, const struct fg_config *cfg, bool fresh, uint64_t now)
{
	struct fg_clustershare *cs = b->cluster;
	uint64_t seq = __atomic_load_n(&cs->caps.seq, __ATOMIC_ACQUIRE);
	struct fg_cluster_caps *caps = &b->caps_scratch;
	bool expired = caps->expires_ns && now >= caps->expires_ns;
	if (!fresh && seq == cs->caps_applied_seq && expired == cs->caps_expired)
		return;
	if (!fg_seq_read(&cs->caps.seq, &cs->caps, caps, sizeof(*caps)))
		return; /* the next step tries again */
	expired = caps->expires_ns && now >= caps->expires_ns;
	for (uint32_t i = 0; i < b->n; i++)
		if (!b->levels[i].exempt) {
			const struct fg_cluster_cap *cap = fg_cluster_cap_of(caps, b->names[i]);
			/* Expired (the cluster thread is late, or this process was
			 * paused past its lease): never more than the last cap until
			 * an exchange has failed and the cluster thread says so. */
			uint32_t limit = !cap ? 0 : expired && cap->fallback < cap->cap ? cap->fallback : cap->cap;
			fg_config_set_level_limit(cfg, i, limit);
		}
	if (cfg->limits)
		__atomic_store_n(&cfg->limits->seq, cfg->limits->seq + 1, __ATOMIC_RELEASE);
	cs->caps_applied_seq = caps->seq;
	cs->caps_expired = expired;
}

int fg_borrower_round(struct fg_borrower *b, const struct fg_config *cfg, uint64_t now)
{
	if (b->generation != cfg->generation)
		follow(b, cfg, now);
	if (b->n == 0)
		return 0;
	uint64_t t0 = thread_cpu_ns();
	struct fg_borrowing_result res;
	int rc = fg_borrowing_round(b->levels, b->n, b->nominal_sum, now, &res);
	if (rc)
		return rc;
	if (!b->cluster) {
		for (uint32_t i = 0; i < b->n; i++)
			if (!b->levels[i].exempt)
				fg_config_set_level_limit(cfg, i, b->levels[i].current);
		if (cfg->limits)
			__atomic_store_n(&cfg->limits->seq, cfg->limits->seq + 1, __ATOMIC_RELEASE);
	}
	uint64_t t1 = thread_cpu_ns();
	b->last_round_ns = now;
	struct fg_borrower_view *v = &b->view;
	fg_seq_write_begin(&v->seq);
	v->generation = b->generation;
	v->period_ns = cfg->borrowing_period_ns;
	v->rounds++;
	v->backstops += res.backstop;
	v->round_ns = t1 - t0;
	v->last_round_ns = now;
	v->remaining = res.remaining;
	v->kase = res.kase;
	v->fair_frac = res.fair_frac;
	publish_levels(b);
	fg_seq_write_end(&v->seq);
	return 0;
}

bool fg_borrower_step(struct fg_borrower *b, const struct fg_config *cfg, struct fg_worker_stats *const *ws,
		      unsigned n_workers, uint64_t now)
{
	bool fresh = b->generation != cfg->generation;
	if (fresh)
		follow(b, cfg, now);
	if (now >= b->next_sample_ns) {
		sample(b, cfg, ws, n_workers, now);
		b->next_sample_ns = now + FG_BORROWING_SAMPLE_NS;
	}
	if (b->cluster)
		apply_caps(b, cfg, fresh, now);
	if (fresh || now - b->last_round_ns >= cfg->borrowing_period_ns)
		return fg_borrower_round(b, cfg, now) == 0;
	return false;
}

uint64_t fg_borrower_nap_ns(const struct fg_borrower *b, uint64_t now)
{
	return b->next_sample_ns > now ? b->next_sample_ns - now : 0;
}
