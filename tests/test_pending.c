/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of pending visibility: the query parser and the dispatch-order
 * replay (common/req/pending), a worker's snapshot over polls against the order
 * it really dispatches in (dataplane/worker_snapshot.c), the hand-off's
 * time-out (control/visibility), and the 100k-request bench (docs/benchmarks.md). */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "client.h"
#include "clock.h"
#include "flowcontrol.h"
#include "pending.h"
#include "settings.h"
#include "test.h"
#include "visibility.h"
#include "worker.h"

#define MS 1000000ull

/* --- the query ------------------------------------------------------------------- */

static int parse(const char *k1, const char *v1, const char *k2, const char *v2, struct fg_pending_query *q)
{
	struct fg_kv kv[2] = { { k1, v1 }, { k2, v2 } };
	char err[160];
	return fg_pending_parse_query(kv, k2 ? 2 : k1 ? 1 : 0, q, err, sizeof(err));
}

TEST(query_defaults_and_bounds)
{
	struct fg_pending_query q;
	CHECK_EQ(parse(NULL, NULL, NULL, NULL, &q), 0);
	CHECK_EQ(q.limit, FG_PENDING_DEFAULT_LIMIT);
	CHECK_EQ(q.offset, 0);
	CHECK(!q.details && !q.has_schema && !q.has_dist);
	CHECK_EQ(parse("limit", "100000", "offset", "5", &q), 0);
	CHECK(q.limit == 100000 && q.offset == 5);
	CHECK_EQ(parse("limit", "100001", NULL, NULL, &q), -EINVAL);
	CHECK_EQ(parse("limit", "0", NULL, NULL, &q), -EINVAL);
	CHECK_EQ(parse("limit", "-1", NULL, NULL, &q), -EINVAL);
	CHECK_EQ(parse("limit", "1e3", NULL, NULL, &q), -EINVAL);
	CHECK_EQ(parse("limit", "", NULL, NULL, &q), -EINVAL);
	CHECK_EQ(parse("limit", NULL, NULL, NULL, &q), -EINVAL);
	CHECK_EQ(parse("offset", "99999999999999999999", NULL, NULL, &q), -EINVAL);
	CHECK_EQ(parse("offset", "1073741825", NULL, NULL, &q), -EINVAL);
	CHECK_EQ(parse("limit", "5", "limit", "6", &q), -EINVAL);     /* repeated */
	CHECK_EQ(parse("limits", "5", NULL, NULL, &q), -EINVAL);      /* unknown */
	CHECK_EQ(parse("details", NULL, NULL, NULL, &q), 0);
	CHECK(q.details);
	CHECK_EQ(parse("details", "0", NULL, NULL, &q), 0);
	CHECK(!q.details);
	CHECK_EQ(parse("details", "yes", NULL, NULL, &q), -EINVAL);
	CHECK_EQ(parse("flowSchema", "a\x01", NULL, NULL, &q), -EINVAL);
	CHECK_EQ(parse("distinguisher", "x\x7f", NULL, NULL, &q), -EINVAL);
	CHECK_EQ(parse("flowSchema", "s", "distinguisher", "d\xc3\xa9", &q), 0);
	CHECK(q.has_schema && q.has_dist && !strcmp(q.schema, "s") && !strcmp(q.dist, "d\xc3\xa9"));
	char big[FG_PENDING_MAX_FILTER + 2];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	CHECK_EQ(parse("flowSchema", big, NULL, NULL, &q), -EINVAL);
	big[FG_PENDING_MAX_FILTER] = 0;
	CHECK_EQ(parse("flowSchema", big, NULL, NULL, &q), 0);
	struct fg_kv many[FG_PENDING_MAX_PARAMS + 1];
	for (unsigned i = 0; i <= FG_PENDING_MAX_PARAMS; i++)
		many[i] = (struct fg_kv){ "limit", "1" };
	char err[160];
	CHECK_EQ(fg_pending_parse_query(many, FG_PENDING_MAX_PARAMS + 1, &q, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "too many") != NULL);
	/* The reason is printable whatever the key. */
	struct fg_kv hostile = { "\x1b[2J\xff", "1" };
	CHECK_EQ(fg_pending_parse_query(&hostile, 1, &q, err, sizeof(err)), -EINVAL);
	for (const char *p = err; *p; p++)
		CHECK(*p >= 0x20 && *p < 0x7f);
}

/* --- the replay on hand-made snapshots ------------------------------------------- */

