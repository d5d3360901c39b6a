/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memory — `fairgate-bench memory`: what fairgate's state costs per request
 * slot, per queue, per tracked flow and per level, from the real structures.
 * Fixed parts are sizeof; what is allocated is measured on the real
 * constructors (fg_reqtable_init, fg_qs_init, fg_usage_init,
 * fg_sock_io_create): heap in use (mallinfo2) at two sizes, so the slope is
 * the cost of one more and malloc's own overhead cancels.  Nothing here is a
 * typed-in number: a field added to a struct shows up.
 *
 * `fairgate-bench fill`: the open-loop sender that fills a daemon with
 * waiting requests (tests/e2e/test_memory.py measures its resident memory):
 * --count requests at --rate, spread over --users flows, never waiting for
 * answers, bounded by --duration; it counts what comes back meanwhile.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <malloc.h>
#include <math.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "bench.h"
#include "client.h"
#include "clock.h"
#include "defs.h"
#include "dpdk_io.h"
#include "endpoint.h"
#include "queueset.h"
#include "reqtable.h"
#include "sock_io.h"
#include "stats.h"
#include "worker.h"

/* Issue 14's goal: state per waiting request beyond its packet buffer. */
#define MEMORY_GOAL_PER_WAITING 128u

/* The two sizes a slope is taken between: large enough that every
 * allocation is its own mapping and page rounding is under 0.1 byte each. */
#define SLOPE_LOW 65536u
#define SLOPE_HIGH (2 * SLOPE_LOW)

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

/* Whether the allocator counts what it hands out (glibc does; a sanitizer's
 * allocator answers mallinfo2 with zeros). */
static bool heap_counted(void)
{
	size_t before = heap_in_use();
	void *probe = malloc(1u << 20);
	bool counted = probe && heap_in_use() >= before + (1u << 20);
	free(probe);
	return counted;
}

/* Heap bytes one call of build(n) keeps until undo(ctx); -1 on failure. */
struct sized {
	void *(*build)(uint32_t n, void *arg);
	void (*undo)(void *obj);
	void *arg;
};

static double heap_of(const struct sized *s, uint32_t n)
{
	size_t before = heap_in_use();
	void *obj = s->build(n, s->arg);
	if (!obj)
		return -1;
	size_t after = heap_in_use();
	s->undo(obj);
	return (double)(after - before);
}

/* Bytes per unit between SLOPE_LOW and SLOPE_HIGH units; -1 on failure. */
static double slope_of(const struct sized *s)
{
	double lo = heap_of(s, SLOPE_LOW), hi = heap_of(s, SLOPE_HIGH);
	if (lo < 0 || hi < 0)
		return -1;
	/* Rounded to 0.1 B: page rounding of the two mappings is below that. */
	return round((hi - lo) / (SLOPE_HIGH - SLOPE_LOW) * 10) / 10;
}

/* --- the constructors measured -------------------------------------------- */

static void *build_reqtable(uint32_t n, void *arg)
{
	(void)arg;
	struct fg_reqtable *t = calloc(1, sizeof(*t));
	if (t && fg_reqtable_init(t, n)) {
		free(t);
		return NULL;
	}
	return t;
}

static void undo_reqtable(void *obj)
{
	fg_reqtable_fini(obj);
	free(obj);
}

/* A queue set: arg gives the configuration; n is its queues (queues_vary)
 * or its seats. */
struct qs_arg {
	struct fg_qs_config cfg;
	bool queues_vary;
};

static void *build_qs(uint32_t n, void *arg)
{
	struct qs_arg *a = arg;
	struct fg_qs_config cfg = a->cfg;
	if (a->queues_vary)
		cfg.queues = n;
	else
		cfg.concurrency_limit = cfg.capacity = n;
	struct fg_queueset *qs = calloc(1, sizeof(*qs));
	if (qs && fg_qs_init(qs, &cfg, 0)) {
		free(qs);
		return NULL;
	}
	return qs;
}

static void undo_qs(void *obj)
{
	fg_qs_fini(obj);
	free(obj);
}

static const struct fg_usage_params usage_params = { 8 * FG_NS_PER_SEC, FG_NS_PER_SEC, 0 };

