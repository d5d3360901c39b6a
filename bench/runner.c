/* SPDX-License-Identifier: Apache-2.0 */
/*
 * runner — `fairgate-bench run SCENARIO.yaml`: runs a scenario twice (with
 * its configuration, then with the baseline without fairness), each time
 * starting the emulated backends, fairgate and one loadgen process per flow
 * step on loopback, sampling fairgate's `status` over the control socket
 * every 100 ms, firing the events, and stopping everything it started
 * (process groups, waitpid) at the end, on an error and on SIGINT/SIGTERM.
 * Then report.c writes the report.  In DPDK mode (--io dpdk) fairgate drives
 * a net_tap port inside a network namespace the runner creates for the run
 * (backends and loadgens run there, on the tap's kernel side) and removes.
 *
 * Thread contract: single-threaded; children are separate processes.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "clock.h"
#include "ctlclient.h"
#include "readfile.h"
#include "report.h"
#include "runseries.h"
#include "scenario.h"

#define MAX_LOADGENS (FG_SCN_MAX_FLOWS * FG_SCN_MAX_STEPS)
#define LINE_MAX_LEN (1u << 20)  /* a result line with its histogram */
#define START_WAIT_NS 10000000000LL
#define STOP_GRACE_NS 2000000000LL
/* DPDK mode: TEST-NET-1 addresses, only inside the run's own namespace. */
#define DPDK_FG_IP "192.0.2.2"
#define DPDK_HOST_IP "192.0.2.1"
#define DPDK_TAP "fgtap0"
#define DPDK_LISTEN_PORT 7400
#define DPDK_BACKEND_PORT 7501

struct child {
	pid_t pid;  /* 0: not running */
	bool paused;
};

struct loadgen {
	struct child c;
	int fd;          /* its stdout; -1 once closed */
	char *buf;
	size_t len;
	int64_t offset_ns;
	double step_s;
};

struct run {
	const struct fg_scenario *scn;
	const char *dir, *name, *self, *fairgate;
	bool baseline, dpdk;
	char netns[48];      /* DPDK mode: the run's namespace; "" in socket mode */
	const char *host_ip; /* where backends and loadgens are: loopback, or the tap's kernel side */
	const char *fg_ip;   /* where fairgate listens */
	struct fg_series *series;
	struct child backends[FG_SCN_MAX_BACKENDS];
	uint16_t ports[FG_SCN_MAX_BACKENDS];
	/* What set-backend events made of each backend so far (unset, 0: the
	 * scenario's), kept for a restart. */
	bool backend_service_set[FG_SCN_MAX_BACKENDS];
	int64_t backend_service_ns[FG_SCN_MAX_BACKENDS];
	unsigned backend_capacity[FG_SCN_MAX_BACKENDS];
	struct child daemon;
	uint16_t listen_port;
	char sock[PATH_MAX], config[PATH_MAX];
	struct loadgen lg[MAX_LOADGENS];
	bool step_started[FG_SCN_MAX_FLOWS][FG_SCN_MAX_STEPS];
	unsigned n_lg;
	int loadgen_usage_error; /* a loadgen refused its arguments: the run cannot measure */
};

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "\nfairgate-bench run: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	return -1;
}

static uint16_t free_port(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	uint16_t port = 0;
	if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) && !getsockname(fd, (struct sockaddr *)&a, &len))
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* A child in its own process group (so a terminal's Ctrl-C reaches only the
 * runner, which stops it) that dies with the runner; stdout to out_fd or the
 * log, stderr to the log. */
