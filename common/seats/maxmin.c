/* SPDX-License-Identifier: Apache-2.0 */
/* maxmin — bounded weighted max-min by a sweep over sorted breakpoints; see maxmin.h. */
#include "maxmin.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

/* One breakpoint of sum(alloc(p)): item `code / 2`'s lower (code even) or
 * upper (code odd) bound divided by its weight. */
struct breakpoint {
	double p;
	uint32_t code;
};

_Static_assert(FG_MAXMIN_MAX_ITEMS * 2ull + 1 <= UINT32_MAX, "a breakpoint's code fits 32 bits");

static int cmp_breakpoint(const void *a, const void *b)
{
	const struct breakpoint *x = a, *y = b;
	if (x->p != y->p)
		return x->p < y->p ? -1 : 1;
	/* At equal proportions a lower bound comes first, so the slope of the
	 * sum never goes negative on the way. */
	return (int)(x->code & 1) - (int)(y->code & 1);
}

static int fail(struct fg_maxmin_error *err, enum fg_maxmin_reason r, size_t index, double value, double bound)
{
	if (err)
		*err = (struct fg_maxmin_error){ r, index, value, bound };
	switch (r) {
	case FG_MAXMIN_LOWERS_ABOVE_SUM:
	case FG_MAXMIN_UPPERS_BELOW_SUM:
		return -ERANGE;
	default:
		return -EINVAL;
	}
}

/* The weight the proportion multiplies: Kubernetes raises tiny targets so
 * that it can divide by them. */
static double weight_of(const struct fg_maxmin_item *it, unsigned flags)
{
	return (flags & FG_MAXMIN_KUBE) && !(it->weight >= FG_MAXMIN_MIN_TARGET) ? FG_MAXMIN_MIN_TARGET : it->weight;
}

static double clamp(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }

/* The proportion where sum(clamp(w p, lower, upper)) reaches total, known
 * to lie strictly between sum(lower) and sum(upper). */
static int sweep(double total, const struct fg_maxmin_item *items, size_t n, unsigned flags, double low_sum,
		 double *prop)
{
	struct breakpoint *bp = malloc(sizeof(*bp) * 2 * n);
	if (!bp)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		double w = weight_of(&items[i], flags);
		bp[2 * i] = (struct breakpoint){ items[i].lower / w, (uint32_t)(2 * i) };
		bp[2 * i + 1] = (struct breakpoint){ items[i].upper / w, (uint32_t)(2 * i + 1) };
	}
	qsort(bp, 2 * n, sizeof(*bp), cmp_breakpoint);
	/* Below the smallest lower ratio every item sits at its lower bound;
	 * between breakpoints the sum grows by `slope` (the weights of the
	 * items between their bounds) per unit of p. */
	double p = bp[0].p, sum = low_sum, slope = 0;
	for (size_t k = 0; k < 2 * n; k++) {
		double next = bp[k].p;
		if (next > p && slope > 0) {
			double reach = sum + slope * (next - p);
			if (reach >= total) {
				*prop = p + (total - sum) / slope;
				free(bp);
				return 0;
			}
			sum = reach;
		}
		if (next > p)
			p = next;
		double w = weight_of(&items[bp[k].code / 2], flags);
		slope += (bp[k].code & 1) ? -w : w;
	}
	/* Rounding kept the sum a hair short: every item is at its upper bound. */
	*prop = p;
	free(bp);
	return 0;
}

