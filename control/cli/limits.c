/* SPDX-License-Identifier: Apache-2.0 */
/*
 * limits — `fairgatectl explain --limits`: how the seats the levels have
 * now follow from serverConcurrencyLimit, the backends' capacity (learned
 * in Adaptive mode, docs/adaptive-limit.md) and borrowing, from the
 * daemon's status: each step with its figures, so an operator can see why
 * a level has the limit it has.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "ctlclient.h"

static double getd(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : 0;
}

static const char *gets_or(json_t *o, const char *k, const char *dflt)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : dflt;
}

/* The derivation as JSON: what the table prints. */
static json_t *derive(json_t *st)
{
	long long usable = 0, listed = 0;
	size_t i;
	json_t *w, *b, *l;
	json_array_foreach(json_object_get(st, "workers"), i, w) {
		usable += ctl_geti(w, "backendCapacityUsable");
		listed += ctl_geti(w, "backendCapacityListed");
	}
	json_t *backends = json_array(), *levels = json_array();
	json_array_foreach(json_object_get(st, "backendPool"), i, b) {
		json_t *row = json_pack("{s:s, s:s, s:s, s:I, s:f}", "address", gets_or(b, "address", "?"), "admin",
					gets_or(b, "admin", "?"), "state", gets_or(b, "state", "?"), "capacitySeats",
					(json_int_t)ctl_geti(b, "capacitySeats"), "latencyMs", getd(b, "latencyMs"));
		if (json_object_get(b, "learnedLimitSeats")) {
			json_object_set_new(row, "learnedLimitSeats", json_integer(ctl_geti(b, "learnedLimitSeats")));
			json_object_set_new(row, "noloadLatencyMs", json_real(getd(b, "noloadLatencyMs")));
			json_object_set_new(row, "limitDecision", json_string(gets_or(b, "limitDecision", "?")));
		}
		json_object_set_new(row, "stalled", json_boolean(json_is_true(json_object_get(b, "stalled"))));
		json_array_append_new(backends, row);
	}
	json_array_foreach(json_object_get(st, "priorityLevels"), i, l) {
		json_t *bw = json_object_get(l, "borrowing");
		if (!bw || (!ctl_geti(bw, "nominal") && !ctl_geti(l, "seatLimit")))
			continue; /* exempt: no limit */
		json_array_append_new(levels, json_pack("{s:s, s:I, s:I, s:I, s:I}", "name", gets_or(l, "name", "?"),
							"nominal", (json_int_t)ctl_geti(bw, "nominal"), "current",
							(json_int_t)ctl_geti(bw, "current"), "inForce",
							(json_int_t)ctl_geti(l, "seatLimit"), "seatsInUse",
							(json_int_t)ctl_geti(l, "seatsInUse")));
	}
	json_t *d = json_pack("{s:I, s:s, s:I, s:I, s:I, s:o, s:o}", "serverConcurrencyLimit",
			      (json_int_t)ctl_geti(st, "serverConcurrencyLimit"), "mode",
			      gets_or(st, "serverConcurrencyLimitMode", "Static"), "usable", (json_int_t)usable, "listed",
			      (json_int_t)listed, "inForce", (json_int_t)ctl_geti(st, "serverConcurrencyLimitInForce"),
			      "backends", backends, "levels", levels);
	if (json_object_get(st, "serverConcurrencyLimitMax")) {
		json_object_set_new(d, "min", json_integer(ctl_geti(st, "serverConcurrencyLimitMin")));
		json_object_set_new(d, "max", json_integer(ctl_geti(st, "serverConcurrencyLimitMax")));
	}
	return d;
}

static void print_table(json_t *d)
{
	bool adaptive = !strcmp(gets_or(d, "mode", "Static"), "Adaptive");
	long long scl = ctl_geti(d, "serverConcurrencyLimit"), usable = ctl_geti(d, "usable"),
		  listed = ctl_geti(d, "listed");
	if (adaptive)
		printf("serverConcurrencyLimit %lld: where the adaptive limit started (Adaptive; Min %lld, Max %lld)\n",
		       scl, ctl_geti(d, "min"), ctl_geti(d, "max"));
	else
		printf("serverConcurrencyLimit %lld (Static)\n", scl);
	printf("\n1. the backends' capacity now (%s):\n", adaptive ? "each one's limit learned from its latency"
								 : "seats=N as given; no seats=N: one each");
	printf("  %-22s %-9s %-8s %9s %9s %10s %10s  %s\n", "BACKEND", "ADMIN", "STATE", "LEARNED", "IN FORCE",
	       "NO-LOAD", "LATENCY", adaptive ? "DECISION" : "");
	size_t i;
	json_t *b, *l;
	json_array_foreach(json_object_get(d, "backends"), i, b) {
		char learned[24] = "-", noload[24] = "-";
		if (json_object_get(b, "learnedLimitSeats")) {
			snprintf(learned, sizeof(learned), "%lld", ctl_geti(b, "learnedLimitSeats"));
			snprintf(noload, sizeof(noload), "%.1f ms", getd(b, "noloadLatencyMs"));
		}
		printf("  %-22s %-9s %-8s %9s %9lld %10s %7.1f ms  %s%s\n", gets_or(b, "address", "?"),
		       gets_or(b, "admin", "?"), gets_or(b, "state", "?"), learned, ctl_geti(b, "capacitySeats"), noload,
		       getd(b, "latencyMs"), gets_or(b, "limitDecision", ""),
		       json_is_true(json_object_get(b, "stalled")) ? " (stalled)" : "");
	}
	printf("\n2. usable of listed, summed over the workers: %lld of %lld%s\n", usable, listed,
	       adaptive ? " (listed: serverConcurrencyLimit, the start; usable: the learned limits of the enabled, "
			  "up backends, overbooked while the levels are pressed and the backends have room, at most Max)"
			: " (usable: enabled and up; listed: not removed)");
	printf("   the levels' limits are scaled by %lld / %lld: the levels share %lld seats now "
	       "(serverConcurrencyLimitInForce)\n",
	       usable, listed, ctl_geti(d, "inForce"));
	printf("\n3. each level: its share of serverConcurrencyLimit (nominal), moved by borrowing (current), "
	       "scaled (in force):\n");
	printf("  %-32s %8s %8s %9s %9s\n", "LEVEL", "NOMINAL", "CURRENT", "IN FORCE", "IN USE");
	json_array_foreach(json_object_get(d, "levels"), i, l)
		printf("  %-32s %8lld %8lld %9lld %9lld\n", gets_or(l, "name", "?"), ctl_geti(l, "nominal"),
		       ctl_geti(l, "current"), ctl_geti(l, "inForce"), ctl_geti(l, "seatsInUse"));
}

int ctl_explain_limits(const char *path, const char *fmt)
{
	json_t *resp = NULL, *st = fg_ctl_request(path, json_pack("{s:s}", "command", "status"), &resp);
	if (!st) {
		json_decref(resp);
		return 1;
	}
	json_t *d = derive(st);
	if (!ctl_print_json(fmt, d))
		print_table(d);
	json_decref(d);
	json_decref(resp);
	return 0;
}
