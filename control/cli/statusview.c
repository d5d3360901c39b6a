/* SPDX-License-Identifier: Apache-2.0 */
/* statusview — see statusview.h. */
#include "statusview.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctlclient.h"

static long long geti(json_t *o, const char *k) { return (long long)json_integer_value(json_object_get(o, k)); }

static const char *gets_(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

/* One flow row: the figures of the sample, its rates from the previous one. */
struct row {
	const char *level, *flow;
	long long worker, received, rejected, waiting, executing, responded;
	double rate, reject_rate;
	char reasons[160]; /* "queue-full=3 time-out=1" */
};

enum sort_key { SORT_NAME, SORT_RECEIVED, SORT_REJECTED, SORT_WAITING, SORT_EXECUTING, SORT_RESPONDED, SORT_RATE,
		SORT_REJECT_RATE };
static const char *const sort_names[] = { "name", "received", "rejected", "waiting", "executing", "responded",
					  "rate", "reject-rate" };
#define N_SORT_KEYS (sizeof(sort_names) / sizeof(sort_names[0]))

static enum sort_key sort_by;

/* Largest first for figures; names in byte order (level, then flow). */
static int compare_rows(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	double dx = 0, dy = 0;
	switch (sort_by) {
	case SORT_NAME: {
		int c = strcmp(x->level, y->level);
		c = c ? c : strcmp(x->flow, y->flow);
		return c ? c : (x->worker > y->worker) - (x->worker < y->worker);
	}
	case SORT_RECEIVED: dx = (double)x->received; dy = (double)y->received; break;
	case SORT_REJECTED: dx = (double)x->rejected; dy = (double)y->rejected; break;
	case SORT_WAITING: dx = (double)x->waiting; dy = (double)y->waiting; break;
	case SORT_EXECUTING: dx = (double)x->executing; dy = (double)y->executing; break;
	case SORT_RESPONDED: dx = (double)x->responded; dy = (double)y->responded; break;
	case SORT_RATE: dx = x->rate; dy = y->rate; break;
	case SORT_REJECT_RATE: dx = x->reject_rate; dy = y->reject_rate; break;
	}
	return (dx < dy) - (dx > dy);
}

static void reasons_text(json_t *by, char *buf, size_t cap)
{
	const char *reason;
	json_t *v;
	size_t n = 0;
	buf[0] = 0;
	json_object_foreach(by, reason, v) {
		int k = snprintf(buf + n, cap - n, "%s%s=%lld", n ? " " : "", reason, (long long)json_integer_value(v));
		if (k < 0 || (size_t)k >= cap - n)
			break;
		n += (size_t)k;
	}
}

/* The previous sample's flow, by (level, flow, worker): for the rates. */
static json_t *previous_flow(json_t *prev, const struct row *r)
{
	size_t i;
	json_t *f;
	json_array_foreach(json_object_get(prev, "flows"), i, f)
		if (!strcmp(gets_(f, "priorityLevel"), r->level) && !strcmp(gets_(f, "flow"), r->flow) &&
		    geti(f, "worker") == r->worker)
			return f;
	return NULL;
}

struct options {
	const char *level, *flow; /* filters: level name exactly, flow name containing */
	long top;                 /* rows at most; -1: all */
};

static int width_of(const char *s, int min) { return (int)strlen(s) > min ? (int)strlen(s) : min; }

static void print_levels(json_t *st, const struct options *o)
{
	json_t *lv;
	size_t i;
	int w = 14;
	json_array_foreach(json_object_get(st, "priorityLevels"), i, lv)
		w = width_of(gets_(lv, "name"), w);
	printf("\n%-*s %8s %8s %10s %10s %10s  %s\n", w, "PRIORITY LEVEL", "SEATS", "LIMIT", "WAITING", "EXECUTING",
	       "REJECTED", "REJECTS BY REASON");
	json_array_foreach(json_object_get(st, "priorityLevels"), i, lv) {
		if (o->level && strcmp(o->level, gets_(lv, "name")))
			continue;
		char reasons[160];
		reasons_text(json_object_get(lv, "rejectedBy"), reasons, sizeof(reasons));
		printf("%-*s %8lld %8lld %10lld %10lld %10lld  %s\n", w, gets_(lv, "name"), geti(lv, "seatsInUse"),
		       geti(lv, "seatLimit"), geti(lv, "waiting"), geti(lv, "executing"), geti(lv, "rejected"), reasons);
	}
}

static void print_flows(json_t *st, json_t *prev, double dt, const struct options *o)
{
	json_t *flows = json_object_get(st, "flows"), *f;
	size_t n = 0, i;
	struct row *rows = calloc(json_array_size(flows) + 1, sizeof(*rows));
	if (!rows)
		return;
	json_array_foreach(flows, i, f) {
		struct row *r = &rows[n];
		r->level = gets_(f, "priorityLevel");
		r->flow = gets_(f, "flow");
		if ((o->level && strcmp(o->level, r->level)) || (o->flow && !strstr(r->flow, o->flow)))
			continue;
		r->worker = geti(f, "worker");
		r->received = geti(f, "received");
		r->rejected = geti(f, "rejected");
		r->waiting = geti(f, "waiting");
		r->executing = geti(f, "executing");
		r->responded = geti(f, "responded");
		json_t *p = prev && dt > 0 ? previous_flow(prev, r) : NULL;
		if (p) {
			r->rate = (double)(r->received - geti(p, "received")) / dt;
			r->reject_rate = (double)(r->rejected - geti(p, "rejected")) / dt;
		}
		reasons_text(json_object_get(f, "rejectedBy"), r->reasons, sizeof(r->reasons));
		n++;
	}
	qsort(rows, n, sizeof(*rows), compare_rows);
	if (o->top >= 0 && (size_t)o->top < n)
		n = (size_t)o->top;
	int wl = 14, wf = 4;
	for (size_t k = 0; k < n; k++) {
		wl = width_of(rows[k].level, wl);
		wf = width_of(rows[k].flow, wf);
	}
	printf("\n%-*s %-*s %6s %9s %9s %9s %10s %10s %10s  %s\n", wl, "PRIORITY LEVEL", wf, "FLOW", "WORKER", "REQ/S",
	       "REJ/S", "WAITING", "EXECUTING", "RESPONDED", "REJECTED", "REJECTS BY REASON");
	for (size_t k = 0; k < n; k++) {
		const struct row *r = &rows[k];
		printf("%-*s %-*s %6lld %9.1f %9.1f %9lld %10lld %10lld %10lld  %s\n", wl, r->level, wf,
		       r->flow[0] ? r->flow : "(none)", r->worker, r->rate, r->reject_rate, r->waiting, r->executing,
		       r->responded, r->rejected, r->reasons);
	}
	free(rows);
}

void fg_ctl_print_backends(json_t *st)
{
	json_t *b;
	size_t i;
	int w = 7;
	json_array_foreach(json_object_get(st, "backendPool"), i, b)
		w = width_of(gets_(b, "address"), w);
	printf("\n%-*s %-9s %-8s %-24s %11s %8s %9s %-24s %s\n", w, "BACKEND", "ADMIN", "STATE", "EJECTED-UNTIL",
	       "SEATS/CAP", "TIMEOUTS", "EJECTIONS", "LAST-CHANGE", "MAC");
	json_array_foreach(json_object_get(st, "backendPool"), i, b) {
		char seats[32], mac[48];
		snprintf(seats, sizeof(seats), "%lld/%lld", geti(b, "outstandingSeats"), geti(b, "capacitySeats"));
		const char *src = gets_(b, "macSource");
		snprintf(mac, sizeof(mac), "%s%s%s", json_is_string(json_object_get(b, "mac")) ? gets_(b, "mac") : "-", *src ? " " : "", src);
		printf("%-*s %-9s %-8s %-24s %11s %8lld %9lld %-24s %s\n", w, gets_(b, "address"), gets_(b, "admin"),
		       gets_(b, "state"), json_is_string(json_object_get(b, "ejectedUntil")) ? gets_(b, "ejectedUntil") : "-", seats,
		       geti(b, "timeouts"), geti(b, "ejections"),
		       json_is_string(json_object_get(b, "lastChange")) ? gets_(b, "lastChange") : "-", mac);
	}
}

void fg_ctl_print_busiest_flows(json_t *st, const char *level)
{
	json_t *lv, *fl;
	size_t i, k;
	json_array_foreach(json_object_get(st, "priorityLevels"), i, lv) {
		if (strcmp(gets_(lv, "name"), level))
			continue;
		json_t *flows = json_object_get(json_object_get(lv, "fairSharing"), "flows");
		if (!json_array_size(flows)) {
			printf("  (no active flows)\n");
			return;
		}
		printf("  %-40s %8s %12s %6s %7s %9s\n", "FLOW", "WEIGHT", "USAGE", "SEATS", "DEMAND", "DESERVED");
		json_array_foreach(flows, k, fl) {
			json_t *usage = json_object_get(fl, "usage");
			char u[32];
			if (json_is_number(usage))
				snprintf(u, sizeof(u), "%.3f", json_number_value(usage));
			else
				snprintf(u, sizeof(u), "-");
			printf("  %-40s %8g %12s %6lld %7lld %9.2f\n", gets_(fl, "flow"),
			       json_number_value(json_object_get(fl, "weight")), u, geti(fl, "seatsInUse"), geti(fl, "demand"),
			       json_number_value(json_object_get(fl, "deserved")));
		}
		return;
	}
	printf("  (no such level in force)\n");
}

/* Levels that are weighted or UsageBased: their policy and busiest flows. */
static void print_fair_sharing(json_t *st, const struct options *o)
{
	json_t *lv;
	size_t i;
	json_array_foreach(json_object_get(st, "priorityLevels"), i, lv) {
		json_t *fs = json_object_get(lv, "fairSharing");
		const char *name = gets_(lv, "name");
		if (!fs || (o->level && strcmp(o->level, name)) ||
		    (!json_is_true(json_object_get(fs, "weighted")) && !strcmp(gets_(fs, "policy"), "MaxMin")))
			continue;
		printf("\nFAIR SHARING %s: %s%s, %lld active flow(s)\n", name, gets_(fs, "policy"),
		       json_is_true(json_object_get(fs, "weighted")) ? " with weights" : "", geti(fs, "activeFlows"));
		fg_ctl_print_busiest_flows(st, name);
	}
}

static void print_table(json_t *st, json_t *prev, double dt, const struct options *o)
{
	json_t *c = json_object_get(st, "counters");
	printf("fairgate %s  io=%s  listen=%s  up %.0fs  config gen %lld%s\n", gets_(st, "version"), gets_(st, "io"),
	       gets_(st, "listen"), json_real_value(json_object_get(st, "uptimeSeconds")), geti(st, "configGeneration"),
	       json_is_true(json_object_get(st, "shuttingDown")) ? "  SHUTTING DOWN" : "");
	printf("requests %lld  responded %lld  rejected %lld  malformed %lld  unmatched responses %lld\n",
	       geti(c, "requestsReceived"), geti(c, "responded"), geti(c, "rejectedTotal"), geti(c, "malformed"),
	       geti(c, "responsesUnmatched"));
	print_levels(st, o);
	print_fair_sharing(st, o);
	print_flows(st, prev, dt, o);
	const char *reason;
	json_t *v;
	printf("\nrejects:");
	json_object_foreach(json_object_get(c, "rejected"), reason, v)
		printf(" %s=%lld", reason, (long long)json_integer_value(v));
	printf("\n");
	size_t i;
	json_array_foreach(json_object_get(st, "warnings"), i, v) /* capacity sanity (control.md) */
		printf("%sWarning: %s\n", i ? "" : "\n", json_string_value(v));
	fg_ctl_print_backends(st);
}

static void usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "fairgatectl: status: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
}

