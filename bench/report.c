/* SPDX-License-Identifier: Apache-2.0 */
/* report — report.json, report.md and the gnuplot plots of a scenario's two
 * runs, with fair shares, fairness errors, Jain's index and verdicts; see
 * report.h and docs/bench.md ("run"). */
#include "report.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "maxmin.h"

#define MAX_PANEL_FLOWS 6        /* latency-over-time panels; more flows: the first six */
#define MAX_PHASE_LABELS 12      /* Jain labels drawn on the fairness plot */
#define SETTLE_NS 1000000000LL   /* a phase's first second (at most 30% of it) is a transient */
#define LIGHT_LOSS_FRACTION 0.01 /* a protected light flow loses at most 1% of its requests */
#define TRACK_BAND 0.25          /* the learned limit is "within" the real capacity at +-25% */
#define TRACK_SKIP_NS 3000000000LL /* steady state: a window's first 3 s are left out (or the scenario's settle) */
#define TRACK_MIN_BINS 10        /* a steady-state window needs a second of samples left */
#define MAX_CHANGES (FG_SCN_MAX_EVENTS + 1)

/* The backends' learned limit against their real capacity (Adaptive runs):
 * after the start and each backend change, when the learned limits' sum
 * first came within TRACK_BAND of the real capacity; between changes, past
 * the settling time, how much it moved. */
struct change {
	int64_t at;
	double before, after; /* real capacity (seats) */
	double scale;         /* the backends' service time over the scenario's, after */
	double within_s;      /* NAN: not within the band before the next change (or the end) */
};

struct window {
	int64_t from, to;
	double mean, min, max, oscillation; /* (max - min) / mean */
};

struct tracking {
	bool adaptive; /* learned limits were sampled */
	struct change changes[MAX_CHANGES];
	unsigned n_changes;
	struct window windows[MAX_CHANGES];
	unsigned n_windows;
	double worst; /* the largest steady-state oscillation; NAN: no window */
	int64_t util_from;
	double utilisation; /* estimated busy fraction of the real capacity from util_from on; NAN: none */
};

/* The fair share analysis of one run. */
struct phase {
	int64_t from, to;
	double jain; /* NAN: fewer than two flows to compare */
	bool active[FG_SCN_MAX_FLOWS];
	double demand[FG_SCN_MAX_FLOWS], fair[FG_SCN_MAX_FLOWS], seats[FG_SCN_MAX_FLOWS], error[FG_SCN_MAX_FLOWS];
};

struct analysis {
	const struct fg_series *s;
	struct phase phases[FG_SCN_MAX_PHASES];
	unsigned n_phases;
	double flow_error[FG_SCN_MAX_FLOWS]; /* time-weighted mean |seats - fair| / fair; NAN: none */
	double jain;                          /* time-weighted mean over phases; NAN: none */
	bool light[FG_SCN_MAX_FLOWS];         /* demand within its fair share in every active phase */
	struct tracking track;
};

static size_t bin_of(int64_t t_ns, size_t n_bins)
{
	size_t b = (size_t)(t_ns / FG_SERIES_BIN_NS);
	return b < n_bins ? b : n_bins;
}

/* The change times: the start and every event that changes a backend. */
static unsigned change_times(const struct fg_scenario *scn, int64_t *at)
{
	unsigned n = 0;
	at[n++] = 0;
	for (unsigned i = 0; i < scn->n_events; i++)
		if (fg_scn_event_changes_backend(&scn->events[i]) && scn->events[i].at_ns != at[n - 1])
			at[n++] = scn->events[i].at_ns;
	return n;
}

/* Busy fraction of the backends' real capacity from `from` on: answers x
 * their service time (scaled by the backends' slow-down then) over capacity
 * x time.  An estimate from the answers, one worker per request. */
static double utilisation(const struct fg_series *s, int64_t from)
{
	const struct fg_scenario *scn = s->scn;
	double work = 0, cap = 0;
	for (size_t b = bin_of(from, s->n_bins); b < s->n_bins; b++) {
		double scale;
		fg_scn_capacity_at(scn, (int64_t)(b + 1) * FG_SERIES_BIN_NS - 1, &scale);
		for (unsigned i = 0; i < scn->n_flows; i++)
			work += (double)s->flows[i].bins[b].responses * fg_scn_flow_service_s(scn, &scn->flows[i]) * scale;
		cap += s->real_capacity[b] * (double)FG_SERIES_BIN_NS / 1e9;
	}
	return cap > 0 ? work / cap : NAN;
}

static void track(const struct fg_series *s, struct tracking *t)
{
	const struct fg_scenario *scn = s->scn;
	int64_t at[MAX_CHANGES + 1];
	unsigned n = change_times(scn, at);
	at[n] = scn->duration_ns;
	memset(t, 0, sizeof(*t));
	t->worst = NAN;
	t->util_from = scn->settle_ns;
	t->utilisation = utilisation(s, scn->settle_ns);
	for (size_t b = 0; b < s->n_bins && !t->adaptive; b++)
		t->adaptive = !isnan(s->learned_sum[b]);
	if (!t->adaptive)
		return;
	int64_t skip = scn->settle_ns > 0 ? scn->settle_ns : TRACK_SKIP_NS;
	for (unsigned c = 0; c < n; c++) {
		struct change *ch = &t->changes[t->n_changes++];
		ch->at = at[c];
		ch->before = c ? fg_scn_capacity_at(scn, at[c] - 1, NULL) : NAN;
		ch->after = fg_scn_capacity_at(scn, at[c], &ch->scale);
		ch->within_s = NAN;
		/* Each bin's sample is taken at its end. */
		for (size_t b = bin_of(at[c], s->n_bins); b < bin_of(at[c + 1], s->n_bins); b++) {
			double real = s->real_capacity[b], x = s->learned_sum[b];
			if (real > 0 && !isnan(x) && fabs(x - real) <= TRACK_BAND * real) {
				ch->within_s = (double)((int64_t)(b + 1) * FG_SERIES_BIN_NS - at[c]) / 1e9;
				break;
			}
		}
		size_t b0 = bin_of(at[c] + skip, s->n_bins), b1 = bin_of(at[c + 1], s->n_bins);
		if (b1 < b0 + TRACK_MIN_BINS)
			continue;
		struct window *w = &t->windows[t->n_windows];
		*w = (struct window){ .from = (int64_t)b0 * FG_SERIES_BIN_NS, .to = at[c + 1], .min = INFINITY,
				      .max = -INFINITY };
		double sum = 0;
		unsigned k = 0;
		for (size_t b = b0; b < b1; b++)
			if (!isnan(s->learned_sum[b])) {
				sum += s->learned_sum[b];
				w->min = fmin(w->min, s->learned_sum[b]);
				w->max = fmax(w->max, s->learned_sum[b]);
				k++;
			}
		if (k < TRACK_MIN_BINS || sum <= 0)
			continue;
		w->mean = sum / k;
		w->oscillation = (w->max - w->min) / w->mean;
		t->worst = isnan(t->worst) ? w->oscillation : fmax(t->worst, w->oscillation);
		t->n_windows++;
	}
}

