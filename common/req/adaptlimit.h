/* SPDX-License-Identifier: Apache-2.0 */
/*
 * adaptlimit — an adaptive concurrency limit for one backend (issue 29,
 * serverConcurrencyLimitMode: Adaptive): how many seats to send it at once,
 * learned from its answers.  docs/adaptive-limit.md says why this design.
 *
 * What it measures:
 * - the no-load latency ("floor") of each request class — narrow (1 seat)
 *   and wide (more): the mean latency of the requests sent during a probe
 *   (below); for a class no probe measured yet, the smallest latency over
 *   FG_ADAPT_FLOOR_BUCKETS buckets of FG_ADAPT_FLOOR_BUCKET_NS.  A LIST-like
 *   class is compared with its own floor, so one slow class does not drag
 *   the limit down;
 * - per answer the ratio of its latency to its class's floor, weighted by
 *   its seats; per interval the mean rho (at saturation, Little's law makes
 *   it the seats outstanding over the seats the backend executes at once)
 *   and the 10th percentile rho10;
 * - the capacity estimate: seat-time at no-load latency completed per unit
 *   of time (Little's law), the most over the last FG_ADAPT_HISTORY
 *   intervals.  At saturation it is the backend's concurrency.
 *
 * What it decides, once per interval of at least FG_ADAPT_INTERVAL_NS with
 * at least FG_ADAPT_MIN_SAMPLES answers (a dead band, not a gradient: a
 * gradient moves on every wobble and oscillates):
 * - rho > 1.2 two intervals in a row: cut, L x max(0.5, 1.05 / rho), but
 *   never below half the capacity estimate (a latency spike that is not
 *   load does not collapse the limit);
 * - rho < 1.05 and the limit was used (peak seats outstanding >= 0.8 L):
 *   grow by max(1, min(L / 4, sqrt L)) (requests waiting in fairgate for
 *   seats are no evidence that the backend takes more: the pool overbooks
 *   the levels instead, backendpool.h);
 * - the limit went unused (peak seats outstanding below half of it, or an
 *   interval with too few answers to judge) while nothing waits in fairgate
 *   for seats: it decays (before any probe too: a worker that receives
 *   nothing must not hold a start nobody tested) by a quarter, not
 *   below twice the peak (TCP's congestion window validation, RFC 7661): a
 *   limit the backend was never seen to take must not send a burst when
 *   the load comes back (with several workers, a quiet worker's part);
 * - otherwise hold;
 * - a timeout: L x 0.9, at most once per interval.
 * - Probe (BBR's ProbeRTT): a floor can only fall, and answers queued at the
 *   backend never show it, so when the floors are older than
 *   FG_ADAPT_PROBE_AFTER_NS, or rho10 > 1.5 three intervals in a row (even
 *   the fastest answers are slow: the backend got slower, or queues; no
 *   cut until a probe says which, unless one did within
 *   FG_ADAPT_PROBE_FRESH_NS: then it is load), or rho10 below 3/4 of what
 *   it was at no load two intervals in a row (the backend got faster, and
 *   rho understates its queueing: no growth until probed), the
 *   limit in force drops — to the minimum for the first probe (the start
 *   may be far above what the backend takes), to a quarter of the limit
 *   (at least the minimum) after: the limit is then near what the backend
 *   takes, a quarter of it does not queue there, and long requests answer
 *   a probe in one round — until FG_ADAPT_PROBE_SAMPLES
 *   requests sent during the probe have answered (they found the backend
 *   empty but for the minimum: their latency is the floor), or
 *   FG_ADAPT_PROBE_FEW have once 2 x the longest latency it knows (at least
 *   FG_ADAPT_PROBE_MIN_NS / 2) passed, or twice that passed.  The floors then
 *   become what the probe measured, and the limit comes back.  Periodic
 *   probes are at least FG_ADAPT_PROBE_SPACING times their length apart
 *   (long requests: long probes, rarer).  A probe starts only in its
 *   backend's slot of the clock (FG_ADAPT_PROBE_PHASES slots of
 *   FG_ADAPT_PROBE_SLOT_NS), so several workers probe a backend together,
 *   and different backends at different times.
 *
 * A backend's own REJECTs are not passed in (dataplane/worker.c); an error
 * inside a RESPONSE's opaque payload looks like a fast answer, and
 * timeouts are the only other failure it sees.
 *
 * Invariants: min >= 1, min <= limit <= max; the limit in force is the
 * limit, or probe_seats (at least the minimum, at most the limit) during a
 * probe; no cut or growth before the first
 * probe (only the decay of an unused limit).  Time is passed in (a virtual clock
 * in the simulator and the unit tests).
 *
 * Thread contract: owned by one worker (inside its backendpool).
 */
