/* SPDX-License-Identifier: Apache-2.0 */
/* scenario — parsing and checking `fairgate-bench run` scenarios; see scenario.h. */
#include "scenario.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flowcontrol.h"
#include "jsonfield.h"
#include "yamljson.h"

#define NAME_MAX_LEN 128
#define ATTR_MAX_LEN 256

static const char *const dist_names[] = { "fixed", "exponential", "log-normal", "request" };
static const char *const action_names[] = { "apply", "kill", "restart", "pause", "resume", "set-backend" };

const char *fg_scn_dist_name(enum fg_scn_dist d)
{
	return dist_names[d];
}

const char *fg_scn_action_name(enum fg_scn_action a)
{
	return action_names[a];
}

static int pick(json_t *obj, const char *key, const char *const *names, int n, int dflt, int *out, const char *path,
		char *err, size_t errlen)
{
	json_t *v = json_object_get(obj, key);
	*out = dflt;
	if (!v)
		return 0;
	for (int i = 0; json_is_string(v) && i < n; i++)
		if (!strcmp(json_string_value(v), names[i])) {
			*out = i;
			return 0;
		}
	char list[128] = "";
	for (int i = 0; i < n; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "", names[i]);
	return fg_jf_fail(err, errlen, "%s%s: must be one of %s", path, key, list);
}

/* Objects (a list) checked by the daemon's own parser, as a JSON List text. */
static int objects_text(json_t *objects, const char *path, char **out, char *err, size_t errlen)
{
	if (!json_is_array(objects) || json_array_size(objects) == 0 || json_array_size(objects) > 10000)
		return fg_jf_fail(err, errlen, "%s: must be a non-empty list of FlowSchema, PriorityLevelConfiguration "
				  "and FairSharing objects", path);
	json_t *list = json_pack("{s:s, s:s, s:O}", "apiVersion", "v1", "kind", "List", "items", objects);
	char *text = list ? json_dumps(list, JSON_COMPACT) : NULL;
	json_decref(list);
	if (!text)
		return fg_jf_fail(err, errlen, "out of memory");
	struct fg_fc_set *set = fg_fc_set_new();
	struct fg_errors errs = { .len = 0 };
	int rc = set ? fg_fc_set_apply(set, (const uint8_t *)text, strlen(text), NULL, &errs) : -ENOMEM;
	fg_fc_set_free(set);
	if (rc < 0) {
		free(text);
		return fg_jf_fail(err, errlen, "%s: %u error(s): %s", path, errs.count, errs.text);
	}
	*out = text;
	return 0;
}

/* The runner owns where fairgate listens and what it forwards to. */
static int refuse_owned(json_t *set, const char *path, char *err, size_t errlen)
{
	static const char *const owned[] = { "io", "listen", "backends", "controlSocket", "httpListen" };
	for (size_t i = 0; set && i < sizeof(owned) / sizeof(owned[0]); i++)
		if (json_object_get(set, owned[i]))
			return fg_jf_fail(err, errlen, "%s.%s: set by the runner, not the scenario", path, owned[i]);
	return 0;
}

/* `baseline: {description, settings}`: the second run is the scenario's
 * configuration with these settings over its own. */
static int parse_baseline(struct fg_scenario *s, json_t *b, char *err, size_t errlen)
{
	static const char *const known[] = { "description", "settings", NULL };
	if (!b)
		return 0;
	if (!json_is_object(b) || fg_jf_known_keys(b, known, "baseline.", err, errlen))
		return json_is_object(b) ? -EINVAL
					 : fg_jf_fail(err, errlen, "baseline: must be an object with description and settings");
	json_t *set = json_object_get(b, "settings");
	if (!json_is_object(set))
		return fg_jf_fail(err, errlen, "baseline.settings: required: an object (FairgateSettings spec fields)");
	if (fg_jf_string(b, "description", false, "", 4096, &s->baseline_description, "baseline.", err, errlen) ||
	    refuse_owned(set, "baseline.settings", err, errlen))
		return -EINVAL;
	s->baseline_settings = json_deep_copy(s->settings);
	json_object_update(s->baseline_settings, set);
	return 0;
}