static double mean_over(const double *v, size_t stride, size_t from, size_t to)
{
	double sum = 0;
	size_t n = 0;
	for (size_t b = from; b < to; b++) {
		double x = *(const double *)((const char *)v + b * stride);
		if (!isnan(x)) {
			sum += x;
			n++;
		}
	}
	return n ? sum / (double)n : NAN;
}

static const struct fg_series_level *level_of(const struct fg_series *s, const char *name)
{
	for (unsigned i = 0; i < s->n_levels; i++)
		if (!strcmp(s->levels[i].name, name))
			return &s->levels[i];
	return NULL;
}

static void fair_shares(const struct fg_series *s, struct phase *p, size_t b0, size_t b1)
{
	const struct fg_scenario *scn = s->scn;
	bool done[FG_SCN_MAX_FLOWS] = { false };
	for (unsigned i = 0; i < scn->n_flows; i++) {
		if (!p->active[i] || done[i])
			continue;
		/* Water-fill the level's seats over the demands of its flows. */
		struct fg_maxmin_item items[FG_SCN_MAX_FLOWS];
		unsigned idx[FG_SCN_MAX_FLOWS], n = 0;
		for (unsigned j = i; j < scn->n_flows; j++)
			if (p->active[j] && !strcmp(s->flows[j].level, s->flows[i].level)) {
				items[n] = (struct fg_maxmin_item){ s->flows[j].weight, 0, p->demand[j] };
				idx[n++] = j;
				done[j] = true;
			}
		const struct fg_series_level *l = level_of(s, s->flows[i].level);
		double total = l ? mean_over(l->limit, sizeof(double), b0, b1) : NAN, alloc[FG_SCN_MAX_FLOWS];
		if (isnan(total) || fg_maxmin_solve(total, items, n, FG_MAXMIN_SLACK, alloc, NULL, NULL))
			for (unsigned k = 0; k < n; k++)
				alloc[k] = NAN;
		for (unsigned k = 0; k < n; k++)
			p->fair[idx[k]] = alloc[k];
	}
}

static void analyse(const struct fg_series *s, struct analysis *a)
{
	const struct fg_scenario *scn = s->scn;
	int64_t bounds[FG_SCN_MAX_PHASES];
	unsigned nb = fg_scn_phases(scn, bounds, FG_SCN_MAX_PHASES);
	memset(a, 0, sizeof(*a));
	a->s = s;
	double err_sum[FG_SCN_MAX_FLOWS] = { 0 }, err_t[FG_SCN_MAX_FLOWS] = { 0 }, jain_sum = 0, jain_t = 0;
	for (unsigned i = 0; i < scn->n_flows; i++)
		a->light[i] = true;
	for (unsigned k = 0; k + 1 < nb; k++) {
		struct phase *p = &a->phases[a->n_phases++];
		p->from = bounds[k];
		p->to = bounds[k + 1];
		int64_t settle = (p->to - p->from) * 3 / 10 < SETTLE_NS ? (p->to - p->from) * 3 / 10 : SETTLE_NS;
		size_t b0 = (size_t)((p->from + settle) / FG_SERIES_BIN_NS), b1 = (size_t)(p->to / FG_SERIES_BIN_NS);
		if (b1 > s->n_bins)
			b1 = s->n_bins;
		for (unsigned i = 0; i < scn->n_flows; i++) {
			const struct fg_scn_step *st = fg_scn_step_at(&scn->flows[i], (p->from + p->to) / 2);
			p->active[i] = st && !s->flows[i].exempt;
			p->demand[i] = st ? fg_scn_step_demand(scn, &scn->flows[i], st) : 0;
			p->seats[i] = mean_over(&s->flows[i].bins[0].seats, sizeof(struct fg_series_bin), b0, b1);
			p->fair[i] = p->error[i] = NAN;
		}
		fair_shares(s, p, b0, b1);
		double sx = 0, sxx = 0, dt = (double)(p->to - p->from) / 1e9;
		unsigned n = 0;
		for (unsigned i = 0; i < scn->n_flows; i++) {
			if (!p->active[i] || isnan(p->fair[i]) || p->fair[i] <= 0 || isnan(p->seats[i]))
				continue;
			if (p->demand[i] > p->fair[i] * 1.001)
				a->light[i] = false;
			p->error[i] = fabs(p->seats[i] - p->fair[i]) / p->fair[i];
			err_sum[i] += p->error[i] * dt;
			err_t[i] += dt;
			double x = p->seats[i] / p->fair[i];
			sx += x;
			sxx += x * x;
			n++;
		}
		p->jain = n >= 2 && sxx > 0 ? sx * sx / ((double)n * sxx) : NAN;
		if (!isnan(p->jain)) {
			jain_sum += p->jain * dt;
			jain_t += dt;
		}
	}
	for (unsigned i = 0; i < scn->n_flows; i++)
		a->flow_error[i] = err_t[i] > 0 ? err_sum[i] / err_t[i] : NAN;
	a->jain = jain_t > 0 ? jain_sum / jain_t : NAN;
	track(s, &a->track);
}

static double fair_at(const struct analysis *a, unsigned flow, int64_t t)
{
	for (unsigned k = 0; k < a->n_phases; k++)
		if (a->phases[k].from <= t && t < a->phases[k].to)
			return a->phases[k].fair[flow];
	return NAN;
}

/* --- report.json -------------------------------------------------------- */

static json_t *num(double x)
{
	return isnan(x) || isinf(x) ? json_null() : json_real(x);
}

static json_t *series_array(const double *v, size_t stride, size_t n)
{
	json_t *arr = json_array();
	for (size_t b = 0; b < n; b++)
		json_array_append_new(arr, num(*(const double *)((const char *)v + b * stride)));
	return arr;
}

static uint64_t rejected_total(const struct fg_series_flow *f)
{
	uint64_t t = 0;
	for (int r = 1; r < FG_REJECT__COUNT; r++)
		t += f->rejected[r];
	return t;
}

/* Latency over the run after the settle time; null without one. */
static json_t *settled_json(const struct fg_series *s, const struct fg_series_flow *f)
{
	if (!s->scn->settle_ns)
		return json_null();
	return json_pack("{s:f, s:o, s:o, s:o, s:o}", "fromSeconds", (double)s->scn->settle_ns / 1e9, "p50",
			 num(fg_series_settled_quantile(f, 0.5)), "p90", num(fg_series_settled_quantile(f, 0.9)), "p99",
			 num(fg_series_settled_quantile(f, 0.99)), "p999", num(fg_series_settled_quantile(f, 0.999)));
}

