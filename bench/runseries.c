/* SPDX-License-Identifier: Apache-2.0 */
/* runseries — a run's recorded time series and totals; see runseries.h. */
#include "runseries.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double *nan_array(size_t n)
{
	double *a = malloc(n * sizeof(*a));
	for (size_t i = 0; a && i < n; i++)
		a[i] = NAN;
	return a;
}

struct fg_series *fg_series_new(const struct fg_scenario *scn, const char *name)
{
	struct fg_series *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->name = name;
	s->scn = scn;
	s->n_bins = (size_t)(scn->duration_ns / FG_SERIES_BIN_NS);
	for (unsigned i = 0; i < scn->n_flows; i++) {
		struct fg_series_flow *f = &s->flows[i];
		f->weight = 1.0;
		f->reject_p99_ms = NAN;
		f->bins = calloc(s->n_bins, sizeof(*f->bins));
		if (!f->bins)
			goto bad;
		for (size_t b = 0; b < s->n_bins; b++)
			f->bins[b].p50 = f->bins[b].p90 = f->bins[b].p99 = f->bins[b].p999 = f->bins[b].seats = NAN;
	}
	for (int r = 0; r < FG_REJECT__COUNT; r++)
		if (!(s->rejects_per_s[r] = nan_array(s->n_bins)))
			goto bad;
	s->limit_in_force = nan_array(s->n_bins);
	s->capacity_sum = nan_array(s->n_bins);
	s->learned_sum = nan_array(s->n_bins);
	s->real_capacity = nan_array(s->n_bins);
	if (!s->limit_in_force || !s->capacity_sum || !s->learned_sum || !s->real_capacity)
		goto bad;
	/* What the backends take as the status sample at the bin's end sees it. */
	for (size_t b = 0; b < s->n_bins; b++)
		s->real_capacity[b] = fg_scn_capacity_at(scn, (int64_t)(b + 1) * FG_SERIES_BIN_NS - 1, NULL);
	return s;
bad:
	fg_series_free(s);
	return NULL;
}

void fg_series_free(struct fg_series *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < FG_SCN_MAX_FLOWS; i++) {
		free(s->flows[i].bins);
		free(s->flows[i].hist);
		free(s->flows[i].settled);
	}
	free(s->limit_in_force);
	free(s->capacity_sum);
	free(s->learned_sum);
	free(s->real_capacity);
	for (unsigned i = 0; i < s->n_levels; i++) {
		free(s->levels[i].in_use);
		free(s->levels[i].limit);
	}
	for (int r = 0; r < FG_REJECT__COUNT; r++)
		free(s->rejects_per_s[r]);
	free(s);
}

static int flow_index(const struct fg_series *s, const char *name)
{
	for (unsigned i = 0; name && i < s->scn->n_flows; i++)
		if (!strcmp(s->scn->flows[i].name, name))
			return (int)i;
	return -1;
}

static uint64_t count_of(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

static double ms_of(json_t *lat, const char *key)
{
	json_t *v = json_object_get(lat, key);
	return json_is_number(v) && json_number_value(v) >= 0 ? json_number_value(v) : NAN;
}

/* NAN-aware max: a bin two steps' intervals share keeps the worse. */
static double worse(double a, double b)
{
	return isnan(a) ? b : isnan(b) ? a : fmax(a, b);
}

/* A histogram being merged into: one of a flow's two. */
struct hist_ref {
	struct fg_series_bucket **b;
	size_t *n, *cap;
};

static void add_bucket(struct fg_series *s, struct hist_ref h, double low, double high, uint64_t count)
{
	size_t lo = 0, hi = *h.n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if ((*h.b)[mid].low_us < low)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < *h.n && (*h.b)[lo].low_us == low) {
		(*h.b)[lo].count += count;
		return;
	}
	if (*h.n == FG_SERIES_MAX_BUCKETS) {
		s->dropped_buckets++;
		return;
	}
	if (*h.n == *h.cap) {
		size_t cap = *h.cap ? 2 * *h.cap : 256;
		struct fg_series_bucket *n = realloc(*h.b, cap * sizeof(*n));
		if (!n) {
			s->dropped_buckets++;
			return;
		}
		*h.b = n;
		*h.cap = cap;
	}
	memmove(&(*h.b)[lo + 1], &(*h.b)[lo], (*h.n - lo) * sizeof(**h.b));
	(*h.b)[lo] = (struct fg_series_bucket){ low, high, count };
	(*h.n)++;
}

/* A line's histogramUs ([[low, high, count], ...]) merged into h. */
static void add_histogram(struct fg_series *s, struct hist_ref h, json_t *arr)
{
	size_t j;
	json_t *bk;
	json_array_foreach(arr, j, bk) {
		json_t *lo = json_array_get(bk, 0), *hi = json_array_get(bk, 1), *c = json_array_get(bk, 2);
		if (json_is_number(lo) && json_is_number(hi) && json_is_integer(c) && json_integer_value(c) > 0 &&
		    json_number_value(lo) >= 0 && json_number_value(hi) >= json_number_value(lo))
			add_bucket(s, h, json_number_value(lo), json_number_value(hi), (uint64_t)json_integer_value(c));
	}
}

