/* SPDX-License-Identifier: Apache-2.0 */
/*
 * backend — an emulated backend server: N worker threads share one UDP
 * socket; each takes a request, holds it for its service time (from the
 * payload, see bench.h, or the configured distribution), then answers with a
 * RESPONSE echoing the payload.  N is the backend's real concurrency.
 *
 * With --report FILE it records the most requests it had in service at once
 * (a request is in service from the moment a worker receives it to the moment
 * its answer is handed to the kernel; one waiting in the socket buffer is
 * not, so N must exceed what is measured) and writes {"max_in_service": N, "served": N} to
 * FILE every REPORT_EVERY_NS and at exit, through a temporary file renamed
 * over it, so a reader sees a whole line or the previous one.
 *
 * With --control FILE it takes a change live on SIGHUP (the runner's
 * set-backend event): FILE holds `serviceTime=DUR` and/or `capacity=N`; the
 * service time replaces the configured one, and a service time a request
 * carries is scaled by new / configured at start; the capacity is the number
 * of workers taking requests (more are started, fewer park after their
 * current request).  A file that does not parse changes nothing (said on
 * stderr).
 *
 * Thread contract: the workers update the in-service gauge, its maximum and
 * the served count with atomics, and read the service time and the active
 * worker count with relaxed loads; the main thread alone writes the report
 * and takes the control changes.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "client.h"
#include "clock.h"
#include "duration.h"

#define REPORT_EVERY_NS 100000000ull
#define REPORT_TMP_SUFFIX ".tmp"

#define MAX_WORKERS 4096u
#define PARK_NS 5000000 /* a parked worker looks again this often */
#define CONTROL_TICK_NS 10000000ull /* a control change is taken within this */

struct backend {
	int fd;
	int64_t service_ns;      /* atomic after start: --service-time, then set live */
	int64_t base_service_ns; /* --service-time at start: what request-carried times are scaled against */
	unsigned active;         /* atomic: workers taking requests; those above park */
	enum { DIST_FIXED, DIST_EXPONENTIAL, DIST_LOGNORMAL } dist;
	double sigma;          /* log-normal: the log's standard deviation; service_ns is the median */
	uint64_t deadline_ns;
	uint64_t bad;
	uint64_t served;         /* atomic: answers sent */
	uint64_t in_service;     /* atomic: requests received and not yet answered */
	uint64_t max_in_service; /* atomic: the largest in_service seen */
	pthread_mutex_t lock;
};

static void enter_service(struct backend *b)
{
	uint64_t now = __atomic_add_fetch(&b->in_service, 1, __ATOMIC_RELAXED);
	uint64_t max = __atomic_load_n(&b->max_in_service, __ATOMIC_RELAXED);
	while (now > max && !__atomic_compare_exchange_n(&b->max_in_service, &max, now, true, __ATOMIC_RELAXED,
							 __ATOMIC_RELAXED))
		;
}

/* Called just before the answer is sent: once it is, the client may send the
 * next request at once (fairgate frees the seat on the answer), and counting
 * this one out only after the send would overlap the two. */
static void leave_service(struct backend *b)
{
	__atomic_sub_fetch(&b->in_service, 1, __ATOMIC_RELAXED);
}

/* The report line, written whole to PATH.tmp then renamed over PATH. */
static int write_report(const struct backend *b, const char *path)
{
	char tmp[PATH_MAX];
	int n = snprintf(tmp, sizeof(tmp), "%s" REPORT_TMP_SUFFIX, path);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -ENAMETOOLONG;
	FILE *f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "{\"max_in_service\": %llu, \"served\": %llu}\n",
		(unsigned long long)__atomic_load_n(&b->max_in_service, __ATOMIC_RELAXED),
		(unsigned long long)__atomic_load_n(&b->served, __ATOMIC_RELAXED));
	int err = ferror(f) ? -EIO : 0;
	if (fclose(f) && !err)
		err = -errno;
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

