/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loadgen — the load generator (docs/bench.md): one thread per flow, each
 * with its own UDP socket, closed loop (`threads` requests outstanding) or
 * open loop (`rate` requests/s, Poisson or constant arrivals, sent on
 * schedule whatever the answers; latency from the intended send time, so a
 * slow server cannot hide its delay: coordinated omission).  A flow's user
 * or namespace may be a template (`user=tenant-{1..10000}`): one flow, its
 * requests spread round-robin over the tenants.  Optional warm-up (not
 * counted), per-interval time series, retry-after honoured per flow.
 *
 * Bounds: at most LG_MAX_FLOWS flows (threads), LG_MAX_TENANTS tenants per
 * template, LG_MAX_OUTSTANDING requests outstanding per flow; sending stops
 * after --warmup + --duration (and `count`), every request is answered or
 * counted lost after --timeout.
 *
 * Thread contract: a flow thread owns its socket and outstanding requests;
 * it adds what happens to the flow's `cur` counts under the flow's lock; the
 * main thread moves `cur` into `total` (at each --interval and at the end)
 * and alone reads `total`.
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
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "client.h"
#include "clock.h"
#include "endpoint.h"
#include "histogram.h"

#define LG_MAX_FLOWS 1024u
#define LG_MAX_TENANTS 1000000u
#define LG_MAX_OUTSTANDING (1u << 20)
#define LG_MAX_THREADS 100000u
#define LG_MAX_RATE 1e7
#define LG_SPEC_LEN 2048u
#define LG_FIELD_LEN 256u
/* A send at least this far behind its intended time counts as late. */
#define LG_LATE_NS 1000000ull
/* Exit status when no request got a response (all lost or refused). */
#define LG_EXIT_NONE_ANSWERED 3

/* What happened to a flow's requests over some span (an interval, the run). */
struct counts {
	uint64_t sent, responses, rejects[FG_REJECT__COUNT], lost, bad, send_errors, cookie_retries;
	uint64_t deferred;   /* open loop: intended sends skipped inside a retry-after window */
	uint64_t late_sends; /* sent LG_LATE_NS or more after the intended time */
	uint64_t max_behind_us;
	struct fg_hist latency_us, reject_us;
};

/* A field value, literal or `prefix{first..last}suffix`. */
struct field {
	const char *prefix, *suffix; /* suffix NULL: a literal */
	uint64_t first;
};

struct flow {
	/* spec */
	char spec[LG_SPEC_LEN];
	char user_text[LG_SPEC_LEN]; /* the user= value as given, for the report */
	char *name, *verb, *api_group, *resource, *subresource, *path;
	struct field user, ns;
	uint64_t tenants; /* 1 without a template */
	char *groups[FG_PROTO_MAX_GROUPS];
	unsigned n_groups;
	unsigned threads;
	double rate;
	bool constant; /* open loop: evenly spaced arrivals instead of Poisson */
	bool retry_after;
	int64_t service_ns;
	uint16_t seats;
	uint64_t count;
	/* results */
	pthread_mutex_t lock;
	struct counts cur;   /* since the main thread last took it; under lock */
	struct counts total; /* main thread only */
	double elapsed_s;    /* set by the flow thread as it ends */
	int done;            /* set (release) by the flow thread as it ends */
};

struct run {
	const char *target;
	int64_t duration_ns, timeout_ns, warmup_ns, interval_ns;
	int retry_after; /* -1: per loop kind (on for open loops, off for closed) */
	uint64_t start_ns, measure_ns; /* sending starts; counting starts (after the warm-up) */
};

struct pending {
	uint64_t seq;         /* the request id; 0 = free */
	uint64_t intended_ns; /* latency is measured from here */
	uint32_t tenant;
	bool measured; /* intended after the warm-up */
};

static bool parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	errno = 0;
	if (!*s || *s == '-')
		return false;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return false;
	*out = v;
	return true;
}

/* `prefix{A..B}suffix` into f (the value is cut in place); *n gets B - A + 1
 * (1 for a literal).  False for a malformed or too large range. */
static bool parse_field(char *v, struct field *f, uint64_t *n)
{
	f->prefix = v;
	f->suffix = NULL;
	*n = 1;
	char *open = strchr(v, '{');
	if (!open)
		return true;
	char *dots = strstr(open, ".."), *close = dots ? strchr(dots, '}') : NULL;
	if (!dots || !close)
		return false;
	*open = *dots = *close = 0;
	uint64_t first, last;
	if (!parse_u64(open + 1, UINT32_MAX, &first) || !parse_u64(dots + 2, UINT32_MAX, &last) || last < first ||
	    last - first >= LG_MAX_TENANTS || strchr(close + 1, '{'))
		return false;
	f->first = first;
	f->suffix = close + 1;
	*n = last - first + 1;
	return true;
}