static int parse_settings(struct fg_scenario *s, json_t *fg, char *err, size_t errlen)
{
	static const char *const known[] = { "settings", "objects", NULL };
	if (fg && !json_is_object(fg))
		return fg_jf_fail(err, errlen, "fairgate: must be an object with settings and objects");
	if (fg && fg_jf_known_keys(fg, known, "fairgate.", err, errlen))
		return -EINVAL;
	json_t *set = json_object_get(fg, "settings");
	if (set && !json_is_object(set))
		return fg_jf_fail(err, errlen, "fairgate.settings: must be an object (a FairgateSettings spec)");
	if (refuse_owned(set, "fairgate.settings", err, errlen))
		return -EINVAL;
	s->settings = set ? json_deep_copy(set) : json_object();
	int64_t scl;
	if (fg_jf_int(s->settings, "serverConcurrencyLimit", (int64_t)s->n_backends * s->capacity, 1, 1000000, &scl,
		      "fairgate.settings.", err, errlen))
		return -EINVAL;
	s->seat_limit = (uint32_t)scl;
	json_object_set_new(s->settings, "serverConcurrencyLimit", json_integer(scl));
	json_t *objects = json_object_get(fg, "objects");
	return objects ? objects_text(objects, "fairgate.objects", &s->objects_text, err, errlen) : 0;
}

static int parse_backends(struct fg_scenario *s, json_t *b, char *err, size_t errlen)
{
	static const char *const known[] = { "count", "capacity", "seats", "serviceTime", "distribution", "sigma", "ports",
					     NULL };
	const char *p = "backends.";
	if (!json_is_object(b))
		return fg_jf_fail(err, errlen, "backends: required: an object with count, capacity, serviceTime");
	int64_t count, cap, seats;
	int dist;
	if (fg_jf_known_keys(b, known, p, err, errlen) ||
	    fg_jf_int(b, "count", 1, 1, FG_SCN_MAX_BACKENDS, &count, p, err, errlen) ||
	    fg_jf_int(b, "capacity", 8, 1, 4096, &cap, p, err, errlen) ||
	    fg_jf_int(b, "seats", cap, 0, 4096, &seats, p, err, errlen) ||
	    fg_jf_duration(b, "serviceTime", 10000000, &s->service_ns, p, err, errlen) ||
	    pick(b, "distribution", dist_names, 4, FG_SCN_FIXED, &dist, p, err, errlen) ||
	    fg_jf_number(b, "sigma", 0.5, 0.0, 3.0, &s->sigma, p, err, errlen))
		return -EINVAL;
	if (s->service_ns <= 0 || s->service_ns > 60000000000LL)
		return fg_jf_fail(err, errlen, "backends.serviceTime: must be in (0, 60s]");
	s->n_backends = (unsigned)count;
	s->capacity = (unsigned)cap;
	s->seats = (unsigned)seats;
	s->dist = (enum fg_scn_dist)dist;
	json_t *ports = json_object_get(b, "ports"), *v;
	size_t i;
	if (ports && (!json_is_array(ports) || json_array_size(ports) != s->n_backends))
		return fg_jf_fail(err, errlen, "backends.ports: must be a list of %u ports (one per backend)", s->n_backends);
	json_array_foreach(ports, i, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 65535)
			return fg_jf_fail(err, errlen, "backends.ports[%zu]: must be an integer in [1, 65535]", i);
		s->ports[i] = (uint16_t)json_integer_value(v);
	}
	return 0;
}