static int64_t service_time(const struct fg_msg *m, const struct backend *b, unsigned *seed)
{
	int64_t service_ns = __atomic_load_n(&b->service_ns, __ATOMIC_RELAXED);
	if (m->payload_len >= FG_BENCH_SVC_LEN && !memcmp(m->payload, FG_BENCH_SVC_MAGIC, 4)) {
		const uint8_t *p = m->payload + 4;
		uint32_t us = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
		double ns = (double)us * 1000;
		if (service_ns != b->base_service_ns && b->base_service_ns > 0) /* slowed down or sped up live */
			ns = ns * (double)service_ns / (double)b->base_service_ns;
		return ns > 60e9 ? (int64_t)60e9 : (int64_t)ns;
	}
	double u = (rand_r(seed) + 1.0) / ((double)RAND_MAX + 2.0);
	if (b->dist == DIST_EXPONENTIAL)
		return (int64_t)(-log(u) * (double)service_ns);
	if (b->dist == DIST_LOGNORMAL) {
		/* Box-Muller: one standard normal from two uniforms. */
		double u2 = (rand_r(seed) + 1.0) / ((double)RAND_MAX + 2.0);
		double z = sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * u2);
		double ns = (double)service_ns * exp(b->sigma * z);
		return ns > 60e9 ? (int64_t)60e9 : (int64_t)ns;
	}
	return service_ns;
}

/* One worker thread: its index decides whether it takes requests. */
struct worker_arg {
	struct backend *b;
	unsigned index;
};

static volatile sig_atomic_t control_asked;

static void on_sighup(int sig)
{
	(void)sig;
	control_asked = 1;
}

/* FILE's `serviceTime=DUR capacity=N` (either, any order, whitespace
 * separated): 0, or -EINVAL with a message. */
static int read_control(const char *path, int64_t *service_ns, unsigned *capacity, char *msg, size_t msglen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(msg, msglen, "cannot read: %s", strerror(errno));
		return -EINVAL;
	}
	char text[256];
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = 0;
	bool any = false;
	for (char *save = NULL, *tok = strtok_r(text, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
		if (!strncmp(tok, "serviceTime=", 12)) {
			int64_t ns;
			if (fg_duration_parse(tok + 12, strlen(tok + 12), &ns) || ns < 0 || ns > (int64_t)(60 * FG_NS_PER_SEC)) {
				snprintf(msg, msglen, "serviceTime: a duration in [0, 60s], not %s", tok + 12);
				return -EINVAL;
			}
			*service_ns = ns;
		} else if (!strncmp(tok, "capacity=", 9)) {
			char *end;
			unsigned long v = strtoul(tok + 9, &end, 10);
			if (*end || end == tok + 9 || v < 1 || v > MAX_WORKERS) {
				snprintf(msg, msglen, "capacity: an integer in [1, %u], not %s", MAX_WORKERS, tok + 9);
				return -EINVAL;
			}
			*capacity = (unsigned)v;
		} else {
			snprintf(msg, msglen, "unknown field %.40s (serviceTime=DUR, capacity=N)", tok);
			return -EINVAL;
		}
		any = true;
	}
	if (!any) {
		snprintf(msg, msglen, "empty: serviceTime=DUR and/or capacity=N");
		return -EINVAL;
	}
	return 0;
}