static void *build_usage(uint32_t n, void *arg)
{
	(void)arg;
	struct fg_usage *u = calloc(1, sizeof(*u));
	if (u && fg_usage_init(u, n, &usage_params, 0)) {
		free(u);
		return NULL;
	}
	return u;
}

static void undo_usage(void *obj)
{
	fg_usage_fini(obj);
	free(obj);
}

static void *build_sock_io(uint32_t n, void *arg)
{
	(void)arg;
	struct fg_endpoint lo = { .ip = htonl(INADDR_LOOPBACK), .port = 0 };
	int err = 0;
	return fg_sock_io_create(&lo, n, false, &err);
}

static void undo_sock_io(void *obj) { fg_sock_io_free(obj); }

/* --- the report ------------------------------------------------------------ */

struct figures {
	double slot;              /* heap per request slot (the table) */
	/* A packet buffer is all its pool spends on it: */
	double sock_buffer;       /* socket mode: heap per datagram buffer, its free-stack entry included */
	double sock_beyond;       /* ... beyond the FG_PROTO_MAX_DATAGRAM bytes */
	double dpdk_buffer;       /* DPDK mode: one mbuf as its mempool lays it out, its ring slot included */
	double dpdk_beyond;       /* ... beyond the mbuf (mempool header and trailer, ring slot) */
	double per_waiting;       /* fairgate's state per waiting request beyond its packet buffer */
	double queue, queue_weighted, seat;
	double level_heap_fixed;  /* a MaxMin level of one queue and one seat, minus both slopes */
	double usage_flow;        /* UsageBased: per tracked flow in the usage table */
	size_t flow_stats;        /* per flow-statistics entry (a worker's fixed table) */
	size_t level_fixed;       /* fg_level_rt + fg_level_stats, in every worker for each of FG_MAX_LEVELS */
	size_t board_queue;       /* several workers: a queue's load on the board */
	size_t worker_fixed;      /* sizeof(struct fg_worker) */
};

static int measure(struct figures *f)
{
	memset(f, 0, sizeof(*f));
	if (!heap_counted())
		return -ENOTSUP;
	struct sized reqtable = { build_reqtable, undo_reqtable, NULL };
	f->slot = slope_of(&reqtable);
	struct sized sock = { build_sock_io, undo_sock_io, NULL };
	f->sock_buffer = slope_of(&sock);
	f->sock_beyond = f->sock_buffer - FG_PROTO_MAX_DATAGRAM;

	/* An mbuf as fg_dpdk_io's pool makes them (RTE_MBUF_DEFAULT_BUF_SIZE of
	 * data room), plus its pointer in the pool's ring.  The mempool's own
	 * arithmetic: with hugepages; without, each object takes a page. */
	struct rte_mempool_objsz sz;
	uint32_t elt = (uint32_t)(sizeof(struct rte_mbuf) + FG_DPDK_MBUF_PRIV + RTE_MBUF_DEFAULT_BUF_SIZE);
	f->dpdk_buffer = rte_mempool_calc_obj_size(elt, 0, &sz) + sizeof(void *);
	f->dpdk_beyond = f->dpdk_buffer - elt;

	/* Nothing else grows with the requests that wait: the queue set links
	 * them through their slots and allocates nothing after creation, and
	 * the flow and level tables are fixed. */
	f->per_waiting = f->slot;

	struct qs_arg qa = { .cfg = { .mode = FG_QS_QUEUE, .queues = 1, .hand_size = 1, .queue_length_limit = 50,
				      .concurrency_limit = 1, .capacity = 1, .seed = 1 },
			     .queues_vary = true };
	struct sized qs = { build_qs, undo_qs, &qa };
	f->queue = slope_of(&qs);
	double one = heap_of(&qs, 1);
	qa.cfg.weighted = true;
	f->queue_weighted = slope_of(&qs);
	qa.cfg.weighted = false;
	qa.queues_vary = false;
	f->seat = slope_of(&qs);
	f->level_heap_fixed = one - f->queue - f->seat;

	struct sized usage = { build_usage, undo_usage, NULL };
	f->usage_flow = slope_of(&usage);

	const struct fg_worker_stats *ws = NULL;
	f->flow_stats = (sizeof(ws->flows) + sizeof(ws->flow_keys) + sizeof(ws->flow_idle)) / FG_FLOW_TABLE_SIZE;
	f->level_fixed = sizeof(struct fg_level_rt) + sizeof(struct fg_level_stats);
	f->board_queue = sizeof(struct fg_queue_load);
	f->worker_fixed = sizeof(struct fg_worker);
	if (f->slot < 0 || f->sock_buffer < 0 || f->queue < 0 || one < 0 || f->queue_weighted < 0 || f->seat < 0 ||
	    f->usage_flow < 0)
		return -ENOMEM;
	return 0;
}

