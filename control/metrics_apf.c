/* SPDX-License-Identifier: Apache-2.0 */
/* metrics_apf — see metrics_apf.h. */
#include "metrics_apf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backendpool.h"
#include "classguess.h"
#include "flowcontrol.h"
#include "endpoint.h"

#define NS_PER_S 1e9

/* --- per (level, schema), summed over the workers ------------------------- */

/* A pair of one worker, for the merge by names. */
struct pair_ref {
	const struct fg_apf_pair *p;
	unsigned worker;
	uint32_t index; /* in its worker's table */
};

static int by_names(const void *a, const void *b)
{
	const struct fg_apf_pair *x = ((const struct pair_ref *)a)->p, *y = ((const struct pair_ref *)b)->p;
	int c = strcmp(x->level, y->level);
	return c ? c : strcmp(x->schema, y->schema);
}

/* Every worker's (level, schema) pairs, sorted by names (refs holds
 * n_workers x FG_APF_PAIRS); how many. */
static size_t collect_pairs(struct fg_worker_stats *const *ws, unsigned n_workers, struct pair_ref *refs)
{
	size_t n = 0;
	for (unsigned w = 0; w < n_workers; w++)
		for (uint32_t i = 0; i < FG_APF_PAIRS; i++) {
			const struct fg_apf_pair *p = &ws[w]->apf.pairs[i];
			if (!__atomic_load_n(&p->used, __ATOMIC_ACQUIRE))
				break; /* taken in order, never given back */
			refs[n++] = (struct pair_ref){ p, w, i };
		}
	qsort(refs, n, sizeof(*refs), by_names);
	return n;
}

/* The sum of one pair's figures over the workers. */
struct pair_sum {
	const char *level, *schema;
	uint64_t dispatched, no_accommodation;
	uint64_t rejected[FG_REJECT__COUNT];
	uint64_t inqueue, inqueue_seats, executing, executing_seats;
	uint64_t bucket[FG_APF__HISTS][FG_APF_WAIT_BOUNDS + 1]; /* one row per histogram, for the writer */
	uint64_t sum[FG_APF__HISTS];
	uint64_t count[FG_APF__HISTS];
};

static void add_pair(struct pair_sum *s, const struct fg_apf_pair *p)
{
	s->level = p->level;
	s->schema = p->schema;
	s->no_accommodation += FG_STAT_GET(p->no_accommodation);
	for (int r = 0; r < FG_REJECT__COUNT; r++)
		s->rejected[r] += FG_STAT_GET(p->rejected[r]);
	/* Gauges: each worker's own is never below 0 (it adds before it takes). */
	s->inqueue += FG_STAT_GET(p->inqueue);
	s->inqueue_seats += FG_STAT_GET(p->inqueue_seats);
	s->executing += FG_STAT_GET(p->executing);
	s->executing_seats += FG_STAT_GET(p->executing_seats);
	for (int h = 0; h < FG_APF__HISTS; h++) {
		for (unsigned i = 0; i <= FG_APF_WAIT_BOUNDS; i++) {
			uint64_t c = FG_STAT_GET(p->bucket[i][h]);
			s->bucket[h][i] += c;
			s->count[h] += c;
		}
		s->sum[h] += FG_STAT_GET(p->sum[h]);
	}
	s->dispatched = s->count[FG_APF_WAIT_DISPATCHED];
}

/* The "(other)" pair is shown only once something was counted there. */
static bool worth_showing(const struct pair_sum *s)
{
	return strcmp(s->level, FG_APF_OTHER) || s->count[FG_APF_SEATS] || s->inqueue || s->executing ||
	       s->executing_seats;
}

/* One family: each pair's value of one field. */
enum field {
	F_DISPATCHED, F_NO_ACCOMMODATION, F_INQUEUE, F_INQUEUE_SEATS, F_EXECUTING, F_EXECUTING_SEATS,
};

static uint64_t field_of(const struct pair_sum *s, enum field f)
{
	switch (f) {
	case F_DISPATCHED: return s->dispatched;
	case F_NO_ACCOMMODATION: return s->no_accommodation;
	case F_INQUEUE: return s->inqueue;
	case F_INQUEUE_SEATS: return s->inqueue_seats;
	case F_EXECUTING: return s->executing;
	case F_EXECUTING_SEATS: return s->executing_seats;
	}
	return 0;
}

