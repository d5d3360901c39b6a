/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loadgen — the load generator: one thread per flow, each with its own UDP
 * socket, closed loop (`threads` requests outstanding) or open loop (Poisson
 * arrivals at `rate`/s).  Bounded by --duration and per-flow `count`; every
 * request gets an answer or is counted lost after --timeout.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench.h"
#include "client.h"
#include "clock.h"
#include "endpoint.h"
#include "histogram.h"

#define MAX_FLOWS 64
#define MAX_OUTSTANDING (1u << 20)

struct flow {
	/* spec */
	char spec[512];
	char *name, *user, *ns, *verb, *api_group, *resource, *subresource, *path;
	char *groups[FG_PROTO_MAX_GROUPS];
	unsigned n_groups;
	unsigned threads;
	double rate;
	int64_t service_ns;
	uint16_t seats;
	uint64_t count;
	/* results */
	uint64_t sent, responses, rejects[FG_REJECT__COUNT], lost, bad, send_errors;
	uint64_t cookie_retries;                /* requests sent again with the server's cookie */
	struct fg_hist latency_us;
	double elapsed_s;
};

struct run {
	const char *target;
	int64_t duration_ns, timeout_ns;
};

struct pending {
	uint64_t seq;     /* the request id; 0 = free */
	uint64_t sent_ns;
};

