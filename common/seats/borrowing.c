/* SPDX-License-Identifier: Apache-2.0 */
/* borrowing — demand statistics and the borrowing round; see borrowing.h. */
#include "borrowing.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

/* Integrate the current value up to now. */
static void advance(struct fg_borrowing_demand *d, uint64_t now_ns)
{
	/* A clock that seems to step back integrates nothing, not negative time. */
	double dt = now_ns > d->last_ns ? (double)(now_ns - d->last_ns) / FG_NS_PER_SEC : 0;
	if (now_ns > d->last_ns)
		d->last_ns = now_ns;
	d->elapsed += dt;
	d->ix += d->x * dt;
	d->ixx += d->x * d->x * dt;
}

void fg_borrowing_demand_init(struct fg_borrowing_demand *d, uint64_t now_ns, double x)
{
	*d = (struct fg_borrowing_demand){ .last_ns = now_ns, .x = x, .min = x, .max = x };
}

void fg_borrowing_demand_set(struct fg_borrowing_demand *d, uint64_t now_ns, double x)
{
	advance(d, now_ns);
	d->x = x;
	d->min = fmin(d->min, x);
	d->max = fmax(d->max, x);
}

void fg_borrowing_demand_add(struct fg_borrowing_demand *d, uint64_t now_ns, double dx)
{
	fg_borrowing_demand_set(d, now_ns, d->x + dx);
}

struct fg_borrowing_obs fg_borrowing_demand_reset(struct fg_borrowing_demand *d, uint64_t now_ns)
{
	advance(d, now_ns);
	struct fg_borrowing_obs o = { .duration = d->elapsed, .min = d->min, .max = d->max, .avg = NAN, .stddev = NAN };
	if (d->elapsed > 0) {
		o.avg = d->ix / d->elapsed;
		/* Kubernetes' formula, E[x^2] - E[x]^2, with its NaN when
		 * cancellation makes it negative. */
		double var = d->ixx / d->elapsed - o.avg * o.avg;
		if (var >= 0)
			o.stddev = sqrt(var);
	}
	d->elapsed = d->ix = d->ixx = 0;
	d->min = d->max = d->x;
	return o;
}

void fg_borrowing_stats_update(struct fg_borrowing_stats *s, const struct fg_borrowing_obs *obs)
{
	s->hwm = round(obs->max);
	if (!(obs->duration > 0))
		return;
	double dev = isnan(obs->stddev) ? 0 : obs->stddev;
	s->avg = obs->avg;
	s->stddev = dev;
	double envelope = obs->avg + dev;
	s->smoothed = fmax(envelope, FG_BORROWING_SMOOTHING * s->smoothed + (1 - FG_BORROWING_SMOOTHING) * envelope);
}

void fg_borrowing_level_init(struct fg_borrowing_level *l, bool exempt, uint32_t nominal, uint32_t min, uint32_t max,
			     uint64_t now_ns)
{
	*l = (struct fg_borrowing_level){ .exempt = exempt, .nominal = nominal, .min = min, .max = max };
	fg_borrowing_demand_init(&l->demand, now_ns, 0);
	l->current = nominal - (nominal - min) / 2;
	l->lower = min;
}

static double dmax(double a, double b) { return a > b ? a : b; }
static double dmin(double a, double b) { return a < b ? a : b; }

/* A real seat count as a limit: Go's math.Round, never negative. */
static uint32_t to_seats(double x)
{
	double r = round(x);
	return r <= 0 ? 0 : r >= UINT32_MAX ? UINT32_MAX : (uint32_t)r;
}

int fg_borrowing_round(struct fg_borrowing_level *levels, size_t n, uint32_t nominal_sum, uint64_t now_ns,
		       struct fg_borrowing_result *res)
{
	if (n == 0 || n > FG_MAX_LEVELS)
		return -EINVAL;
	struct fg_maxmin_item *items = malloc(sizeof(*items) * n);
	double *alloc = malloc(sizeof(*alloc) * n);
	uint32_t *index = malloc(sizeof(*index) * n);
	if (!items || !alloc || !index) {
		free(items);
		free(alloc);
		free(index);
		return -ENOMEM;
	}
	*res = (struct fg_borrowing_result){ 0 };
	int64_t remaining = nominal_sum, min_sum = 0, lower_sum = 0;
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		struct fg_borrowing_level *l = &levels[i];
		struct fg_borrowing_obs obs = fg_borrowing_demand_reset(&l->demand, now_ns);
		fg_borrowing_stats_update(&l->stats, &obs);
		double hwm = l->stats.hwm;
		if (l->exempt) {
			/* Exempt takes what it used, before anyone else: it is
			 * never limited, so its use is simply not available. */
			l->lower = to_seats(dmax(l->min, hwm));
			l->current = l->lower;
			l->target = l->current;
			remaining -= l->current;
			continue;
		}
		l->lower = to_seats(dmax(l->min, dmin(l->nominal, hwm)));
		l->target = dmax(l->lower, l->stats.smoothed);
		items[m] = (struct fg_maxmin_item){ l->target, l->lower, l->max };
		index[m++] = (uint32_t)i;
		min_sum += l->min;
		lower_sum += l->lower;
	}
	res->remaining = remaining;
	if (remaining <= min_sum) {
		res->kase = FG_BORROWING_AT_MIN;
		for (size_t k = 0; k < m; k++)
			levels[index[k]].current = levels[index[k]].min;
	} else if (remaining <= lower_sum) {
		/* The levels' guaranteed parts, then the rest in proportion to
		 * what each would take above its minimum. */
		res->kase = FG_BORROWING_BETWEEN;
		double share = (double)(remaining - min_sum) / (double)(lower_sum - min_sum);
		for (size_t k = 0; k < m; k++) {
			struct fg_borrowing_level *l = &levels[index[k]];
			l->current = l->min + to_seats((double)(l->lower - l->min) * share);
		}
	} else {
		res->kase = FG_BORROWING_FAIR;
		double prop = 0;
		if (fg_maxmin_solve(nominal_sum, items, m, FG_MAXMIN_KUBE, alloc, &prop, NULL) == 0) {
			res->fair_frac = prop;
			for (size_t k = 0; k < m; k++)
				levels[index[k]].current = to_seats(alloc[k]);
		} else {
			res->backstop = true;
		}
	}
	free(items);
	free(alloc);
	free(index);
	return 0;
}
