/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_scrape — the cost of one /metrics body (fg_http_metrics) at the
 * bounds a daemon can reach: every runtime level slot in use (256) on each
 * worker, a full (level, schema) table (512 pairs, every histogram bucket
 * non-zero), 64 backends, 4 workers.  The HTTP thread builds the body; the
 * workers never wait for it (they only store their counters), so this is
 * the latency of a scrape, not a cost on the fast path.
 *
 * Prints min and median of the runs in ms, and the body's size and samples.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <urcu-qsbr.h>

#include "config.h"
#include "flowcontrol.h"
#include "http.h"

#define WORKERS 4u
#define RUNS 21

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Statistics as full as they get, with every figure non-zero. */
static void fill(struct fg_worker_stats *s, unsigned w)
{
	fg_stats_init(s);
	for (unsigned l = 0; l < FG_MAX_LEVELS; l++) {
		struct fg_level_stats *ls = &s->levels[l];
		snprintf(ls->name, sizeof(ls->name), "priority-level-%03u", l);
		ls->used = ls->live = 1;
		ls->limit = 10;
		ls->received = ls->dispatched = 1000 + l;
		ls->current_r = ls->dispatch_r = 123456789ull * (l + 1);
	}
	for (unsigned p = 1; p < FG_APF_PAIRS; p++) {
		char level[32], schema[32];
		snprintf(level, sizeof(level), "priority-level-%03u", p % FG_MAX_LEVELS);
		snprintf(schema, sizeof(schema), "flow-schema-%03u", p);
		struct fg_apf_pair *x = &s->apf.pairs[fg_apf_pair(&s->apf, level, schema)];
		x->no_accommodation = 1000 * p + w;
		for (int r = 1; r < FG_REJECT__COUNT; r++)
			x->rejected[r] = (uint64_t)r;
		for (unsigned b = 0; b <= FG_APF_WAIT_BOUNDS; b++)
			for (int k = 0; k < FG_APF__HISTS; k++)
				x->bucket[b][k] = b <= FG_APF_COUNT_BOUNDS || k <= FG_APF_EXECUTION ? b + 1 : 0;
	}
	s->n_backends = FG_MAX_BACKENDS;
	for (unsigned b = 0; b < FG_MAX_BACKENDS; b++)
		s->backends[b].outstanding = b;
}

int main(int argc, char **argv)
{
	int runs = argc > 1 && !strcmp(argv[1], "--quick") ? 5 : RUNS;
	struct fg_settings settings;
	fg_settings_defaults(&settings);
	for (unsigned b = 0; b < FG_MAX_BACKENDS; b++) {
		char ep[32];
		snprintf(ep, sizeof(ep), "127.0.%u.%u:7501", b / 250, 1 + b % 250);
		fg_endpoint_parse(ep, &settings.backends[b].ep);
	}
	settings.n_backends = FG_MAX_BACKENDS;
	struct fg_fc_set *objects = fg_fc_set_bootstrap();
	struct fg_errors e = { .len = 0 };
	struct fg_config *config = fg_config_build(&settings, fg_fc_compile(objects, settings.seat_limit, &e), 1);
	fg_fc_set_free(objects);
	struct fg_worker_stats *stats[WORKERS];
	for (unsigned w = 0; w < WORKERS; w++) {
		stats[w] = calloc(1, sizeof(*stats[w]));
		if (!stats[w] || !config) {
			fprintf(stderr, "bench_scrape: out of memory\n");
			return 1;
		}
		fill(stats[w], w);
	}
	int shutting_down = 0;
	struct fg_http_view view = { .config_ptr = &config, .worker_stats = stats, .n_workers = WORKERS,
				     .shutting_down = &shutting_down };
	rcu_register_thread();
	rcu_thread_offline();
	double ms[RUNS];
	size_t len = 0, samples = 0;
	for (int i = 0; i < runs; i++) {
		int err = 0;
		double t0 = now_ms();
		char *body = fg_http_metrics(&view, &len, &err);
		ms[i] = now_ms() - t0;
		if (!body) {
			fprintf(stderr, "bench_scrape: the body failed: %d\n", err);
			return 1;
		}
		samples = 0;
		for (const char *p = body; *p; p = strchr(p, '\n') + 1)
			samples += *p != '#';
		free(body);
	}
	qsort(ms, (size_t)runs, sizeof(ms[0]), by_value);
	printf("scrape: %u workers x %u level slots, %u (level, schema) pairs, %u backends: %zu bytes, %zu samples\n",
	       WORKERS, FG_MAX_LEVELS, FG_APF_PAIRS - 1, FG_MAX_BACKENDS, len, samples);
	printf("scrape body: min %.1f ms, median %.1f ms over %d runs\n", ms[0], ms[runs / 2], runs);
	rcu_unregister_thread();
	for (unsigned w = 0; w < WORKERS; w++)
		free(stats[w]);
	fg_config_free(config);
	return 0;
}
