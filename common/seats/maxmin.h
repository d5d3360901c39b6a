/* SPDX-License-Identifier: Apache-2.0 */
/*
 * maxmin — one weighted max-min allocator with lower and upper bounds
 * (Kubernetes' computeConcurrencyAllocation, docs/apf-facts.md §4.5), for
 * borrowing between priority levels, Volcano-style deserved shares and,
 * where it fits, per-worker seat allotments.
 *
 * The problem: a total T and items i with a weight w_i > 0 and bounds
 * 0 <= lower_i <= upper_i.  The answer is the fair proportion p and
 *     alloc_i = clamp(w_i * p, lower_i, upper_i),   sum(alloc_i) = T,
 * so each item is either at w_i * p (its weighted fair share), or at a bound
 * that the fair share lies beyond.  sum(alloc(p)) is piecewise linear and
 * non-decreasing in p with breakpoints at lower_i / w_i and upper_i / w_i:
 * sorting the 2N breakpoints and sweeping them finds p in O(N log N).
 *
 * Mappings:
 *   - Kubernetes (FG_MAXMIN_KUBE): w_i is the target; a target below
 *     FG_MAXMIN_MIN_TARGET is raised to it (so a zero target is allowed),
 *     and a target below its lower bound is an error, as in Kubernetes.
 *   - Volcano's proportion plugin: w_i = queue weight, lower = guarantee
 *     (0), upper = min(request, capability); with FG_MAXMIN_SLACK, a total
 *     above every request leaves the rest unallocated instead of failing.
 *   - Plain max-min of seats over demands: w_i = 1, upper_i = demand_i.
 *
 * Invariants of a successful answer: lower_i <= alloc_i <= upper_i; the
 * allocations sum to T within FG_MAXMIN_EPSILON relative error (to
 * sum(upper) when FG_MAXMIN_SLACK applies); no item below w_i * p could get
 * more without taking from an item at or below its own weighted share.
 * Errors change nothing in `alloc`: every input is checked first.
 *
 * Thread contract: pure functions; reentrant; allocate only their scratch.
 */
#ifndef FG_MAXMIN_H
#define FG_MAXMIN_H

#include <stddef.h>
#include <stdint.h>

/* Kubernetes' constants (conc_alloc.go): the smallest target, and the slack
 * below which a sum counts as equal to the total. */
#define FG_MAXMIN_MIN_TARGET 0.001
#define FG_MAXMIN_EPSILON 1e-7

/* Largest item count: the sweep packs an item's index and which bound it is
 * in 32 bits. */
#define FG_MAXMIN_MAX_ITEMS (UINT32_MAX / 2)

enum fg_maxmin_flags {
	FG_MAXMIN_KUBE = 1u << 0,  /* weights are Kubernetes targets (see above) */
	FG_MAXMIN_SLACK = 1u << 1, /* T > sum(upper) is allowed: every item gets its upper bound */
};

struct fg_maxmin_item {
	double weight; /* > 0 (FG_MAXMIN_KUBE: a target >= lower, any value >= 0) */
	double lower;  /* >= 0 */
	double upper;  /* >= lower; may be INFINITY */
};

/* Why a problem has no answer; the messages are Kubernetes' own. */
enum fg_maxmin_reason {
	FG_MAXMIN_OK = 0,
	FG_MAXMIN_NEGATIVE_SUM,       /* T < 0 (or not a number) */
	FG_MAXMIN_NEGATIVE_LOWER,     /* lower_i < 0 (or not a number) */
	FG_MAXMIN_TARGET_BELOW_LOWER, /* FG_MAXMIN_KUBE: target_i < lower_i */
	FG_MAXMIN_UPPER_BELOW_LOWER,  /* upper_i < lower_i (or not a number) */
	FG_MAXMIN_BAD_WEIGHT,         /* without FG_MAXMIN_KUBE: w_i <= 0 or not finite */
	FG_MAXMIN_LOWERS_ABOVE_SUM,   /* sum(lower) > T + FG_MAXMIN_EPSILON */
	FG_MAXMIN_UPPERS_BELOW_SUM,   /* sum(upper) < T - FG_MAXMIN_EPSILON (not with FG_MAXMIN_SLACK) */
	FG_MAXMIN_TOO_MANY,           /* n > FG_MAXMIN_MAX_ITEMS */
};

struct fg_maxmin_error {
	enum fg_maxmin_reason reason;
	size_t index;        /* the item, for the per-item reasons */
	double value, bound; /* the offending value and the bound or sum it breaks */
};

/*
 * Solve for `total` over items[0..n): alloc[0..n) and *fair_prop (fair_prop
 * may be NULL).  Returns 0; -EINVAL for a malformed item or
 * total, -ERANGE when the bounds cannot meet the total, -ENOMEM (scratch);
 * `err` (may be NULL) says which.  n == 0 is solvable only for T == 0 (or
 * with FG_MAXMIN_SLACK).  fair_prop is Kubernetes' fairProp: min(lower/w)
 * when every item sits at its lower bound, max(upper/w) when at its upper.
 */
int fg_maxmin_solve(double total, const struct fg_maxmin_item *items, size_t n, unsigned flags, double *alloc,
		    double *fair_prop, struct fg_maxmin_error *err);

/* Kubernetes' error text for `err` into buf (always terminated); returns buf. */
const char *fg_maxmin_strerror(const struct fg_maxmin_error *err, char *buf, size_t len);

/*
 * Whole units from real allocations that sum to `total`: each out_i is
 * floor(alloc_i) or ceil(alloc_i), the units left after the floors go to the
 * largest fractional parts (ties to the lower index), so integer bounds that
 * held for alloc_i hold for out_i and the sum is exactly `total`.  Values
 * within FG_MAXMIN_EPSILON of a whole number count as that number.  Returns
 * 0, or -ERANGE when sum(floor) > total or sum(ceil) < total.
 */
int fg_maxmin_round(const double *alloc, size_t n, uint64_t total, uint64_t *out);

#endif
