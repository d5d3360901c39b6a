/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the worker's dispatcher logic (dataplane/worker.c) on a fake
 * io and a virtual clock. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "allotter.h"
#include "client.h"
#include "flowcontrol.h"
#include "fake_io.h"
#include "seatshare.h"
#include "settings.h"
#include "test.h"
#include "trust.h"
#include "worker.h"

#define MS 1000000ull

struct rig {
	struct fake_io io;
	struct fg_worker w;
	struct fg_config cfg;
	struct fg_endpoint client[4], backend[2];
	uint64_t now;
	unsigned seen; /* sent datagrams already inspected */
};

/* One level "pl" (64 queues, hand 1: a flow always lands in the same queue)
 * that every request reaches, its limit set to `seats`. */
static struct fg_fc_config *one_level_queues(uint32_t seats, uint32_t qlen, uint32_t queues)
{
	char text[2048];
	snprintf(text, sizeof(text), "{\"kind\":\"List\",\"items\":["
		"{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"PriorityLevelConfiguration\","
		"\"metadata\":{\"name\":\"pl\"},\"spec\":{\"type\":\"Limited\",\"limited\":{\"limitResponse\":"
		"{\"type\":\"Queue\",\"queuing\":{\"queues\":%u,\"handSize\":1,\"queueLengthLimit\":%u}}}}},"
		"{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"FlowSchema\",\"metadata\":{\"name\":\"all\"},"
		"\"spec\":{\"priorityLevelConfiguration\":{\"name\":\"pl\"},\"matchingPrecedence\":500,"
		"\"distinguisherMethod\":{\"type\":\"ByUser\"},\"rules\":[{\"subjects\":[{\"kind\":\"User\","
		"\"user\":{\"name\":\"*\"}}],\"resourceRules\":[{\"verbs\":[\"*\"],\"apiGroups\":[\"*\"],"
		"\"resources\":[\"*\"],\"clusterScope\":true,\"namespaces\":[\"*\"]}]}]}}]}", queues, qlen);
	struct fg_fc_set *set = fg_fc_set_new();
	struct fg_errors e = { .len = 0 };
	CHECK(fg_fc_set_apply(set, (const uint8_t *)text, strlen(text), NULL, &e) == 2);
	struct fg_fc_config *fc = fg_fc_compile(set, 1000, &e);
	fg_fc_set_free(set);
	int k = fg_fc_level_index(fc, "pl");
	fc->levels[k].limit = seats;
	fc->levels[k].max_seats = 0; /* the tests send wide requests on purpose */
	return fc;
}

static struct fg_fc_config *one_level(uint32_t seats, uint32_t qlen)
{
	return one_level_queues(seats, qlen, 64);
}

static struct fg_queueset *pl_qs(struct fg_worker *w)
{
	for (uint32_t k = 0; k < w->n_levels; k++)
		if (w->levels[k].used && !strcmp(w->stats.levels[k].name, "pl"))
			return &w->levels[k].qs;
	return NULL;
}

/* What the daemon's settings give every configuration by default: loopback
 * sources trusted, the default extra-latency cap. */
static void default_trust(struct fg_config *c)
{
	struct fg_settings s;
	fg_settings_defaults(&s);
	c->max_extra_latency_ns = (uint64_t)s.max_extra_latency_ns;
	fg_trust_init(&c->trust, &s);
}

static void rig_init(struct rig *r, uint32_t seats, uint32_t qlen, unsigned n_backends)
{
	memset(r, 0, sizeof(*r));
	fake_init(&r->io);
	fg_worker_init(&r->w, 3, (struct fg_io){ &fake_ops, &r->io }, 256);
	r->cfg.seat_limit = seats;
	r->cfg.fc = one_level(seats, qlen);
	r->cfg.generation = 1;
	r->cfg.queue_wait_ns = 1000 * MS;
	r->cfg.backend_timeout_ns = 5000 * MS;
	r->cfg.retry_after_ms = 250;
	r->cfg.flowcontrol_metrics = true;
	r->cfg.eject_after = 3;
	r->cfg.eject_ns = 1000 * MS;
	r->cfg.max_eject_ns = 30000 * MS;
	default_trust(&r->cfg);
	r->cfg.n_backends = n_backends;
	for (int i = 0; i < 4; i++)
		fg_endpoint_parse((const char *[]){ "127.0.0.1:1001", "127.0.0.1:1002", "127.0.0.2:1003", "127.0.0.3:1004" }[i],
				  &r->client[i]);
	fg_endpoint_parse("127.0.0.1:7501", &r->backend[0]);
	fg_endpoint_parse("127.0.0.1:7502", &r->backend[1]);
	for (unsigned i = 0; i < n_backends; i++)
		r->cfg.backends[i].ep = r->backend[i];
	r->now = 1000 * MS;
	CHECK_EQ(fg_worker_configure(&r->w, &r->cfg, r->now), 0);
}

static void rig_fini(struct rig *r)
{
	fg_worker_fini(&r->w);
	fg_fc_config_free(r->cfg.fc);
	CHECK_EQ(r->io.in_use, 0); /* every buffer came back */
	fake_fini(&r->io);
}

/* A REQUEST from `from` (payload "body"), as a client sends it. */
static void inject_request(struct fake_io *io, struct fg_endpoint from, uint64_t id, const char *user, uint16_t seats)
{
	struct fg_msg m;
	uint8_t buf[512];
	fg_msg_init(&m, FG_MSG_REQUEST, id);
	m.user = fg_str_of(user);
	m.verb = fg_str_of("get");
	m.hdr.seats = seats;
	m.payload = (const uint8_t *)"body";
	m.payload_len = 4;
	int n = fg_proto_encode(buf, sizeof(buf), &m);
	fake_inject(io, buf, (size_t)n, from);
}

/* A backend's RESPONSE to a dispatch id. */
static void inject_response(struct fake_io *io, struct fg_endpoint from, uint64_t dispatch_id, const char *body)
{
	struct fg_msg m;
	uint8_t buf[256];
	fg_msg_init(&m, FG_MSG_RESPONSE, dispatch_id);
	m.payload = (const uint8_t *)body;
	m.payload_len = strlen(body);
	int n = fg_proto_encode(buf, sizeof(buf), &m);
	fake_inject(io, buf, (size_t)n, from);
}

static void send_request(struct rig *r, int client, uint64_t id, const char *user, uint16_t seats)
{
	inject_request(&r->io, r->client[client], id, user, seats);
}

static void step(struct rig *r) { fg_worker_poll(&r->w, &r->cfg, r->now); }

/* The next datagram the worker sent, decoded. */
static int next_sent(struct rig *r, struct fg_msg *m, struct fg_endpoint *to)
{
	memset(to, 0, sizeof(*to));
	if (r->seen >= r->io.n_sent)
		return 0;
	struct fake_sent *s = &r->io.sent[r->seen++];
	*to = s->to;
	return fg_proto_decode(s->data, s->len, m) == FG_PROTO_OK;
}

static void respond_from(struct rig *r, int backend, uint64_t dispatch_id, const char *body)
{
	inject_response(&r->io, r->backend[backend], dispatch_id, body);
}

/* The per-(level, schema) figures (apfstats.h) agree with the worker's
 * totals: every classified request is estimated once and ends its wait once
 * (dispatched, or rejected), gauges match the lists, seats the queue sets'. */
static void check_apf(struct fg_worker *w)
{
	const struct fg_worker_stats *s = &w->stats;
	uint64_t seats = 0, waits[2] = { 0, 0 }, dispatched = 0, inqueue = 0, executing = 0, exec_seats = 0, rej = 0,
		 srej = 0;
	for (uint32_t i = 0; i < s->apf.n_used; i++) {
		const struct fg_apf_pair *p = &s->apf.pairs[i];
		seats += fg_apf_hist_count(p, FG_APF_SEATS);
		waits[0] += fg_apf_hist_count(p, FG_APF_WAIT_REJECTED);
		waits[1] += fg_apf_hist_count(p, FG_APF_WAIT_DISPATCHED);
		dispatched += fg_apf_hist_count(p, FG_APF_WAIT_DISPATCHED);
		inqueue += p->inqueue;
		executing += p->executing;
		exec_seats += p->executing_seats;
		for (int k = 0; k < FG_REJECT__COUNT; k++)
			rej += p->rejected[k];
	}
	for (int k = 0; k < FG_REJECT__COUNT; k++)
		srej += s->rejected[k];
	uint32_t seats_in_use = 0;
	for (uint32_t k = 0; k < w->n_levels; k++)
		if (w->levels[k].used)
			seats_in_use += w->levels[k].qs.seats_in_use;
	uint64_t classified = s->received - s->unfollowed_rejected;
	CHECK_EQ(seats, classified);
	CHECK_EQ(waits[0] + waits[1], classified - s->waiting);
	CHECK_EQ(dispatched, s->dispatched);
	CHECK_EQ(inqueue, s->waiting);
	CHECK_EQ(executing, s->executing);
	CHECK_EQ(exec_seats, seats_in_use);
	CHECK_EQ(rej, srej - s->unfollowed_rejected); /* no backend sends REJECTs in these tests */
}

static void check_invariant(struct rig *r)
{
	struct fg_worker_stats *s = &r->w.stats;
	uint64_t rej = 0;
	for (int i = 0; i < FG_REJECT__COUNT; i++)
		rej += s->rejected[i];
	CHECK_EQ(s->received, s->responded + rej + s->answers_lost + s->waiting + s->executing);
	if (r->w.apf_metrics)
		check_apf(&r->w);
}

TEST(request_dispatched_and_response_relayed)
{
	struct rig r;
	rig_init(&r, 4, 10, 1);
	send_request(&r, 0, 42, "alice", 0);
	step(&r);
	struct fg_msg m;
	struct fg_endpoint to;
	CHECK(next_sent(&r, &m, &to));
	CHECK(fg_endpoint_same_addr(&to, &r.backend[0]));
	CHECK_EQ(m.hdr.type, FG_MSG_REQUEST);
	CHECK(!(m.hdr.flags & FG_FLAG_IDENTITY_UNVERIFIED)); /* a trusted source */
	CHECK(m.hdr.request_id != 42);                  /* rewritten to a dispatch id */
	CHECK_EQ(fg_dispatch_id_worker(m.hdr.request_id), 3);
	CHECK_EQ(m.payload_len, 4);                     /* payload forwarded unchanged */
	CHECK(!memcmp(m.payload, "body", 4));
	CHECK_EQ(r.w.stats.executing, 1);
	respond_from(&r, 0, m.hdr.request_id, "answer");
	step(&r);
	CHECK(next_sent(&r, &m, &to));
	CHECK(fg_endpoint_same_addr(&to, &r.client[0]));
	CHECK_EQ(m.hdr.type, FG_MSG_RESPONSE);
	CHECK(m.hdr.request_id == 42);                  /* the client's id restored */
	CHECK_EQ(m.payload_len, 6);
	CHECK_EQ(r.w.stats.responded, 1);
	CHECK_EQ(pl_qs(&r.w)->seats_in_use, 0);
	CHECK_EQ(r.w.reqs.in_use, 0);
	check_invariant(&r);
	rig_fini(&r);
}

/* Answers are relayed on their header: attributes a client would refuse
 * (here a NUL in a user value) are the backend's business and pass as they
 * came; a request with the same attributes is refused as invalid. */
TEST(answer_attributes_are_relayed_unread)
{
	struct rig r;
	rig_init(&r, 4, 10, 1);
	send_request(&r, 0, 7, "alice", 0);
	step(&r);
	struct fg_msg m;
	struct fg_endpoint to;
	CHECK(next_sent(&r, &m, &to));
	uint64_t dispatch_id = m.hdr.request_id;
	uint8_t buf[128];
	fg_msg_init(&m, FG_MSG_RESPONSE, dispatch_id);
	m.user = (struct fg_str){ "a\0b", 3 };
	int n = fg_proto_encode(buf, sizeof(buf), &m);
	CHECK(n > 0);
	fake_inject(&r.io, buf, (size_t)n, r.backend[0]);
	step(&r);
	CHECK_EQ(r.io.n_sent, r.seen + 1);
	struct fake_sent *out = &r.io.sent[r.seen++];
	CHECK(fg_endpoint_same_addr(&out->to, &r.client[0]));
	CHECK_EQ(out->len, (size_t)n);
	CHECK_EQ(fg_proto_get_request_id(out->data), 7);
	CHECK(!memcmp(out->data + 16, buf + 16, (size_t)n - 16)); /* all but magic..id unchanged */
	CHECK_EQ(r.w.stats.responded, 1);
	CHECK_EQ(r.w.stats.rx_malformed, 0);
	/* The same attributes in a request: REJECT invalid to its client. */
	fg_msg_init(&m, FG_MSG_REQUEST, 8);
	m.user = (struct fg_str){ "a\0b", 3 };
	n = fg_proto_encode(buf, sizeof(buf), &m);
	fake_inject(&r.io, buf, (size_t)n, r.client[0]);
	step(&r);
	CHECK(next_sent(&r, &m, &to));
	CHECK_EQ(m.hdr.type, FG_MSG_REJECT);
	CHECK_EQ(m.hdr.reason, FG_REJECT_INVALID);
	CHECK_EQ(r.w.stats.rx_malformed, 1);
	check_invariant(&r);
	rig_fini(&r);
}

TEST(fair_order_between_flows)
{
	/* One seat; "a" queues four requests before "b" sends one.  A FIFO would
	 * serve b last; the fair queue set serves it right after a's first. */
	struct rig r;
	rig_init(&r, 1, 10, 1);
	for (uint64_t id = 1; id <= 4; id++)
		send_request(&r, 0, id, "a", 1);
	send_request(&r, 1, 100, "b", 1);
	step(&r);
	CHECK_EQ(r.w.stats.executing, 1);
	CHECK_EQ(r.w.stats.waiting, 4);
	check_invariant(&r);
	uint64_t order[8];
	unsigned n_order = 0;
	struct fg_msg m;
	struct fg_endpoint to;
	for (unsigned k = 0; k < 5; k++) {
		uint64_t dispatch = 0;
		while (next_sent(&r, &m, &to)) {
			if (m.hdr.type == FG_MSG_REQUEST)
				dispatch = m.hdr.request_id;
			else if (m.hdr.type == FG_MSG_RESPONSE && n_order < 8)
				order[n_order++] = m.hdr.request_id;
		}
		r.now += 10 * MS;
		respond_from(&r, 0, dispatch, "ok");
		step(&r);
	}
	while (next_sent(&r, &m, &to))
		if (m.hdr.type == FG_MSG_RESPONSE && n_order < 8)
			order[n_order++] = m.hdr.request_id;
	CHECK_EQ(n_order, 5);
	CHECK(order[0] == 1 && order[1] == 100); /* b is not stuck behind a's backlog */
	CHECK_EQ(r.w.stats.responded, 5);
	check_invariant(&r);
	rig_fini(&r);
}

TEST(queue_full_rejects_the_youngest)
{
	struct rig r;
	rig_init(&r, 1, 2, 1);
	for (uint64_t id = 1; id <= 4; id++)
		send_request(&r, 0, id, "a", 1);
	step(&r);
	struct fg_msg m;
	struct fg_endpoint to;
	unsigned rejects = 0;
	while (next_sent(&r, &m, &to))
		if (m.hdr.type == FG_MSG_REJECT) {
			rejects++;
			CHECK(m.hdr.request_id == 4);
			CHECK_EQ(m.hdr.reason, FG_REJECT_QUEUE_FULL);
			CHECK_EQ(m.hdr.retry_after_ms, 250);
			CHECK(fg_endpoint_same_addr(&to, &r.client[0]));
		}
	CHECK_EQ(rejects, 1);
	CHECK_EQ(r.w.stats.rejected[FG_REJECT_QUEUE_FULL], 1);
	CHECK_EQ(r.w.stats.waiting, 2);
	check_invariant(&r);
	fg_worker_drain(&r.w, &r.cfg, r.now);
	fg_worker_abort_executing(&r.w, &r.cfg, r.now);
	rig_fini(&r);
}