static const char *field_value(const struct field *f, uint32_t tenant, char *buf, size_t cap)
{
	if (!f->suffix)
		return f->prefix;
	snprintf(buf, cap, "%s%llu%s", f->prefix, (unsigned long long)(f->first + tenant), f->suffix);
	return buf;
}

static int flow_error(const struct flow *f, const char *what)
{
	fprintf(stderr, "fairgate-bench loadgen: flow %s: %s\n", f->name ? f->name : "(no name)", what);
	return -EINVAL;
}

static int parse_flow(struct flow *f, const char *spec)
{
	if (strlen(spec) >= sizeof(f->spec)) {
		fprintf(stderr, "fairgate-bench loadgen: a flow spec is at most %zu bytes\n", sizeof(f->spec) - 1);
		return -EINVAL;
	}
	snprintf(f->spec, sizeof(f->spec), "%s", spec);
	f->seats = 1;
	f->service_ns = -1;
	f->verb = "get";
	f->resource = "pods";
	f->api_group = "";
	f->tenants = 1;
	bool have_threads = false, have_rate = false, have_user = false;
	char *user_v = NULL, *ns_v = NULL, *arrivals = NULL, *retry = NULL;
	uint64_t threads = 1, seats = 1;
	char *save = NULL;
	for (char *kv = strtok_r(f->spec, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		if (!eq) {
			fprintf(stderr, "fairgate-bench loadgen: flow field \"%s\" is not key=value\n", kv);
			return -EINVAL;
		}
		*eq = 0;
		char *v = eq + 1;
		bool ok = true;
		if (!strcmp(kv, "name")) f->name = v;
		else if (!strcmp(kv, "user")) { user_v = v; have_user = true; }
		else if (!strcmp(kv, "namespace")) ns_v = v;
		else if (!strcmp(kv, "verb")) f->verb = v;
		else if (!strcmp(kv, "api-group")) f->api_group = v;
		else if (!strcmp(kv, "resource")) f->resource = v;
		else if (!strcmp(kv, "subresource")) f->subresource = v;
		else if (!strcmp(kv, "path")) { f->path = v; f->resource = NULL; f->api_group = NULL; }
		else if (!strcmp(kv, "groups")) {
			char *gs = NULL;
			for (char *g = strtok_r(v, "+", &gs); g && f->n_groups < FG_PROTO_MAX_GROUPS; g = strtok_r(NULL, "+", &gs))
				f->groups[f->n_groups++] = g;
		} else if (!strcmp(kv, "threads")) { have_threads = true; ok = parse_u64(v, LG_MAX_THREADS, &threads) && threads > 0; }
		else if (!strcmp(kv, "rate")) {
			char *end;
			have_rate = true;
			f->rate = strtod(v, &end);
			ok = *v && !*end && f->rate > 0 && f->rate <= LG_MAX_RATE;
		} else if (!strcmp(kv, "arrivals")) arrivals = v;
		else if (!strcmp(kv, "retry-after")) retry = v;
		else if (!strcmp(kv, "service")) f->service_ns = fg_bench_duration_arg("service", v);
		else if (!strcmp(kv, "seats")) ok = parse_u64(v, UINT16_MAX, &seats) && seats > 0;
		else if (!strcmp(kv, "count")) ok = parse_u64(v, UINT64_MAX >> 21, &f->count);
		else {
			fprintf(stderr, "fairgate-bench loadgen: unknown flow field \"%s\"\n", kv);
			return -EINVAL;
		}
		if (!ok) {
			fprintf(stderr, "fairgate-bench loadgen: flow field %s: bad value \"%s\" (threads 1..%u, rate (0, %g], "
				"seats 1..65535)\n", kv, v, LG_MAX_THREADS, LG_MAX_RATE);
			return -EINVAL;
		}
	}
	if (!have_user || !f->name) {
		fprintf(stderr, "fairgate-bench loadgen: a flow needs name= and user=\n");
		return -EINVAL;
	}
	if (have_threads && have_rate)
		return flow_error(f, "threads= (closed loop) and rate= (open loop) together: give one of them");
	f->threads = (unsigned)threads;
	f->seats = (uint16_t)seats;
	snprintf(f->user_text, sizeof(f->user_text), "%s", user_v);
	uint64_t n_user, n_ns = 1;
	if (!parse_field(user_v, &f->user, &n_user) || (ns_v && !parse_field(ns_v, &f->ns, &n_ns)))
		return flow_error(f, "a template is PREFIX{FIRST..LAST}SUFFIX, one per field, at most 1000000 values");
	if (!ns_v)
		f->ns = (struct field){ .prefix = NULL };
	if (n_user > 1 && n_ns > 1 && n_user != n_ns)
		return flow_error(f, "user= and namespace= templates must have as many values");
	f->tenants = n_user > n_ns ? n_user : n_ns;
	if (arrivals && strcmp(arrivals, "poisson") && strcmp(arrivals, "constant"))
		return flow_error(f, "arrivals= is poisson or constant");
	if (arrivals && !have_rate)
		return flow_error(f, "arrivals= needs an open loop (rate=)");
	f->constant = arrivals && !strcmp(arrivals, "constant");
	if (retry && strcmp(retry, "on") && strcmp(retry, "off"))
		return flow_error(f, "retry-after= is on or off");
	f->retry_after = retry ? !strcmp(retry, "on") : have_rate; /* per-flow choice; --retry-after overrides */
	pthread_mutex_init(&f->lock, NULL);
	return 0;
}

static int send_one(int fd, const struct fg_cookie_cache *cookie, const struct flow *f, uint64_t seq, uint32_t tenant)
{
	char user[LG_FIELD_LEN], ns[LG_FIELD_LEN];
	struct fg_msg m;
	fg_msg_init(&m, FG_MSG_REQUEST, seq);
	m.user = fg_str_of(field_value(&f->user, tenant, user, sizeof(user)));
	m.ns = fg_str_of(f->ns.prefix ? field_value(&f->ns, tenant, ns, sizeof(ns)) : NULL);
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

/* What the flow thread records; each takes the flow's lock once. */
static void note_send(struct flow *f, bool measured, bool ok, uint64_t behind_ns)
{
	if (!measured)
		return;
	pthread_mutex_lock(&f->lock);
	if (!ok) {
		f->cur.send_errors++;
	} else {
		f->cur.sent++;
		if (behind_ns >= LG_LATE_NS)
			f->cur.late_sends++;
		if (behind_ns / 1000 > f->cur.max_behind_us)
			f->cur.max_behind_us = behind_ns / 1000;
	}
	pthread_mutex_unlock(&f->lock);
}

static void note_answer(struct flow *f, const struct pending *p, const struct fg_msg *m, uint64_t now)
{
	if (!p->measured)
		return;
	uint64_t us = now > p->intended_ns ? (now - p->intended_ns) / 1000 : 0;
	pthread_mutex_lock(&f->lock);
	if (m->hdr.type == FG_MSG_RESPONSE) {
		f->cur.responses++;
		fg_hist_add(&f->cur.latency_us, us);
	} else if (m->hdr.type == FG_MSG_REJECT && m->hdr.reason < FG_REJECT__COUNT) {
		f->cur.rejects[m->hdr.reason]++;
		fg_hist_add(&f->cur.reject_us, us);
	} else {
		f->cur.bad++;
	}
	pthread_mutex_unlock(&f->lock);
}

static void note_count(struct flow *f, bool measured, uint64_t *counter)
{
	if (!measured)
		return;
	pthread_mutex_lock(&f->lock);
	(*counter)++;
	pthread_mutex_unlock(&f->lock);
}

struct flow_arg {
	struct flow *f;
	const struct run *run;
};

/* Outstanding requests live in slots taken from a free stack; the request id
 * is (sequence << SLOT_BITS | slot), so a late answer for a reused slot
 * cannot match the new request. */
#define SLOT_BITS 20u
#define SCAN_PERIOD_NS 50000000ull

static uint64_t next_gap_ns(const struct flow *f, unsigned *seed)
{
	if (f->constant)
		return (uint64_t)(1e9 / f->rate);
	double u = (rand_r(seed) + 1.0) / ((double)RAND_MAX + 2.0);
	return (uint64_t)(-log(u) / f->rate * 1e9);
}

static void *run_flow(void *arg)
{
	struct flow_arg *a = arg;
	struct flow *f = a->f;
	const struct run *run = a->run;
	bool open_loop = f->rate > 0;
	int fd = fg_udp_open(NULL, run->target);
	if (fd < 0) {
		fprintf(stderr, "fairgate-bench loadgen: flow %s: socket: %s\n", f->name, strerror(-fd));
		__atomic_store_n(&f->done, 1, __ATOMIC_RELEASE);
		return NULL;
	}
	/* Room for everything that can be outstanding within one timeout. */
	uint64_t want = open_loop ? (uint64_t)(f->rate * ((double)run->timeout_ns / 1e9) * 2) + 64 : f->threads;
	uint32_t cap = want < LG_MAX_OUTSTANDING ? (uint32_t)want : LG_MAX_OUTSTANDING;
	struct pending *pend = calloc(cap, sizeof(*pend));
	uint32_t *free_slots = malloc(sizeof(*free_slots) * cap);
	if (!pend || !free_slots) {
		fprintf(stderr, "fairgate-bench loadgen: flow %s: out of memory for %u outstanding requests\n", f->name, cap);
		free(pend);
		free(free_slots);
		close(fd);
		__atomic_store_n(&f->done, 1, __ATOMIC_RELEASE);
		return NULL;
	}
	uint32_t n_free = cap;
	for (uint32_t i = 0; i < cap; i++)
		free_slots[i] = cap - 1 - i;
	unsigned seed = (unsigned)(uintptr_t)f ^ (unsigned)run->start_ns;
	uint64_t seq = 0, tenant_rr = 0;
	uint64_t stop_send = run->measure_ns + (uint64_t)run->duration_ns;
	uint64_t next_send = run->start_ns, next_scan = run->start_ns + SCAN_PERIOD_NS, backoff_until = 0;
	uint8_t buf[FG_PROTO_MAX_DATAGRAM];
	struct fg_cookie_cache cookie = { .len = 0 };
	uint64_t now = fg_now_ns(), stopped_at = 0;
	for (;;) {
		now = fg_now_ns();
		uint32_t outstanding = cap - n_free;
		bool sending = !fg_bench_stop && now < stop_send && (!f->count || seq < f->count);
		if (!sending && !stopped_at)
			stopped_at = now;
		if (!sending && (outstanding == 0 || now - stopped_at > (uint64_t)run->timeout_ns))
			break;
		/* Send what the loop discipline allows now: the open loop follows
		 * its schedule (late if it must), the closed loop refills slots. */
		while (sending && (!f->count || seq < f->count) && (open_loop ? now >= next_send : now >= backoff_until)) {
			uint64_t intended = open_loop ? next_send : now;
			if (open_loop && intended < backoff_until) {
				note_count(f, intended >= run->measure_ns, &f->cur.deferred);
				next_send += next_gap_ns(f, &seed);
				continue;
			}
			if (!n_free)
				break; /* an open loop sends these late, still timed from `intended` */
			uint32_t slot = free_slots[--n_free];
			struct pending *p = &pend[slot];
			p->seq = ++seq << SLOT_BITS | slot;
			p->intended_ns = intended;
			p->measured = intended >= run->measure_ns;
			p->tenant = (uint32_t)(tenant_rr++ % f->tenants);
			bool ok = send_one(fd, &cookie, f, p->seq, p->tenant) >= 0;
			note_send(f, p->measured, ok, now - intended);
			if (!ok) {
				p->seq = 0;
				free_slots[n_free++] = slot;
			}
			if (open_loop)
				next_send += next_gap_ns(f, &seed);
		}
		/* Wait for answers until the next send is due. */
		int wait_ms = 5;
		uint64_t due = open_loop ? next_send : backoff_until;
		if (sending && n_free && (open_loop || due > now)) /* no free slot: only an answer (or the scan) helps */
			wait_ms = due > now ? (int)((due - now) / 1000000 < 5 ? (due - now) / 1000000 : 5) : 0;
		struct fg_msg m;
		int n = fg_recv_msg(fd, buf, sizeof(buf), &m, NULL, wait_ms);
		while (n != -ETIMEDOUT) {
			uint32_t slot = (uint32_t)(m.hdr.request_id & ((1u << SLOT_BITS) - 1));
			uint64_t at = fg_now_ns();
			if (n == -EBADMSG) {
				note_count(f, at >= run->measure_ns, &f->cur.bad);
			} else if (n < 0) {
				/* e.g. ECONNREFUSED once fairgate is gone: nothing to count */
			} else if (slot >= cap || pend[slot].seq != m.hdr.request_id) {
				/* an answer for nothing outstanding: duplicate or stray */
				note_count(f, at >= run->measure_ns, &f->cur.bad);
			} else {
				struct pending *p = &pend[slot];
				if (fg_client_take_cookie(&cookie, &m)) {
					/* Address validation: the same request again, with the cookie. */
					note_count(f, p->measured, &f->cur.cookie_retries);
					if (send_one(fd, &cookie, f, p->seq, p->tenant) < 0) {
						note_count(f, p->measured, &f->cur.send_errors);
						p->seq = 0;
						free_slots[n_free++] = slot;
					}
					n = fg_recv_msg(fd, buf, sizeof(buf), &m, NULL, 0);
					continue;
				}
				note_answer(f, p, &m, at);
				if (m.hdr.type == FG_MSG_REJECT && f->retry_after && m.hdr.retry_after_ms) {
					uint64_t until = at + (uint64_t)m.hdr.retry_after_ms * 1000000ull;
					if (until > backoff_until)
						backoff_until = until;
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
				if (pend[i].seq && now - pend[i].intended_ns > (uint64_t)run->timeout_ns) {
					note_count(f, pend[i].measured, &f->cur.lost);
					pend[i].seq = 0;
					free_slots[n_free++] = i;
				}
		}
	}
	for (uint32_t i = 0; i < cap; i++)
		if (pend[i].seq)
			note_count(f, pend[i].measured, &f->cur.lost);
	f->elapsed_s = now > run->measure_ns ? (double)(now - run->measure_ns) / 1e9 : 0;
	free(pend);
	free(free_slots);
	close(fd);
	__atomic_store_n(&f->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Moves the flow's `cur` into *into (zeroed first) and adds it to `total`. */
static void take_counts(struct flow *f, struct counts *into)
{
	pthread_mutex_lock(&f->lock);
	*into = f->cur;
	memset(&f->cur, 0, sizeof(f->cur));
	pthread_mutex_unlock(&f->lock);
	struct counts *t = &f->total;
	t->sent += into->sent;
	t->responses += into->responses;
	for (int r = 0; r < FG_REJECT__COUNT; r++)
		t->rejects[r] += into->rejects[r];
	t->lost += into->lost;
	t->bad += into->bad;
	t->send_errors += into->send_errors;
	t->cookie_retries += into->cookie_retries;
	t->deferred += into->deferred;
	t->late_sends += into->late_sends;
	if (into->max_behind_us > t->max_behind_us)
		t->max_behind_us = into->max_behind_us;
	fg_hist_merge(&t->latency_us, &into->latency_us);
	fg_hist_merge(&t->reject_us, &into->reject_us);
}

static double ms(double us)
{
	return us / 1000.0;
}

static json_t *latency_json(const struct fg_hist *h)
{
	return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f}", "p50", ms(fg_hist_quantile(h, 0.5)), "p90",
			 ms(fg_hist_quantile(h, 0.9)), "p99", ms(fg_hist_quantile(h, 0.99)), "p999",
			 ms(fg_hist_quantile(h, 0.999)), "max", ms((double)h->max), "mean", ms(fg_hist_mean(h)));
}

static json_t *rejects_json(const struct counts *c, uint64_t *total)
{
	json_t *rej = json_object();
	*total = 0;
	for (int r = 1; r < FG_REJECT__COUNT; r++) {
		json_object_set_new(rej, fg_reject_reason_name(r), json_integer((json_int_t)c->rejects[r]));
		*total += c->rejects[r];
	}
	return rej;
}

static json_t *histogram_json(const struct fg_hist *h)
{
	json_t *arr = json_array();
	for (unsigned b = 0; b < FG_HIST_BUCKETS; b++)
		if (h->buckets[b])
			json_array_append_new(arr, json_pack("[I, I, I]", (json_int_t)fg_hist_bucket_low(b),
							     (json_int_t)fg_hist_bucket_high(b), (json_int_t)h->buckets[b]));
	return arr;
}

/* An interval's histogram goes with it: a reader merges the intervals it
 * wants (the runner: those after a scenario's settle time). */
static json_t *interval_flow_json(const struct flow *f, const struct counts *c)
{
	uint64_t total;
	return json_pack("{s:s, s:I, s:I, s:o, s:I, s:I, s:o, s:o}", "name", f->name, "sent", (json_int_t)c->sent,
			 "responses", (json_int_t)c->responses, "rejected", rejects_json(c, &total), "lost",
			 (json_int_t)c->lost, "deferred", (json_int_t)c->deferred, "latencyMs", latency_json(&c->latency_us),
			 "histogramUs", histogram_json(&c->latency_us));
}

static json_t *flow_json(const struct flow *f)
{
	const struct counts *c = &f->total;
	uint64_t total;
	json_t *rej = rejects_json(c, &total);
	json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:o, s:I, s:I, s:I, s:f, s:f, s:f}", "name", f->name,
		"user", f->user_text, "tenants", (json_int_t)f->tenants, "sent", (json_int_t)c->sent, "cookieRetries",
		(json_int_t)c->cookie_retries, "responses", (json_int_t)c->responses, "rejected", rej, "rejectedTotal",
		(json_int_t)total, "lost", (json_int_t)c->lost, "badAnswers", (json_int_t)c->bad, "responsesPerSec",
		f->elapsed_s > 0 ? (double)c->responses / f->elapsed_s : 0.0, "latencyP50Ms",
		ms(fg_hist_quantile(&c->latency_us, 0.5)), "latencyP99Ms", ms(fg_hist_quantile(&c->latency_us, 0.99)));
	json_object_update_new(o, json_pack("{s:I, s:I, s:I, s:f, s:b, s:o, s:o, s:o}", "sendErrors",
		(json_int_t)c->send_errors, "deferred", (json_int_t)c->deferred, "lateSends", (json_int_t)c->late_sends,
		"maxBehindMs", ms((double)c->max_behind_us), "retryAfter", f->retry_after, "latencyMs",
		latency_json(&c->latency_us), "rejectLatencyMs", latency_json(&c->reject_us), "histogramUs",
		histogram_json(&c->latency_us)));
	return o;
}

static void print_json_line(json_t *doc)
{
	json_dumpf(doc, stdout, JSON_COMPACT);
	printf("\n");
	fflush(stdout);
	json_decref(doc);
}

/* One interval: every flow's counts since the last one, as a line. */
static void report_interval(struct flow **flows, unsigned n_flows, double t, bool json_out)
{
	static struct counts c; /* ~70 KiB: not on the stack; main thread only */
	json_t *arr = json_out ? json_array() : NULL;
	for (unsigned i = 0; i < n_flows; i++) {
		take_counts(flows[i], &c);
		if (json_out) {
			json_array_append_new(arr, interval_flow_json(flows[i], &c));
			continue;
		}
		uint64_t rej = 0;
		for (int r = 1; r < FG_REJECT__COUNT; r++)
			rej += c.rejects[r];
		printf("t=%-8.3f %-12s sent %8llu responses %8llu rejected %8llu lost %6llu p50 %8.2f p99 %8.2f ms\n", t,
		       flows[i]->name, (unsigned long long)c.sent, (unsigned long long)c.responses, (unsigned long long)rej,
		       (unsigned long long)c.lost, ms(fg_hist_quantile(&c.latency_us, 0.5)),
		       ms(fg_hist_quantile(&c.latency_us, 0.99)));
	}
	if (json_out)
		print_json_line(json_pack("{s:s, s:f, s:o}", "type", "interval", "t", t, "flows", arr));
	else
		fflush(stdout);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fairgate-bench loadgen --target ADDR:PORT --flow SPEC [--flow SPEC ...]\n"
		"         [--duration DUR] [--warmup DUR] [--timeout DUR] [--interval DUR]\n"
		"         [--retry-after on|off] [--json]\n"
		"  SPEC is comma-separated key=value: name=, user= (required); groups=a+b, namespace=,\n"
		"  verb= (get), api-group=, resource= (pods), subresource=, path= (non-resource),\n"
		"  threads=N (closed loop, default 1) or rate=R (open loop, requests/s; not both),\n"
		"  arrivals=poisson|constant (open loop, default poisson), retry-after=on|off,\n"
		"  service=DUR (service time the emulated backend applies), seats=N, count=N (bound).\n"
		"  user= and namespace= may be a template, PREFIX{FIRST..LAST}SUFFIX (at most %u\n"
		"  values): the flow's requests go to its tenants round-robin.  At most %u flows.\n"
		"  --duration D     the measured phase: sending stops D after the warm-up (default 10s)\n"
		"  --warmup D       traffic for D before the measured phase, not counted (default 0)\n"
		"  --timeout D      a request unanswered for D is lost (default 5s)\n"
		"  --interval D     also a line per D of the measured phase (deltas)\n"
		"  --retry-after X  on: after a REJECT, a flow sends nothing for its retry-after\n"
		"                   (default: on for open loops, off for closed loops)\n"
		"  --json           results as JSON lines on stdout (a table otherwise)\n"
		"  exit status: 0; 2 usage; %d when no request got a response (all lost or refused)\n",
		LG_MAX_TENANTS, LG_MAX_FLOWS, LG_EXIT_NONE_ANSWERED);
}

static void print_table(struct flow **flows, unsigned n_flows)
{
	printf("%-12s %-16s %9s %9s %9s %7s %9s %9s %9s %9s %9s %9s\n", "FLOW", "USER", "SENT", "RESPONSES", "REJECTED",
	       "LOST", "RESP/S", "P50 ms", "P90 ms", "P99 ms", "P99.9 ms", "MAX ms");
	for (unsigned i = 0; i < n_flows; i++) {
		const struct flow *f = flows[i];
		const struct counts *c = &f->total;
		uint64_t rej = 0;
		for (int r = 1; r < FG_REJECT__COUNT; r++)
			rej += c->rejects[r];
		printf("%-12s %-16s %9llu %9llu %9llu %7llu %9.1f %9.2f %9.2f %9.2f %9.2f %9.2f\n", f->name, f->user_text,
		       (unsigned long long)c->sent, (unsigned long long)c->responses, (unsigned long long)rej,
		       (unsigned long long)c->lost, f->elapsed_s > 0 ? (double)c->responses / f->elapsed_s : 0,
		       ms(fg_hist_quantile(&c->latency_us, 0.5)), ms(fg_hist_quantile(&c->latency_us, 0.9)),
		       ms(fg_hist_quantile(&c->latency_us, 0.99)), ms(fg_hist_quantile(&c->latency_us, 0.999)),
		       ms((double)c->latency_us.max));
	}
}

static void sleep_until(uint64_t t_ns)
{
	uint64_t now = fg_now_ns();
	if (t_ns <= now)
		return;
	struct timespec ts = { .tv_sec = (time_t)((t_ns - now) / 1000000000ull), .tv_nsec = (long)((t_ns - now) % 1000000000ull) };
	nanosleep(&ts, NULL);
}

static void free_flows(struct flow **flows, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		free(flows[i]);
	free(flows);
}

int fg_bench_loadgen(int argc, char **argv)
{
	struct flow **flows = calloc(LG_MAX_FLOWS, sizeof(*flows));
	if (!flows)
		return 1;
	unsigned n_flows = 0;
	struct run run = { .duration_ns = 10000000000LL, .timeout_ns = 5000000000LL, .retry_after = -1 };
	int json_out = 0, rc = 2;
	static const struct option opts[] = {
		{ "target", required_argument, 0, 'T' }, { "flow", required_argument, 0, 'f' },
		{ "duration", required_argument, 0, 'd' }, { "timeout", required_argument, 0, 't' },
		{ "warmup", required_argument, 0, 'w' }, { "interval", required_argument, 0, 'i' },
		{ "retry-after", required_argument, 0, 'r' },
		{ "json", no_argument, 0, 'j' }, { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 } };
	int opt;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'T': run.target = optarg; break;
		case 'f':
			if (n_flows == LG_MAX_FLOWS) {
				fprintf(stderr, "fairgate-bench loadgen: at most %u flows (one thread each); a template flow "
					"(user=tenant-{1..N}) covers many tenants\n", LG_MAX_FLOWS);
				goto out;
			}
			flows[n_flows] = calloc(1, sizeof(struct flow));
			if (!flows[n_flows]) {
				rc = 1;
				goto out;
			}
			if (parse_flow(flows[n_flows++], optarg))
				goto out;
			break;
		case 'd': run.duration_ns = fg_bench_duration_arg("--duration", optarg); break;
		case 't': run.timeout_ns = fg_bench_duration_arg("--timeout", optarg); break;
		case 'w': run.warmup_ns = fg_bench_duration_arg("--warmup", optarg); break;
		case 'i':
			run.interval_ns = fg_bench_duration_arg("--interval", optarg);
			if (run.interval_ns < 1000000) {
				fprintf(stderr, "fairgate-bench loadgen: --interval must be at least 1ms\n");
				goto out;
			}
			break;
		case 'r':
			if (strcmp(optarg, "on") && strcmp(optarg, "off")) {
				fprintf(stderr, "fairgate-bench loadgen: --retry-after is on or off\n");
				goto out;
			}
			run.retry_after = !strcmp(optarg, "on");
			break;
		case 'j': json_out = 1; break;
		case 'h': usage(stdout); rc = 0; goto out;
		default: usage(stderr); goto out;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "fairgate-bench loadgen: unexpected argument \"%s\"\n", argv[optind]);
		goto out;
	}
	if (!run.target || !n_flows) {
		fprintf(stderr, "fairgate-bench loadgen: need --target and at least one --flow\n");
		usage(stderr);
		goto out;
	}
	struct fg_endpoint ep;
	if (fg_endpoint_parse(run.target, &ep)) {
		fprintf(stderr, "fairgate-bench loadgen: --target must be IPv4:PORT\n");
		goto out;
	}
	if (run.timeout_ns <= 0) {
		fprintf(stderr, "fairgate-bench loadgen: --timeout must be more than 0\n");
		goto out;
	}
	if (run.retry_after >= 0)
		for (unsigned i = 0; i < n_flows; i++)
			flows[i]->retry_after = run.retry_after;
	fg_bench_install_signals();
	pthread_t *threads = calloc(n_flows, sizeof(*threads));
	struct flow_arg *args = calloc(n_flows, sizeof(*args));
	if (!threads || !args) {
		free(threads);
		free(args);
		rc = 1;
		goto out;
	}
	run.start_ns = fg_now_ns();
	run.measure_ns = run.start_ns + (uint64_t)run.warmup_ns;
	unsigned started = 0;
	for (; started < n_flows; started++) {
		args[started] = (struct flow_arg){ flows[started], &run };
		if (pthread_create(&threads[started], NULL, run_flow, &args[started])) {
			fprintf(stderr, "fairgate-bench loadgen: cannot start the thread of flow %s\n", flows[started]->name);
			fg_bench_stop = 1;
			break;
		}
	}
	/* Interval lines on the grid measure + k * interval while any flow runs;
	 * the last, shorter one when they have all ended. */
	if (run.interval_ns && started == n_flows) {
		for (uint64_t tick = run.measure_ns + (uint64_t)run.interval_ns;; tick += (uint64_t)run.interval_ns) {
			bool all_done = false;
			while (!all_done) { /* until the tick, checking every 10 ms */
				all_done = true;
				for (unsigned i = 0; i < n_flows && all_done; i++)
					all_done = __atomic_load_n(&flows[i]->done, __ATOMIC_ACQUIRE);
				uint64_t now = fg_now_ns();
				if (now >= tick)
					break;
				sleep_until(now + 10000000ull < tick ? now + 10000000ull : tick);
			}
			if (all_done)
				break;
			report_interval(flows, n_flows, (double)(fg_now_ns() - run.measure_ns) / 1e9, json_out);
		}
	}
	for (unsigned i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	free(threads);
	free(args);
	if (run.interval_ns) {
		uint64_t now = fg_now_ns();
		report_interval(flows, n_flows, now > run.measure_ns ? (double)(now - run.measure_ns) / 1e9 : 0, json_out);
	} else {
		static struct counts rest;
		for (unsigned i = 0; i < n_flows; i++)
			take_counts(flows[i], &rest);
	}
	uint64_t responses = 0, sent = 0, refused = 0, lost = 0;
	for (unsigned i = 0; i < n_flows; i++) {
		const struct counts *c = &flows[i]->total;
		responses += c->responses;
		sent += c->sent;
		lost += c->lost;
		for (int r = 1; r < FG_REJECT__COUNT; r++)
			refused += c->rejects[r];
	}
	if (json_out) {
		json_t *arr = json_array();
		for (unsigned i = 0; i < n_flows; i++)
			json_array_append_new(arr, flow_json(flows[i]));
		print_json_line(json_pack("{s:s, s:s, s:f, s:f, s:f, s:o}", "type", "result", "target", run.target,
					  "durationSeconds", (double)run.duration_ns / 1e9, "warmupSeconds",
					  (double)run.warmup_ns / 1e9, "intervalSeconds", (double)run.interval_ns / 1e9,
					  "flows", arr));
	} else {
		print_table(flows, n_flows);
	}
	rc = started < n_flows ? 1 : 0;
	if (!responses && !rc) {
		fprintf(stderr, "fairgate-bench loadgen: no request got a response (%llu sent: %llu refused, %llu lost%s)\n",
			(unsigned long long)sent, (unsigned long long)refused, (unsigned long long)lost,
			sent && lost == sent ? "; is anything listening at the target?" : "");
		rc = LG_EXIT_NONE_ANSWERED;
	}
out:
	free_flows(flows, n_flows);
	return rc;
}