static void print_text(const struct figures *f)
{
	printf("request slot (struct fg_req, the queue set's part included): sizeof %zu, heap per slot %.1f B\n",
	       sizeof(struct fg_req), f->slot);
	printf("  of which struct fg_qs_req: %zu B, struct fg_pkt: %zu B\n", sizeof(struct fg_qs_req),
	       sizeof(struct fg_pkt));
	printf("packet buffer, socket mode: %.1f B (%u B datagram + %.1f B of the pool's bookkeeping)\n", f->sock_buffer,
	       FG_PROTO_MAX_DATAGRAM, f->sock_beyond);
	printf("packet buffer, DPDK mode: %.1f B per mbuf in its mempool (%.1f B of it beyond the mbuf)\n", f->dpdk_buffer,
	       f->dpdk_beyond);
	printf("state per waiting request beyond its packet buffer: %.1f B, both modes (goal <= %u: %s)\n",
	       f->per_waiting, MEMORY_GOAL_PER_WAITING, f->per_waiting <= MEMORY_GOAL_PER_WAITING ? "met" : "missed");
	printf("per queue: %.1f B (struct fg_qs_queue %zu B, skip-list node and the rest); weighted level %.1f B; "
	       "on the board (several workers) %zu B more\n", f->queue, sizeof(struct fg_qs_queue),
	       f->queue_weighted, f->board_queue);
	printf("per seat of a level's capacity (fair-share trees): %.1f B\n", f->seat);
	printf("per level: %zu B fixed in every worker (struct fg_level_rt %zu + struct fg_level_stats %zu, "
	       "x %u levels = %zu B) + %.1f B heap + per queue + per seat\n", f->level_fixed,
	       sizeof(struct fg_level_rt), sizeof(struct fg_level_stats), FG_MAX_LEVELS,
	       f->level_fixed * FG_MAX_LEVELS, f->level_heap_fixed);
	printf("per tracked flow: statistics entry %zu B (a fixed table of %u per worker = %zu B); UsageBased usage "
	       "entry %.1f B\n", f->flow_stats, FG_FLOW_TABLE_SIZE, f->flow_stats * FG_FLOW_TABLE_SIZE, f->usage_flow);
	printf("per worker, fixed: struct fg_worker %zu B\n", f->worker_fixed);
}

static int print_json(const struct figures *f)
{
	json_t *o = json_pack("{s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:i, s:b}",
			      "slot_sizeof", (json_int_t)sizeof(struct fg_req),
			      "qs_req_sizeof", (json_int_t)sizeof(struct fg_qs_req),
			      "pkt_sizeof", (json_int_t)sizeof(struct fg_pkt),
			      "slot_bytes", f->slot,
			      "sock_buffer_bytes", f->sock_buffer, "sock_buffer_beyond_datagram", f->sock_beyond,
			      "dpdk_buffer_bytes", f->dpdk_buffer, "dpdk_buffer_beyond_mbuf", f->dpdk_beyond,
			      "per_waiting_request", f->per_waiting,
			      "goal_per_waiting_request", (json_int_t)MEMORY_GOAL_PER_WAITING,
			      "goal_met", f->per_waiting <= MEMORY_GOAL_PER_WAITING);
	json_t *more = json_pack("{s:f, s:i, s:f, s:f, s:i, s:f, s:i, s:i, s:f, s:i, s:i, s:i}",
				 "queue_bytes", f->queue, "qs_queue_sizeof", (json_int_t)sizeof(struct fg_qs_queue),
				 "queue_bytes_weighted", f->queue_weighted, "seat_bytes", f->seat,
				 "board_queue_bytes", (json_int_t)f->board_queue,
				 "level_heap_fixed_bytes", f->level_heap_fixed,
				 "level_fixed_bytes", (json_int_t)f->level_fixed, "max_levels", (json_int_t)FG_MAX_LEVELS,
				 "usage_flow_bytes", f->usage_flow, "flow_stats_bytes", (json_int_t)f->flow_stats,
				 "flow_table_size", (json_int_t)FG_FLOW_TABLE_SIZE,
				 "worker_fixed_bytes", (json_int_t)f->worker_fixed);
	if (!o || !more || json_object_update(o, more)) {
		json_decref(o);
		json_decref(more);
		return 1;
	}
	json_decref(more);
	char *s = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
	json_decref(o);
	if (!s)
		return 1;
	puts(s);
	free(s);
	return 0;
}

