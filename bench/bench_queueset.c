/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_queueset — cost of one request's full cycle through the queue set
 * (arrival + dispatch + completion) with N non-empty queues, N from the
 * command line (default 1k, 10k, 100k, 1M), widths 1 or mixed 1..4, for
 * each fair-sharing variant: MaxMin without weights; weighted with every
 * flow at weight 1 (the weighted water level's own cost); weighted with
 * flow weights 1, 2 or 4 by queue (the ordering that weights make: a
 * served queue no longer goes back near the tail); UsageBased.
 *
 * Each queue holds `depth` waiting requests; every iteration dispatches the
 * next request (skip-list minimum), completes it, and sends the same flow's
 * next request into its queue, so exactly N queues stay non-empty and every
 * operation is on the measured path.  Virtual time advances 1 us per step.
 * Reports ns/op (CLOCK_MONOTONIC) and cycles/op (TSC) per configuration.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#include "queueset.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct result {
	double ns, cycles;
};

enum variant { PLAIN, WEIGHTS_EQUAL, WEIGHTS_124, USAGE, N_VARIANTS };
static const char *const variant_names[N_VARIANTS] = { "maxmin", "w=1", "w=1,2,4", "usage" };

static inline uint32_t weight_of(uint32_t queue, enum variant v)
{
	return v == WEIGHTS_124 ? FG_QS_WEIGHT_ONE << (queue % 3) : FG_QS_WEIGHT_ONE;
}

static struct result run(uint32_t queues, int mixed, enum variant v, uint64_t iters, unsigned depth)
{
	struct fg_qs_config c = { .mode = FG_QS_QUEUE, .queues = queues, .hand_size = 1,
				  .queue_length_limit = depth + 1, .concurrency_limit = 64, .seed = 3,
				  .initial_guess_ns = 500, .weighted = v == WEIGHTS_EQUAL || v == WEIGHTS_124,
				  .usage_based = v == USAGE,
				  /* the defaults: a fold per second of virtual time (1M steps of 1 us) */
				  .usage = { .half_life_ns = 300000000000ull, .sampling_ns = 1000000000ull,
					     .reset_ns = 3000000000000ull } };
	struct fg_queueset qs;
	struct result res = { 0, 0 };
	if (fg_qs_init(&qs, &c, 0))
		return res;
	size_t n = (size_t)queues * depth;
	struct fg_qs_req *reqs = calloc(n, sizeof(*reqs));
	if (!reqs) {
		fg_qs_fini(&qs);
		return res;
	}
	uint64_t t = 1;
	unsigned seed = 11;
	/* A request holding every seat first, so that the fill queues instead of
	 * starting at once; it completes before the measurement. */
	struct fg_qs_req blocker;
	fg_qs_arrive(&qs, &blocker, 0, (uint16_t)c.concurrency_limit, 0, 0, t);
	for (size_t i = 0; i < n; i++) {
		uint16_t w = mixed ? (uint16_t)(1 + rand_r(&seed) % 4) : 1;
		fg_qs_arrive_weighted(&qs, &reqs[i], (uint32_t)(i % queues), i % queues, w, 0, 0,
				      weight_of((uint32_t)(i % queues), v), t);
	}
	fg_qs_finish(&qs, &blocker, t + 500); /* a typical duration: no skew of the learned guess */
	/* Warm up for two rounds over all queues (the steady state, where a
	 * served queue goes back near the tail), then measure. */
	for (int phase = 0; phase < 2; phase++) {
		uint64_t count = phase ? iters : 2 * (uint64_t)queues + iters / 10;
		double t0 = now_s();
		uint64_t c0 = __rdtsc();
		for (uint64_t i = 0; i < count; i++) {
			t += 1000;
			struct fg_qs_req *r = fg_qs_dispatch_next(&qs, t);
			uint32_t q = r->queue;
			uint16_t w = r->initial_seats;
			fg_qs_finish(&qs, r, t + 500);
			fg_qs_arrive_weighted(&qs, r, q, q, w, 0, 0, weight_of(q, v), t + 500);
		}
		uint64_t c1 = __rdtsc();
		double t1 = now_s();
		if (phase) {
			res.ns = (t1 - t0) * 1e9 / (double)count;
			res.cycles = (double)(c1 - c0) / (double)count;
		}
	}
	free(reqs);
	fg_qs_fini(&qs);
	return res;
}

