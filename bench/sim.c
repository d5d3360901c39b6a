/* SPDX-License-Identifier: Apache-2.0 */
/* sim — discrete-event simulation of priority levels on a virtual clock;
 * see sim.h and docs/simulator.md. */
#include "sim.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "borrowing.h"
#include "duration.h"
#include "flowcontrol.h"
#include "flowhash.h"
#include "jsonfield.h"
#include "readfile.h"
#include "queueset.h"
#include "seatshare.h"
#include "sim_backends.h"
#include "sim_ideal.h"

#define SIM_MAX_WINDOWS 64
#define SIM_NAME_MAX 128
#define SIM_DEFAULT_DURATION_NS 10000000000LL
#define SIM_DEFAULT_WAIT_NS 15000000000LL
#define SIM_DEFAULT_SCL 600
#define SIM_MIN_RETRY_NS 1000LL /* a refused call's next call: after thinkTime, at least 1us */
#define SIM_MIN_BORROWING_PERIOD_NS 1000000LL /* 1ms: a round costs O(levels log levels) */

/*
 * A level as `workers` cores run it, in one of three placements
 * (docs/simulator.md): "owner" (the daemon until issue 28): queue q is owned by
 * worker q % workers, which holds it in its own queue set; an arrival deals
 * its hand over all the level's queues and joins the least loaded card's
 * owner, and every allotment period the seats are split into per-worker
 * allotments by a global max-min over all queues' demands.  "local": a
 * request stays in the queue set of the worker that received it (every
 * worker has all the queues and chooses as one worker does), and the
 * allotment is a max-min over flows, each flow's share split over the
 * workers it waits at (fg_seatshare_round_flows).  "localWeighted" (the
 * daemon, and the default): the same, and each worker weighs its flows by
 * the share the round gave them there.
 * Either way only seats that are free are granted.
 * cfg.concurrency_limit is the level's current limit: its nominal limit at
 * the start, then what each borrowing round gives it (fixed by
 * levelConcurrency).
 */
struct level {
	const char *name;              /* in the compiled configuration */
	bool fixed;                    /* levelConcurrency: no borrowing */
	struct fg_qs_config cfg;
	struct fg_queueset *qs;        /* one per worker */
	struct fg_dealer dealer;
	uint32_t rotation;             /* the first card visited (owner placement) */
	uint64_t limit_violations;     /* instants where the workers together exceeded the limit */
	uint32_t draining;             /* seats held above a shrunk limit, allowed to finish (0: none) */
	uint32_t demand;               /* seats in use + waiting, as last fed to the integrator */
	int64_t limit_since;           /* the current limit's time integral runs from here */
	double limit_ns[SIM_MAX_WINDOWS]; /* integral of the current limit per window */
	double credit[FG_SEATSHARE_MAX_WORKERS]; /* the allotter's memory (fg_seatshare_round) */
	double *flow_share;            /* localWeighted: [client * workers + w], the last round's */
	bool blocked[FG_SEATSHARE_MAX_WORKERS];  /* a worker's head did not fit its allotment */
};

/* Seats a client's requests hold at their level (dispatch to answer), and
 * of those the seats executing at a backend (not waiting in its FIFO, nor
 * held for room): only with backends told other than their capacity. */
enum { SEATS_HELD, SEATS_AT_BACKEND, SEAT_KINDS };

struct window_stats {
	double seat_ns[SEAT_KINDS];  /* integral of initial seats */
	uint64_t dispatched;
	uint64_t rejected[3];        /* queue-full, time-out, concurrency-limit */
	double *waits;
	size_t n_waits, cap_waits;
};

struct client {
	char name[SIM_NAME_MAX];
	int level;
	uint64_t hash;
	uint32_t weight;             /* the flow's weight (thousandths), from classification */
	unsigned threads;
	uint64_t calls;              /* per thread (closed loop) or in all (open loop); 0 = unbounded */
	double rate;
	int64_t exec_ns, think_ns, extra_ns, start_ns, stop_ns;
	uint16_t initial, final;
	int rx_worker;               /* receives connection 0; connection k goes to (rx_worker + k) % workers */
	unsigned connections;        /* thread j (open loop: arrival j) uses connection j % connections */
	/* run state */
	uint64_t issued;             /* open loop */
	unsigned rng;
	uint32_t cur_seats[SEAT_KINDS];
	int64_t last_change[SEAT_KINDS];
	struct window_stats win[SIM_MAX_WINDOWS];
};

struct sim_req {
	struct fg_qs_req q;          /* first: the queue set hands these back */
	int client, thread, worker;
	int backend;                 /* with backends: where it executes (-1: held for room) */
	int64_t sent_ns;             /* with backends: when it was sent there (its latency runs from then) */
	uint32_t gen;
};

enum ev_type { EV_ARRIVE, EV_FINISH, EV_RELEASE, EV_TIMEOUT, EV_ALLOT, EV_SIGNALLED_ALLOT, EV_BORROW, EV_BACKEND,
	       EV_BACKEND_TICK };

struct event {
	int64_t t;
	uint64_t seq;
	int type;
	int client, thread;
	uint32_t req, gen;
};

enum sim_placement { SIM_PLACE_OWNER, SIM_PLACE_LOCAL, SIM_PLACE_LOCAL_WEIGHTED };

struct fg_sim {
	int64_t scl, wait_ns, duration_ns;
	int workers;
	enum sim_placement placement;
	int64_t allot_ns;
	bool signal_pending;           /* an early allotter round is scheduled */
	bool failed;                   /* out of memory mid-run */
	int64_t borrow_ns;             /* borrowingPeriod */
	uint64_t borrow_rounds, borrow_backstops;
	uint32_t nominal_sum;          /* of the borrowing levels (Kubernetes' nominalCLSum) */
	struct fg_fc_config *fc;       /* the scenario's objects, compiled */
	struct level *levels;
	struct fg_borrowing_level *borrow; /* [n_levels]: the daemon's borrowing state per level */
	int n_levels;
	int64_t win_from[SIM_MAX_WINDOWS], win_to[SIM_MAX_WINDOWS];
	int n_windows;
	struct client *clients;
	int n_clients;
	int *by_hash;                /* client indices sorted by flow hash ("local" placements) */
	uint64_t **thread_calls;     /* calls made per client thread */
	/* run state */
	struct event *heap;
	size_t n_heap, cap_heap;
	uint64_t seq;
	struct sim_req *reqs;
	uint32_t n_reqs, cap_reqs;
	uint32_t *free_reqs;
	uint32_t n_free;
	struct sim_backends backends;  /* n 0: none, a request executes for its execTime */
	uint32_t capacity_usable, capacity_total; /* the pool's, as the levels follow it (0 of 0: all) */
	uint64_t refusals, refusals_seen; /* by any level; at the last backend tick (the pressure signal) */
	uint64_t held_seen;               /* backends.held at the last backend tick */
	uint32_t *held;                /* dispatched requests waiting for backend room, oldest first */
	size_t held_head, n_held, cap_held;
	int64_t now;
};

/* --- scenario parsing -------------------------------------------------- */

static int parse_window(const char *s, int64_t *from, int64_t *to)
{
	const char *dash = strchr(s, '-');
	if (!dash || dash == s)
		return -EINVAL;
	if (fg_duration_parse(s, (size_t)(dash - s), from) || fg_duration_parse(dash + 1, strlen(dash + 1), to))
		return -EINVAL;
	return *from >= 0 && *to > *from ? 0 : -EINVAL;
}

static int find_level(const struct fg_sim *s, const char *name)
{
	for (int i = 0; i < s->n_levels; i++)
		if (!strcmp(s->levels[i].name, name))
			return i;
	return -1;
}