int fg_bench_memory(int argc, char **argv)
{
	static const struct option opts[] = { { "json", no_argument, NULL, 'j' }, { "help", no_argument, NULL, 'h' },
					      { 0 } };
	bool json = false;
	int c;
	while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		if (c == 'j') {
			json = true;
		} else {
			fprintf(c == 'h' ? stdout : stderr,
				"usage: fairgate-bench memory [--json]\n"
				"  bytes per request slot, queue, seat, tracked flow and level, from the real structures\n"
				"  and allocations; the daemon's resident memory: tests/e2e/test_memory.py\n");
			return c == 'h' ? 0 : 2;
		}
	}
	struct figures f;
	int rc = measure(&f);
	if (rc == -ENOTSUP) {
		fprintf(stderr, "fairgate-bench memory: this allocator keeps no statistics (a sanitizer build?); "
				"the figures need glibc's malloc\n");
		return 77;
	}
	if (rc) {
		fprintf(stderr, "fairgate-bench memory: an allocation failed\n");
		return 1;
	}
	if (json)
		return print_json(&f);
	print_text(&f);
	return 0;
}

/* --- fill --------------------------------------------------------------- */

#define FILL_BURST 64u
#define FILL_MAX_USERS 1000000u

struct fill {
	const char *target;
	uint64_t count;
	uint32_t users;
	double rate;
	int64_t duration_ns, settle_ns;
	uint64_t first_id;
	/* results */
	uint64_t sent, send_errors, responses, rejects[FG_REJECT__COUNT], rejected, other;
};

static void take_answers(struct fill *f, int fd)
{
	uint8_t buf[FG_PROTO_MAX_DATAGRAM];
	struct fg_msg m;
	for (unsigned i = 0; i < 4096; i++) {
		int n = fg_recv_msg(fd, buf, sizeof(buf), &m, NULL, 0);
		if (n == -ETIMEDOUT || n == -EAGAIN)
			return;
		if (n < 0) {
			f->other++;
			continue;
		}
		if (m.hdr.type == FG_MSG_RESPONSE)
			f->responses++;
		else if (m.hdr.type == FG_MSG_REJECT && m.hdr.reason < FG_REJECT__COUNT) {
			f->rejects[m.hdr.reason]++;
			f->rejected++;
		} else
			f->other++;
	}
}

static int run_fill(struct fill *f)
{
	int fd = fg_udp_open(NULL, f->target);
	if (fd < 0) {
		fprintf(stderr, "fairgate-bench fill: %s: %s\n", f->target, strerror(-fd));
		return 1;
	}
	int sndbuf = 4 << 20;
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sndbuf, sizeof(sndbuf));
	uint64_t start = fg_now_ns(), stop = start + (uint64_t)f->duration_ns;
	double per_ns = f->rate / 1e9;
	char user[32];
	while (f->sent < f->count && !fg_bench_stop) {
		uint64_t now = fg_now_ns();
		if (now >= stop)
			break;
		uint64_t due = (uint64_t)((double)(now - start) * per_ns) + 1;
		if (due > f->count)
			due = f->count;
		for (unsigned b = 0; f->sent < due && b < FILL_BURST; b++) {
			struct fg_msg m;
			fg_msg_init(&m, FG_MSG_REQUEST, f->first_id + f->sent);
			snprintf(user, sizeof(user), "fill-%u", (unsigned)(f->sent % f->users));
			m.user = fg_str_of(user);
			m.verb = fg_str_of("get");
			m.resource = fg_str_of("pods");
			if (fg_send_msg(fd, &m, NULL) < 0)
				f->send_errors++;
			f->sent++;
		}
		take_answers(f, fd);
		if (f->sent >= due)
			poll(NULL, 0, 1);
	}
	/* What the daemon answers right away (rejects) comes back within the settle time. */
	uint64_t settle_end = fg_now_ns() + (uint64_t)f->settle_ns;
	while (fg_now_ns() < settle_end && !fg_bench_stop) {
		take_answers(f, fd);
		poll(NULL, 0, 5);
	}
	close(fd);
	return 0;
}

