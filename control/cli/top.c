/* SPDX-License-Identifier: Apache-2.0 */
/* top — the live view; see top.h. */
#include "top.h"

#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "ctlclient.h"

#define BAR_WIDTH 20
#define TOP_FLOWS 10

static volatile sig_atomic_t top_stop;

static void on_stop(int sig)
{
	(void)sig;
	top_stop = 1;
}

static long long geti(json_t *o, const char *k) { return (long long)json_integer_value(json_object_get(o, k)); }

/* The element of array arr whose key field equals name (NULL if none). */
static json_t *find(json_t *arr, const char *key, const char *name)
{
	json_t *x;
	size_t i;
	json_array_foreach(arr, i, x) {
		const char *n = json_string_value(json_object_get(x, key));
		if (n && !strcmp(n, name))
			return x;
	}
	return NULL;
}

/* Per second, from the previous sample's value of the same counter (0 on
 * the first sample or when the counter went backwards: a restart). */
static double rate(long long now, json_t *prev_obj, const char *field, double dt)
{
	if (!prev_obj || dt <= 0)
		return 0;
	long long before = geti(prev_obj, field);
	return now >= before ? (double)(now - before) / dt : 0;
}

struct flow_rate {
	double rps;
	const char *level, *flow;
	long long waiting, executing;
};

static int by_rate(const void *a, const void *b)
{
	double x = ((const struct flow_rate *)a)->rps, y = ((const struct flow_rate *)b)->rps;
	return x < y ? 1 : x > y ? -1 : 0;
}

/* The key of a flow row across samples: worker, level, flow. */
static void flow_key(json_t *f, char *buf, size_t cap)
{
	snprintf(buf, cap, "%lld/%s/%s", geti(f, "worker"), json_string_value(json_object_get(f, "priorityLevel")),
		 json_string_value(json_object_get(f, "flow")));
}

static json_t *prev_flow(json_t *prev, json_t *f)
{
	char key[256], other[256];
	flow_key(f, key, sizeof(key));
	json_t *x;
	size_t i;
	json_array_foreach(json_object_get(prev, "flows"), i, x) {
		flow_key(x, other, sizeof(other));
		if (!strcmp(key, other))
			return x;
	}
	return NULL;
}

/* Lines printed so far on this screen: stop at the terminal's height. */
struct screen {
	int rows, printed;
};