static const struct {
	const char *name, *help;
	enum fg_expfmt_type type;
	enum field field;
} pair_families[] = {
	/* Kubernetes' help texts, so that dashboards read the same. */
	{ "fairgate_flowcontrol_dispatched_requests_total", "Number of requests executed by API Priority and Fairness subsystem",
	  FG_EXPFMT_COUNTER, F_DISPATCHED },
	{ "fairgate_flowcontrol_request_dispatch_no_accommodation_total",
	  "Number of times a dispatch attempt resulted in a non accommodation due to lack of available seats "
	  "(fairgate: once per queue head that had to wait for seats)",
	  FG_EXPFMT_COUNTER, F_NO_ACCOMMODATION },
	{ "fairgate_flowcontrol_current_inqueue_requests", "Number of requests currently pending in queues of the API Priority and Fairness subsystem",
	  FG_EXPFMT_GAUGE, F_INQUEUE },
	{ "fairgate_flowcontrol_current_inqueue_seats", "Number of seats currently pending in queues of the API Priority and Fairness subsystem",
	  FG_EXPFMT_GAUGE, F_INQUEUE_SEATS },
	{ "fairgate_flowcontrol_current_executing_requests", "Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem",
	  FG_EXPFMT_GAUGE, F_EXECUTING },
	{ "fairgate_flowcontrol_current_executing_seats", "Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem",
	  FG_EXPFMT_GAUGE, F_EXECUTING_SEATS },
};

/* Histogram h of a pair, with its bounds (seconds for durations). */
static void write_hist(struct fg_expfmt *e, const char *name, const struct fg_expfmt_label *l, unsigned n,
		       const struct pair_sum *s, enum fg_apf_hist h)
{
	double bounds[FG_APF_WAIT_BOUNDS];
	bool duration = h <= FG_APF_EXECUTION;
	unsigned nb = duration ? FG_APF_WAIT_BOUNDS : FG_APF_COUNT_BOUNDS;
	for (unsigned i = 0; i < nb; i++)
		bounds[i] = duration ? (double)fg_apf_duration_bounds_ns[i] / NS_PER_S
			: h == FG_APF_SEATS ? fg_apf_seats_bounds[i] : fg_apf_queue_length_bounds[i];
	fg_expfmt_histogram(e, name, l, n, bounds, s->bucket[h], nb,
			    duration ? (double)s->sum[h] / NS_PER_S : (double)s->sum[h]);
}