static int parse_client(struct fg_sim *s, json_t *o, int idx, struct client *c, char *err, size_t errlen)
{
	char path[64];
	snprintf(path, sizeof(path), "clients[%d].", idx);
	if (!json_is_object(o))
		return fg_jf_fail(err, errlen, "clients[%d]: must be an object", idx);
	static const char *const known[] = { "name", "priorityLevel", "request", "flowHash", "threads", "calls",
					     "rate", "execTime", "thinkTime", "initialSeats", "finalSeats",
					     "additionalLatency", "startAt", "stopAt", "rxWorker", "connections", NULL };
	if (fg_jf_known_keys(o, known, path, err, errlen))
		return -EINVAL;
	int64_t rx_worker, connections;
	if (fg_jf_int(o, "rxWorker", idx % s->workers, 0, s->workers - 1, &rx_worker, path, err, errlen) ||
	    fg_jf_int(o, "connections", 1, 1, 100000, &connections, path, err, errlen))
		return -EINVAL;
	c->rx_worker = (int)rx_worker;
	c->connections = (unsigned)connections;
	const char *name = json_string_value(json_object_get(o, "name"));
	if (!name || !*name || strlen(name) >= SIM_NAME_MAX)
		return fg_jf_fail(err, errlen, "%sname: required", path);
	snprintf(c->name, sizeof(c->name), "%s", name);
	json_t *pl = json_object_get(o, "priorityLevel"), *req = json_object_get(o, "request");
	uint64_t classified_hash = 0;
	if (pl) {
		if (!json_is_string(pl) || (c->level = find_level(s, json_string_value(pl))) < 0)
			return fg_jf_fail(err, errlen, "%spriorityLevel: no PriorityLevelConfiguration named %s", path,
				    json_is_string(pl) ? json_string_value(pl) : "(not a string)");
	} else {
		/* Classified by the scenario's FlowSchemas, as the daemon would. */
		struct fg_fc_request r;
		struct fg_str groups[FG_PROTO_MAX_GROUPS];
		char msg[160];
		json_t *dflt = NULL;
		if (!req)
			req = dflt = json_pack("{s:s}", "user", c->name);
		int rc = fg_fc_request_from_json(req, &r, groups, FG_PROTO_MAX_GROUPS, msg, sizeof(msg));
		if (!rc) {
			struct fg_fc_match m;
			fg_fc_classify(s->fc, &r, &m);
			c->level = (int)m.level;
			classified_hash = m.flow_hash;
			c->weight = m.weight;
		}
		json_decref(dflt);
		if (rc)
			return fg_jf_fail(err, errlen, "%s%s", path, msg);
	}
	int64_t threads, calls, initial, final;
	if (fg_jf_int(o, "threads", 1, 0, 100000, &threads, path, err, errlen) ||
	    fg_jf_int(o, "calls", 0, 0, INT64_MAX, &calls, path, err, errlen) ||
	    fg_jf_int(o, "initialSeats", 1, 1, 65535, &initial, path, err, errlen) ||
	    fg_jf_int(o, "finalSeats", 0, 0, 65535, &final, path, err, errlen) ||
	    fg_jf_duration(o, "execTime", 1000000000LL, &c->exec_ns, path, err, errlen) ||
	    fg_jf_duration(o, "thinkTime", 0, &c->think_ns, path, err, errlen) ||
	    fg_jf_duration(o, "additionalLatency", 0, &c->extra_ns, path, err, errlen) ||
	    fg_jf_duration(o, "startAt", 0, &c->start_ns, path, err, errlen) ||
	    fg_jf_duration(o, "stopAt", INT64_MAX, &c->stop_ns, path, err, errlen))
		return -EINVAL;
	if (c->exec_ns < 0)
		return fg_jf_fail(err, errlen, "%sexecTime: must not be negative", path);
	if (c->think_ns < -c->exec_ns)
		return fg_jf_fail(err, errlen, "%sthinkTime: must be at least -execTime", path);
	if (c->extra_ns < 0 || c->start_ns < 0)
		return fg_jf_fail(err, errlen, "%s%s: must not be negative", path, c->extra_ns < 0 ? "additionalLatency" : "startAt");
	json_t *rate = json_object_get(o, "rate");
	c->rate = rate ? json_number_value(rate) : 0;
	if (rate && (!json_is_number(rate) || c->rate < 0 || c->rate > 1e9))
		return fg_jf_fail(err, errlen, "%srate: must be a number in [0, 1e9]", path);
	/* Open loop (rate > 0) has no threads to speak of; a closed loop needs one. */
	if (threads == 0 && !(c->rate > 0))
		return fg_jf_fail(err, errlen, "%sthreads: must be an integer in [1, 100000] for a closed-loop client (rate 0)",
			    path);
	c->threads = (unsigned)threads;
	c->calls = (uint64_t)calls;
	c->initial = (uint16_t)initial;
	c->final = (uint16_t)final;
	json_t *fh = json_object_get(o, "flowHash");
	if (fh) {
		if (!json_is_integer(fh))
			return fg_jf_fail(err, errlen, "%sflowHash: must be an integer", path);
		c->hash = (uint64_t)json_integer_value(fh);
	} else if (!pl) {
		c->hash = classified_hash;
	} else {
		/* A level named directly: the level name stands for the schema, the
		 * user (or the client name) is the distinguisher. */
		const char *user = json_string_value(json_object_get(req, "user"));
		if (!user)
			user = c->name;
		const char *lname = s->levels[c->level].name;
		c->hash = fg_flow_hash(lname, strlen(lname), user, strlen(user));
	}
	c->rng = 0x9e3779b9u * (unsigned)(idx + 1);
	return 0;
}

/* The scenario's objects (or the bootstrap set; FairSharing objects alone:
 * with the bootstrap set) compiled by the same code as the daemon's: levels
 * with Kubernetes' derived limits, schemas to classify, flows' weights. */
static int load_objects(struct fg_sim *s, json_t *objects, char *err, size_t errlen)
{
	struct fg_fc_set *set;
	struct fg_errors errs = { .len = 0 };
	if (objects && json_array_size(objects)) {
		json_t *list = json_pack("{s:s, s:s, s:O}", "apiVersion", "v1", "kind", "List", "items", objects);
		char *text = json_dumps(list, JSON_COMPACT);
		json_decref(list);
		set = fg_fc_set_new();
		if (fg_fc_set_apply(set, (const uint8_t *)text, strlen(text), NULL, &errs) < 0) {
			free(text);
			fg_fc_set_free(set);
			return fg_jf_fail(err, errlen, "objects: %u error(s): %s", errs.count, errs.text);
		}
		free(text);
		/* As a configuration file: FairSharing objects alone stand beside
		 * the bootstrap levels and schemas. */
		if (fg_fc_set_or_bootstrap(set)) {
			fg_fc_set_free(set);
			return fg_jf_fail(err, errlen, "out of memory");
		}
	} else {
		set = fg_fc_set_bootstrap();
	}
	s->fc = fg_fc_compile(set, (uint32_t)s->scl, &errs);
	fg_fc_set_free(set);
	if (!s->fc)
		return fg_jf_fail(err, errlen, "objects: %u error(s): %s", errs.count, errs.text);
	s->n_levels = (int)s->fc->n_levels;
	s->levels = calloc((size_t)s->n_levels, sizeof(*s->levels));
	if (!s->levels)
		return fg_jf_fail(err, errlen, "out of memory");
	for (int i = 0; i < s->n_levels; i++) {
		const struct fg_fc_level *l = &s->fc->levels[i];
		s->levels[i].name = l->name;
		/* Widths are taken as the scenario gives them: no per-level cap. */
		s->levels[i].cfg = (struct fg_qs_config){
			.mode = l->exempt ? FG_QS_EXEMPT : l->reject ? FG_QS_REJECT : FG_QS_QUEUE,
			.queues = l->queues, .hand_size = l->hand_size, .queue_length_limit = l->queue_length_limit,
			.concurrency_limit = l->limit, .weighted = l->weighted,
			.usage_based = l->policy == FG_FC_POLICY_USAGE_BASED, .usage = fg_fc_level_usage_params(l) };
	}
	return 0;
}