static void add_req(struct fg_snapshot *s, uint32_t qrow, uint64_t finish, uint32_t slot, const char *schema,
		    const char *dist)
{
	struct fg_snap_req *r = &s->reqs[s->n_reqs++];
	memset(r, 0, sizeof(*r));
	r->state = FG_SNAP_WAITING;
	r->qrow = qrow;
	r->queue = s->queues[qrow].index;
	r->finish = finish;
	r->slot = slot;
	r->arrival_ns = slot;
	r->walk = s->n_reqs;
	r->str_off[FG_SNAP_FLOW_SCHEMA] = s->n_strs;
	r->str_len[FG_SNAP_FLOW_SCHEMA] = (uint16_t)strlen(schema);
	memcpy(s->strs + s->n_strs, schema, strlen(schema));
	s->n_strs += (uint32_t)strlen(schema);
	r->str_off[FG_SNAP_DISTINGUISHER] = s->n_strs;
	r->str_len[FG_SNAP_DISTINGUISHER] = (uint16_t)strlen(dist);
	memcpy(s->strs + s->n_strs, dist, strlen(dist));
	s->n_strs += (uint32_t)strlen(dist);
}

static struct fg_snapshot *two_queue_snap(uint64_t r, unsigned worker)
{
	struct fg_snapshot *s = fg_snapshot_new("pl", 0, 16, 4);
	s->n_levels = 1;
	s->levels[0].r = r;
	s->worker = worker;
	s->queues[0] = (struct fg_snap_queue){ .index = 0, .head_tie = 2 };
	s->queues[1] = (struct fg_snap_queue){ .index = 1, .head_tie = 1 };
	s->n_queues = 2;
	return s;
}

TEST(replay_orders_by_finish_ties_round_robin_and_drops_copies)
{
	struct fg_snapshot *s = two_queue_snap(1000, 0);
	/* queue 0: finishes 10, 20, 30; queue 1: 10, 40 — and a second copy of
	 * queue 0's first two requests (a walk restarted from the head). */
	add_req(s, 0, 1010, 1, "a", "x");
	add_req(s, 0, 1020, 2, "a", "x");
	add_req(s, 0, 1010, 1, "a", "x");
	add_req(s, 0, 1020, 2, "a", "x");
	add_req(s, 0, 1030, 3, "a", "y");
	add_req(s, 1, 1010, 4, "b", "x");
	add_req(s, 1, 1040, 5, "b", "z");
	struct fg_pending_query q = { .limit = 100 };
	struct fg_pending_item *it;
	struct fg_pending_counts c;
	struct fg_snapshot *snaps[1] = { s };
	long n = fg_pending_order(snaps, 1, &q, &it, &c);
	CHECK_EQ(n, 5);
	CHECK_EQ(c.waiting, 5);
	/* Equal finishes: queue 1's head was keyed first (tie 1). */
	uint32_t want_slot[] = { 4, 1, 2, 3, 5 }, want_qpos[] = { 0, 0, 1, 2, 1 };
	for (long i = 0; i < n && i < 5; i++) {
		CHECK_EQ(s->reqs[it[i].req].slot, want_slot[i]);
		CHECK_EQ(it[i].pos_level, (uint32_t)i);
		CHECK_EQ(it[i].pos_queue, want_qpos[i]);
	}
	free(it);
	/* Filters before offset and limit; positions stay the level's. */
	q = (struct fg_pending_query){ .limit = 1, .offset = 1, .has_dist = true };
	strcpy(q.dist, "x");
	n = fg_pending_order(snaps, 1, &q, &it, &c);
	CHECK_EQ(n, 1);
	CHECK_EQ(c.matched, 3);
	CHECK_EQ(s->reqs[it[0].req].slot, 1);
	CHECK_EQ(it[0].pos_level, 1);
	free(it);
	q = (struct fg_pending_query){ .limit = 10, .has_schema = true };
	strcpy(q.schema, "nope");
	n = fg_pending_order(snaps, 1, &q, &it, &c);
	CHECK(n == 0 && it == NULL && c.matched == 0 && c.waiting == 5);
	fg_snapshot_free(s);
}

TEST(replay_merges_workers_by_finish_ahead_of_their_own_r)
{
	/* Worker 1's R is far ahead: its absolute finishes are larger but due sooner. */
	struct fg_snapshot *a = two_queue_snap(1000, 0), *b = two_queue_snap(500000, 1);
	add_req(a, 0, 1100, 1, "a", "");
	add_req(a, 0, 1300, 2, "a", "");
	add_req(b, 1, 500050, 1, "b", "");
	add_req(b, 1, 500200, 2, "b", "");
	struct fg_snapshot *snaps[2] = { a, b };
	struct fg_pending_query q = { .limit = 10 };
	struct fg_pending_item *it;
	struct fg_pending_counts c;
	CHECK_EQ(fg_pending_order(snaps, 2, &q, &it, &c), 4);
	/* ahead: b1 50, a1 100, b2 200, a2 300 */
	CHECK(it[0].snap == 1 && it[1].snap == 0 && it[2].snap == 1 && it[3].snap == 0);
	CHECK(it[0].pos_queue == 0 && it[2].pos_queue == 1);
	free(it);
	fg_snapshot_free(a);
	fg_snapshot_free(b);
}

