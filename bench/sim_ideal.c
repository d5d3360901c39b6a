/* SPDX-License-Identifier: Apache-2.0 */
/* sim_ideal — see sim_ideal.h. */
#include "sim_ideal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "duration.h"

static int64_t dur(json_t *o, const char *key, int64_t dflt)
{
	const char *s = json_string_value(json_object_get(o, key));
	int64_t ns;
	return s && !fg_duration_parse(s, strlen(s), &ns) ? ns : dflt;
}

static double num(json_t *o, const char *key, double dflt)
{
	json_t *v = json_object_get(o, key);
	return v ? json_number_value(v) : dflt;
}

/* Weighted max-min water-filling by bisection on lambda (one unit of weight's
 * share): alloc_i = min(d_i, w_i * lambda), summing to cap. */
static void water_fill(const double *demand, const double *weight, const int *idx, int n, double cap, double *alloc)
{
	double total = 0, hi = 0;
	for (int j = 0; j < n; j++) {
		total += demand[idx[j]];
		hi = fmax(hi, demand[idx[j]] / weight[idx[j]]);
	}
	if (total <= cap) {
		for (int j = 0; j < n; j++)
			alloc[idx[j]] = demand[idx[j]];
		return;
	}
	double lo = 0;
	for (int it = 0; it < 200; it++) {
		double mid = (lo + hi) / 2, s = 0;
		for (int j = 0; j < n; j++)
			s += fmin(demand[idx[j]], weight[idx[j]] * mid);
		if (s > cap) hi = mid; else lo = mid;
	}
	for (int j = 0; j < n; j++)
		alloc[idx[j]] = fmin(demand[idx[j]], weight[idx[j]] * lo);
}

/* The merge group a client belongs to (or -1). */
static int group_of(json_t *merge, const char *name)
{
	size_t g, k;
	json_t *grp, *m;
	json_array_foreach(merge, g, grp) {
		json_array_foreach(grp, k, m)
			if (json_string_value(m) && !strcmp(json_string_value(m), name))
				return (int)g;
	}
	return -1;
}

/* The window's span from the scenario ("windows": ["A-B", ...], else the run). */
static void window_span(json_t *scn, int w, int64_t *from, int64_t *to)
{
	*from = 0;
	*to = dur(scn, "duration", 0);
	const char *spec = json_string_value(json_array_get(json_object_get(scn, "windows"), (size_t)w));
	const char *dash = spec ? strchr(spec, '-') : NULL;
	if (dash) {
		fg_duration_parse(spec, (size_t)(dash - spec), from);
		fg_duration_parse(dash + 1, strlen(dash + 1), to);
	}
}

int fg_sim_ideal_compute(json_t *scn, json_t *result, int w, json_t *merge, bool capacity_used, const char *measure,
			 struct fg_sim_ideal *out)
{
	json_t *clients = json_object_get(scn, "clients");
	json_t *got = json_object_get(json_array_get(json_object_get(result, "windows"), (size_t)w), "clients");
	size_t n = json_array_size(clients);
	if (!got || json_array_size(got) != n || n > SIM_IDEAL_MAX_FLOWS)
		return -EINVAL;
	int64_t from, to;
	window_span(scn, w, &from, &to);
	int group_flow[SIM_IDEAL_MAX_FLOWS];
	for (size_t g = 0; g < SIM_IDEAL_MAX_FLOWS; g++)
		group_flow[g] = -1;
	out->n_flows = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *c = json_array_get(clients, i), *r = json_array_get(got, i);
		const char *name = json_string_value(json_object_get(c, "name"));
		int g = name ? group_of(merge, name) : -1;
		int fi = g >= 0 && g < SIM_IDEAL_MAX_FLOWS ? group_flow[g] : -1;
		if (fi < 0) {
			fi = out->n_flows++;
			out->flows[fi] = (struct fg_sim_ideal_flow){ .name = name ? name : "?",
				.level = json_string_value(json_object_get(r, "priorityLevel")),
				.weight = num(r, "weight", 1) };
			if (g >= 0 && g < SIM_IDEAL_MAX_FLOWS)
				group_flow[g] = fi;
		}
		struct fg_sim_ideal_flow *f = &out->flows[fi];
		f->clients++;
		double exec = (double)dur(c, "execTime", 1000000000LL), think = (double)dur(c, "thinkTime", 0);
		double width = num(c, "initialSeats", 1), rate = num(c, "rate", 0);
		if (dur(c, "startAt", 0) <= from && dur(c, "stopAt", INT64_MAX) >= to)
			f->demand += rate > 0 ? rate * exec / 1e9 * width : num(c, "threads", 1) * width * exec / (exec + think);
		f->measured += json_number_value(json_object_get(r, measure ? measure : "avgSeats"));
	}
	/* Each level's flows share that level's seats (exempt: unlimited). */
	double demand[SIM_IDEAL_MAX_FLOWS], weight[SIM_IDEAL_MAX_FLOWS], alloc[SIM_IDEAL_MAX_FLOWS];
	int idx[SIM_IDEAL_MAX_FLOWS];
	for (int f = 0; f < out->n_flows; f++) {
		demand[f] = out->flows[f].demand;
		weight[f] = out->flows[f].weight > 0 ? out->flows[f].weight : 1;
		alloc[f] = 0;
	}
	size_t lk;
	json_t *lv;
	json_array_foreach(json_object_get(result, "levels"), lk, lv) {
		const char *name = json_string_value(json_object_get(lv, "name"));
		const char *type = json_string_value(json_object_get(lv, "type"));
		double cap = type && !strcmp(type, "Exempt") ? INFINITY
							     : (double)json_integer_value(json_object_get(lv, "concurrencyLimit"));
		int k = 0;
		double used = 0;
		for (int f = 0; f < out->n_flows; f++)
			if (name && out->flows[f].level && !strcmp(out->flows[f].level, name)) {
				idx[k++] = f;
				used += out->flows[f].measured;
			}
		if (k)
			water_fill(demand, weight, idx, k, capacity_used ? used : cap, alloc);
	}
	for (int f = 0; f < out->n_flows; f++)
		out->flows[f].ideal = alloc[f];
	return 0;
}

