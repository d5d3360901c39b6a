/* SPDX-License-Identifier: Apache-2.0 */
/* load — the load state for the tier in front; see load.h. */
#include "load.h"

#include <stdlib.h>
#include <string.h>

#include "defs.h"
#include "proto.h"

struct level_load {
	const struct fg_level_total *t;
	double wait_s; /* estimated */
	double load;   /* (in use + waiting) / limit */
};

static struct level_load level_load(const struct fg_level_total *t)
{
	struct level_load l = { .t = t };
	if (t->limit) {
		l.wait_s = (double)t->seats_waiting * (double)t->guess_ns / 1e9 / (double)t->limit;
		l.load = (double)(t->seats_in_use + t->seats_waiting) / (double)t->limit;
	}
	return l;
}

/* The levels with a limit (exempt ones have none), summed over the workers. */
static unsigned limited_levels(struct fg_worker_stats *const *ws, unsigned n, struct fg_level_total *t)
{
	unsigned k = 0, count = fg_stats_levels_total(ws, n, t, FG_MAX_LEVELS);
	for (unsigned i = 0; i < count; i++)
		if (t[i].live && t[i].limit)
			t[k++] = t[i];
	return k;
}

/* The instance's load: (seats in use + seats waiting) over the levels / the
 * seats they share. */
static double instance_load(const struct fg_level_total *t, unsigned n, uint64_t in_force)
{
	uint64_t busy = 0;
	for (unsigned i = 0; i < n; i++)
		busy += t[i].seats_in_use + t[i].seats_waiting;
	return in_force ? (double)busy / (double)in_force : 0.0;
}

static uint16_t permille(double x)
{
	x = x * 1000.0 + 0.5;
	return x >= 65535.0 ? 65535 : x > 0 ? (uint16_t)x : 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct fg_level_total *)a)->name, ((const struct fg_level_total *)b)->name);
}

void fg_load_publish(struct fg_worker_stats *const *ws, unsigned n_workers, uint32_t seat_limit)
{
	struct fg_level_total *t = calloc(FG_MAX_LEVELS, sizeof(*t));
	if (!t)
		return; /* the values stay as they were: one refresh late */
	unsigned n = limited_levels(ws, n_workers, t);
	qsort(t, n, sizeof(*t), by_name);
	struct fg_answer_load value = {
		.instance_permille = permille(instance_load(t, n, fg_stats_seat_limit_in_force(ws, n_workers, seat_limit))),
	};
	for (unsigned w = 0; w < n_workers; w++)
		for (unsigned i = 0; i < FG_MAX_LEVELS; i++) {
			struct fg_level_stats *l = &ws[w]->levels[i];
			if (!__atomic_load_n(&l->used, __ATOMIC_ACQUIRE))
				continue;
			struct fg_level_total key;
			memcpy(key.name, l->name, sizeof(key.name));
			key.name[sizeof(key.name) - 1] = 0;
			const struct fg_level_total *found = bsearch(&key, t, n, sizeof(*t), by_name);
			struct level_load ll = found ? level_load(found) : (struct level_load){ 0 }; /* exempt: none */
			double wait_us = ll.wait_s * 1e6;
			value.level_permille = permille(ll.load);
			value.wait_us = wait_us >= (double)UINT32_MAX ? UINT32_MAX : (uint32_t)wait_us;
			uint8_t wire[FG_PROTO_LOAD_LEN];
			uint64_t word;
			fg_proto_load_value(wire, &value);
			memcpy(&word, wire, sizeof(word));
			__atomic_store_n(&l->answer_load, word, __ATOMIC_RELAXED);
		}
	free(t);
}

json_t *fg_load_json(struct fg_worker_stats *const *ws, unsigned n_workers, uint32_t seat_limit)
{
	struct fg_level_total *t = calloc(FG_MAX_LEVELS, sizeof(*t));
	if (!t)
		return NULL;
	unsigned n = limited_levels(ws, n_workers, t);
	uint64_t in_force = fg_stats_seat_limit_in_force(ws, n_workers, seat_limit), in_use = 0, waiting = 0;
	double load = instance_load(t, n, in_force);
	json_t *levels = json_array();
	for (unsigned i = 0; i < n; i++) {
		struct level_load l = level_load(&t[i]);
		in_use += t[i].seats_in_use;
		waiting += t[i].seats_waiting;
		json_array_append_new(levels, json_pack("{s:s, s:I, s:I, s:I, s:I, s:f, s:f, s:f}", "name", t[i].name,
							"limit", (json_int_t)t[i].limit, "seatsInUse",
							(json_int_t)t[i].seats_in_use, "seatsWaiting",
							(json_int_t)t[i].seats_waiting, "waiting", (json_int_t)t[i].waiting,
							"serviceGuessMs", (double)t[i].guess_ns / 1e6,
							"estimatedWaitSeconds", l.wait_s, "load", l.load));
	}
	free(t);
	return json_pack("{s:I, s:I, s:I, s:f, s:o}", "serverConcurrencyLimitInForce", (json_int_t)in_force,
			 "seatsInUse", (json_int_t)in_use, "seatsWaiting", (json_int_t)waiting, "load", load, "levels",
			 levels);
}

void fg_load_metrics(struct fg_expfmt *e, struct fg_worker_stats *const *ws, unsigned n_workers, uint32_t seat_limit)
{
	struct fg_level_total *t = calloc(FG_MAX_LEVELS, sizeof(*t));
	if (!t)
		return;
	unsigned n = limited_levels(ws, n_workers, t);
	uint64_t in_force = fg_stats_seat_limit_in_force(ws, n_workers, seat_limit);
	const char *w = "fairgate_level_estimated_wait_seconds", *r = "fairgate_load_ratio";
	fg_expfmt_family(e, w, FG_EXPFMT_GAUGE,
			 "How long a request arriving now would wait in the level: seats waiting x its service-time "
			 "guess / its limit in force (load.h).");
	for (unsigned i = 0; i < n; i++) {
		struct fg_expfmt_label l = { "priority_level", t[i].name };
		fg_expfmt_double(e, w, &l, 1, level_load(&t[i]).wait_s);
	}
	fg_expfmt_family(e, r, FG_EXPFMT_GAUGE,
			 "(Seats in use + seats waiting) / the seats the levels share: 1 is full, above 1 requests queue.");
	fg_expfmt_double(e, r, NULL, 0, instance_load(t, n, in_force));
	free(t);
}