TEST(wait_limit_times_out)
{
	struct rig r;
	rig_init(&r, 1, 10, 1);
	send_request(&r, 0, 1, "a", 1);
	send_request(&r, 1, 2, "b", 1);
	step(&r);
	r.now += 999 * MS;
	step(&r);
	CHECK_EQ(r.w.stats.rejected[FG_REJECT_TIME_OUT], 0);
	r.now += 2 * MS;
	step(&r);
	CHECK_EQ(r.w.stats.rejected[FG_REJECT_TIME_OUT], 1);
	struct fg_msg m;
	struct fg_endpoint to;
	int found = 0;
	while (next_sent(&r, &m, &to))
		if (m.hdr.type == FG_MSG_REJECT) {
			found = m.hdr.reason == FG_REJECT_TIME_OUT && m.hdr.request_id == 2 &&
				fg_endpoint_same_addr(&to, &r.client[1]);
		}
	CHECK(found);
	CHECK_EQ(r.w.stats.waiting, 0);
	check_invariant(&r);
	fg_worker_abort_executing(&r.w, &r.cfg, r.now);
	rig_fini(&r);
}

TEST(client_deadline_hint_shortens_the_wait)
{
	struct rig r;
	rig_init(&r, 1, 10, 1);
	send_request(&r, 0, 1, "a", 1);
	struct fg_msg m;
	uint8_t buf[128];
	fg_msg_init(&m, FG_MSG_REQUEST, 2);
	m.user = fg_str_of("b");
	m.hdr.deadline_ms = 10;
	fake_inject(&r.io, buf, (size_t)fg_proto_encode(buf, sizeof(buf), &m), r.client[1]);
	step(&r);
	r.now += 20 * MS;
	step(&r); /* still waiting: the hint is checked when it reaches the head */
	struct fg_endpoint to;
	while (next_sent(&r, &m, &to))
		if (m.hdr.type == FG_MSG_REQUEST && m.hdr.request_id != 2)
			respond_from(&r, 0, m.hdr.request_id, "x");
	step(&r);
	CHECK_EQ(r.w.stats.rejected[FG_REJECT_TIME_OUT], 1);
	CHECK_EQ(r.w.stats.dispatched, 1);
	check_invariant(&r);
	rig_fini(&r);
}

/* Drain what the worker sent: REQUESTs to backends into ids[], answers to
 * clients counted by type. */
static unsigned collect_dispatched(struct rig *r, uint64_t *ids, unsigned cap, unsigned *rejects)
{
	struct fg_msg m;
	struct fg_endpoint to;
	unsigned n = 0;
	while (next_sent(r, &m, &to)) {
		if (m.hdr.type == FG_MSG_REQUEST && n < cap)
			ids[n++] = m.hdr.request_id;
		else if (m.hdr.type == FG_MSG_REJECT && rejects)
			(*rejects)++;
	}
	return n;
}

/* A backend with a capacity of 2 seats under a level of 4: two requests go
 * out, two are held (seats taken, counted executing); each answer sends the
 * next held one; one held past the backend timeout is answered no-backend
 * and its seats come back; at shutdown a held one is answered too. */
TEST(backend_capacity_holds_requests_until_room)
{
	struct rig r;
	rig_init(&r, 4, 10, 1);
	r.cfg.backends[0].seats = 2;
	r.cfg.generation = 2;
	step(&r); /* follow the capacity */
	for (uint64_t id = 1; id <= 4; id++)
		send_request(&r, (int)id % 4, id, "a", 1);
	step(&r);
	uint64_t ids[8];
	CHECK_EQ(collect_dispatched(&r, ids, 8, NULL), 2);
	CHECK_EQ(r.w.stats.held_for_backend, 2);
	CHECK_EQ(r.w.stats.executing, 4);
	CHECK_EQ(pl_qs(&r.w)->seats_in_use, 4);
	check_invariant(&r);
	respond_from(&r, 0, ids[0], "ok");
	step(&r);
	uint64_t more[8];
	CHECK_EQ(collect_dispatched(&r, more, 8, NULL), 1); /* the first held one, and the answer */
	CHECK_EQ(r.w.stats.responded, 1);
	CHECK_EQ(r.w.stats.executing, 3);
	/* The last one stays held: past the backend timeout it is refused. */
	r.now += 5001 * MS;
	step(&r);
	unsigned rejects = 0;
	collect_dispatched(&r, more, 8, &rejects);
	CHECK_EQ(r.w.stats.rejected[FG_REJECT_NO_BACKEND], 1);
	CHECK_EQ(r.w.stats.rejected[FG_REJECT_BACKEND_TIMEOUT], 2); /* the two sent ones timed out too */
	CHECK_EQ(rejects, 3);
	CHECK_EQ(r.w.stats.executing, 0);
	CHECK_EQ(pl_qs(&r.w)->seats_in_use, 0);
	CHECK_EQ(r.w.reqs.in_use, 0);
	check_invariant(&r);
	/* First come, first sent: an answer and a new request in one burst —
	 * the room goes to the request held before, the new one waits. */
	for (uint64_t id = 20; id <= 22; id++)
		send_request(&r, 0, id, "c", 1);
	step(&r);
	CHECK_EQ(collect_dispatched(&r, ids, 8, NULL), 2); /* 20 and 21 out, 22 held */
	respond_from(&r, 0, ids[0], "ok");
	send_request(&r, 1, 23, "d", 1);
	step(&r);
	CHECK_EQ(collect_dispatched(&r, more, 8, NULL), 1);
	uint32_t slot = fg_reqtable_lookup(&r.w.reqs, r.w.id, more[0]);
	CHECK(slot != FG_REQ_NIL && r.w.reqs.slots[slot].client_id == 22);
	CHECK_EQ(r.w.held.count, 1); /* 23 */
	respond_from(&r, 0, ids[1], "ok");
	respond_from(&r, 0, more[0], "ok");
	step(&r);
	CHECK_EQ(collect_dispatched(&r, more, 8, NULL), 1); /* 23 */
	slot = fg_reqtable_lookup(&r.w.reqs, r.w.id, more[0]);
	CHECK(slot != FG_REQ_NIL && r.w.reqs.slots[slot].client_id == 23);
	respond_from(&r, 0, more[0], "ok");
	step(&r);
	collect_dispatched(&r, more, 8, NULL);
	CHECK_EQ(r.w.reqs.in_use, 0);
	check_invariant(&r);
	/* Shutdown with a held request. */
	for (uint64_t id = 10; id <= 12; id++)
		send_request(&r, 0, id, "b", 1);
	step(&r);
	CHECK_EQ(collect_dispatched(&r, ids, 8, NULL), 2);
	fg_worker_drain(&r.w, &r.cfg, r.now);
	fg_worker_abort_executing(&r.w, &r.cfg, r.now);
	rejects = 0;
	collect_dispatched(&r, ids, 8, &rejects);
	CHECK_EQ(rejects, 3);
	CHECK_EQ(r.w.stats.rejected[FG_REJECT_SHUTTING_DOWN], 3);
	CHECK_EQ(r.w.reqs.in_use, 0);
	check_invariant(&r);
	rig_fini(&r);
}

TEST(backend_timeout_answers_and_frees_the_seat)
{
	struct rig r;
	rig_init(&r, 1, 10, 1);
	r.cfg.queue_wait_ns = 10000 * MS;
	send_request(&r, 0, 7, "a", 1);
	send_request(&r, 1, 8, "b", 1);
	step(&r);
	struct fg_msg m;
	struct fg_endpoint to;
	CHECK(next_sent(&r, &m, &to));
	uint64_t first = m.hdr.request_id;
	r.now += 5001 * MS;
	step(&r);
	CHECK_EQ(r.w.stats.rejected[FG_REJECT_BACKEND_TIMEOUT], 1);
	int saw_reject = 0, saw_dispatch = 0;
	uint64_t second = 0;
	while (next_sent(&r, &m, &to)) {
		if (m.hdr.type == FG_MSG_REJECT && m.hdr.reason == FG_REJECT_BACKEND_TIMEOUT && m.hdr.request_id == 7)
			saw_reject = fg_endpoint_same_addr(&to, &r.client[0]);
		if (m.hdr.type == FG_MSG_REQUEST) {
			saw_dispatch = 1;
			second = m.hdr.request_id;
		}
	}
	CHECK(saw_reject);
	CHECK(saw_dispatch); /* the freed seat went to the waiting request */
	/* The late answer to the first request matches nothing. */
	respond_from(&r, 0, first, "late");
	step(&r);
	CHECK_EQ(r.w.stats.responses_unmatched, 1);
	CHECK(!next_sent(&r, &m, &to));
	respond_from(&r, 0, second, "ok");
	step(&r);
	CHECK_EQ(r.w.stats.responded, 1);
	check_invariant(&r);
	rig_fini(&r);
}

TEST(forged_and_stale_responses_are_dropped)
{
	struct rig r;
	rig_init(&r, 4, 10, 2);
	send_request(&r, 0, 1, "a", 1);
	step(&r);
	struct fg_msg m;
	struct fg_endpoint to;
	CHECK(next_sent(&r, &m, &to));
	uint64_t id = m.hdr.request_id;
	int b = fg_endpoint_same_addr(&to, &r.backend[0]) ? 0 : 1;
	respond_from(&r, 1 - b, id, "wrong backend");
	respond_from(&r, b, id ^ (1ull << 32), "wrong generation");
	respond_from(&r, b, id + 1, "wrong slot");
	respond_from(&r, b, (id & ~(0xffull << 56)) | (4ull << 56), "other worker");
	step(&r);
	CHECK_EQ(r.w.stats.responses_unmatched, 3);
	CHECK_EQ(r.w.stats.rx_unexpected, 1);
	CHECK(!next_sent(&r, &m, &to));
	respond_from(&r, b, id, "right");
	respond_from(&r, b, id, "duplicate");
	step(&r);
	CHECK_EQ(r.w.stats.responded, 1);
	CHECK_EQ(r.w.stats.responses_unmatched, 4);
	check_invariant(&r);
	rig_fini(&r);
}

TEST(malformed_datagrams)
{
	struct rig r;
	rig_init(&r, 4, 10, 1);
	uint8_t junk[64];
	memset(junk, 0xab, sizeof(junk));
	fake_inject(&r.io, junk, 10, r.client[0]);           /* too short: dropped */
	fake_inject(&r.io, junk, sizeof(junk), r.client[0]); /* bad magic: dropped */
	uint8_t bad[64];
	fg_proto_encode_reject(bad, sizeof(bad), 77, FG_REJECT_INVALID, 0);
	bad[3] = FG_MSG_REQUEST;
	bad[6] = 0x7f; /* header length lies */
	fake_inject(&r.io, bad, 48, r.client[1]);
	step(&r);
	CHECK_EQ(r.w.stats.rx_malformed, 3);
	CHECK_EQ(r.w.stats.malformed_by_err[FG_PROTO_ETOO_SHORT], 1);
	CHECK_EQ(r.w.stats.malformed_by_err[FG_PROTO_EMAGIC], 1);
	CHECK_EQ(r.w.stats.malformed_by_err[FG_PROTO_EHDR_LEN], 1);
	CHECK_EQ(r.w.stats.invalid_rejected, 1);
	struct fg_msg m;
	struct fg_endpoint to;
	CHECK(next_sent(&r, &m, &to));
	CHECK_EQ(m.hdr.type, FG_MSG_REJECT);
	CHECK_EQ(m.hdr.reason, FG_REJECT_INVALID);
	CHECK(m.hdr.request_id == 77);
	CHECK(fg_endpoint_same_addr(&to, &r.client[1]));
	CHECK(!next_sent(&r, &m, &to));
	CHECK_EQ(r.w.stats.received, 0);
	rig_fini(&r);
}

TEST(no_backend_rejects)
{
	struct rig r;
	rig_init(&r, 4, 10, 0);
	send_request(&r, 0, 5, "a", 1);
	step(&r);
	struct fg_msg m;
	struct fg_endpoint to;
	CHECK(next_sent(&r, &m, &to));
	CHECK_EQ(m.hdr.reason, FG_REJECT_NO_BACKEND);
	CHECK_EQ(r.w.stats.rejected[FG_REJECT_NO_BACKEND], 1);
	check_invariant(&r);
	rig_fini(&r);
}

TEST(shutdown_answers_everything)
{
	struct rig r;
	rig_init(&r, 1, 10, 1);
	for (uint64_t id = 1; id <= 3; id++)
		send_request(&r, 0, id, "a", 1);
	step(&r);
	fg_worker_drain(&r.w, &r.cfg, r.now);
	CHECK_EQ(r.w.stats.rejected[FG_REJECT_SHUTTING_DOWN], 2);
	send_request(&r, 1, 9, "b", 1);
	step(&r);
	CHECK_EQ(r.w.stats.rejected[FG_REJECT_SHUTTING_DOWN], 3);
	CHECK_EQ(r.w.stats.executing, 1);
	fg_worker_abort_executing(&r.w, &r.cfg, r.now);
	CHECK_EQ(r.w.stats.rejected[FG_REJECT_SHUTTING_DOWN], 4);
	CHECK_EQ(r.w.stats.executing, 0);
	check_invariant(&r);
	rig_fini(&r);
}

TEST(wide_request_blocks_the_head)
{
	struct rig r;
	rig_init(&r, 4, 10, 1);
	send_request(&r, 0, 1, "a", 3);
	send_request(&r, 0, 2, "a", 2); /* does not fit: waits */
	send_request(&r, 0, 3, "a", 1); /* would fit, but FIFO: nothing bypasses the head */
	send_request(&r, 0, 4, "a", 99); /* capped at 10 seats: still wider than the limit, will run alone */
	step(&r);
	CHECK_EQ(pl_qs(&r.w)->seats_in_use, 3);
	CHECK_EQ(r.w.stats.executing, 1);
	CHECK_EQ(r.w.stats.waiting, 3);
	CHECK_EQ(r.w.reqs.slots[r.w.waiting.tail].qs.seats, FG_WORK_MAX_SEATS);
	fg_worker_drain(&r.w, &r.cfg, r.now);
	fg_worker_abort_executing(&r.w, &r.cfg, r.now);
	check_invariant(&r);
	rig_fini(&r);
}

static const struct fg_apf_pair *apf_named(const struct fg_worker *w, const char *level, const char *schema)
{
	for (uint32_t i = 0; i < w->stats.apf.n_used; i++)
		if (!strcmp(w->stats.apf.pairs[i].level, level) && !strcmp(w->stats.apf.pairs[i].schema, schema))
			return &w->stats.apf.pairs[i];
	return NULL;
}

/* Kubernetes' metrics of one (level, schema) through a request's life: a
 * head that must wait for seats counts once however often dispatch retries,
 * its time-out lands in the wait histogram with execute=false, the one that
 * ran in the execution histogram. */
