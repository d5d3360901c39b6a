/*
 * fairgatectl — the control CLI.  This version ships `status` and `version`;
 * docs/control.md describes the socket protocol it speaks.
 *
 * Exit status: 0 success, 1 the daemon answered with an error or could not be
 * reached, 2 usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "defs.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fairgatectl [--socket PATH] COMMAND [options]\n"
		"\n"
		"commands:\n"
		"  status [-o table|json] [--watch SECONDS] [--count N]\n"
		"                 levels, flows and counters of the running daemon;\n"
		"                 --watch repeats every SECONDS (requests/s from the deltas)\n"
		"  version        the daemon's version\n"
		"\n"
		"  --socket PATH  control socket (default %s, or $FAIRGATE_SOCKET)\n"
		"exit status: 0 ok, 1 daemon error or unreachable, 2 usage\n",
		FG_DEFAULT_CONTROL_SOCKET);
}

/* Send one request line, read one response line.  NULL + message on error. */
static json_t *call(const char *path, const char *request, char *err, size_t errlen)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		snprintf(err, errlen, "cannot reach fairgate at %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	size_t rl = strlen(request);
	if (write(fd, request, rl) != (ssize_t)rl || write(fd, "\n", 1) != 1) {
		snprintf(err, errlen, "write to %s: %s", path, strerror(errno));
		close(fd);
		return NULL;
	}
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	for (;;) {
		struct pollfd pfd = { fd, POLLIN, 0 };
		if (!buf || poll(&pfd, 1, 5000) <= 0) {
			snprintf(err, errlen, "no answer from %s", path);
			break;
		}
		ssize_t n = read(fd, buf + len, cap - len);
		if (n <= 0) {
			snprintf(err, errlen, "connection closed by %s", path);
			break;
		}
		len += (size_t)n;
		char *nl = memchr(buf, '\n', len);
		if (nl) {
			json_error_t je;
			json_t *resp = json_loadb(buf, (size_t)(nl - buf), 0, &je);
			if (!resp)
				snprintf(err, errlen, "malformed answer: %s", je.text);
			free(buf);
			close(fd);
			return resp;
		}
		if (len == cap) {
			char *nb = realloc(buf, cap *= 2);
			if (!nb)
				free(buf);
			buf = nb;
		}
	}
	free(buf);
	close(fd);
	return NULL;
}

static json_t *result_or_error(json_t *resp, char *err, size_t errlen)
{
	if (!resp)
		return NULL;
	if (!json_is_true(json_object_get(resp, "ok"))) {
		const char *e = json_string_value(json_object_get(resp, "error"));
		snprintf(err, errlen, "fairgate: %s", e ? e : "unknown error");
		return NULL;
	}
	return json_object_get(resp, "result");
}

static long long geti(json_t *o, const char *k) { return (long long)json_integer_value(json_object_get(o, k)); }

struct prev_flow { char key[160]; long long received, rejected; };