static void write_pairs(struct fg_expfmt *e, const struct pair_sum *sums, size_t n)
{
	for (size_t f = 0; f < sizeof(pair_families) / sizeof(pair_families[0]); f++) {
		fg_expfmt_family(e, pair_families[f].name, pair_families[f].type, pair_families[f].help);
		for (size_t i = 0; i < n; i++) {
			struct fg_expfmt_label l[2] = { { "priority_level", sums[i].level }, { "flow_schema", sums[i].schema } };
			fg_expfmt_u64(e, pair_families[f].name, l, 2, field_of(&sums[i], pair_families[f].field));
		}
	}
	const char *rej = "fairgate_flowcontrol_rejected_requests_total";
	fg_expfmt_family(e, rej, FG_EXPFMT_COUNTER, "Number of requests rejected by API Priority and Fairness subsystem");
	for (size_t i = 0; i < n; i++)
		for (int r = 1; r < FG_REJECT__COUNT; r++) {
			if (!sums[i].rejected[r]) /* as Kubernetes: a reason appears with its first reject */
				continue;
			struct fg_expfmt_label l[3] = { { "priority_level", sums[i].level },
							{ "flow_schema", sums[i].schema },
							{ "reason", fg_reject_reason_name(r) } };
			fg_expfmt_u64(e, rej, l, 3, sums[i].rejected[r]);
		}
	const char *wait = "fairgate_flowcontrol_request_wait_duration_seconds";
	fg_expfmt_family(e, wait, FG_EXPFMT_HISTOGRAM, "Length of time a request spent waiting in its queue");
	for (size_t i = 0; i < n; i++)
		for (int x = 0; x < 2; x++) {
			struct fg_expfmt_label l[3] = { { "priority_level", sums[i].level },
							{ "flow_schema", sums[i].schema },
							{ "execute", x ? "true" : "false" } };
			write_hist(e, wait, l, 3, &sums[i], x ? FG_APF_WAIT_DISPATCHED : FG_APF_WAIT_REJECTED);
		}
	const char *exec = "fairgate_flowcontrol_request_execution_seconds";
	fg_expfmt_family(e, exec, FG_EXPFMT_HISTOGRAM, "Duration of initial stage (for a WATCH) or any (for a non-WATCH) stage of request execution in the API Priority and Fairness subsystem");
	for (size_t i = 0; i < n; i++) {
		struct fg_expfmt_label l[3] = { { "priority_level", sums[i].level }, { "flow_schema", sums[i].schema },
						{ "type", "regular" } };
		write_hist(e, exec, l, 3, &sums[i], FG_APF_EXECUTION);
	}
	const char *qlen = "fairgate_flowcontrol_request_queue_length_after_enqueue";
	fg_expfmt_family(e, qlen, FG_EXPFMT_HISTOGRAM, "Length of queue in the API Priority and Fairness subsystem, as seen by each request after it is enqueued");
	for (size_t i = 0; i < n; i++) {
		struct fg_expfmt_label l[2] = { { "priority_level", sums[i].level }, { "flow_schema", sums[i].schema } };
		write_hist(e, qlen, l, 2, &sums[i], FG_APF_QUEUE_LENGTH);
	}
	const char *seats = "fairgate_flowcontrol_work_estimated_seats";
	fg_expfmt_family(e, seats, FG_EXPFMT_HISTOGRAM, "Number of estimated seats (maximum of initial and final seats) associated with requests in API Priority and Fairness");
	for (size_t i = 0; i < n; i++) {
		struct fg_expfmt_label l[2] = { { "priority_level", sums[i].level }, { "flow_schema", sums[i].schema } };
		write_hist(e, seats, l, 2, &sums[i], FG_APF_SEATS);
	}
}

void fg_metrics_flowcontrol(struct fg_expfmt *e, struct fg_worker_stats *const *ws, unsigned n_workers)
{
	if (!n_workers || !FG_STAT_GET(ws[0]->apf_metrics))
		return;
	size_t cap = (size_t)n_workers * FG_APF_PAIRS, n = 0;
	struct pair_ref *refs = malloc(cap * sizeof(*refs));
	struct pair_sum *sums = NULL;
	if (!refs) {
		fg_expfmt_family(e, "fairgate_flowcontrol_dispatched_requests_total", FG_EXPFMT_COUNTER,
				 "(no memory for the per-schema metrics in this scrape)");
		return;
	}
	n = collect_pairs(ws, n_workers, refs);
	sums = calloc(n ? n : 1, sizeof(*sums)); /* at most one sum per pair seen */
	if (!sums) {
		free(refs);
		fg_expfmt_family(e, "fairgate_flowcontrol_dispatched_requests_total", FG_EXPFMT_COUNTER,
				 "(no memory for the per-schema metrics in this scrape)");
		return;
	}
	size_t n_sums = 0;
	for (size_t i = 0; i < n; i++) {
		if (i && by_names(&refs[i - 1], &refs[i]))
			n_sums++;
		add_pair(&sums[n_sums], refs[i].p);
	}
	n_sums += n ? 1 : 0;
	size_t shown = 0;
	for (size_t i = 0; i < n_sums; i++)
		if (worth_showing(&sums[i]))
			sums[shown++] = sums[i];
	write_pairs(e, sums, shown);
	free(refs);
	free(sums);
}

/* --- virtual time, busy ratio ------------------------------------------------ */