TEST(apf_metrics_follow_the_request_life)
{
	struct rig r;
	rig_init(&r, 4, 10, 1);
	send_request(&r, 0, 1, "a", 3);
	send_request(&r, 0, 2, "a", 2); /* does not fit: waits at the head */
	for (int i = 0; i < 5; i++)
		step(&r);
	const struct fg_apf_pair *p = apf_named(&r.w, "pl", "all");
	CHECK(p != NULL);
	if (!p)
		return;
	CHECK_EQ(p->no_accommodation, 1);
	CHECK_EQ(fg_apf_hist_count(p, FG_APF_WAIT_DISPATCHED), 1);
	CHECK_EQ(p->inqueue, 1);
	CHECK_EQ(p->inqueue_seats, 2);
	CHECK_EQ(p->executing, 1);
	CHECK_EQ(p->executing_seats, 3);
	CHECK_EQ(p->bucket[0][FG_APF_WAIT_DISPATCHED], 1); /* dispatched at once: le="0" */
	CHECK_EQ(p->bucket[1][FG_APF_QUEUE_LENGTH], 1); /* 1 request after enqueue: (0, 10] */
	CHECK_EQ(p->bucket[1][FG_APF_SEATS] + p->bucket[2][FG_APF_SEATS], 2); /* 2 and 3 seats: le="2", le="4" */
	struct fg_msg m;
	struct fg_endpoint to;
	CHECK(next_sent(&r, &m, &to) && m.hdr.type == FG_MSG_REQUEST);
	r.now += 1500 * MS; /* past the 1 s wait limit */
	step(&r);
	CHECK_EQ(p->rejected[FG_REJECT_TIME_OUT], 1);
	CHECK_EQ(p->bucket[8][FG_APF_WAIT_REJECTED], 1); /* waited 1.5 s: (1, 2] */
	CHECK_EQ(p->sum[FG_APF_WAIT_REJECTED], 1500 * MS);
	CHECK_EQ(p->inqueue, 0);
	respond_from(&r, 0, m.hdr.request_id, "ok");
	step(&r);
	CHECK_EQ(p->bucket[8][FG_APF_EXECUTION], 1);
	CHECK_EQ(p->executing, 0);
	CHECK_EQ(p->executing_seats, 0);
	check_invariant(&r);
	rig_fini(&r);
}

/* Pairs are found by names, kept apart by both, and past the table's size
 * counted in "(other)". */
TEST(apf_pairs_by_names_and_the_other_pair)
{
	static struct fg_apf_stats s;
	fg_apf_init(&s);
	CHECK_EQ(fg_apf_pair(&s, "ab", "c"), 1);
	CHECK_EQ(fg_apf_pair(&s, "a", "bc"), 2);
	CHECK_EQ(fg_apf_pair(&s, "ab", "c"), 1);
	char name[32];
	for (unsigned i = 3; i < FG_APF_PAIRS; i++) {
		snprintf(name, sizeof(name), "s%u", i);
		CHECK_EQ(fg_apf_pair(&s, "l", name), i);
	}
	CHECK_EQ(fg_apf_pair(&s, "l", "one-too-many"), 0);
	CHECK_EQ(fg_apf_pair(&s, "a", "bc"), 2);
	CHECK(!strcmp(s.pairs[0].level, FG_APF_OTHER) && s.pairs[0].used);
}

TEST(least_outstanding_backend)
{
	struct rig r;
	rig_init(&r, 10, 10, 2);
	for (uint64_t id = 1; id <= 4; id++)
		send_request(&r, 0, id, "a", 1);
	step(&r);
	CHECK_EQ(r.w.pool.b[0].outstanding, 2);
	CHECK_EQ(r.w.pool.b[1].outstanding, 2);
	fg_worker_abort_executing(&r.w, &r.cfg, r.now);
	rig_fini(&r);
}

TEST(per_flow_statistics)
{
	struct rig r;
	rig_init(&r, 1, 10, 1);
	send_request(&r, 0, 1, "alice", 1);
	send_request(&r, 0, 2, "alice", 1);
	send_request(&r, 1, 3, "bob", 1);
	step(&r);
	unsigned found = 0;
	for (unsigned i = 0; i < FG_FLOW_TABLE_SIZE; i++) {
		struct fg_flow_stats *f = &r.w.stats.flows[i];
		if (!strcmp(f->name, "all/alice") && f->hash) {
			found++;
			CHECK_EQ(f->received, 2);
			CHECK_EQ(f->executing, 1);
			CHECK_EQ(f->waiting, 1);
		}
		if (!strcmp(f->name, "all/bob") && f->hash) {
			found++;
			CHECK_EQ(f->waiting, 1);
		}
	}
	CHECK_EQ(found, 2);
	fg_worker_drain(&r.w, &r.cfg, r.now);
	fg_worker_abort_executing(&r.w, &r.cfg, r.now);
	rig_fini(&r);
}

/* Shut the worker down (everything still owed is answered), count the last
 * answers, and return how many requests 1..next_id-1 did not get exactly one. */
static unsigned shut_down_and_count_bad_answers(struct rig *r, uint8_t *answers, uint64_t next_id)
{
	fg_worker_drain(&r->w, &r->cfg, r->now);
	fg_worker_abort_executing(&r->w, &r->cfg, r->now);
	struct fg_msg m;
	struct fg_endpoint to;
	while (next_sent(r, &m, &to))
		if (m.hdr.type != FG_MSG_REQUEST && m.hdr.request_id < next_id)
			answers[m.hdr.request_id]++;
	unsigned bad = 0;
	for (uint64_t id = 1; id < next_id; id++)
		bad += answers[id] != 1;
	return bad;
}

/* Random arrivals, completions, time-outs and garbage on a virtual clock:
 * the accounting invariant holds after every step and every request gets
 * exactly one answer. */
TEST(randomized_exactly_once)
{
	struct rig r;
	rig_init(&r, 5, 20, 2);
	r.cfg.backend_timeout_ns = 300 * MS;
	r.cfg.queue_wait_ns = 200 * MS;
	static uint8_t answers[20001];
	memset(answers, 0, sizeof(answers));
	uint64_t outstanding[512];
	int out_backend[512];
	unsigned n_out = 0;
	unsigned seed = 7;
	uint64_t next_id = 1;
	for (int iter = 0; iter < 4000; iter++) {
		int k = rand_r(&seed) % 10;
		if (k < 5 && next_id <= 20000) {
			send_request(&r, rand_r(&seed) % 4, next_id, (const char *[]){ "a", "b", "c" }[rand_r(&seed) % 3],
				     (uint16_t)(1 + rand_r(&seed) % 3));
			next_id++;
		} else if (k < 8 && n_out) {
			unsigned i = (unsigned)rand_r(&seed) % n_out;
			respond_from(&r, out_backend[i], outstanding[i], "ok");
			outstanding[i] = outstanding[--n_out];
			out_backend[i] = out_backend[n_out];
		} else if (k == 8) {
			uint8_t junk[50];
			for (unsigned j = 0; j < sizeof(junk); j++)
				junk[j] = (uint8_t)rand_r(&seed);
			fake_inject(&r.io, junk, sizeof(junk), r.client[0]);
		}
		r.now += (uint64_t)(rand_r(&seed) % 20) * MS;
		step(&r);
		check_invariant(&r);
		struct fg_msg m;
		struct fg_endpoint to;
		while (next_sent(&r, &m, &to)) {
			if (m.hdr.type == FG_MSG_REQUEST) {
				if (n_out < 512) {
					outstanding[n_out] = m.hdr.request_id;
					out_backend[n_out++] = fg_endpoint_same_addr(&to, &r.backend[0]) ? 0 : 1;
				}
			} else if (m.hdr.request_id >= 1 && m.hdr.request_id < next_id) {
				answers[m.hdr.request_id]++;
			}
		}
	}
	CHECK_EQ(shut_down_and_count_bad_answers(&r, answers, next_id), 0);
	CHECK(r.w.stats.rejected[FG_REJECT_TIME_OUT] + r.w.stats.rejected[FG_REJECT_BACKEND_TIMEOUT] > 0);
	check_invariant(&r);
	rig_fini(&r);
}

/* One datagram a step sent, with a backend-bound request's nonce masked
 * (each worker draws its own), for comparing two workers. */
struct sent_rec {
	struct fg_endpoint to;
	uint32_t len;
	uint8_t data[256];
};

static int sent_rec_cmp(const void *a, const void *b) { return memcmp(a, b, sizeof(struct sent_rec)); }

/* What r sent since the last call: backend-bound in sending order into
 * out[0..*n_backend), client-bound after them, sorted (the stages answer the
 * datagrams that go no further before the burst's dispatches). */
static unsigned take_sent(struct rig *r, struct sent_rec *out, uint64_t *backend_ids, unsigned *n_backend)
{
	unsigned n = 0, nb = 0;
	struct sent_rec client[256];
	unsigned nc = 0;
	for (; r->seen < r->io.n_sent; r->seen++) {
		const struct fake_sent *s = &r->io.sent[r->seen];
		struct sent_rec rec;
		memset(&rec, 0, sizeof(rec));
		rec.to = s->to;
		rec.len = s->len;
		memcpy(rec.data, s->data, s->len < sizeof(rec.data) ? s->len : sizeof(rec.data));
		bool to_backend = fg_endpoint_same_addr(&s->to, &r->backend[0]) || fg_endpoint_same_addr(&s->to, &r->backend[1]);
		if (to_backend) {
			struct fg_msg m;
			CHECK(fg_proto_decode(s->data, s->len, &m) == FG_PROTO_OK);
			backend_ids[nb] = m.hdr.request_id;
			memset(rec.data + 12, 0, 4); /* the nonce: the dispatch id's low 32 bits (big-endian at 8..15) */
			out[nb++] = rec;
		} else {
			CHECK(nc < 256);
			client[nc++] = rec;
		}
	}
	qsort(client, nc, sizeof(client[0]), sent_rec_cmp);
	*n_backend = nb;
	n = nb;
	for (unsigned i = 0; i < nc; i++)
		out[n++] = client[i];
	return n;
}

/* The staged burst (fg_worker_poll) has the outcome of handling its
 * datagrams one after the other (fg_worker_handle each, then the same poll):
 * the same datagrams to the backends in the same order, the same answers,
 * the same counters — with requests, answers, duplicate and forged answers
 * and junk mixed, up to 40 datagrams a round (a poll takes FG_RX_BURST). */
TEST(burst_stages_match_one_by_one)
{
	struct rig a, b;
	rig_init(&a, 5, 20, 2);
	rig_init(&b, 5, 20, 2);
	struct rig *rigs[2] = { &a, &b };
	uint64_t out_id[2][512];
	int out_backend[512];
	unsigned n_out = 0, seed = 11;
	uint64_t next_id = 1;
	static struct sent_rec sa[4096], sb[4096];
	for (int round = 0; round < 300; round++) {
		unsigned burst = 1 + (unsigned)rand_r(&seed) % 40;
		for (unsigned k = 0; k < burst; k++) {
			int kind = rand_r(&seed) % 10;
			int client = rand_r(&seed) % 4;
			const char *user = (const char *[]){ "a", "b", "c", "d" }[rand_r(&seed) % 4];
			uint16_t seats = (uint16_t)(1 + rand_r(&seed) % 3);
			unsigned pick = n_out ? (unsigned)rand_r(&seed) % n_out : 0;
			bool dup = rand_r(&seed) % 4 == 0;
			uint8_t junk[50];
			for (unsigned j = 0; j < sizeof(junk); j++)
				junk[j] = (uint8_t)rand_r(&seed);
			for (int x = 0; x < 2; x++) {
				struct rig *r = rigs[x];
				if (kind < 5)
					send_request(r, client, next_id, user, seats);
				else if (kind < 8 && n_out) {
					respond_from(r, out_backend[pick], out_id[x][pick], "ok");
					if (dup) /* the same answer twice in one burst */
						respond_from(r, out_backend[pick], out_id[x][pick], "again");
				} else if (kind == 8 && n_out)
					respond_from(r, 1 - out_backend[pick], out_id[x][pick], "forged");
				else
					fake_inject(&r->io, junk, sizeof(junk), r->client[client]);
			}
			if (kind < 5)
				next_id++;
			else if (kind < 8 && n_out) {
				for (int x = 0; x < 2; x++)
					out_id[x][pick] = out_id[x][n_out - 1];
				out_backend[pick] = out_backend[--n_out];
			}
		}
		a.now = b.now = a.now + (uint64_t)(rand_r(&seed) % 30) * MS;
		fg_worker_poll(&a.w, &a.cfg, a.now); /* the burst, staged */
		struct fg_pkt p;                  /* one by one, then the rest of a poll */
		for (unsigned k = 0; k < FG_RX_BURST && fake_rx(&b.io, &p, 1); k++)
			fg_worker_handle(&b.w, &b.cfg, &p, b.now);
		unsigned later = b.io.rx_tail;    /* what the staged poll left for the next round */
		b.io.rx_tail = b.io.rx_head;
		fg_worker_poll(&b.w, &b.cfg, b.now);
		b.io.rx_tail = later;
		static uint64_t ida[4096], idb[4096];
		unsigned nba, nbb, na = take_sent(&a, sa, ida, &nba), nb = take_sent(&b, sb, idb, &nbb);
		CHECK_EQ(na, nb);
		CHECK_EQ(nba, nbb);
		for (unsigned i = 0; i < na && i < nb; i++)
			CHECK(memcmp(&sa[i], &sb[i], sizeof(sa[i])) == 0);
		/* Both sent the same requests to the same backends: track them by
		 * each worker's own dispatch ids. */
		for (unsigned i = 0; i < nba && i < nbb && n_out < 512; i++) {
			out_id[0][n_out] = ida[i];
			out_id[1][n_out] = idb[i];
			out_backend[n_out++] = fg_endpoint_same_addr(&sa[i].to, &a.backend[0]) ? 0 : 1;
		}
		check_invariant(&a);
		check_invariant(&b);
	}
	CHECK(a.w.stats.responded > 100);
	CHECK(a.w.stats.responses_unmatched > 10);
	CHECK(a.w.stats.rx_malformed > 10);
	const uint64_t *ca = &a.w.stats.received, *cb = &b.w.stats.received;
	CHECK_EQ(ca[0], cb[0]);
	CHECK_EQ(a.w.stats.responded, b.w.stats.responded);
	CHECK_EQ(a.w.stats.responses_unmatched, b.w.stats.responses_unmatched);
	CHECK_EQ(a.w.stats.rx_malformed, b.w.stats.rx_malformed);
	CHECK_EQ(a.w.stats.dispatched, b.w.stats.dispatched);
	for (int k = 0; k < FG_REJECT__COUNT; k++)
		CHECK_EQ(a.w.stats.rejected[k], b.w.stats.rejected[k]);
	fg_worker_drain(&a.w, &a.cfg, a.now);
	fg_worker_abort_executing(&a.w, &a.cfg, a.now);
	fg_worker_drain(&b.w, &b.cfg, b.now);
	fg_worker_abort_executing(&b.w, &b.cfg, b.now);
	rig_fini(&a);
	rig_fini(&b);
}