struct fg_sim *fg_sim_load(const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	json_error_t je;
	json_t *root = json_loadb((const char *)buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		fg_jf_fail(err, errlen, "malformed JSON at line %d column %d: %s", je.line, je.column, je.text);
		return NULL;
	}
	struct fg_sim *s = calloc(1, sizeof(*s));
	if (!s || !json_is_object(root)) {
		fg_jf_fail(err, errlen, s ? "scenario: must be a JSON object" : "out of memory");
		goto bad;
	}
	/* "description" and "expect" are for people and the test suite (tests/test_sim.c). */
	static const char *const known[] = { "serverConcurrencyLimit", "serverConcurrencyLimitMode",
					     "serverConcurrencyLimitMin", "serverConcurrencyLimitMax", "queueWaitLimit",
					     "duration", "workers",
					     "placement", "allotmentPeriod", "borrowingPeriod", "objects",
					     "levelConcurrency", "windows", "clients", "backends", "backendEvents",
					     "description", "expect", NULL };
	if (fg_jf_known_keys(root, known, "", err, errlen) ||
	    fg_jf_int(root, "serverConcurrencyLimit", SIM_DEFAULT_SCL, 1, 10000000, &s->scl, "", err, errlen) ||
	    fg_jf_duration(root, "queueWaitLimit", SIM_DEFAULT_WAIT_NS, &s->wait_ns, "", err, errlen) ||
	    fg_jf_duration(root, "duration", SIM_DEFAULT_DURATION_NS, &s->duration_ns, "", err, errlen))
		goto bad;
	int64_t workers;
	if (fg_jf_int(root, "workers", 1, 1, 64, &workers, "", err, errlen) ||
	    fg_jf_duration(root, "allotmentPeriod", 1000000, &s->allot_ns, "", err, errlen) ||
	    fg_jf_duration(root, "borrowingPeriod", FG_BORROWING_DEFAULT_PERIOD_NS, &s->borrow_ns, "", err, errlen))
		goto bad;
	s->workers = (int)workers;
	const char *placement;
	if (fg_jf_string(root, "placement", false, "localWeighted", 32, &placement, "", err, errlen))
		goto bad;
	if (!strcmp(placement, "owner"))
		s->placement = SIM_PLACE_OWNER;
	else if (!strcmp(placement, "local"))
		s->placement = SIM_PLACE_LOCAL;
	else if (!strcmp(placement, "localWeighted"))
		s->placement = SIM_PLACE_LOCAL_WEIGHTED;
	else {
		fg_jf_fail(err, errlen, "placement: must be \"owner\", \"local\" or \"localWeighted\"");
		goto bad;
	}
	if (s->allot_ns < 1000) {
		fg_jf_fail(err, errlen, "allotmentPeriod: must be at least 1us");
		goto bad;
	}
	if (s->borrow_ns < SIM_MIN_BORROWING_PERIOD_NS) {
		fg_jf_fail(err, errlen, "borrowingPeriod: must be at least 1ms");
		goto bad;
	}
	if (s->duration_ns <= 0 || s->wait_ns < 0) {
		fg_jf_fail(err, errlen, s->duration_ns <= 0 ? "duration: must be positive" : "queueWaitLimit: must not be negative");
		goto bad;
	}
	if (sim_backends_parse(root, s->duration_ns, s->scl, &s->backends, err, errlen))
		goto bad;
	json_t *objects = json_object_get(root, "objects"), *v;
	size_t i;
	if (objects && !json_is_array(objects)) {
		fg_jf_fail(err, errlen, "objects: must be a list");
		goto bad;
	}
	if (load_objects(s, objects, err, errlen))
		goto bad;
	json_t *fixed = json_object_get(root, "levelConcurrency");
	if (fixed && !json_is_object(fixed)) {
		fg_jf_fail(err, errlen, "levelConcurrency: must be an object of level name to seats");
		goto bad;
	}
	const char *key;
	json_object_foreach(fixed, key, v) {
		int l = find_level(s, key);
		if (l < 0 || !json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 10000000) {
			fg_jf_fail(err, errlen, "levelConcurrency.%s: must name a level and be an integer in [0, 1e7]", key);
			goto bad;
		}
		s->levels[l].cfg.concurrency_limit = (uint32_t)json_integer_value(v);
		s->levels[l].fixed = true;
	}
	json_t *windows = json_object_get(root, "windows");
	if (windows && (!json_is_array(windows) || json_array_size(windows) == 0 ||
			json_array_size(windows) > SIM_MAX_WINDOWS)) {
		fg_jf_fail(err, errlen, "windows: must be a list of 1..%d \"FROM-TO\" strings", SIM_MAX_WINDOWS);
		goto bad;
	}
	json_array_foreach(windows, i, v) {
		if (!json_is_string(v) || parse_window(json_string_value(v), &s->win_from[i], &s->win_to[i]) ||
		    s->win_to[i] > s->duration_ns) {
			fg_jf_fail(err, errlen, "windows[%zu]: must be \"FROM-TO\" durations with FROM < TO <= duration", i);
			goto bad;
		}
		s->n_windows++;
	}
	if (!s->n_windows) {
		s->win_from[0] = 0;
		s->win_to[0] = s->duration_ns;
		s->n_windows = 1;
	}
	json_t *clients = json_object_get(root, "clients");
	if (!json_is_array(clients) || json_array_size(clients) == 0 || json_array_size(clients) > 100000) {
		fg_jf_fail(err, errlen, "clients: must be a non-empty list");
		goto bad;
	}
	s->n_clients = (int)json_array_size(clients);
	s->clients = calloc((size_t)s->n_clients, sizeof(*s->clients));
	s->thread_calls = calloc((size_t)s->n_clients, sizeof(*s->thread_calls));
	if (!s->clients || !s->thread_calls) {
		fg_jf_fail(err, errlen, "out of memory");
		goto bad;
	}
	json_array_foreach(clients, i, v) {
		if (parse_client(s, v, (int)i, &s->clients[i], err, errlen))
			goto bad;
		/* An open-loop client's arrivals all run as thread 0. */
		s->thread_calls[i] = calloc(s->clients[i].threads ? s->clients[i].threads : 1, sizeof(uint64_t));
		if (!s->thread_calls[i]) {
			fg_jf_fail(err, errlen, "out of memory");
			goto bad;
		}
	}
	json_decref(root);
	return s;
bad:
	json_decref(root);
	fg_sim_free(s);
	return NULL;
}

void fg_sim_free(struct fg_sim *s)
{
	if (!s)
		return;
	for (int l = 0; s->levels && l < s->n_levels; l++)
		for (int w = 0; s->levels[l].qs && w < s->workers; w++)
			fg_qs_fini(&s->levels[l].qs[w]);
	for (int l = 0; s->levels && l < s->n_levels; l++) {
		free(s->levels[l].qs);
		free(s->levels[l].flow_share);
	}
	free(s->by_hash);
	free(s->levels);
	free(s->borrow);
	fg_fc_config_free(s->fc);
	for (int c = 0; c < s->n_clients; c++) {
		for (int w = 0; w < SIM_MAX_WINDOWS; w++)
			free(s->clients[c].win[w].waits);
		if (s->thread_calls)
			free(s->thread_calls[c]);
	}
	free(s->thread_calls);
	free(s->clients);
	free(s->heap);
	free(s->reqs);
	free(s->free_reqs);
	free(s->held);
	sim_backends_free(&s->backends);
	free(s);
}

/* --- event heap -------------------------------------------------------- */