static void *serve(void *arg)
{
	const struct worker_arg *wa = arg;
	struct backend *b = wa->b;
	unsigned seed = (unsigned)(uintptr_t)&seed ^ (unsigned)fg_now_ns();
	uint8_t buf[FG_PROTO_MAX_DATAGRAM];
	uint64_t bad = 0;
	while (!fg_bench_stop && (!b->deadline_ns || fg_now_ns() < b->deadline_ns)) {
		if (wa->index >= __atomic_load_n(&b->active, __ATOMIC_RELAXED)) { /* above the capacity: parked */
			struct timespec ts = { 0, PARK_NS };
			nanosleep(&ts, NULL);
			continue;
		}
		struct fg_msg m;
		struct sockaddr_in from;
		int n = fg_recv_msg(b->fd, buf, sizeof(buf), &m, &from, 200);
		if (n == -ETIMEDOUT)
			continue;
		if (n < 0 || m.hdr.type != FG_MSG_REQUEST) {
			bad++;
			continue;
		}
		enter_service(b);
		int64_t ns = service_time(&m, b, &seed);
		if (ns > 0) {
			struct timespec ts = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) };
			while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !fg_bench_stop)
				;
		}
		leave_service(b);
		fg_respond(b->fd, &m, &from, m.payload, m.payload_len);
		__atomic_add_fetch(&b->served, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_lock(&b->lock);
	b->bad += bad;
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

/* SIGHUP: FILE's change, live; returns the workers started now. */
static unsigned take_control(struct backend *b, const char *control, const char *listen, pthread_t *t,
			     struct worker_arg *args, unsigned started)
{
	int64_t service_ns = b->service_ns;
	unsigned capacity = b->active;
	char msg[160];
	if (read_control(control, &service_ns, &capacity, msg, sizeof(msg))) {
		fprintf(stderr, "fairgate-bench backend: --control %s: %s; nothing changed\n", control, msg);
		return started;
	}
	__atomic_store_n(&b->service_ns, service_ns, __ATOMIC_RELAXED);
	for (; started < capacity; started++) {
		args[started] = (struct worker_arg){ b, started };
		if (pthread_create(&t[started], NULL, serve, &args[started]))
			break;
	}
	__atomic_store_n(&b->active, capacity < started ? capacity : started, __ATOMIC_RELAXED);
	fprintf(stderr, "fairgate-bench backend: %s: service time %lld us, %u workers taking requests\n", listen,
		(long long)(service_ns / 1000), b->active);
	return started;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: fairgate-bench backend --listen ADDR:PORT [--workers N] [--service-time DUR]\n"
		   "                              [--distribution fixed|exponential|log-normal] [--sigma S]\n"
		   "                              [--duration DUR] [--report FILE]\n"
		   "  --workers N        concurrent requests served (default 4)\n"
		   "  --service-time D   used when a request carries no service time (default 10ms): the\n"
		   "                     value (fixed), the mean (exponential) or the median (log-normal)\n"
		   "  --sigma S          log-normal: the standard deviation of the log, 0..3 (default 0.5)\n"
		   "  --duration D       stop after D (default: run until SIGINT/SIGTERM)\n"
		   "  --report FILE      write {\"max_in_service\": N, \"served\": N} to FILE every 100ms and\n"
		   "                     at exit (replaced whole: a reader never sees a torn line)\n"
		   "  --control FILE     on SIGHUP, take FILE's serviceTime=DUR and/or capacity=N live\n"
		   "                     (the service time from then on, request-carried ones scaled;\n"
		   "                     the workers taking requests)\n");
}