static json_t *flow_json(const struct analysis *a, unsigned i)
{
	const struct fg_series *s = a->s;
	const struct fg_series_flow *f = &s->flows[i];
	json_t *rej = json_object();
	for (int r = 1; r < FG_REJECT__COUNT; r++)
		if (f->rejected[r])
			json_object_set_new(rej, fg_reject_reason_name(r), json_integer((json_int_t)f->rejected[r]));
	json_t *rps = json_array(), *p50 = json_array(), *p90 = json_array(), *p99 = json_array(), *p999 = json_array(),
	       *fair = json_array(), *rejps = json_array();
	for (size_t b = 0; b < s->n_bins; b++) {
		json_array_append_new(rps, json_real((double)f->bins[b].responses * 1e9 / FG_SERIES_BIN_NS));
		json_array_append_new(rejps, json_real((double)f->bins[b].rejected * 1e9 / FG_SERIES_BIN_NS));
		json_array_append_new(p50, num(f->bins[b].p50));
		json_array_append_new(p90, num(f->bins[b].p90));
		json_array_append_new(p99, num(f->bins[b].p99));
		json_array_append_new(p999, num(f->bins[b].p999));
		json_array_append_new(fair, num(fair_at(a, i, (int64_t)b * FG_SERIES_BIN_NS)));
	}
	json_t *series = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "responsesPerSec", rps, "rejectsPerSec",
		rejps, "p50Ms", p50, "p90Ms", p90, "p99Ms", p99, "p999Ms", p999, "seats",
		series_array(&f->bins[0].seats, sizeof(struct fg_series_bin), s->n_bins), "fairShare", fair);
	json_t *o = json_pack("{s:s, s:s, s:s, s:f, s:b, s:b, s:I, s:I, s:f, s:o, s:I, s:I, s:{s:o, s:o, s:o, s:o, s:o}, s:{s:o},"
			 " s:o, s:b, s:o}",
		"name", s->scn->flows[i].name, "priorityLevel", f->level, "flow", f->distinguisher, "weight", f->weight,
		"exempt", f->exempt, "seatsEstimated", f->seats_estimated, "sent", (json_int_t)f->sent, "responses", (json_int_t)f->responses,
		"responsesPerSec", f->answer_seconds > 0 ? (double)f->responses / f->answer_seconds : 0.0, "rejected", rej,
		"rejectedTotal", (json_int_t)rejected_total(f), "lost", (json_int_t)f->lost, "latencyMs",
		"p50", num(fg_series_quantile(f, 0.5)), "p90", num(fg_series_quantile(f, 0.9)), "p99",
		num(fg_series_quantile(f, 0.99)), "p999", num(fg_series_quantile(f, 0.999)), "max",
		num(fg_series_quantile(f, 1.0)), "rejectLatencyMs", "p99", num(f->reject_p99_ms), "fairShareError",
		num(a->flow_error[i]), "withinFairShare", a->light[i], "series", series);
	json_object_set_new(o, "latencyMsAfterSettle", settled_json(s, f));
	return o;
}

static json_t *tracking_json(const struct tracking *t)
{
	json_t *util = json_pack("{s:f, s:o}", "fromSeconds", (double)t->util_from / 1e9, "value", num(t->utilisation));
	if (!t->adaptive)
		return json_pack("{s:n, s:o}", "limitTracking", "backendUtilisation", util);
	json_t *changes = json_array(), *windows = json_array();
	for (unsigned c = 0; c < t->n_changes; c++) {
		const struct change *ch = &t->changes[c];
		json_array_append_new(changes, json_pack("{s:f, s:o, s:f, s:f, s:o}", "atSeconds", (double)ch->at / 1e9,
			"realCapacityBefore", num(ch->before), "realCapacity", ch->after, "serviceTimeScale", ch->scale,
			"withinSeconds", num(ch->within_s)));
	}
	for (unsigned k = 0; k < t->n_windows; k++) {
		const struct window *w = &t->windows[k];
		json_array_append_new(windows, json_pack("{s:f, s:f, s:f, s:f, s:f, s:f}", "fromSeconds", (double)w->from / 1e9,
			"toSeconds", (double)w->to / 1e9, "mean", w->mean, "min", w->min, "max", w->max, "oscillation",
			w->oscillation));
	}
	return json_pack("{s:{s:f, s:o, s:o, s:o}, s:o}", "limitTracking", "band", TRACK_BAND, "changes", changes,
			 "steadyState", windows, "worstOscillation", num(t->worst), "backendUtilisation", util);
}

static json_t *run_json(const struct analysis *a)
{
	const struct fg_series *s = a->s;
	json_t *flows = json_array(), *phases = json_array(), *levels = json_object(), *rejects = json_object(),
	       *t = json_array();
	for (unsigned i = 0; i < s->scn->n_flows; i++)
		json_array_append_new(flows, flow_json(a, i));
	for (unsigned k = 0; k < a->n_phases; k++) {
		const struct phase *p = &a->phases[k];
		json_t *pf = json_array();
		for (unsigned i = 0; i < s->scn->n_flows; i++)
			if (p->active[i])
				json_array_append_new(pf, json_pack("{s:s, s:f, s:o, s:o, s:o}", "name", s->scn->flows[i].name,
					"demand", p->demand[i], "fairShare", num(p->fair[i]), "seats", num(p->seats[i]), "error",
					num(p->error[i])));
		json_array_append_new(phases, json_pack("{s:f, s:f, s:o, s:o}", "from", (double)p->from / 1e9, "to",
							(double)p->to / 1e9, "jain", num(p->jain), "flows", pf));
	}
	for (unsigned i = 0; i < s->n_levels; i++)
		json_object_set_new(levels, s->levels[i].name, json_pack("{s:o, s:o}", "seatsInUse",
			series_array(s->levels[i].in_use, sizeof(double), s->n_bins), "seatLimit",
			series_array(s->levels[i].limit, sizeof(double), s->n_bins)));
	for (int r = 1; r < FG_REJECT__COUNT; r++)
		json_object_set_new(rejects, fg_reject_reason_name(r), series_array(s->rejects_per_s[r], sizeof(double), s->n_bins));
	for (size_t b = 0; b < s->n_bins; b++)
		json_array_append_new(t, json_real((double)(b + 1) * FG_SERIES_BIN_NS / 1e9));
	json_t *backends = json_pack("{s:o, s:o, s:o, s:o}", "limitInForce",
		series_array(s->limit_in_force, sizeof(double), s->n_bins), "capacityInForceSum",
		series_array(s->capacity_sum, sizeof(double), s->n_bins), "learnedLimitSum",
		series_array(s->learned_sum, sizeof(double), s->n_bins), "realCapacity",
		series_array(s->real_capacity, sizeof(double), s->n_bins));
	json_t *run = json_pack("{s:s, s:o, s:o, s:o, s:{s:o, s:o, s:o, s:o}, s:I}", "name", s->name, "flows", flows,
		"jain", num(a->jain), "phases", phases, "series", "t", t, "levels", levels, "fairgateRejectsPerSec", rejects,
		"backends", backends, "badLoadgenLines", (json_int_t)s->bad_lines);
	json_object_update_new(run, tracking_json(&a->track));
	return run;
}