TEST(dead_backend_is_ejected_and_probed_back)
{
	struct rig r;
	rig_init(&r, 10, 10, 2);
	r.cfg.backend_timeout_ns = 100 * MS;
	struct fg_msg m;
	struct fg_endpoint to;
	/* Backend 1 never answers: three timeouts eject it. */
	uint64_t id = 1;
	for (int round = 0; round < 3; round++) {
		send_request(&r, 0, id++, "a", 1);
		send_request(&r, 0, id++, "a", 1);
		step(&r);
		while (next_sent(&r, &m, &to))
			if (m.hdr.type == FG_MSG_REQUEST && fg_endpoint_same_addr(&to, &r.backend[0]))
				respond_from(&r, 0, m.hdr.request_id, "ok");
		step(&r);
		r.now += 150 * MS;
		step(&r);
		while (next_sent(&r, &m, &to))
			;
	}
	CHECK_EQ(r.w.pool.b[1].state, FG_BACKEND_EJECTED);
	CHECK_EQ(r.w.stats.backend_ejections, 1);
	CHECK_EQ(r.w.stats.rejected[FG_REJECT_BACKEND_TIMEOUT], 3);
	/* While ejected, everything goes to backend 0. */
	for (int i = 0; i < 4; i++)
		send_request(&r, 0, id++, "a", 1);
	step(&r);
	unsigned to0 = 0;
	while (next_sent(&r, &m, &to))
		if (m.hdr.type == FG_MSG_REQUEST) {
			to0 += fg_endpoint_same_addr(&to, &r.backend[0]);
			respond_from(&r, 0, m.hdr.request_id, "ok");
		}
	step(&r);
	CHECK_EQ(to0, 4);
	/* After the ejection time one probe goes to backend 1; its answer brings it back. */
	r.now += 1100 * MS;
	send_request(&r, 0, id++, "a", 1);
	send_request(&r, 0, id++, "a", 1);
	step(&r);
	unsigned probes = 0;
	while (next_sent(&r, &m, &to))
		if (m.hdr.type == FG_MSG_REQUEST) {
			int b = fg_endpoint_same_addr(&to, &r.backend[1]);
			probes += b;
			respond_from(&r, b, m.hdr.request_id, "ok");
		}
	step(&r);
	CHECK_EQ(probes, 1);
	CHECK_EQ(r.w.pool.b[1].state, FG_BACKEND_UP);
	check_invariant(&r);
	rig_fini(&r);
}

TEST(no_usable_backend_rejects_at_once)
{
	struct rig r;
	rig_init(&r, 10, 10, 1);
	r.cfg.backend_timeout_ns = 100 * MS;
	r.w.pool.eject_after = 1;
	send_request(&r, 0, 1, "a", 1);
	step(&r);
	r.now += 150 * MS;
	step(&r); /* timeout: the only backend is ejected */
	send_request(&r, 1, 2, "b", 1);
	step(&r);
	CHECK_EQ(r.w.stats.rejected[FG_REJECT_NO_BACKEND], 1);
	check_invariant(&r);
	rig_fini(&r);
}

/* --- several workers (one thread drives them, so each step is exact) ---- */

#define MESH_MAX 4

struct mesh_rig {
	struct fake_io io;            /* one pool and one wire for all workers */
	struct fg_mesh mesh;
	struct fg_worker w[MESH_MAX];
	unsigned n;
	struct fg_config *cfgs[64];   /* every generation published so far */
	unsigned n_cfgs;
	unsigned follows[MESH_MAX];   /* index into cfgs each worker follows */
	struct fg_endpoint client[4], backend[2];
	uint64_t now;
	unsigned seen;
};

static struct fg_config *mesh_config(struct mesh_rig *r, uint32_t seats, uint32_t qlen)
{
	struct fg_config *c = calloc(1, sizeof(*c));
	c->fc = one_level(seats, qlen);
	c->seat_limit = seats;
	c->generation = r->n_cfgs + 1;
	c->queue_wait_ns = 1000 * MS;
	c->backend_timeout_ns = 5000 * MS;
	c->eject_after = 1000;
	c->eject_ns = 1000 * MS;
	c->max_eject_ns = 30000 * MS;
	c->flowcontrol_metrics = true;
	default_trust(c);
	c->n_backends = 2;
	c->backends[0].ep = r->backend[0];
	c->backends[1].ep = r->backend[1];
	c->n_workers = r->n;
	c->board = fg_board_new(c->fc, r->n);
	r->cfgs[r->n_cfgs++] = c;
	return c;
}

static void mesh_init(struct mesh_rig *r, unsigned n, uint32_t seats)
{
	memset(r, 0, sizeof(*r));
	fake_init(&r->io);
	r->n = n;
	CHECK_EQ(fg_mesh_init(&r->mesh, n, 64), 0);
	for (int i = 0; i < 4; i++)
		fg_endpoint_parse((const char *[]){ "127.0.0.1:1001", "127.0.0.1:1002", "127.0.0.2:1003", "127.0.0.3:1004" }[i],
				  &r->client[i]);
	fg_endpoint_parse("127.0.0.1:7501", &r->backend[0]);
	fg_endpoint_parse("127.0.0.1:7502", &r->backend[1]);
	r->now = 1000 * MS;
	mesh_config(r, seats, 50);
	for (unsigned i = 0; i < n; i++) {
		CHECK_EQ(fg_worker_init(&r->w[i], i, (struct fg_io){ &fake_ops, &r->io }, 512), 0);
		CHECK_EQ(fg_worker_join(&r->w[i], &r->mesh), 0);
		CHECK_EQ(fg_worker_configure(&r->w[i], r->cfgs[0], r->now), 0);
	}
}

static void mesh_fini(struct mesh_rig *r)
{
	struct fg_io ios[MESH_MAX];
	for (unsigned i = 0; i < r->n; i++) {
		ios[i] = r->w[i].io;
		fg_worker_fini(&r->w[i]);
	}
	fg_mesh_fini(&r->mesh, ios);
	for (unsigned i = 0; i < r->n_cfgs; i++)
		fg_config_free(r->cfgs[i]);
	CHECK_EQ(r->io.in_use, 0); /* every buffer came back */
	fake_fini(&r->io);
}

static void mesh_step(struct mesh_rig *r, unsigned i) { fg_worker_poll(&r->w[i], r->cfgs[r->follows[i]], r->now); }

static void mesh_send(struct mesh_rig *r, uint64_t id, const char *user, uint16_t seats)
{
	inject_request(&r->io, r->client[id % 4], id, user, seats);
}

static void mesh_respond(struct mesh_rig *r, int backend, uint64_t dispatch_id)
{
	inject_response(&r->io, r->backend[backend], dispatch_id, "ok");
}

/* Note every request the workers sent to a backend, to answer it later. */
static void mesh_collect(struct mesh_rig *r, uint64_t *ids, uint8_t *backends, unsigned *n, unsigned cap)
{
	while (r->seen < r->io.n_sent) {
		struct fake_sent *s = &r->io.sent[r->seen++];
		struct fg_msg m;
		if (fg_proto_decode(s->data, s->len, &m) == FG_PROTO_OK && m.hdr.type == FG_MSG_REQUEST && *n < cap) {
			backends[*n] = !fg_endpoint_same_addr(&s->to, &r->backend[0]);
			ids[(*n)++] = m.hdr.request_id;
		}
	}
}

/* Sum a uint64_t counter over the workers. */
static uint64_t mesh_sum(struct mesh_rig *r, size_t offset)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i < r->n; i++)
		sum += *(const uint64_t *)((const char *)&r->w[i].stats + offset);
	return sum;
}
/* A 64-bit counter only: a narrower field makes the array size negative. */
#define MESH_SUM(r, field) \
	((void)sizeof(char[sizeof(((struct fg_worker_stats *)0)->field) == 8 ? 1 : -1]), \
	 mesh_sum(r, offsetof(struct fg_worker_stats, field)))

static uint32_t mesh_waiting(struct mesh_rig *r)
{
	uint32_t sum = 0;
	for (unsigned i = 0; i < r->n; i++)
		sum += r->w[i].stats.waiting;
	return sum;
}

static uint32_t mesh_seats_in_use(struct mesh_rig *r)
{
	uint32_t sum = 0;
	for (unsigned i = 0; i < r->n; i++)
		sum += pl_qs(&r->w[i])->seats_in_use;
	return sum;
}

TEST(mesh_requests_reach_their_queue_owner_and_answers_come_back)
{
	struct mesh_rig r;
	mesh_init(&r, 2, 64);
	/* 40 flows, all received by worker 0: about half belong to worker 1. */
	char user[16];
	for (uint64_t id = 1; id <= 40; id++) {
		snprintf(user, sizeof(user), "u%llu", (unsigned long long)id);
		mesh_send(&r, id, user, 1);
	}
	mesh_step(&r, 0);
	mesh_step(&r, 0);
	CHECK(r.w[0].stats.handed_off > 5);
	mesh_step(&r, 1); /* takes them over and dispatches */
	CHECK_EQ(r.w[1].stats.taken_over, r.w[0].stats.handed_off);
	CHECK_EQ(MESH_SUM(&r, received), 40);
	CHECK_EQ(MESH_SUM(&r, dispatched), 40);
	/* Every answer arrives at worker 0; worker 1's go back to it. */
	struct fg_msg m;
	uint64_t to_worker1 = 0;
	while (r.seen < r.io.n_sent) {
		struct fake_sent *s = &r.io.sent[r.seen++];
		CHECK(fg_proto_decode(s->data, s->len, &m) == FG_PROTO_OK);
		CHECK_EQ(m.hdr.type, FG_MSG_REQUEST);
		to_worker1 += fg_dispatch_id_worker(m.hdr.request_id) == 1;
		mesh_respond(&r, fg_endpoint_same_addr(&s->to, &r.backend[0]) ? 0 : 1, m.hdr.request_id);
	}
	CHECK_EQ(to_worker1, r.w[0].stats.handed_off);
	mesh_step(&r, 0);
	mesh_step(&r, 0);
	CHECK_EQ(r.w[0].stats.answers_forwarded, to_worker1);
	mesh_step(&r, 1);
	CHECK_EQ(MESH_SUM(&r, responded), 40);
	/* Each client request got exactly one response, with its own id. */
	uint8_t answered[41] = { 0 };
	while (r.seen < r.io.n_sent) {
		struct fake_sent *s = &r.io.sent[r.seen++];
		CHECK(fg_proto_decode(s->data, s->len, &m) == FG_PROTO_OK);
		CHECK_EQ(m.hdr.type, FG_MSG_RESPONSE);
		if (m.hdr.request_id >= 1 && m.hdr.request_id <= 40)
			answered[m.hdr.request_id]++;
	}
	for (int id = 1; id <= 40; id++)
		CHECK_EQ(answered[id], 1);
	CHECK_EQ(mesh_seats_in_use(&r), 0);
	mesh_fini(&r);
}

TEST(mesh_answer_from_the_wrong_backend_or_for_no_worker_is_dropped)
{
	struct mesh_rig r;
	mesh_init(&r, 2, 8);
	struct fg_msg m;
	uint8_t buf[128];
	fg_msg_init(&m, FG_MSG_RESPONSE, (uint64_t)7 << 56); /* worker 7 does not exist */
	int n = fg_proto_encode(buf, sizeof(buf), &m);
	fake_inject(&r.io, buf, (size_t)n, r.backend[0]);
	mesh_step(&r, 0);
	CHECK_EQ(r.w[0].stats.rx_unexpected, 1);
	fg_msg_init(&m, FG_MSG_RESPONSE, (uint64_t)1 << 56); /* worker 1, but no such request */
	n = fg_proto_encode(buf, sizeof(buf), &m);
	fake_inject(&r.io, buf, (size_t)n, r.backend[0]);
	mesh_step(&r, 0);
	mesh_step(&r, 1);
	CHECK_EQ(r.w[0].stats.answers_forwarded, 1);
	CHECK_EQ(r.w[1].stats.responses_unmatched, 1);
	mesh_fini(&r);
}

/*
 * The seat-limit invariant under randomized load, limit changes and
 * reloads: three workers that poll in random order, an allotter that runs at
 * random moments (only when every worker follows the newest configuration,
 * as the daemon's does), workers that follow a new configuration late, and
 * random answers.  Whenever the seats in use grow, they stay within the
 * limit of a configuration some worker follows (the KEP lets them stay above
 * a decreased limit only until executions finish).  Bounded: 20 000 steps.
 */
static bool any_blocked(const struct mesh_rig *r)
{
	for (unsigned i = 0; i < r->n; i++)
		for (uint32_t k = 0; k < r->w[i].n_levels; k++)
			if (r->w[i].levels[k].blocked)
				return true;
	return false;
}

/* A worker whose next request stops fitting its allotment raises the
 * board's demand signal once (a plain store); the allotter takes it; the
 * worker signals again only after it was unblocked and blocked anew. */
TEST(mesh_blocked_worker_signals_the_allotter)
{
	struct mesh_rig r;
	mesh_init(&r, 2, 4); /* each worker starts with 2 of the 4 seats */
	struct fg_board *b = r.cfgs[0]->board;
	CHECK(!fg_board_take_signal(b));
	char user[16];
	unsigned sent = 0;
	/* Requests into worker 0's queues until one waits there. */
	for (uint64_t id = 1; id <= 200 && !any_blocked(&r); id++) {
		snprintf(user, sizeof(user), "u%llu", (unsigned long long)id);
		mesh_send(&r, id, user, 1);
		mesh_step(&r, 0);
		mesh_step(&r, 1);
		mesh_step(&r, 0);
		sent++;
	}
	CHECK(any_blocked(&r));
	CHECK(fg_board_take_signal(b));
	CHECK(!fg_board_take_signal(b)); /* taken: clear */
	/* Still blocked, more arrivals: no new signal. */
	mesh_send(&r, 1000, "u1", 1);
	mesh_step(&r, 0);
	mesh_step(&r, 1);
	CHECK(!fg_board_take_signal(b));
	CHECK(sent < 200);
	mesh_fini(&r);
}

