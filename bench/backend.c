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
 * Thread contract: the workers update the in-service gauge, its maximum and
 * the served count with atomics; the main thread alone writes the report.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
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

#define REPORT_EVERY_NS 100000000ull
#define REPORT_TMP_SUFFIX ".tmp"

struct backend {
	int fd;
	int64_t service_ns;
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
	if (m->payload_len >= FG_BENCH_SVC_LEN && !memcmp(m->payload, FG_BENCH_SVC_MAGIC, 4)) {
		const uint8_t *p = m->payload + 4;
		uint32_t us = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
		return (int64_t)us * 1000;
	}
	double u = (rand_r(seed) + 1.0) / ((double)RAND_MAX + 2.0);
	if (b->dist == DIST_EXPONENTIAL)
		return (int64_t)(-log(u) * (double)b->service_ns);
	if (b->dist == DIST_LOGNORMAL) {
		/* Box-Muller: one standard normal from two uniforms. */
		double u2 = (rand_r(seed) + 1.0) / ((double)RAND_MAX + 2.0);
		double z = sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * u2);
		double ns = (double)b->service_ns * exp(b->sigma * z);
		return ns > 60e9 ? (int64_t)60e9 : (int64_t)ns;
	}
	return b->service_ns;
}

static void *serve(void *arg)
{
	struct backend *b = arg;
	unsigned seed = (unsigned)(uintptr_t)&seed ^ (unsigned)fg_now_ns();
	uint8_t buf[FG_PROTO_MAX_DATAGRAM];
	uint64_t bad = 0;
	while (!fg_bench_stop && (!b->deadline_ns || fg_now_ns() < b->deadline_ns)) {
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
		   "                     at exit (replaced whole: a reader never sees a torn line)\n");
}

int fg_bench_backend(int argc, char **argv)
{
	const char *listen = NULL, *report = NULL;
	unsigned workers = 4;
	struct backend b = { .service_ns = 10000000, .sigma = 0.5 };
	int64_t duration = 0;
	static const struct option opts[] = {
		{ "listen", required_argument, 0, 'l' }, { "workers", required_argument, 0, 'w' },
		{ "service-time", required_argument, 0, 's' }, { "distribution", required_argument, 0, 'd' },
		{ "sigma", required_argument, 0, 'g' }, { "report", required_argument, 0, 'r' },
		{ "duration", required_argument, 0, 't' }, { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 } };
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
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!listen || workers == 0 || workers > 4096) {
		fprintf(stderr, "fairgate-bench backend: need --listen and 1..4096 --workers\n");
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
	fg_bench_install_signals();
	pthread_t *t = calloc(workers, sizeof(*t));
	unsigned started = 0;
	for (; t && started < workers; started++)
		if (pthread_create(&t[started], NULL, serve, &b))
			break;
	fprintf(stderr, "fairgate-bench backend: %s, %u workers\n", listen, started);
	/* The workers stop on the same conditions; until then, the report's ticks. */
	while (report && !fg_bench_stop && (!b.deadline_ns || fg_now_ns() < b.deadline_ns)) {
		uint64_t next = fg_now_ns() + REPORT_EVERY_NS;
		err = write_report(&b, report);
		if (err)
			fprintf(stderr, "fairgate-bench backend: --report %s: %s\n", report, strerror(-err));
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
