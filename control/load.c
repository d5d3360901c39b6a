/* SPDX-License-Identifier: Apache-2.0 */
/* load — the load state for the tier in front; see load.h. */
#include "load.h"

#include <stdlib.h>

#include "defs.h"

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

json_t *fg_load_json(struct fg_worker_stats *const *ws, unsigned n_workers, uint32_t seat_limit)
{
	struct fg_level_total *t = calloc(FG_MAX_LEVELS, sizeof(*t));
	if (!t)
		return NULL;
	unsigned n = limited_levels(ws, n_workers, t);
	uint64_t in_force = fg_stats_seat_limit_in_force(ws, n_workers, seat_limit), in_use = 0, waiting = 0;
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
			 "seatsInUse", (json_int_t)in_use, "seatsWaiting", (json_int_t)waiting, "load",
			 in_force ? (double)(in_use + waiting) / (double)in_force : 0.0, "levels", levels);
}

void fg_load_metrics(struct fg_expfmt *e, struct fg_worker_stats *const *ws, unsigned n_workers, uint32_t seat_limit)
{
	struct fg_level_total *t = calloc(FG_MAX_LEVELS, sizeof(*t));
	if (!t)
		return;
	unsigned n = limited_levels(ws, n_workers, t);
	uint64_t in_force = fg_stats_seat_limit_in_force(ws, n_workers, seat_limit), busy = 0;
	const char *w = "fairgate_level_estimated_wait_seconds", *r = "fairgate_load_ratio";
	fg_expfmt_family(e, w, FG_EXPFMT_GAUGE,
			 "How long a request arriving now would wait in the level: seats waiting x its service-time "
			 "guess / its limit in force (load.h).");
	for (unsigned i = 0; i < n; i++) {
		struct fg_expfmt_label l = { "priority_level", t[i].name };
		fg_expfmt_double(e, w, &l, 1, level_load(&t[i]).wait_s);
		busy += t[i].seats_in_use + t[i].seats_waiting;
	}
	fg_expfmt_family(e, r, FG_EXPFMT_GAUGE,
			 "(Seats in use + seats waiting) / the seats the levels share: 1 is full, above 1 requests queue.");
	fg_expfmt_double(e, r, NULL, 0, in_force ? (double)busy / (double)in_force : 0.0);
	free(t);
}