TEST(mesh_seat_limit_holds_under_random_load_limits_and_reloads)
{
	struct mesh_rig r;
	mesh_init(&r, 3, 6);
	unsigned rng = 1040;
	uint64_t next_id = 1, violations = 0, max_seen = 0;
	struct fg_allotter allotter = { 0 }; /* the daemon's round policy, on the rig's clock */
	static uint64_t executing[8192];
	static uint8_t exec_backend[8192];
	unsigned n_exec = 0;
	char user[16];
	for (int stepn = 0; stepn < 20000; stepn++) {
		uint32_t before = mesh_seats_in_use(&r);
		unsigned action = (unsigned)rand_r(&rng) % 100;
		if (action < 15) { /* arrivals on a random worker */
			unsigned k = 1 + (unsigned)rand_r(&rng) % 3;
			for (unsigned j = 0; j < k; j++) {
				snprintf(user, sizeof(user), "u%u", (unsigned)rand_r(&rng) % 40);
				mesh_send(&r, next_id++, user, (uint16_t)(1 + rand_r(&rng) % 3));
			}
			mesh_step(&r, (unsigned)rand_r(&rng) % r.n);
		} else if (action < 45) { /* a worker polls (hand-offs, answers, grants) */
			mesh_step(&r, (unsigned)rand_r(&rng) % r.n);
		} else if (action < 85 && n_exec) { /* a backend answers one request */
			unsigned k = (unsigned)rand_r(&rng) % n_exec;
			mesh_respond(&r, exec_backend[k], executing[k]);
			n_exec--;
			executing[k] = executing[n_exec];
			exec_backend[k] = exec_backend[n_exec];
			mesh_step(&r, (unsigned)rand_r(&rng) % r.n);
		} else if (action < 95) { /* the allotter's step, a period after the last */
			bool all = true;
			for (unsigned i = 0; i < r.n; i++)
				all &= r.follows[i] == r.n_cfgs - 1 && r.w[i].config_generation == r.cfgs[r.n_cfgs - 1]->generation;
			fg_allotter_step(&allotter, r.cfgs[r.n_cfgs - 1], all, allotter.next_round_ns);
		} else if (action < 96 && r.n_cfgs < 60) { /* a reload with a new limit */
			mesh_config(&r, 3 + (uint32_t)rand_r(&rng) % 10, 50);
		} else { /* one worker follows the newest configuration */
			r.follows[(unsigned)rand_r(&rng) % r.n] = r.n_cfgs - 1;
		}
		r.now += MS / 10;
		mesh_collect(&r, executing, exec_backend, &n_exec, 8192);
		uint32_t after = mesh_seats_in_use(&r), allowed = 0;
		for (unsigned i = 0; i < r.n; i++) {
			uint32_t limit = r.cfgs[r.follows[i]]->seat_limit;
			allowed = limit > allowed ? limit : allowed;
		}
		if (after > before && after > allowed)
			violations++;
		max_seen = after > max_seen ? after : max_seen;
	}
	printf("  seat-limit run: %llu rounds, %llu grants, %u configurations, peak %llu seats, %llu hand-offs\n",
	       (unsigned long long)allotter.stats.rounds, (unsigned long long)allotter.stats.grants, r.n_cfgs,
	       (unsigned long long)max_seen,
	       (unsigned long long)MESH_SUM(&r, handed_off));
	CHECK_EQ(violations, 0);
	CHECK(allotter.stats.grants > 100); /* the allotter really moved seats */
	CHECK(max_seen >= 6);           /* and the workers used them */
	CHECK(MESH_SUM(&r, handed_off) > 1000);
	/* Drain: answer everything; nothing is lost. */
	for (unsigned i = 0; i < r.n; i++)
		r.follows[i] = r.n_cfgs - 1;
	for (int round = 0; round < 2000 && (n_exec || mesh_seats_in_use(&r) || mesh_waiting(&r)); round++) {
		while (n_exec) {
			n_exec--;
			mesh_respond(&r, exec_backend[n_exec], executing[n_exec]);
		}
		for (unsigned i = 0; i < r.n; i++)
			mesh_step(&r, i);
		fg_board_allot(r.cfgs[r.n_cfgs - 1]->board);
		r.now += MS;
		mesh_collect(&r, executing, exec_backend, &n_exec, 8192);
	}
	uint64_t rejected = 0;
	for (int k = 0; k < FG_REJECT__COUNT; k++)
		for (unsigned i = 0; i < r.n; i++)
			rejected += r.w[i].stats.rejected[k];
	CHECK_EQ(MESH_SUM(&r, received), next_id - 1);
	CHECK_EQ(MESH_SUM(&r, responded) + rejected, next_id - 1);
	CHECK_EQ(mesh_seats_in_use(&r), 0);
	for (unsigned i = 0; i < r.n; i++)
		check_apf(&r.w[i]);
	mesh_fini(&r);
}

/* --- hostile clients (security.md) ------------------------------------- */

/* A request with every attribute a client controls; the header's work hints
 * set as the caller says. */
static int hostile_request(uint8_t *buf, size_t cap, uint64_t id, const char *user, const char *group,
			   const uint8_t *cookie, const struct fg_hdr *hints)
{
	struct fg_msg m;
	fg_msg_init(&m, FG_MSG_REQUEST, id);
	if (hints)
		m.hdr = *hints;
	m.hdr.type = FG_MSG_REQUEST;
	m.hdr.request_id = id;
	m.user = fg_str_of(user);
	m.verb = fg_str_of("create");
	if (group)
		fg_msg_add_group(&m, group);
	if (cookie)
		m.cookie = (struct fg_str){ (const char *)cookie, FG_COOKIE_LEN };
	m.payload = (const uint8_t *)"body";
	m.payload_len = 4;
	return fg_proto_encode(buf, cap, &m);
}

/* One datagram asking for every seat, for ever, costs at most the level's
 * cap for at most maxExtraLatency; seats come back when the level shrinks. */
TEST(hostile_widths_cannot_lock_a_level)
{
	struct rig r;
	rig_init(&r, 40, 10, 1);
	int k = fg_fc_level_index(r.cfg.fc, "pl");
	r.cfg.fc->levels[k].max_seats = 6; /* maxSeats of a 40-seat level with hand 1 */
	r.cfg.generation++;
	struct fg_hdr greedy = { .seats = 65535, .final_seats = 65535, .work_hint = UINT32_MAX,
				 .extra_latency_us = UINT32_MAX };
	uint8_t buf[512];
	int n = hostile_request(buf, sizeof(buf), 7, "mallory", NULL, NULL, &greedy);
	fake_inject(&r.io, buf, (size_t)n, r.client[0]);
	step(&r);
	CHECK_EQ(pl_qs(&r.w)->seats_in_use, 6);
	struct fg_msg m;
	struct fg_endpoint to;
	CHECK(next_sent(&r, &m, &to));
	respond_from(&r, 0, m.hdr.request_id, "ok");
	step(&r);
	CHECK_EQ(r.w.stats.responded, 1);
	CHECK(next_sent(&r, &m, &to) && m.hdr.type == FG_MSG_RESPONSE); /* the answer is not delayed */
	CHECK_EQ(pl_qs(&r.w)->seats_in_use, 6); /* held for the extra latency ... */
	r.now += r.cfg.max_extra_latency_ns + 2 * (1ull << FG_WHEEL_TICK_SHIFT);
	step(&r);
	CHECK_EQ(pl_qs(&r.w)->seats_in_use, 0); /* ... which maxExtraLatency bounds */

	/* Lingering seats go back at once when the level's limit shrinks. */
	fake_inject(&r.io, buf, (size_t)n, r.client[0]);
	step(&r);
	CHECK(next_sent(&r, &m, &to));
	respond_from(&r, 0, m.hdr.request_id, "ok");
	step(&r);
	CHECK_EQ(r.w.stats.responded, 2);
	CHECK_EQ(pl_qs(&r.w)->seats_in_use, 6);
	r.cfg.fc->levels[k].limit = 4;
	r.cfg.generation++;
	step(&r);
	CHECK_EQ(pl_qs(&r.w)->seats_in_use, 0);
	CHECK_EQ(r.w.reqs.in_use, 0);
	check_invariant(&r);
	rig_fini(&r);
}

TEST(untrusted_sources_prove_their_address_with_a_cookie)
{
	struct rig r;
	rig_init(&r, 4, 10, 1);
	struct fg_endpoint stranger, other;
	fg_endpoint_parse("192.0.2.10:5000", &stranger);
	fg_endpoint_parse("192.0.2.11:5000", &other);
	uint8_t buf[512];
	int n = hostile_request(buf, sizeof(buf), 9, "admin", "system:masters", NULL, NULL);
	fake_inject(&r.io, buf, (size_t)n, stranger);
	step(&r);
	struct fg_msg m;
	struct fg_endpoint to;
	CHECK(next_sent(&r, &m, &to));
	CHECK(fg_endpoint_same_addr(&to, &stranger));
	CHECK_EQ(m.hdr.type, FG_MSG_REJECT);
	CHECK_EQ(m.hdr.reason, FG_REJECT_RETRY_WITH_COOKIE);
	CHECK_EQ(m.hdr.request_id, 9);
	CHECK_EQ(m.cookie.len, FG_COOKIE_LEN);
	CHECK(r.io.sent[r.seen - 1].len <= (uint32_t)n); /* never more bytes than arrived */
	CHECK_EQ(r.w.stats.received, 0);                 /* nothing classified, nothing sent on */
	CHECK_EQ(r.w.stats.cookie_challenges, 1);
	uint8_t cookie[FG_COOKIE_LEN];
	memcpy(cookie, m.cookie.ptr, FG_COOKIE_LEN);

	/* The same cookie from another address, or altered, proves nothing. */
	n = hostile_request(buf, sizeof(buf), 10, "admin", "system:masters", cookie, NULL);
	fake_inject(&r.io, buf, (size_t)n, other);
	cookie[12] ^= 1;
	n = hostile_request(buf, sizeof(buf), 11, "admin", "system:masters", cookie, NULL);
	fake_inject(&r.io, buf, (size_t)n, stranger);
	cookie[12] ^= 1;
	step(&r);
	for (int i = 0; i < 2; i++) {
		CHECK(next_sent(&r, &m, &to));
		CHECK_EQ(m.hdr.reason, FG_REJECT_RETRY_WITH_COOKIE);
	}
	CHECK_EQ(r.w.stats.received, 0);

	/* With it, the request goes on, classified as anonymous: its claim of
	 * system:masters is not believed. */
	struct fg_hdr greedy = { .seats = 65535, .final_seats = 65535, .work_hint = UINT32_MAX,
				 .extra_latency_us = UINT32_MAX };
	n = hostile_request(buf, sizeof(buf), 12, "admin", "system:masters", cookie, &greedy);
	fake_inject(&r.io, buf, (size_t)n, stranger);
	step(&r);
	CHECK(next_sent(&r, &m, &to));
	CHECK(fg_endpoint_same_addr(&to, &r.backend[0]));
	CHECK(m.hdr.flags & FG_FLAG_IDENTITY_UNVERIFIED); /* the backend is told */
	CHECK_EQ(pl_qs(&r.w)->seats_in_use, 1);            /* its hints are not believed */
	CHECK_EQ(r.w.stats.received, 1);
	CHECK_EQ(r.w.stats.untrusted_requests, 1);
	bool anonymous = false;
	for (uint32_t i = 0; i < FG_FLOW_TABLE_SIZE; i++)
		anonymous |= strstr(r.w.stats.flows[i].name, FG_ANONYMOUS_USER) != NULL;
	CHECK(anonymous);
	respond_from(&r, 0, m.hdr.request_id, "ok");
	step(&r);
	CHECK(next_sent(&r, &m, &to));
	CHECK(fg_endpoint_same_addr(&to, &stranger));

	/* An hour later the cookie has expired. */
	r.now += (FG_COOKIE_LIFETIME_S + 2) * 1000 * MS;
	fake_inject(&r.io, buf, (size_t)n, stranger);
	step(&r);
	CHECK(next_sent(&r, &m, &to));
	CHECK_EQ(m.hdr.reason, FG_REJECT_RETRY_WITH_COOKIE);

	/* A bare header-only request gets a bare REJECT: no room for a cookie. */
	uint8_t tiny[FG_PROTO_HDR_LEN];
	struct fg_msg t;
	fg_msg_init(&t, FG_MSG_REQUEST, 13);
	int tn = fg_proto_encode(tiny, sizeof(tiny), &t);
	fake_inject(&r.io, tiny, (size_t)tn, stranger);
	step(&r);
	CHECK(next_sent(&r, &m, &to));
	CHECK_EQ(r.io.sent[r.seen - 1].len, FG_PROTO_HDR_LEN);
	CHECK_EQ(m.hdr.reason, FG_REJECT_RETRY_WITH_COOKIE);
	CHECK(m.cookie.ptr == NULL);
	check_invariant(&r);
	rig_fini(&r);
}

/* Dispatch ids cannot be guessed, slots are reused last, and an answer that
 * comes after its request timed out reaches nobody, however often the slot
 * has been used since. */
TEST(dispatch_ids_are_unguessable_and_late_answers_dropped)
{
	struct rig r;
	rig_init(&r, 4, 10, 1);
	static const uint8_t key[FG_NONCE_KEY_LEN] = { 1, 2, 3 }; /* a fixed stream: the run replays */
	fg_nonces_init(&r.w.nonces, key);
	send_request(&r, 0, 1, "alice", 1);
	step(&r);
	struct fg_msg m;
	struct fg_endpoint to;
	CHECK(next_sent(&r, &m, &to));
	uint64_t late = m.hdr.request_id;
	r.now += r.cfg.backend_timeout_ns + 1;
	step(&r); /* backend-timeout to the client */
	CHECK(next_sent(&r, &m, &to));
	CHECK_EQ(m.hdr.reason, FG_REJECT_BACKEND_TIMEOUT);

	/* A new request takes another slot (FIFO reuse). */
	send_request(&r, 1, 2, "bob", 1);
	step(&r);
	CHECK(next_sent(&r, &m, &to));
	uint64_t live = m.hdr.request_id;
	CHECK((live >> 32 & FG_DISPATCH_SLOT_MASK) != (late >> 32 & FG_DISPATCH_SLOT_MASK));
	/* The late answer and 2000 guesses at the live one's nonce, from the
	 * backend's own address, reach nobody. */
	respond_from(&r, 0, late, "late");
	for (uint32_t g = 0; g < 2000; g++)
		respond_from(&r, 0, (live & ~0xffffffffull) | (uint32_t)(g * 2654435761u), "forged");
	while (r.io.rx_head != r.io.rx_tail)
		step(&r);
	CHECK_EQ(r.w.stats.responded, 0);
	CHECK(r.w.stats.responses_unmatched >= 2000);
	respond_from(&r, 0, live, "real");
	step(&r);
	CHECK(next_sent(&r, &m, &to));
	CHECK_EQ(r.w.stats.responded, 1);
	CHECK(m.payload_len == 4 && !memcmp(m.payload, "real", 4));

	/* 300 000 more requests through the worker (FIFO reuse spreads them
	 * over the table): the first request's id never matches again.  The
	 * wrap of a single slot is reqtable_slot_reused_past_2_24_times. */
	r.seen = r.io.n_sent = 0;
	int failed_before = test_failed_checks;
	for (uint32_t i = 0; i < 300000; i++) {
		send_request(&r, 1, 100 + i, "bob", 1);
		step(&r);
		CHECK(next_sent(&r, &m, &to));
		CHECK(m.hdr.request_id != late);
		uint64_t id = m.hdr.request_id;
		respond_from(&r, 0, late, "late");
		respond_from(&r, 0, id, "ok");
		step(&r);
		r.seen = r.io.n_sent = 0;
		if (test_failed_checks != failed_before)
			break;
	}
	CHECK_EQ(r.w.stats.responded, 300001);
	check_invariant(&r);
	rig_fini(&r);
}

/* --- configurations a worker cannot follow ----------------------------- */

/* n Queue levels "prefix-i", each reached by user "prefix-i" alone. */
static struct fg_fc_config *levels_named(const char *prefix, unsigned n)
{
	size_t cap = 1024 + (size_t)n * 1024, len = 0;
	char *text = malloc(cap);
	len += (size_t)snprintf(text + len, cap - len, "{\"kind\":\"List\",\"items\":[");
	for (unsigned i = 0; i < n; i++)
		len += (size_t)snprintf(text + len, cap - len, "%s"
			"{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"PriorityLevelConfiguration\","
			"\"metadata\":{\"name\":\"%s-%u\"},\"spec\":{\"type\":\"Limited\",\"limited\":{"
			"\"nominalConcurrencyShares\":1,\"limitResponse\":{\"type\":\"Queue\",\"queuing\":{\"queues\":4,"
			"\"handSize\":1,\"queueLengthLimit\":10}}}}},"
			"{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"FlowSchema\",\"metadata\":{\"name\":"
			"\"%s-%u\"},\"spec\":{\"priorityLevelConfiguration\":{\"name\":\"%s-%u\"},\"matchingPrecedence\":500,"
			"\"rules\":[{\"subjects\":[{\"kind\":\"User\",\"user\":{\"name\":\"%s-%u\"}}],\"resourceRules\":[{"
			"\"verbs\":[\"*\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"],\"clusterScope\":true,"
			"\"namespaces\":[\"*\"]}]}]}}", i ? "," : "", prefix, i, prefix, i, prefix, i, prefix, i);
	snprintf(text + len, cap - len, "]}");
	struct fg_fc_set *set = fg_fc_set_new();
	struct fg_errors e = { .len = 0 };
	CHECK_EQ(fg_fc_set_apply(set, (const uint8_t *)text, strlen(text), NULL, &e), 2 * n);
	struct fg_fc_config *fc = fg_fc_compile(set, 100 * n, &e);
	fg_fc_set_free(set);
	free(text);
	return fc;
}