int main(int argc, char **argv)
{
	uint32_t sizes[8] = { 1000, 10000, 100000, 1000000 };
	int n_sizes = 4;
	uint64_t iters = 2000000;
	int json = 0, one_mixed = -1, one_variant = -1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "--quick"))
			iters = 300000;
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--queues") && i + 1 < argc) {
			n_sizes = 0;
			for (char *tok = strtok(argv[++i], ","); tok && n_sizes < 8; tok = strtok(NULL, ","))
				sizes[n_sizes++] = (uint32_t)strtoul(tok, NULL, 10);
		} else if (!strcmp(argv[i], "--one") && i + 2 < argc) { /* one configuration: for profiles */
			one_mixed = !strcmp(argv[++i], "mixed");
			for (int v = 0; v < N_VARIANTS; v++)
				if (!strcmp(argv[i + 1], variant_names[v]))
					one_variant = v;
			i++;
			if (one_variant < 0)
				return 2;
		} else {
			fprintf(stderr, "usage: bench_queueset [--queues N,N,...] [--iters N] [--quick] [--json]\n"
					"                      [--one 1|mixed maxmin|w=1|w=1,2,4|usage]\n");
			return 2;
		}
	}
	if (one_variant >= 0) {
		for (int s = 0; s < n_sizes; s++) {
			struct result one = run(sizes[s], one_mixed, (enum variant)one_variant, iters, 2);
			printf("%-12u %-8s %-8s %12.1f %14.0f\n", sizes[s], one_mixed ? "mixed" : "1",
			       variant_names[one_variant], one.ns, one.cycles);
		}
		return 0;
	}
	/* r[size][mixed][variant]; the variants alternate per size so that
	 * all see the same machine. */
	struct result r[8][2][N_VARIANTS] = { { { { 0, 0 } } } };
	for (int s = 0; s < n_sizes; s++)
		for (int m = 0; m < 2; m++)
			for (int v = 0; v < N_VARIANTS; v++)
				r[s][m][v] = run(sizes[s], m, (enum variant)v, iters, 2);
	if (json) {
		printf("{\"iterations\": %llu, \"results\": [", (unsigned long long)iters);
		for (int s = 0; s < n_sizes; s++)
			for (int m = 0; m < 2; m++)
				for (int v = 0; v < N_VARIANTS; v++)
					printf("%s{\"queues\": %u, \"widths\": \"%s\", \"variant\": \"%s\", "
					       "\"nsPerRequest\": %.1f, \"cyclesPerRequest\": %.0f}",
					       s || m || v ? ", " : "", sizes[s], m ? "mixed" : "1", variant_names[v],
					       r[s][m][v].ns, r[s][m][v].cycles);
		printf("], \"ratioLargestToSmallest\": %.2f}\n", r[n_sizes - 1][0][0].ns / r[0][0][0].ns);
		return 0;
	}
	printf("%-12s %-8s %-8s %12s %14s %10s\n", "queues", "widths", "variant", "ns/request", "cycles/request",
	       "/maxmin");
	for (int s = 0; s < n_sizes; s++)
		for (int m = 0; m < 2; m++)
			for (int v = 0; v < N_VARIANTS; v++)
				printf("%-12u %-8s %-8s %12.1f %14.0f %10.3f\n", sizes[s], m ? "mixed" : "1",
				       variant_names[v], r[s][m][v].ns, r[s][m][v].cycles,
				       r[s][m][v].cycles / r[s][m][0].cycles);
	printf("cost at %u queues / cost at %u queues (width 1): %.2f\n", sizes[n_sizes - 1], sizes[0],
	       r[n_sizes - 1][0][0].ns / r[0][0][0].ns);
	return 0;
}