/* threads or rate (with a ramp) for a stretch from..to; appends its steps. */
static int add_steps(const struct fg_scenario *s, struct fg_scn_flow *f, json_t *o, int64_t from, int64_t to,
		     const char *path, char *err, size_t errlen)
{
	int64_t threads;
	double rate, ramp_to;
	if (fg_jf_int(o, "threads", 0, 0, 100000, &threads, path, err, errlen) ||
	    fg_jf_number(o, "rate", 0, 0, 1e6, &rate, path, err, errlen) ||
	    fg_jf_number(o, "rampTo", -1, 0, 1e6, &ramp_to, path, err, errlen))
		return -EINVAL;
	if ((threads > 0) == (rate > 0 || ramp_to >= 0))
		return fg_jf_fail(err, errlen, "%sthreads: give threads (closed loop) or rate (open loop), exactly one", path);
	if (ramp_to >= 0 && !json_object_get(o, "rate"))
		return fg_jf_fail(err, errlen, "%srampTo: needs rate, the ramp's first rate", path);
	if (from < 0 || to <= from || to > s->duration_ns)
		return fg_jf_fail(err, errlen, "%sstop: need 0 <= start < stop <= duration", path);
	if (f->n_steps && from < f->steps[f->n_steps - 1].stop_ns)
		return fg_jf_fail(err, errlen, "%sstart: phases must be in time order and must not overlap", path);
	int64_t n = ramp_to >= 0 ? (to - from + FG_SCN_RAMP_STEP_NS - 1) / FG_SCN_RAMP_STEP_NS : 1;
	if (f->n_steps + n > FG_SCN_MAX_STEPS)
		return fg_jf_fail(err, errlen, "%s: more than %d steps (a ramp takes one per second)", path, FG_SCN_MAX_STEPS);
	for (int64_t k = 0; k < n; k++) {
		struct fg_scn_step *st = &f->steps[f->n_steps++];
		st->start_ns = from + k * (to - from) / n;
		st->stop_ns = from + (k + 1) * (to - from) / n;
		st->threads = (unsigned)threads;
		/* A ramp step runs at the rate of its middle. */
		st->rate = ramp_to >= 0 ? rate + (ramp_to - rate) * ((double)k + 0.5) / (double)n : rate;
		if (!threads && st->rate <= 0)
			st->rate = 0.001;
	}
	return 0;
}