int fg_bench_backend(int argc, char **argv)
{
	const char *listen = NULL, *report = NULL, *control = NULL;
	unsigned workers = 4;
	struct backend b = { .service_ns = 10000000, .sigma = 0.5 };
	int64_t duration = 0;
	static const struct option opts[] = {
		{ "listen", required_argument, 0, 'l' }, { "workers", required_argument, 0, 'w' },
		{ "service-time", required_argument, 0, 's' }, { "distribution", required_argument, 0, 'd' },
		{ "sigma", required_argument, 0, 'g' }, { "report", required_argument, 0, 'r' },
		{ "duration", required_argument, 0, 't' }, { "control", required_argument, 0, 'c' },
		{ "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 } };
	int opt;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'l': listen = optarg; break;
		case 'w': workers = (unsigned)atoi(optarg); break;
		case 's': b.service_ns = fg_bench_duration_arg("--service-time", optarg); break;
		case 'd':
			if (!strcmp(optarg, "fixed"))
				b.dist = DIST_FIXED;
			else if (!strcmp(optarg, "exponential"))
				b.dist = DIST_EXPONENTIAL;
			else if (!strcmp(optarg, "log-normal"))
				b.dist = DIST_LOGNORMAL;
			else {
				fprintf(stderr, "fairgate-bench backend: --distribution must be fixed, exponential or log-normal\n");
				return 2;
			}
			break;
		case 'g':
			b.sigma = atof(optarg);
			if (!(b.sigma >= 0 && b.sigma <= 3)) {
				fprintf(stderr, "fairgate-bench backend: --sigma must be in [0, 3]\n");
				return 2;
			}
			break;
		case 't': duration = fg_bench_duration_arg("--duration", optarg); break;
		case 'r':
			if (!*optarg || strlen(optarg) + strlen(REPORT_TMP_SUFFIX) >= PATH_MAX) {
				fprintf(stderr, "fairgate-bench backend: --report needs a file name under %d bytes\n",
					(int)(PATH_MAX - strlen(REPORT_TMP_SUFFIX)));
				return 2;
			}
			report = optarg;
			break;
		case 'c': control = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!listen || workers == 0 || workers > MAX_WORKERS) {
		fprintf(stderr, "fairgate-bench backend: need --listen and 1..%u --workers\n", MAX_WORKERS);
		usage(stderr);
		return 2;
	}
	/* A report that cannot be written is an error now, not a silent gap later. */
	int err = report ? write_report(&b, report) : 0;
	if (err) {
		fprintf(stderr, "fairgate-bench backend: cannot write --report %s: %s\n", report, strerror(-err));
		return 1;
	}
	b.fd = fg_udp_open(listen, NULL);
	if (b.fd < 0) {
		fprintf(stderr, "fairgate-bench backend: cannot listen on %s: %s\n", listen, strerror(-b.fd));
		return 1;
	}
	b.deadline_ns = duration ? fg_now_ns() + (uint64_t)duration : 0;
	pthread_mutex_init(&b.lock, NULL);
	b.base_service_ns = b.service_ns;
	b.active = workers;
	fg_bench_install_signals();
	if (control) {
		struct sigaction sa = { .sa_handler = on_sighup };
		sigemptyset(&sa.sa_mask);
		sigaction(SIGHUP, &sa, NULL);
	}
	static struct worker_arg args[MAX_WORKERS];
	pthread_t *t = calloc(MAX_WORKERS, sizeof(*t));
	if (!t) {
		fprintf(stderr, "fairgate-bench backend: out of memory\n");
		return 1;
	}
	unsigned started = 0;
	for (; started < workers; started++) {
		args[started] = (struct worker_arg){ &b, started };
		if (pthread_create(&t[started], NULL, serve, &args[started]))
			break;
	}
	fprintf(stderr, "fairgate-bench backend: %s, %u workers\n", listen, started);
	if (control && !access(control, F_OK)) /* restarted after a change: as it was */
		started = take_control(&b, control, listen, t, args, started);
	/* The workers stop on the same conditions; until then, the report's
	 * ticks and the control changes (taken within a tick). */
	uint64_t tick = control ? CONTROL_TICK_NS : REPORT_EVERY_NS, report_due = 0;
	while ((report || control) && !fg_bench_stop && (!b.deadline_ns || fg_now_ns() < b.deadline_ns)) {
		uint64_t next = fg_now_ns() + tick;
		if (report && fg_now_ns() >= report_due) {
			report_due = fg_now_ns() + REPORT_EVERY_NS;
			err = write_report(&b, report);
			if (err)
				fprintf(stderr, "fairgate-bench backend: --report %s: %s\n", report, strerror(-err));
		}
		if (control_asked) {
			control_asked = 0;
			started = take_control(&b, control, listen, t, args, started);
		}
		uint64_t now = fg_now_ns();
		if (b.deadline_ns && next > b.deadline_ns)
			next = b.deadline_ns;
		if (next > now) {
			struct timespec ts = { (time_t)((next - now) / 1000000000ull), (long)((next - now) % 1000000000ull) };
			nanosleep(&ts, NULL);
		}
	}
	for (unsigned i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	free(t);
	close(b.fd);
	err = report ? write_report(&b, report) : 0;
	if (err)
		fprintf(stderr, "fairgate-bench backend: --report %s: %s\n", report, strerror(-err));
	fprintf(stderr, "fairgate-bench backend: %s served %llu requests, %llu bad datagrams\n", listen,
		(unsigned long long)b.served, (unsigned long long)b.bad);
	return 0;
}