static int ev_before(const struct event *a, const struct event *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static int push(struct fg_sim *s, struct event e)
{
	if (s->n_heap == s->cap_heap) {
		size_t cap = s->cap_heap ? s->cap_heap * 2 : 1024;
		struct event *h = realloc(s->heap, cap * sizeof(*h));
		if (!h)
			return -ENOMEM;
		s->heap = h;
		s->cap_heap = cap;
	}
	e.seq = s->seq++;
	size_t i = s->n_heap++;
	while (i > 0 && ev_before(&e, &s->heap[(i - 1) / 2])) {
		s->heap[i] = s->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	s->heap[i] = e;
	return 0;
}

static struct event pop(struct fg_sim *s)
{
	struct event top = s->heap[0], last = s->heap[--s->n_heap];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= s->n_heap)
			break;
		if (c + 1 < s->n_heap && ev_before(&s->heap[c + 1], &s->heap[c]))
			c++;
		if (!ev_before(&s->heap[c], &last))
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (s->n_heap)
		s->heap[i] = last;
	return top;
}

/* --- request pool ------------------------------------------------------ */

static uint32_t req_alloc(struct fg_sim *s)
{
	if (s->n_free)
		return s->free_reqs[--s->n_free];
	if (s->n_reqs == s->cap_reqs) {
		uint32_t cap = s->cap_reqs ? s->cap_reqs * 2 : 1024;
		struct sim_req *r = realloc(s->reqs, cap * sizeof(*r));
		uint32_t *f = realloc(s->free_reqs, cap * sizeof(*f));
		if (r)
			s->reqs = r;
		if (f)
			s->free_reqs = f;
		if (!r || !f)
			return UINT32_MAX;
		s->cap_reqs = cap;
	}
	s->reqs[s->n_reqs].gen = 0;
	return s->n_reqs++;
}

static void req_free(struct fg_sim *s, uint32_t i)
{
	s->reqs[i].gen++;
	s->free_reqs[s->n_free++] = i;
}

/* --- measurement ------------------------------------------------------- */

static void integrate(struct fg_sim *s, struct client *c, int kind, int64_t t)
{
	if (c->cur_seats[kind])
		for (int w = 0; w < s->n_windows; w++) {
			int64_t a = c->last_change[kind] > s->win_from[w] ? c->last_change[kind] : s->win_from[w];
			int64_t b = t < s->win_to[w] ? t : s->win_to[w];
			if (b > a)
				c->win[w].seat_ns[kind] += (double)c->cur_seats[kind] * (double)(b - a);
		}
	c->last_change[kind] = t;
}

/* A client's seats of `kind` move by delta (+ or -) now. */
static void seats_move(struct fg_sim *s, struct client *c, int kind, int32_t delta)
{
	integrate(s, c, kind, s->now);
	c->cur_seats[kind] += (uint32_t)delta;
}

static int window_of(const struct fg_sim *s, int64_t t)
{
	for (int w = 0; w < s->n_windows; w++)
		if (t >= s->win_from[w] && t < s->win_to[w])
			return w;
	return -1;
}

enum { REJ_QUEUE_FULL, REJ_TIME_OUT, REJ_CONCURRENCY };

static void count_reject(struct fg_sim *s, struct client *c, int kind)
{
	s->refusals++;
	int w = window_of(s, s->now);
	if (w >= 0)
		c->win[w].rejected[kind]++;
}

/* --- the simulation ---------------------------------------------------- */

static void schedule_arrival(struct fg_sim *s, int ci, int th, int64_t t)
{
	push(s, (struct event){ .t = t, .type = EV_ARRIVE, .client = ci, .thread = th });
}

/* A closed-loop thread's next call; open-loop arrivals schedule themselves. */
static void next_call(struct fg_sim *s, int ci, int th, int64_t t)
{
	struct client *c = &s->clients[ci];
	if (c->rate > 0)
		return;
	if ((c->calls && s->thread_calls[ci][th] >= c->calls) || t >= c->stop_ns)
		return;
	schedule_arrival(s, ci, th, t);
}

/* A level's limit as several workers' allotter splits it: scaled by the
 * backends' usable capacity (seatshare.h, struct fg_worker_capacity). */
static uint32_t level_in_force(const struct fg_sim *s, const struct level *l)
{
	return fg_qs_scale_by_capacity(l->cfg.concurrency_limit, s->capacity_usable, s->capacity_total);
}

/* --- backends (sim_backends.h) ---------------------------------------- */

/* Request ri starts executing at its backend now, its answer due then. */
static void executing_at_backend(struct fg_sim *s, uint32_t ri, int64_t answer)
{
	struct sim_req *r = &s->reqs[ri];
	if (s->backends.told_apart)
		seats_move(s, &s->clients[r->client], SEATS_AT_BACKEND, (int32_t)r->q.initial_seats);
	push(s, (struct event){ .t = answer, .type = EV_FINISH, .req = ri, .gen = r->gen });
}

/* Sent to its backend: it executes there, or waits in the backend's FIFO
 * beyond its true capacity. */
static void execute_on_backend(struct fg_sim *s, uint32_t ri)
{
	struct sim_req *r = &s->reqs[ri];
	r->sent_ns = s->now;
	int64_t answer = sim_backends_send(&s->backends, r->backend, ri, r->q.seats, s->now, s->clients[r->client].exec_ns);
	if (answer >= 0)
		executing_at_backend(s, ri, answer);
}

/* No backend has room: the request keeps its seats and waits, first come
 * first served, as the daemon holds it. */
static void hold(struct fg_sim *s, uint32_t ri)
{
	if (s->held_head + s->n_held == s->cap_held) {
		if (s->held_head) { /* slide the live part to the front first */
			memmove(s->held, s->held + s->held_head, s->n_held * sizeof(*s->held));
			s->held_head = 0;
		} else {
			size_t cap = s->cap_held ? s->cap_held * 2 : 256;
			uint32_t *h = realloc(s->held, cap * sizeof(*h));
			if (!h) {
				s->failed = true;
				return;
			}
			s->held = h;
			s->cap_held = cap;
		}
	}
	s->held[s->held_head + s->n_held++] = ri;
	s->backends.held++;
}

/* Room on a backend: the held requests start in their order while the
 * oldest fits somewhere. */
static void start_held(struct fg_sim *s)
{
	while (s->n_held) {
		uint32_t ri = s->held[s->held_head];
		struct sim_req *r = &s->reqs[ri];
		if ((r->backend = sim_backends_pick(&s->backends, r->q.seats, s->now)) < 0)
			return;
		s->held_head++;
		s->n_held--;
		execute_on_backend(s, ri);
	}
	s->held_head = 0;
}

static void allot(struct fg_sim *s, struct level *l);

/* The seats a level may hold now by the seat limit check (dispatch): its
 * current limit; Adaptive: scaled by the learned capacity, which may pass 1
 * (a drain in Static mode only shrinks it: checked against the limit). */
static uint32_t level_checked_limit(const struct fg_sim *s, const struct level *l)
{
	return s->backends.adaptive ? level_in_force(s, l) : l->cfg.concurrency_limit;
}

/* Seats a level holds above its shrunk limit may finish (the KEP's
 * transient); none may start while it is above (see dispatch). */
static void drain_above(struct fg_sim *s, struct level *l, uint32_t limit)
{
	uint32_t used = 0;
	for (int w = 0; w < s->workers; w++)
		used += l->qs[w].seats_in_use;
	if (used > limit && used > l->draining)
		l->draining = used;
}

/* The levels' limits follow the backends' usable capacity, as the daemon's
 * do (sim_backends_capacity): one worker scales its queue sets
 * (fg_qs_set_capacity); with several the allotter scales the level it
 * splits, at once (fg_board_limit_moved), and the workers' width checks
 * follow the scaled level. */
static void follow_capacity(struct fg_sim *s)
{
	sim_backends_capacity(&s->backends, &s->capacity_usable, &s->capacity_total);
	for (int l = 0; l < s->n_levels; l++) {
		struct level *lv = &s->levels[l];
		if (lv->cfg.mode == FG_QS_EXEMPT)
			continue;
		if (s->backends.adaptive)
			drain_above(s, lv, level_checked_limit(s, lv));
		if (s->workers == 1) {
			fg_qs_set_capacity(&lv->qs[0], s->capacity_usable, s->capacity_total, (uint64_t)s->now);
			continue;
		}
		for (int w = 0; w < s->workers; w++)
			fg_qs_set_level_limit(&lv->qs[w], level_in_force(s, lv));
		allot(s, lv);
	}
}

static void start(struct fg_sim *s, uint32_t ri)
{
	struct sim_req *r = &s->reqs[ri];
	struct client *c = &s->clients[r->client];
	int w = window_of(s, s->now);
	if (w >= 0) {
		struct window_stats *ws = &c->win[w];
		ws->dispatched++;
		if (ws->n_waits == ws->cap_waits) {
			size_t cap = ws->cap_waits ? ws->cap_waits * 2 : 64;
			double *nw = realloc(ws->waits, cap * sizeof(double));
			if (nw) {
				ws->waits = nw;
				ws->cap_waits = cap;
			}
		}
		if (ws->n_waits < ws->cap_waits)
			ws->waits[ws->n_waits++] = (double)(s->now - (int64_t)r->q.arrival_ns) / 1e9;
	}
	seats_move(s, c, SEATS_HELD, (int32_t)r->q.initial_seats);
	if (s->backends.n) {
		/* Behind requests already held for room: first come, first sent
		 * (as the daemon's start_executing). */
		r->backend = s->n_held ? -1 : sim_backends_pick(&s->backends, r->q.seats, s->now);
		if (r->backend < 0)
			hold(s, ri);
		else
			execute_on_backend(s, ri);
		return;
	}
	push(s, (struct event){ .t = s->now + c->exec_ns, .type = EV_FINISH, .req = ri, .gen = r->gen });
	int64_t next = s->now + c->exec_ns + c->think_ns;
	next_call(s, r->client, r->thread, next > s->now ? next : s->now);
}

static void dispatch(struct fg_sim *s, struct level *l)
{
	struct fg_qs_req *q;
	for (int w = 0; w < s->workers; w++) {
		while ((q = fg_qs_dispatch_next(&l->qs[w], (uint64_t)s->now)))
			start(s, (uint32_t)((struct sim_req *)q - s->reqs));
		/* As a worker does: a head that newly does not fit its allotment
		 * signals the allotter, which looks every FG_ALLOT_SIGNAL_POLL_NS. */
		uint32_t head = s->workers > 1 ? fg_qs_next_seats(&l->qs[w]) : 0;
		bool blocked = head && !fg_qs_fits(&l->qs[w], head);
		if (blocked && !l->blocked[w] && !s->signal_pending) {
			int64_t poll = (int64_t)FG_ALLOT_SIGNAL_POLL_NS;
			push(s, (struct event){ .t = (s->now / poll + 1) * poll, .type = EV_SIGNALLED_ALLOT });
			s->signal_pending = true;
		}
		l->blocked[w] = blocked;
	}
	uint32_t used = 0, limit = level_checked_limit(s, l);
	for (int w = 0; w < s->workers; w++)
		used += l->qs[w].seats_in_use;
	if (l->cfg.mode == FG_QS_EXEMPT)
		return;
	/* After a shrink the seats held above the new limit may finish (the
	 * KEP's transient); none may start while the level is above it. */
	if (used > (limit > l->draining ? limit : l->draining))
		l->limit_violations++;
	if (used <= limit)
		l->draining = 0;
	else if (used < l->draining)
		l->draining = used;
}

/* Queue q lives on worker q mod W, as queue ownership in the daemon. */
struct sim_level_workers {
	const struct level *l;
	uint32_t workers;
};

static uint64_t sim_queue_work(const void *ctx, uint32_t q)
{
	const struct sim_level_workers *x = ctx;
	const struct fg_queueset *qs = &x->l->qs[q % x->workers];
	return fg_qs_queue_work(qs, &qs->queues[q]);
}

/* The worker that receives call j of a client (its thread, or its j-th
 * open-loop arrival): the connection it uses, spread from rxWorker. */
static int receiving_worker(const struct fg_sim *s, const struct client *c, uint64_t j)
{
	return (int)((c->rx_worker + j % c->connections) % (uint64_t)s->workers);
}

/* The worker an arrival is queued at and, when the hand is dealt over all
 * workers' queues ("owner" placement, a queue level), its queue, as one
 * worker would with relaxed reads of the others' queue lengths; otherwise
 * the receiving worker, whose queue set chooses. */
static int place(const struct fg_sim *s, struct level *l, uint64_t hash, int rx, uint32_t *queue)
{
	int workers = s->workers;
	if (workers == 1 || l->cfg.mode != FG_QS_QUEUE || s->placement != SIM_PLACE_OWNER) {
		*queue = FG_QS_NO_QUEUE;
		return rx;
	}
	uint32_t cards[FG_DEALER_MAX_HAND];
	fg_dealer_deal(&l->dealer, hash, cards);
	const struct sim_level_workers ctx = { l, (uint32_t)workers };
	uint32_t best = fg_hand_least_loaded(cards, l->cfg.hand_size, &l->rotation, sim_queue_work, &ctx);
	*queue = best;
	return (int)(best % (uint32_t)workers);
}

/* The weight an arrival is queued with: its flow's, or with localWeighted
 * its flow's share at that worker from the last round (thousandths of a
 * seat, at least 1; before any round, or with no share there, one seat). */
static uint32_t local_weight(const struct fg_sim *s, const struct level *l, int client, int worker)
{
	if (s->placement != SIM_PLACE_LOCAL_WEIGHTED || !l->flow_share)
		return s->clients[client].weight;
	double share = l->flow_share[(size_t)client * (size_t)s->workers + (size_t)worker];
	if (share <= 0)
		return FG_QS_WEIGHT_ONE;
	double w = share * FG_QS_WEIGHT_ONE;
	return w < 1 ? 1 : w > 1e9 ? 1000000000u : (uint32_t)w;
}

/* The client whose flow hash is h (the first of several), or -1: a binary
 * search of s->by_hash. */
static int client_of_hash(const struct fg_sim *s, uint64_t h)
{
	int lo = 0, hi = s->n_clients;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (s->clients[s->by_hash[mid]].hash < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->n_clients && s->clients[s->by_hash[lo]].hash == h ? s->by_hash[lo] : -1;
}

/* "local" placements: one entry per (queue, worker), entry q * W + w, keyed
 * by the flow that holds the queue there alone (a shared queue: a key of its
 * own), a flow's weight from the client it is; with localWeighted each
 * client's share per worker is kept for local_weight. */
static void allot_flows(struct fg_sim *s, struct level *l, uint32_t limit, struct fg_seatshare_view *v)
{
	unsigned W = (unsigned)s->workers;
	uint32_t n_queues = l->qs[0].n_alloc, n = n_queues * W;
	uint32_t *demand = calloc(n ? n : 1, sizeof(*demand)), *weight = calloc(n ? n : 1, sizeof(*weight));
	uint64_t *flow = calloc(n ? n : 1, sizeof(*flow));
	double *entry_share = calloc(n ? n : 1, sizeof(*entry_share));
	int *owner = calloc(n ? n : 1, sizeof(*owner));
	uint64_t *usage_key = l->cfg.usage_based ? calloc(n ? n : 1, sizeof(*usage_key)) : NULL;
	if (!demand || !weight || !flow || !entry_share || !owner || (l->cfg.usage_based && !usage_key)) {
		s->failed = true;
		goto out;
	}
	for (uint32_t q = 0; q < n_queues; q++)
		for (unsigned w = 0; w < W; w++) {
			const struct fg_qs_queue *qq = &l->qs[w].queues[q];
			uint32_t e = q * W + w;
			demand[e] = qq->seats_waiting + qq->seats_executing;
			flow[e] = qq->n_foreign ? UINT64_MAX - e : qq->flow_hash;
			owner[e] = demand[e] && !qq->n_foreign ? client_of_hash(s, qq->flow_hash) : -1;
			weight[e] = owner[e] >= 0 && s->clients[owner[e]].weight ? s->clients[owner[e]].weight
										 : FG_QS_WEIGHT_ONE;
			if (usage_key)
				usage_key[e] = fg_qs_queue_usage_key(&l->qs[w], qq);
		}
	if (usage_key) { /* UsageBased: demands in usage order, per entry */
		fg_seatshare_round(limit, W, demand, weight, usage_key, n, v, l->credit);
		goto out;
	}
	fg_seatshare_round_flows(limit, W, demand, weight, flow, n, v, l->credit, entry_share);
	if (l->flow_share) {
		/* A flow with no demand at a worker keeps its last share there
		 * (as the board keeps a queue's): a round between its answer
		 * and its next arrival must not make it a one-seat flow. */
		for (uint32_t e = 0; e < n; e++)
			if (owner[e] >= 0)
				l->flow_share[(size_t)owner[e] * W + e % W] = entry_share[e];
	}
out:
	free(demand);
	free(weight);
	free(flow);
	free(entry_share);
	free(owner);
	free(usage_key);
}

/* Per-worker allotments with the daemon's own arithmetic
 * (fg_seatshare_round): the simulated workers acknowledge at once, so a
 * shrink frees its seats for the next period, as in the daemon. */
static void allot(struct fg_sim *s, struct level *l)
{
	unsigned W = (unsigned)s->workers;
	uint32_t n_queues = 0;
	struct fg_seatshare_view v[FG_SEATSHARE_MAX_WORKERS];
	uint32_t *demand = NULL, *weight = NULL;
	uint64_t *usage_key = NULL;
	if (l->cfg.mode == FG_QS_QUEUE) {
		n_queues = l->qs[0].n_alloc;
		demand = malloc(sizeof(*demand) * n_queues);
		weight = malloc(sizeof(*weight) * n_queues);
		usage_key = malloc(sizeof(*usage_key) * n_queues);
		if (!demand || !weight || !usage_key) {
			free(demand);
			free(weight);
			free(usage_key);
			return;
		}
		for (uint32_t q = 0; q < n_queues; q++) {
			const struct fg_qs_queue *qq = &l->qs[q % W].queues[q];
			demand[q] = qq->seats_waiting + qq->seats_executing;
			weight[q] = fg_qs_queue_weight(qq);
			usage_key[q] = fg_qs_queue_usage_key(&l->qs[q % W], qq);
		}
	}
	for (unsigned w = 0; w < W; w++) {
		uint32_t applied = l->qs[w].cfg.concurrency_limit, used = l->qs[w].seats_in_use;
		v[w] = (struct fg_seatshare_view){ .used = used, .reserved = applied > used ? applied : used,
						   .head = fg_qs_next_seats(&l->qs[w]), .grant = applied };
	}
	if (s->placement != SIM_PLACE_OWNER && l->cfg.mode == FG_QS_QUEUE) {
		free(demand);
		free(weight);
		free(usage_key);
		allot_flows(s, l, level_in_force(s, l), v);
		for (unsigned w = 0; w < W; w++)
			fg_qs_set_limit(&l->qs[w], v[w].grant, (uint64_t)s->now);
		return;
	}
	fg_seatshare_round(level_in_force(s, l), W, demand, weight, l->cfg.usage_based ? usage_key : NULL, n_queues, v,
			   l->credit);
	free(demand);
	free(weight);
	free(usage_key);
	for (unsigned w = 0; w < W; w++)
		fg_qs_set_limit(&l->qs[w], v[w].grant, (uint64_t)s->now);
}

/* --- borrowing --------------------------------------------------------- */

/* The current limit's time integral per window, up to t. */
static void integrate_limit(struct fg_sim *s, int li, int64_t t)
{
	struct level *l = &s->levels[li];
	double limit = s->borrow[li].current;
	for (int w = 0; w < s->n_windows; w++) {
		int64_t a = l->limit_since > s->win_from[w] ? l->limit_since : s->win_from[w];
		int64_t b = t < s->win_to[w] ? t : s->win_to[w];
		if (b > a)
			l->limit_ns[w] += limit * (double)(b - a);
	}
	l->limit_since = t;
}

/*
 * A level's new current limit, applied at once: every worker's queue set is
 * reconfigured to the level's new seats by the reload path (fair-share trees
 * resized, nothing running aborted).  With several workers each then runs at
 * min(its allotment, its static share of the new limit), as a worker
 * following a new configuration does, and an allotter round hands out the
 * rest from the seats that are free, so the workers together stay within
 * the limit.  Seats held above a shrunk limit drain (see dispatch).
 */
static int apply_limit(struct fg_sim *s, struct level *l, uint32_t limit)
{
	unsigned W = (unsigned)s->workers;
	uint32_t used = 0;
	for (unsigned w = 0; w < W; w++)
		used += l->qs[w].seats_in_use;
	uint32_t in_force = s->backends.adaptive ? fg_qs_scale_by_capacity(limit, s->capacity_usable, s->capacity_total)
						 : limit;
	l->draining = used > in_force ? used : 0;
	l->cfg.concurrency_limit = limit;
	for (unsigned w = 0; w < W; w++) {
		struct fg_qs_config c = l->qs[w].cfg;
		uint32_t applied = c.concurrency_limit, share = fg_seatshare_static(limit, W, w);
		c.concurrency_limit = limit;
		int rc = fg_qs_reconfigure(&l->qs[w], &c, (uint64_t)s->now);
		if (rc)
			return rc;
		if (W > 1)
			fg_qs_set_limit(&l->qs[w], applied < share ? applied : share, (uint64_t)s->now);
	}
	if (W > 1)
		allot(s, l);
	return 0;
}

/*
 * Each level's seat demand (seats in use + seats waiting, over all workers)
 * into its integrator, once an instant's events are handled and dispatched:
 * the values in force between instants, which are all the integrator weighs.
 */
static void sample_demand(struct fg_sim *s)
{
	for (int i = 0; i < s->n_levels; i++) {
		struct level *l = &s->levels[i];
		uint32_t d = 0;
		for (int w = 0; w < s->workers; w++)
			d += l->qs[w].seats_in_use + l->qs[w].seats_waiting;
		if (d != l->demand) {
			fg_borrowing_demand_set(&s->borrow[i].demand, (uint64_t)s->now, d);
			l->demand = d;
		}
	}
}

/* A round of the daemon's borrowing code; the new current limits go to the
 * levels that borrow (exempt levels are never limited; fixed levels keep
 * their seats, which the round gives them anyway: see borrow_init). */
static void borrow_round(struct fg_sim *s)
{
	for (int i = 0; i < s->n_levels; i++)
		integrate_limit(s, i, s->now);
	struct fg_borrowing_result res;
	if (fg_borrowing_round(s->borrow, (size_t)s->n_levels, s->nominal_sum, (uint64_t)s->now, &res)) {
		s->failed = true;
		return;
	}
	s->borrow_rounds++;
	s->borrow_backstops += res.backstop;
	for (int i = 0; i < s->n_levels; i++) {
		struct level *l = &s->levels[i];
		if (l->cfg.mode == FG_QS_EXEMPT || l->fixed || s->borrow[i].current == l->cfg.concurrency_limit)
			continue;
		if (apply_limit(s, l, s->borrow[i].current))
			s->failed = true;
	}
}

/*
 * Every level takes part in the rounds with its derived limits (nominal,
 * min, max) and starts at its nominal limit.  A level fixed by
 * levelConcurrency takes part with nominal = min = max = its seats: it
 * neither lends nor borrows, and its seats count in the sum the others
 * share instead of its nominal limit.
 */
static int borrow_init(struct fg_sim *s)
{
	s->borrow = calloc((size_t)s->n_levels, sizeof(*s->borrow));
	if (!s->borrow)
		return -ENOMEM;
	s->nominal_sum = 0;
	for (int i = 0; i < s->n_levels; i++) {
		const struct fg_fc_level *fl = &s->fc->levels[i];
		struct level *l = &s->levels[i];
		struct fg_borrowing_level *b = &s->borrow[i];
		uint32_t fixed = l->cfg.concurrency_limit;
		if (l->fixed)
			fg_borrowing_level_init(b, fl->exempt, fixed, fixed, fixed, 0);
		else
			fg_borrowing_level_init(b, fl->exempt, fl->nominal, fl->min, fl->max, 0);
		b->current = l->fixed ? fixed : fl->nominal;
		s->nominal_sum += b->nominal;
	}
	return 0;
}

static void after_refusal(struct fg_sim *s, int ci, int th)
{
	struct client *c = &s->clients[ci];
	/* Never at the same instant: a refusal that no event of this instant
	 * can undo (no seats granted yet) would repeat forever. */
	next_call(s, ci, th, s->now + (c->think_ns > SIM_MIN_RETRY_NS ? c->think_ns : SIM_MIN_RETRY_NS));
}

static void arrive(struct fg_sim *s, const struct event *e)
{
	struct client *c = &s->clients[e->client];
	if (c->rate > 0) {
		if (c->calls && c->issued >= c->calls)
			return;
		c->issued++;
		double u = (rand_r(&c->rng) + 1.0) / ((double)RAND_MAX + 2.0);
		int64_t gap = (int64_t)(-log(u) / c->rate * 1e9);
		if (s->now + gap < s->duration_ns && s->now + gap < c->stop_ns)
			schedule_arrival(s, e->client, 0, s->now + gap);
	} else {
		s->thread_calls[e->client][e->thread]++;
	}
	uint32_t ri = req_alloc(s);
	if (ri == UINT32_MAX)
		return;
	struct sim_req *r = &s->reqs[ri];
	r->client = e->client;
	r->thread = e->thread;
	struct level *l = &s->levels[c->level];
	uint32_t queue;
	int rx = receiving_worker(s, c, c->rate > 0 ? c->issued - 1 : (uint64_t)e->thread);
	r->worker = place(s, l, c->hash, rx, &queue);
	struct fg_queueset *qs = &l->qs[r->worker];
	enum fg_qs_verdict v = fg_qs_arrive_weighted(qs, &r->q, queue, c->hash, c->initial, c->final,
						     (uint64_t)c->extra_ns, local_weight(s, l, e->client, r->worker),
						     (uint64_t)s->now);
	switch (v) {
	case FG_QS_EXECUTE:
		start(s, ri);
		break;
	case FG_QS_QUEUED:
		if (s->wait_ns > 0)
			push(s, (struct event){ .t = s->now + s->wait_ns, .type = EV_TIMEOUT, .req = ri, .gen = r->gen });
		break;
	case FG_QS_REJECT_QUEUE_FULL:
	case FG_QS_REJECT_CONCURRENCY: {
		int queue_full = l->cfg.mode == FG_QS_QUEUE;
		count_reject(s, c, queue_full ? REJ_QUEUE_FULL : REJ_CONCURRENCY);
		req_free(s, ri);
		after_refusal(s, e->client, e->thread);
		break;
	}
	}
}

/* Whether requests wait or were refused in the levels for want of seats
 * since the last tick, as a daemon worker tells its adaptive limits
 * (worker.c): a level's head that does not fit its limit in force (or its
 * worker's allotment), or a refusal by a level. */
static bool seats_pressed(struct fg_sim *s)
{
	bool refused = s->refusals != s->refusals_seen;
	s->refusals_seen = s->refusals;
	if (refused)
		return true;
	for (int l = 0; l < s->n_levels; l++)
		for (int w = 0; w < s->workers; w++) {
			const struct fg_queueset *qs = &s->levels[l].qs[w];
			if (qs->cfg.mode == FG_QS_QUEUE && qs->n_waiting && !fg_qs_fits(qs, fg_qs_next_seats(qs)))
				return true;
		}
	return false;
}

static void handle(struct fg_sim *s, const struct event *e)
{
	if (e->type == EV_ARRIVE) {
		arrive(s, e);
		return;
	}
	if (e->type == EV_SIGNALLED_ALLOT) {
		s->signal_pending = false;
		for (int l = 0; l < s->n_levels; l++)
			allot(s, &s->levels[l]);
		return;
	}
	if (e->type == EV_BORROW) {
		borrow_round(s);
		if (s->now + s->borrow_ns < s->duration_ns)
			push(s, (struct event){ .t = s->now + s->borrow_ns, .type = EV_BORROW });
		return;
	}
	if (e->type == EV_BACKEND_TICK) {
		/* Held since the last tick (a hold may be shorter than a tick), as a worker looks. */
		bool held = s->n_held > 0 || s->backends.held != s->held_seen;
		s->held_seen = s->backends.held;
		if (sim_backends_tick(&s->backends, s->backends.adaptive && seats_pressed(s), held, s->now)) {
			follow_capacity(s);
			start_held(s);
		}
		if (s->now + SIM_BACKEND_TICK_NS <= s->duration_ns)
			push(s, (struct event){ .t = s->now + SIM_BACKEND_TICK_NS, .type = EV_BACKEND_TICK });
		return;
	}
	if (e->type == EV_BACKEND) {
		sim_backends_apply(&s->backends, (int)e->req, s->now);
		follow_capacity(s);
		start_held(s);
		return;
	}
	if (e->type == EV_ALLOT) {
		for (int l = 0; l < s->n_levels; l++)
			allot(s, &s->levels[l]);
		if (s->now + s->allot_ns <= s->duration_ns)
			push(s, (struct event){ .t = s->now + s->allot_ns, .type = EV_ALLOT });
		return;
	}
	struct sim_req *r = &s->reqs[e->req];
	if (r->gen != e->gen)
		return; /* the request this event was for is gone */
	struct client *c = &s->clients[r->client];
	struct level *l = &s->levels[c->level];
	if (e->type == EV_TIMEOUT) {
		if (r->q.state != FG_QS_WAITING)
			return;
		fg_qs_remove_waiting(&l->qs[r->worker], &r->q, (uint64_t)s->now);
		count_reject(s, c, REJ_TIME_OUT);
		int ci = r->client, th = r->thread;
		req_free(s, e->req);
		after_refusal(s, ci, th);
	} else if (e->type == EV_FINISH) {
		if (s->backends.n) {
			int64_t answer = sim_backends_answer_at(&s->backends, r->backend, s->now);
			if (answer > s->now) { /* paused: the answer comes when the pause ends */
				push(s, (struct event){ .t = answer, .type = EV_FINISH, .req = e->req, .gen = r->gen });
				return;
			}
			if (s->backends.told_apart)
				seats_move(s, c, SEATS_AT_BACKEND, -(int32_t)r->q.initial_seats);
			sim_backends_done(&s->backends, r->backend, r->q.seats, r->sent_ns, s->now);
			/* Seats free at the backend: what waits there starts, in order. */
			uint32_t next;
			int64_t due;
			while (sim_backends_next(&s->backends, r->backend, s->now, &next, &due))
				executing_at_backend(s, next, due);
			next_call(s, r->client, r->thread, s->now + (c->think_ns > 0 ? c->think_ns : 0));
		}
		seats_move(s, c, SEATS_HELD, -(int32_t)r->q.initial_seats);
		uint64_t release = fg_qs_finish(&l->qs[r->worker], &r->q, (uint64_t)s->now);
		if (release)
			push(s, (struct event){ .t = (int64_t)release, .type = EV_RELEASE, .req = e->req, .gen = r->gen });
		else
			req_free(s, e->req);
		if (s->backends.n)
			start_held(s);
	} else { /* EV_RELEASE */
		fg_qs_release(&l->qs[r->worker], &r->q, (uint64_t)s->now);
		req_free(s, e->req);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double quantile(double *v, size_t n, double q)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(double), cmp_double);
	size_t rank = (size_t)ceil(q * (double)n);
	return v[rank ? rank - 1 : 0];
}

static json_t *results(struct fg_sim *s)
{
	json_t *windows = json_array();
	for (int w = 0; w < s->n_windows; w++) {
		char from[32], to[32];
		json_t *clients = json_array();
		for (int ci = 0; ci < s->n_clients; ci++) {
			struct client *c = &s->clients[ci];
			struct window_stats *ws = &c->win[w];
			double span = (double)(s->win_to[w] - s->win_from[w]);
			json_array_append_new(clients, json_pack("{s:s, s:f, s:I, s:{s:I, s:I, s:I}, s:f, s:f, s:s, s:f}",
				"name", c->name, "avgSeats", ws->seat_ns[SEATS_HELD] / span, "dispatched", (json_int_t)ws->dispatched,
				"rejected", "queue-full", (json_int_t)ws->rejected[REJ_QUEUE_FULL],
				"time-out", (json_int_t)ws->rejected[REJ_TIME_OUT],
				"concurrency-limit", (json_int_t)ws->rejected[REJ_CONCURRENCY],
				"waitP50", quantile(ws->waits, ws->n_waits, 0.5),
				"waitP99", quantile(ws->waits, ws->n_waits, 0.99),
				"priorityLevel", s->levels[c->level].name, "weight", c->weight ? (double)c->weight / 1000.0 : 1.0));
			if (s->backends.told_apart)
				json_object_set_new(json_array_get(clients, (size_t)ci), "avgSeatsAtBackend",
						    json_real(ws->seat_ns[SEATS_AT_BACKEND] / span));
		}
		json_t *win = json_pack("{s:s, s:s, s:o}",
			"from", fg_duration_format(s->win_from[w], from, sizeof(from)),
			"to", fg_duration_format(s->win_to[w], to, sizeof(to)), "clients", clients);
		json_t *backends = sim_backends_window(&s->backends, s->win_from[w], s->win_to[w]);
		if (backends)
			json_object_set_new(win, "backends", backends);
		json_array_append_new(windows, win);
	}
	json_t *levels = json_array();
	for (int l = 0; l < s->n_levels; l++) {
		uint64_t dispatched = 0, epochs = 0;
		for (int w = 0; w < s->workers; w++) {
			dispatched += s->levels[l].qs[w].stats.dispatched;
			epochs += s->levels[l].qs[w].stats.epochs;
		}
		const struct fg_borrowing_level *b = &s->borrow[l];
		json_t *avg = json_array();
		for (int w = 0; w < s->n_windows; w++)
			json_array_append_new(avg, json_real(s->levels[l].limit_ns[w] /
							     (double)(s->win_to[w] - s->win_from[w])));
		json_array_append_new(levels, json_pack("{s:s, s:s, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}",
			"name", s->levels[l].name,
			"type", s->levels[l].cfg.mode == FG_QS_EXEMPT ? "Exempt" : s->levels[l].cfg.mode == FG_QS_REJECT ? "Reject" : "Queue",
			"concurrencyLimit", (int)s->levels[l].cfg.concurrency_limit,
			"dispatched", (json_int_t)dispatched, "epochs", (json_int_t)epochs,
			"seatLimitViolations", (json_int_t)s->levels[l].limit_violations,
			"nominalLimit", (json_int_t)b->nominal, "lowerLimit", (json_int_t)b->min,
			"upperLimit", (json_int_t)b->max, "currentLimit", (json_int_t)b->current,
			"avgCurrentLimit", avg));
	}
	json_t *out = json_pack("{s:o, s:o, s:{s:I, s:I}}", "windows", windows, "levels", levels, "borrowing",
				"rounds", (json_int_t)s->borrow_rounds, "backstops", (json_int_t)s->borrow_backstops);
	json_t *backends = sim_backends_results(&s->backends);
	if (backends) {
		json_object_set_new(out, "backends", backends);
		json_object_set_new(out, "heldForBackendRoom", json_integer((json_int_t)s->backends.held));
	}
	return out;
}

static int by_client_hash(const void *a, const void *b, void *clients)
{
	uint64_t x = ((const struct client *)clients)[*(const int *)a].hash;
	uint64_t y = ((const struct client *)clients)[*(const int *)b].hash;
	return x < y ? -1 : x > y;
}

/* Adaptive: the seats a level's fair-share trees are sized for (queueset.h,
 * cfg.capacity), as the daemon sizes them (worker_config.c): the most
 * borrowing may give it (at most the nominal limits' sum; a fixed level its
 * seats), scaled up to serverConcurrencyLimitMax. */
static uint32_t adaptive_tree_seats(const struct fg_sim *s, int l)
{
	uint64_t sum = 0;
	for (int i = 0; i < s->n_levels; i++)
		sum += s->fc->levels[i].exempt ? 0 : s->levels[i].fixed ? s->levels[i].cfg.concurrency_limit
									: s->fc->levels[i].nominal;
	uint64_t most = s->levels[l].fixed ? s->levels[l].cfg.concurrency_limit
					   : s->fc->levels[l].max < sum ? s->fc->levels[l].max : sum;
	const struct sim_backends *bs = &s->backends;
	if (bs->max > bs->start)
		most = (most * bs->max + bs->start - 1) / bs->start;
	return most > FG_MAX_SEAT_LIMIT ? FG_MAX_SEAT_LIMIT : (uint32_t)most;
}

json_t *fg_sim_run(struct fg_sim *s)
{
	if (s->placement != SIM_PLACE_OWNER) {
		s->by_hash = malloc(sizeof(*s->by_hash) * (size_t)s->n_clients);
		if (!s->by_hash)
			return NULL;
		for (int c = 0; c < s->n_clients; c++)
			s->by_hash[c] = c;
		qsort_r(s->by_hash, (size_t)s->n_clients, sizeof(*s->by_hash), by_client_hash, s->clients);
	}
	for (int l = 0; l < s->n_levels; l++) {
		struct level *lv = &s->levels[l];
		lv->qs = calloc((size_t)s->workers, sizeof(*lv->qs));
		if (!lv->qs)
			return NULL;
		/* Several workers, as the daemon: one worker queues flows with their own weights. */
		if (s->placement == SIM_PLACE_LOCAL_WEIGHTED && s->workers > 1 && lv->cfg.mode == FG_QS_QUEUE) {
			lv->cfg.weighted = true; /* the flows' local weights are their shares */
			lv->flow_share = calloc((size_t)s->n_clients * (size_t)s->workers, sizeof(*lv->flow_share));
			if (!lv->flow_share)
				return NULL;
		}
		if (lv->cfg.mode == FG_QS_QUEUE && fg_dealer_init(&lv->dealer, lv->cfg.queues, lv->cfg.hand_size))
			return NULL;
		if (s->backends.adaptive && lv->cfg.mode != FG_QS_EXEMPT)
			lv->cfg.capacity = adaptive_tree_seats(s, l);
		for (int w = 0; w < s->workers; w++) {
			struct fg_qs_config c = lv->cfg;
			c.seed = 1040 + (uint64_t)l * 64 + (uint64_t)w;
			if (fg_qs_init(&lv->qs[w], &c, 0))
				return NULL;
		}
		if (s->workers > 1)
			allot(s, lv);
	}
	if (borrow_init(s))
		return NULL;
	if (s->workers > 1)
		push(s, (struct event){ .t = s->allot_ns, .type = EV_ALLOT });
	/* Rounds only when some level lends: without lendable seats every round
	 * leaves each level at its nominal limit (and a scenario of years would
	 * spend its time in rounds). */
	bool lends = false;
	for (int i = 0; i < s->n_levels; i++)
		lends |= s->borrow[i].min < s->borrow[i].nominal;
	if (lends && s->borrow_ns < s->duration_ns)
		push(s, (struct event){ .t = s->borrow_ns, .type = EV_BORROW });
	for (int k = 0; k < s->backends.n_events; k++)
		push(s, (struct event){ .t = s->backends.ev[k].at, .type = EV_BACKEND, .req = (uint32_t)k });
	if (s->backends.told_apart)
		push(s, (struct event){ .t = SIM_BACKEND_TICK_NS, .type = EV_BACKEND_TICK });
	if (s->backends.adaptive) /* the levels start scaled by the starts' sum, as the daemon's */
		follow_capacity(s);
	/* Kubernetes' harness staggers thread starts: thread j of client i at
	 * 90ns*j + 20ns*i, so equal-time ties resolve the same way every run. */
	for (int ci = 0; ci < s->n_clients; ci++) {
		struct client *c = &s->clients[ci];
		unsigned n = c->rate > 0 ? 1 : c->threads;
		for (unsigned th = 0; th < n; th++)
			schedule_arrival(s, ci, (int)th, c->start_ns + 90 * (int64_t)th + 20 * (int64_t)ci);
	}
	/* Everything that happens at one instant is handled before dispatching,
	 * as a worker handles a whole receive burst before it dispatches. */
	while (s->n_heap && s->heap[0].t <= s->duration_ns) {
		s->now = s->heap[0].t;
		while (s->n_heap && s->heap[0].t == s->now) {
			struct event e = pop(s);
			handle(s, &e);
		}
		for (int l = 0; l < s->n_levels; l++)
			dispatch(s, &s->levels[l]);
		sample_demand(s);
	}
	s->now = s->duration_ns;
	for (int ci = 0; ci < s->n_clients; ci++)
		for (int k = 0; k < SEAT_KINDS; k++)
			integrate(s, &s->clients[ci], k, s->duration_ns);
	for (int l = 0; l < s->n_levels; l++)
		integrate_limit(s, l, s->duration_ns);
	return s->failed || s->backends.failed ? NULL : results(s);
}

int fg_bench_sim(int argc, char **argv)
{
	bool table = argc == 3 && !strcmp(argv[1], "--table");
	bool help = argc == 2 && !strcmp(argv[1], "--help");
	if ((argc != 2 && !table) || help || (argc == 2 && !strncmp(argv[1], "--", 2))) {
		fprintf(help ? stdout : stderr,
			"usage: fairgate-bench sim [--table] SCENARIO.json   (docs/simulator.md; '-' reads stdin)\n"
			"  --table  per window, each flow's avgSeats beside its (weighted) max-min ideal and the error\n");
		return help ? 0 : 2;
	}
	const char *file = argv[argc - 1];
	char *buf;
	size_t len;
	int rc = fg_read_file(file, &buf, &len);
	if (rc) {
		fprintf(stderr, "fairgate-bench sim: %s: %s\n", file, fg_read_file_strerror(rc));
		return 2;
	}
	char err[512];
	struct fg_sim *s = fg_sim_load((const uint8_t *)buf, len, err, sizeof(err));
	json_t *scn = table && s ? json_loadb(buf, len, 0, NULL) : NULL;
	free(buf);
	if (!s) {
		fprintf(stderr, "fairgate-bench sim: %s: %s\n", file, err);
		return 2;
	}
	json_t *out = fg_sim_run(s);
	fg_sim_free(s);
	if (!out) {
		json_decref(scn);
		fprintf(stderr, "fairgate-bench sim: invalid level configuration\n");
		return 1;
	}
	if (table) {
		double worst = fg_sim_ideal_table(stdout, scn, out);
		printf("worst error %.2f%%\n", worst * 100);
	} else {
		json_dumpf(out, stdout, JSON_INDENT(2));
		printf("\n");
	}
	json_decref(scn);
	json_decref(out);
	return 0;
}
