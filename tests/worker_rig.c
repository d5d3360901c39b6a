/* SPDX-License-Identifier: Apache-2.0 */
/* worker_rig — the worker tests' rigs, datagrams and checks; see worker_rig.h. */
#include "worker_rig.h"

#include <stdlib.h>

#include "test.h"

struct fg_fc_config *one_level_queues(uint32_t seats, uint32_t qlen, uint32_t queues)
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

struct fg_fc_config *one_level(uint32_t seats, uint32_t qlen)
{
	return one_level_queues(seats, qlen, 64);
}

struct fg_queueset *pl_qs(struct fg_worker *w)
{
	for (uint32_t k = 0; k < w->n_levels; k++)
		if (w->levels[k].used && !strcmp(w->stats.levels[k].name, "pl"))
			return &w->levels[k].qs;
	return NULL;
}

/* The addresses both rigs use: clients on three hosts, two backends. */
static void rig_endpoints(struct fg_endpoint client[4], struct fg_endpoint backend[2])
{
	for (int i = 0; i < 4; i++)
		fg_endpoint_parse((const char *[]){ "127.0.0.1:1001", "127.0.0.1:1002", "127.0.0.2:1003", "127.0.0.3:1004" }[i],
				  &client[i]);
	fg_endpoint_parse("127.0.0.1:7501", &backend[0]);
	fg_endpoint_parse("127.0.0.1:7502", &backend[1]);
}

/* What both rigs' configurations are built from: the daemon's defaults
 * (loopback sources trusted, the extra-latency cap, ...), then the times the
 * tests count on, per (level, schema) metrics (check_apf), the seat limit
 * and the first n_backends of backend[]. */
static void rig_settings(struct fg_settings *s, uint32_t seats, unsigned n_backends, const struct fg_endpoint *backend)
{
	fg_settings_defaults(s);
	s->seat_limit = seats;
	s->queue_wait_ns = (int64_t)(1000 * MS);
	s->backend_timeout_ns = (int64_t)(5000 * MS);
	s->eject_ns = (int64_t)(1000 * MS);
	s->max_eject_ns = (int64_t)(30000 * MS);
	s->flowcontrol_metrics = true;
	s->n_backends = n_backends;
	for (unsigned i = 0; i < n_backends; i++)
		s->backends[i].ep = backend[i];
}

void rig_init(struct rig *r, uint32_t seats, uint32_t qlen, unsigned n_backends)
{
	memset(r, 0, sizeof(*r));
	fake_init(&r->io);
	fg_worker_init(&r->w, 3, (struct fg_io){ &fake_ops, &r->io }, 256);
	rig_endpoints(r->client, r->backend);
	rig_settings(&r->s, seats, n_backends, r->backend);
	r->s.retry_after_ms = 250;
	r->s.eject_after = 3;
	r->cfg = fg_config_build(&r->s, one_level(seats, qlen), 1);
	CHECK(r->cfg != NULL);
	r->now = 1000 * MS;
	CHECK_EQ(fg_worker_configure(&r->w, r->cfg, r->now), 0);
}

void rig_set_fc(struct rig *r, struct fg_fc_config *fc)
{
	struct fg_config *next = fg_config_build(&r->s, fc, r->cfg->generation + 1);
	CHECK(next != NULL && r->n_old < sizeof(r->old) / sizeof(r->old[0]));
	if (!next || r->n_old >= sizeof(r->old) / sizeof(r->old[0]))
		abort(); /* the tests that follow cannot go on */
	r->old[r->n_old++] = r->cfg; /* the worker still follows it until its next step */
	r->cfg = next;
}

void rig_fini(struct rig *r)
{
	fg_worker_fini(&r->w);
	fg_config_free(r->cfg);
	for (unsigned i = 0; i < r->n_old; i++)
		fg_config_free(r->old[i]);
	CHECK_EQ(r->io.in_use, 0); /* every buffer came back */
	fake_fini(&r->io);
}

void inject_request(struct fake_io *io, struct fg_endpoint from, uint64_t id, const char *user, uint16_t seats)
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

void inject_response(struct fake_io *io, struct fg_endpoint from, uint64_t dispatch_id, const char *body)
{
	struct fg_msg m;
	uint8_t buf[256];
	fg_msg_init(&m, FG_MSG_RESPONSE, dispatch_id);
	m.payload = (const uint8_t *)body;
	m.payload_len = strlen(body);
	int n = fg_proto_encode(buf, sizeof(buf), &m);
	fake_inject(io, buf, (size_t)n, from);
}

void inject_backend_reject(struct fake_io *io, struct fg_endpoint from, uint64_t dispatch_id,
			   enum fg_reject_reason reason)
{
	uint8_t buf[64];
	int n = fg_proto_encode_reject(buf, sizeof(buf), dispatch_id, reason, 0);
	fake_inject(io, buf, (size_t)n, from);
}

void send_request(struct rig *r, int client, uint64_t id, const char *user, uint16_t seats)
{
	inject_request(&r->io, r->client[client], id, user, seats);
}