static void interval_line(struct fg_series *s, json_t *doc, int64_t offset_ns)
{
	json_t *t = json_object_get(doc, "t"), *fl;
	if (!json_is_number(t))
		return;
	double end_ns = (double)offset_ns + json_number_value(t) * 1e9;
	/* The interval ends at end_ns: its bin is the one it (mostly) covers. */
	long bin = lround(end_ns / (double)FG_SERIES_BIN_NS) - 1;
	if (bin < 0)
		return;
	/* From the settle time on, the interval's answers count after it (those
	 * answered after the run's end too: loadgen waits for them). */
	bool settled = s->scn->settle_ns > 0 && (int64_t)bin * FG_SERIES_BIN_NS >= s->scn->settle_ns;
	size_t i;
	json_array_foreach(json_object_get(doc, "flows"), i, fl) {
		int k = flow_index(s, json_string_value(json_object_get(fl, "name")));
		if (k < 0)
			continue;
		struct fg_series_flow *sf = &s->flows[k];
		if (settled)
			add_histogram(s, (struct hist_ref){ &sf->settled, &sf->n_settled, &sf->cap_settled },
				      json_object_get(fl, "histogramUs"));
		if ((size_t)bin >= s->n_bins)
			continue;
		struct fg_series_bin *b = &sf->bins[bin];
		b->sent += count_of(fl, "sent");
		b->responses += count_of(fl, "responses");
		b->lost += count_of(fl, "lost");
		const char *reason;
		json_t *n;
		json_object_foreach(json_object_get(fl, "rejected"), reason, n)
			b->rejected += json_is_integer(n) && json_integer_value(n) > 0 ? (uint64_t)json_integer_value(n) : 0;
		json_t *lat = json_object_get(fl, "latencyMs");
		if (s->flows[k].seats_estimated)
			b->seats = (double)b->responses * (1e9 / (double)FG_SERIES_BIN_NS) *
				   fg_scn_flow_service_s(s->scn, &s->scn->flows[k]) * s->scn->flows[k].width;
		if (count_of(fl, "responses")) {
			b->p50 = worse(b->p50, ms_of(lat, "p50"));
			b->p90 = worse(b->p90, ms_of(lat, "p90"));
			b->p99 = worse(b->p99, ms_of(lat, "p99"));
			b->p999 = worse(b->p999, ms_of(lat, "p999"));
		}
	}
}

static void result_line(struct fg_series *s, json_t *doc, double step_s)
{
	json_t *fl;
	size_t i;
	json_array_foreach(json_object_get(doc, "flows"), i, fl) {
		int k = flow_index(s, json_string_value(json_object_get(fl, "name")));
		if (k < 0)
			continue;
		struct fg_series_flow *f = &s->flows[k];
		f->sent += count_of(fl, "sent");
		f->responses += count_of(fl, "responses");
		f->lost += count_of(fl, "lost");
		f->answer_seconds += step_s;
		const char *reason;
		json_t *n;
		json_object_foreach(json_object_get(fl, "rejected"), reason, n) {
			enum fg_reject_reason r = fg_reject_reason_parse(reason);
			if (r != FG_REJECT_NONE && json_is_integer(n) && json_integer_value(n) > 0)
				f->rejected[r] += (uint64_t)json_integer_value(n);
		}
		if (count_of(fl, "rejectedTotal"))
			f->reject_p99_ms = worse(f->reject_p99_ms, ms_of(json_object_get(fl, "rejectLatencyMs"), "p99"));
		add_histogram(s, (struct hist_ref){ &f->hist, &f->n_hist, &f->cap_hist }, json_object_get(fl, "histogramUs"));
	}
}

int fg_series_loadgen_line(struct fg_series *s, const char *line, size_t len, int64_t offset_ns, double step_s)
{
	json_t *doc = json_loadb(line, len, 0, NULL);
	const char *type = json_string_value(json_object_get(doc, "type"));
	int rc = 0;
	if (type && !strcmp(type, "interval"))
		interval_line(s, doc, offset_ns);
	else if (type && !strcmp(type, "result"))
		result_line(s, doc, step_s);
	else {
		s->bad_lines++;
		rc = -EINVAL;
	}
	json_decref(doc);
	return rc;
}