static int parse_flow(struct fg_scenario *s, json_t *o, unsigned idx, struct fg_scn_flow *f, char *err, size_t errlen)
{
	static const char *const known[] = { "name", "user", "groups", "namespace", "verb", "apiGroup", "resource",
		"subresource", "path", "width", "service", "threads", "rate", "rampTo", "phases", "arrivals", "retryAfter", NULL };
	static const char *const arrivals[] = { "poisson", "constant" };
	static const char *const phase_known[] = { "start", "stop", "threads", "rate", "rampTo", NULL };
	char path[64];
	snprintf(path, sizeof(path), "flows[%u].", idx);
	if (!json_is_object(o))
		return fg_jf_fail(err, errlen, "flows[%u]: must be an object", idx);
	int64_t width;
	if (fg_jf_known_keys(o, known, path, err, errlen) ||
	    fg_jf_string(o, "name", true, NULL, NAME_MAX_LEN, &f->name, path, err, errlen) ||
	    fg_jf_string(o, "user", false, f->name, ATTR_MAX_LEN, &f->user, path, err, errlen) ||
	    fg_jf_string(o, "namespace", false, NULL, ATTR_MAX_LEN, &f->ns, path, err, errlen) ||
	    fg_jf_string(o, "verb", false, "get", ATTR_MAX_LEN, &f->verb, path, err, errlen) ||
	    fg_jf_string(o, "apiGroup", false, NULL, ATTR_MAX_LEN, &f->api_group, path, err, errlen) ||
	    fg_jf_string(o, "resource", false, "pods", ATTR_MAX_LEN, &f->resource, path, err, errlen) ||
	    fg_jf_string(o, "subresource", false, NULL, ATTR_MAX_LEN, &f->subresource, path, err, errlen) ||
	    fg_jf_string(o, "path", false, NULL, ATTR_MAX_LEN, &f->path, path, err, errlen) ||
	    fg_jf_int(o, "width", 1, 1, 1000, &width, path, err, errlen) ||
	    fg_jf_duration(o, "service", -1, &f->service_ns, path, err, errlen))
		return -EINVAL;
	/* The names travel in loadgen's comma-separated flow spec. */
	const char *attrs[] = { f->name, f->user, f->ns, f->verb, f->api_group, f->resource, f->subresource, f->path };
	static const char *const attr_keys[] = { "name", "user", "namespace", "verb", "apiGroup", "resource",
		"subresource", "path" };
	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++)
		if (attrs[i] && strpbrk(attrs[i], ",=+ \t\n"))
			return fg_jf_fail(err, errlen, "%s%s: must not contain ',', '=', '+' or blanks", path, attr_keys[i]);
	if (f->path && json_object_get(o, "resource"))
		return fg_jf_fail(err, errlen, "%spath: a non-resource request has no resource", path);
	f->width = (unsigned)width;
	int constant;
	if (pick(o, "arrivals", arrivals, 2, 0, &constant, path, err, errlen))
		return -EINVAL;
	f->constant = constant == 1;
	json_t *ra = json_object_get(o, "retryAfter");
	if (ra && !json_is_boolean(ra))
		return fg_jf_fail(err, errlen, "%sretryAfter: must be true or false", path);
	f->retry_after = ra ? json_is_true(ra) : -1;
	if (s->dist == FG_SCN_REQUEST && f->service_ns <= 0)
		return fg_jf_fail(err, errlen, "%sservice: required (a positive duration) with backends.distribution "
				  "request", path);
	if (s->dist != FG_SCN_REQUEST && f->service_ns >= 0)
		return fg_jf_fail(err, errlen, "%sservice: only with backends.distribution request (the backends draw "
				  "it otherwise)", path);
	json_t *groups = json_object_get(o, "groups"), *v;
	size_t i;
	if (groups && (!json_is_array(groups) || json_array_size(groups) > FG_SCN_MAX_GROUPS))
		return fg_jf_fail(err, errlen, "%sgroups: must be a list of at most %d names", path, FG_SCN_MAX_GROUPS);
	json_array_foreach(groups, i, v) {
		if (!json_is_string(v) || !json_string_length(v) || json_string_length(v) >= ATTR_MAX_LEN ||
		    strpbrk(json_string_value(v), ",=+ \t\n"))
			return fg_jf_fail(err, errlen, "%sgroups[%zu]: must be a name without ',', '=', '+' or blanks", path, i);
		f->groups[f->n_groups++] = json_string_value(v);
	}
	json_t *phases = json_object_get(o, "phases");
	if (!phases)
		return add_steps(s, f, o, 0, s->duration_ns, path, err, errlen);
	if (json_object_get(o, "threads") || json_object_get(o, "rate") || json_object_get(o, "rampTo"))
		return fg_jf_fail(err, errlen, "%sphases: give the load in the phases or in the flow, not both", path);
	if (!json_is_array(phases) || json_array_size(phases) == 0 || json_array_size(phases) > FG_SCN_MAX_STEPS)
		return fg_jf_fail(err, errlen, "%sphases: must be a list of 1..%d phases", path, FG_SCN_MAX_STEPS);
	json_array_foreach(phases, i, v) {
		char ppath[96];
		snprintf(ppath, sizeof(ppath), "%sphases[%zu].", path, i);
		int64_t from, to;
		if (!json_is_object(v))
			return fg_jf_fail(err, errlen, "%sphases[%zu]: must be an object", path, i);
		if (fg_jf_known_keys(v, phase_known, ppath, err, errlen) ||
		    fg_jf_duration(v, "start", 0, &from, ppath, err, errlen) ||
		    fg_jf_duration(v, "stop", s->duration_ns, &to, ppath, err, errlen) ||
		    add_steps(s, f, v, from, to, ppath, err, errlen))
			return -EINVAL;
	}
	return 0;
}

