/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the worker's dispatcher logic (dataplane/worker.c) on a fake
 * io and a virtual clock, one worker: requests relayed and answered, fair
 * order, rejects (queue full, wait limit, client deadline, backend timeout,
 * shutdown), widths, metrics and flow statistics, exactly-once answers under
 * random load, the staged burst against one-by-one handling, the answer
 * reserve, refused sends, the adaptive retry-after, a slot's datagram.  The
 * rest of the worker's tests: test_worker_{backends,config,hostile,mesh}.c;
 * their rigs: worker_rig.h. */
#include <stdlib.h>

#include "test.h"
#include "worker_rig.h"

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
	fg_worker_drain(&r.w, r.cfg, r.now);
	fg_worker_abort_executing(&r.w, r.cfg, r.now);
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
	fg_worker_abort_executing(&r.w, r.cfg, r.now);
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

TEST(backend_timeout_answers_and_frees_the_seat)
{
	struct rig r;
	rig_init(&r, 1, 10, 1);
	r.cfg->queue_wait_ns = 10000 * MS;
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

TEST(shutdown_answers_everything)
{
	struct rig r;
	rig_init(&r, 1, 10, 1);
	for (uint64_t id = 1; id <= 3; id++)
		send_request(&r, 0, id, "a", 1);
	step(&r);
	fg_worker_drain(&r.w, r.cfg, r.now);
	CHECK_EQ(r.w.stats.rejected[FG_REJECT_SHUTTING_DOWN], 2);
	send_request(&r, 1, 9, "b", 1);
	step(&r);
	CHECK_EQ(r.w.stats.rejected[FG_REJECT_SHUTTING_DOWN], 3);
	CHECK_EQ(r.w.stats.executing, 1);
	fg_worker_abort_executing(&r.w, r.cfg, r.now);
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
	fg_worker_drain(&r.w, r.cfg, r.now);
	fg_worker_abort_executing(&r.w, r.cfg, r.now);
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
	fg_worker_drain(&r.w, r.cfg, r.now);
	fg_worker_abort_executing(&r.w, r.cfg, r.now);
	rig_fini(&r);
}

/* Random arrivals, completions, time-outs and garbage on a virtual clock:
 * the accounting invariant holds after every step and every request gets
 * exactly one answer. */
TEST(randomized_exactly_once)
{
	struct rig r;
	rig_init(&r, 5, 20, 2);
	r.cfg->backend_timeout_ns = 300 * MS;
	r.cfg->queue_wait_ns = 200 * MS;
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
		fg_worker_poll(&a.w, a.cfg, a.now); /* the burst, staged */
		struct fg_pkt p;                  /* one by one, then the rest of a poll */
		for (unsigned k = 0; k < FG_RX_BURST && fake_rx(&b.io, &p, 1); k++)
			fg_worker_handle(&b.w, b.cfg, &p, b.now);
		unsigned later = b.io.rx_tail;    /* what the staged poll left for the next round */
		b.io.rx_tail = b.io.rx_head;
		fg_worker_poll(&b.w, b.cfg, b.now);
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
	/* A last burst longer than a poll's leaves datagrams for the next one:
	 * both take them before the counts are compared. */
	for (int x = 0; x < 2; x++)
		while (rigs[x]->io.rx_head != rigs[x]->io.rx_tail)
			fg_worker_poll(&rigs[x]->w, rigs[x]->cfg, rigs[x]->now);
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
	fg_worker_drain(&a.w, a.cfg, a.now);
	fg_worker_abort_executing(&a.w, a.cfg, a.now);
	fg_worker_drain(&b.w, b.cfg, b.now);
	fg_worker_abort_executing(&b.w, b.cfg, b.now);
	rig_fini(&a);
	rig_fini(&b);
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
	r.now += r.cfg->backend_timeout_ns + 1;
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
	r.now += r.cfg->backend_timeout_ns + 1;
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
	r.cfg->retry_after_ms = 0;
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
	fg_worker_drain(&r.w, r.cfg, r.now);
	fg_worker_abort_executing(&r.w, r.cfg, r.now);
	check_invariant(&r);
	rig_fini(&r);
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