void respond_from(struct rig *r, int backend, uint64_t dispatch_id, const char *body)
{
	inject_response(&r->io, r->backend[backend], dispatch_id, body);
}

void reject_from(struct rig *r, int backend, uint64_t dispatch_id, enum fg_reject_reason reason)
{
	inject_backend_reject(&r->io, r->backend[backend], dispatch_id, reason);
}

void step(struct rig *r) { fg_worker_poll(&r->w, r->cfg, r->now); }

int next_sent(struct rig *r, struct fg_msg *m, struct fg_endpoint *to)
{
	memset(to, 0, sizeof(*to));
	if (r->seen >= r->io.n_sent)
		return 0;
	struct fake_sent *s = &r->io.sent[r->seen++];
	*to = s->to;
	return fg_proto_decode(s->data, s->len, m) == FG_PROTO_OK;
}

void check_apf(struct fg_worker *w)
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

void check_invariant(struct rig *r)
{
	struct fg_worker_stats *s = &r->w.stats;
	uint64_t rej = 0;
	for (int i = 0; i < FG_REJECT__COUNT; i++)
		rej += s->rejected[i];
	CHECK_EQ(s->received, s->responded + rej + s->answers_lost + s->waiting + s->executing);
	if (r->w.apf_metrics)
		check_apf(&r->w);
}

unsigned shut_down_and_count_bad_answers(struct rig *r, uint8_t *answers, uint64_t next_id)
{
	fg_worker_drain(&r->w, r->cfg, r->now);
	fg_worker_abort_executing(&r->w, r->cfg, r->now);
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

/* --- several workers ---------------------------------------------------------- */

struct fg_config *mesh_config_fc(struct mesh_rig *r, uint32_t seats, struct fg_fc_config *fc)
{
	struct fg_settings s;
	rig_settings(&s, seats, 2, r->backend);
	s.retry_after_ms = 0;        /* each level's adaptive retry-after */
	s.eject_after = 1000;
	s.workers = r->n;            /* fg_config_build makes the board */
	s.allotment_period_ns = 0;   /* fg_allotter_step: every step is due; the tests' clocks decide */
	struct fg_config *c = fg_config_build(&s, fc, r->n_cfgs + 1);
	CHECK(c != NULL && r->n_cfgs < sizeof(r->cfgs) / sizeof(r->cfgs[0]));
	if (!c || r->n_cfgs >= sizeof(r->cfgs) / sizeof(r->cfgs[0]))
		abort(); /* the tests that follow cannot go on */
	r->cfgs[r->n_cfgs++] = c;
	return c;
}

struct fg_config *mesh_config(struct mesh_rig *r, uint32_t seats, uint32_t qlen)
{
	return mesh_config_fc(r, seats, one_level(seats, qlen));
}

void mesh_init(struct mesh_rig *r, unsigned n, uint32_t seats)
{
	memset(r, 0, sizeof(*r));
	fake_init(&r->io);
	r->n = n;
	CHECK_EQ(fg_mesh_init(&r->mesh, n, 64), 0);
	rig_endpoints(r->client, r->backend);
	r->now = 1000 * MS;
	mesh_config(r, seats, 50);
	for (unsigned i = 0; i < n; i++) {
		CHECK_EQ(fg_worker_init(&r->w[i], i, (struct fg_io){ &fake_ops, &r->io }, 512), 0);
		CHECK_EQ(fg_worker_join(&r->w[i], &r->mesh), 0);
		CHECK_EQ(fg_worker_configure(&r->w[i], r->cfgs[0], r->now), 0);
	}
}

void mesh_fini(struct mesh_rig *r)
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

void mesh_step(struct mesh_rig *r, unsigned i) { fg_worker_poll(&r->w[i], r->cfgs[r->follows[i]], r->now); }

void mesh_send(struct mesh_rig *r, uint64_t id, const char *user, uint16_t seats)
{
	inject_request(&r->io, r->client[id % 4], id, user, seats);
}

void mesh_respond(struct mesh_rig *r, int backend, uint64_t dispatch_id)
{
	inject_response(&r->io, r->backend[backend], dispatch_id, "ok");
}

void mesh_collect(struct mesh_rig *r, uint64_t *ids, uint8_t *backends, unsigned *n, unsigned cap)
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

uint64_t mesh_sum(struct mesh_rig *r, size_t offset)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i < r->n; i++)
		sum += *(const uint64_t *)((const char *)&r->w[i].stats + offset);
	return sum;
}

uint32_t mesh_waiting(struct mesh_rig *r)
{
	uint32_t sum = 0;
	for (unsigned i = 0; i < r->n; i++)
		sum += r->w[i].stats.waiting;
	return sum;
}

uint32_t mesh_seats_in_use(struct mesh_rig *r)
{
	uint32_t sum = 0;
	for (unsigned i = 0; i < r->n; i++)
		sum += pl_qs(&r->w[i])->seats_in_use;
	return sum;
}