void fg_metrics_virtual_time(struct fg_expfmt *e, struct fg_worker_stats *const *ws, unsigned n_workers)
{
	if (!n_workers || !FG_STAT_GET(ws[0]->apf_metrics)) /* flowcontrolMetrics false: none of the set */
		return;
	static const struct {
		const char *name, *help;
	} fam[] = {
		{ "fairgate_flowcontrol_current_r", "R, in seat-seconds (fairgate: per worker's queue set of the level)" },
		{ "fairgate_flowcontrol_dispatch_r", "R at the last dispatch, in seat-seconds (fairgate: per worker)" },
		{ "fairgate_flowcontrol_epoch_advance_total", "Number of times the queueset's progress meter jumped backward (fairgate: wraps of its 64-bit R)" },
	};
	for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
		fg_expfmt_family(e, fam[f].name, f == 2 ? FG_EXPFMT_COUNTER : FG_EXPFMT_GAUGE, fam[f].help);
		for (unsigned w = 0; w < n_workers; w++) {
			char id[12];
			snprintf(id, sizeof(id), "%u", w);
			for (uint32_t i = 0; i < FG_MAX_LEVELS; i++) {
				const struct fg_level_stats *ls = &ws[w]->levels[i];
				if (!__atomic_load_n(&ls->used, __ATOMIC_ACQUIRE))
					continue;
				uint64_t wraps = FG_STAT_GET(ls->r_wraps);
				struct fg_expfmt_label l[3] = { { "priority_level", ls->name }, { "worker", id },
								{ "success", "true" } };
				if (f == 2) {
					fg_expfmt_u64(e, fam[f].name, l, 3, wraps);
					continue;
				}
				uint64_t r = f == 0 ? FG_STAT_GET(ls->current_r) : FG_STAT_GET(ls->dispatch_r);
				/* seat-ns wrapping every 2^64: whole wraps, then the rest */
				fg_expfmt_double(e, fam[f].name, l, 2, ((double)wraps * 18446744073709551616.0 + (double)r) / NS_PER_S);
			}
		}
	}
}

static double polls_of(const struct fg_worker_stats *s) { return (double)FG_STAT_GET(s->polls); }
static double busy_polls_of(const struct fg_worker_stats *s) { return (double)FG_STAT_GET(s->busy_polls); }
static double busy_ratio_of(const struct fg_worker_stats *s) { return FG_STAT_GET(s->busy_ppm) / 1e6; }

void fg_metrics_busy(struct fg_expfmt *e, struct fg_worker_stats *const *ws, unsigned n_workers)
{
	static const struct {
		const char *name, *help;
		enum fg_expfmt_type type;
		double (*value)(const struct fg_worker_stats *);
	} fam[] = {
		{ "fairgate_worker_polls_total", "Iterations of the worker's poll loop.", FG_EXPFMT_COUNTER, polls_of },
		{ "fairgate_worker_busy_polls_total", "Iterations of the worker's poll loop that received datagrams.",
		  FG_EXPFMT_COUNTER, busy_polls_of },
		{ "fairgate_worker_busy_ratio",
		  "Share of the worker's poll iterations that received datagrams, over the last second.",
		  FG_EXPFMT_GAUGE, busy_ratio_of },
	};
	for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
		fg_expfmt_family(e, fam[f].name, fam[f].type, fam[f].help);
		for (unsigned w = 0; w < n_workers; w++) {
			char id[12];
			snprintf(id, sizeof(id), "%u", w);
			struct fg_expfmt_label l = { "worker", id };
			fg_expfmt_double(e, fam[f].name, &l, 1, fam[f].value(ws[w]));
		}
	}
}

/* --- work estimates ---------------------------------------------------------- */

void fg_metrics_work_estimates(struct fg_expfmt *e, const struct fg_config *cfg, struct fg_worker_stats *const *ws,
			       unsigned n_workers)
{
	if (!cfg->work_per_class)
		return;
	const char *name = "fairgate_work_estimate_seconds";
	fg_expfmt_family(e, name, FG_EXPFMT_GAUGE,
			 "The service time a (priority level, flow schema, verb class) is priced with in its queue "
			 "(workEstimates PerClass: learned at completion, within workEstimateMin/Max; the largest over "
			 "the workers).");
	/* Queued levels only (exempt ones are not priced), as the levels' totals say. */
	struct fg_level_total *t = calloc(FG_MAX_LEVELS, sizeof(*t));
	struct pair_ref *refs = malloc((size_t)n_workers * FG_APF_PAIRS * sizeof(*refs));
	if (!t || !refs) {
		free(t);
		free(refs);
		return;
	}
	unsigned n_levels = fg_stats_levels_total(ws, n_workers, t, FG_MAX_LEVELS);
	size_t n = collect_pairs(ws, n_workers, refs);
	for (size_t first = 0, end; first < n; first = end) {
		/* refs[first, end): one pair's entries at the workers. */
		for (end = first + 1; end < n && !by_names(&refs[first], &refs[end]); end++)
			;
		const struct fg_apf_pair *p = refs[first].p;
		bool queued = false;
		for (unsigned k = 0; k < n_levels && !queued; k++)
			queued = t[k].live && t[k].limit && !strcmp(t[k].name, p->level);
		for (unsigned c = 0; queued && c < FG_VERB_CLASSES; c++) {
			uint64_t most = 0;
			for (size_t r = first; r < end; r++) {
				uint64_t v = FG_STAT_GET(ws[refs[r].worker]->work_estimate_ns[fg_classguess_index(refs[r].index, c)]);
				most = v > most ? v : most;
			}
			if (!most)
				continue;
			struct fg_expfmt_label l[3] = { { "priority_level", p->level },
							{ "flow_schema", p->schema },
							{ "verb", fg_verb_class_name(c) } };
			fg_expfmt_double(e, name, l, 3, (double)most / 1e9);
		}
	}
	free(refs);
	free(t);
}