/* Print the status table; rates come from the previous sample when given. */
static void print_table(json_t *st, struct prev_flow *prev, size_t *n_prev, double dt)
{
	json_t *c = json_object_get(st, "counters");
	printf("fairgate %s  io=%s  listen=%s  up %.0fs  config gen %lld%s\n",
	       json_string_value(json_object_get(st, "version")), json_string_value(json_object_get(st, "io")),
	       json_string_value(json_object_get(st, "listen")), json_real_value(json_object_get(st, "uptimeSeconds")),
	       geti(st, "configGeneration"), json_is_true(json_object_get(st, "shuttingDown")) ? "  SHUTTING DOWN" : "");
	printf("requests %lld  responded %lld  rejected %lld  malformed %lld  unmatched responses %lld\n",
	       geti(c, "requestsReceived"), geti(c, "responded"), geti(c, "rejectedTotal"), geti(c, "malformed"),
	       geti(c, "responsesUnmatched"));
	json_t *lv;
	size_t i;
	printf("\n%-20s %8s %8s %10s %10s\n", "PRIORITY LEVEL", "SEATS", "LIMIT", "WAITING", "EXECUTING");
	json_array_foreach(json_object_get(st, "priorityLevels"), i, lv)
		printf("%-20s %8lld %8lld %10lld %10lld\n", json_string_value(json_object_get(lv, "name")),
		       geti(lv, "seatsInUse"), geti(lv, "seatLimit"), geti(lv, "waiting"), geti(lv, "executing"));
	printf("\n%-20s %-34s %9s %9s %9s %10s %10s %10s\n", "PRIORITY LEVEL", "FLOW", "REQ/S", "REJ/S",
	       "WAITING", "EXECUTING", "RESPONDED", "REJECTED");
	size_t n_new = 0;
	struct prev_flow next[256];
	json_array_foreach(json_object_get(st, "flows"), i, lv) {
		char key[160];
		const char *level = json_string_value(json_object_get(lv, "priorityLevel"));
		const char *flow = json_string_value(json_object_get(lv, "flow"));
		snprintf(key, sizeof(key), "%s/%s/%lld", level, flow, geti(lv, "worker"));
		long long recv = geti(lv, "received"), rej = geti(lv, "rejected");
		double rps = 0, jps = 0;
		for (size_t k = 0; prev && k < *n_prev; k++)
			if (!strcmp(prev[k].key, key) && dt > 0) {
				rps = (double)(recv - prev[k].received) / dt;
				jps = (double)(rej - prev[k].rejected) / dt;
			}
		if (n_new < sizeof(next) / sizeof(next[0])) {
			snprintf(next[n_new].key, sizeof(next[n_new].key), "%s", key);
			next[n_new].received = recv;
			next[n_new++].rejected = rej;
		}
		printf("%-20s %-34.34s %9.1f %9.1f %9lld %10lld %10lld %10lld\n", level, flow[0] ? flow : "(none)",
		       rps, jps, geti(lv, "waiting"), geti(lv, "executing"), geti(lv, "responded"), rej);
	}
	if (prev) {
		memcpy(prev, next, n_new * sizeof(next[0]));
		*n_prev = n_new;
	}
	json_t *rej = json_object_get(c, "rejected");
	const char *reason;
	json_t *v;
	printf("\nrejects:");
	json_object_foreach(rej, reason, v)
		printf(" %s=%lld", reason, (long long)json_integer_value(v));
	printf("\n");
}

static int cmd_status(const char *path, int argc, char **argv)
{
	const char *format = "table";
	double watch = 0;
	long count = -1;
	static const struct option opts[] = { { "output", required_argument, 0, 'o' },
		{ "watch", required_argument, 0, 'w' }, { "count", required_argument, 0, 'n' },
		{ "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 } };
	int opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "o:w:n:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'o': format = optarg; break;
		case 'w': watch = atof(optarg); break;
		case 'n': count = atol(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (strcmp(format, "table") && strcmp(format, "json")) {
		fprintf(stderr, "fairgatectl: -o must be table or json\n");
		return 2;
	}
	if (watch < 0 || (watch > 0 && watch < 0.1)) {
		fprintf(stderr, "fairgatectl: --watch must be at least 0.1 seconds\n");
		return 2;
	}
	struct prev_flow *prev = calloc(256, sizeof(*prev));
	size_t n_prev = 0;
	struct timespec last = { 0, 0 };
	int rc = 0;
	for (long iter = 0; count < 0 || iter < count; iter++) {
		char err[512] = "";
		json_t *resp = call(path, "{\"command\":\"status\"}", err, sizeof(err));
		json_t *st = result_or_error(resp, err, sizeof(err));
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
			print_table(st, prev, &n_prev, dt);
		}
		fflush(stdout);
		json_decref(resp);
		if (watch <= 0)
			break;
		struct timespec ts = { (time_t)watch, (long)((watch - (double)(time_t)watch) * 1e9) };
		nanosleep(&ts, NULL);
	}
	free(prev);
	return rc;
}

int main(int argc, char **argv)
{
	const char *path = getenv("FAIRGATE_SOCKET");
	if (!path)
		path = FG_DEFAULT_CONTROL_SOCKET;
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--socket") && i + 1 < argc)
			path = argv[++i];
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (i == argc) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[i];
	if (!strcmp(cmd, "status"))
		return cmd_status(path, argc - i, argv + i);
	if (!strcmp(cmd, "version")) {
		char err[512] = "";
		json_t *resp = call(path, "{\"command\":\"version\"}", err, sizeof(err));
		json_t *r = result_or_error(resp, err, sizeof(err));
		if (!r) {
			fprintf(stderr, "fairgatectl: %s\n", err);
			json_decref(resp);
			return 1;
		}
		printf("fairgatectl %s, fairgate %s (protocol %lld)\n", FG_VERSION,
		       json_string_value(json_object_get(r, "version")), geti(r, "protocol"));
		json_decref(resp);
		return 0;
	}
	fprintf(stderr, "fairgatectl: unknown command \"%s\"\n", cmd);
	usage(stderr);
	return 2;
}