#ifndef FG_ADAPTLIMIT_H
#define FG_ADAPTLIMIT_H

#include <stdbool.h>
#include <stdint.h>

#define FG_ADAPT_INTERVAL_NS 100000000ull      /* 100 ms */
#define FG_ADAPT_MIN_SAMPLES 16u
#define FG_ADAPT_MAX_STRETCH 10u               /* an interval without enough answers ends unused after this many */
#define FG_ADAPT_FLOOR_BUCKET_NS 1000000000ull /* 1 s */
#define FG_ADAPT_FLOOR_BUCKETS 10u             /* a 10 s windowed minimum */
#define FG_ADAPT_HISTORY 10u                   /* capacity estimates kept (intervals) */
#define FG_ADAPT_RATIO_BUCKETS 32u             /* rho from 0.40 in steps of 0.05; the last is >= 1.95 */
#define FG_ADAPT_PROBE_AFTER_NS 5000000000ull  /* 5 s */
#define FG_ADAPT_PROBE_MIN_NS 200000000ull     /* 200 ms */
#define FG_ADAPT_PROBE_FRESH_NS 1000000000ull  /* slowness within 1 s of a probe is load */
#define FG_ADAPT_PROBE_SAMPLES 8u
#define FG_ADAPT_PROBE_FEW 3u                  /* enough once half the probe's time is over */
#define FG_ADAPT_PROBE_SLOT_NS 200000000ull   /* a probe starts in its backend's slot of this length */
#define FG_ADAPT_PROBE_PHASES 5u               /* slots in turn (wider than the workers' 100 ms tick) */
#define FG_ADAPT_PROBE_SPACING 20u             /* probes at least this many times their length apart */

enum fg_adapt_class { FG_ADAPT_NARROW = 0, FG_ADAPT_WIDE, FG_ADAPT_CLASSES };

/* Why the limit last moved (or did not): logs, metrics, status. */
enum fg_adapt_reason {
	FG_ADAPT_START = 0,
	FG_ADAPT_HOLD,
	FG_ADAPT_GROW,
	FG_ADAPT_CUT,
	FG_ADAPT_TIMEOUT,
	FG_ADAPT_PROBE,  /* a probe started */
	FG_ADAPT_PROBED, /* a probe ended: floors measured, limit back */
	FG_ADAPT_IDLE,   /* unused: decayed towards twice the seats outstanding */
	FG_ADAPT_REASONS
};

/* "start", "hold", "grow", "cut", "timeout", "probe", "probed", "idle". */
const char *fg_adapt_reason_name(unsigned reason);