/* --- backends --------------------------------------------------------------- */

void fg_metrics_backends(struct fg_expfmt *e, const struct fg_config *cfg, struct fg_worker_stats *const *ws,
			 unsigned n_workers)
{
	static const char *const state_names[] = { [FG_BACKEND_UP] = "up", [FG_BACKEND_EJECTED] = "ejected",
						   [FG_BACKEND_PROBING] = "probing" };
	_Static_assert(sizeof(state_names) / sizeof(state_names[0]) == sizeof(((struct fg_backend_total *)0)->in_state) /
		       sizeof(unsigned), "a name per state");
	const char *scl = "fairgate_server_concurrency_limit";
	fg_expfmt_family(e, scl, FG_EXPFMT_GAUGE,
			 "The seats the priority levels share now: serverConcurrencyLimit scaled by the backends' usable "
			 "capacity, or in Adaptive mode the learned limits' sum within serverConcurrencyLimitMin/Max.");
	fg_expfmt_u64(e, scl, NULL, 0, fg_stats_seat_limit_in_force(ws, n_workers, cfg->seat_limit));
	uint32_t n = cfg->n_backends;
	char (*addr)[64] = calloc(n ? n : 1, sizeof(*addr));
	struct fg_backend_total *t = calloc(n ? n : 1, sizeof(*t));
	if (!addr || !t) {
		free(addr);
		free(t);
		return;
	}
	for (uint32_t b = 0; b < n; b++) {
		fg_endpoint_format(&cfg->backends[b].ep, addr[b], sizeof(addr[b]));
		fg_stats_backend_total(ws, n_workers, b, &t[b]);
	}
	static const struct {
		const char *name, *help;
		enum fg_expfmt_type type;
		size_t offset; /* of a uint64_t in struct fg_backend_total */
	} fam[] = {
		{ "fairgate_backend_outstanding_seats", "Seats of requests executing at the backend, over the workers.",
		  FG_EXPFMT_GAUGE, offsetof(struct fg_backend_total, outstanding) },
		{ "fairgate_backend_capacity_seats",
		  "The backend's capacity in force, over the workers: seats=N, or in Adaptive mode the learned limit "
		  "(the minimum during a probe); 0: no limit.",
		  FG_EXPFMT_GAUGE, offsetof(struct fg_backend_total, capacity) },
		{ "fairgate_backend_dispatched_total", "Requests sent to the backend.", FG_EXPFMT_COUNTER,
		  offsetof(struct fg_backend_total, dispatched) },
		{ "fairgate_backend_timeouts_total", "Requests the backend did not answer within backendTimeout.",
		  FG_EXPFMT_COUNTER, offsetof(struct fg_backend_total, timeouts) },
		{ "fairgate_backend_ejections_total", "Times a worker ejected the backend.", FG_EXPFMT_COUNTER,
		  offsetof(struct fg_backend_total, ejections) },
		{ "fairgate_backend_adaptive_limit_seats",
		  "Adaptive mode: the backend's learned concurrency limit, over the workers (0: Static mode).",
		  FG_EXPFMT_GAUGE, offsetof(struct fg_backend_total, learned_limit) },
		{ "fairgate_backend_stalls_total",
		  "Times a worker saw the backend stall: requests outstanding, no answer for 8 times its learned latency.",
		  FG_EXPFMT_COUNTER, offsetof(struct fg_backend_total, stalls) },
	};
	for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
		fg_expfmt_family(e, fam[f].name, fam[f].type, fam[f].help);
		for (uint32_t b = 0; b < n; b++) {
			struct fg_expfmt_label l = { "backend", addr[b] };
			if (cfg->backends[b].admin != FG_BACKEND_REMOVED)
				fg_expfmt_u64(e, fam[f].name, &l, 1,
					      *(const uint64_t *)((const char *)&t[b] + fam[f].offset));
		}
	}
	const char *st = "fairgate_backend_state";
	fg_expfmt_family(e, st, FG_EXPFMT_GAUGE, "Workers that see the backend in each state (up, ejected, probing).");
	for (uint32_t b = 0; b < n; b++)
		for (int s = 0; s < 3 && cfg->backends[b].admin != FG_BACKEND_REMOVED; s++) {
			struct fg_expfmt_label l[2] = { { "backend", addr[b] }, { "state", state_names[s] } };
			fg_expfmt_u64(e, st, l, 2, t[b].in_state[s]);
		}
	const char *stl = "fairgate_backend_stalled";
	fg_expfmt_family(e, stl, FG_EXPFMT_GAUGE,
			 "Workers that see the backend stalled (it gets no new request while another is up).");
	const char *lat = "fairgate_backend_latency_seconds";
	fg_expfmt_family(e, lat, FG_EXPFMT_GAUGE,
			 "The backend's learned answer latency (the largest over the workers; 0: not learned yet).");
	for (uint32_t b = 0; b < n; b++) {
		struct fg_expfmt_label l = { "backend", addr[b] };
		if (cfg->backends[b].admin == FG_BACKEND_REMOVED)
			continue;
		fg_expfmt_u64(e, stl, &l, 1, t[b].stalled);
		fg_expfmt_double(e, lat, &l, 1, (double)t[b].latency_ns / 1e9);
	}
	const char *nl = "fairgate_backend_noload_latency_seconds";
	fg_expfmt_family(e, nl, FG_EXPFMT_GAUGE,
			 "Adaptive mode: the backend's no-load latency as its last probe measured it (narrow requests; "
			 "the largest over the workers; 0: not measured).");
	for (uint32_t b = 0; b < n; b++) {
		struct fg_expfmt_label l = { "backend", addr[b] };
		if (cfg->backends[b].admin != FG_BACKEND_REMOVED)
			fg_expfmt_double(e, nl, &l, 1, (double)t[b].noload_ns / 1e9);
	}
	const char *mv = "fairgate_backend_adaptive_limit_decisions_total";
	fg_expfmt_family(e, mv, FG_EXPFMT_COUNTER,
			 "Adaptive mode: the limit controller's decisions by reason (grow, cut, timeout, hold; probe, "
			 "probed: a probe of the no-load latency started, ended), summed over the workers.");
	for (uint32_t b = 0; b < n; b++)
		for (unsigned r = FG_ADAPT_HOLD; r < FG_ADAPT_REASONS && cfg->backends[b].admin != FG_BACKEND_REMOVED; r++) {
			struct fg_expfmt_label l[2] = { { "backend", addr[b] }, { "reason", fg_adapt_reason_name(r) } };
			fg_expfmt_u64(e, mv, l, 2, t[b].limit_moves[r]);
		}
	/* Removed backends are left out: their slots linger only for answers in flight. */
	const char *adm = "fairgate_backend_admin_state";
	fg_expfmt_family(e, adm, FG_EXPFMT_GAUGE,
			 "1 for the backend's administrative state (enabled, drain, disabled; fairgatectl backend).");
	for (uint32_t b = 0; b < n; b++)
		for (unsigned a = 0; a < FG_BACKEND_REMOVED && cfg->backends[b].admin != FG_BACKEND_REMOVED; a++) {
			struct fg_expfmt_label l[2] = { { "backend", addr[b] }, { "admin", fg_backend_admin_name(a) } };
			fg_expfmt_u64(e, adm, l, 2, cfg->backends[b].admin == a);
		}
	free(addr);
	free(t);
}