int fg_bench_fill(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "target", required_argument, NULL, 't' }, { "count", required_argument, NULL, 'n' },
		{ "users", required_argument, NULL, 'u' }, { "rate", required_argument, NULL, 'r' },
		{ "duration", required_argument, NULL, 'd' }, { "settle", required_argument, NULL, 's' },
		{ "first-id", required_argument, NULL, 'i' }, { "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' }, { 0 }
	};
	struct fill f = { .target = "127.0.0.1:7400", .count = 10000, .users = 1000, .rate = 100000,
			  .duration_ns = 60 * (int64_t)FG_NS_PER_SEC, .settle_ns = 200 * (int64_t)FG_NS_PER_MS,
			  .first_id = 1 };
	bool json = false;
	int c;
	char *end;
	while ((c = getopt_long(argc, argv, "t:n:u:r:d:s:i:jh", opts, NULL)) != -1) {
		switch (c) {
		case 't': f.target = optarg; break;
		case 'n': f.count = strtoull(optarg, &end, 10); if (*end || f.count == 0 || f.count > (1ull << 26)) goto bad; break;
		case 'u': f.users = (uint32_t)strtoul(optarg, &end, 10); if (*end || f.users == 0 || f.users > FILL_MAX_USERS) goto bad; break;
		case 'r': f.rate = strtod(optarg, &end); if (*end || !(f.rate > 0 && f.rate <= 1e7)) goto bad; break;
		case 'd': f.duration_ns = fg_bench_duration_arg("--duration", optarg); break;
		case 's': f.settle_ns = fg_bench_duration_arg("--settle", optarg); break;
		case 'i': f.first_id = strtoull(optarg, &end, 10); if (*end) goto bad; break;
		case 'j': json = true; break;
		case 'h':
		default:
			goto usage;
		}
	}
	fg_bench_install_signals();
	if (run_fill(&f))
		return 1;
	if (json) {
		json_t *rej = json_object();
		for (unsigned r = 1; r < FG_REJECT__COUNT; r++)
			json_object_set_new(rej, fg_reject_reason_name((enum fg_reject_reason)r), json_integer((json_int_t)f.rejects[r]));
		json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:o, s:I}", "sent", (json_int_t)f.sent,
				      "send_errors", (json_int_t)f.send_errors, "responses", (json_int_t)f.responses,
				      "rejected_total", (json_int_t)f.rejected, "rejected", rej, "other", (json_int_t)f.other);
		char *s = o ? json_dumps(o, JSON_INDENT(2)) : NULL;
		json_decref(o);
		if (!s)
			return 1;
		puts(s);
		free(s);
	} else {
		printf("sent %llu (send errors %llu), answered meanwhile: %llu responses, %llu rejects\n",
		       (unsigned long long)f.sent, (unsigned long long)f.send_errors, (unsigned long long)f.responses,
		       (unsigned long long)f.rejected);
	}
	return 0;
bad:
	fprintf(stderr, "fairgate-bench fill: -%c: invalid value \"%s\"\n", c, optarg);
	return 2;
usage:
	fprintf(c == 'h' ? stdout : stderr,
		"usage: fairgate-bench fill [--target ADDR:PORT] [--count N] [--users U] [--rate PER_SEC]\n"
		"                           [--duration D] [--settle D] [--first-id ID] [--json]\n"
		"  sends N requests (users fill-0 .. fill-U-1) at the rate without waiting for answers, for\n"
		"  at most D (default 60s); counts the answers that arrive meanwhile and for --settle after\n");
	return c == 'h' ? 0 : 2;
}
