/* SPDX-License-Identifier: Apache-2.0 */
/*
 * classguess — work estimates that learn per request class (issue 29): the
 * service time of each (group, verb class), learned from the requests that
 * completed, so that a class that always takes 10x another is priced as
 * such in the queue set at arrival (queueset.h: a request's cost is seats x
 * its guess) instead of only corrected when it completes.  KEP-1040 guesses
 * one duration G per level; fairgate's queue sets learn G per level; this
 * refines it per verb class (workEstimates: PerClass, the default).
 *
 * A class is a group — the worker's (priority level, flow schema) pair
 * (apfstats.h: fg_apf_pair, by name, so it outlives configurations that
 * keep both names) — and one of five verb classes: get, list, watch,
 * mutating (create, update, patch, delete, deletecollection), other (any
 * other verb, non-resource requests).  Its
 * estimate is the mean of its first FG_CLASSGUESS_FIRST durations, then an
 * exponentially weighted mean (weight 1/FG_CLASSGUESS_EWMA); a class with
 * no completion yet takes the level's guess.  Every estimate given out is
 * clamped to [min, max] (workEstimateMin, workEstimateMax), so a class
 * whose requests hang until backendTimeout, or answer at once, cannot
 * price itself out of (or into) its share.
 *
 * Invariants: an index is group x FG_VERB_CLASSES + verb class, below n.
 * Thread contract: owned by one worker.
 */
#ifndef FG_CLASSGUESS_H
#define FG_CLASSGUESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FG_CLASSGUESS_FIRST 8u
#define FG_CLASSGUESS_EWMA 8u

enum fg_verb_class { FG_VERB_GET = 0, FG_VERB_LIST, FG_VERB_WATCH, FG_VERB_MUTATING, FG_VERB_OTHER, FG_VERB_CLASSES };

/* The class of a verb (len bytes, case-sensitive as Kubernetes' verbs). */
enum fg_verb_class fg_verb_class_of(const char *verb, size_t len);
/* "get", "list", "watch", "mutating", "other". */
const char *fg_verb_class_name(unsigned c);

struct fg_classguess_entry {
	uint64_t est_ns;
	uint32_t samples; /* saturates */
};

struct fg_classguess {
	uint32_t n;
	uint64_t min_ns, max_ns;
	struct fg_classguess_entry *e;
};

static inline uint32_t fg_classguess_index(uint32_t group, enum fg_verb_class c)
{
	return group * FG_VERB_CLASSES + (uint32_t)c;
}

/* A table for n_groups groups, nothing learned; 0 or -ENOMEM. */
int fg_classguess_init(struct fg_classguess *g, uint32_t n_groups, uint64_t min_ns, uint64_t max_ns);
void fg_classguess_fini(struct fg_classguess *g);
void fg_classguess_set_bounds(struct fg_classguess *g, uint64_t min_ns, uint64_t max_ns);

/* Class i's estimate, or the fallback (the level's guess) before its first
 * completion; clamped to the bounds.  An index past the table: the
 * fallback, clamped. */
uint64_t fg_classguess_get(const struct fg_classguess *g, uint32_t i, uint64_t fallback_ns);

/* A request of class i completed after actual_ns. */
void fg_classguess_learn(struct fg_classguess *g, uint32_t i, uint64_t actual_ns);

#endif