int fg_maxmin_solve(double total, const struct fg_maxmin_item *items, size_t n, unsigned flags, double *alloc,
		    double *fair_prop, struct fg_maxmin_error *err)
{
	bool kube = flags & FG_MAXMIN_KUBE;
	if (err)
		err->reason = FG_MAXMIN_OK;
	if (!(total >= 0) || isinf(total))
		return fail(err, FG_MAXMIN_NEGATIVE_SUM, 0, total, 0);
	if (n > FG_MAXMIN_MAX_ITEMS)
		return fail(err, FG_MAXMIN_TOO_MANY, n, (double)n, (double)FG_MAXMIN_MAX_ITEMS);
	double low_sum = 0, high_sum = 0, weight_sum = 0;
	double min_lo = DBL_MAX, max_lo = 0, min_hi = DBL_MAX, max_hi = 0;
	for (size_t i = 0; i < n; i++) {
		const struct fg_maxmin_item *it = &items[i];
		if (!(it->lower >= 0) || isinf(it->lower))
			return fail(err, FG_MAXMIN_NEGATIVE_LOWER, i, it->lower, 0);
		if (kube && !(it->weight >= it->lower))
			return fail(err, FG_MAXMIN_TARGET_BELOW_LOWER, i, it->weight, it->lower);
		if (!(it->upper >= it->lower))
			return fail(err, FG_MAXMIN_UPPER_BELOW_LOWER, i, it->upper, it->lower);
		if (!kube && !(it->weight > 0 && isfinite(it->weight)))
			return fail(err, FG_MAXMIN_BAD_WEIGHT, i, it->weight, 0);
		if (kube && isinf(it->weight))
			return fail(err, FG_MAXMIN_BAD_WEIGHT, i, it->weight, 0);
		double w = weight_of(it, flags);
		low_sum += it->lower;
		high_sum += it->upper;
		weight_sum += w;
		double lo = it->lower / w, hi = it->upper / w;
		min_lo = fmin(min_lo, lo);
		max_lo = fmax(max_lo, lo);
		min_hi = fmin(min_hi, hi);
		max_hi = fmax(max_hi, hi);
	}
	if (low_sum - total > FG_MAXMIN_EPSILON)
		return fail(err, FG_MAXMIN_LOWERS_ABOVE_SUM, 0, low_sum, total);
	bool slack = (flags & FG_MAXMIN_SLACK) && total - high_sum > -FG_MAXMIN_EPSILON;
	if (total - high_sum > FG_MAXMIN_EPSILON && !slack)
		return fail(err, FG_MAXMIN_UPPERS_BELOW_SUM, 0, high_sum, total);

	double prop;
	if (n == 0 || total == 0) {
		prop = 0;
	} else if (low_sum - total > -FG_MAXMIN_EPSILON) {
		prop = min_lo; /* no room: everyone at the lower bound */
	} else if (slack || total - high_sum > -FG_MAXMIN_EPSILON) {
		prop = max_hi; /* no room: everyone at the upper bound */
	} else {
		prop = total / weight_sum;
		if (!(max_lo <= prop && prop <= min_hi)) {
			int rc = sweep(total, items, n, flags, low_sum, &prop);
			if (rc)
				return rc;
		}
	}
	for (size_t i = 0; i < n; i++)
		alloc[i] = total == 0 ? 0 : clamp(weight_of(&items[i], flags) * prop, items[i].lower, items[i].upper);
	if (fair_prop)
		*fair_prop = prop;
	return 0;
}

const char *fg_maxmin_strerror(const struct fg_maxmin_error *e, char *buf, size_t len)
{
	switch (e->reason) {
	case FG_MAXMIN_OK:
		snprintf(buf, len, "ok");
		break;
	case FG_MAXMIN_NEGATIVE_SUM:
		snprintf(buf, len, "negative sums are not supported");
		break;
	case FG_MAXMIN_NEGATIVE_LOWER:
		snprintf(buf, len, "lower bound %zu is %g but negative lower bounds are not allowed", e->index,
			 e->value);
		break;
	case FG_MAXMIN_TARGET_BELOW_LOWER:
		snprintf(buf, len, "target %zu is %g, which is below its lower bound of %g", e->index, e->value,
			 e->bound);
		break;
	case FG_MAXMIN_UPPER_BELOW_LOWER:
		snprintf(buf, len, "upper bound %zu is %g but should not be less than the lower bound %g", e->index,
			 e->value, e->bound);
		break;
	case FG_MAXMIN_BAD_WEIGHT:
		snprintf(buf, len, "weight %zu is %g but weights must be positive and finite", e->index, e->value);
		break;
	case FG_MAXMIN_LOWERS_ABOVE_SUM:
		snprintf(buf, len, "lower bounds sum to %g, which is higher than the required sum of %g", e->value,
			 e->bound);
		break;
	case FG_MAXMIN_UPPERS_BELOW_SUM:
		snprintf(buf, len, "upper bounds sum to %g, which is lower than the required sum of %g", e->value,
			 e->bound);
		break;
	case FG_MAXMIN_TOO_MANY:
		snprintf(buf, len, "%zu items, more than the %g supported", e->index, e->bound);
		break;
	}
	return buf;
}

struct frac {
	double f;
	uint32_t i;
};

static int cmp_frac_desc(const void *a, const void *b)
{
	const struct frac *x = a, *y = b;
	if (x->f != y->f)
		return x->f > y->f ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

int fg_maxmin_round(const double *alloc, size_t n, uint64_t total, uint64_t *out)
{
	if (n > FG_MAXMIN_MAX_ITEMS)
		return -ERANGE;
	uint64_t floors = 0, ceils = 0;
	for (size_t i = 0; i < n; i++) {
		double a = alloc[i] < 0 ? 0 : alloc[i];
		/* A hair below a whole number is that number, not its floor. */
		double f = floor(a + FG_MAXMIN_EPSILON);
		floors += (uint64_t)f;
		ceils += (uint64_t)f + (a - f > FG_MAXMIN_EPSILON);
	}
	if (floors > total || ceils < total)
		return -ERANGE;
	uint64_t left = total - floors;
	struct frac *fr = NULL;
	if (left) {
		fr = malloc(sizeof(*fr) * n);
		if (!fr)
			return -ENOMEM;
	}
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		double a = alloc[i] < 0 ? 0 : alloc[i];
		double f = floor(a + FG_MAXMIN_EPSILON);
		out[i] = (uint64_t)f;
		if (left && a - f > FG_MAXMIN_EPSILON)
			fr[m++] = (struct frac){ a - f, (uint32_t)i };
	}
	if (left) {
		qsort(fr, m, sizeof(*fr), cmp_frac_desc);
		for (size_t k = 0; k < left; k++)
			out[fr[k].i]++;
		free(fr);
	}
	return 0;
}