static pid_t spawn(char *const argv[], int out_fd, const char *log)
{
	pid_t pid = fork();
	if (pid)
		return pid;
	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	int lfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (lfd >= 0) {
		dup2(out_fd >= 0 ? out_fd : lfd, 1);
		dup2(lfd, 2);
	}
	int nul = open("/dev/null", O_RDONLY);
	if (nul >= 0)
		dup2(nul, 0);
	execvp(argv[0], argv);
	fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/* argv run inside the run's namespace (ip netns exec execs it: same pid). */
static pid_t spawn_in(const struct run *r, char *const argv[], int out_fd, const char *log)
{
	if (!r->netns[0])
		return spawn(argv, out_fd, log);
	char *wrapped[64];
	size_t n = 0;
	wrapped[n++] = "ip";
	wrapped[n++] = "netns";
	wrapped[n++] = "exec";
	wrapped[n++] = (char *)r->netns;
	for (size_t i = 0; argv[i] && n < 63; i++)
		wrapped[n++] = argv[i];
	wrapped[n] = NULL;
	return spawn(wrapped, out_fd, log);
}

/* Run a short command to its end; 0 when it exits 0. */
static int run_cmd(char *const argv[])
{
	pid_t pid = spawn(argv, -1, "/dev/null");
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Stop a child and its group: SIGTERM, then SIGKILL after the grace; reaped. */
static void stop_child(struct child *c, int sig)
{
	if (!c->pid)
		return;
	if (c->paused)
		kill(-c->pid, SIGCONT);
	kill(-c->pid, sig);
	uint64_t until = fg_now_ns() + STOP_GRACE_NS;
	while (waitpid(c->pid, NULL, WNOHANG) == 0) {
		if (fg_now_ns() > until) {
			kill(-c->pid, SIGKILL);
			waitpid(c->pid, NULL, 0);
			break;
		}
		usleep(10000);
	}
	kill(-c->pid, SIGKILL); /* anything it left in its group */
	c->pid = 0;
	c->paused = false;
}

static bool exited(struct child *c)
{
	if (c->pid && waitpid(c->pid, NULL, WNOHANG) == c->pid) {
		kill(-c->pid, SIGKILL);
		c->pid = 0;
		return true;
	}
	return !c->pid;
}

static void stop_all(struct run *r)
{
	for (unsigned i = 0; i < r->n_lg; i++) {
		stop_child(&r->lg[i].c, SIGTERM);
		if (r->lg[i].fd >= 0)
			close(r->lg[i].fd);
		r->lg[i].fd = -1;
		free(r->lg[i].buf);
		r->lg[i].buf = NULL;
	}
	stop_child(&r->daemon, SIGTERM);
	for (unsigned i = 0; i < r->scn->n_backends; i++)
		stop_child(&r->backends[i], SIGTERM);
	unlink(r->sock);
	if (r->netns[0]) {
		char *del[] = { "ip", "netns", "del", r->netns, NULL };
		if (run_cmd(del))
			fprintf(stderr, "fairgate-bench run: could not remove network namespace %s\n", r->netns);
		r->netns[0] = 0;
	}
}

static void logpath(const struct run *r, char *buf, size_t len, const char *what)
{
	snprintf(buf, len, "%s/logs/%s-%s.log", r->dir, r->name, what);
}

/* Where the runner writes backend i's live changes (set-backend). */
static void control_path(const struct run *r, unsigned i, char *buf, size_t len)
{
	snprintf(buf, len, "%s/logs/%s-backend-%u.control", r->dir, r->name, i);
}

/* Backend i's changes so far, in its control file (backend.c --control:
 * read at its start, and on SIGHUP).  0, or -1 (said). */
static int write_control(const struct run *r, unsigned i)
{
	char path[PATH_MAX + 64], text[96] = "";
	control_path(r, i, path, sizeof(path));
	int n = 0;
	if (r->backend_service_set[i])
		n += snprintf(text, sizeof(text), "serviceTime=%lldns ", (long long)r->backend_service_ns[i]);
	if (r->backend_capacity[i])
		snprintf(text + n, sizeof(text) - (size_t)n, "capacity=%u", r->backend_capacity[i]);
	FILE *f = fopen(path, "w");
	if (!f)
		return fail("cannot write %s: %s", path, strerror(errno));
	bool ok = fprintf(f, "%s\n", text) > 0;
	if (fclose(f) || !ok)
		return fail("cannot write %s", path);
	return 0;
}

static int start_backend(struct run *r, unsigned i)
{
	const struct fg_scenario *s = r->scn;
	char listen[32], workers[16], service[32], sigma[32], log[PATH_MAX + 64], what[32], control[PATH_MAX + 64];
	snprintf(listen, sizeof(listen), "%s:%u", r->host_ip, r->ports[i]);
	snprintf(workers, sizeof(workers), "%u", r->backend_capacity[i] ? r->backend_capacity[i] : s->capacity);
	/* The scenario's service time: request-carried ones are scaled against
	 * it when a set-backend changed it (backend.c). */
	snprintf(service, sizeof(service), "%lldus", (long long)(s->service_ns / 1000));
	snprintf(sigma, sizeof(sigma), "%g", s->sigma);
	snprintf(what, sizeof(what), "backend-%u", i);
	logpath(r, log, sizeof(log), what);
	control_path(r, i, control, sizeof(control));
	/* Restarted after a set-backend: it starts as it was; else no file
	 * (one from an earlier run would change it). */
	if (r->backend_service_set[i] || r->backend_capacity[i] ? write_control(r, i) : (unlink(control), 0))
		return -1;
	const char *dist = s->dist == FG_SCN_EXPONENTIAL ? "exponential" : s->dist == FG_SCN_LOGNORMAL ? "log-normal" : "fixed";
	char *argv[] = { (char *)r->self, "backend", "--listen", listen, "--workers", workers, "--service-time", service,
			 "--distribution", (char *)dist, "--sigma", sigma, "--control", control, NULL };
	r->backends[i].pid = spawn_in(r, argv, -1, log);
	return r->backends[i].pid > 0 ? 0 : fail("cannot fork: %s", strerror(errno));
}

/* The baseline: one level, one queue, hand 1 (FIFO), every request
 * classified to it, nearly all the server's seats (catch-all keeps its 5
 * shares' worth, as the mandatory objects require). */
static json_t *baseline_objects(void)
{
	return json_pack("[{s:s, s:s, s:{s:s}, s:{s:s, s:{s:i, s:{s:s, s:{s:i, s:i, s:i}}}}},"
			 " {s:s, s:s, s:{s:s}, s:{s:{s:s}, s:i, s:{s:s}, s:[{s:[{s:s, s:{s:s}}], s:[{s:[s], s:[s], s:[s], s:b, s:[s]}],"
			 " s:[{s:[s], s:[s]}]}]}}]",
		"apiVersion", "flowcontrol.apiserver.k8s.io/v1", "kind", "PriorityLevelConfiguration", "metadata", "name",
		"baseline-fifo", "spec", "type", "Limited", "limited", "nominalConcurrencyShares", 1000, "limitResponse",
		"type", "Queue", "queuing", "queues", 1, "handSize", 1, "queueLengthLimit", 1000,
		"apiVersion", "flowcontrol.apiserver.k8s.io/v1", "kind", "FlowSchema", "metadata", "name", "baseline-all",
		"spec", "priorityLevelConfiguration", "name", "baseline-fifo", "matchingPrecedence", 2,
		"distinguisherMethod", "type", "ByUser", "rules", "subjects", "kind", "Group", "group", "name", "*",
		"resourceRules", "verbs", "*", "apiGroups", "*", "resources", "*", "clusterScope", 1, "namespaces", "*",
		"nonResourceRules", "verbs", "*", "nonResourceURLs", "*");
}

static int write_config(struct run *r)
{
	json_t *items = json_array();
	bool fifo = r->baseline && !r->scn->baseline_settings;
	if (fifo) {
		json_t *fifo = baseline_objects();
		json_array_extend(items, fifo); /* extend copies the references: ours still to drop */
		json_decref(fifo);
	} else if (r->scn->objects_text) {
		json_t *list = json_loads(r->scn->objects_text, 0, NULL);
		json_array_extend(items, json_object_get(list, "items"));
		json_decref(list);
	}
	json_t *settings = r->baseline && !fifo ? r->scn->baseline_settings : r->scn->settings;
	json_array_append_new(items, json_pack("{s:s, s:s, s:O}", "apiVersion", "fairgate.dev/v1alpha1", "kind",
					       "FairgateSettings", "spec", settings));
	json_t *doc = json_pack("{s:s, s:s, s:o}", "apiVersion", "v1", "kind", "List", "items", items);
	snprintf(r->config, sizeof(r->config), "%s/logs/%s-fairgate.json", r->dir, r->name);
	int rc = json_dump_file(doc, r->config, JSON_INDENT(2));
	json_decref(doc);
	return rc ? fail("cannot write %s", r->config) : 0;
}

static void print_log_tail(const char *log)
{
	FILE *f = fopen(log, "r");
	if (!f)
		return;
	char line[512];
	fprintf(stderr, "--- %s:\n", log);
	while (fgets(line, sizeof(line), f))
		fputs(line, stderr);
	fclose(f);
}

static int start_daemon(struct run *r)
{
	const struct fg_scenario *s = r->scn;
	char listen[32], log[PATH_MAX + 64], backends[FG_SCN_MAX_BACKENDS][48], trusted[32], prefix[64], vdev[64];
	char *argv[40 + 2 * FG_SCN_MAX_BACKENDS];
	int n = 0;
	if (write_config(r))
		return -1;
	r->listen_port = r->dpdk ? DPDK_LISTEN_PORT : free_port();
	snprintf(listen, sizeof(listen), "%s:%u", r->fg_ip, r->listen_port);
	snprintf(r->sock, sizeof(r->sock), "/tmp/fgrun-%d-%s.sock", (int)getpid(), r->name);
	unlink(r->sock);
	logpath(r, log, sizeof(log), "fairgate");
	argv[n++] = (char *)r->fairgate;
	argv[n++] = "--config";
	argv[n++] = r->config;
	argv[n++] = "--listen";
	argv[n++] = listen;
	argv[n++] = "--control-socket";
	argv[n++] = r->sock;
	argv[n++] = "--http";
	argv[n++] = "off";
	for (unsigned i = 0; i < s->n_backends; i++) {
		/* What fairgate is told (backends.seats; none: 0), not what they take. */
		if (s->seats)
			snprintf(backends[i], sizeof(backends[i]), "%s:%u,seats=%u", r->host_ip, r->ports[i], s->seats);
		else
			snprintf(backends[i], sizeof(backends[i]), "%s:%u", r->host_ip, r->ports[i]);
		argv[n++] = "--backend";
		argv[n++] = backends[i];
	}
	if (r->dpdk) {
		/* One worker on lcore 0; the namespace's side of the tap stands for
		 * a trusted front tier (identities believed, no cookie). */
		snprintf(trusted, sizeof(trusted), "%s/32", DPDK_HOST_IP);
		snprintf(prefix, sizeof(prefix), "--file-prefix=%s", r->netns);
		snprintf(vdev, sizeof(vdev), "--vdev=net_tap0,iface=%s", DPDK_TAP);
		char *dpdk[] = { "--io", "dpdk", "--trusted-source", trusted, "--", "--no-huge", "-m", "512", "--no-pci",
				 "--no-shconf", prefix, "-l", "0", vdev, "--log-level=lib.eal:warning" };
		for (size_t i = 0; i < sizeof(dpdk) / sizeof(dpdk[0]); i++)
			argv[n++] = dpdk[i];
	}
	argv[n] = NULL;
	r->daemon.pid = spawn_in(r, argv, -1, log);
	if (r->daemon.pid < 0)
		return fail("cannot fork: %s", strerror(errno));
	uint64_t until = fg_now_ns() + START_WAIT_NS;
	char err[256];
	while (fg_now_ns() < until && !fg_bench_stop) {
		if (exited(&r->daemon)) {
			print_log_tail(log);
			return fail("%s: fairgate exited at start (its log is above)", r->name);
		}
		for (unsigned i = 0; i < s->n_backends; i++)
			if (r->backends[i].pid && exited(&r->backends[i])) {
				char blog[PATH_MAX + 64], what[32];
				snprintf(what, sizeof(what), "backend-%u", i);
				logpath(r, blog, sizeof(blog), what);
				print_log_tail(blog);
				return fail("%s: backend %u (%s:%u) exited at start (its log is above)", r->name, i,
					    r->host_ip, r->ports[i]);
			}
		json_t *v = fg_ctl_call(r->sock, "{\"command\":\"version\"}", err, sizeof(err));
		if (v) {
			json_decref(v);
			return 0;
		}
		usleep(20000);
	}
	return fail("%s: fairgate did not answer on %s within 10 s", r->name, r->sock);
}

/* Where fairgate puts each flow: its level and its flow's name in status. */
static int explain_flows(struct run *r)
{
	for (unsigned i = 0; i < r->scn->n_flows; i++) {
		const struct fg_scn_flow *f = &r->scn->flows[i];
		json_t *req = json_pack("{s:s}", "user", f->user), *groups = json_array(), *resp = NULL;
		for (unsigned g = 0; g < f->n_groups; g++)
			json_array_append_new(groups, json_string(f->groups[g]));
		json_object_set_new(req, "groups", groups);
		const char *keys[] = { "namespace", "verb", "apiGroup", "resource", "subresource", "path" };
		const char *vals[] = { f->ns, f->verb, f->api_group, f->path ? NULL : f->resource, f->subresource, f->path };
		for (size_t k = 0; k < 6; k++)
			if (vals[k])
				json_object_set_new(req, keys[k], json_string(vals[k]));
		json_t *res = fg_ctl_request(r->sock, json_pack("{s:s, s:o}", "command", "explain", "request", req), &resp);
		if (!res) {
			json_decref(resp);
			return fail("%s: explain of flow %s failed", r->name, f->name);
		}
		struct fg_series_flow *sf = &r->series->flows[i];
		const char *schema = json_string_value(json_object_get(res, "flowSchema"));
		const char *dist = json_string_value(json_object_get(res, "distinguisher"));
		const char *level = json_string_value(json_object_get(res, "priorityLevel"));
		const char *type = json_string_value(json_object_get(res, "priorityLevelType"));
		snprintf(sf->level, sizeof(sf->level), "%s", level ? level : "?");
		if (dist && *dist)
			snprintf(sf->distinguisher, sizeof(sf->distinguisher), "%s/%s", schema ? schema : "?", dist);
		else
			snprintf(sf->distinguisher, sizeof(sf->distinguisher), "%s", schema ? schema : "?");
		json_t *w = json_object_get(res, "flowWeight");
		sf->weight = json_is_number(w) && json_number_value(w) > 0 ? json_number_value(w) : 1.0;
		sf->exempt = type && !strcasecmp(type, "Exempt");
		json_decref(resp);
	}
	fg_series_mark_shared(r->series);
	return 0;
}

static int start_step(struct run *r, unsigned fi, unsigned si, int64_t elapsed_ns)
{
	const struct fg_scn_flow *f = &r->scn->flows[fi];
	const struct fg_scn_step *st = &f->steps[si];
	char spec[2048], target[32], duration[32], timeout[32], log[PATH_MAX + 64], what[192];
	int n = snprintf(spec, sizeof(spec), "name=%s,user=%s,verb=%s,seats=%u", f->name, f->user, f->verb, f->width);
	const char *keys[] = { "namespace", "api-group", "resource", "subresource", "path" };
	const char *vals[] = { f->ns, f->api_group, f->path ? NULL : f->resource, f->subresource, f->path };
	for (size_t k = 0; k < 5; k++)
		if (vals[k])
			n += snprintf(spec + n, sizeof(spec) - (size_t)n, ",%s=%s", keys[k], vals[k]);
	for (unsigned g = 0; g < f->n_groups; g++)
		n += snprintf(spec + n, sizeof(spec) - (size_t)n, "%s%s", g ? "+" : ",groups=", f->groups[g]);
	if (st->threads)
		n += snprintf(spec + n, sizeof(spec) - (size_t)n, ",threads=%u", st->threads);
	else
		n += snprintf(spec + n, sizeof(spec) - (size_t)n, ",rate=%.3f", st->rate);
	if (!st->threads && f->constant)
		n += snprintf(spec + n, sizeof(spec) - (size_t)n, ",arrivals=constant");
	if (f->retry_after >= 0)
		n += snprintf(spec + n, sizeof(spec) - (size_t)n, ",retry-after=%s", f->retry_after ? "on" : "off");
	if (f->service_ns > 0)
		n += snprintf(spec + n, sizeof(spec) - (size_t)n, ",service=%lldus", (long long)(f->service_ns / 1000));
	if ((size_t)n >= sizeof(spec))
		return fail("flow %s: its loadgen spec is too long", f->name);
	int64_t len_ns = st->stop_ns - (elapsed_ns > st->start_ns ? elapsed_ns : st->start_ns);
	if (len_ns < FG_SERIES_BIN_NS)
		return 0; /* started too late to measure anything */
	snprintf(target, sizeof(target), "%s:%u", r->fg_ip, r->listen_port);
	snprintf(duration, sizeof(duration), "%lldms", (long long)(len_ns / 1000000));
	snprintf(timeout, sizeof(timeout), "%lldms", (long long)(r->scn->timeout_ns / 1000000));
	snprintf(what, sizeof(what), "loadgen-%s-%u", f->name, si);
	logpath(r, log, sizeof(log), what);
	char *argv[] = { (char *)r->self, "loadgen", "--target", target, "--duration", duration, "--timeout", timeout,
			 "--json", "--interval", "100ms", "--flow", spec, NULL };
	int fds[2];
	if (r->n_lg == MAX_LOADGENS || pipe2(fds, O_CLOEXEC))
		return fail("cannot start loadgen for %s", f->name);
	struct loadgen *lg = &r->lg[r->n_lg];
	*lg = (struct loadgen){ .fd = fds[0], .buf = malloc(LINE_MAX_LEN), .offset_ns = elapsed_ns,
				.step_s = (double)len_ns / 1e9 };
	lg->c.pid = spawn_in(r, argv, fds[1], log);
	close(fds[1]);
	if (lg->c.pid < 0 || !lg->buf) {
		close(fds[0]);
		free(lg->buf);
		return fail("cannot start loadgen for %s", f->name);
	}
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	r->n_lg++;
	return 0;
}

/* Read what a loadgen wrote; each whole line goes to the series. */
static void drain(struct run *r, struct loadgen *lg)
{
	for (;;) {
		if (lg->len == LINE_MAX_LEN)
			lg->len = 0; /* a line beyond the bound: dropped */
		ssize_t n = read(lg->fd, lg->buf + lg->len, LINE_MAX_LEN - lg->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0 || errno != EAGAIN) {
				close(lg->fd);
				lg->fd = -1;
				int st = 0;
				/* Exit 2 is loadgen's usage error (3, nothing answered, is a result). */
				if (lg->c.pid && waitpid(lg->c.pid, &st, 0) == lg->c.pid && WIFEXITED(st) &&
				    WEXITSTATUS(st) == 2)
					r->loadgen_usage_error = 1;
				lg->c.pid = 0;
			}
			return;
		}
		lg->len += (size_t)n;
		char *start = lg->buf, *nl;
		while ((nl = memchr(start, '\n', lg->len - (size_t)(start - lg->buf)))) {
			if (nl > start)
				fg_series_loadgen_line(r->series, start, (size_t)(nl - start), lg->offset_ns, lg->step_s);
			start = nl + 1;
		}
		lg->len -= (size_t)(start - lg->buf);
		memmove(lg->buf, start, lg->len);
	}
}

/* Wait for loadgen output until `until` (ns, monotonic). */
static void pump(struct run *r, uint64_t until)
{
	struct pollfd pfd[MAX_LOADGENS];
	unsigned idx[MAX_LOADGENS], n = 0;
	for (unsigned i = 0; i < r->n_lg; i++)
		if (r->lg[i].fd >= 0) {
			pfd[n] = (struct pollfd){ .fd = r->lg[i].fd, .events = POLLIN };
			idx[n++] = i;
		}
	uint64_t now = fg_now_ns();
	int ms = until > now ? (int)((until - now + 999999) / 1000000) : 0;
	if (!n) {
		if (ms)
			usleep((useconds_t)ms * 1000);
		return;
	}
	if (poll(pfd, n, ms) <= 0)
		return;
	for (unsigned i = 0; i < n; i++)
		if (pfd[i].revents)
			drain(r, &r->lg[idx[i]]);
}

static void fire(struct run *r, const struct fg_scn_event *e)
{
	struct child *b = e->action == FG_SCN_APPLY ? NULL : &r->backends[e->backend];
	switch (e->action) {
	case FG_SCN_APPLY: {
		if (r->baseline && !r->scn->baseline_settings)
			return; /* the baseline without fairness stays that */
		json_t *resp = NULL, *res = fg_ctl_request(r->sock, json_pack("{s:s, s:s}", "command", "apply", "data",
									   e->apply_text), &resp);
		if (!res)
			fprintf(stderr, "\nfairgate-bench run: %s: the apply at %.1f s was refused\n", r->name, (double)e->at_ns / 1e9);
		json_decref(resp);
		return;
	}
	case FG_SCN_KILL: stop_child(b, SIGKILL); return;
	case FG_SCN_RESTART:
		if (!b->pid)
			start_backend(r, e->backend);
		return;
	case FG_SCN_PAUSE:
		if (b->pid && !b->paused && !kill(-b->pid, SIGSTOP))
			b->paused = true;
		return;
	case FG_SCN_RESUME:
		if (b->pid && b->paused && !kill(-b->pid, SIGCONT))
			b->paused = false;
		return;
	case FG_SCN_SET_BACKEND:
		if (e->service_ns >= 0) {
			r->backend_service_set[e->backend] = true;
			r->backend_service_ns[e->backend] = e->service_ns;
		}
		if (e->capacity)
			r->backend_capacity[e->backend] = e->capacity;
		/* Taken live; a stopped backend takes it on SIGCONT. */
		if (!write_control(r, e->backend) && b->pid)
			kill(b->pid, SIGHUP);
		return;
	}
}

static void progress(const struct run *r, int64_t elapsed_ns, size_t bin, const int64_t *bounds, unsigned n_bounds)
{
	unsigned phase = 1;
	while (phase < n_bounds - 1 && bounds[phase] <= elapsed_ns)
		phase++;
	uint64_t sent = 0, responses = 0;
	for (unsigned i = 0; bin > 0 && i < r->scn->n_flows; i++) {
		sent += r->series->flows[i].bins[bin - 1].sent;
		responses += r->series->flows[i].bins[bin - 1].responses;
	}
	/* The bin before the one just ended: its interval lines have arrived. */
	fprintf(stderr, "\r%-8s phase %u/%u  %5.1f/%.1f s  %7.0f requests/s  %7.0f responses/s ", r->name, phase,
		n_bounds - 1, (double)elapsed_ns / 1e9, (double)r->scn->duration_ns / 1e9,
		(double)sent * 1e9 / FG_SERIES_BIN_NS, (double)responses * 1e9 / FG_SERIES_BIN_NS);
	fflush(stderr);
}

static int start_netns(struct run *r)
{
	snprintf(r->netns, sizeof(r->netns), "fgrun-%d-%s", (int)getpid(), r->name);
	char *add[] = { "ip", "netns", "add", r->netns, NULL };
	char *lo[] = { "ip", "netns", "exec", r->netns, "ip", "link", "set", "lo", "up", NULL };
	if (run_cmd(add)) {
		r->netns[0] = 0;
		return fail("cannot create network namespace fgrun-%d-%s (DPDK mode needs root and iproute2)",
			    (int)getpid(), r->name);
	}
	return run_cmd(lo) ? fail("cannot set lo up in %s", r->netns) : 0;
}

/* The tap fairgate's net_tap port created: its kernel side gets the backends'
 * and loadgens' address. */
static int tap_up(struct run *r)
{
	char *show[] = { "ip", "netns", "exec", r->netns, "ip", "link", "show", DPDK_TAP, NULL };
	char *addr[] = { "ip", "netns", "exec", r->netns, "ip", "addr", "add", DPDK_HOST_IP "/24", "dev", DPDK_TAP, NULL };
	char *up[] = { "ip", "netns", "exec", r->netns, "ip", "link", "set", DPDK_TAP, "up", NULL };
	uint64_t until = fg_now_ns() + START_WAIT_NS;
	while (run_cmd(show))
		if (fg_now_ns() > until || fg_bench_stop)
			return fail("%s: fairgate's tap %s did not appear in %s", r->name, DPDK_TAP, r->netns);
		else
			usleep(50000);
	return run_cmd(addr) || run_cmd(up) ? fail("%s: cannot configure %s", r->name, DPDK_TAP) : 0;
}

static int run_once(struct run *r)
{
	const struct fg_scenario *s = r->scn;
	for (unsigned i = 0; i < s->n_backends; i++) {
		r->ports[i] = s->ports[i] ? s->ports[i] : r->dpdk ? (uint16_t)(DPDK_BACKEND_PORT + i) : free_port();
		if (!r->ports[i])
			return fail("no free port for a backend");
	}
	if (r->dpdk) {
		/* The backends bind the tap's kernel side: it exists once fairgate runs. */
		if (start_netns(r) || start_daemon(r) || tap_up(r))
			return -1;
		for (unsigned i = 0; i < s->n_backends; i++)
			if (start_backend(r, i))
				return -1;
		usleep(200000);
		for (unsigned i = 0; i < s->n_backends; i++)
			if (exited(&r->backends[i]))
				return fail("%s: backend %u (%s:%u) exited at start (logs/%s-backend-%u.log)", r->name, i,
					    r->host_ip, r->ports[i], r->name, i);
	} else {
		for (unsigned i = 0; i < s->n_backends; i++)
			if (start_backend(r, i))
				return -1;
		if (start_daemon(r))
			return -1;
	}
	if (explain_flows(r))
		return -1;
	int64_t bounds[FG_SCN_MAX_PHASES];
	unsigned n_bounds = fg_scn_phases(s, bounds, FG_SCN_MAX_PHASES);
	uint64_t t0 = fg_now_ns();
	unsigned next_event = 0;
	for (size_t bin = 0; bin < r->series->n_bins && !fg_bench_stop; bin++) {
		int64_t elapsed = (int64_t)(fg_now_ns() - t0);
		for (unsigned fi = 0; fi < s->n_flows; fi++)
			for (unsigned si = 0; si < s->flows[fi].n_steps; si++)
				if (!r->step_started[fi][si] && s->flows[fi].steps[si].start_ns <= elapsed) {
					r->step_started[fi][si] = true;
					if (start_step(r, fi, si, elapsed))
						return -1;
				}
		while (next_event < s->n_events && s->events[next_event].at_ns <= elapsed)
			fire(r, &s->events[next_event++]);
		uint64_t tick = t0 + (uint64_t)(bin + 1) * FG_SERIES_BIN_NS;
		while (fg_now_ns() < tick && !fg_bench_stop)
			pump(r, tick);
		char err[256];
		json_t *resp = fg_ctl_call(r->sock, "{\"command\":\"status\"}", err, sizeof(err));
		json_t *st = resp ? json_object_get(resp, "result") : NULL;
		if (st)
			fg_series_status(r->series, bin, st);
		json_decref(resp);
		if (exited(&r->daemon))
			return fail("%s: fairgate exited mid-run (logs/%s-fairgate.log)", r->name, r->name);
		if (r->loadgen_usage_error)
			return fail("%s: loadgen refused its arguments (logs/%s-loadgen-*.log): it needs --json "
				    "--interval lines (docs/bench.md, \"run\")", r->name, r->name);
		progress(r, (int64_t)(fg_now_ns() - t0), bin, bounds, n_bounds);
	}
	/* The loadgens finish their steps and wait at most `timeout` for answers. */
	uint64_t until = fg_now_ns() + (uint64_t)s->timeout_ns + STOP_GRACE_NS;
	for (bool open = true; open && !fg_bench_stop && fg_now_ns() < until;) {
		pump(r, fg_now_ns() + FG_SERIES_BIN_NS);
		open = false;
		for (unsigned i = 0; i < r->n_lg; i++)
			open |= r->lg[i].fd >= 0;
	}
	fprintf(stderr, "\n");
	return fg_bench_stop ? fail("interrupted: everything started was stopped") : 0;
}

static int make_dirs(const char *dir)
{
	char sub[PATH_MAX];
	const char *subs[] = { "", "/logs", "/plots", "/data" };
	for (size_t i = 0; i < 4; i++) {
		snprintf(sub, sizeof(sub), "%s%s", dir, subs[i]);
		if (mkdir(sub, 0755) && errno != EEXIST)
			return fail("cannot create %s: %s", sub, strerror(errno));
	}
	return 0;
}

static const char *find_fairgate(const char *self, char *buf, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink(self, exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = 0;
			snprintf(buf, len, "%s/../dataplane/fairgate", exe);
			if (!access(buf, X_OK))
				return buf;
		}
	}
	return "fairgate"; /* installed: on PATH */
}

