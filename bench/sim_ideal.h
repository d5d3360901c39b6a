/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_ideal — the fair allocation a simulated scenario is judged against,
 * computed from the scenario and the simulator's result (not from the queue
 * set or the allocators under test): per flow, demand = threads * seats *
 * exec / (exec + think) for a closed loop, rate * exec * seats for an open
 * one (0 unless the client is active over the whole window), and its level's
 * seats (its current limit at the end; exempt: unlimited; or, on request,
 * the seats its flows used) divided by weighted max-min by bisection:
 * ideal_i = min(demand_i, weight_i * lambda), sum = the seats (or every
 * demand, when they fit).  A flow is a client, or a group of clients merged
 * (clients of one user).  Used by `fairgate-bench sim --table` and
 * tests/test_sim.c, so both judge by the same ideal.
 *
 * Bounds: at most SIM_IDEAL_MAX_FLOWS clients per scenario.
 * Thread contract: pure functions over their arguments.
 */
#ifndef FG_SIM_IDEAL_H
#define FG_SIM_IDEAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#define SIM_IDEAL_MAX_FLOWS 4096

struct fg_sim_ideal_flow {
	const char *name;  /* its first client's name (points into the scenario) */
	const char *level; /* its priority level (points into the result) */
	double weight;     /* its flow weight (1 without FairSharing) */
	double demand;     /* seats it asks for over the window */
	double measured;   /* the sum of its clients' avgSeats */
	double ideal;      /* its weighted max-min share */
	unsigned clients;  /* how many clients it merges */
};

struct fg_sim_ideal {
	int n_flows;
	struct fg_sim_ideal_flow flows[SIM_IDEAL_MAX_FLOWS];
};

/*
 * The ideal of `window` of a run (`result` from fg_sim_run of `scenario`).
 * merge: NULL or a list of lists of client names that count as one flow;
 * capacity_used: each level's seats are what its flows used (the fairness
 * of the division of the seats used); measure: the clients' result field
 * measured (NULL: avgSeats; avgSeatsAtBackend: the seats executing at a
 * backend, with backends told apart from their capacity).  Returns 0, or -EINVAL (a window or
 * client the result lacks, too many clients).
 */
int fg_sim_ideal_compute(json_t *scenario, json_t *result, int window, json_t *merge, bool capacity_used,
			 const char *measure, struct fg_sim_ideal *out);

/* The relative error of measured against ideal (absolute when ideal is 0). */
double fg_sim_ideal_error(double measured, double ideal);

/*
 * `fairgate-bench sim --table`: per window a row per flow, its level, weight,
 * demand, avgSeats, ideal and error.  The window's first "expect" entry of
 * the scenario, if any, gives the merges, the capacity mode and an explicit
 * ideal (shown with a `*`).  Returns the worst error over the windows.
 */
double fg_sim_ideal_table(FILE *out, json_t *scenario, json_t *result);

#endif