TEST(r_is_printed_as_kubernetes_seat_seconds)
{
	char buf[48];
	fg_pending_format_r(0, buf, sizeof(buf));
	CHECK_STR(buf, "0.00000000ss");
	fg_pending_format_r(1234567890123ull, buf, sizeof(buf));
	CHECK_STR(buf, "1234.56789012ss");
}

TEST(tabwriter_aligns_like_go)
{
	size_t len;
	char *t = fg_vis_tabwrite("A,\tBB,\tC\nlonger-name,\t1,\t2\n", &len);
	/* Column 1: width 12+1; column 2: at least 8. */
	CHECK_STR(t, "A,           BB,     C\nlonger-name, 1,      2\n");
	free(t);
	/* Widths in runes, as Go counts them: "é" is one column. */
	t = fg_vis_tabwrite("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9,\tx\nab,\ty\n", &len);
	CHECK_STR(t, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9, x\nab,        y\n");
	free(t);
}

TEST(hostile_bytes_are_escaped_in_json_and_text)
{
	/* Invalid UTF-8, ESC, quote, backslash, a bidi override, U+2028, NUL-free
	 * control bytes, a valid é and a 4-byte character. */
	const char *hostile = "a\xff\x1b[2J\"\\\xe2\x80\xae\xe2\x80\xa8\x01\x7f\xc3\xa9\xf0\x9f\x98\x80\xc0\xaf\xed\xa0\x80";
	struct fg_vis_answer a;
	fg_vis_error(&a, 400, hostile, true);
	json_error_t jerr;
	json_t *doc = json_loads(a.body, 0, &jerr);
	CHECK(doc != NULL);
	const char *msg = json_string_value(json_object_get(doc, "message"));
	CHECK(msg && strstr(msg, "\\xff") && strstr(msg, "\xc3\xa9") && strstr(msg, "\xf0\x9f\x98\x80"));
	/* On the wire (before a JSON reader decodes it) no control or bidi byte. */
	CHECK(!strchr(a.body, 0x1b) && !strstr(a.body, "\xe2\x80\xae") && !strstr(a.body, "\xe2\x80\xa8"));
	CHECK(strstr(a.body, "\\u202e") && strstr(a.body, "\\u001b"));
	CHECK(msg && strstr(msg, "\\xc0\\xaf") && strstr(msg, "\\xed\\xa0\\x80")); /* overlong, surrogate */
	json_decref(doc);
	free(a.body);
	fg_vis_error(&a, 404, hostile, false);
	CHECK_EQ(a.status, 404);
	for (const char *p = a.body; *p && p[1]; p++)
		CHECK((unsigned char)*p >= 0x20 && *p != 0x7f && !(p[0] == '\xe2' && p[1] == '\x80'));
	CHECK(strchr(a.body, '\n') == a.body + a.len - 1); /* one line */
	free(a.body);
}

/* --- a worker on a fast in-memory io --------------------------------------------- */

/* Buffers from a free list (fake_io.h scans linearly: too slow for 100k). */
struct pool_io {
	uint8_t (*bufs)[FG_PROTO_MAX_DATAGRAM];
	uint32_t *free_list, n_free, cap;
	struct fg_pkt *rxq;
	uint32_t rx_head, rx_tail;
	uint64_t *sent_ids;          /* request ids of the datagrams sent, in order */
	uint8_t *sent_types;
	uint32_t n_sent, cap_sent;
};

static int pool_alloc(void *ctx, struct fg_pkt *p)
{
	struct pool_io *f = ctx;
	if (!f->n_free)
		return -1;
	uint32_t i = f->free_list[--f->n_free];
	p->handle = p->data = f->bufs[i];
	p->len = 0;
	p->cap = FG_PROTO_MAX_DATAGRAM;
	return 0;
}

static void pool_free(void *ctx, struct fg_pkt *p)
{
	struct pool_io *f = ctx;
	f->free_list[f->n_free++] = (uint32_t)(((uint8_t(*)[FG_PROTO_MAX_DATAGRAM])p->handle) - f->bufs);
	p->handle = NULL;
}

static unsigned pool_rx(void *ctx, struct fg_pkt *pkts, unsigned max)
{
	struct pool_io *f = ctx;
	unsigned n = 0;
	while (n < max && f->rx_head != f->rx_tail)
		pkts[n++] = f->rxq[f->rx_head++];
	return n;
}

static void pool_tx(void *ctx, struct fg_pkt *p)
{
	struct pool_io *f = ctx;
	struct fg_msg m;
	if (f->n_sent < f->cap_sent && fg_proto_decode_header(p->data, p->len, &m) == FG_PROTO_OK) {
		f->sent_ids[f->n_sent] = m.hdr.request_id;
		f->sent_types[f->n_sent++] = m.hdr.type;
	}
	pool_free(ctx, p);
}

static unsigned pool_flush(void *ctx, unsigned *dropped)
{
	(void)ctx;
	*dropped = 0;
	return 0;
}

static uint64_t pool_in_use(void *ctx)
{
	struct pool_io *f = ctx;
	return f->cap - f->n_free;
}

static const struct fg_io_ops pool_ops = { .rx = pool_rx, .tx = pool_tx, .flush = pool_flush, .alloc = pool_alloc,
					   .free = pool_free, .in_use = pool_in_use };

static void pool_init(struct pool_io *f, uint32_t cap)
{
	memset(f, 0, sizeof(*f));
	f->cap = cap;
	f->bufs = malloc((size_t)cap * sizeof(*f->bufs));
	f->free_list = malloc(sizeof(uint32_t) * cap);
	f->rxq = malloc(sizeof(struct fg_pkt) * cap);
	f->cap_sent = cap * 2;
	f->sent_ids = malloc(sizeof(uint64_t) * f->cap_sent);
	f->sent_types = malloc(f->cap_sent);
	CHECK(f->bufs && f->free_list && f->rxq && f->sent_ids && f->sent_types);
	for (uint32_t i = 0; i < cap; i++)
		f->free_list[f->n_free++] = cap - 1 - i;
}

static void pool_fini(struct pool_io *f)
{
	free(f->bufs);
	free(f->free_list);
	free(f->rxq);
	free(f->sent_ids);
	free(f->sent_types);
}

static void pool_inject(struct pool_io *f, uint64_t id, const char *user, const char *ns, struct fg_endpoint from)
{
	struct fg_msg m;
	struct fg_pkt p = { .handle = NULL };
	CHECK_EQ(pool_alloc(f, &p), 0);
	fg_msg_init(&m, FG_MSG_REQUEST, id);
	m.user = fg_str_of(user);
	m.ns = fg_str_of(ns);
	m.verb = fg_str_of("list");
	m.resource = fg_str_of("pods");
	int n = fg_proto_encode(p.data, p.cap, &m);
	CHECK(n > 0);
	p.len = (uint32_t)n;
	p.peer = from;
	f->rxq[f->rx_tail++] = p;
}

struct wrig {
	struct pool_io io;
	struct fg_worker w;
	struct fg_config *cfg; /* fg_config_build */
	struct fg_snap_box box;
	struct fg_endpoint client, backend;
	uint64_t now;
};

static struct fg_fc_config *level_config(uint32_t seats, uint32_t queues, uint32_t hand, uint32_t qlen)
{
	char text[2048];
	snprintf(text, sizeof(text),
		 "{\"kind\":\"List\",\"items\":[{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\","
		 "\"kind\":\"PriorityLevelConfiguration\",\"metadata\":{\"name\":\"pl\"},\"spec\":{\"type\":\"Limited\","
		 "\"limited\":{\"limitResponse\":{\"type\":\"Queue\",\"queuing\":{\"queues\":%u,\"handSize\":%u,"
		 "\"queueLengthLimit\":%u}}}}},{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"FlowSchema\","
		 "\"metadata\":{\"name\":\"by-user\"},\"spec\":{\"priorityLevelConfiguration\":{\"name\":\"pl\"},"
		 "\"matchingPrecedence\":500,\"distinguisherMethod\":{\"type\":\"ByUser\"},\"rules\":[{\"subjects\":"
		 "[{\"kind\":\"User\",\"user\":{\"name\":\"*\"}}],\"resourceRules\":[{\"verbs\":[\"*\"],\"apiGroups\":"
		 "[\"*\"],\"resources\":[\"*\"],\"clusterScope\":true,\"namespaces\":[\"*\"]}]}]}}]}",
		 queues, hand, qlen);
	struct fg_fc_set *set = fg_fc_set_new();
	struct fg_errors e = { .len = 0 };
	CHECK_EQ(fg_fc_set_apply(set, (const uint8_t *)text, strlen(text), NULL, &e), 2);
	struct fg_fc_config *fc = fg_fc_compile(set, 1000, &e);
	fg_fc_set_free(set);
	fc->levels[fg_fc_level_index(fc, "pl")].limit = seats;
	return fc;
}

/* The settings the workers' configurations are built from: the daemon's
 * defaults, `seats` seats, nothing timing out within a test (an hour's wait
 * and backend timeout, no ejection), one backend; no per (level, schema)
 * metrics (the rig never had them: the bench's figures in benchmarks.md are
 * without). */
static void wrig_settings(struct fg_settings *s, uint32_t seats, unsigned workers)
{
	fg_settings_defaults(s);
	s->seat_limit = seats;
	s->queue_wait_ns = s->backend_timeout_ns = (int64_t)(3600000 * MS);
	s->eject_after = 1000;
	s->eject_ns = (int64_t)(1000 * MS);
	s->max_eject_ns = (int64_t)(30000 * MS);
	s->flowcontrol_metrics = false;
	s->workers = workers;
	s->n_backends = 1;
	fg_endpoint_parse("127.0.0.1:7501", &s->backends[0].ep);
}

static void wrig_init(struct wrig *r, uint32_t cap, uint32_t queues, uint32_t hand, uint32_t qlen)
{
	memset(r, 0, sizeof(*r));
	pool_init(&r->io, cap + 64);
	CHECK_EQ(fg_worker_init(&r->w, 0, (struct fg_io){ &pool_ops, &r->io }, cap), 0);
	r->w.snap = &r->box;
	struct fg_settings s;
	wrig_settings(&s, 1, 1);
	s.retry_after_ms = 250;
	r->cfg = fg_config_build(&s, level_config(1, queues, hand, qlen), 1);
	CHECK(r->cfg != NULL);
	fg_endpoint_parse("127.0.0.1:1001", &r->client);
	r->backend = s.backends[0].ep;
	r->now = 1000 * MS;
	CHECK_EQ(fg_worker_configure(&r->w, r->cfg, r->now), 0);
}

static void wrig_fini(struct wrig *r)
{
	fg_worker_fini(&r->w);
	fg_config_free(r->cfg);
	pool_fini(&r->io);
}

/* One seat: the backend answers the one executing request (the last REQUEST
 * it was sent) after `took`, and the worker polls. */
static void answer_running(struct wrig *r, uint64_t took)
{
	uint64_t dispatch = 0;
	for (uint32_t j = r->io.n_sent; j-- > 0;)
		if (r->io.sent_types[j] == FG_MSG_REQUEST) {
			dispatch = r->io.sent_ids[j];
			break;
		}
	r->now += took;
	struct fg_msg m;
	struct fg_pkt pk = { .handle = NULL };
	CHECK_EQ(pool_alloc(&r->io, &pk), 0);
	fg_msg_init(&m, FG_MSG_RESPONSE, dispatch);
	pk.len = (uint32_t)fg_proto_encode(pk.data, pk.cap, &m);
	pk.peer = r->backend;
	r->io.rxq[r->io.rx_tail++] = pk;
	fg_worker_poll(&r->w, r->cfg, r->now);
}

/* Ask for a snapshot of level "pl" and poll until the worker gives it back. */
static struct fg_snapshot *snapshot(struct wrig *r, uint32_t flags, uint32_t cap, unsigned *polls)
{
	struct fg_snapshot *s = fg_snapshot_new("pl", flags, cap, cap);
	r->box.buf = s;
	__atomic_store_n(&r->box.asked, r->box.asked + 1, __ATOMIC_RELEASE);
	*polls = 0;
	while (__atomic_load_n(&r->box.done, __ATOMIC_ACQUIRE) != r->box.asked && *polls < 1000000) {
		fg_worker_poll(&r->w, r->cfg, r->now);
		(*polls)++;
	}
	CHECK_EQ(r->box.done, r->box.asked);
	return s;
}

TEST(snapshot_order_is_the_order_the_worker_dispatches)
{
	struct wrig r;
	wrig_init(&r, 4096, 16, 1, 1000);
	/* Uneven flows: a lot from a few users, a little from others. */
	static const char *const users[] = { "alice", "bob", "carol", "dave", "erin", "frank" };
	static const unsigned counts[] = { 200, 90, 7, 1, 30, 3 };
	uint64_t id = 1;
	for (unsigned round = 0; round < 200; round++)
		for (unsigned u = 0; u < 6; u++)
			if (round < counts[u]) {
				pool_inject(&r.io, id++, users[u], "ns", r.client);
				if (id % 37 == 0) /* in several bursts; at one instant, so that the
						   * first request's answer comes in exactly the guess */
					fg_worker_poll(&r.w, r.cfg, r.now);
			}
	for (unsigned i = 0; i < 64; i++)
		fg_worker_poll(&r.w, r.cfg, r.now);
	uint32_t waiting = r.w.stats.waiting;
	CHECK_EQ(waiting, id - 2); /* one executes */
	unsigned polls;
	struct fg_snapshot *s = snapshot(&r, FG_SNAP_DETAILS, 4096, &polls);
	CHECK(s->max_poll_copies <= FG_SNAP_REQS_PER_POLL);
	CHECK(!s->truncated);
	struct fg_pending_query q = { .limit = 100000 };
	struct fg_pending_item *it;
	struct fg_pending_counts c;
	long n = fg_pending_order(&s, 1, &q, &it, &c);
	CHECK_EQ(n, (long)waiting);
	/* Strings: schema and distinguisher from the flow, attributes decoded. */
	size_t len;
	const char *p = fg_snap_str(s, &s->reqs[it[0].req], FG_SNAP_FLOW_SCHEMA, &len);
	CHECK(len == 7 && !memcmp(p, "by-user", 7));
	p = fg_snap_str(s, &s->reqs[it[0].req], FG_SNAP_RESOURCE, &len);
	CHECK(len == 4 && !memcmp(p, "pods", 4));
	/* Now let the backend answer each request in exactly the guess (3 ms),
	 * so no correction moves a finish, and record the dispatch order. */
	uint32_t first_sent = r.io.n_sent;
	for (uint32_t k = 0; k <= waiting; k++)
		answer_running(&r, FG_QS_DEFAULT_GUESS_NS);
	/* Client answers carry the client's ids, in completion = dispatch order;
	 * the first answer is the request that never waited. */
	uint64_t *order = malloc(sizeof(uint64_t) * (waiting + 1));
	uint32_t n_order = 0;
	for (uint32_t j = first_sent; j < r.io.n_sent; j++)
		if (r.io.sent_types[j] == FG_MSG_RESPONSE && n_order <= waiting)
			order[n_order++] = r.io.sent_ids[j];
	CHECK_EQ(n_order, waiting + 1);
	unsigned mismatches = 0;
	for (long i = 0; i < n && (uint32_t)i + 1 < n_order; i++)
		mismatches += s->reqs[it[i].req].client_id != order[i + 1];
	CHECK_EQ(mismatches, 0);
	free(order);
	free(it);
	fg_snapshot_free(s);
	wrig_fini(&r);
}

TEST(snapshot_survives_dispatches_between_polls)
{
	struct wrig r;
	wrig_init(&r, 4096, 8, 1, 2000);
	for (uint64_t id = 1; id <= 3000; id++)
		pool_inject(&r.io, id, id % 3 ? "a" : "b", "ns", r.client);
	for (unsigned i = 0; i < 200; i++)
		fg_worker_poll(&r.w, r.cfg, r.now);
	uint32_t waiting = r.w.stats.waiting;
	CHECK(waiting > 2000);
	/* Ask, and answer requests while the copy is under way: the walk's
	 * place keeps leaving the queues. */
	struct fg_snapshot *s = fg_snapshot_new("pl", 0, 8192, 64);
	r.box.buf = s;
	__atomic_store_n(&r.box.asked, 1, __ATOMIC_RELEASE);
	unsigned polls = 0;
	while (r.box.done != 1 && polls++ < 100000)
		answer_running(&r, 3 * MS);
	CHECK_EQ(r.box.done, 1);
	struct fg_pending_query q = { .limit = 100000 };
	struct fg_pending_item *it;
	struct fg_pending_counts c;
	long n = fg_pending_order(&s, 1, &q, &it, &c);
	/* Every request is listed once, whatever left meanwhile. */
	CHECK(n >= (long)r.w.stats.waiting && n <= (long)waiting);
	for (long i = 1; i < n; i++)
		CHECK(s->reqs[it[i].req].client_id != s->reqs[it[i - 1].req].client_id);
	free(it);
	fg_snapshot_free(s);
	wrig_fini(&r);
}

TEST(two_workers_snapshots_merge_into_one_order)
{
	enum { NW = 2, N = 600 };
	struct pool_io io;
	pool_init(&io, 4096);
	struct fg_mesh mesh;
	CHECK_EQ(fg_mesh_init(&mesh, NW, 64), 0);
	struct fg_settings st;
	wrig_settings(&st, 2, NW);
	st.retry_after_ms = 0; /* each level's adaptive retry-after */
	struct fg_config *cfg = fg_config_build(&st, level_config(2, 16, 2, 200), 1); /* with the board */
	CHECK(cfg != NULL);
	static struct fg_worker w[NW];
	struct fg_snap_box boxes[NW];
	memset(boxes, 0, sizeof(boxes));
	uint64_t now = 1000 * MS;
	for (unsigned i = 0; i < NW; i++) {
		CHECK_EQ(fg_worker_init(&w[i], i, (struct fg_io){ &pool_ops, &io }, 2048), 0);
		CHECK_EQ(fg_worker_join(&w[i], &mesh), 0);
		CHECK_EQ(fg_worker_configure(&w[i], cfg, now), 0);
		w[i].snap = &boxes[i];
	}
	struct fg_endpoint client;
	fg_endpoint_parse("127.0.0.1:1001", &client);
	char user[8];
	for (uint32_t id = 1; id <= N; id++) {
		snprintf(user, sizeof(user), "u%u", id % 9);
		pool_inject(&io, id, user, "ns", client);
		if (id % 50 == 0)
			for (unsigned i = 0; i < NW; i++)
				fg_worker_poll(&w[i], cfg, now);
	}
	for (unsigned k = 0; k < 50; k++)
		for (unsigned i = 0; i < NW; i++)
			fg_worker_poll(&w[i], cfg, now);
	uint32_t waiting = w[0].stats.waiting + w[1].stats.waiting;
	CHECK(waiting >= N - 2 && w[0].stats.waiting > 0 && w[1].stats.waiting > 0);
	struct fg_snapshot *snaps[NW];
	for (unsigned i = 0; i < NW; i++) {
		snaps[i] = fg_snapshot_new("pl", 0, 2048, 2048);
		boxes[i].buf = snaps[i];
		__atomic_store_n(&boxes[i].asked, 1, __ATOMIC_RELEASE);
	}
	for (unsigned k = 0; k < 100 && (boxes[0].done != 1 || boxes[1].done != 1); k++)
		for (unsigned i = 0; i < NW; i++)
			fg_worker_poll(&w[i], cfg, now);
	CHECK(boxes[0].done == 1 && boxes[1].done == 1);
	struct fg_pending_query q = { .limit = 100000 };
	struct fg_pending_item *it;
	struct fg_pending_counts c;
	long n = fg_pending_order(snaps, NW, &q, &it, &c);
	CHECK_EQ(n, (long)waiting);
	/* Every worker has its own queues (a request waits where it arrived),
	 * and the merged order keeps every queue's own order and is sorted by
	 * finish ahead of R. */
	uint32_t next_pos[NW][16] = { { 0 } };
	int64_t last = INT64_MIN;
	for (long i = 0; i < n; i++) {
		const struct fg_snapshot *s = snaps[it[i].snap];
		const struct fg_snap_req *r = &s->reqs[it[i].req];
		CHECK(r->queue < 16 && s->worker < NW);
		if (r->queue >= 16 || s->worker >= NW)
			continue;
		CHECK_EQ(it[i].pos_queue, next_pos[s->worker][r->queue]);
		next_pos[s->worker][r->queue]++;
		int64_t ahead = (int64_t)(r->finish - s->levels[r->level].r);
		CHECK(ahead >= last);
		last = ahead;
	}
	free(it);
	/* dump_queues' snapshot: every queue of the level, an idle one once (from
	 * worker q % n), one with requests from each worker that has some there
	 * (the dump adds those up into one row per index). */
	for (unsigned i = 0; i < NW; i++) {
		fg_snapshot_free(snaps[i]);
		snaps[i] = fg_snapshot_new("", FG_SNAP_ALL_LEVELS | FG_SNAP_ALL_QUEUES, 2048, 4096);
		boxes[i].buf = snaps[i];
		__atomic_store_n(&boxes[i].asked, 2, __ATOMIC_RELEASE);
	}
	for (unsigned k = 0; k < 100 && (boxes[0].done != 2 || boxes[1].done != 2); k++)
		for (unsigned i = 0; i < NW; i++)
			fg_worker_poll(&w[i], cfg, now);
	unsigned seen[16] = { 0 };
	for (unsigned i = 0; i < NW; i++)
		for (uint32_t j = 0; j < snaps[i]->n_queues; j++) {
			const struct fg_snap_queue *sq = &snaps[i]->queues[j];
			if (!strcmp(snaps[i]->levels[sq->level].name, "pl") && sq->index < 16) {
				seen[sq->index]++;
				CHECK(sq->index % NW == i || sq->n_waiting || sq->n_executing);
			}
		}
	for (unsigned k = 0; k < 16; k++)
		CHECK(seen[k] >= 1 && seen[k] <= NW);
	for (unsigned i = 0; i < NW; i++) {
		fg_snapshot_free(snaps[i]);
		w[i].snap = NULL;
		fg_worker_fini(&w[i]);
	}
	struct fg_io ios[NW] = { { &pool_ops, &io }, { &pool_ops, &io } };
	fg_mesh_fini(&mesh, ios);
	fg_config_free(cfg);
	pool_fini(&io);
}

/* --- the hand-off: a worker that does not answer ---------------------------------- */

struct query_arg {
	struct fg_vis *vis;
	const char *level;
	struct fg_vis_answer a;
	int done; /* __atomic release/acquire */
};

static void *query_thread(void *p)
{
	struct query_arg *q = p;
	struct fg_pending_query pq = { .limit = 10 };
	fg_vis_pending(q->vis, q->level, &pq, &q->a);
	__atomic_store_n(&q->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

TEST(a_worker_that_does_not_answer_is_a_503_and_its_late_answer_is_discarded)
{
	struct wrig r;
	wrig_init(&r, 256, 8, 1, 100);
	for (uint64_t id = 1; id <= 20; id++)
		pool_inject(&r.io, id, "a", "ns", r.client);
	fg_worker_poll(&r.w, r.cfg, r.now);
	struct fg_worker_stats *stats[1] = { &r.w.stats };
	struct fg_vis *vis = fg_vis_create(1, stats, 256);
	r.w.snap = fg_vis_box(vis, 0);
	/* Nobody polls: the query gives up after the bound. */
	struct fg_pending_query pq = { .limit = 10 };
	struct fg_vis_answer a;
	uint64_t t0 = fg_now_ns();
	fg_vis_pending(vis, "pl", &pq, &a);
	uint64_t took = fg_now_ns() - t0;
	CHECK_EQ(a.status, 503);
	CHECK(strstr(a.body, "did not answer") != NULL);
	CHECK(took >= FG_SNAP_TIMEOUT_NS && took < 3 * FG_SNAP_TIMEOUT_NS);
	free(a.body);
	/* The worker comes back and finishes the abandoned copy into the buffer
	 * the requester kept lent; the next query frees it and asks anew. */
	fg_worker_poll(&r.w, r.cfg, r.now);
	CHECK_EQ(r.w.snap->done, r.w.snap->asked);
	const char *levels[2] = { "pl", "nope" };
	for (unsigned k = 0; k < 2; k++) {
		struct query_arg q = { .vis = vis, .level = levels[k] };
		pthread_t th;
		CHECK_EQ(pthread_create(&th, NULL, query_thread, &q), 0);
		while (!__atomic_load_n(&q.done, __ATOMIC_ACQUIRE))
			fg_worker_poll(&r.w, r.cfg, r.now);
		pthread_join(th, NULL);
		if (k == 0) {
			CHECK_EQ(q.a.status, 200);
			CHECK(strstr(q.a.body, "\"kind\":\"PendingRequestsSummary\"") != NULL);
			CHECK(strstr(q.a.body, "\"waiting\":19") != NULL);
		} else {
			CHECK_EQ(q.a.status, 404); /* an unknown level, once the workers answered */
		}
		free(q.a.body);
	}
	fg_vis_free(vis); /* the worker polls no more from here */
	r.w.snap = NULL;
	wrig_fini(&r);
}

/* --- the bench: 100 000 waiting requests ------------------------------------------ */

static uint64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

TEST(bench_snapshot_of_100k_waiting_requests)
{
	enum { N = 100000 };
	struct wrig r;
	wrig_init(&r, N + 16, 128, 6, 2000);
	char user[16];
	for (uint32_t id = 1; id <= N; id++) {
		snprintf(user, sizeof(user), "u%u", id % 500);
		pool_inject(&r.io, id, user, "ns", r.client);
	}
	while (r.io.rx_head != r.io.rx_tail)
		fg_worker_poll(&r.w, r.cfg, r.now);
	CHECK_EQ(r.w.stats.waiting, N - 1);
	/* Poll-loop iterations without a snapshot, for comparison. */
	uint64_t idle_max = 0;
	for (unsigned i = 0; i < 200; i++) {
		uint64_t t = wall_ns();
		fg_worker_poll(&r.w, r.cfg, r.now);
		t = wall_ns() - t;
		idle_max = t > idle_max ? t : idle_max;
	}
	uint64_t t_query = wall_ns();
	struct fg_snapshot *s = fg_snapshot_new("pl", 0, N + 1024, N + 1024);
	r.box.buf = s;
	__atomic_store_n(&r.box.asked, 1, __ATOMIC_RELEASE);
	uint64_t poll_max = 0, poll_sum = 0;
	unsigned polls = 0;
	while (r.box.done != 1 && polls < 1000000) {
		uint64_t t = wall_ns();
		fg_worker_poll(&r.w, r.cfg, r.now);
		t = wall_ns() - t;
		poll_max = t > poll_max ? t : poll_max;
		poll_sum += t;
		polls++;
	}
	uint64_t t_copied = wall_ns();
	struct fg_pending_query q = { .limit = 1000 };
	struct fg_pending_item *it;
	struct fg_pending_counts c;
	long n = fg_pending_order(&s, 1, &q, &it, &c);
	uint64_t t_done = wall_ns();
	CHECK_EQ(n, 1000);
	CHECK_EQ(c.waiting, N - 1);
	CHECK(s->max_poll_copies <= FG_SNAP_REQS_PER_POLL);
	CHECK(!s->truncated);
	printf("bench: %u waiting; snapshot over %u polls (max %u requests per poll): poll max %.1f us "
	       "(mean %.1f us, idle poll max %.1f us); copy %.1f ms of poll time, order %.1f ms, query total %.1f ms\n",
	       N - 1, polls, s->max_poll_copies, (double)poll_max / 1e3, (double)poll_sum / polls / 1e3,
	       (double)idle_max / 1e3, (double)(t_copied - t_query) / 1e6, (double)(t_done - t_copied) / 1e6,
	       (double)(t_done - t_query) / 1e6);
	free(it);
	fg_snapshot_free(s);
	r.w.snap = NULL;
	wrig_fini(&r);
}

TEST_MAIN
