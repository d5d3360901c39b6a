/* SPDX-License-Identifier: Apache-2.0 */
/* sim_backends — the simulator's backends; see sim_backends.h. */
#include "sim_backends.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "jsonfield.h"

static int find_backend(const struct sim_backends *bs, const char *name)
{
	for (int i = 0; i < bs->n; i++)
		if (!strcmp(bs->b[i].name, name))
			return i;
	return -1;
}

/* seats_out: what fairgate is told (-1: its capacity). */
static int parse_backend(json_t *o, int idx, struct sim_backend *b, int64_t *seats_out, char *err, size_t errlen)
{
	char path[48];
	snprintf(path, sizeof(path), "backends[%d].", idx);
	if (!json_is_object(o))
		return fg_jf_fail(err, errlen, "backends[%d]: must be an object", idx);
	static const char *const known[] = { "name", "capacity", "seats", "serviceScale", NULL };
	const char *name;
	char dflt[32];
	snprintf(dflt, sizeof(dflt), "backend-%d", idx);
	int64_t capacity;
	if (fg_jf_known_keys(o, known, path, err, errlen) ||
	    fg_jf_string(o, "name", false, dflt, sizeof(b->name), &name, path, err, errlen) ||
	    fg_jf_int(o, "capacity", 0, 0, 10000000, &capacity, path, err, errlen) ||
	    fg_jf_int(o, "seats", -1, 0, 10000000, seats_out, path, err, errlen) ||
	    fg_jf_number(o, "serviceScale", 1.0, 0.001, 1000.0, &b->scale, path, err, errlen))
		return -EINVAL;
	snprintf(b->name, sizeof(b->name), "%s", name);
	b->capacity = (uint32_t)capacity;
	b->told_capacity = *seats_out < 0;
	return 0;
}

static int parse_event(const struct sim_backends *bs, json_t *o, int idx, int64_t duration_ns,
		       struct sim_backend_event *e, char *err, size_t errlen)
{
	char path[48];
	snprintf(path, sizeof(path), "backendEvents[%d].", idx);
	if (!json_is_object(o))
		return fg_jf_fail(err, errlen, "backendEvents[%d]: must be an object", idx);
	static const char *const known[] = { "at", "backend", "action", "for", "capacity", "seats", "serviceScale", NULL };
	const char *name, *action;
	if (fg_jf_known_keys(o, known, path, err, errlen) ||
	    fg_jf_duration(o, "at", -1, &e->at, path, err, errlen) ||
	    fg_jf_string(o, "backend", true, NULL, 64, &name, path, err, errlen) ||
	    fg_jf_string(o, "action", true, NULL, 16, &action, path, err, errlen) ||
	    fg_jf_duration(o, "for", 0, &e->for_ns, path, err, errlen) ||
	    fg_jf_int(o, "capacity", -1, 0, 10000000, &e->capacity, path, err, errlen) ||
	    fg_jf_int(o, "seats", -1, 0, 10000000, &e->seats, path, err, errlen) ||
	    fg_jf_number(o, "serviceScale", 0, 0.001, 1000.0, &e->scale, path, err, errlen))
		return -EINVAL;
	if (e->at < 0 || e->at > duration_ns)
		return fg_jf_fail(err, errlen, "%sat: required, a duration within the scenario's", path);
	if ((e->backend = find_backend(bs, name)) < 0)
		return fg_jf_fail(err, errlen, "%sbackend: no backend named %s", path, name);
	bool has_for = json_object_get(o, "for") != NULL;
	const char *set_field = json_object_get(o, "capacity") ? "capacity"
				: json_object_get(o, "seats") ? "seats"
				: json_object_get(o, "serviceScale") ? "serviceScale" : NULL;
	if (!strcmp(action, "pause"))
		e->action = SIM_BACKEND_PAUSE;
	else if (!strcmp(action, "drain"))
		e->action = SIM_BACKEND_DRAIN;
	else if (!strcmp(action, "enable"))
		e->action = SIM_BACKEND_ENABLE;
	else if (!strcmp(action, "set"))
		e->action = SIM_BACKEND_SET;
	else
		return fg_jf_fail(err, errlen, "%saction: must be \"pause\", \"drain\", \"enable\" or \"set\"", path);
	if (e->action == SIM_BACKEND_PAUSE && (!has_for || e->for_ns <= 0))
		return fg_jf_fail(err, errlen, "%sfor: a pause needs a positive duration", path);
	if (e->action != SIM_BACKEND_PAUSE && has_for)
		return fg_jf_fail(err, errlen, "%sfor: only for a pause", path);
	if (e->action == SIM_BACKEND_SET && !set_field)
		return fg_jf_fail(err, errlen, "%s: \"set\" needs capacity, seats or serviceScale", path);
	if (e->action != SIM_BACKEND_SET && set_field)
		return fg_jf_fail(err, errlen, "%s%s: only for \"set\"", path, set_field);
	return 0;
}

