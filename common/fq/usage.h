/* SPDX-License-Identifier: Apache-2.0 */
/*
 * usage — decayed per-flow usage for a level with the UsageBased fair-sharing
 * policy (seed 002: Kueue's admission fair sharing, KEP-4136, brought to
 * requests).  docs/fair-queuing.md "UsageBased" explains the policy; this
 * header is the contract.
 *
 * - Usage is seat-seconds per sampling interval S, kept in seat-microseconds:
 *   every S (the actual elapsed time D since the last fold) each flow's
 *   usage becomes (1 - A) * usage + A * current, A = 1 - 0.5^(D / H) (H the
 *   half-life), current = the seat-seconds the flow held during those D,
 *   scaled to S.  A flow idle for one half-life keeps half its usage.
 * - Entry penalty: a dispatch of s seats with a guessed duration g adds
 *   A_S * s * g at once (A_S = A for D = S), so that a burst cannot exploit a
 *   usage that has not been folded yet; the fold replaces the penalties with
 *   the measured usage (Kueue keeps the penalty on top of the measure, so it
 *   counts that work twice).
 * - A flow's key is (usage + penalties) / weight; the smaller goes first.
 *   Keys are handed out divided by a scale that every fold multiplies by
 *   (1 - A): a fold then leaves the key of a flow that used nothing since
 *   the last one as it was (its usage decayed by exactly that factor), so
 *   only the flows that used seats get a new key (their `gen` changes), and
 *   the order of all others holds without touching them.  When the scale
 *   falls below 2^-16 it is reset to 1 and every key changes (the fold says
 *   so).
 * - A flow with nothing waiting or executing for longer than the reset
 *   period is forgotten at the next fold (its slot is freed).  A fold that
 *   finds the slab more than 3/4 full also forgets the idle flows with the
 *   smallest usage until it is back at 3/4, so that many flows sending once
 *   (a flood of tenants) cannot keep the slab full for a whole reset period
 *   and send every newcomer to the shared overflow entry; forgetting a small
 *   usage changes the order least.
 * - Flows live in a fixed slab (indices stay valid while a request refers
 *   to them) behind an open-addressing index on the flow hash.  When the
 *   slab is full, new flows share one overflow entry (counted).
 *
 * Costs: O(1) expected per arrival, dispatch and release; O(flows) per fold.
 * No allocation after init.
 *
 * Thread contract: single owner (the queue set's); time passed in.
 */
#ifndef FG_USAGE_H
#define FG_USAGE_H

#include <stdbool.h>
#include <stdint.h>

#define FG_USAGE_NONE UINT32_MAX
#define FG_USAGE_MAX_FLOWS (1u << 20)

struct fg_usage_flow {
	uint64_t hash;
	double usage;        /* decayed seat-us per sampling interval */
	double penalty;      /* entry penalties since the last fold, seat-us */
	uint64_t held_ns;    /* seat-ns held since the last fold */
	uint64_t last_ns;    /* held_ns is up to date until here */
	uint64_t active_ns;  /* the last time a request of it left */
	uint32_t seats;      /* seats held now */
	uint32_t requests;   /* waiting + executing */
	uint32_t weight;     /* thousandths */
	uint32_t gen;        /* changes whenever its key does */
	bool used;
};

struct fg_usage_params {
	uint64_t half_life_ns, sampling_ns, reset_ns;
};

struct fg_usage {
	struct fg_usage_params p;
	struct fg_usage_flow *flows; /* [cap + 1]: the last one is the overflow entry */
	uint32_t *index;             /* [index_cap] slab index + 1, 0 = empty */
	uint32_t *free_list;         /* [cap] */
	uint32_t cap, index_cap, n_free;
	double penalty_alpha;        /* A_S */
	double scale;                /* keys are divided by it (see above) */
	uint64_t last_fold_ns, next_fold_ns;
	uint64_t folds, forgotten, overflowed, evicted;
	uint32_t *scratch;           /* [cap]: the fold's candidates for eviction */
};

/* Room for `flows` flows (at least 1, at most FG_USAGE_MAX_FLOWS); 0,
 * -EINVAL (a half-life or interval of 0) or -ENOMEM. */
int fg_usage_init(struct fg_usage *u, uint32_t flows, const struct fg_usage_params *p, uint64_t now_ns);
void fg_usage_fini(struct fg_usage *u);
/* New parameters for a live table (what is folded stays). -EINVAL if bad. */
int fg_usage_set_params(struct fg_usage *u, const struct fg_usage_params *p, uint64_t now_ns);

/* A request of flow `hash` arrives: its flow's index (found or created,
 * or the overflow entry), one more request counted; weight updated. */
uint32_t fg_usage_join(struct fg_usage *u, uint64_t hash, uint32_t weight, uint64_t now_ns);
/* The request is gone (answered, timed out, cancelled). */
void fg_usage_leave(struct fg_usage *u, uint32_t flow, uint64_t now_ns);
/* It starts executing with `seats` for a guessed duration: the entry penalty. */
void fg_usage_start(struct fg_usage *u, uint32_t flow, uint32_t seats, uint64_t guess_ns, uint64_t now_ns);
/* Its seats are released. */
void fg_usage_stop(struct fg_usage *u, uint32_t flow, uint32_t seats, uint64_t now_ns);

/* The flow's dispatch key: (usage + penalties) / weight, in seat-us for
 * weight 1 (saturated at 2^62), divided by the table's scale: comparable
 * within this table only. */
uint64_t fg_usage_key(const struct fg_usage *u, uint32_t flow);
/* The same without the scale: comparable between tables (workers). */
uint64_t fg_usage_key_unscaled(const struct fg_usage *u, uint32_t flow);

/* Whether a fold is due.  fg_usage_fold folds every flow; the keys that
 * change are those of the flows whose gen changed, unless it returns true:
 * then every key changed (the scale was reset). */
static inline bool fg_usage_fold_due(const struct fg_usage *u, uint64_t now_ns) { return now_ns >= u->next_fold_ns; }
bool fg_usage_fold(struct fg_usage *u, uint64_t now_ns);

/* Its usage in seat-seconds per sampling interval, penalties included. */
double fg_usage_of(const struct fg_usage *u, uint32_t flow);

#endif