static void line(struct screen *sc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(struct screen *sc, const char *fmt, ...)
{
	if (sc->rows && sc->printed >= sc->rows - 1)
		return;
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\033[K\n"); /* clear the rest of the line */
	sc->printed++;
}

static void draw_screen(json_t *st, json_t *prev, double dt, double interval)
{
	struct winsize ws = { 0 };
	ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws);
	struct screen sc = { ws.ws_row, 0 };
	json_t *c = json_object_get(st, "counters"), *pc = prev ? json_object_get(prev, "counters") : NULL;
	printf("\033[H");
	line(&sc, "fairgate %s  %s %s  up %.0fs  config %lld%s", json_string_value(json_object_get(st, "version")),
	     json_string_value(json_object_get(st, "io")), json_string_value(json_object_get(st, "listen")),
	     json_real_value(json_object_get(st, "uptimeSeconds")), geti(st, "configGeneration"),
	     json_is_true(json_object_get(st, "shuttingDown")) ? "  SHUTTING DOWN" : "");
	line(&sc, "requests/s %.0f   responded/s %.0f   rejected/s %.0f   malformed/s %.0f",
	     rate(geti(c, "requestsReceived"), pc, "requestsReceived", dt), rate(geti(c, "responded"), pc, "responded", dt),
	     rate(geti(c, "rejectedTotal"), pc, "rejectedTotal", dt), rate(geti(c, "malformed"), pc, "malformed", dt));
	line(&sc, "%s", "");
	line(&sc, "%-22s %-*s %11s %8s %9s %8s", "PRIORITY LEVEL", BAR_WIDTH + 2, "SEATS", "USED/LIMIT", "WAITING",
	     "REQ/S", "REJ/S");
	json_t *lv;
	size_t i;
	json_array_foreach(json_object_get(st, "priorityLevels"), i, lv) {
		long long used = geti(lv, "seatsInUse"), limit = geti(lv, "seatLimit");
		char bar[BAR_WIDTH + 3];
		int fill = limit > 0 ? (int)((used > limit ? limit : used) * BAR_WIDTH / limit) : 0;
		bar[0] = '[';
		for (int k = 0; k < BAR_WIDTH; k++)
			bar[1 + k] = limit <= 0 ? ' ' : k < fill ? '#' : '.';
		bar[BAR_WIDTH + 1] = ']';
		bar[BAR_WIDTH + 2] = 0;
		json_t *p = prev ? find(json_object_get(prev, "priorityLevels"), "name", json_string_value(json_object_get(lv, "name")))
				 : NULL;
		char seats[24];
		if (limit > 0)
			snprintf(seats, sizeof(seats), "%lld/%lld", used, limit);
		else
			snprintf(seats, sizeof(seats), "%lld/exempt", used);
		line(&sc, "%-22.22s %s %11s %8lld %9.0f %8.0f", json_string_value(json_object_get(lv, "name")), bar, seats,
		     geti(lv, "waiting"), rate(geti(lv, "received"), p, "received", dt), rate(geti(lv, "rejected"), p, "rejected", dt));
	}
	line(&sc, "%s", "");
	char reasons[512] = "";
	size_t n = 0;
	const char *reason;
	json_t *v, *prej = pc ? json_object_get(pc, "rejected") : NULL;
	json_object_foreach(json_object_get(c, "rejected"), reason, v) {
		long long before = prej ? (long long)json_integer_value(json_object_get(prej, reason)) : 0;
		double r = prej && dt > 0 ? (double)(json_integer_value(v) - before) / dt : 0;
		if (r > 0 && n < sizeof(reasons)) /* the reasons seen in this interval */
			n += (size_t)snprintf(reasons + n, sizeof(reasons) - n, "  %s %.0f", reason, r);
	}
	line(&sc, "rejects/s by reason:%s", n ? reasons : "  none");
	line(&sc, "%s", "");
	/* The busiest flows: received per second, highest first. */
	json_t *flows = json_object_get(st, "flows");
	size_t n_flows = json_array_size(flows);
	struct flow_rate *fr = calloc(n_flows ? n_flows : 1, sizeof(*fr));
	json_t *f;
	json_array_foreach(flows, i, f) {
		if (!fr)
			break;
		fr[i] = (struct flow_rate){ rate(geti(f, "received"), prev ? prev_flow(prev, f) : NULL, "received", dt),
					    json_string_value(json_object_get(f, "priorityLevel")),
					    json_string_value(json_object_get(f, "flow")), geti(f, "waiting"),
					    geti(f, "executing") };
	}
	line(&sc, "%-22s %-40s %9s %8s %9s", "BUSIEST FLOWS", "", "REQ/S", "WAITING", "EXECUTING");
	if (fr) {
		qsort(fr, n_flows, sizeof(*fr), by_rate);
		for (size_t k = 0; k < n_flows && k < TOP_FLOWS; k++)
			line(&sc, "%-22.22s %-40.40s %9.0f %8lld %9lld", fr[k].level ? fr[k].level : "?",
			     fr[k].flow ? fr[k].flow : "?", fr[k].rps, fr[k].waiting, fr[k].executing);
	}
	free(fr);
	json_t *workers = json_object_get(st, "workers");
	line(&sc, "%s", "");
	line(&sc, "%-8s %6s %12s %12s %14s %10s", "WORKER", "BUSY", "DATAGRAMS/S", "REQUESTS/S", "ANSWERS FWD/S", "REFUSED");
	json_t *w;
	json_array_foreach(workers, i, w) {
		json_t *pw = prev ? json_array_get(json_object_get(prev, "workers"), i) : NULL;
		line(&sc, "%-8lld %5.0f%% %12.0f %12.0f %14.0f %10lld", geti(w, "worker"),
		     json_number_value(json_object_get(w, "busyRatio")) * 100,
		     rate(geti(w, "datagramsReceived"), pw, "datagramsReceived", dt),
		     rate(geti(w, "requestsReceived"), pw, "requestsReceived", dt),
		     rate(geti(w, "answersForwarded"), pw, "answersForwarded", dt),
		     geti(w, "handoffRefused"));
	}
	json_t *backends = json_object_get(st, "backendPool");
	if (json_array_size(backends)) {
		line(&sc, "%s", "");
		line(&sc, "%-24s %-8s %12s %10s %10s", "BACKEND", "STATE", "SEATS/CAP", "TIMEOUTS", "EJECTIONS");
		json_t *b;
		json_array_foreach(backends, i, b) {
			char seats[32];
			long long cap = geti(b, "capacitySeats");
			if (cap)
				snprintf(seats, sizeof(seats), "%lld/%lld", geti(b, "outstandingSeats"), cap);
			else
				snprintf(seats, sizeof(seats), "%lld/-", geti(b, "outstandingSeats"));
			line(&sc, "%-24.24s %-8s %12s %10lld %10lld", json_string_value(json_object_get(b, "address")),
			     json_string_value(json_object_get(b, "state")), seats, geti(b, "timeouts"), geti(b, "ejections"));
		}
	}
	line(&sc, "%s", "");
	line(&sc, "q quits; every %.1f s", interval);
	printf("\033[J"); /* clear below */
	fflush(stdout);
}

static void print_line(json_t *st, json_t *prev, double dt)
{
	json_t *c = json_object_get(st, "counters"), *pc = prev ? json_object_get(prev, "counters") : NULL;
	time_t now = time(NULL);
	char when[16];
	strftime(when, sizeof(when), "%H:%M:%S", localtime(&now));
	long long waiting = 0, executing = 0;
	json_t *lv;
	size_t i;
	json_array_foreach(json_object_get(st, "priorityLevels"), i, lv) {
		waiting += geti(lv, "waiting");
		executing += geti(lv, "executing");
	}
	printf("%s requests/s=%.0f rejected/s=%.0f waiting=%lld executing=%lld", when,
	       rate(geti(c, "requestsReceived"), pc, "requestsReceived", dt),
	       rate(geti(c, "rejectedTotal"), pc, "rejectedTotal", dt), waiting, executing);
	json_array_foreach(json_object_get(st, "priorityLevels"), i, lv)
		if (geti(lv, "seatsInUse") || geti(lv, "waiting"))
			printf(" %s=%lld/%lld", json_string_value(json_object_get(lv, "name")), geti(lv, "seatsInUse"),
			       geti(lv, "seatLimit"));
	printf("\n");
	fflush(stdout);
}

/* Wait up to ms for a key; true when it was q. */
static bool quit_key(int ms, bool tty)
{
	struct pollfd pfd = { STDIN_FILENO, POLLIN, 0 };
	if (!tty) {
		struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
		nanosleep(&ts, NULL); /* a signal ends it early */
		return false;
	}
	if (poll(&pfd, 1, ms) <= 0)
		return false;
	char k[16];
	ssize_t n = read(STDIN_FILENO, k, sizeof(k));
	return n > 0 && memchr(k, 'q', (size_t)n);
}

int fg_top_run(const char *sock_path, double interval_s, long count)
{
	bool tty = isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
	struct termios saved;
	struct sigaction sa = { .sa_handler = on_stop }, old_int, old_term;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	top_stop = 0;
	if (tty && tcgetattr(STDIN_FILENO, &saved) == 0) {
		struct termios raw = saved;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
		printf("\033[?1049h\033[?25l\033[2J"); /* alternate screen, no cursor */
	} else {
		tty = false;
	}
	json_t *prev_resp = NULL, *prev = NULL;
	uint64_t prev_ns = 0;
	int rc = 0;
	char err[1024];
	for (long k = 0; !top_stop && (count < 0 || k < count); k++) {
		json_t *resp = fg_ctl_call(sock_path, "{\"command\":\"status\"}", err, sizeof(err));
		json_t *st = fg_ctl_result(resp, err, sizeof(err));
		if (!st) {
			json_decref(resp);
			rc = 1;
			break;
		}
		uint64_t now = fg_now_ns();
		double dt = prev ? (double)(now - prev_ns) / 1e9 : 0;
		if (tty)
			draw_screen(st, prev, dt, interval_s);
		else
			print_line(st, prev, dt);
		json_decref(prev_resp);
		prev_resp = resp;
		prev = st;
		prev_ns = now;
		if ((count < 0 || k + 1 < count) && quit_key((int)(interval_s * 1000), tty))
			break;
	}
	json_decref(prev_resp);
	if (tty) {
		printf("\033[?25h\033[?1049l"); /* cursor back, normal screen */
		fflush(stdout);
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	if (rc)
		fprintf(stderr, "fairgatectl: top: %s\n", err);
	return rc;
}