/* serverConcurrencyLimitMode and its bounds, with the daemon's defaults and
 * checks (common/objects/settings.c). */
static int parse_mode(json_t *root, int64_t scl, struct sim_backends *out, char *err, size_t errlen)
{
	const char *mode;
	int64_t min, max;
	if (fg_jf_string(root, "serverConcurrencyLimitMode", false, "Static", 16, &mode, "", err, errlen) ||
	    fg_jf_int(root, "serverConcurrencyLimitMin", 1, 1, FG_MAX_SEAT_LIMIT, &min, "", err, errlen) ||
	    fg_jf_int(root, "serverConcurrencyLimitMax", 0, 0, FG_MAX_SEAT_LIMIT, &max, "", err, errlen))
		return -EINVAL;
	if (strcmp(mode, "Static") && strcmp(mode, "Adaptive"))
		return fg_jf_fail(err, errlen, "serverConcurrencyLimitMode: must be \"Static\" or \"Adaptive\"");
	out->adaptive = !strcmp(mode, "Adaptive");
	if (!out->adaptive)
		return 0;
	if (!out->n)
		return fg_jf_fail(err, errlen, "serverConcurrencyLimitMode: Adaptive needs a backends list");
	if (scl > FG_MAX_SEAT_LIMIT)
		return fg_jf_fail(err, errlen, "serverConcurrencyLimit: at most %u in Adaptive mode", FG_MAX_SEAT_LIMIT);
	if (min > scl)
		return fg_jf_fail(err, errlen,
				  "serverConcurrencyLimitMin: must be at most serverConcurrencyLimit (the adaptive limit's "
				  "start) %lld, got %lld", (long long)scl, (long long)min);
	if (max && max < scl)
		return fg_jf_fail(err, errlen,
				  "serverConcurrencyLimitMax: must be at least serverConcurrencyLimit (the adaptive limit's "
				  "start) %lld, got %lld", (long long)scl, (long long)max);
	struct fg_settings *st = calloc(1, sizeof(*st));
	if (!st)
		return fg_jf_fail(err, errlen, "out of memory");
	st->seat_limit = (uint32_t)scl;
	st->seat_limit_max = (uint32_t)max;
	out->max = fg_settings_seat_limit_max(st);
	free(st);
	out->start = (uint32_t)scl;
	out->min = (uint32_t)min;
	out->pool.adapt = out->adapt;
	return 0;
}

/* Tell fairgate backend i's seats (Static: its capacity in the pool;
 * Adaptive: where its learned limit starts, 0: an even part of
 * serverConcurrencyLimit, within each one's part of Min, and Max), as the
 * daemon's configuration does with one worker. */
static void tell(struct sim_backends *bs, int i, uint32_t seats, int64_t now)
{
	if (!bs->adaptive) {
		fg_backendpool_set_capacity(&bs->pool, (uint32_t)i, seats);
		return;
	}
	uint32_t n = (uint32_t)bs->n, start = seats ? seats : (bs->start + n - 1) / n;
	fg_backendpool_set_adaptive(&bs->pool, (uint32_t)i, start, (bs->min + n - 1) / n, bs->max, (uint64_t)now);
}