int fg_ctl_status(const char *path, int argc, char **argv)
{
	const char *format = "table";
	double watch = 0;
	long count = -1;
	struct options o = { .top = -1 };
	sort_by = SORT_NAME;
	static const struct option opts[] = { { "output", required_argument, 0, 'o' },
		{ "watch", required_argument, 0, 'w' }, { "count", required_argument, 0, 'n' },
		{ "level", required_argument, 0, 'l' }, { "flow", required_argument, 0, 'f' },
		{ "sort", required_argument, 0, 's' }, { "top", required_argument, 0, 't' },
		{ "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 } };
	int opt;
	char *end;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "o:w:n:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'o': format = optarg; break;
		case 'w':
			errno = 0;
			watch = strtod(optarg, &end);
			if (errno || *end || end == optarg || !(watch >= 0.1 && watch <= FG_STATUS_MAX_WATCH_S)) {
				usage_error("--watch must be 0.1..3600 seconds, got \"%s\"", optarg);
				return 2;
			}
			break;
		case 'n':
			errno = 0;
			count = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || count < 1) {
				usage_error("--count must be a positive whole number, got \"%s\"", optarg);
				return 2;
			}
			break;
		case 'l': o.level = optarg; break;
		case 'f': o.flow = optarg; break;
		case 's': {
			size_t k = 0;
			while (k < N_SORT_KEYS && strcmp(optarg, sort_names[k]))
				k++;
			if (k == N_SORT_KEYS) {
				usage_error("--sort must be name, received, rejected, waiting, executing, responded, rate or "
					    "reject-rate, got \"%s\"", optarg);
				return 2;
			}
			sort_by = (enum sort_key)k;
			break;
		}
		case 't':
			errno = 0;
			o.top = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || o.top < 1 || o.top > FG_STATUS_MAX_TOP) {
				usage_error("--top must be 1..1000000, got \"%s\"", optarg);
				return 2;
			}
			break;
		case 'h':
			printf("usage: fairgatectl status [-o table|json] [--watch SECONDS] [--count N] [--level LEVEL]\n"
			       "                          [--flow TEXT] [--sort COLUMN] [--top N]\n");
			return 0;
		default: return 2;
		}
	}
	if (optind < argc) {
		usage_error("unexpected argument \"%s\"", argv[optind]);
		return 2;
	}
	if (strcmp(format, "table") && strcmp(format, "json")) {
		usage_error("-o must be table or json, got \"%s\"", format);
		return 2;
	}
	if (count > 0 && watch <= 0)
		watch = 1; /* --count alone repeats at the default interval */
	json_t *prev = NULL;
	struct timespec last = { 0, 0 };
	int rc = 0;
	for (long iter = 0; count < 0 || iter < count; iter++) {
		char err[512] = "";
		json_t *resp = fg_ctl_call(path, "{\"command\":\"status\"}", err, sizeof(err));
		json_t *st = fg_ctl_result(resp, err, sizeof(err));
		if (!st) {
			fprintf(stderr, "fairgatectl: %s\n", err);
			json_decref(resp);
			rc = 1;
			break;
		}
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		double dt = iter ? (double)(now.tv_sec - last.tv_sec) + (double)(now.tv_nsec - last.tv_nsec) / 1e9 : 0;
		last = now;
		if (!strcmp(format, "json")) {
			json_dumpf(st, stdout, JSON_INDENT(2));
			printf("\n");
		} else {
			if (watch > 0 && isatty(STDOUT_FILENO))
				printf("\033[H\033[2J"); /* redraw in place on a terminal */
			else if (watch > 0 && iter)
				printf("\n");
			print_table(st, prev, dt, &o);
		}
		fflush(stdout);
		json_incref(st);
		json_decref(prev);
		prev = st;
		json_decref(resp);
		if (watch <= 0 || (count > 0 && iter + 1 >= count))
			break;
		struct timespec ts = { (time_t)watch, (long)((watch - (double)(time_t)watch) * 1e9) };
		nanosleep(&ts, NULL);
	}
	json_decref(prev);
	return rc;
}
