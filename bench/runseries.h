/* SPDX-License-Identifier: Apache-2.0 */
/*
 * runseries — what one run of a scenario recorded: per 100 ms bin, each
 * flow's requests, answers, rejects and latency percentiles (from loadgen's
 * interval lines) and its seats executing in fairgate, each level's seats in
 * use and limit, and fairgate's rejects by reason (from the daemon's status
 * samples); per flow, the totals and the merged latency histogram (from
 * loadgen's result lines), and the same histogram over the run after the
 * scenario's `settle` time (from the interval lines' histograms); the
 * backends' side per bin: the limit in force, the backends' capacity in
 * force and learned limits summed (status), and their real capacity (the
 * scenario's, fg_scn_capacity_at).  The lines are loadgen's `--json
 * --interval` output as docs/bench.md ("run") describes it.
 *
 * Invariants: bins are FG_SERIES_BIN_NS wide from the run's start; a bin
 * index outside [0, n_bins) is dropped, never written; names are copied and
 * bounded; histogram buckets stay sorted by their low edge and never exceed
 * FG_SERIES_MAX_BUCKETS (a line that would is counted in `dropped_buckets`).
 *
 * Thread contract: one thread (the runner's loop) writes and then reads.
 */
#ifndef FG_RUNSERIES_H
#define FG_RUNSERIES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"
#include "scenario.h"

#define FG_SERIES_BIN_NS 100000000LL
#define FG_SERIES_MAX_LEVELS 32
#define FG_SERIES_MAX_BUCKETS 8192
#define FG_SERIES_NAME_MAX 128

struct fg_series_bin {
	uint64_t sent, responses, rejected, lost;
	double p50, p90, p99, p999; /* ms; NAN when the bin had no answer */
	double seats;               /* seats executing in fairgate, sampled (or estimated); NAN: none */
};

struct fg_series_bucket {
	double low_us, high_us;
	uint64_t count;
};

struct fg_series_flow {
	/* Where fairgate puts the flow (from `explain`). */
	char level[FG_SERIES_NAME_MAX], distinguisher[FG_SERIES_NAME_MAX];
	double weight;
	bool exempt;
	/* fairgate does not tell this flow apart from another scenario flow
	 * (the baseline's single queue has no distinguisher): its seats are
	 * estimated as responses/s x mean service time x width. */
	bool seats_estimated;
	/* Totals over the run's steps (result lines). */
	uint64_t sent, responses, lost, rejected[FG_REJECT__COUNT];
	double answer_seconds;        /* sum of the steps' durations, for responses/s */
	double reject_p99_ms;         /* the largest of the steps' reject p99s */
	struct fg_series_bucket *hist;
	size_t n_hist, cap_hist;
	/* The answers of the intervals from the scenario's settle time on
	 * (interval lines' histogramUs); empty when the scenario has none. */
	struct fg_series_bucket *settled;
	size_t n_settled, cap_settled;
	struct fg_series_bin *bins;
};

struct fg_series_level {
	char name[FG_SERIES_NAME_MAX];
	double *in_use, *limit; /* per bin; NAN: no sample */
};

struct fg_series {
	const char *name; /* "fairgate" or "baseline" */
	const struct fg_scenario *scn;
	size_t n_bins;
	struct fg_series_flow flows[FG_SCN_MAX_FLOWS];
	struct fg_series_level levels[FG_SERIES_MAX_LEVELS];
	unsigned n_levels;
	double *rejects_per_s[FG_REJECT__COUNT]; /* fairgate's, per bin */
	/* The backends, per bin (NAN: no sample): serverConcurrencyLimitInForce
	 * (what the levels share), the backends' capacitySeats summed (seats=N,
	 * or the learned limit in Adaptive mode), their learnedLimitSeats summed
	 * (Adaptive mode only), and their real capacity (the scenario's). */
	double *limit_in_force, *capacity_sum, *learned_sum, *real_capacity;
	uint64_t last_rejected[FG_REJECT__COUNT];
	bool have_last;
	uint64_t bad_lines, dropped_buckets;
};

/* A series for scn's duration; NULL without memory. */
struct fg_series *fg_series_new(const struct fg_scenario *scn, const char *name);
void fg_series_free(struct fg_series *s);

/* One line of loadgen output from a step that started offset_ns after the
 * run's start; the step's duration (for responses/s) comes with its result
 * line.  Returns 0, or -EINVAL for a line that is not the contract's (counted). */
int fg_series_loadgen_line(struct fg_series *s, const char *line, size_t len, int64_t offset_ns, double step_s);

/* Marks the flows whose seats fairgate cannot show apart: those sharing
 * their fairgate flow with another, and tenant templates (user or namespace
 * PREFIX{A..B}: many fairgate flows).  Call after filling in level and
 * distinguisher. */
void fg_series_mark_shared(struct fg_series *s);

/* One `status` result sampled at bin `bin`. */
void fg_series_status(struct fg_series *s, size_t bin, json_t *status);

/* Latency quantile q in [0,1] of a histogram, in ms (NAN: empty). */
double fg_series_hist_quantile(const struct fg_series_bucket *h, size_t n, double q);

/* Latency quantile q in [0,1] of a flow's merged histogram, in ms (NAN: none). */
double fg_series_quantile(const struct fg_series_flow *f, double q);

/* The same over the run after the scenario's settle time (NAN: none). */
double fg_series_settled_quantile(const struct fg_series_flow *f, double q);

#endif