int sim_backends_parse(json_t *root, int64_t duration_ns, int64_t scl, struct sim_backends *out, char *err,
		       size_t errlen)
{
	memset(out, 0, sizeof(*out));
	json_t *list = json_object_get(root, "backends"), *events = json_object_get(root, "backendEvents"), *v;
	size_t i;
	if (list && (!json_is_array(list) || json_array_size(list) == 0 || json_array_size(list) > SIM_MAX_BACKENDS))
		return fg_jf_fail(err, errlen, "backends: must be a list of 1..%d backends", SIM_MAX_BACKENDS);
	if (events && !list)
		return fg_jf_fail(err, errlen, "backendEvents: needs a backends list");
	if (events && (!json_is_array(events) || json_array_size(events) > SIM_MAX_BACKEND_EVENTS))
		return fg_jf_fail(err, errlen, "backendEvents: must be a list of at most %d events", SIM_MAX_BACKEND_EVENTS);
	fg_backendpool_init(&out->pool, 0, 1, 0, 0); /* no timeouts here: nothing ejects */
	int64_t told[SIM_MAX_BACKENDS];
	json_array_foreach(list, i, v) {
		if (parse_backend(v, (int)i, &out->b[i], &told[i], err, errlen))
			return -EINVAL;
		if (find_backend(out, out->b[i].name) >= 0)
			return fg_jf_fail(err, errlen, "backends[%zu].name: %s is named twice", i, out->b[i].name);
		/* A slot of the pool names it by its index (the address is the
		 * pool's identity of a backend). */
		fg_backendpool_follow(&out->pool, (uint32_t)i, (uint32_t)i + 1, 1, FG_BACKEND_ENABLED);
		fg_backendpool_set_count(&out->pool, (uint32_t)i + 1);
		out->told_apart |= told[i] >= 0;
		out->n++;
	}
	if (parse_mode(root, scl, out, err, errlen))
		return -EINVAL;
	out->told_apart |= out->adaptive;
	for (int k = 0; k < out->n; k++)
		tell(out, k, told[k] < 0 ? out->b[k].capacity : (uint32_t)told[k], 0);
	json_array_foreach(events, i, v) {
		if (parse_event(out, v, (int)i, duration_ns, &out->ev[i], err, errlen))
			return -EINVAL;
		out->told_apart |= out->ev[i].seats >= 0;
		out->n_events++;
	}
	if (out->told_apart && duration_ns > SIM_ADAPTIVE_MAX_DURATION_NS)
		return fg_jf_fail(err, errlen, "duration: at most 1h in Adaptive mode or with backends' seats given "
					       "(the backends are sampled every 100ms)");
	return 0;
}

void sim_backends_free(struct sim_backends *bs)
{
	for (int i = 0; i < bs->n; i++) {
		free(bs->b[i].fifo);
		bs->b[i].fifo = NULL;
	}
	free(bs->samples);
	bs->samples = NULL;
}

int sim_backends_pick(struct sim_backends *bs, uint32_t seats, int64_t now)
{
	uint32_t i = fg_backendpool_pick(&bs->pool, seats, (uint64_t)now);
	return i == FG_BACKEND_NONE ? -1 : (int)i;
}

/* Room at the backend itself for `seats` more (a request wider than its
 * capacity runs alone), as fairgate's pool judges by its own view. */
static bool backend_room(const struct sim_backend *b, uint32_t seats)
{
	return !b->capacity || b->executing + seats <= b->capacity || (!b->executing && seats > b->capacity);
}

/* A request starts executing at backend i now: when its answer comes. */
static int64_t execute(struct sim_backend *b, uint32_t seats, int64_t now, int64_t exec_ns)
{
	b->executing += seats;
	int64_t from = b->paused_until > now ? b->paused_until : now;
	return from + (int64_t)((double)exec_ns * b->scale);
}

int64_t sim_backends_send(struct sim_backends *bs, int i, uint32_t id, uint32_t seats, int64_t now, int64_t exec_ns)
{
	struct sim_backend *b = &bs->b[i];
	b->started++;
	if (bs->pool.b[i].outstanding > b->max_outstanding)
		b->max_outstanding = bs->pool.b[i].outstanding;
	if (!b->fifo_n && backend_room(b, seats))
		return execute(b, seats, now, exec_ns);
	if (b->fifo_n == b->fifo_cap) {
		uint32_t cap = b->fifo_cap ? b->fifo_cap * 2 : 64;
		struct sim_backend_wait *f = malloc(cap * sizeof(*f));
		if (!f) {
			bs->failed = true;
			return -1;
		}
		for (uint32_t k = 0; k < b->fifo_n; k++) /* unrolled from the ring, oldest first */
			f[k] = b->fifo[(b->fifo_head + k) % b->fifo_cap];
		free(b->fifo);
		b->fifo = f;
		b->fifo_cap = cap;
		b->fifo_head = 0;
	}
	b->fifo[(b->fifo_head + b->fifo_n++) % b->fifo_cap] = (struct sim_backend_wait){ id, seats, exec_ns };
	b->queued++;
	if (b->fifo_n > b->max_queued)
		b->max_queued = b->fifo_n;
	return -1;
}