/* Hundreds of levels renamed while the old ones drain: a configuration that
 * does not fit the worker's slots is not half-followed; the worker refuses
 * requests (and says why) until one fits, then follows it. */
TEST(configuration_churn_and_a_configuration_that_cannot_be_followed)
{
	struct rig r;
	rig_init(&r, 4, 10, 1);
	unsigned n = FG_MAX_CONFIG_LEVELS - 2; /* + exempt and catch-all */
	const char *names[3] = { "a", "b", "c" };
	struct fg_fc_config *fcs[3];
	for (int g = 0; g < 3; g++)
		fcs[g] = levels_named(names[g], n);
	fg_fc_config_free(r.cfg.fc);
	uint64_t id = 1;
	for (int g = 0; g < 2; g++) {
		/* Follow generation g and leave a request executing in each level. */
		r.cfg.fc = fcs[g];
		r.cfg.generation++;
		step(&r);
		CHECK_EQ(r.w.stats.config_error, 0);
		CHECK_EQ(r.w.config_generation, r.cfg.generation);
		for (unsigned i = 0; i < n; i++) {
			char user[32];
			snprintf(user, sizeof(user), "%s-%u", names[g], i);
			send_request(&r, 0, id++, user, 1);
			step(&r);
		}
	}
	CHECK_EQ(r.w.stats.executing, 2 * n);
	/* a-* and b-* hold requests: the c-* levels find no free slots. */
	r.cfg.fc = fcs[2];
	r.cfg.generation++;
	step(&r);
	CHECK_EQ(r.w.stats.config_error, ENOSPC);
	CHECK(r.w.config_generation != r.cfg.generation);
	send_request(&r, 0, id++, "c-0", 1);
	step(&r);
	CHECK_EQ(r.w.stats.rejected[FG_REJECT_CONCURRENCY_LIMIT], 1);
	CHECK_EQ(r.w.stats.executing, 2 * n); /* nothing of the old levels was touched */
	/* Answer everything: the old levels drain, and the next poll follows. */
	struct fg_msg m;
	struct fg_endpoint to;
	while (next_sent(&r, &m, &to))
		if (m.hdr.type == FG_MSG_REQUEST)
			respond_from(&r, 0, m.hdr.request_id, "ok");
	while (r.io.rx_head != r.io.rx_tail)
		step(&r);
	step(&r);
	CHECK_EQ(r.w.stats.responded, 2 * n);
	CHECK_EQ(r.w.stats.config_error, 0);
	CHECK_EQ(r.w.config_generation, r.cfg.generation);
	send_request(&r, 0, id++, "c-7", 1);
	step(&r);
	CHECK_EQ(r.w.stats.executing, 1);
	fg_worker_abort_executing(&r.w, &r.cfg, r.now);
	check_invariant(&r);
	r.cfg.fc = NULL;
	fg_worker_fini(&r.w);
	for (int g = 0; g < 3; g++)
		fg_fc_config_free(fcs[g]);
	CHECK_EQ(r.io.in_use, 0);
	fake_fini(&r.io);
}

/* A level with one or two queues under 2-4 workers: its queues' owners get
 * the level's seats (the allotter moves them by demand), every request is
 * answered, and the limit is never passed. */
TEST(mesh_levels_with_few_queues_use_all_their_seats)
{
	for (uint32_t queues = 1; queues <= 2; queues++) {
		for (unsigned n = 2; n <= 4; n++) {
			static struct mesh_rig r; /* four workers' statistics: too large for the stack */
			mesh_init(&r, n, 8);
			struct fg_config *c = mesh_config(&r, 8, 200);
			fg_fc_config_free(c->fc);
			fg_board_free(c->board);
			c->fc = one_level_queues(8, 200, queues);
			c->board = fg_board_new(c->fc, n);
			for (unsigned i = 0; i < n; i++)
				r.follows[i] = r.n_cfgs - 1;
			struct fg_allotter allotter = { 0 };
			char user[16];
			for (uint64_t id = 1; id <= 160; id++) {
				snprintf(user, sizeof(user), "u%llu", (unsigned long long)(id % 13));
				mesh_send(&r, id, user, 1);
			}
			uint64_t ids[512];
			uint8_t backends[512];
			unsigned n_ids = 0, answered = 0, peak = 0;
			for (int round = 0; round < 400 && MESH_SUM(&r, responded) < 160; round++) {
				for (unsigned i = 0; i < n; i++)
					mesh_step(&r, i);
				uint32_t in_use = mesh_seats_in_use(&r);
				CHECK(in_use <= 8);
				peak = in_use > peak ? in_use : peak;
				r.now += 100000; /* 100 us */
				fg_allotter_step(&allotter, c, true, r.now);
				mesh_collect(&r, ids, backends, &n_ids, 512);
				for (; answered < n_ids; answered++) /* answer what was sent a step ago */
					mesh_respond(&r, backends[answered], ids[answered]);
			}
			if (MESH_SUM(&r, responded) != 160 || peak != 8)
				fprintf(stderr, "  queues %u, %u workers: %llu responded, peak %u seats, refused %llu, "
					"received %llu, waiting %u, rej qf %llu tmo %llu cl %llu\n", queues, n,
					(unsigned long long)MESH_SUM(&r, responded), peak,
					(unsigned long long)MESH_SUM(&r, handoff_refused), (unsigned long long)MESH_SUM(&r, received),
					mesh_waiting(&r), (unsigned long long)MESH_SUM(&r, rejected[1]),
					(unsigned long long)MESH_SUM(&r, rejected[3]), (unsigned long long)MESH_SUM(&r, rejected[2]));
			CHECK_EQ(MESH_SUM(&r, responded), 160);
			CHECK_EQ(peak, 8);
			mesh_fini(&r);
		}
	}
}

/* The pool runs dry while requests execute: the backend-timeout answers
 * fairgate owes come from the reserve; past it they are counted as lost,
 * never as sent. */
TEST(owed_answers_come_from_the_reserve)
{
	struct rig r;
	rig_init(&r, FG_ANSWER_RESERVE + 8, 10, 1);
	for (uint64_t id = 1; id <= FG_ANSWER_RESERVE + 8; id++) {
		char user[16];
		snprintf(user, sizeof(user), "u%llu", (unsigned long long)id);
		send_request(&r, (int)(id % 4), id, user, 1);
		if (id % 16 == 0)
			step(&r);
	}
	step(&r);
	CHECK_EQ(r.w.stats.executing, FG_ANSWER_RESERVE + 8);
	CHECK_EQ(r.w.n_reserve, FG_ANSWER_RESERVE);
	r.io.fail_alloc = 1;
	r.now += r.cfg.backend_timeout_ns + 1;
	unsigned sent_before = r.io.n_sent;
	step(&r);
	CHECK_EQ(r.w.stats.rejected[FG_REJECT_BACKEND_TIMEOUT], FG_ANSWER_RESERVE);
	CHECK_EQ(r.w.stats.answers_lost, 8);
	CHECK_EQ(r.io.n_sent - sent_before, FG_ANSWER_RESERVE); /* what is counted as answered was sent */
	CHECK_EQ(r.w.n_reserve, 0);
	r.io.fail_alloc = 0;
	step(&r);
	CHECK_EQ(r.w.n_reserve, FG_ANSWER_RESERVE); /* refilled once the pool has buffers again */
	check_invariant(&r);
	rig_fini(&r);
}

/* Ejection settings changed by a live apply govern the next timeouts. */
TEST(eject_settings_apply_live)
{
	struct rig r;
	rig_init(&r, 4, 10, 1); /* backendEjectAfter 3 */
	r.cfg.eject_after = 1;
	r.cfg.generation++;
	send_request(&r, 0, 1, "alice", 1);
	step(&r);
	r.now += r.cfg.backend_timeout_ns + 1;
	step(&r); /* one timeout now ejects the only backend */
	CHECK_EQ(r.w.stats.backend_ejections, 1);
	send_request(&r, 0, 2, "alice", 1);
	step(&r);
	CHECK_EQ(r.w.stats.rejected[FG_REJECT_NO_BACKEND], 1);
	check_invariant(&r);
	rig_fini(&r);
}

/* Full hand-off rings: a request that cannot be handed over is answered
 * queue-full at once, an answer that cannot be forwarded is dropped and its
 * request answered backend-timeout later: every request exactly once. */
TEST(mesh_full_handoff_rings_still_answer_everything)
{
	static struct mesh_rig r;
	mesh_init(&r, 2, 400); /* rings of 64 */
	char user[16];
	enum { N = 300 };
	for (uint64_t id = 1; id <= N; id++) {
		snprintf(user, sizeof(user), "u%llu", (unsigned long long)id);
		mesh_send(&r, id, user, 1);
	}
	while (r.io.rx_head != r.io.rx_tail)
		mesh_step(&r, 0); /* worker 1 does not poll: its ring fills */
	CHECK(r.w[0].stats.handoff_refused > 0);
	mesh_step(&r, 1);
	uint64_t ids[N];
	uint8_t backends[N];
	unsigned n_ids = 0;
	mesh_collect(&r, ids, backends, &n_ids, N);
	/* Every answer arrives at worker 0 at once: worker 1's part overflows
	 * the ring back to it. */
	for (unsigned i = 0; i < n_ids; i++)
		mesh_respond(&r, backends[i], ids[i]);
	while (r.io.rx_head != r.io.rx_tail)
		mesh_step(&r, 0);
	for (int k = 0; k < 4; k++) {
		mesh_step(&r, 1);
		mesh_step(&r, 0);
	}
	r.now += r.cfgs[0]->backend_timeout_ns + 1;
	for (int k = 0; k < 4; k++) {
		mesh_step(&r, 1);
		mesh_step(&r, 0);
	}
	uint8_t answered[N + 1] = { 0 };
	struct fg_msg m;
	for (unsigned i = 0; i < r.io.n_sent; i++) {
		struct fake_sent *sent = &r.io.sent[i];
		if (fg_proto_decode(sent->data, sent->len, &m) == FG_PROTO_OK && m.hdr.type != FG_MSG_REQUEST &&
		    m.hdr.request_id >= 1 && m.hdr.request_id <= N)
			answered[m.hdr.request_id]++;
	}
	unsigned once = 0;
	for (int id = 1; id <= N; id++)
		once += answered[id] == 1;
	CHECK_EQ(once, N);
	CHECK(MESH_SUM(&r, rejected[FG_REJECT_QUEUE_FULL]) > 0);     /* requests refused at a full ring */
	CHECK(MESH_SUM(&r, rejected[FG_REJECT_BACKEND_TIMEOUT]) > 0); /* answers dropped at a full ring */
	CHECK_EQ(MESH_SUM(&r, received), N);
	/* The flow rows add up: a request refused at a full ring is received
	 * and rejected on its own flow's row, not charged to another. */
	uint64_t row_received = 0, row_answered = 0;
	for (unsigned k = 0; k < 2; k++)
		for (unsigned f = 0; f < FG_FLOW_TABLE_SIZE; f++) {
			const struct fg_flow_stats *fl = &r.w[k].stats.flows[f];
			row_received += fl->received;
			row_answered += fl->responded + fl->rejected;
			CHECK(fl->responded + fl->rejected <= fl->received);
		}
	CHECK_EQ(row_received, N);
	CHECK_EQ(row_answered, N);
	mesh_fini(&r);
}

/* Untrusted sources under several workers: the identity trust assigns is not
 * in the packet, and a hand-off must not take it for packet bytes. */
TEST(mesh_untrusted_sources_are_handed_over_with_their_assigned_identity)
{
	static struct mesh_rig r;
	mesh_init(&r, 2, 8);
	struct fg_config *c = r.cfgs[0];
	c->trust.n_trusted = 1;
	fg_cidr_parse("127.0.0.1/32", &c->trust.trusted[0]); /* 127.0.0.2 and .3 are strangers */
	c->trust.addr_validation = FG_AV_OFF;
	for (int round = 0; round < 2; round++) {
		for (uint64_t id = 1; id <= 10; id++)
			inject_request(&r.io, r.client[2], (uint64_t)round * 100 + id, "claims-to-be-root", 1);
		mesh_step(&r, (unsigned)round); /* worker 0, then worker 1 receives: one is not the owner */
		mesh_step(&r, (unsigned)!round);
		mesh_step(&r, (unsigned)round);
	}
	CHECK(MESH_SUM(&r, handed_off) >= 10);
	CHECK_EQ(MESH_SUM(&r, untrusted_requests), 20);
	/* The owner's flows (it took requests over) are all schema "all" by
	 * user system:anonymous: the assigned identity, not bytes of a packet. */
	unsigned owners = 0, flows = 0, other = 0;
	for (unsigned w = 0; w < 2; w++) {
		if (!r.w[w].stats.taken_over)
			continue;
		owners++;
		for (uint32_t i = 0; i < FG_FLOW_TABLE_SIZE; i++) {
			struct fg_flow_snapshot f;
			if (!fg_stats_flow_read(&r.w[w].stats, i, &f) || strncmp(f.name, "all/", 4))
				continue;
			flows++;
			other += strcmp(f.name, "all/" FG_ANONYMOUS_USER) != 0;
		}
	}
	CHECK_EQ(owners, 1);
	CHECK(flows >= 1);
	CHECK_EQ(other, 0);
	uint64_t ids[64];
	uint8_t backends[64];
	unsigned n_ids = 0, answered = 0;
	for (int k = 0; k < 40 && MESH_SUM(&r, responded) < 20; k++) { /* the owner holds half the seats */
		mesh_collect(&r, ids, backends, &n_ids, 64);
		for (; answered < n_ids; answered++)
			mesh_respond(&r, backends[answered], ids[answered]);
		mesh_step(&r, 0);
		mesh_step(&r, 1);
	}
	CHECK_EQ(MESH_SUM(&r, responded), 20);
	mesh_fini(&r);
}

/* One slot reused more than 2^24 times (where the old 24-bit generation
 * wrapped and a late answer reached the slot's next request): a dispatch id
 * from the first use names nothing ever after. */
TEST(reqtable_slot_reused_past_2_24_times)
{
	struct fg_reqtable t;
	struct fg_nonces n;
	static const uint8_t key[FG_NONCE_KEY_LEN] = { 9 };
	CHECK_EQ(fg_reqtable_init(&t, 1), 0);
	fg_nonces_init(&n, key);
	uint32_t slot = fg_reqtable_alloc(&t);
	t.slots[slot].state = FG_REQ_EXECUTING;
	t.slots[slot].nonce = fg_nonce_next(&n);
	uint64_t first = fg_dispatch_id(5, &t.slots[slot], slot);
	CHECK_EQ(fg_reqtable_lookup(&t, 5, first), slot);
	unsigned matched = 0;
	for (uint32_t use = 0; use < (1u << 24) + 2; use++) {
		fg_reqtable_release(&t, slot);
		CHECK_EQ(fg_reqtable_alloc(&t), slot); /* the only slot */
		t.slots[slot].state = FG_REQ_EXECUTING;
		t.slots[slot].nonce = fg_nonce_next(&n);
		matched += fg_reqtable_lookup(&t, 5, first) != FG_REQ_NIL;
	}
	/* A 32-bit nonce repeats by chance about 2^24/2^32 of the time: with
	 * this fixed key, never. */
	CHECK_EQ(matched, 0);
	fg_reqtable_fini(&t);
}

