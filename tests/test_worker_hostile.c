/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of one worker (dataplane/worker.c) against hostile input
 * (security.md): malformed datagrams, forged and stale answers, requests
 * at a backend-side port, greedy
 * widths on every level type, untrusted sources and their cookies, dispatch
 * ids that cannot be guessed and late answers that reach nobody.  Rig:
 * worker_rig.h. */
#include "test.h"
#include "worker_rig.h"

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

/* A request sent to a backend-side port (pkt.backend_side: where only
 * answers belong) is dropped and counted; the same request on the client
 * port is served. */
TEST(requests_at_the_backend_side_are_dropped)
{
	struct rig r;
	rig_init(&r, 4, 10, 2);
	send_request(&r, 0, 1, "a", 1);
	r.io.rxq[(r.io.rx_tail - 1) % FAKE_BUFS].backend_side = 1;
	step(&r);
	CHECK_EQ(r.w.stats.rx_unexpected, 1);
	CHECK_EQ(r.w.stats.received, 0);
	struct fg_msg m;
	struct fg_endpoint to;
	CHECK(!next_sent(&r, &m, &to));
	send_request(&r, 0, 2, "a", 1);
	step(&r);
	CHECK_EQ(r.w.stats.received, 1);
	CHECK(next_sent(&r, &m, &to));
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
	int k = fg_fc_level_index(r.cfg->fc, "pl");
	r.cfg->fc->levels[k].max_seats = 6; /* maxSeats of a 40-seat level with hand 1 */
	r.cfg->generation++;
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
	r.now += r.cfg->max_extra_latency_ns + 2 * (1ull << FG_WHEEL_TICK_SHIFT);
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
	r.cfg->fc->levels[k].limit = 4;
	fg_config_set_level_limit(r.cfg, (uint32_t)k, 4); /* the level's current limit: what the worker follows */
	r.cfg->generation++;
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
	r.now += r.cfg->backend_timeout_ns + 1;
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
	struct fg_fc_set *set = fg_fc_set_bootstrap();
	struct fg_errors e = { .len = 0 };
	rig_set_fc(&r, fg_fc_compile(set, 600, &e));
	fg_fc_set_free(set);
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
		r.now += r.cfg->max_extra_latency_ns + 2 * (1ull << FG_WHEEL_TICK_SHIFT);
		step(&r);
		CHECK_EQ(qs->seats_in_use, 0);  /* ... for maxExtraLatency at most */
	}
	check_invariant(&r);
	rig_fini(&r);
}

TEST_MAIN