/* --- verdicts ----------------------------------------------------------- */

/* What the second run is, in the verdicts' words. */
static const char *against(const struct fg_scenario *scn)
{
	return scn->baseline_settings ? "in the baseline" : "without fairness";
}

/* A flow's requests from bin b0 on: sent, and refused or lost. */
static void losses_from(const struct fg_series_flow *f, size_t b0, size_t n_bins, uint64_t *sent, uint64_t *bad)
{
	*sent = *bad = 0;
	for (size_t b = b0; b < n_bins; b++) {
		*sent += f->bins[b].sent;
		*bad += f->bins[b].rejected + f->bins[b].lost;
	}
}

/* The rule (docs/bench.md): a flow within its fair share is protected when
 * at most 1% of its requests were refused or lost and its p99 is at most
 * half the baseline's; no worse when within 10% of it; else not protected.
 * A flow above its fair share is judged by how close it stayed to it.
 * `after`: latency and losses over the run after the settle time (the fair
 * share part stays the whole run's). */
static void verdict(const struct analysis *fg, const struct analysis *base, unsigned i, bool after, char *buf,
		    size_t len, const char **word)
{
	const struct fg_series_flow *f = &fg->s->flows[i], *b = &base->s->flows[i];
	const struct fg_scenario *scn = fg->s->scn;
	double p99 = after ? fg_series_settled_quantile(f, 0.99) : fg_series_quantile(f, 0.99);
	double bp99 = after ? fg_series_settled_quantile(b, 0.99) : fg_series_quantile(b, 0.99);
	uint64_t bad = rejected_total(f) + f->lost, sent = f->sent;
	if (after)
		losses_from(f, bin_of(scn->settle_ns, fg->s->n_bins), fg->s->n_bins, &sent, &bad);
	double loss = sent ? (double)bad / (double)sent : 0;
	const char *name = scn->flows[i].name;
	if (f->exempt)
		*word = "exempt";
	else if (fg->light[i])
		*word = loss <= LIGHT_LOSS_FRACTION && p99 <= bp99 / 2 ? "protected"
			: loss <= LIGHT_LOSS_FRACTION && p99 <= bp99 * 1.1 ? "no worse" : "NOT protected";
	else
		*word = !isnan(fg->flow_error[i]) && fg->flow_error[i] <= 0.25 ? "held to its fair share" : "off its fair share";
	/* p99 in the flow's service times (the scenario's, at the start). */
	double service_ms = fg_scn_flow_service_s(scn, &scn->flows[i]) * 1e3;
	int n = snprintf(buf, len, "%s: p99 %.1f ms (%.1fx its service time) vs %.1f ms (%.1fx) %s", name, p99,
			 p99 / service_ms, bp99, bp99 / service_ms, against(scn));
	if (bad && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, ", %.1f%% refused or lost (reject p99 %.1f ms)", 100 * loss,
			      f->reject_p99_ms);
	if (!fg->light[i] && !isnan(fg->flow_error[i]) && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, ", fair-share error %.0f%%", 100 * fg->flow_error[i]);
	if (n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " — %s", *word);
}

/* --- expectations (the scenario's `expect`) ------------------------------ */

#define MAX_EXPECT_LINES (2 * (FG_SCN_MAX_FLOWS + 1))

struct expectation {
	const char *run, *what;
	double value, bound;
	bool met;
	char text[320];
};

/* Each run against the scenario's expectations, over the run after the
 * settle time (the whole run without one); returns how many. */
static unsigned expectations(const struct analysis *a[2], struct expectation *out)
{
	const struct fg_scenario *scn = a[0]->s->scn;
	unsigned n = 0;
	char from[48];
	if (scn->settle_ns)
		snprintf(from, sizeof(from), "after %.1f s", (double)scn->settle_ns / 1e9);
	else
		snprintf(from, sizeof(from), "over the whole run");
	for (int k = 0; k < 2; k++) {
		const struct fg_series *s = a[k]->s;
		for (unsigned e = 0; e < scn->n_expect_p99; e++) {
			const struct fg_scn_expect_p99 *x = &scn->expect_p99[e];
			const struct fg_series_flow *f = &s->flows[x->flow];
			double p99 = scn->settle_ns ? fg_series_settled_quantile(f, 0.99) : fg_series_quantile(f, 0.99);
			double service_ms = fg_scn_flow_service_s(scn, &scn->flows[x->flow]) * 1e3;
			struct expectation *r = &out[n++];
			*r = (struct expectation){ s->name, "p99ServiceTimes", p99 / service_ms, x->times,
						   !isnan(p99) && p99 / service_ms <= x->times };
			snprintf(r->text, sizeof(r->text), "%s: %s p99 %s %.1f ms = %.2fx its service time %.1f ms "
				 "(expected at most %gx) — %s", s->name, scn->flows[x->flow].name, from, p99,
				 p99 / service_ms, service_ms, x->times, r->met ? "met" : "NOT met");
		}
		if (scn->expect_utilisation > 0) {
			double u = a[k]->track.utilisation;
			struct expectation *r = &out[n++];
			*r = (struct expectation){ s->name, "backendUtilisation", u, scn->expect_utilisation,
						   !isnan(u) && u >= scn->expect_utilisation };
			snprintf(r->text, sizeof(r->text), "%s: backend utilisation %s %.0f%% of their real capacity "
				 "(expected at least %.0f%%) — %s", s->name, from, 100 * u, 100 * scn->expect_utilisation,
				 r->met ? "met" : "NOT met");
		}
	}
	return n;
}

/* --- data files and plots ----------------------------------------------- */

static FILE *open_in(const char *dir, const char *name)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "fairgate-bench run: cannot write %s: %s\n", path, strerror(errno));
	return f;
}

static void put(FILE *f, double x)
{
	if (isnan(x))
		fputs(" NaN", f);
	else
		fprintf(f, " %.4g", x);
}

/* DIR/name: a header, then per bin its end time and each column's value. */
static int write_columns(const char *dir, const char *name, const char *header, const double *const *cols,
			 unsigned n_cols, size_t n_bins)
{
	FILE *f = open_in(dir, name);
	if (!f)
		return -errno;
	fprintf(f, "%s\n", header);
	for (size_t b = 0; b < n_bins; b++) {
		fprintf(f, "%.1f", (double)(b + 1) * FG_SERIES_BIN_NS / 1e9);
		for (unsigned c = 0; c < n_cols; c++)
			put(f, cols[c][b]);
		fputc('\n', f);
	}
	fclose(f);
	return 0;
}