/* The greedy header on the bootstrap configuration's Reject level
 * (catch-all) and Exempt level: capped at min(limit, 10) and 10 seats, held
 * no longer than maxExtraLatency after the answer. */
TEST(hostile_widths_on_reject_and_exempt_levels)
{
	struct rig r;
	rig_init(&r, 4, 10, 1);
	fg_fc_config_free(r.cfg.fc);
	struct fg_fc_set *set = fg_fc_set_bootstrap();
	struct fg_errors e = { .len = 0 };
	r.cfg.fc = fg_fc_compile(set, 600, &e);
	fg_fc_set_free(set);
	r.cfg.generation++;
	struct fg_hdr greedy = { .seats = 65535, .final_seats = 65535, .work_hint = UINT32_MAX,
				 .extra_latency_us = UINT32_MAX };
	uint8_t buf[512];
	const char *groups[2] = { NULL, "system:masters" }; /* catch-all, exempt */
	const char *levels[2] = { "catch-all", "exempt" };
	for (int k = 0; k < 2; k++) {
		int n = hostile_request(buf, sizeof(buf), 20 + (uint64_t)k, "mallory", groups[k], NULL, &greedy);
		fake_inject(&r.io, buf, (size_t)n, r.client[0]);
		step(&r);
		struct fg_msg m;
		struct fg_endpoint to;
		CHECK(next_sent(&r, &m, &to) && m.hdr.type == FG_MSG_REQUEST);
		uint32_t slot = FG_MAX_LEVELS;
		for (uint32_t i = 0; i < r.w.n_levels; i++)
			if (r.w.levels[i].used && !strcmp(r.w.stats.levels[i].name, levels[k]))
				slot = i;
		CHECK(slot < FG_MAX_LEVELS);
		if (slot == FG_MAX_LEVELS)
			break;
		struct fg_queueset *qs = &r.w.levels[slot].qs;
		CHECK_EQ(qs->seats_in_use, 10); /* catch-all: min(13, 10); exempt: 10 */
		respond_from(&r, 0, m.hdr.request_id, "ok");
		step(&r);
		CHECK(next_sent(&r, &m, &to) && m.hdr.type == FG_MSG_RESPONSE);
		CHECK_EQ(qs->seats_in_use, 10); /* lingering ... */
		r.now += r.cfg.max_extra_latency_ns + 2 * (1ull << FG_WHEEL_TICK_SHIFT);
		step(&r);
		CHECK_EQ(qs->seats_in_use, 0);  /* ... for maxExtraLatency at most */
	}
	check_invariant(&r);
	rig_fini(&r);
}

/* The I/O refuses every send: answers count as sent nowhere — they are
 * counted unsent (requests towards a backend time out and are answered). */
TEST(refused_answers_are_counted_unsent)
{
	struct rig r;
	rig_init(&r, 4, 10, 1);
	send_request(&r, 0, 1, "alice", 1);
	step(&r);
	struct fg_msg m;
	struct fg_endpoint to;
	CHECK(next_sent(&r, &m, &to));
	r.io.fail_tx = 1;
	respond_from(&r, 0, m.hdr.request_id, "ok");
	send_request(&r, 0, 2, "alice", 1); /* its forward to the backend is refused too */
	step(&r);
	CHECK_EQ(r.w.stats.responded, 1);
	CHECK_EQ(r.w.stats.answers_unsent, 1);
	CHECK_EQ(r.w.stats.tx_failed, 2);
	r.io.fail_tx = 0;
	r.now += r.cfg.backend_timeout_ns + 1;
	step(&r); /* the refused forward's request is answered backend-timeout */
	CHECK_EQ(r.w.stats.rejected[FG_REJECT_BACKEND_TIMEOUT], 1);
	CHECK(next_sent(&r, &m, &to) && m.hdr.type == FG_MSG_REJECT && m.hdr.request_id == 2);
	check_invariant(&r);
	rig_fini(&r);
}

/* retryAfterMillis 0: a level's REJECTs carry its adaptive retry-after, which
 * sustained queue-full rejects double (Kubernetes' tracker, retryafter.h);
 * a REJECT outside any level carries the fallback. */
TEST(adaptive_retry_after_follows_the_drops)
{
	struct rig r;
	rig_init(&r, 1, 1, 1); /* one seat, queues of one: the third request of a flow is refused */
	r.cfg.retry_after_ms = 0;
	uint32_t last = 0;
	uint64_t id = 1;
	for (int second = 0; second < 4; second++, r.now += 1000 * MS) {
		for (int k = 0; k < 12; k++)
			send_request(&r, 0, id++, "alice", 1);
		step(&r);
		struct fg_msg m;
		struct fg_endpoint to;
		while (next_sent(&r, &m, &to))
			if (m.hdr.type == FG_MSG_REJECT && m.hdr.reason == FG_REJECT_QUEUE_FULL)
				last = m.hdr.retry_after_ms;
		if (second == 0)
			CHECK_EQ(last, 1000); /* starts at 1 s */
	}
	CHECK(last >= 4000); /* 10 drops a second: doubled at least twice */
	uint8_t junk[FG_PROTO_HDR_LEN] = { 0x46, 0x47, 1, 9 }; /* bad type: REJECT invalid */
	fake_inject(&r.io, junk, sizeof(junk), r.client[1]);
	step(&r);
	struct fg_msg m;
	struct fg_endpoint to;
	CHECK(next_sent(&r, &m, &to) && m.hdr.reason == FG_REJECT_INVALID);
	CHECK_EQ(m.hdr.retry_after_ms, FG_FALLBACK_RETRY_AFTER_MS);
	fg_worker_drain(&r.w, &r.cfg, r.now);
	fg_worker_abort_executing(&r.w, &r.cfg, r.now);
	check_invariant(&r);
	rig_fini(&r);
}

/* A configuration one of whose levels cannot be prepared (here a hand larger
 * than the dealer deals), after an existing level's reconfiguration and a new
 * level were already prepared: everything prepared is given up, nothing of
 * the worker changes, and the refusal is reported. */
TEST(a_level_that_cannot_be_prepared_changes_nothing)
{
	struct rig r;
	rig_init(&r, 4, 10, 1);
	struct fg_fc_config *a = levels_named("a", 3), *b = levels_named("a", 5);
	fg_fc_config_free(r.cfg.fc);
	r.cfg.fc = a;
	r.cfg.generation++;
	step(&r);
	CHECK_EQ(r.w.config_generation, r.cfg.generation);
	/* In b: a-0..a-2 exist (reconfigured: other limits), a-3 and a-4 are new;
	 * the second new one in preparation order cannot be dealt. */
	unsigned fresh = 0;
	for (uint32_t i = 0; i < b->n_levels; i++)
		if (!strcmp(b->levels[i].name, "a-3") || !strcmp(b->levels[i].name, "a-4"))
			if (++fresh == 2)
				b->levels[i].hand_size = FG_DEALER_MAX_HAND + 1;
	uint32_t n_levels = r.w.n_levels, used = 0;
	struct fg_qs_config before[FG_MAX_LEVELS];
	for (uint32_t k = 0; k < r.w.n_levels; k++) {
		used += r.w.levels[k].used;
		before[k] = r.w.levels[k].qs.cfg;
	}
	uint64_t followed = r.w.config_generation;
	r.cfg.fc = b;
	r.cfg.generation++;
	step(&r);
	CHECK_EQ(r.w.stats.config_error, EINVAL);
	CHECK_EQ(r.w.config_generation, followed);
	CHECK_EQ(r.w.n_levels, n_levels);
	uint32_t used_after = 0;
	for (uint32_t k = 0; k < r.w.n_levels; k++) {
		if (!r.w.levels[k].used)
			continue; /* a free slot a new level was prepared in, and given back */
		used_after++;
		CHECK_EQ(r.w.levels[k].qs.cfg.queues, before[k].queues);
		CHECK_EQ(r.w.levels[k].qs.level_limit, before[k].concurrency_limit);
	}
	CHECK_EQ(used_after, used);
	r.cfg.fc = NULL;
	fg_worker_fini(&r.w);
	fg_fc_config_free(a);
	fg_fc_config_free(b);
	CHECK_EQ(r.io.in_use, 0);
	fake_fini(&r.io);
}

/* --- backends changed live ------------------------------------------------ */

/* A new backends list (as the control thread publishes it: slots kept by
 * address, settings.h), followed at the worker's next poll. */
static void rig_set_backends(struct rig *r, const struct fg_backend_cfg *list, uint32_t n)
{
	static struct fg_config prev;
	prev = r->cfg;
	r->cfg.n_backends = n;
	memcpy(r->cfg.backends, list, sizeof(list[0]) * n);
	fg_config_keep_backend_slots(&r->cfg, &prev);
	r->cfg.generation++;
}

/* Each slot's outstanding seats are exactly those of the requests executing
 * there, and within its capacity (a wider request alone aside). */
static void check_backend_seats(struct rig *r)
{
	uint32_t seats[FG_MAX_BACKENDS] = { 0 }, count[FG_MAX_BACKENDS] = { 0 };
	for (uint32_t slot = r->w.executing.head; slot != FG_REQ_NIL; slot = r->w.reqs.slots[slot].next) {
		const struct fg_req *q = &r->w.reqs.slots[slot];
		CHECK(q->backend < r->w.pool.n);
		seats[q->backend] += q->qs.seats;
		count[q->backend]++;
	}
	for (uint32_t b = 0; b < r->w.pool.n; b++) {
		const struct fg_backend *be = &r->w.pool.b[b];
		CHECK_EQ(be->outstanding, seats[b]);
		CHECK(!be->capacity || be->outstanding <= be->capacity || count[b] == 1);
		CHECK_EQ(r->w.stats.backends[b].outstanding, be->outstanding);
	}
}

/* Drain: nothing new goes to the drained backend, what is in flight there is
 * answered by it; with every backend drained, new requests get no-backend. */
TEST(drained_backend_gets_nothing_new_and_finishes_in_flight)
{
	struct rig r;
	rig_init(&r, 8, 10, 2);
	uint64_t ids[2][8];
	unsigned n_ids[2] = { 0, 0 };
	struct fg_msg m;
	struct fg_endpoint to;
	for (uint64_t id = 1; id <= 4; id++)
		send_request(&r, 0, id, "alice", 1);
	step(&r);
	while (next_sent(&r, &m, &to)) {
		int b = fg_endpoint_same_addr(&to, &r.backend[0]) ? 0 : 1;
		ids[b][n_ids[b]++] = m.hdr.request_id;
	}
	CHECK_EQ(n_ids[0], 2);
	CHECK_EQ(n_ids[1], 2);
	struct fg_backend_cfg list[2] = { r.cfg.backends[0], r.cfg.backends[1] };
	list[0].admin = FG_BACKEND_DRAIN;
	rig_set_backends(&r, list, 2);
	for (uint64_t id = 5; id <= 8; id++)
		send_request(&r, 1, id, "bob", 1);
	r.now += MS;
	step(&r);
	CHECK_EQ(r.w.stats.backends[0].admin, FG_BACKEND_DRAIN);
	while (next_sent(&r, &m, &to)) {
		CHECK(fg_endpoint_same_addr(&to, &r.backend[1])); /* not to the drained one */
		ids[1][n_ids[1]++] = m.hdr.request_id;
	}
	CHECK_EQ(n_ids[1], 6);
	CHECK_EQ(r.w.stats.backends[0].outstanding, 2);
	/* The drained backend's answers are still taken. */
	respond_from(&r, 0, ids[0][0], "late");
	respond_from(&r, 0, ids[0][1], "late");
	r.now += MS;
	step(&r);
	CHECK_EQ(r.w.stats.responded, 2);
	CHECK_EQ(r.w.stats.backends[0].outstanding, 0);
	check_backend_seats(&r);
	/* Both drained: no backend is usable. */
	list[1].admin = FG_BACKEND_DRAIN;
	rig_set_backends(&r, list, 2);
	send_request(&r, 2, 9, "carol", 1);
	r.now += MS;
	step(&r);
	unsigned no_backend = 0;
	while (next_sent(&r, &m, &to))
		no_backend += m.hdr.type == FG_MSG_REJECT && m.hdr.reason == FG_REJECT_NO_BACKEND;
	CHECK_EQ(no_backend, 1);
	/* Enabled again: dispatches resume. */
	list[0].admin = list[1].admin = FG_BACKEND_ENABLED;
	rig_set_backends(&r, list, 2);
	send_request(&r, 2, 10, "carol", 1);
	r.now += MS;
	step(&r);
	CHECK(next_sent(&r, &m, &to));
	CHECK_EQ(m.hdr.type, FG_MSG_REQUEST);
	for (unsigned i = 0; i < n_ids[1]; i++)
		respond_from(&r, 1, ids[1][i], "ok");
	respond_from(&r, 0, m.hdr.request_id, "ok");
	respond_from(&r, 1, m.hdr.request_id, "ok");
	r.now += MS;
	step(&r);
	CHECK_EQ(r.w.stats.responded, 9);
	CHECK_EQ(r.w.stats.executing, 0);
	check_backend_seats(&r);
	check_invariant(&r);
	rig_fini(&r);
}

/* A disabled backend's timeouts neither eject it nor count towards an
 * ejection; enable starts it afresh. */
TEST(disabled_backend_timeouts_do_not_eject)
{
	struct rig r;
	rig_init(&r, 8, 10, 2);
	r.cfg.eject_after = 1;
	r.cfg.backend_timeout_ns = 100 * MS;
	r.cfg.generation++;
	send_request(&r, 0, 1, "alice", 1);
	send_request(&r, 0, 2, "alice", 1);
	step(&r);
	r.seen = r.io.n_sent; /* one to each backend */
	struct fg_backend_cfg list[2] = { r.cfg.backends[0], r.cfg.backends[1] };
	list[0].admin = FG_BACKEND_DISABLED;
	rig_set_backends(&r, list, 2);
	r.now += 200 * MS;
	step(&r); /* both time out; only backend 1's counts */
	CHECK_EQ(r.w.stats.rejected[FG_REJECT_BACKEND_TIMEOUT], 2);
	CHECK_EQ(r.w.pool.b[0].state, FG_BACKEND_UP);
	CHECK_EQ(r.w.pool.b[1].state, FG_BACKEND_EJECTED);
	list[0].admin = FG_BACKEND_ENABLED;
	rig_set_backends(&r, list, 2);
	send_request(&r, 0, 3, "alice", 1);
	r.now += MS;
	step(&r);
	struct fg_msg m;
	struct fg_endpoint to;
	unsigned to_0 = 0;
	while (next_sent(&r, &m, &to))
		to_0 += m.hdr.type == FG_MSG_REQUEST && fg_endpoint_same_addr(&to, &r.backend[0]);
	CHECK_EQ(to_0, 1);
	fg_worker_abort_executing(&r.w, &r.cfg, r.now);
	check_invariant(&r);
	rig_fini(&r);
}

/* Backends added, removed, drained, disabled and enabled at random under
 * random load on a virtual clock, with more addresses over time than there
 * are slots (so removed slots get reused): every request is answered exactly
 * once; an answer from a removed backend whose request is still in flight is
 * relayed; nothing is ever sent to a backend that is not listed and enabled;
 * each slot's seats are those of its executing requests, within capacity. */
