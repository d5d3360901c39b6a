/* SPDX-License-Identifier: Apache-2.0 */
/*
 * borrowing — seats borrowed between priority levels (KEP-1040 "borrowing",
 * Kubernetes 1.26+; docs/apf-facts.md §4): per-level seat-demand statistics, the
 * smoothed demand envelope, and the periodic round that sets each level's
 * current limit within [minCL, maxCL] with the bounded max-min allocator
 * (common/seats/maxmin.h).  The daemon drives it through common/runtime/borrower.h.
 *
 * Per level, the demand is seats in use + seats of waiting requests; it is
 * fed to an integrator (Kubernetes' fq.Integrator) on every change, and at
 * each round the integrator yields the period's time-weighted average, its
 * population standard deviation and its high watermark, then restarts.
 *     envelope = avg + stddev
 *     smoothed = max(envelope, A * smoothed + (1 - A) * envelope), A = 0.977
 * (not capped by the high watermark: Kubernetes does not cap it either).
 * The round (docs/apf-facts.md §4.3-4.4), R = nominalCLSum - the exempt levels'
 * current limits:
 *     exempt:     current = max(minCL, round(hwm))
 *     non-exempt: lower = max(minCL, min(nominalCL, round(hwm))),
 *                 target = max(lower, smoothed), upper = maxCL
 *     R <= sum(minCL):        current = minCL                (fair_frac 0)
 *     R <= sum(lower):        current = minCL + round((lower - minCL) * share),
 *                             share = (R - sum(minCL)) / (sum(lower) - sum(minCL))
 *     otherwise:              current = round(alloc) of the allocator over
 *                             nominalCLSum (not R: Kubernetes' code), fair_frac = p
 * On an allocator error the previous current limits stay (Kubernetes'
 * backstop).  Rounding is Go's math.Round (half away from zero), so the
 * limits may sum to a seat more or less than the total, as in Kubernetes.
 *
 * Invariants: minCL <= current <= maxCL for non-exempt levels after a
 * successful round in the third case; current >= minCL always.
 *
 * Thread contract: pure computation over caller memory with time passed in
 * (monotonic nanoseconds, non-decreasing per integrator); one owner (in the
 * daemon the allotter thread, common/runtime/borrower.h); no locks, no threads.
 */
#ifndef FG_BORROWING_H
#define FG_BORROWING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "defs.h"
#include "maxmin.h"

/* Kubernetes' seatDemandSmoothingCoefficient: about a 5-minute half-life at
 * the 10 s period (0.977^30 ~ 0.5). */
#define FG_BORROWING_SMOOTHING 0.977
/* Kubernetes' borrowingAdjustmentPeriod; the `borrowingPeriod` setting's
 * default. */
#define FG_BORROWING_DEFAULT_PERIOD_NS (10 * FG_NS_PER_SEC)
_Static_assert(FG_BORROWING_DEFAULT_PERIOD_NS == FG_DEFAULT_BORROWING_PERIOD_NS, "one default period");

_Static_assert(FG_MAX_LEVELS <= FG_MAXMIN_MAX_ITEMS, "a round's levels fit one allocation problem");

/* Kubernetes' fq.Integrator: the integrals of 1, x and x^2 over time. */
struct fg_borrowing_demand {
	uint64_t last_ns; /* time of the last change or reset */
	double x;         /* the current value */
	double min, max;  /* since the last reset (start at x) */
	double elapsed;   /* seconds integrated */
	double ix, ixx;   /* integrals of x dt and x^2 dt */
};

/* What a period's integration yields (Kubernetes' IntegratorResults). */
struct fg_borrowing_obs {
	double duration;    /* seconds */
	double avg, stddev; /* NaN when duration is 0; stddev NaN if rounding made the variance negative */
	double min, max;
};

void fg_borrowing_demand_init(struct fg_borrowing_demand *d, uint64_t now_ns, double x);
void fg_borrowing_demand_set(struct fg_borrowing_demand *d, uint64_t now_ns, double x);
void fg_borrowing_demand_add(struct fg_borrowing_demand *d, uint64_t now_ns, double dx);
/* The results up to now, and the integration restarted at now (min = max = x). */
struct fg_borrowing_obs fg_borrowing_demand_reset(struct fg_borrowing_demand *d, uint64_t now_ns);

/* A level's demand statistics (Kubernetes' seatDemandStats). */
struct fg_borrowing_stats {
	double avg, stddev, hwm, smoothed;
};

/* Fold one period in: hwm = round(max) always; the rest only when the
 * period had a duration (a NaN deviation counts as 0). */
void fg_borrowing_stats_update(struct fg_borrowing_stats *s, const struct fg_borrowing_obs *obs);

struct fg_borrowing_level {
	/* Configuration: the derived limits of docs/apf-facts.md §1.3
	 * (struct fg_fc_level's nominal, min, max). */
	bool exempt;
	uint32_t nominal, min, max;
	/* State. */
	struct fg_borrowing_demand demand;
	struct fg_borrowing_stats stats;
	/* Results of the last round. */
	uint32_t current; /* the current limit */
	uint32_t lower;   /* minCurrentCL */
	double target;    /* the allocation target (exempt: its current limit) */
};

/* A new level: current = nominal - lendable / 2 (integer division), as
 * Kubernetes starts a new level; statistics zeroed, demand 0 from now. */
void fg_borrowing_level_init(struct fg_borrowing_level *l, bool exempt, uint32_t nominal, uint32_t min, uint32_t max,
			     uint64_t now_ns);

enum fg_borrowing_case {
	FG_BORROWING_AT_MIN = 1, /* R <= sum(minCL) */
	FG_BORROWING_BETWEEN,    /* R <= sum(lower) */
	FG_BORROWING_FAIR,       /* the allocator */
};

struct fg_borrowing_result {
	enum fg_borrowing_case kase;
	double fair_frac;  /* apiserver_flowcontrol_seat_fair_frac */
	int64_t remaining; /* R */
	bool backstop;     /* the allocator failed; previous limits kept */
};

/*
 * One round at now over levels[0..n) (nominal_sum: the sum of every level's
 * nominal limit, Kubernetes' nominalCLSum).  Returns 0 (also when the
 * backstop applied: see res->backstop), -ENOMEM before anything changed, or
 * -EINVAL when n is 0 or larger than FG_MAX_LEVELS.
 */
int fg_borrowing_round(struct fg_borrowing_level *levels, size_t n, uint32_t nominal_sum, uint64_t now_ns,
		       struct fg_borrowing_result *res);

#endif