bool sim_backends_next(struct sim_backends *bs, int i, int64_t now, uint32_t *id, int64_t *answer)
{
	struct sim_backend *b = &bs->b[i];
	if (!b->fifo_n || !backend_room(b, b->fifo[b->fifo_head].seats))
		return false;
	struct sim_backend_wait w = b->fifo[b->fifo_head];
	b->fifo_head = (b->fifo_head + 1) % b->fifo_cap;
	b->fifo_n--;
	*id = w.id;
	*answer = execute(b, w.seats, now, w.exec_ns);
	return true;
}

int64_t sim_backends_answer_at(const struct sim_backends *bs, int i, int64_t now)
{
	return bs->b[i].paused_until > now ? bs->b[i].paused_until : now;
}

void sim_backends_done(struct sim_backends *bs, int i, uint32_t seats, int64_t sent_ns, int64_t now)
{
	struct sim_backend *b = &bs->b[i];
	b->executing -= seats < b->executing ? seats : b->executing;
	/* Static mode learns nothing: the simulator then runs no stall detection. */
	if (bs->adaptive)
		fg_backendpool_learn_latency(&bs->pool, (uint32_t)i, seats, (uint64_t)(now - sent_ns), (uint64_t)now);
	fg_backendpool_done(&bs->pool, (uint32_t)i, seats, true, (uint64_t)now);
}

static void set_admin(struct sim_backends *bs, int i, uint8_t admin)
{
	fg_backendpool_follow(&bs->pool, (uint32_t)i, (uint32_t)i + 1, 1, admin);
}

void sim_backends_apply(struct sim_backends *bs, int k, int64_t now)
{
	const struct sim_backend_event *e = &bs->ev[k];
	struct sim_backend *b = &bs->b[e->backend];
	switch (e->action) {
	case SIM_BACKEND_PAUSE:
		if (now + e->for_ns > b->paused_until)
			b->paused_until = now + e->for_ns;
		break;
	case SIM_BACKEND_DRAIN:
		set_admin(bs, e->backend, FG_BACKEND_DRAIN);
		break;
	case SIM_BACKEND_ENABLE:
		set_admin(bs, e->backend, FG_BACKEND_ENABLED);
		break;
	case SIM_BACKEND_SET:
		if (e->capacity >= 0)
			b->capacity = (uint32_t)e->capacity;
		if (e->seats >= 0)
			b->told_capacity = false;
		if (e->seats >= 0 || (e->capacity >= 0 && b->told_capacity))
			tell(bs, e->backend, e->seats >= 0 ? (uint32_t)e->seats : b->capacity, now);
		if (e->scale > 0)
			b->scale = e->scale;
		break;
	}
}

bool sim_backends_tick(struct sim_backends *bs, bool pressed, bool held, int64_t now)
{
	uint32_t changes = bs->pool.changes;
	if (bs->adaptive) {
		fg_backendpool_set_pressure(&bs->pool, pressed, held, held); /* one pool for every worker */
		fg_backendpool_refresh(&bs->pool, (uint64_t)now);
	}
	if (bs->n_samples + (size_t)bs->n > bs->cap_samples) {
		size_t cap = bs->cap_samples ? bs->cap_samples * 2 : (size_t)bs->n * 256;
		struct sim_backend_sample *s = realloc(bs->samples, cap * sizeof(*s));
		if (!s) {
			bs->failed = true;
			return bs->pool.changes != changes;
		}
		bs->samples = s;
		bs->cap_samples = cap;
	}
	for (int i = 0; i < bs->n; i++) {
		const struct fg_backend *p = &bs->pool.b[i];
		bs->samples[bs->n_samples++] = (struct sim_backend_sample){
			.limit = p->adaptive ? bs->adapt[i].limit : p->capacity, .in_force = p->capacity,
			.capacity = bs->b[i].capacity };
	}
	return bs->pool.changes != changes;
}