TEST(backends_added_and_removed_under_random_load)
{
	struct rig r;
	rig_init(&r, 12, 30, 0);
	r.cfg.backend_timeout_ns = 400 * MS;
	r.cfg.queue_wait_ns = 300 * MS;
	struct fg_backend_cfg list[6];
	uint32_t n_list = 0;
	uint16_t next_port = 20000;
	static uint8_t answers[30001];
	memset(answers, 0, sizeof(answers));
	struct { uint64_t id; struct fg_endpoint to; } out[1024];
	unsigned n_out = 0, seed = 1040, adds = 0, removes = 0, relayed_removed = 0, admin_changes = 0;
	uint64_t next_id = 1;
	for (int iter = 0; iter < 12000; iter++) {
		unsigned k = (unsigned)rand_r(&seed) % 100;
		if (k < 45 && next_id <= 30000) {
			send_request(&r, rand_r(&seed) % 4, next_id++, (const char *[]){ "a", "b", "c", "d" }[rand_r(&seed) % 4],
				     (uint16_t)(1 + rand_r(&seed) % 3));
		} else if (k < 80 && n_out) {
			unsigned i = (unsigned)rand_r(&seed) % n_out;
			/* Still in flight and its backend no longer listed: its answer must be relayed. */
			uint32_t slot = fg_reqtable_lookup(&r.w.reqs, r.w.id, out[i].id);
			bool removed = slot != FG_REQ_NIL &&
				       r.cfg.backends[r.w.reqs.slots[slot].backend].admin == FG_BACKEND_REMOVED &&
				       r.w.config_generation == r.cfg.generation;
			uint64_t responded = r.w.stats.responded;
			inject_response(&r.io, out[i].to, out[i].id, "ok");
			out[i] = out[--n_out];
			r.now += MS;
			step(&r);
			if (removed) {
				CHECK_EQ(r.w.stats.responded, responded + 1);
				relayed_removed++;
			}
		} else if (k < 84 && n_list < 6) {
			struct fg_backend_cfg b = { 0 };
			b.ep.ip = htonl(0x7f000063u); /* 127.0.0.99 */
			b.ep.port = htons(next_port++);
			b.seats = rand_r(&seed) % 2 ? 0 : 2 + (uint32_t)rand_r(&seed) % 6;
			list[n_list++] = b;
			rig_set_backends(&r, list, n_list);
			adds++;
		} else if (k < 87 && n_list) {
			uint32_t i = (uint32_t)rand_r(&seed) % n_list;
			list[i] = list[--n_list];
			rig_set_backends(&r, list, n_list);
			removes++;
		} else if (k < 91 && n_list) {
			list[(uint32_t)rand_r(&seed) % n_list].admin = (uint8_t)((unsigned)rand_r(&seed) % 3);
			rig_set_backends(&r, list, n_list);
			admin_changes++;
		}
		r.now += (uint64_t)(rand_r(&seed) % 10) * MS;
		step(&r);
		check_invariant(&r);
		check_backend_seats(&r);
		struct fg_msg m;
		struct fg_endpoint to;
		while (next_sent(&r, &m, &to)) {
			if (m.hdr.type == FG_MSG_REQUEST) {
				bool listed_enabled = false;
				for (uint32_t i = 0; i < n_list; i++)
					listed_enabled |= fg_endpoint_same_addr(&to, &list[i].ep) &&
							  list[i].admin == FG_BACKEND_ENABLED;
				CHECK(listed_enabled);
				if (n_out < sizeof(out) / sizeof(out[0]))
					out[n_out++] = (typeof(out[0])){ m.hdr.request_id, to };
			} else if (m.hdr.request_id >= 1 && m.hdr.request_id < next_id) {
				answers[m.hdr.request_id]++;
			}
		}
	}
	CHECK_EQ(shut_down_and_count_bad_answers(&r, answers, next_id), 0);
	/* The test reached what it is about. */
	CHECK(adds > FG_MAX_BACKENDS);      /* slots were reused */
	CHECK(removes > 20 && admin_changes > 20);
	CHECK(relayed_removed > 0);
	CHECK(r.w.stats.responded > 1000);
	check_invariant(&r);
	rig_fini(&r);
}

/* --- borrowing between levels (common/runtime/borrower.h) ------------------------ */

/* One worker: a new current limit published in the configuration is
 * followed at the next poll — more seats dispatch at once, fewer stop
 * dispatching until the level drains below them — and the width cap follows. */
TEST(borrowed_limit_followed_at_the_next_poll)
{
	struct rig r;
	rig_init(&r, 2, 50, 1);
	uint32_t k = (uint32_t)fg_fc_level_index(r.cfg.fc, "pl");
	r.cfg.limits = calloc(1, sizeof(*r.cfg.limits) + sizeof(uint32_t) * r.cfg.fc->n_levels);
	r.cfg.limits->n = r.cfg.fc->n_levels;
	for (uint32_t i = 0; i < r.cfg.fc->n_levels; i++)
		r.cfg.limits->current[i] = r.cfg.fc->levels[i].limit;
	char user[16];
	for (uint64_t id = 1; id <= 12; id++) {
		snprintf(user, sizeof(user), "u%u", (unsigned)id);
		send_request(&r, 0, id, user, 1);
	}
	step(&r);
	CHECK_EQ(pl_qs(&r.w)->seats_in_use, 2);
	/* Borrowed: 6 seats, at the next poll. */
	fg_config_set_level_limit(&r.cfg, k, 6);
	r.cfg.limits->seq++;
	step(&r);
	CHECK_EQ(pl_qs(&r.w)->seats_in_use, 6);
	CHECK_EQ(pl_qs(&r.w)->level_limit, 6);
	CHECK_EQ(r.w.stats.levels[r.w.level_of_cfg[k]].limit, 6);
	/* Lent back: 3 seats; nothing dispatches until fewer than 3 are in use. */
	fg_config_set_level_limit(&r.cfg, k, 3);
	r.cfg.limits->seq++;
	step(&r);
	struct fg_msg m;
	struct fg_endpoint to;
	uint64_t ids[32];
	unsigned n = 0;
	while (next_sent(&r, &m, &to))
		if (m.hdr.type == FG_MSG_REQUEST)
			ids[n++] = m.hdr.request_id;
	CHECK_EQ(n, 6);
	uint32_t peak_after = 0;
	for (unsigned i = 0; i < n; i++) {
		respond_from(&r, 0, ids[i], "ok");
		step(&r);
		uint32_t used = pl_qs(&r.w)->seats_in_use;
		CHECK(used <= 6 - i - 1 || used <= 3); /* never grows back while above the limit */
		if (i >= 3)
			peak_after = used > peak_after ? used : peak_after;
	}
	CHECK_EQ(peak_after, 3); /* and refills to the new limit once below it */
	CHECK_EQ(pl_qs(&r.w)->level_limit, 3);
	/* A stale sequence is not followed again: the queue set keeps its limit. */
	r.cfg.limits->current[k] = 9;
	step(&r);
	CHECK_EQ(pl_qs(&r.w)->cfg.concurrency_limit, 3);
	/* Drain. */
	for (int round = 0; round < 50 && (pl_qs(&r.w)->seats_in_use || r.w.stats.waiting); round++) {
		while (next_sent(&r, &m, &to))
			if (m.hdr.type == FG_MSG_REQUEST)
				respond_from(&r, 0, m.hdr.request_id, "ok");
		step(&r);
	}
	CHECK_EQ(r.w.stats.responded, 12);
	check_invariant(&r);
	free(r.cfg.limits);
	rig_fini(&r);
}

/* Several workers: borrowing moves the level's limit on the board (as the
 * allotter thread does, followed by an allotment round) under random load,
 * every 33 steps on average.  seatshare.h's grant protocol holds across the
 * moves: a worker's seats grow only within its applied allotment; seats in
 * use over all workers never grow above the largest limit since the level
 * last settled; it settles once a round that found no grant pending was
 * acknowledged and every worker drained to its allotment, and from then on
 * the allotments sum to at most the limit, the seats never grow above it,
 * and every worker checks widths against it.  The KEP's transient: seats
 * that executed under a larger limit finish. */
TEST(mesh_borrowed_limits_keep_the_seat_invariant)
{
	struct mesh_rig r;
	mesh_init(&r, 3, 12);
	struct fg_config *cfg = r.cfgs[0];
	uint32_t k = (uint32_t)fg_fc_level_index(cfg->fc, "pl");
	const struct fg_level_board *lb = &cfg->board->levels[k];
	unsigned rng = 2026;
	uint64_t next_id = 1, violations = 0, transient = 0, changes = 0, peak = 0, stale_width = 0;
	uint32_t limit = 12, bound = 12; /* bound: the largest limit since the level last settled */
	int phase = 0; /* 0 settled; 1 the limit moved; 2 a round with nothing pending ran since */
	static uint64_t executing[8192];
	static uint8_t exec_backend[8192];
	unsigned n_exec = 0;
	char user[16];
	for (int stepn = 0; stepn < 20000; stepn++) {
		uint32_t before = mesh_seats_in_use(&r);
		uint32_t was[MESH_MAX];
		for (unsigned w = 0; w < r.n; w++)
			was[w] = pl_qs(&r.w[w])->seats_in_use;
		unsigned action = (unsigned)rand_r(&rng) % 100;
		if (action < 15) {
			unsigned n = 1 + (unsigned)rand_r(&rng) % 3;
			for (unsigned j = 0; j < n; j++) {
				snprintf(user, sizeof(user), "u%u", (unsigned)rand_r(&rng) % 40);
				mesh_send(&r, next_id++, user, (uint16_t)(1 + rand_r(&rng) % 2));
			}
			mesh_step(&r, (unsigned)rand_r(&rng) % r.n);
		} else if (action < 45) {
			mesh_step(&r, (unsigned)rand_r(&rng) % r.n);
		} else if (action < 85 && n_exec) {
			unsigned i = (unsigned)rand_r(&rng) % n_exec;
			mesh_respond(&r, exec_backend[i], executing[i]);
			n_exec--;
			executing[i] = executing[n_exec];
			exec_backend[i] = exec_backend[n_exec];
			mesh_step(&r, (unsigned)rand_r(&rng) % r.n);
		} else if (action < 97) { /* an allotment round */
			bool pending = false;
			for (unsigned w = 0; w < r.n; w++)
				pending |= lb->shares[w].grant_seq != lb->shares[w].acked_seq;
			fg_board_allot(cfg->board);
			if (phase == 1 && !pending)
				phase = 2;
		} else { /* a borrowing round moves the limit (2..20 seats), then allots */
			limit = 2 + (uint32_t)rand_r(&rng) % 19;
			bound = limit > bound ? limit : bound;
			fg_config_set_level_limit(cfg, k, limit);
			fg_board_allot(cfg->board);
			phase = 1;
			changes++;
		}
		r.now += MS / 10;
		mesh_collect(&r, executing, exec_backend, &n_exec, 8192);
		bool acked = true, drained = true;
		for (unsigned w = 0; w < r.n; w++) {
			acked &= lb->shares[w].grant_seq == lb->shares[w].acked_seq;
			drained &= pl_qs(&r.w[w])->seats_in_use <= pl_qs(&r.w[w])->cfg.concurrency_limit;
		}
		if (phase == 2 && acked && drained) {
			phase = 0;
			bound = limit;
		}
		uint32_t after = mesh_seats_in_use(&r), applied = 0;
		for (unsigned w = 0; w < r.n; w++) {
			const struct fg_queueset *qs = pl_qs(&r.w[w]);
			if (qs->seats_in_use > was[w] && qs->seats_in_use > qs->cfg.concurrency_limit)
				violations++; /* grew above its own allotment */
			applied += lb->shares[w].applied;
		}
		if (phase == 0 && applied > limit)
			violations++; /* settled allotments above the limit */
		for (unsigned w = 0; phase == 0 && w < r.n; w++)
			if (pl_qs(&r.w[w])->level_limit != limit)
				stale_width++; /* a worker's width checks on another limit */
		if (after > before && after > bound)
			violations++;
		if (after > limit)
			transient++;
		peak = after > peak ? after : peak;
	}
	printf("  borrowing run: %llu limit changes, peak %llu seats, %llu of 20000 steps above a just-lowered limit\n",
	       (unsigned long long)changes, (unsigned long long)peak, (unsigned long long)transient);
	CHECK_EQ(violations, 0);
	CHECK_EQ(stale_width, 0);
	CHECK(changes > 300);
	CHECK(peak > 12); /* the workers really used borrowed seats */
	for (int round = 0; round < 2000 && (n_exec || mesh_seats_in_use(&r) || mesh_waiting(&r)); round++) {
		while (n_exec) {
			n_exec--;
			mesh_respond(&r, exec_backend[n_exec], executing[n_exec]);
		}
		for (unsigned i = 0; i < r.n; i++)
			mesh_step(&r, i);
		fg_board_allot(cfg->board);
		r.now += MS;
		mesh_collect(&r, executing, exec_backend, &n_exec, 8192);
	}
	uint64_t rejected = 0;
	for (int j = 0; j < FG_REJECT__COUNT; j++)
		for (unsigned i = 0; i < r.n; i++)
			rejected += r.w[i].stats.rejected[j];
	CHECK_EQ(MESH_SUM(&r, responded) + rejected, next_id - 1);
	CHECK_EQ(mesh_seats_in_use(&r), 0);
	mesh_fini(&r);
}

/* A slot keeps a waiting datagram as handle + 16-bit offset, length and
 * room (reqtable.h): what comes back is the datagram it was given, also
 * when the message lies past the handle (an mbuf's data room) and at the
 * largest span an I/O layer may use (pkt.h). */
TEST(slot_gives_back_the_datagram_it_holds)
{
	static uint8_t buffer[FG_PKT_MAX_SPAN + 1];
	const uint32_t offs[] = { 0, 170, FG_PKT_MAX_SPAN - FG_PROTO_MAX_DATAGRAM };
	for (unsigned i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		struct fg_pkt in = { .handle = buffer, .data = buffer + offs[i], .len = FG_PROTO_MAX_DATAGRAM - i,
				     .cap = FG_PROTO_MAX_DATAGRAM, .peer = { .ip = 0x0100007f, .port = 0x1234,
									    .mac = { 2, 0, 0, 0, 0, 9 } } };
		struct fg_req r;
		memset(&r, 0xa5, sizeof(r));
		fg_req_hold_pkt(&r, &in);
		struct fg_pkt out = fg_req_pkt(&r);
		CHECK(out.handle == in.handle && out.data == in.data);
		CHECK_EQ(out.len, in.len);
		CHECK_EQ(out.cap, in.cap);
		CHECK(memcmp(&out.peer, &in.peer, sizeof(in.peer)) == 0 && memcmp(&r.client, &in.peer, sizeof(in.peer)) == 0);
		r.pkt_handle = NULL; /* sent on, or freed */
		CHECK(fg_req_pkt(&r).handle == NULL && fg_req_pkt(&r).data == NULL);
	}
	/* The client's deadline hint counts from the arrival; none is never. */
	struct fg_req r = { .client_deadline_ms = 250 };
	r.qs.arrival_ns = 7000 * MS;
	CHECK_EQ(fg_req_client_deadline(&r), 7250 * MS);
	r.client_deadline_ms = 0;
	CHECK_EQ(fg_req_client_deadline(&r), UINT64_MAX);
	r.client_deadline_ms = UINT32_MAX; /* the wire's largest: no wrap */
	CHECK_EQ(fg_req_client_deadline(&r), 7000 * MS + (uint64_t)UINT32_MAX * MS);
}

TEST_MAIN
