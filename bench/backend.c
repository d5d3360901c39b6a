/* SPDX-License-Identifier: Apache-2.0 */
/*
 * backend — an emulated backend server: N worker threads share one UDP
 * socket; each takes a request, holds it for its service time (from the
 * payload, see bench.h, or the configured distribution), then answers with a
 * RESPONSE echoing the payload.  N is the backend's real concurrency.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "client.h"
#include "clock.h"

struct backend {
	int fd;
	int64_t service_ns;
	enum { DIST_FIXED, DIST_EXPONENTIAL, DIST_LOGNORMAL } dist;
	double sigma;          /* log-normal: the log's standard deviation; service_ns is the median */
	uint64_t deadline_ns;
	uint64_t served, bad;
	pthread_mutex_t lock;
};

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
	uint64_t served = 0, bad = 0;
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
		int64_t ns = service_time(&m, b, &seed);
		if (ns > 0) {
			struct timespec ts = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) };
			while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !fg_bench_stop)
				;
		}
		fg_respond(b->fd, &m, &from, m.payload, m.payload_len);
		served++;
	}
	pthread_mutex_lock(&b->lock);
	b->served += served;
	b->bad += bad;
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: fairgate-bench backend --listen ADDR:PORT [--workers N] [--service-time DUR]\n"
		   "                              [--distribution fixed|exponential|log-normal] [--sigma S]\n"
		   "                              [--duration DUR]\n"
		   "  --workers N        concurrent requests served (default 4)\n"
		   "  --service-time D   used when a request carries no service time (default 10ms): the\n"
		   "                     value (fixed), the mean (exponential) or the median (log-normal)\n"
		   "  --sigma S          log-normal: the standard deviation of the log, 0..3 (default 0.5)\n"
		   "  --duration D       stop after D (default: run until SIGINT/SIGTERM)\n");
}

int fg_bench_backend(int argc, char **argv)
{
	const char *listen = NULL;
	unsigned workers = 4;
	struct backend b = { .service_ns = 10000000, .sigma = 0.5 };
	int64_t duration = 0;
	static const struct option opts[] = {
		{ "listen", required_argument, 0, 'l' }, { "workers", required_argument, 0, 'w' },
		{ "service-time", required_argument, 0, 's' }, { "distribution", required_argument, 0, 'd' },
		{ "sigma", required_argument, 0, 'g' },
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
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!listen || workers == 0 || workers > 4096) {
		fprintf(stderr, "fairgate-bench backend: need --listen and 1..4096 --workers\n");
		usage(stderr);
		return 2;
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
	for (unsigned i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	free(t);
	close(b.fd);
	fprintf(stderr, "fairgate-bench backend: %s served %llu requests, %llu bad datagrams\n", listen,
		(unsigned long long)b.served, (unsigned long long)b.bad);
	return 0;
}