void sim_backends_capacity(const struct sim_backends *bs, uint32_t *usable, uint32_t *total)
{
	if (bs->adaptive)
		fg_backendpool_levels_capacity(&bs->pool, bs->start, bs->max, usable, total);
	else
		fg_backendpool_capacity(&bs->pool, usable, total);
}

/* One backend's series, a list per field. */
static json_t *series_of(const struct sim_backends *bs, int i)
{
	json_t *limit = json_array(), *in_force = json_array(), *capacity = json_array();
	for (size_t k = (size_t)i; k < bs->n_samples; k += (size_t)bs->n) {
		json_array_append_new(limit, json_integer(bs->samples[k].limit));
		json_array_append_new(in_force, json_integer(bs->samples[k].in_force));
		json_array_append_new(capacity, json_integer(bs->samples[k].capacity));
	}
	char every[32];
	return json_pack("{s:s, s:o, s:o, s:o}", "every", fg_duration_format(SIM_BACKEND_TICK_NS, every, sizeof(every)),
			 "limit", limit, "inForce", in_force, "capacity", capacity);
}

json_t *sim_backends_results(const struct sim_backends *bs)
{
	if (!bs->n)
		return NULL;
	json_t *list = json_array();
	for (int i = 0; i < bs->n; i++) {
		const struct sim_backend *b = &bs->b[i];
		json_t *o = json_pack("{s:s, s:I, s:I, s:I}", "name", b->name, "capacity", (json_int_t)b->capacity,
				      "started", (json_int_t)b->started, "maxOutstanding", (json_int_t)b->max_outstanding);
		if (bs->told_apart) {
			json_object_set_new(o, "seats", json_integer(bs->pool.b[i].capacity));
			json_object_set_new(o, "queuedAtBackend", json_integer((json_int_t)b->queued));
			json_object_set_new(o, "maxQueuedAtBackend", json_integer(b->max_queued));
			if (bs->adaptive) {
				const struct fg_adapt *a = &bs->adapt[i];
				json_t *moves = json_object();
				for (unsigned r = FG_ADAPT_HOLD; r < FG_ADAPT_REASONS; r++)
					json_object_set_new(moves, fg_adapt_reason_name(r), json_integer((json_int_t)a->moves[r]));
				json_object_set_new(o, "learnedLimit", json_integer(a->limit));
				json_object_set_new(o, "noloadLatencyMs",
						    json_real((double)fg_adapt_noload_ns(a, FG_ADAPT_NARROW) / 1e6));
				json_object_set_new(o, "limitMoves", moves);
			}
			json_object_set_new(o, "series", series_of(bs, i));
		}
		json_array_append_new(list, o);
	}
	return list;
}

json_t *sim_backends_window(const struct sim_backends *bs, int64_t from, int64_t to)
{
	if (!bs->told_apart)
		return NULL;
	double lo[3] = { 0 }, hi[3] = { 0 }, sum[3] = { 0 };
	size_t n = 0;
	for (size_t k = 0; k + (size_t)bs->n <= bs->n_samples; k += (size_t)bs->n) {
		int64_t at = (int64_t)(k / (size_t)bs->n + 1) * SIM_BACKEND_TICK_NS;
		if (at < from || at >= to)
			continue;
		double v[3] = { 0 };
		for (int i = 0; i < bs->n; i++) {
			v[0] += bs->samples[k + (size_t)i].limit;
			v[1] += bs->samples[k + (size_t)i].in_force;
			v[2] += bs->samples[k + (size_t)i].capacity;
		}
		for (int f = 0; f < 3; f++) {
			lo[f] = !n || v[f] < lo[f] ? v[f] : lo[f];
			hi[f] = !n || v[f] > hi[f] ? v[f] : hi[f];
			sum[f] += v[f];
		}
		n++;
	}
	static const char *const names[3] = { "limitSum", "inForceSum", "capacitySum" };
	json_t *o = json_object();
	for (int f = 0; f < 3; f++)
		json_object_set_new(o, names[f], json_pack("{s:f, s:f, s:f}", "min", lo[f], "avg", n ? sum[f] / (double)n : 0,
							   "max", hi[f]));
	json_object_set_new(o, "samples", json_integer((json_int_t)n));
	return o;
}