struct fg_adapt {
	uint32_t limit;        /* learned, in seats */
	uint32_t start;        /* where it started (fg_adapt_restart) */
	uint32_t min, max;     /* bounds */
	uint32_t phase;        /* this backend's probe slot */
	bool probing;
	bool pressed;          /* requests wait in fairgate for want of seats (fg_adapt_pressure) */
	uint8_t last_reason;   /* enum fg_adapt_reason */
	uint8_t cuts_pending;  /* intervals in a row with rho above the band */
	uint8_t slow_floor;    /* intervals in a row with rho10 above 1.5 */
	uint8_t fast_floor;    /* intervals in a row with rho10 under 3/4 of its no-load value */
	uint32_t peak_outstanding; /* this interval */
	uint64_t interval_start;
	bool timed_out;        /* this interval already cut for a timeout */
	/* This interval's answers. */
	uint32_t samples;
	uint64_t seats;                               /* answered seats */
	uint64_t latency_seat_ns;                     /* sum latency x seats */
	uint64_t floor_seat_ns;                       /* sum floor x seats: seat-time at no load */
	uint32_t ratio_seats[FG_ADAPT_RATIO_BUCKETS]; /* rho histogram, weighted by seats */
	/* Floors: per class a minimum per bucket of time. */
	uint64_t floor_bucket[FG_ADAPT_CLASSES][FG_ADAPT_FLOOR_BUCKETS]; /* 0: none */
	uint64_t bucket_epoch;                                         /* now / FG_ADAPT_FLOOR_BUCKET_NS of the newest */
	uint64_t floors_since;                                         /* when the floors were last measured anew */
	/* Capacity estimates of the last intervals, milli-seats. */
	uint64_t capacity_milli[FG_ADAPT_HISTORY];
	uint32_t history_at;
	/* Probe. */
	uint64_t probe_start, probe_until, probe_enough_at;
	uint64_t last_probe_ns;  /* how long the last probe took */
	uint32_t probe_seats;    /* the limit in force during a probe */
	uint64_t probe_sum_ns[FG_ADAPT_CLASSES];
	uint32_t probe_n[FG_ADAPT_CLASSES];
	uint64_t probe_min_ns[FG_ADAPT_CLASSES];
	uint32_t noload_rho10_milli; /* the probe's fastest answer over its mean: rho10 at no load */
	uint64_t noload_ns[FG_ADAPT_CLASSES]; /* the last probe's mean latency per class (0: none yet) */
	uint32_t probe_samples;
	/* Statistics. */
	uint64_t moves[FG_ADAPT_REASONS];
	uint32_t last_rho_milli, last_rho10_milli;
	uint64_t last_latency_ns; /* mean of the last decided interval */
};

/* A controller starting at `start` seats, bounded by [min, max] (clamped;
 * min at least 1), probing in slot `phase` (any number; taken modulo). */
void fg_adapt_init(struct fg_adapt *a, uint32_t start, uint32_t min, uint32_t max, uint32_t phase, uint64_t now);

/* New bounds (a live apply): the limit is clamped into them. */
void fg_adapt_set_bounds(struct fg_adapt *a, uint32_t min, uint32_t max);

/* A new start (the operator's seats=N changed): the limit goes there; what
 * was measured is kept.  The same start: nothing. */
void fg_adapt_restart(struct fg_adapt *a, uint32_t start);

/* Seats are outstanding at the backend now (after a dispatch). */
static inline void fg_adapt_outstanding(struct fg_adapt *a, uint32_t seats)
{
	if (seats > a->peak_outstanding)
		a->peak_outstanding = seats;
}

/* Whether requests wait in fairgate for want of seats now (in the levels,
 * or held for backend room).  The levels are offered only their part of
 * the limit (idle levels keep theirs), so the backend may never see the
 * limit in use: while pressed, an unused limit does not decay. */
static inline void fg_adapt_pressure(struct fg_adapt *a, bool pressed)
{
	a->pressed = pressed;
}

/* An answer to a request of `seats` seats sent latency_ns ago. */
void fg_adapt_answer(struct fg_adapt *a, uint64_t latency_ns, uint32_t seats, uint64_t now);

/* A request timed out there.  Returns whether the limit in force moved. */
bool fg_adapt_timeout(struct fg_adapt *a, uint64_t now);

/* Decide if an interval is over, start or end a probe.  Returns whether the
 * limit in force moved. */
bool fg_adapt_tick(struct fg_adapt *a, uint64_t now);

/* The seats the backend may have at once now. */
static inline uint32_t fg_adapt_in_force(const struct fg_adapt *a)
{
	return a->probing ? a->probe_seats : a->limit;
}

/* What a class's latency is compared with: the last probe's no-load
 * latency, or before a probe measured the class (wide requests are rare
 * during a one-seat probe) the smallest latency of the window (0: none). */
uint64_t fg_adapt_floor_ns(const struct fg_adapt *a, enum fg_adapt_class c);

/* The no-load latency a probe measured (0: none yet). */
static inline uint64_t fg_adapt_noload_ns(const struct fg_adapt *a, enum fg_adapt_class c)
{
	return a->noload_ns[c];
}

/* The capacity estimate now, in seats (rounded down; 0: none yet). */
uint32_t fg_adapt_capacity_estimate(const struct fg_adapt *a);

#endif