double fg_sim_ideal_error(double measured, double ideal)
{
	return ideal > 0 ? fabs(measured - ideal) / ideal : fabs(measured);
}

double fg_sim_ideal_table(FILE *out, json_t *scn, json_t *result)
{
	struct fg_sim_ideal *idp = malloc(sizeof(*idp)); /* large: not on the stack */
	double worst = 0;
	if (!idp) {
		fprintf(out, "(out of memory)\n");
		return INFINITY;
	}
#define id (*idp)
	size_t w;
	json_t *win;
	json_array_foreach(json_object_get(result, "windows"), w, win) {
		json_t *exp = NULL, *e;
		size_t k;
		json_array_foreach(json_object_get(scn, "expect"), k, e)
			if (!exp && json_integer_value(json_object_get(e, "window")) == (json_int_t)w)
				exp = e;
		const char *capacity = json_string_value(json_object_get(exp, "capacity"));
		bool used = capacity && !strcmp(capacity, "used");
		json_t *given = json_object_get(exp, "ideal");
		fprintf(out, "window %zu (%s-%s)%s%s\n", w, json_string_value(json_object_get(win, "from")),
			json_string_value(json_object_get(win, "to")), used ? ", ideal over the seats used" : "",
			given ? ", * ideal given by the scenario" : "");
		if (fg_sim_ideal_compute(scn, result, (int)w, json_object_get(exp, "merge"), used,
					 json_string_value(json_object_get(exp, "measure")), &id)) {
			fprintf(out, "  (no ideal: more than %d clients, or the result does not match the scenario)\n",
				SIM_IDEAL_MAX_FLOWS);
			continue;
		}
		fprintf(out, "  %-20s %-20s %8s %9s %9s %9s %8s\n", "FLOW", "LEVEL", "WEIGHT", "DEMAND", "AVGSEATS", "IDEAL",
			"ERROR");
		for (int f = 0; f < id.n_flows; f++) {
			const struct fg_sim_ideal_flow *fl = &id.flows[f];
			json_t *g = json_array_get(given, (size_t)f);
			double ideal = g ? json_number_value(g) : fl->ideal, err = fg_sim_ideal_error(fl->measured, ideal);
			if (err > worst)
				worst = err;
			char label[64];
			snprintf(label, sizeof(label), fl->clients > 1 ? "%.15s (+%u)" : "%.20s", fl->name, fl->clients - 1);
			fprintf(out, "  %-20s %-20.20s %8.3f %9.4f %9.4f %8.4f%s %7.2f%%\n", label, fl->level ? fl->level : "?",
				fl->weight, fl->demand, fl->measured, ideal, g ? "*" : " ", err * 100);
		}
	}
#undef id
	free(idp);
	return worst;
}
