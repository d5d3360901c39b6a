/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_backends — the simulator's backends (docs/simulator.md, "Backends"):
 * where a dispatched request executes, how long it takes there, and what a
 * pause, a drain or a slowdown does to it.  Without a `backends` list the
 * simulator has none and a request executes for its client's execTime.
 *
 * A backend has a capacity in seats (0: no limit) and a service-time scale
 * (a request takes execTime x scale there).  fairgate's view of them is the
 * daemon's own pool (common/req/backendpool.h): a dispatched request goes
 * to the enabled backend with the fewest outstanding seats that has room
 * for it (a request wider than a backend's capacity runs there alone); with
 * none, the simulator holds it, first come first served, until one has
 * room — the daemon's hold for backend room — and the levels' limits follow
 * the pool's usable capacity (fg_backendpool_capacity), as the daemon's do.
 * Events change a backend at a time: `pause` for a while (an answer due
 * during the pause comes when it ends, a request started during it takes
 * its whole time after it; an answer due after the pause's end is not
 * delayed: the model is coarse for requests longer than the pause), `drain`
 * (no new requests), `enable` (back in the pick) and `set` (a new capacity
 * or scale, for requests started from then on).
 *
 * The backends are the whole deployment's, shared by every worker (the
 * daemon splits a backend's capacity over its workers; the simulator does
 * not).  Seats stay held at the level from dispatch to answer, whatever the
 * backend does.
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

enum sim_backend_action { SIM_BACKEND_PAUSE, SIM_BACKEND_DRAIN, SIM_BACKEND_ENABLE, SIM_BACKEND_SET };

/* What fairgate cannot see of a backend; its capacity, administrative
 * state and outstanding seats are in the pool. */
struct sim_backend {
	char name[64];
	double scale;             /* service time = execTime x scale */
	int64_t paused_until;     /* no progress before then */
	/* results */
	uint64_t started;
	uint32_t max_outstanding;
};

struct sim_backend_event {
	int64_t at;
	int backend;
	enum sim_backend_action action;
	int64_t for_ns;           /* pause */
	int64_t capacity;         /* set: -1 unchanged */
	double scale;             /* set: 0 unchanged */
};

struct sim_backends {
	int n;                    /* 0: no backend model */
	struct sim_backend b[SIM_MAX_BACKENDS];
	struct fg_backendpool pool; /* fairgate's view (one for every worker) */
	int n_events;
	struct sim_backend_event ev[SIM_MAX_BACKEND_EVENTS];
	uint64_t held;            /* requests that waited for backend room */
};

/* The scenario's `backends` and `backendEvents` (both absent: n = 0).
 * 0, or -EINVAL with a message naming the field. */
int sim_backends_parse(json_t *root, int64_t duration_ns, struct sim_backends *out, char *err, size_t errlen);

/* The backend for a request of `seats` seats (its seats counted there), or
 * -1 (none has room). */
int sim_backends_pick(struct sim_backends *bs, uint32_t seats, int64_t now);

/* A request picked for backend i starts there now: when its answer comes. */
int64_t sim_backends_start(struct sim_backends *bs, int i, int64_t now, int64_t exec_ns);

/* An answer due now on backend i: now, or when its pause ends (later). */
int64_t sim_backends_answer_at(const struct sim_backends *bs, int i, int64_t now);

/* The request of `seats` seats on backend i answered. */
void sim_backends_done(struct sim_backends *bs, int i, uint32_t seats, int64_t now);

/* Event k happens now. */
void sim_backends_apply(struct sim_backends *bs, int k, int64_t now);

/* [{name, capacity, started, maxOutstanding}], or NULL with no model. */
json_t *sim_backends_results(const struct sim_backends *bs);

#endif