static int parse_event(struct fg_scenario *s, json_t *o, unsigned idx, struct fg_scn_event *e, int64_t *resume_at,
		       char *err, size_t errlen)
{
	static const char *const known[] = { "at", "action", "backend", "objects", "for", "serviceTime", "capacity", NULL };
	char path[48];
	snprintf(path, sizeof(path), "events[%u].", idx);
	if (!json_is_object(o))
		return fg_jf_fail(err, errlen, "events[%u]: must be an object", idx);
	int action;
	int64_t backend, hold, capacity;
	if (fg_jf_known_keys(o, known, path, err, errlen) || fg_jf_duration(o, "at", -1, &e->at_ns, path, err, errlen) ||
	    pick(o, "action", action_names, 6, -1, &action, path, err, errlen) ||
	    fg_jf_int(o, "backend", -1, 0, (int64_t)s->n_backends - 1, &backend, path, err, errlen) ||
	    fg_jf_duration(o, "for", 0, &hold, path, err, errlen) ||
	    fg_jf_duration(o, "serviceTime", -1, &e->service_ns, path, err, errlen) ||
	    fg_jf_int(o, "capacity", 0, 1, 4096, &capacity, path, err, errlen))
		return -EINVAL;
	e->capacity = (unsigned)capacity;
	if (e->at_ns < 0 || e->at_ns >= s->duration_ns)
		return fg_jf_fail(err, errlen, "%sat: required, a time within the run's duration", path);
	if (action < 0)
		return fg_jf_fail(err, errlen, "%saction: required: apply, kill, restart, pause, resume or set-backend", path);
	e->action = (enum fg_scn_action)action;
	bool sets = json_object_get(o, "serviceTime") || json_object_get(o, "capacity");
	if (e->action == FG_SCN_SET_BACKEND && !sets)
		return fg_jf_fail(err, errlen, "%s: set-backend needs serviceTime and/or capacity", path);
	if (e->action != FG_SCN_SET_BACKEND && sets)
		return fg_jf_fail(err, errlen, "%s%s: only for set-backend", path,
				  json_object_get(o, "serviceTime") ? "serviceTime" : "capacity");
	if (e->service_ns > 60 * 1000000000LL || (json_object_get(o, "serviceTime") && e->service_ns < 0))
		return fg_jf_fail(err, errlen, "%sserviceTime: a duration in [0, 60s]", path);
	if (e->action == FG_SCN_APPLY) {
		if (json_object_get(o, "backend"))
			return fg_jf_fail(err, errlen, "%sbackend: not for apply", path);
		char opath[64];
		snprintf(opath, sizeof(opath), "%sobjects", path);
		if (objects_text(json_object_get(o, "objects"), opath, &e->apply_text, err, errlen))
			return -EINVAL;
	} else {
		if (backend < 0)
			return fg_jf_fail(err, errlen, "%sbackend: required: the backend's index, 0..%u", path,
					  s->n_backends - 1);
		if (json_object_get(o, "objects"))
			return fg_jf_fail(err, errlen, "%sobjects: only for apply", path);
		e->backend = (unsigned)backend;
	}
	if (hold && e->action != FG_SCN_PAUSE)
		return fg_jf_fail(err, errlen, "%sfor: only for pause (resumes after it)", path);
	*resume_at = hold > 0 ? e->at_ns + hold : -1;
	return 0;
}

/* `expect: {p99ServiceTimes: {FLOW: N, ...}, backendUtilisation: F}`. */
static int parse_expect(struct fg_scenario *s, json_t *x, char *err, size_t errlen)
{
	static const char *const known[] = { "p99ServiceTimes", "backendUtilisation", NULL };
	if (!x)
		return 0;
	if (!json_is_object(x))
		return fg_jf_fail(err, errlen, "expect: must be an object with p99ServiceTimes and/or backendUtilisation");
	if (fg_jf_known_keys(x, known, "expect.", err, errlen) ||
	    fg_jf_number(x, "backendUtilisation", 0, 0.01, 1.0, &s->expect_utilisation, "expect.", err, errlen))
		return -EINVAL;
	json_t *p99 = json_object_get(x, "p99ServiceTimes"), *v;
	const char *flow;
	if (p99 && (!json_is_object(p99) || json_object_size(p99) == 0))
		return fg_jf_fail(err, errlen, "expect.p99ServiceTimes: must be an object: flow name -> times its service "
				  "time (e.g. {tenant-light: 3})");
	json_object_foreach(p99, flow, v) {
		unsigned k = 0;
		while (k < s->n_flows && strcmp(s->flows[k].name, flow))
			k++;
		char name[NAME_MAX_LEN + 8];
		snprintf(name, sizeof(name), "%.*s", NAME_MAX_LEN, flow);
		if (k == s->n_flows)
			return fg_jf_fail(err, errlen, "expect.p99ServiceTimes.%s: no flow has this name", name);
		if (!json_is_number(v) || !(json_number_value(v) >= 0.1 && json_number_value(v) <= 10000))
			return fg_jf_fail(err, errlen, "expect.p99ServiceTimes.%s: must be a number in [0.1, 10000]", name);
		/* Flow names are distinct and a JSON object's keys too: at most n_flows. */
		s->expect_p99[s->n_expect_p99++] = (struct fg_scn_expect_p99){ k, json_number_value(v) };
	}
	return 0;
}

static int by_time(const void *a, const void *b)
{
	const struct fg_scn_event *x = a, *y = b;
	return x->at_ns < y->at_ns ? -1 : x->at_ns > y->at_ns;
}

