/* SPDX-License-Identifier: Apache-2.0 */
/*
 * backendpool — one worker's view of its backends: least-outstanding-seats
 * choice, ejection of a backend that stops answering, and probing it back.
 *
 * A backend is ejected after `eject_after` consecutive timeouts, for
 * `eject_ns`, doubling on each failed probe up to `max_eject_ns`; once the
 * time is up it gets exactly one request (the probe): an answer brings it
 * back, a timeout ejects it again.  With no usable backend the caller answers
 * REJECT no-backend.  A backend may have a capacity: the most seats executing
 * there at once (a request wider than it runs there alone); when every
 * usable backend is full, pick finds none and the caller holds the request
 * until one has room.  A backend that stops answering before anything times
 * out — it has requests outstanding and has answered none for
 * FG_BACKEND_STALL_FACTOR times its learned latency (at least
 * FG_BACKEND_STALL_MIN_NS) — is stalled: it gets no new request while
 * another enabled backend is up, until it answers again (issue 29: a paused
 * backend would otherwise collect new requests until backendTimeout, each
 * holding its seats); once what it held has timed out it gets one request
 * at a time, which its answer or timeout decides on.  Only enabled and
 * draining backends stall.  Its capacity still counts as usable
 * (fg_backendpool_capacity): a stall may be one long request, and the
 * levels must not shrink for it.  With several workers, timeouts in a row are counted
 * over all of them, a backend one of them ejects counts as ejected for all
 * (each then probes it once when the time is up), and one that answers a
 * worker after an ejection is back for all (a worker that receives nothing
 * would otherwise show it ejected for ever).  Time is passed in.
 *
 * Backends sit in stable slots (the configuration keeps a backend's slot
 * for as long as its address stays listed, settings.h), so a request in
 * flight keeps its backend across configuration generations.  A slot has
 * an administrative state besides its health: only an enabled backend is
 * picked; a draining one finishes what it has and keeps its health
 * accounting; a disabled or removed one finishes what it has and its
 * timeouts neither eject it nor count towards an ejection.  A slot that
 * comes to name another address starts afresh (fg_backendpool_follow).
 *
 * Thread contract: owned by one worker.
 */
#ifndef FG_BACKENDPOOL_H
#define FG_BACKENDPOOL_H

#include <stdbool.h>
#include <stdint.h>

#include "adaptlimit.h"
#include "defs.h"
#include "settings.h"

#define FG_BACKEND_NONE UINT32_MAX
/* A backend is stalled after no answer for this many times its learned
 * latency while it has requests outstanding; never sooner than the floor,
 * and not before it has answered FG_BACKEND_LATENCY_SAMPLES requests. */
#define FG_BACKEND_STALL_FACTOR 8u
#define FG_BACKEND_STALL_MIN_NS 50000000ull /* 50 ms */
#define FG_BACKEND_LATENCY_SAMPLES 8u

enum fg_backend_state { FG_BACKEND_UP = 0, FG_BACKEND_EJECTED, FG_BACKEND_PROBING };

/* enum fg_backend_admin, what the operator wants of a backend: settings.h. */

/* "enabled", "drain", "disabled", "removed" (status, metrics, control). */
const char *fg_backend_admin_name(unsigned admin);

struct fg_backend {
	uint8_t state;
	uint8_t admin;               /* enum fg_backend_admin */
	bool probe_in_flight;
	uint16_t port;               /* the address this slot names (network order) */
	uint32_t ip;
	uint32_t outstanding;        /* seats of requests executing there */
	uint32_t capacity;           /* most seats at once (0: no limit); adaptive: the limit in force */
	bool adaptive;               /* capacity learned (fg_backendpool_set_adaptive) */
	uint32_t consecutive_timeouts;
	uint64_t eject_ns;           /* current ejection length */
	uint64_t until_ns;           /* ejected until */
	uint64_t ejected_at;         /* when it was last ejected here */
	uint64_t ejections;          /* statistics */
	uint64_t progress_ns;        /* its last answer, or when it last went from idle to busy */
	uint64_t latency_ns;         /* learned answer latency: the mean of the first samples, then EWMA 1/8 */
	uint32_t latency_samples;    /* answers learned from (saturates) */
	bool stalled;                /* since fg_backendpool_pick or _refresh saw it stall, until an answer */
	uint64_t stalls;             /* times it became stalled */
};

/* One backend as all workers see it: timeouts in a row counted over all of
 * them, until when one of them ejected it, and when one last saw it answer
 * while it was ejected or probed here (relaxed atomics: rare events, any
 * writer). */
struct fg_backend_shared {
	uint64_t down_until;
	uint64_t back_at;
	uint32_t timeouts;
};

struct fg_backendpool {
	uint32_t n;
	uint32_t eject_after;
	uint64_t base_eject_ns, max_eject_ns;
	/* Several workers: what their pools share (NULL with one worker). */
	struct fg_backend_shared *shared;
	/* Bumped whenever what fg_backendpool_capacity counts may have changed
	 * (a backend listed, removed, resized, ejected, probed, back; its
	 * administrative state): its reader compares it with what it saw. */
	uint32_t changes;
	/* Adaptive mode: the seats the levels share over the backends'
	 * learned limits, thousandths (1000: as many; fg_backendpool_set_pressure). */
	uint32_t overbook_milli;
	struct fg_backend b[FG_MAX_BACKENDS];
	/* Adaptive mode: FG_MAX_BACKENDS controllers, the owner's (NULL: no
	 * backend can be adaptive), kept out of the pool so that Static mode's
	 * picks keep the pool's layout. */
	struct fg_adapt *adapt;
};