static int parse_flow(struct flow *f, const char *spec)
{
	snprintf(f->spec, sizeof(f->spec), "%s", spec);
	f->threads = 1;
	f->seats = 1;
	f->service_ns = -1;
	f->verb = "get";
	f->resource = "pods";
	f->api_group = "";
	char *save = NULL;
	for (char *kv = strtok_r(f->spec, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		if (!eq) {
			fprintf(stderr, "fairgate-bench loadgen: flow field \"%s\" is not key=value\n", kv);
			return -EINVAL;
		}
		*eq = 0;
		char *v = eq + 1;
		if (!strcmp(kv, "name")) f->name = v;
		else if (!strcmp(kv, "user")) f->user = v;
		else if (!strcmp(kv, "namespace")) f->ns = v;
		else if (!strcmp(kv, "verb")) f->verb = v;
		else if (!strcmp(kv, "api-group")) f->api_group = v;
		else if (!strcmp(kv, "resource")) f->resource = v;
		else if (!strcmp(kv, "subresource")) f->subresource = v;
		else if (!strcmp(kv, "path")) { f->path = v; f->resource = NULL; f->api_group = NULL; }
		else if (!strcmp(kv, "groups")) {
			char *gs = NULL;
			for (char *g = strtok_r(v, "+", &gs); g && f->n_groups < FG_PROTO_MAX_GROUPS; g = strtok_r(NULL, "+", &gs))
				f->groups[f->n_groups++] = g;
		} else if (!strcmp(kv, "threads")) f->threads = (unsigned)atoi(v);
		else if (!strcmp(kv, "rate")) f->rate = atof(v);
		else if (!strcmp(kv, "service")) f->service_ns = fg_bench_duration_arg("service", v);
		else if (!strcmp(kv, "seats")) f->seats = (uint16_t)atoi(v);
		else if (!strcmp(kv, "count")) f->count = strtoull(v, NULL, 10);
		else {
			fprintf(stderr, "fairgate-bench loadgen: unknown flow field \"%s\"\n", kv);
			return -EINVAL;
		}
	}
	if (!f->user || !f->name) {
		fprintf(stderr, "fairgate-bench loadgen: a flow needs name= and user=\n");
		return -EINVAL;
	}
	if ((f->rate <= 0 && (f->threads == 0 || f->threads > 100000)) || f->rate < 0 || f->rate > 1e7) {
		fprintf(stderr, "fairgate-bench loadgen: flow %s: threads must be 1..100000 or rate 0..1e7\n", f->name);
		return -EINVAL;
	}
	return 0;
}

static int send_one(int fd, const struct fg_cookie_cache *cookie, struct flow *f, uint64_t seq)
{
	struct fg_msg m;
	fg_msg_init(&m, FG_MSG_REQUEST, seq);
	m.user = fg_str_of(f->user);
	m.ns = fg_str_of(f->ns);
	m.verb = fg_str_of(f->verb);
	m.api_group = fg_str_of(f->api_group);
	m.resource = fg_str_of(f->resource);
	m.subresource = fg_str_of(f->subresource);
	m.path = fg_str_of(f->path);
	for (unsigned i = 0; i < f->n_groups; i++)
		fg_msg_add_group(&m, f->groups[i]);
	m.hdr.seats = f->seats;
	uint8_t svc[FG_BENCH_SVC_LEN];
	if (f->service_ns >= 0) {
		uint32_t us = (uint32_t)(f->service_ns / 1000);
		memcpy(svc, FG_BENCH_SVC_MAGIC, 4);
		svc[4] = (uint8_t)(us >> 24); svc[5] = (uint8_t)(us >> 16); svc[6] = (uint8_t)(us >> 8); svc[7] = (uint8_t)us;
		m.payload = svc;
		m.payload_len = sizeof(svc);
	}
	fg_client_prepare(cookie, &m);
	return fg_send_msg(fd, &m, NULL);
}

struct flow_arg {
	struct flow *f;
	const struct run *run;
	uint64_t start_ns;
};

/* Outstanding requests live in slots taken from a free stack; the request id
 * is (sequence << SLOT_BITS | slot), so a late answer for a reused slot
 * cannot match the new request. */
#define SLOT_BITS 20u
#define SCAN_PERIOD_NS 50000000ull

static void *run_flow(void *arg)
{
	struct flow_arg *a = arg;
	struct flow *f = a->f;
	int fd = fg_udp_open(NULL, a->run->target);
	if (fd < 0) {
		fprintf(stderr, "fairgate-bench loadgen: flow %s: socket: %s\n", f->name, strerror(-fd));
		return NULL;
	}
	/* Room for everything that can be outstanding within one timeout. */
	uint64_t want = f->rate > 0 ? (uint64_t)(f->rate * ((double)a->run->timeout_ns / 1e9) * 2) + 64 : f->threads;
	uint32_t cap = want < MAX_OUTSTANDING ? (uint32_t)want : MAX_OUTSTANDING;
	struct pending *pend = calloc(cap, sizeof(*pend));
	uint32_t *free_slots = malloc(sizeof(*free_slots) * cap);
	if (!pend || !free_slots) {
		free(pend);
		free(free_slots);
		close(fd);
		return NULL;
	}
	uint32_t n_free = cap;
	for (uint32_t i = 0; i < cap; i++)
		free_slots[i] = cap - 1 - i;
	unsigned seed = (unsigned)(uintptr_t)f ^ (unsigned)a->start_ns;
	uint64_t seq = 0;
	uint64_t stop_send = a->start_ns + (uint64_t)a->run->duration_ns;
	uint64_t next_send = a->start_ns, next_scan = a->start_ns + SCAN_PERIOD_NS;
	uint8_t buf[FG_PROTO_MAX_DATAGRAM];
	struct fg_cookie_cache cookie = { .len = 0 };
	uint64_t now = fg_now_ns(), stopped_at = 0;
	for (;;) {
		now = fg_now_ns();
		uint32_t outstanding = cap - n_free;
		bool sending = !fg_bench_stop && now < stop_send && (!f->count || seq < f->count);
		if (!sending && !stopped_at)
			stopped_at = now;
		if (!sending && (outstanding == 0 || now - stopped_at > (uint64_t)a->run->timeout_ns))
			break;
		/* Send what the loop discipline allows now. */
		while (sending && n_free && (f->rate > 0 ? now >= next_send : true) && (!f->count || seq < f->count)) {
			uint32_t slot = free_slots[--n_free];
			struct pending *p = &pend[slot];
			p->seq = ++seq << SLOT_BITS | slot;
			p->sent_ns = now;
			if (send_one(fd, &cookie, f, p->seq) < 0) {
				f->send_errors++;
				p->seq = 0;
				free_slots[n_free++] = slot;
			} else {
				f->sent++;
			}
			if (f->rate > 0) {
				double u = (rand_r(&seed) + 1.0) / ((double)RAND_MAX + 2.0);
				next_send += (uint64_t)(-log(u) / f->rate * 1e9);
			}
		}
		/* Wait for answers until the next send is due. */
		int wait_ms = 5;
		if (sending && f->rate > 0)
			wait_ms = next_send > now ? (int)((next_send - now) / 1000000) : 0;
		struct fg_msg m;
		int n = fg_recv_msg(fd, buf, sizeof(buf), &m, NULL, wait_ms);
		while (n != -ETIMEDOUT) {
			uint32_t slot = (uint32_t)(m.hdr.request_id & ((1u << SLOT_BITS) - 1));
			if (n == -EBADMSG) {
				f->bad++;
			} else if (n < 0) {
				/* e.g. ECONNREFUSED once fairgate is gone: nothing to count */
			} else if (slot >= cap || pend[slot].seq != m.hdr.request_id) {
				f->bad++; /* an answer for nothing outstanding: duplicate or stray */
			} else {
				struct pending *p = &pend[slot];
				if (fg_client_take_cookie(&cookie, &m)) {
					/* Address validation: the same request again, with the cookie. */
					f->cookie_retries++;
					if (send_one(fd, &cookie, f, p->seq) < 0) {
						f->send_errors++;
						p->seq = 0;
						free_slots[n_free++] = slot;
					}
					n = fg_recv_msg(fd, buf, sizeof(buf), &m, NULL, 0);
					continue;
				}
				if (m.hdr.type == FG_MSG_RESPONSE) {
					f->responses++;
					fg_hist_add(&f->latency_us, (fg_now_ns() - p->sent_ns) / 1000);
				} else if (m.hdr.type == FG_MSG_REJECT && m.hdr.reason < FG_REJECT__COUNT) {
					f->rejects[m.hdr.reason]++;
				} else {
					f->bad++;
				}
				p->seq = 0;
				free_slots[n_free++] = slot;
			}
			n = fg_recv_msg(fd, buf, sizeof(buf), &m, NULL, 0);
		}
		/* Requests unanswered for a whole timeout are lost. */
		now = fg_now_ns();
		if (now >= next_scan) {
			next_scan = now + SCAN_PERIOD_NS;
			for (uint32_t i = 0; i < cap; i++)
				if (pend[i].seq && now - pend[i].sent_ns > (uint64_t)a->run->timeout_ns) {
					f->lost++;
					pend[i].seq = 0;
					free_slots[n_free++] = i;
				}
		}
	}
	f->lost += cap - n_free;
	f->elapsed_s = (double)(now - a->start_ns) / 1e9;
	free(pend);
	free(free_slots);
	close(fd);
	return NULL;
}

static json_t *flow_json(const struct flow *f)
{
	json_t *rej = json_object();
	uint64_t total = 0;
	for (int r = 1; r < FG_REJECT__COUNT; r++) {
		json_object_set_new(rej, fg_reject_reason_name(r), json_integer((json_int_t)f->rejects[r]));
		total += f->rejects[r];
	}
	return json_pack("{s:s, s:s, s:I, s:I, s:I, s:o, s:I, s:I, s:I, s:f, s:f, s:f}", "name", f->name, "user", f->user,
		"sent", (json_int_t)f->sent, "cookieRetries", (json_int_t)f->cookie_retries, "responses", (json_int_t)f->responses, "rejected", rej,
		"rejectedTotal", (json_int_t)total, "lost", (json_int_t)f->lost, "badAnswers", (json_int_t)f->bad,
		"responsesPerSec", f->elapsed_s > 0 ? (double)f->responses / f->elapsed_s : 0.0,
		"latencyP50Ms", (double)fg_hist_quantile(&f->latency_us, 0.5) / 1000.0,
		"latencyP99Ms", (double)fg_hist_quantile(&f->latency_us, 0.99) / 1000.0);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fairgate-bench loadgen --target ADDR:PORT --flow SPEC [--flow SPEC ...]\n"
		"                              [--duration DUR] [--timeout DUR] [--json]\n"
		"  SPEC is comma-separated key=value: name=, user= (required); groups=a+b, namespace=,\n"
		"  verb= (get), api-group=, resource= (pods), subresource=, path= (non-resource),\n"
		"  threads=N (closed loop, default 1) or rate=R (open loop, Poisson, requests/s),\n"
		"  service=DUR (service time the emulated backend applies), seats=N, count=N (bound)\n"
		"  --duration D   sending stops after D (default 10s)\n"
		"  --timeout D    a request unanswered for D is lost (default 5s)\n"
		"  --json         results as JSON on stdout (a table otherwise)\n");
}