static int write_data(const char *dir, const struct analysis *a)
{
	const struct fg_series *s = a->s;
	char name[160];
	for (unsigned i = 0; i < s->scn->n_flows; i++) {
		snprintf(name, sizeof(name), "data/%s-flow%u.dat", s->name, i);
		FILE *f = open_in(dir, name);
		if (!f)
			return -errno;
		fprintf(f, "# t responses/s p50 p90 p99 p999 seats fairShare rejects/s\n");
		for (size_t b = 0; b < s->n_bins; b++) {
			const struct fg_series_bin *x = &s->flows[i].bins[b];
			fprintf(f, "%.1f", (double)(b + 1) * FG_SERIES_BIN_NS / 1e9);
			put(f, (double)x->responses * 1e9 / FG_SERIES_BIN_NS);
			put(f, x->p50);
			put(f, x->p90);
			put(f, x->p99);
			put(f, x->p999);
			put(f, x->seats);
			put(f, fair_at(a, i, (int64_t)b * FG_SERIES_BIN_NS));
			put(f, (double)x->rejected * 1e9 / FG_SERIES_BIN_NS);
			fputc('\n', f);
		}
		fclose(f);
		snprintf(name, sizeof(name), "data/%s-cdf%u.dat", s->name, i);
		if (!(f = open_in(dir, name)))
			return -errno;
		uint64_t total = 0, seen = 0;
		for (size_t k = 0; k < s->flows[i].n_hist; k++)
			total += s->flows[i].hist[k].count;
		fprintf(f, "# latency_ms fraction_at_or_below\n");
		for (size_t k = 0; k < s->flows[i].n_hist; k++) {
			seen += s->flows[i].hist[k].count;
			fprintf(f, "%.4g %.6f\n", s->flows[i].hist[k].high_us / 1000.0, (double)seen / (double)total);
		}
		fclose(f);
	}
	const double *cols[2 * FG_SERIES_MAX_LEVELS];
	unsigned n = 0;
	for (unsigned l = 0; l < s->n_levels; l++) {
		cols[n++] = s->levels[l].in_use;
		cols[n++] = s->levels[l].limit;
	}
	snprintf(name, sizeof(name), "data/%s-levels.dat", s->name);
	if (write_columns(dir, name, "# t then per level: seatsInUse seatLimit", cols, n, s->n_bins))
		return -errno;
	n = 0;
	for (int r = 1; r < FG_REJECT__COUNT; r++)
		cols[n++] = s->rejects_per_s[r];
	snprintf(name, sizeof(name), "data/%s-rejects.dat", s->name);
	if (write_columns(dir, name, "# t then fairgate's rejects/s per reason, in protocol order", cols, n, s->n_bins))
		return -errno;
	const double *backends[] = { s->limit_in_force, s->capacity_sum, s->learned_sum, s->real_capacity };
	snprintf(name, sizeof(name), "data/%s-backends.dat", s->name);
	if (write_columns(dir, name, "# t limitInForce capacityInForceSum learnedLimitSum realCapacity (seats)", backends,
			  4, s->n_bins))
		return -errno;
	return 0;
}

/* A plot body is drawn twice, once per terminal. */
struct plot {
	const char *name, *title;
	char *body;
	size_t len, cap;
};