void fg_backendpool_init(struct fg_backendpool *p, uint32_t n, uint32_t eject_after, uint64_t eject_ns,
			 uint64_t max_eject_ns);

/* New ejection settings (a live apply): they govern the next timeouts and
 * ejections; a backend ejected now keeps its current ejection. */
void fg_backendpool_set_ejection(struct fg_backendpool *p, uint32_t eject_after, uint64_t eject_ns,
				 uint64_t max_eject_ns);

/* Slot i names backend ip:port (network order) with this administrative
 * state.  Returns true when the slot named another address (or none): its
 * state starts afresh, outstanding seats included, so the caller must first
 * end the requests in flight there.  Slots at or past n are emptied the
 * same way (fg_backendpool_set_count). */
bool fg_backendpool_follow(struct fg_backendpool *p, uint32_t i, uint32_t ip, uint16_t port, uint8_t admin);
/* The number of slots in use (at most FG_MAX_BACKENDS). */
void fg_backendpool_set_count(struct fg_backendpool *p, uint32_t n);

/* This worker's part of backend i's capacity (0: no limit), as given
 * (Static: the levels' overbooking, if any, is back to none). */
void fg_backendpool_set_capacity(struct fg_backendpool *p, uint32_t i, uint32_t seats);

/* Backend i's capacity is learned (serverConcurrencyLimitMode: Adaptive,
 * common/req/adaptlimit.h; needs p->adapt, else nothing): starting at `start` seats (this worker's part)
 * when it was not learned yet or its slot started afresh (a new start
 * moves it there), within [min, max].
 * Its capacity is then the controller's limit in force, which moves with
 * the answers and timeouts (fg_backendpool_learn_latency, _done) and the
 * periodic fg_backendpool_refresh, each move counted in changes. */
void fg_backendpool_set_adaptive(struct fg_backendpool *p, uint32_t i, uint32_t start, uint32_t min, uint32_t max,
				 uint64_t now);

/* The backend for a request of `seats` seats, or FG_BACKEND_NONE (none
 * usable — see fg_backendpool_usable — or every usable one full). */
uint32_t fg_backendpool_pick(struct fg_backendpool *p, uint32_t seats, uint64_t now);

/* Whether backend i is stalled now (see above). */
bool fg_backendpool_stalled(const struct fg_backendpool *p, uint32_t i, uint64_t now);

/* Backend i answered a request of `seats` seats sent latency_ns ago: what
 * its stall is measured against, and its adaptive limit learns from.  Call
 * before fg_backendpool_done. */
void fg_backendpool_learn_latency(struct fg_backendpool *p, uint32_t i, uint32_t seats, uint64_t latency_ns,
				  uint64_t now);

/*
 * Adaptive mode, every FG_ADAPT_INTERVAL_NS or so: whether requests waited
 * or were refused in the levels for want of seats (levels_pressed), and
 * whether requests the levels admitted waited for backend room since the
 * last call, here (held_here) or at any worker (held: with several
 * workers, one worker's overbooking feeds the allotter's split for all).
 * Either of this pool's own keeps its unused limits from decaying
 * (fg_adapt_pressure).  The
 * learned limits stay what each backend takes; what the levels may use of
 * them moves instead: a level gets only its share of the seats (and what it
 * borrows), so the seats the levels share are overbooked — by 10% a call
 * while the levels are pressed and the backends have more than a tenth of
 * their limits free, back by 10% a call while requests are held for backend
 * room, and slowly (1/32 a call) while nothing presses, never below the
 * learned limits (FG_BACKENDPOOL_MAX_OVERBOOK at most).  A move counts in
 * changes.
 */
#define FG_BACKENDPOOL_MAX_OVERBOOK 100u
void fg_backendpool_set_pressure(struct fg_backendpool *p, bool levels_pressed, bool held_here, bool held);

/* Adaptive mode: what the levels scale by (the limits' start, total, and
 * the usable learned limits overbooked, at most max), for
 * fg_qs_scale_by_capacity and the allotter. */
void fg_backendpool_levels_capacity(const struct fg_backendpool *p, uint32_t start, uint32_t max, uint32_t *usable,
				    uint32_t *total);

/* Whether any backend could take a request now. */
bool fg_backendpool_usable(const struct fg_backendpool *p, uint64_t now);

/* Follow what the other workers saw of every backend (an ejection, a
 * recovery), see which backends stalled, and let the adaptive limits
 * decide: for a worker's periodic publication (at least every
 * FG_ADAPT_INTERVAL_NS), since a worker that dispatches nothing otherwise
 * never looks. */
void fg_backendpool_refresh(struct fg_backendpool *p, uint64_t now);

/*
 * The part of the listed backends' capacity that can take requests now
 * (issue 29: the levels' limits follow it): usable counts the enabled
 * backends that are up (not ejected, not being probed), total every listed
 * one (enabled, draining or disabled; not removed).  In seats when every
 * listed backend has a capacity, else in backends (each counts 1).  This
 * worker's view: with several workers, a backend's capacity is this
 * worker's part, and another worker's ejection counts once it is followed
 * (a pick, fg_backendpool_refresh).
 */
void fg_backendpool_capacity(const struct fg_backendpool *p, uint32_t *usable, uint32_t *total);

/* The request sent to backend i ended: answered, or timed out. */
void fg_backendpool_done(struct fg_backendpool *p, uint32_t i, uint32_t seats, bool answered, uint64_t now);

#endif