int fg_bench_loadgen(int argc, char **argv)
{
	static struct flow flows[MAX_FLOWS];
	unsigned n_flows = 0;
	struct run run = { .duration_ns = 10000000000LL, .timeout_ns = 5000000000LL };
	int json_out = 0;
	static const struct option opts[] = {
		{ "target", required_argument, 0, 'T' }, { "flow", required_argument, 0, 'f' },
		{ "duration", required_argument, 0, 'd' }, { "timeout", required_argument, 0, 't' },
		{ "json", no_argument, 0, 'j' }, { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 } };
	int opt;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'T': run.target = optarg; break;
		case 'f':
			if (n_flows == MAX_FLOWS) {
				fprintf(stderr, "fairgate-bench loadgen: at most %d flows\n", MAX_FLOWS);
				return 2;
			}
			if (parse_flow(&flows[n_flows++], optarg))
				return 2;
			break;
		case 'd': run.duration_ns = fg_bench_duration_arg("--duration", optarg); break;
		case 't': run.timeout_ns = fg_bench_duration_arg("--timeout", optarg); break;
		case 'j': json_out = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!run.target || !n_flows) {
		fprintf(stderr, "fairgate-bench loadgen: need --target and at least one --flow\n");
		usage(stderr);
		return 2;
	}
	struct fg_endpoint ep;
	if (fg_endpoint_parse(run.target, &ep)) {
		fprintf(stderr, "fairgate-bench loadgen: --target must be IPv4:PORT\n");
		return 2;
	}
	fg_bench_install_signals();
	pthread_t t[MAX_FLOWS];
	struct flow_arg args[MAX_FLOWS];
	uint64_t start = fg_now_ns();
	for (unsigned i = 0; i < n_flows; i++) {
		args[i] = (struct flow_arg){ &flows[i], &run, start };
		if (pthread_create(&t[i], NULL, run_flow, &args[i])) {
			fprintf(stderr, "fairgate-bench loadgen: cannot start a thread\n");
			return 1;
		}
	}
	for (unsigned i = 0; i < n_flows; i++)
		pthread_join(t[i], NULL);
	if (json_out) {
		json_t *arr = json_array();
		for (unsigned i = 0; i < n_flows; i++)
			json_array_append_new(arr, flow_json(&flows[i]));
		json_t *doc = json_pack("{s:s, s:f, s:o}", "target", run.target, "durationSeconds",
					(double)run.duration_ns / 1e9, "flows", arr);
		json_dumpf(doc, stdout, JSON_INDENT(2));
		printf("\n");
		json_decref(doc);
	} else {
		printf("%-12s %-16s %9s %9s %9s %7s %9s %10s %10s\n", "FLOW", "USER", "SENT", "RESPONSES", "REJECTED",
		       "LOST", "RESP/S", "P50 ms", "P99 ms");
		for (unsigned i = 0; i < n_flows; i++) {
			struct flow *f = &flows[i];
			uint64_t rej = 0;
			for (int r = 1; r < FG_REJECT__COUNT; r++)
				rej += f->rejects[r];
			printf("%-12s %-16s %9llu %9llu %9llu %7llu %9.1f %10.2f %10.2f\n", f->name, f->user,
			       (unsigned long long)f->sent, (unsigned long long)f->responses, (unsigned long long)rej,
			       (unsigned long long)f->lost, f->elapsed_s > 0 ? (double)f->responses / f->elapsed_s : 0,
			       (double)fg_hist_quantile(&f->latency_us, 0.5) / 1000.0,
			       (double)fg_hist_quantile(&f->latency_us, 0.99) / 1000.0);
		}
	}
	return 0;
}