static int parse(struct fg_scenario *s, json_t *root, char *err, size_t errlen)
{
	static const char *const known[] = { "name", "description", "duration", "timeout", "fairgate", "backends",
		"flows", "events", "baseline", "settle", "expect", NULL };
	if (!json_is_object(root))
		return fg_jf_fail(err, errlen, "scenario: must be an object (one YAML document)");
	if (fg_jf_known_keys(root, known, "", err, errlen) ||
	    fg_jf_string(root, "name", true, NULL, NAME_MAX_LEN, &s->name, "", err, errlen) ||
	    fg_jf_string(root, "description", false, "", 65536, &s->description, "", err, errlen) ||
	    fg_jf_duration(root, "duration", 15000000000LL, &s->duration_ns, "", err, errlen) ||
	    fg_jf_duration(root, "timeout", 5000000000LL, &s->timeout_ns, "", err, errlen))
		return -EINVAL;
	if (strpbrk(s->name, "/ \t\n"))
		return fg_jf_fail(err, errlen, "name: must not contain '/' or blanks (it names the report directory)");
	if (s->duration_ns < 1000000000LL || s->duration_ns > FG_SCN_MAX_DURATION_NS)
		return fg_jf_fail(err, errlen, "duration: must be in [1s, 600s]");
	if (s->timeout_ns < 1000000LL || s->timeout_ns > 60000000000LL)
		return fg_jf_fail(err, errlen, "timeout: must be in [1ms, 60s]");
	if (fg_jf_duration(root, "settle", 0, &s->settle_ns, "", err, errlen))
		return -EINVAL;
	if (s->settle_ns < 0 || s->settle_ns > s->duration_ns - 1000000000LL)
		return fg_jf_fail(err, errlen, "settle: must be in [0, duration - 1s] (a second at least is left to judge)");
	if (parse_backends(s, json_object_get(root, "backends"), err, errlen) ||
	    parse_settings(s, json_object_get(root, "fairgate"), err, errlen) ||
	    parse_baseline(s, json_object_get(root, "baseline"), err, errlen))
		return -EINVAL;
	json_t *flows = json_object_get(root, "flows"), *v;
	size_t i;
	if (!json_is_array(flows) || json_array_size(flows) == 0 || json_array_size(flows) > FG_SCN_MAX_FLOWS)
		return fg_jf_fail(err, errlen, "flows: must be a list of 1..%d flows", FG_SCN_MAX_FLOWS);
	json_array_foreach(flows, i, v) {
		if (parse_flow(s, v, (unsigned)i, &s->flows[i], err, errlen))
			return -EINVAL;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(s->flows[j].name, s->flows[i].name))
				return fg_jf_fail(err, errlen, "flows[%zu].name: %s is also flows[%zu]'s name", i,
						  s->flows[i].name, j);
		s->n_flows++;
	}
	json_t *events = json_object_get(root, "events");
	if (events && (!json_is_array(events) || json_array_size(events) > FG_SCN_MAX_EVENTS / 2))
		return fg_jf_fail(err, errlen, "events: must be a list of at most %d events", FG_SCN_MAX_EVENTS / 2);
	json_array_foreach(events, i, v) {
		int64_t resume_at = -1;
		struct fg_scn_event *e = &s->events[s->n_events++];
		if (parse_event(s, v, (unsigned)i, e, &resume_at, err, errlen))
			return -EINVAL;
		if (resume_at >= 0 && resume_at < s->duration_ns)
			s->events[s->n_events++] = (struct fg_scn_event){ .at_ns = resume_at, .action = FG_SCN_RESUME,
									  .backend = e->backend };
	}
	qsort(s->events, s->n_events, sizeof(s->events[0]), by_time);
	return parse_expect(s, json_object_get(root, "expect"), err, errlen);
}

struct fg_scenario *fg_scenario_load(const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	json_t *docs = fg_load_documents(buf, len, err, errlen);
	if (!docs)
		return NULL;
	struct fg_scenario *s = calloc(1, sizeof(*s));
	if (!s) {
		fg_jf_fail(err, errlen, "out of memory");
		json_decref(docs);
		return NULL;
	}
	s->doc = docs;
	if (json_array_size(docs) != 1) {
		fg_jf_fail(err, errlen, "scenario: must be exactly one document");
		goto bad;
	}
	if (parse(s, json_array_get(docs, 0), err, errlen))
		goto bad;
	return s;
bad:
	fg_scenario_free(s);
	return NULL;
}

