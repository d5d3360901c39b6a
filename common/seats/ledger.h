/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ledger — how one member of a fairgate cluster moves its share of a
 * priority level's cluster-wide seat limit (docs/scale-out.md).  Several
 * instances in front of one backend pool record their grants in a shared
 * store (etcd, control/cluster.h does the I/O); this module is the pure
 * decision of one member for one level, from a snapshot of the store read at
 * one revision.
 *
 * Targets: the max-min split of the level's cluster-wide limit L over the
 * live members' demands (common/seats/maxmin.h, whole seats, remainders to the
 * larger fractions, ties to the member listed first — every member sorts
 * the members by id, so all compute the same split from the same
 * snapshot); seats the demands leave over are split evenly (the first
 * L mod n members in id order get one more), so that a member whose load
 * rises finds seats at once.
 *
 * A member's step for a level (fg_ledger_decide), with g its grant in the
 * snapshot, t its target, room = L - the other members' grants:
 *   t < g: the local limit drops to t now; the grant drops to
 *          max(t, may_use) — may_use being the most seats the member's
 *          workers could still be using or start using under the limits
 *          already handed to them — so a grant is given up only once its
 *          seats are no longer in use (written without a guard: a smaller
 *          grant can only make room);
 *   t > g: the grant rises to max(g, min(t, room)), written only with a
 *          guard that no grant changed since the snapshot's revision (an
 *          etcd transaction, Compare MOD over the grants' prefix); the local
 *          limit rises only once that write succeeded (the decision's
 *          limit_after, which the caller applies then).
 * Invariants (checked by tests/test_ledger.c's model of interleaved
 * members): the grants in the store sum to at most L at every revision;
 * a member's local limit never exceeds its grant in the store; hence the
 * seats in use over all members never exceed L, also while shares move.
 * Deleting a member's grant (its lease expired) only makes room.
 *
 * Thread contract: pure functions over caller memory; reentrant.
 */
#ifndef FG_LEDGER_H
#define FG_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How far above a whole number of seats a demand still counts as it. */
#define FG_LEDGER_DEMAND_SLACK 0.05

/*
 * Whole-seat targets for n members with demands[0..n) (seats, >= 0) sharing
 * limit: max-min fair, leftover split evenly (above).  Returns 0, or -ENOMEM
 * / -EINVAL (n == 0 or a demand not finite).  The targets sum to `limit`.
 */
int fg_ledger_targets(uint32_t limit, const double *demands, size_t n, uint32_t *targets);

/* One member's view of one level in a snapshot. */
struct fg_ledger_level {
	uint32_t limit;        /* L: the level's cluster-wide limit */
	uint32_t grant;        /* this member's grant in the snapshot (0: none recorded) */
	uint64_t others;       /* the other live members' grants, summed */
	uint32_t target;       /* from fg_ledger_targets */
	uint32_t may_use;      /* the most seats this member's workers could use under what they hold */
};

struct fg_ledger_decision {
	uint32_t grant;        /* the grant to record */
	bool guarded;          /* it rises: record it only if no grant changed since the snapshot */
	uint32_t local_limit;  /* the local limit to apply now (before the write) */
	uint32_t limit_after;  /* ... and once the write succeeded */
};

struct fg_ledger_decision fg_ledger_decide(const struct fg_ledger_level *l);

#endif