static struct fg_series_level *level_named(struct fg_series *s, const char *name)
{
	for (unsigned i = 0; i < s->n_levels; i++)
		if (!strcmp(s->levels[i].name, name))
			return &s->levels[i];
	if (s->n_levels == FG_SERIES_MAX_LEVELS || strlen(name) >= FG_SERIES_NAME_MAX)
		return NULL;
	struct fg_series_level *l = &s->levels[s->n_levels];
	l->in_use = nan_array(s->n_bins);
	l->limit = nan_array(s->n_bins);
	if (!l->in_use || !l->limit) {
		free(l->in_use);
		free(l->limit);
		l->in_use = l->limit = NULL;
		return NULL;
	}
	snprintf(l->name, sizeof(l->name), "%s", name);
	s->n_levels++;
	return l;
}

void fg_series_mark_shared(struct fg_series *s)
{
	for (unsigned i = 0; i < s->scn->n_flows; i++) {
		/* A tenant template is many fairgate flows: estimated too. */
		const struct fg_scn_flow *f = &s->scn->flows[i];
		if (strchr(f->user, '{') || (f->ns && strchr(f->ns, '{')))
			s->flows[i].seats_estimated = true;
		for (unsigned j = 0; j < s->scn->n_flows; j++)
			if (i != j && !strcmp(s->flows[i].level, s->flows[j].level) &&
			    !strcmp(s->flows[i].distinguisher, s->flows[j].distinguisher))
				s->flows[i].seats_estimated = true;
	}
}

void fg_series_status(struct fg_series *s, size_t bin, json_t *status)
{
	if (bin >= s->n_bins)
		return;
	json_t *v;
	size_t i;
	json_array_foreach(json_object_get(status, "priorityLevels"), i, v) {
		const char *name = json_string_value(json_object_get(v, "name"));
		struct fg_series_level *l = name ? level_named(s, name) : NULL;
		if (!l)
			continue;
		l->in_use[bin] = (double)count_of(v, "seatsInUse");
		l->limit[bin] = (double)count_of(v, "seatLimit");
	}
	for (unsigned k = 0; k < s->scn->n_flows; k++)
		if (!s->flows[k].seats_estimated)
			s->flows[k].bins[bin].seats = 0;
	json_array_foreach(json_object_get(status, "flows"), i, v) {
		const char *level = json_string_value(json_object_get(v, "priorityLevel"));
		const char *flow = json_string_value(json_object_get(v, "flow"));
		for (unsigned k = 0; level && flow && k < s->scn->n_flows; k++) {
			struct fg_series_flow *f = &s->flows[k];
			if (!f->seats_estimated && !strcmp(f->level, level) && !strcmp(f->distinguisher, flow))
				f->bins[bin].seats += (double)count_of(v, "seatsExecuting");
		}
	}
	/* The backends' side (status.c): what the levels share, and each
	 * backend's capacity in force and learned limit, summed. */
	json_t *in_force = json_object_get(status, "serverConcurrencyLimitInForce");
	if (json_is_integer(in_force))
		s->limit_in_force[bin] = (double)count_of(status, "serverConcurrencyLimitInForce");
	json_t *pool = json_object_get(status, "backendPool");
	if (json_is_array(pool)) {
		double cap = 0, learned = 0;
		bool any_learned = false;
		json_array_foreach(pool, i, v) {
			cap += (double)count_of(v, "capacitySeats");
			if (json_is_integer(json_object_get(v, "learnedLimitSeats"))) {
				learned += (double)count_of(v, "learnedLimitSeats");
				any_learned = true;
			}
		}
		s->capacity_sum[bin] = cap;
		if (any_learned)
			s->learned_sum[bin] = learned;
	}
	/* Counters are cumulative: a bin gets the rate since the last sample. */
	json_t *rej = json_object_get(json_object_get(status, "counters"), "rejected");
	for (int r = 1; r < FG_REJECT__COUNT; r++) {
		uint64_t now = count_of(rej, fg_reject_reason_name(r));
		if (s->have_last)
			s->rejects_per_s[r][bin] = (double)(now >= s->last_rejected[r] ? now - s->last_rejected[r] : 0) *
						   (1e9 / (double)FG_SERIES_BIN_NS);
		s->last_rejected[r] = now;
	}
	s->have_last = true;
}

double fg_series_hist_quantile(const struct fg_series_bucket *h, size_t n, double q)
{
	uint64_t total = 0, seen = 0;
	for (size_t i = 0; i < n; i++)
		total += h[i].count;
	if (!total)
		return NAN;
	uint64_t rank = (uint64_t)ceil(q * (double)total);
	if (rank < 1)
		rank = 1;
	for (size_t i = 0; i < n; i++) {
		seen += h[i].count;
		if (seen >= rank)
			return (h[i].low_us + h[i].high_us) / 2 / 1000.0;
	}
	return h[n - 1].high_us / 1000.0;
}

double fg_series_quantile(const struct fg_series_flow *f, double q)
{
	return fg_series_hist_quantile(f->hist, f->n_hist, q);
}

double fg_series_settled_quantile(const struct fg_series_flow *f, double q)
{
	return fg_series_hist_quantile(f->settled, f->n_settled, q);
}
