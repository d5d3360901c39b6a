/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_backends — the simulator's backends (docs/simulator.md, "Backends"):
 * where a dispatched request executes, how long it takes there, and what a
 * pause, a drain or a slowdown does to it.  Without a `backends` list the
 * simulator has none and a request executes for its client's execTime.
 *
 * A backend has a true capacity in seats (0: no limit), what it executes at
 * once, and a service-time scale (a request takes execTime x scale there).
 * A request sent beyond its capacity waits at the backend, first come first
 * served (a FIFO per backend, as a server's socket backlog), and starts when
 * seats there free; its latency (sent -> answer) includes that wait.
 * fairgate's view of them is the daemon's own pool (common/req/backendpool.h),
 * told `seats` per backend (absent: its capacity, followed through `set`
 * events; 0: nothing, no limit): a dispatched request goes to the enabled
 * backend with the fewest outstanding seats that has room for it by that
 * view (a request wider than a backend's view runs there alone); with none,
 * the simulator holds it, first come first served, until one has room — the
 * daemon's hold for backend room — and the levels' limits follow the pool's
 * usable capacity (sim_backends_capacity), as the daemon's do.
 *
 * serverConcurrencyLimitMode Adaptive: fairgate learns each backend's limit
 * (common/req/adaptlimit.h) as one daemon worker does — it starts at the
 * backend's `seats` (0: an even part of serverConcurrencyLimit), learns from
 * every answer's latency on the virtual clock, and decides at a tick every
 * FG_PERIODIC_PUBLISH_NS (the daemon's periodic refresh), told whether
 * requests wait in fairgate for seats; the levels scale by the learned sum
 * over serverConcurrencyLimit, at most serverConcurrencyLimitMax.  Learned
 * latencies also feed the pool's stall detection, as in the daemon.
 *
 * Events change a backend at a time: `pause` for a while (an answer due
 * during the pause comes when it ends, a request started during it takes
 * its whole time after it; an answer due after the pause's end is not
 * delayed: the model is coarse for requests longer than the pause), `drain`
 * (no new requests), `enable` (back in the pick) and `set` (a new true
 * capacity, scale, or seats told, for requests started from then on).
 *
 * The backends are the whole deployment's, shared by every worker (the
 * daemon splits a backend's capacity, and its adaptive controller, over its
 * workers; the simulator does not).  Seats stay held at the level from
 * dispatch to answer, whatever the backend does.
 *
 * Invariants: a backend's executing seats never pass its true capacity but
 * for one request wider than it, alone; its FIFO starts in order only; the
 * pool's outstanding seats are the executing ones plus the FIFO's.
 *
 * Thread contract: owned by one simulation.
 */
#ifndef FG_SIM_BACKENDS_H
#define FG_SIM_BACKENDS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backendpool.h"

#define SIM_MAX_BACKENDS FG_MAX_BACKENDS
#define SIM_MAX_BACKEND_EVENTS 1024
#define SIM_BACKEND_TICK_NS ((int64_t)FG_PERIODIC_PUBLISH_NS) /* the pool's refresh and the series' step */
#define SIM_ADAPTIVE_MAX_DURATION_NS (3600LL * 1000000000LL) /* the series is kept whole: bounded */

enum sim_backend_action { SIM_BACKEND_PAUSE, SIM_BACKEND_DRAIN, SIM_BACKEND_ENABLE, SIM_BACKEND_SET };

/* A request waiting at a backend for its true capacity. */
struct sim_backend_wait {
	uint32_t id, seats;
	int64_t exec_ns;
};

/* What fairgate cannot see of a backend; its view, administrative state and
 * outstanding seats are in the pool. */
struct sim_backend {
	char name[64];
	double scale;             /* service time = execTime x scale */
	uint32_t capacity;        /* seats it truly executes at once (0: no limit) */
	bool told_capacity;       /* `seats` absent: fairgate is told its capacity, also after a `set` */
	uint32_t executing;       /* seats executing there now */
	int64_t paused_until;     /* no progress before then */
	struct sim_backend_wait *fifo; /* beyond its capacity, oldest first (a ring) */
	uint32_t fifo_head, fifo_n, fifo_cap;
	/* results */
	uint64_t started;
	uint64_t queued;          /* requests that waited in its FIFO */
	uint32_t max_outstanding;
	uint32_t max_queued;
};

struct sim_backend_event {
	int64_t at;
	int backend;
	enum sim_backend_action action;
	int64_t for_ns;           /* pause */
	int64_t capacity;         /* set: -1 unchanged */
	int64_t seats;            /* set: -1 unchanged */
	double scale;             /* set: 0 unchanged */
};

/* One tick's sample of a backend (told_apart). */
struct sim_backend_sample {
	uint32_t limit;           /* fairgate's limit: learned (Adaptive) or told */
	uint32_t in_force;        /* the pool's capacity now (a probe lowers it) */
	uint32_t capacity;        /* the true capacity */
};

struct sim_backends {
	int n;                    /* 0: no backend model */
	struct sim_backend b[SIM_MAX_BACKENDS];
	struct fg_backendpool pool; /* fairgate's view (one for every worker) */
	int n_events;
	struct sim_backend_event ev[SIM_MAX_BACKEND_EVENTS];
	uint64_t held;            /* requests that waited for backend room */
	bool failed;              /* out of memory */
	/* Some backend is told other than its capacity, or Adaptive: ticks
	 * sample the series, and the results say more. */
	bool told_apart;
	/* serverConcurrencyLimitMode Adaptive (pool.adapt is this table). */
	bool adaptive;
	uint32_t start, min, max; /* serverConcurrencyLimit, its Min and Max in force */
	struct fg_adapt adapt[SIM_MAX_BACKENDS];
	struct sim_backend_sample *samples; /* [tick][backend], tick k at (k + 1) x SIM_BACKEND_TICK_NS */
	size_t n_samples, cap_samples;
};

/* The scenario's `backends`, `backendEvents` and serverConcurrencyLimitMode,
 * -Min, -Max (scl: its serverConcurrencyLimit); no backends: n = 0.
 * 0, or -EINVAL with a message naming the field. */
int sim_backends_parse(json_t *root, int64_t duration_ns, int64_t scl, struct sim_backends *out, char *err,
		       size_t errlen);
void sim_backends_free(struct sim_backends *bs);

/* The backend for a request of `seats` seats (its seats counted there), or
 * -1 (none has room by fairgate's view). */
int sim_backends_pick(struct sim_backends *bs, uint32_t seats, int64_t now);

/* Request `id`, picked for backend i, is sent there now: when its answer
 * comes, or -1: it waits in the backend's FIFO (sim_backends_next). */
int64_t sim_backends_send(struct sim_backends *bs, int i, uint32_t id, uint32_t seats, int64_t now, int64_t exec_ns);

/* An answer due now on backend i: now, or when its pause ends (later). */
int64_t sim_backends_answer_at(const struct sim_backends *bs, int i, int64_t now);

/* The request of `seats` seats sent to backend i at sent_ns answered now. */
void sim_backends_done(struct sim_backends *bs, int i, uint32_t seats, int64_t sent_ns, int64_t now);

/* The oldest request waiting in backend i's FIFO if it starts now: true,
 * its id and when its answer comes; false: none (call until false). */
bool sim_backends_next(struct sim_backends *bs, int i, int64_t now, uint32_t *id, int64_t *answer);

/* Event k happens now. */
void sim_backends_apply(struct sim_backends *bs, int k, int64_t now);

/* The periodic tick (told_apart): Adaptive, the pressure (requests wait in
 * the levels for seats; requests held for backend room:
 * fg_backendpool_set_pressure) and the pool's refresh; then the series'
 * sample.  Returns whether fairgate's view of the capacity moved. */
bool sim_backends_tick(struct sim_backends *bs, bool pressed, bool held, int64_t now);

/* What the levels' limits are scaled by (fg_qs_scale_by_capacity): the
 * pool's usable of total; Adaptive: of serverConcurrencyLimit, usable at
 * most serverConcurrencyLimitMax (the daemon's follow_capacity). */
void sim_backends_capacity(const struct sim_backends *bs, uint32_t *usable, uint32_t *total);

/* [{name, capacity, started, maxOutstanding, ...}], or NULL with no model. */
json_t *sim_backends_results(const struct sim_backends *bs);

/* told_apart: the window [from, to)'s samples, summed over the backends
 * ({limitSum, inForceSum, capacitySum: {min, avg, max}}); else NULL. */
json_t *sim_backends_window(const struct sim_backends *bs, int64_t from, int64_t to);

#endif