static void emit(struct plot *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(struct plot *p, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		va_start(ap, fmt);
		int n = vsnprintf(p->body ? p->body + p->len : NULL, p->body ? p->cap - p->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (p->body && p->len + (size_t)n < p->cap) {
			p->len += (size_t)n;
			return;
		}
		size_t cap = (p->cap ? 2 * p->cap : 4096) + (size_t)n;
		char *b = realloc(p->body, cap);
		if (!b)
			return;
		p->body = b;
		p->cap = cap;
	}
}

static bool level_shown(const struct fg_series *s, unsigned l)
{
	for (unsigned i = 0; i < s->scn->n_flows; i++)
		if (!strcmp(s->flows[i].level, s->levels[l].name))
			return true;
	for (size_t b = 0; b < s->n_bins; b++)
		if (s->levels[l].in_use[b] > 0)
			return true;
	return false;
}

/* gnuplot strings are single-quoted: a quote in a name is doubled. */
static const char *q(const char *in, char *buf, size_t len)
{
	size_t o = 0;
	for (; *in && o + 3 < len; in++) {
		if (*in == '\'')
			buf[o++] = '\'';
		buf[o++] = *in == '_' ? ' ' : *in;
	}
	buf[o] = 0;
	return buf;
}

/* Two panels over time, fairgate above and the baseline below. */
static void two_panels(struct plot *p, const char *title, const char *ylabel)
{
	emit(p, "set multiplot layout 2,1 title \"%s\"\nset xlabel 'seconds'\nset ylabel '%s'\nset key outside right\n"
		"set yrange [0:*]\n", title, ylabel);
}

static void plot_throughput(struct plot *p, const struct analysis *a[2])
{
	char b[160];
	two_panels(p, "responses/s per flow", "responses/s");
	for (int k = 0; k < 2; k++) {
		emit(p, "set title '%s'\nplot ", a[k]->s->name);
		for (unsigned i = 0; i < a[k]->s->scn->n_flows; i++)
			emit(p, "%s'data/%s-flow%u.dat' using 1:2 with lines lw 2 lc %u title '%s'", i ? ", " : "",
			     a[k]->s->name, i, i + 1, q(a[k]->s->scn->flows[i].name, b, sizeof(b)));
		emit(p, "\n");
	}
	emit(p, "unset multiplot\n");
}

static bool has_answers(const struct fg_series_flow *f, size_t n)
{
	for (size_t b = 0; b < n; b++)
		if (f->bins[b].responses)
			return true;
	return false;
}

static void plot_latency_time(struct plot *p, const struct analysis *a[2])
{
	char b[160];
	unsigned nf = a[0]->s->scn->n_flows < MAX_PANEL_FLOWS ? a[0]->s->scn->n_flows : MAX_PANEL_FLOWS;
	emit(p, "set multiplot layout 2,%u title 'latency percentiles per flow (ms, log scale)'\nset logscale y\n"
		"set xlabel 'seconds'\nset key top left\n", nf);
	static const char *const pct[] = { "p50", "p90", "p99", "p99.9" };
	for (int k = 0; k < 2; k++)
		for (unsigned i = 0; i < nf; i++) {
			emit(p, "set title '%s: %s'\n", a[k]->s->name, q(a[k]->s->scn->flows[i].name, b, sizeof(b)));
			if (!has_answers(&a[k]->s->flows[i], a[k]->s->n_bins)) {
				emit(p, "set yrange [0.1:1000]\nset label 1 'no answers' at graph 0.4,0.5\nplot 1 notitle lc rgb '#ffffff'\n"
					"unset label 1\nset yrange [*:*]\n");
				continue;
			}
			emit(p, "plot ");
			for (int c = 0; c < 4; c++)
				emit(p, "%s'data/%s-flow%u.dat' using 1:%d with linespoints lw 1.5 pt 7 ps 0.3 title '%s'", c ? ", " : "",
				     a[k]->s->name, i, 3 + c, pct[c]);
			emit(p, "\n");
		}
	emit(p, "unset multiplot\n");
}

static void plot_cdf(struct plot *p, const struct analysis *a[2])
{
	char b[160];
	emit(p, a[0]->s->scn->baseline_settings ? "set title 'latency CDF per flow: fairgate (solid) vs the baseline (dashed)'\n"
					       : "set title 'latency CDF per flow: fairgate (solid) vs baseline without fairness (dashed)'\n");
	emit(p, "set logscale x\nset xlabel 'latency (ms)'\nset ylabel 'fraction of answers'\nset yrange [0:1.02]\n"
		"set key bottom right\nplot ");
	bool any = false;
	for (unsigned i = 0; i < a[0]->s->scn->n_flows; i++)
		for (int k = 0; k < 2; k++) {
			if (!a[k]->s->flows[i].n_hist)
				continue;
			emit(p, "%s'data/%s-cdf%u.dat' using 1:2 with steps lw 2 lc %u dt %d title '%s %s'", any ? ", " : "",
			     a[k]->s->name, i, i + 1, k ? 2 : 1, q(a[0]->s->scn->flows[i].name, b, sizeof(b)), a[k]->s->name);
			any = true;
		}
	emit(p, "%s\n", any ? "" : "1 notitle lc rgb '#ffffff'");
}

static void plot_seats(struct plot *p, const struct analysis *a[2])
{
	char b[160];
	two_panels(p, "seats in use per priority level (solid) against its limit (dashed)", "seats");
	for (int k = 0; k < 2; k++) {
		const struct fg_series *s = a[k]->s;
		emit(p, "set title '%s'\nplot ", s->name);
		unsigned shown = 0;
		for (unsigned l = 0; l < s->n_levels; l++) {
			if (!level_shown(s, l))
				continue;
			/* The limit first, thick: the seats in use run on it when the level is full. */
			emit(p, "%s'data/%s-levels.dat' using 1:%u with lines lw 4 dt 2 lc %u notitle, "
				"'' using 1:%u with lines lw 1.5 lc %u title '%s'", shown ? ", " : "", s->name, 3 + 2 * l,
			     shown + 1, 2 + 2 * l, shown + 1, q(s->levels[l].name, b, sizeof(b)));
			shown++;
		}
		emit(p, "%s\n", shown ? "" : "0 notitle");
	}
	emit(p, "unset multiplot\n");
}

static void plot_rejects(struct plot *p, const struct analysis *a[2])
{
	two_panels(p, "fairgate rejects per second by reason", "rejects/s");
	for (int k = 0; k < 2; k++) {
		const struct fg_series *s = a[k]->s;
		emit(p, "set title '%s'\nplot ", s->name);
		unsigned shown = 0;
		for (int r = 1; r < FG_REJECT__COUNT; r++) {
			bool any = false;
			for (size_t b = 0; b < s->n_bins && !any; b++)
				any = s->rejects_per_s[r][b] > 0;
			if (!any)
				continue;
			emit(p, "%s'data/%s-rejects.dat' using 1:%d with lines lw 2 title '%s'", shown++ ? ", " : "", s->name,
			     1 + r, fg_reject_reason_name(r));
		}
		emit(p, "%s\n", shown ? "" : "0 lw 2 title 'no rejects'");
	}
	emit(p, "unset multiplot\n");
}

static void plot_fairness(struct plot *p, const struct analysis *a[2])
{
	char b[160];
	two_panels(p, "each flow's seats in fairgate (solid) against its max-min fair share (dashed); J = Jain's index per phase",
		   "seats");
	for (int k = 0; k < 2; k++) {
		const struct fg_series *s = a[k]->s;
		emit(p, "unset label\n");
		for (unsigned ph = 0; a[k]->n_phases <= MAX_PHASE_LABELS && ph < a[k]->n_phases; ph++)
			if (!isnan(a[k]->phases[ph].jain))
				emit(p, "set label 'J=%.2f' at first %.2f, graph 0.95 center\n", a[k]->phases[ph].jain,
				     (double)(a[k]->phases[ph].from + a[k]->phases[ph].to) / 2e9);
		emit(p, "set title '%s (mean Jain %.2f)'\nplot ", s->name, a[k]->jain);
		for (unsigned i = 0; i < s->scn->n_flows; i++)
			emit(p, "%s'data/%s-flow%u.dat' using 1:8 with lines lw 4 dt 2 lc %u notitle, '' using 1:7 with lines "
				"lw 1.5 lc %u title '%s'", i ? ", " : "", s->name, i, i + 1, i + 1,
			     q(s->scn->flows[i].name, b, sizeof(b)));
		emit(p, "\n");
	}
	emit(p, "unset multiplot\nunset label\n");
}

static bool any_sample(const double *v, size_t n)
{
	for (size_t b = 0; b < n; b++)
		if (!isnan(v[b]))
			return true;
	return false;
}

static double series_max(const double *v, size_t n, double m)
{
	for (size_t b = 0; b < n; b++)
		if (!isnan(v[b]))
			m = fmax(m, v[b]);
	return m;
}

/* The backends' limit against their real capacity, both runs on one y-scale. */
static void plot_backends(struct plot *p, const struct analysis *a[2])
{
	double top = 1;
	for (int k = 0; k < 2; k++) {
		const struct fg_series *s = a[k]->s;
		top = series_max(s->limit_in_force, s->n_bins, top);
		top = series_max(s->capacity_sum, s->n_bins, top);
		top = series_max(s->learned_sum, s->n_bins, top);
		top = series_max(s->real_capacity, s->n_bins, top * 1.0);
		top = fmax(top, series_max(s->real_capacity, s->n_bins, 0) * (1 + TRACK_BAND));
	}
	emit(p, "set multiplot layout 2,1 title \"backends' limit against their real capacity (band: real capacity +-%.0f%%)\"\n"
		"set xlabel 'seconds'\nset ylabel 'seats'\nset key outside right\nset yrange [0:%.0f]\n",
	     100 * TRACK_BAND, ceil(top * 1.1));
	for (int k = 0; k < 2; k++) {
		const struct fg_series *s = a[k]->s;
		emit(p, "set title '%s'\nplot 'data/%s-backends.dat' using 1:($5*%g):($5*%g) with filledcurves "
			"fs transparent solid 0.15 lc rgb '#808080' notitle, '' using 1:5 with steps lw 3 lc rgb '#404040' "
			"title 'real capacity'", s->name, s->name, 1 - TRACK_BAND, 1 + TRACK_BAND);
		static const char *const titles[] = { "limit in force (the levels share it)",
						      "capacity in force, summed over the backends",
						      "learned limits, summed over the backends" };
		const double *cols[] = { s->limit_in_force, s->capacity_sum, s->learned_sum };
		for (int c = 0; c < 3; c++)
			if (any_sample(cols[c], s->n_bins))
				emit(p, ", '' using 1:%d with lines lw %s lc %d title '%s'", 2 + c, c == 1 ? "1.5 dt 2" : "2",
				     c + 1, titles[c]);
		emit(p, "\n");
	}
	emit(p, "unset multiplot\n");
}

static int run_gnuplot(const char *dir, const char *script)
{
	pid_t pid = fork();
	if (pid == 0) {
		if (chdir(dir))
			_exit(126);
		execlp("gnuplot", "gnuplot", script, (char *)NULL);
		fprintf(stderr, "fairgate-bench run: cannot run gnuplot (Debian: apt-get install gnuplot-nox): %s\n",
			strerror(errno));
		_exit(127);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		return -EIO;
	return 0;
}

static int draw(const char *dir, struct plot *p, json_t *plots)
{
	char name[96];
	snprintf(name, sizeof(name), "plots/%s.gp", p->name);
	FILE *f = open_in(dir, name);
	if (!f)
		return -errno;
	static const char *const terms[][2] = { { "pngcairo", "png" }, { "svg", "svg" } };
	for (int t = 0; t < 2; t++) {
		fprintf(f, "reset\nset terminal %s size %d,%d font ',10'\nset output 'plots/%s.%s'\nset grid\n",
			terms[t][0], FG_REPORT_PLOT_W, FG_REPORT_PLOT_H, p->name, terms[t][1]);
		fputs(p->body ? p->body : "", f);
		fputs("unset output\n", f);
		snprintf(name, sizeof(name), "plots/%s.%s", p->name, terms[t][1]);
		json_array_append_new(plots, json_string(name));
	}
	fclose(f);
	snprintf(name, sizeof(name), "plots/%s.gp", p->name);
	if (run_gnuplot(dir, name)) {
		fprintf(stderr, "fairgate-bench run: gnuplot failed on %s/%s\n", dir, name);
		return -EIO;
	}
	return 0;
}

/* --- report.md ---------------------------------------------------------- */

static void md_run_table(FILE *f, const struct analysis *a)
{
	const struct fg_series *s = a->s;
	char jain[16];
	snprintf(jain, sizeof(jain), isnan(a->jain) ? "—" : "%.3f", a->jain);
	fprintf(f, "\n### %s (Jain's index %s)\n\n| flow | level | sent | responses | resp/s | rejected | lost | p50 ms | "
		   "p90 ms | p99 ms | p99.9 ms | fair-share error |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
		s->name, jain);
	for (unsigned i = 0; i < s->scn->n_flows; i++) {
		const struct fg_series_flow *fl = &s->flows[i];
		char e[16];
		snprintf(e, sizeof(e), isnan(a->flow_error[i]) ? "—" : "%.0f%%", 100 * a->flow_error[i]);
		fprintf(f, "| %s | %s | %llu | %llu | %.1f | %llu | %llu | %.2f | %.2f | %.2f | %.2f | %s |\n",
			s->scn->flows[i].name, fl->level, (unsigned long long)fl->sent, (unsigned long long)fl->responses,
			fl->answer_seconds > 0 ? (double)fl->responses / fl->answer_seconds : 0.0,
			(unsigned long long)rejected_total(fl), (unsigned long long)fl->lost, fg_series_quantile(fl, 0.5),
			fg_series_quantile(fl, 0.9), fg_series_quantile(fl, 0.99), fg_series_quantile(fl, 0.999), e);
	}
	fprintf(f, "\n| phase | Jain |");
	for (unsigned i = 0; i < s->scn->n_flows; i++)
		fprintf(f, " %s seats / fair share |", s->scn->flows[i].name);
	fprintf(f, "\n|---|---:|");
	for (unsigned i = 0; i < s->scn->n_flows; i++)
		fprintf(f, "---:|");
	fprintf(f, "\n");
	for (unsigned k = 0; k < a->n_phases; k++) {
		const struct phase *p = &a->phases[k];
		fprintf(f, "| %.1f–%.1f s | ", (double)p->from / 1e9, (double)p->to / 1e9);
		fprintf(f, isnan(p->jain) ? "— |" : "%.3f |", p->jain);
		for (unsigned i = 0; i < s->scn->n_flows; i++)
			if (p->active[i] && !isnan(p->fair[i]))
				fprintf(f, " %.1f / %.1f |", p->seats[i], p->fair[i]);
			else
				fprintf(f, " — |");
		fprintf(f, "\n");
	}
}

static void md_tracking(FILE *f, const struct analysis *a)
{
	const struct tracking *t = &a->track;
	fprintf(f, "\n### %s\n\n", a->s->name);
	if (isnan(t->utilisation))
		fprintf(f, "Backend utilisation: — (no real capacity).\n");
	else
		fprintf(f, "Backend utilisation from %.1f s: %.0f%% of their real capacity (answers x service time over "
			"capacity x time).\n", (double)t->util_from / 1e9, 100 * t->utilisation);
	if (!t->adaptive) {
		fprintf(f, "\nNo learned limit (Static mode).\n");
		return;
	}
	fprintf(f, "\n| change at | real capacity | service time x | learned sum within %.0f%% after |\n|---:|---:|---:|---:|\n",
		100 * TRACK_BAND);
	for (unsigned c = 0; c < t->n_changes; c++) {
		const struct change *ch = &t->changes[c];
		char before[24], within[24];
		snprintf(before, sizeof(before), isnan(ch->before) ? "" : "%.0f → ", ch->before);
		snprintf(within, sizeof(within), isnan(ch->within_s) ? "not reached" : "%.1f s", ch->within_s);
		fprintf(f, "| %.1f s | %s%.0f | %.2f | %s |\n", (double)ch->at / 1e9, before, ch->after, ch->scale, within);
	}
	fprintf(f, "\n| steady state | learned sum mean | min | max | oscillation (max-min)/mean |\n|---|---:|---:|---:|---:|\n");
	for (unsigned k = 0; k < t->n_windows; k++) {
		const struct window *w = &t->windows[k];
		fprintf(f, "| %.1f–%.1f s | %.1f | %.0f | %.0f | %.0f%% |\n", (double)w->from / 1e9, (double)w->to / 1e9,
			w->mean, w->min, w->max, 100 * w->oscillation);
	}
	if (!t->n_windows)
		fprintf(f, "| — (no window of a second past its settling time) | | | | |\n");
}

int fg_report_write(const struct fg_scenario *scn, struct fg_series *const runs[2], const char *dir)
{
	static struct analysis an[2];
	analyse(runs[0], &an[0]);
	analyse(runs[1], &an[1]);
	const struct analysis *a[2] = { &an[0], &an[1] };
	int rc = 0;
	for (int k = 0; k < 2 && !rc; k++)
		rc = write_data(dir, a[k]);
	struct plot plots[] = {
		{ "throughput", "Requests per second per flow" },
		{ "latency-over-time", "Latency percentiles per flow over time" },
		{ "latency-cdf", "Latency CDF per flow" },
		{ "seats", "Seats in use per priority level against its limit" },
		{ "rejects", "Rejects per second by reason" },
		{ "fairness", "Seats per flow against the max-min fair share" },
		{ "backends", "Backends' limit against their real capacity" },
	};
	void (*const drawers[])(struct plot *, const struct analysis *[2]) = { plot_throughput, plot_latency_time,
		plot_cdf, plot_seats, plot_rejects, plot_fairness, plot_backends };
	json_t *plot_files = json_array();
	for (size_t i = 0; i < sizeof(plots) / sizeof(plots[0]); i++) {
		drawers[i](&plots[i], a);
		if (!rc)
			rc = draw(dir, &plots[i], plot_files);
	}
	/* Verdicts over the whole run, and (with a settle time) after it. */
	json_t *verdicts = json_array(), *settled = scn->settle_ns ? json_array() : json_null();
	static char text[2][FG_SCN_MAX_FLOWS][512];
	for (int after = 0; after < (scn->settle_ns ? 2 : 1); after++)
		for (unsigned i = 0; i < scn->n_flows; i++) {
			const char *word;
			verdict(a[0], a[1], i, after, text[after][i], sizeof(text[after][i]), &word);
			json_array_append_new(after ? settled : verdicts, json_pack("{s:s, s:s, s:s}", "flow",
				scn->flows[i].name, "verdict", word, "text", text[after][i]));
		}
	static struct expectation ex[MAX_EXPECT_LINES];
	unsigned n_ex = expectations(a, ex);
	json_t *exj = json_array();
	for (unsigned e = 0; e < n_ex; e++)
		json_array_append_new(exj, json_pack("{s:s, s:s, s:o, s:f, s:b, s:s}", "run", ex[e].run, "expect", ex[e].what,
						     "value", num(ex[e].value), "bound", ex[e].bound, "met", ex[e].met,
						     "text", ex[e].text));
	json_t *doc = json_pack("{s:s, s:s, s:f, s:f, s:I, s:[o, o], s:o, s:o, s:o, s:o}", "scenario", scn->name,
		"description", scn->description, "durationSeconds", (double)scn->duration_ns / 1e9, "settleSeconds",
		(double)scn->settle_ns / 1e9, "seatLimit", (json_int_t)scn->seat_limit, "runs", run_json(a[0]),
		run_json(a[1]), "verdicts", verdicts, "verdictsAfterSettle", settled, "expectations", exj, "plots",
		json_deep_copy(plot_files));
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/report.json", dir);
	if (!doc || json_dump_file(doc, path, JSON_INDENT(1))) {
		fprintf(stderr, "fairgate-bench run: cannot write %s\n", path);
		rc = rc ? rc : -EIO;
	}
	json_decref(doc);
	FILE *md = open_in(dir, "report.md");
	if (md) {
		if (scn->baseline_settings)
			fprintf(md, "# %s: fairgate against the baseline (%s)\n\n%s\n\n## Verdicts\n\n", scn->name,
				scn->baseline_description, scn->description);
		else
			fprintf(md, "# %s: fairgate against a baseline without fairness\n\n%s\n\n## Verdicts\n\n",
				scn->name, scn->description);
		if (scn->settle_ns)
			fprintf(md, "Over the whole run:\n\n");
		for (unsigned i = 0; i < scn->n_flows; i++)
			fprintf(md, "- %s\n", text[0][i]);
		if (scn->settle_ns) {
			fprintf(md, "\nAfter the settle time (%.1f s on; latency and losses of that part, fair shares the "
				"whole run's):\n\n", (double)scn->settle_ns / 1e9);
			for (unsigned i = 0; i < scn->n_flows; i++)
				fprintf(md, "- %s\n", text[1][i]);
		}
		if (n_ex) {
			fprintf(md, "\n## Expectations (the scenario's `expect`)\n\n");
			for (unsigned e = 0; e < n_ex; e++)
				fprintf(md, "- %s\n", ex[e].text);
		}
		fprintf(md, "\n## Backends' limit against their real capacity\n\nThe learned limits' sum (Adaptive) "
			"against the backends' real capacity (the scenario's workers, changed by its events): when it first "
			"came within %.0f%% after the start and each backend change, and its steady-state oscillation between "
			"changes, leaving out each window's first %.1f s (the plot: `backends`).\n",
			100 * TRACK_BAND, (double)(scn->settle_ns ? scn->settle_ns : TRACK_SKIP_NS) / 1e9);
		md_tracking(md, a[0]);
		md_tracking(md, a[1]);
		fprintf(md, "\n## Flows\n");
		md_run_table(md, a[0]);
		md_run_table(md, a[1]);
		fprintf(md, "\n## Plots\n");
		for (size_t i = 0; i < sizeof(plots) / sizeof(plots[0]); i++)
			fprintf(md, "\n### %s\n\n![%s](plots/%s.png)\n", plots[i].title, plots[i].title, plots[i].name);
		fclose(md);
	} else {
		rc = rc ? rc : -EIO;
	}
	for (size_t i = 0; i < sizeof(plots) / sizeof(plots[0]); i++)
		free(plots[i].body);
	json_decref(plot_files);
	printf("\n");
	for (unsigned i = 0; i < scn->n_flows; i++)
		printf("%s\n", text[0][i]);
	if (scn->settle_ns) {
		printf("after %.1f s:\n", (double)scn->settle_ns / 1e9);
		for (unsigned i = 0; i < scn->n_flows; i++)
			printf("  %s\n", text[1][i]);
	}
	for (unsigned e = 0; e < n_ex; e++)
		printf("expect %s\n", ex[e].text);
	for (int k = 0; k < 2; k++) {
		const struct tracking *t = &a[k]->track;
		if (!isnan(t->utilisation))
			printf("%s: backend utilisation from %.1f s %.0f%%\n", a[k]->s->name, (double)t->util_from / 1e9,
			       100 * t->utilisation);
		for (unsigned c = 0; t->adaptive && c < t->n_changes; c++) {
			const struct change *ch = &t->changes[c];
			if (isnan(ch->within_s))
				printf("%s: learned limit not within %.0f%% of the real capacity (%.0f) after %.1f s\n",
				       a[k]->s->name, 100 * TRACK_BAND, ch->after, (double)ch->at / 1e9);
			else
				printf("%s: learned limit within %.0f%% of the real capacity (%.0f) %.1f s after %.1f s\n",
				       a[k]->s->name, 100 * TRACK_BAND, ch->after, ch->within_s, (double)ch->at / 1e9);
		}
		if (t->adaptive && !isnan(t->worst))
			printf("%s: steady-state oscillation of the learned limit at most %.0f%%\n", a[k]->s->name, 100 * t->worst);
	}
	printf("\nreport: %s/report.md (report.json, plots/*.png and *.svg)\n", dir);
	return rc;
}
