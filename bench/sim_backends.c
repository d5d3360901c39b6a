/* SPDX-License-Identifier: Apache-2.0 */
/* sim_backends — the simulator's backends; see sim_backends.h. */
#include "sim_backends.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "jsonfield.h"

static int find_backend(const struct sim_backends *bs, const char *name)
{
	for (int i = 0; i < bs->n; i++)
		if (!strcmp(bs->b[i].name, name))
			return i;
	return -1;
}

static int parse_backend(json_t *o, int idx, struct sim_backend *b, uint32_t *capacity_out, char *err,
			 size_t errlen)
{
	char path[48];
	snprintf(path, sizeof(path), "backends[%d].", idx);
	if (!json_is_object(o))
		return fg_jf_fail(err, errlen, "backends[%d]: must be an object", idx);
	static const char *const known[] = { "name", "capacity", "serviceScale", NULL };
	const char *name;
	char dflt[32];
	snprintf(dflt, sizeof(dflt), "backend-%d", idx);
	int64_t capacity;
	if (fg_jf_known_keys(o, known, path, err, errlen) ||
	    fg_jf_string(o, "name", false, dflt, sizeof(b->name), &name, path, err, errlen) ||
	    fg_jf_int(o, "capacity", 0, 0, 10000000, &capacity, path, err, errlen) ||
	    fg_jf_number(o, "serviceScale", 1.0, 0.001, 1000.0, &b->scale, path, err, errlen))
		return -EINVAL;
	snprintf(b->name, sizeof(b->name), "%s", name);
	*capacity_out = (uint32_t)capacity;
	return 0;
}

static int parse_event(const struct sim_backends *bs, json_t *o, int idx, int64_t duration_ns,
		       struct sim_backend_event *e, char *err, size_t errlen)
{
	char path[48];
	snprintf(path, sizeof(path), "backendEvents[%d].", idx);
	if (!json_is_object(o))
		return fg_jf_fail(err, errlen, "backendEvents[%d]: must be an object", idx);
	static const char *const known[] = { "at", "backend", "action", "for", "capacity", "serviceScale", NULL };
	const char *name, *action;
	if (fg_jf_known_keys(o, known, path, err, errlen) ||
	    fg_jf_duration(o, "at", -1, &e->at, path, err, errlen) ||
	    fg_jf_string(o, "backend", true, NULL, 64, &name, path, err, errlen) ||
	    fg_jf_string(o, "action", true, NULL, 16, &action, path, err, errlen) ||
	    fg_jf_duration(o, "for", 0, &e->for_ns, path, err, errlen) ||
	    fg_jf_int(o, "capacity", -1, 0, 10000000, &e->capacity, path, err, errlen) ||
	    fg_jf_number(o, "serviceScale", 0, 0.001, 1000.0, &e->scale, path, err, errlen))
		return -EINVAL;
	if (e->at < 0 || e->at > duration_ns)
		return fg_jf_fail(err, errlen, "%sat: required, a duration within the scenario's", path);
	if ((e->backend = find_backend(bs, name)) < 0)
		return fg_jf_fail(err, errlen, "%sbackend: no backend named %s", path, name);
	bool has_for = json_object_get(o, "for") != NULL;
	bool has_set = json_object_get(o, "capacity") || json_object_get(o, "serviceScale");
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
	if (e->action == SIM_BACKEND_SET && !has_set)
		return fg_jf_fail(err, errlen, "%s: \"set\" needs capacity or serviceScale", path);
	if (e->action != SIM_BACKEND_SET && has_set)
		return fg_jf_fail(err, errlen, "%s%s: only for \"set\"", path,
				  json_object_get(o, "capacity") ? "capacity" : "serviceScale");
	return 0;
}

int sim_backends_parse(json_t *root, int64_t duration_ns, struct sim_backends *out, char *err, size_t errlen)
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
	json_array_foreach(list, i, v) {
		uint32_t capacity = 0;
		if (parse_backend(v, (int)i, &out->b[i], &capacity, err, errlen))
			return -EINVAL;
		if (find_backend(out, out->b[i].name) >= 0)
			return fg_jf_fail(err, errlen, "backends[%zu].name: %s is named twice", i, out->b[i].name);
		/* A slot of the pool names it by its index (the address is the
		 * pool's identity of a backend). */
		fg_backendpool_follow(&out->pool, (uint32_t)i, (uint32_t)i + 1, 1, FG_BACKEND_ENABLED);
		fg_backendpool_set_count(&out->pool, (uint32_t)i + 1);
		fg_backendpool_set_capacity(&out->pool, (uint32_t)i, capacity);
		out->n++;
	}
	json_array_foreach(events, i, v) {
		if (parse_event(out, v, (int)i, duration_ns, &out->ev[i], err, errlen))
			return -EINVAL;
		out->n_events++;
	}
	return 0;
}

int sim_backends_pick(struct sim_backends *bs, uint32_t seats, int64_t now)
{
	uint32_t i = fg_backendpool_pick(&bs->pool, seats, (uint64_t)now);
	return i == FG_BACKEND_NONE ? -1 : (int)i;
}

int64_t sim_backends_start(struct sim_backends *bs, int i, int64_t now, int64_t exec_ns)
{
	struct sim_backend *b = &bs->b[i];
	b->started++;
	if (bs->pool.b[i].outstanding > b->max_outstanding)
		b->max_outstanding = bs->pool.b[i].outstanding;
	int64_t from = b->paused_until > now ? b->paused_until : now;
	return from + (int64_t)((double)exec_ns * b->scale);
}

int64_t sim_backends_answer_at(const struct sim_backends *bs, int i, int64_t now)
{
	return bs->b[i].paused_until > now ? bs->b[i].paused_until : now;
}

void sim_backends_done(struct sim_backends *bs, int i, uint32_t seats, int64_t now)
{
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
			fg_backendpool_set_capacity(&bs->pool, (uint32_t)e->backend, (uint32_t)e->capacity);
		if (e->scale > 0)
			b->scale = e->scale;
		break;
	}
}

json_t *sim_backends_results(const struct sim_backends *bs)
{
	if (!bs->n)
		return NULL;
	json_t *list = json_array();
	for (int i = 0; i < bs->n; i++)
		json_array_append_new(list, json_pack("{s:s, s:I, s:I, s:I}", "name", bs->b[i].name, "capacity",
						      (json_int_t)bs->pool.b[i].capacity, "started", (json_int_t)bs->b[i].started,
						      "maxOutstanding", (json_int_t)bs->b[i].max_outstanding));
	return list;
}