static void usage(FILE *f)
{
	fprintf(f, "usage: fairgate-bench run SCENARIO.yaml [--out DIR] [--io socket|dpdk] [--fairgate PATH]\n"
		   "  --out DIR        where the report goes (default ./fairgate-report-NAME-YYYYmmdd-HHMMSS)\n"
		   "  --io MODE        fairgate's I/O mode: socket (default; loopback) or dpdk (a net_tap\n"
		   "                   port in a network namespace the runner creates and removes)\n"
		   "  --fairgate PATH  the daemon (default: the build tree's, else fairgate on PATH)\n"
		   "Runs the scenario with its configuration and with a baseline without fairness,\n"
		   "then writes DIR/report.json, DIR/report.md and DIR/plots (docs/bench.md, \"run\").\n");
}

int fg_bench_run(int argc, char **argv)
{
	const char *out = NULL, *fairgate = NULL;
	bool dpdk = false;
	static const struct option opts[] = { { "out", required_argument, 0, 'o' }, { "io", required_argument, 0, 'i' },
		{ "fairgate", required_argument, 0, 'f' }, { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 } };
	int opt;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'o': out = optarg; break;
		case 'f': fairgate = optarg; break;
		case 'i':
			if (strcmp(optarg, "socket") && strcmp(optarg, "dpdk")) {
				fprintf(stderr, "fairgate-bench run: --io must be socket or dpdk\n");
				return 2;
			}
			dpdk = !strcmp(optarg, "dpdk");
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	size_t len;
	char *buf = NULL;
	int rrc = fg_read_file(argv[optind], &buf, &len);
	if (rrc) {
		fprintf(stderr, "fairgate-bench run: %s: %s\n", argv[optind], fg_read_file_strerror(rrc));
		return 2;
	}
	char err[1024];
	struct fg_scenario *scn = fg_scenario_load((const uint8_t *)buf, len, err, sizeof(err));
	free(buf);
	if (!scn) {
		fprintf(stderr, "fairgate-bench run: %s: %s\n", argv[optind], err);
		return 2;
	}
	char dir[PATH_MAX], fgpath[PATH_MAX];
	if (!out) {
		char stamp[32];
		time_t now = time(NULL);
		strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", localtime(&now));
		snprintf(dir, sizeof(dir), "fairgate-report-%s-%s", scn->name, stamp);
		out = dir;
	}
	if (!fairgate)
		fairgate = find_fairgate("/proc/self/exe", fgpath, sizeof(fgpath));
	int rc = make_dirs(out) ? 1 : 0;
	fg_bench_install_signals();
	signal(SIGPIPE, SIG_IGN);
	struct fg_series *series[2] = { NULL, NULL };
	static const char *const names[2] = { "fairgate", "baseline" };
	for (int k = 0; k < 2 && !rc; k++) {
		struct run *r = calloc(1, sizeof(*r));
		series[k] = fg_series_new(scn, names[k]);
		if (!r || !series[k]) {
			free(r);
			rc = 1;
			break;
		}
		*r = (struct run){ .scn = scn, .dir = out, .name = names[k], .self = "/proc/self/exe",
				   .fairgate = fairgate, .baseline = k == 1, .dpdk = dpdk, .series = series[k],
				   .host_ip = dpdk ? DPDK_HOST_IP : "127.0.0.1", .fg_ip = dpdk ? DPDK_FG_IP : "127.0.0.1" };
		if (dpdk && scn->ports[0]) {
			fprintf(stderr, "fairgate-bench run: backends.ports: socket mode only (DPDK mode's namespace is the run's own)\n");
			rc = 2;
			free(r);
			break;
		}
		/* Our own binary for the backends and loadgens: /proc/self/exe would
		 * name `ip`'s in DPDK mode, and a path would fail once a rebuild
		 * replaced the file; the runner's /proc entry stays its binary. */
		static char self[32];
		snprintf(self, sizeof(self), "/proc/%d/exe", (int)getpid());
		r->self = self;
		for (unsigned i = 0; i < MAX_LOADGENS; i++)
			r->lg[i].fd = -1;
		fprintf(stderr, "%s run of %s: %.0f s\n", names[k], scn->name, (double)scn->duration_ns / 1e9);
		if (run_once(r))
			rc = fg_bench_stop ? 130 : 1;
		stop_all(r);
		free(r);
	}
	if (!rc && fg_report_write(scn, series, out))
		rc = 1;
	fg_series_free(series[0]);
	fg_series_free(series[1]);
	fg_scenario_free(scn);
	return rc;
}
