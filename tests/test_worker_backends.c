/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of one worker's backends (dataplane/worker.c, backendpool.h):
 * the least outstanding one picked, capacities holding requests, none at all,
 * ejection and probing (its settings applied live), and backends changed
 * live: drained, disabled, added and removed under random load; a backend's
 * own REJECTs relayed without teaching its latency.  Rig:
 * worker_rig.h. */
#include "test.h"
#include "worker_rig.h"

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
	r.cfg->backends[0].seats = 2;
	r.cfg->generation = 2;
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
	fg_worker_drain(&r.w, r.cfg, r.now);
	fg_worker_abort_executing(&r.w, r.cfg, r.now);
	rejects = 0;
	collect_dispatched(&r, ids, 8, &rejects);
	CHECK_EQ(rejects, 3);
	CHECK_EQ(r.w.stats.rejected[FG_REJECT_SHUTTING_DOWN], 3);
	CHECK_EQ(r.w.reqs.in_use, 0);
	check_invariant(&r);
	rig_fini(&r);
}

/* A backend that refuses fast (its own REJECT) has not shown its latency:
 * the REJECT goes to the client, counted, but only a RESPONSE teaches the
 * learned latency the stall check and the adaptive limit use. */
TEST(backend_rejects_teach_no_latency)
{
	struct rig r;
	rig_init(&r, 4, 10, 1);
	for (uint64_t id = 1; id <= 2; id++)
		send_request(&r, (int)id, id, "a", 1);
	step(&r);
	uint64_t ids[4];
	CHECK_EQ(collect_dispatched(&r, ids, 4, NULL), 2);
	r.now += 1 * MS;
	reject_from(&r, 0, ids[0], FG_REJECT_CONCURRENCY_LIMIT);
	step(&r);
	unsigned rejects = 0;
	collect_dispatched(&r, ids + 2, 2, &rejects);
	CHECK_EQ(rejects, 1);
	CHECK_EQ(r.w.stats.rejected[FG_REJECT_CONCURRENCY_LIMIT], 1);
	CHECK_EQ(r.w.pool.b[0].latency_samples, 0);
	CHECK(r.w.pool.b[0].latency_ns == 0);
	r.now += 49 * MS;
	respond_from(&r, 0, ids[1], "ok");
	step(&r);
	CHECK_EQ(r.w.pool.b[0].latency_samples, 1);
	CHECK(r.w.pool.b[0].latency_ns == 50 * MS);
	CHECK_EQ(r.w.stats.responded, 1);
	CHECK_EQ(r.w.stats.executing, 0); /* (check_invariant assumes no backend REJECTs) */
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

TEST(least_outstanding_backend)
{
	struct rig r;
	rig_init(&r, 10, 10, 2);
	for (uint64_t id = 1; id <= 4; id++)
		send_request(&r, 0, id, "a", 1);
	step(&r);
	CHECK_EQ(r.w.pool.b[0].outstanding, 2);
	CHECK_EQ(r.w.pool.b[1].outstanding, 2);
	fg_worker_abort_executing(&r.w, r.cfg, r.now);
	rig_fini(&r);
}

TEST(dead_backend_is_ejected_and_probed_back)
{
	struct rig r;
	rig_init(&r, 10, 10, 2);
	r.cfg->backend_timeout_ns = 100 * MS;
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
	r.cfg->backend_timeout_ns = 100 * MS;
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

/* Ejection settings changed by a live apply govern the next timeouts. */
TEST(eject_settings_apply_live)
{
	struct rig r;
	rig_init(&r, 4, 10, 1); /* backendEjectAfter 3 */
	r.cfg->eject_after = 1;
	r.cfg->generation++;
	send_request(&r, 0, 1, "alice", 1);
	step(&r);
	r.now += r.cfg->backend_timeout_ns + 1;
	step(&r); /* one timeout now ejects the only backend */
	CHECK_EQ(r.w.stats.backend_ejections, 1);
	send_request(&r, 0, 2, "alice", 1);
	step(&r);
	CHECK_EQ(r.w.stats.rejected[FG_REJECT_NO_BACKEND], 1);
	check_invariant(&r);
	rig_fini(&r);
}

/* A new backends list (as the control thread publishes it: slots kept by
 * address, settings.h), followed at the worker's next poll. */
static void rig_set_backends(struct rig *r, const struct fg_backend_cfg *list, uint32_t n)
{
	static struct fg_config prev;
	prev = *r->cfg;
	r->cfg->n_backends = n;
	memcpy(r->cfg->backends, list, sizeof(list[0]) * n);
	fg_config_keep_backend_slots(r->cfg, &prev);
	r->cfg->generation++;
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
 * answered by it, and the level's limit follows the usable capacity (issue
 * 29: 2 backends without capacities, one drained: 8 seats -> 4) instead of
 * dispatching more than the backends left can take; with every backend
 * drained, new requests get no-backend; enabled again, the limit is back. */
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
	CHECK_EQ(pl_qs(&r.w)->cfg.concurrency_limit, 8);
	struct fg_backend_cfg list[2] = { r.cfg->backends[0], r.cfg->backends[1] };
	list[0].admin = FG_BACKEND_DRAIN;
	rig_set_backends(&r, list, 2);
	for (uint64_t id = 5; id <= 8; id++)
		send_request(&r, 1, id, "bob", 1);
	r.now += MS;
	step(&r);
	CHECK_EQ(r.w.stats.backends[0].admin, FG_BACKEND_DRAIN);
	CHECK_EQ(pl_qs(&r.w)->cfg.concurrency_limit, 4);
	CHECK_EQ(r.w.stats.capacity_usable, 1);
	CHECK_EQ(r.w.stats.capacity_total, 2);
	CHECK(!next_sent(&r, &m, &to)); /* the 4 seats are in use: bob waits */
	CHECK_EQ(r.w.stats.backends[0].outstanding, 2);
	/* The drained backend's answers are still taken; the seats they free
	 * go to backend 1. */
	respond_from(&r, 0, ids[0][0], "late");
	respond_from(&r, 0, ids[0][1], "late");
	r.now += MS;
	step(&r);
	CHECK_EQ(r.w.stats.responded, 2);
	CHECK_EQ(r.w.stats.backends[0].outstanding, 0);
	while (next_sent(&r, &m, &to))
		if (m.hdr.type == FG_MSG_REQUEST) {
			CHECK(fg_endpoint_same_addr(&to, &r.backend[1])); /* not to the drained one */
			ids[1][n_ids[1]++] = m.hdr.request_id;
		}
	CHECK_EQ(n_ids[1], 4);
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
	/* Enabled again: the limit is back, bob's last two and carol's next go. */
	list[0].admin = list[1].admin = FG_BACKEND_ENABLED;
	rig_set_backends(&r, list, 2);
	send_request(&r, 2, 10, "carol", 1);
	r.now += MS;
	step(&r);
	CHECK_EQ(pl_qs(&r.w)->cfg.concurrency_limit, 8);
	unsigned sent = 0;
	while (next_sent(&r, &m, &to)) {
		CHECK_EQ(m.hdr.type, FG_MSG_REQUEST);
		respond_from(&r, fg_endpoint_same_addr(&to, &r.backend[0]) ? 0 : 1, m.hdr.request_id, "ok");
		sent++;
	}
	CHECK_EQ(sent, 3);
	for (unsigned i = 0; i < n_ids[1]; i++)
		respond_from(&r, 1, ids[1][i], "ok");
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
	r.cfg->eject_after = 1;
	r.cfg->backend_timeout_ns = 100 * MS;
	r.cfg->generation++;
	send_request(&r, 0, 1, "alice", 1);
	send_request(&r, 0, 2, "alice", 1);
	step(&r);
	r.seen = r.io.n_sent; /* one to each backend */
	struct fg_backend_cfg list[2] = { r.cfg->backends[0], r.cfg->backends[1] };
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
	fg_worker_abort_executing(&r.w, r.cfg, r.now);
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
	r.cfg->backend_timeout_ns = 400 * MS;
	r.cfg->queue_wait_ns = 300 * MS;
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
				       r.cfg->backends[r.w.reqs.slots[slot].backend].admin == FG_BACKEND_REMOVED &&
				       r.w.config_generation == r.cfg->generation;
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

TEST_MAIN