void fg_scenario_free(struct fg_scenario *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < s->n_events; i++)
		free(s->events[i].apply_text);
	free(s->objects_text);
	json_decref(s->settings);
	json_decref(s->baseline_settings);
	json_decref(s->doc);
	free(s);
}

double fg_scn_flow_service_s(const struct fg_scenario *s, const struct fg_scn_flow *f)
{
	double mean_s = (double)(f->service_ns > 0 ? f->service_ns : s->service_ns) / 1e9;
	return s->dist == FG_SCN_LOGNORMAL ? mean_s * exp(s->sigma * s->sigma / 2) : mean_s;
}

double fg_scn_step_demand(const struct fg_scenario *s, const struct fg_scn_flow *f, const struct fg_scn_step *st)
{
	if (st->threads)
		return (double)st->threads * f->width;
	return st->rate * fg_scn_flow_service_s(s, f) * f->width;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

unsigned fg_scn_phases(const struct fg_scenario *s, int64_t *bounds, unsigned max)
{
	unsigned n = 0;
	bounds[n++] = 0;
	bounds[n++] = s->duration_ns;
	for (unsigned i = 0; i < s->n_flows; i++)
		for (unsigned k = 0; k < s->flows[i].n_steps && n + 2 <= max; k++) {
			bounds[n++] = s->flows[i].steps[k].start_ns;
			bounds[n++] = s->flows[i].steps[k].stop_ns;
		}
	for (unsigned i = 0; i < s->n_events && n < max; i++)
		bounds[n++] = s->events[i].at_ns;
	qsort(bounds, n, sizeof(*bounds), cmp_i64);
	unsigned out = 0;
	for (unsigned i = 0; i < n; i++)
		if (!out || bounds[i] != bounds[out - 1])
			bounds[out++] = bounds[i];
	return out;
}

const struct fg_scn_step *fg_scn_step_at(const struct fg_scn_flow *f, int64_t t_ns)
{
	for (unsigned k = 0; k < f->n_steps; k++)
		if (f->steps[k].start_ns <= t_ns && t_ns < f->steps[k].stop_ns)
			return &f->steps[k];
	return NULL;
}

bool fg_scn_event_changes_backend(const struct fg_scn_event *e)
{
	return e->action != FG_SCN_APPLY;
}

unsigned fg_scn_capacity_at(const struct fg_scenario *s, int64_t t_ns, double *service_scale)
{
	unsigned cap[FG_SCN_MAX_BACKENDS];
	int64_t service[FG_SCN_MAX_BACKENDS];
	bool killed[FG_SCN_MAX_BACKENDS] = { false }, paused[FG_SCN_MAX_BACKENDS] = { false };
	for (unsigned b = 0; b < s->n_backends; b++) {
		cap[b] = s->capacity;
		service[b] = s->service_ns;
	}
	/* Events are sorted by time; those at t have fired (the runner fires an
	 * event at the first bin boundary at or after it). */
	for (unsigned i = 0; i < s->n_events && s->events[i].at_ns <= t_ns; i++) {
		const struct fg_scn_event *e = &s->events[i];
		switch (e->action) {
		case FG_SCN_APPLY: break;
		case FG_SCN_KILL: killed[e->backend] = true; break;
		case FG_SCN_RESTART: killed[e->backend] = false; break;
		case FG_SCN_PAUSE: paused[e->backend] = true; break;
		case FG_SCN_RESUME: paused[e->backend] = false; break;
		case FG_SCN_SET_BACKEND:
			if (e->capacity)
				cap[e->backend] = e->capacity;
			if (e->service_ns >= 0)
				service[e->backend] = e->service_ns;
			break;
		}
	}
	unsigned total = 0, running = 0;
	double scale = 0;
	for (unsigned b = 0; b < s->n_backends; b++)
		if (!killed[b] && !paused[b]) {
			total += cap[b];
			scale += (double)service[b] / (double)s->service_ns;
			running++;
		}
	if (service_scale)
		*service_scale = running ? scale / running : 1.0;
	return total;
}
