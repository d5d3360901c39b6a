/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scenario — the scenario file of `fairgate-bench run` (docs/bench.md,
 * "run"): fairgate's settings and objects, emulated backends, flows with
 * timed phases, and timed events; YAML or JSON.  Every field is checked here
 * with its path in the error, so the runner only ever sees a valid plan.
 *
 * Invariants of a loaded scenario: 1 <= flows <= FG_SCN_MAX_FLOWS with
 * distinct names; each flow's steps are sorted, do not overlap, lie in
 * [0, duration] and each is closed loop (threads > 0) or open loop
 * (rate > 0), never both; a ramp is already cut into FG_SCN_RAMP_STEP_NS
 * steps of constant rate; events are sorted by time and name backends that
 * exist; settle lies in [0, duration - 1s]; each expectation names a flow
 * of the scenario, at most once.  Strings point into the scenario's own
 * document.
 *
 * Thread contract: a scenario is read-only after loading; any thread.
 */
#ifndef FG_SCENARIO_H
#define FG_SCENARIO_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FG_SCN_MAX_FLOWS 32
#define FG_SCN_MAX_STEPS 64       /* per flow, ramps' steps included */
#define FG_SCN_MAX_EVENTS 64
#define FG_SCN_MAX_BACKENDS 16
#define FG_SCN_MAX_GROUPS 16
#define FG_SCN_MAX_DURATION_NS (600LL * 1000000000LL)
#define FG_SCN_RAMP_STEP_NS 1000000000LL
#define FG_SCN_MAX_PHASES (FG_SCN_MAX_FLOWS * FG_SCN_MAX_STEPS * 2 + FG_SCN_MAX_EVENTS + 2)

enum fg_scn_dist { FG_SCN_FIXED, FG_SCN_EXPONENTIAL, FG_SCN_LOGNORMAL, FG_SCN_REQUEST };
enum fg_scn_action { FG_SCN_APPLY, FG_SCN_KILL, FG_SCN_RESTART, FG_SCN_PAUSE, FG_SCN_RESUME, FG_SCN_SET_BACKEND };

/* A stretch of a flow's load at a constant level: one loadgen process. */
struct fg_scn_step {
	int64_t start_ns, stop_ns;
	unsigned threads; /* closed loop: requests outstanding; 0 for open loop */
	double rate;      /* open loop: Poisson arrivals per second; 0 for closed loop */
};

struct fg_scn_flow {
	const char *name, *user, *ns, *verb, *api_group, *resource, *subresource, *path;
	const char *groups[FG_SCN_MAX_GROUPS];
	unsigned n_groups;
	unsigned width;     /* seats hint */
	bool constant;      /* open loop: evenly spaced arrivals instead of Poisson */
	int retry_after;    /* honour REJECTs' retry-after: 1 on, 0 off, -1 loadgen's default */
	int64_t service_ns; /* carried in the request (distribution "request"); -1: none */
	struct fg_scn_step steps[FG_SCN_MAX_STEPS];
	unsigned n_steps;
};

struct fg_scn_event {
	int64_t at_ns;
	enum fg_scn_action action;
	unsigned backend;   /* kill, restart, pause, resume, set-backend */
	char *apply_text;   /* apply: the objects as a JSON List (owned) */
	int64_t service_ns; /* set-backend: the backend's service time from then on; -1: unchanged */
	unsigned capacity;  /* set-backend: its real concurrency from then on; 0: unchanged */
};

struct fg_scenario {
	json_t *doc;        /* owns every string below */
	const char *name, *description;
	int64_t duration_ns, timeout_ns;
	json_t *settings;   /* FairgateSettings spec (owned reference), serverConcurrencyLimit filled in */
	char *objects_text; /* the objects as a JSON List (owned); NULL: the embedded default */
	uint32_t seat_limit;
	unsigned n_backends, capacity;
	unsigned seats;     /* what fairgate is told of each backend (seats=N); 0: nothing */
	/* The second run: NULL, the baseline without fairness; else the
	 * scenario's objects with these settings (owned reference, merged over
	 * `settings`), e.g. Static against Adaptive. */
	json_t *baseline_settings;
	const char *baseline_description;
	enum fg_scn_dist dist;
	int64_t service_ns; /* the distribution's mean (median for log-normal) */
	double sigma;       /* log-normal: the log's standard deviation */
	uint16_t ports[FG_SCN_MAX_BACKENDS]; /* 0: any free port */
	struct fg_scn_flow flows[FG_SCN_MAX_FLOWS];
	unsigned n_flows;
	struct fg_scn_event events[FG_SCN_MAX_EVENTS];
	unsigned n_events;
	/* `settle`: latency and verdicts are also given over [settle, end), the
	 * run without its start; 0: whole run only. */
	int64_t settle_ns;
	/* `expect` (checked in both runs, over [settle, end)):
	 * p99ServiceTimes: a flow's p99 at most `times` x its service time;
	 * backendUtilisation: the backends' busy fraction at least this (0: none). */
	struct fg_scn_expect_p99 {
		unsigned flow;
		double times;
	} expect_p99[FG_SCN_MAX_FLOWS];
	unsigned n_expect_p99;
	double expect_utilisation;
};

/* Load a scenario (YAML or JSON text); NULL and a message naming the field. */
struct fg_scenario *fg_scenario_load(const uint8_t *buf, size_t len, char *err, size_t errlen);
void fg_scenario_free(struct fg_scenario *s);

const char *fg_scn_dist_name(enum fg_scn_dist d);
const char *fg_scn_action_name(enum fg_scn_action a);

/* The phase boundaries: 0, every step's start and stop, every event's
 * time and the duration, sorted and distinct, into bounds[0..max); returns
 * how many (at least 2).  Phase k is [bounds[k], bounds[k+1]). */
unsigned fg_scn_phases(const struct fg_scenario *s, int64_t *bounds, unsigned max);

/* The step of flow f running at time t, or NULL. */
const struct fg_scn_step *fg_scn_step_at(const struct fg_scn_flow *f, int64_t t_ns);

/* A flow's mean service time in seconds: its own (distribution "request")
 * or the backends' distribution's mean. */
double fg_scn_flow_service_s(const struct fg_scenario *s, const struct fg_scn_flow *f);

/* A flow's seats demand during a step: closed loop threads x width, open
 * loop rate x mean service time x width. */
double fg_scn_step_demand(const struct fg_scenario *s, const struct fg_scn_flow *f, const struct fg_scn_step *st);

/* The backends' real capacity at time t: the sum of their workers (the
 * scenario's capacity, changed by set-backend events; 0 for a backend
 * killed and not restarted, or paused and not resumed), from the events at
 * or before t.  *service_scale (may be NULL): the mean over the backends
 * that run of their service time over the scenario's (1 when none runs). */
unsigned fg_scn_capacity_at(const struct fg_scenario *s, int64_t t_ns, double *service_scale);

/* Whether event e changes a backend (its capacity or service time, or
 * whether it runs): kill, restart, pause, resume, set-backend. */
bool fg_scn_event_changes_backend(const struct fg_scn_event *e);

#endif
