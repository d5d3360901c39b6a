/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of several workers sharing a mesh (dataplane/worker.c,
 * worker_board.c), driven step by step from one thread: requests stay at the
 * worker that received them and answers go back to it, the allotter
 * signalled, the seat limit under random load, reloads and borrowing, levels
 * with few queues, full answer rings, untrusted sources at every worker, and
 * per-flow shares over workers.  Rig: worker_rig.h. */
#include <stdlib.h>

#include "allotter.h"
#include "seatshare.h"
#include "test.h"
#include "worker_rig.h"

TEST(mesh_requests_stay_where_they_arrive_and_answers_come_back)
{
	struct mesh_rig r;
	mesh_init(&r, 2, 64);
	/* 40 flows, all received by worker 0: they wait and run there. */
	char user[16];
	for (uint64_t id = 1; id <= 40; id++) {
		snprintf(user, sizeof(user), "u%llu", (unsigned long long)id);
		mesh_send(&r, id, user, 1);
	}
	mesh_step(&r, 0);
	mesh_step(&r, 0);
	CHECK_EQ(r.w[0].stats.received, 40);
	CHECK_EQ(r.w[0].stats.dispatched, 32); /* its even share of the 64 seats, until the allotter moves them */
	fg_board_allot(r.cfgs[0]->board, NULL); /* worker 1 idle: its seats go back once it acknowledges */
	mesh_step(&r, 1);
	fg_board_allot(r.cfgs[0]->board, NULL);
	mesh_step(&r, 0);
	CHECK_EQ(r.w[0].stats.dispatched, 40);
	CHECK_EQ(r.w[1].stats.received + r.w[1].stats.dispatched, 0);
	/* Every answer arrives at worker 1 and goes back to worker 0. */
	struct fg_msg m;
	while (r.seen < r.io.n_sent) {
		struct fake_sent *s = &r.io.sent[r.seen++];
		CHECK(fg_proto_decode(s->data, s->len, &m) == FG_PROTO_OK);
		CHECK_EQ(m.hdr.type, FG_MSG_REQUEST);
		CHECK_EQ(fg_dispatch_id_worker(m.hdr.request_id), 0);
		mesh_respond(&r, fg_endpoint_same_addr(&s->to, &r.backend[0]) ? 0 : 1, m.hdr.request_id);
	}
	mesh_step(&r, 1);
	mesh_step(&r, 1);
	CHECK_EQ(r.w[1].stats.answers_forwarded, 40);
	mesh_step(&r, 0);
	mesh_step(&r, 0); /* a ring burst per poll */
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
	/* Buffers of a pool per lane (socket mode) never leave their worker:
	 * an answer for another worker is dropped where it arrived. */
	struct fg_io_ops per_lane = fake_ops;
	per_lane.pool_per_lane = true;
	r.w[0].io.ops = &per_lane;
	fake_inject(&r.io, buf, (size_t)n, r.backend[0]);
	long in_use = r.io.in_use;
	mesh_step(&r, 0);
	CHECK_EQ(r.w[0].stats.answers_forwarded, 1);
	CHECK_EQ(r.w[0].stats.responses_unmatched, 1);
	CHECK_EQ(r.io.in_use, in_use - 1);
	r.w[0].io.ops = &fake_ops;
	mesh_fini(&r);
}

/* Whether a worker's level has a head that does not fit its allotment. */
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

/* Nothing contended: a round spreads the free seats as headroom (an
 * arrival at either worker starts at once), and the next periodic round
 * waits FG_ALLOT_RELAXED_PERIODS periods; a contended level, a moved limit
 * or a signal bring the rounds back at once. */
TEST(mesh_rounds_relax_while_nothing_is_contended)
{
	struct mesh_rig r;
	mesh_init(&r, 2, 8);
	struct fg_config *c = r.cfgs[0];
	struct fg_board *b = c->board;
	struct fg_level_board *lb = &b->levels[fg_fc_level_index(c->fc, "pl")];
	struct fg_allotter a = { .next_round_ns = 0 };
	uint64_t period = c->allotment_period_ns = MS;
	mesh_send(&r, 1, "u1", 1); /* client 1 % 4: worker 1 */
	mesh_step(&r, 1);
	CHECK(fg_allotter_step(&a, c, true, r.now));
	CHECK_EQ(a.next_round_ns, r.now + period * FG_ALLOT_RELAXED_PERIODS);
	mesh_step(&r, 0);
	mesh_step(&r, 1);
	fg_board_allot(b, NULL); /* the seats worker 0 gave back go to worker 1 */
	mesh_step(&r, 0);
	mesh_step(&r, 1);
	/* 1 seat in use of 8: 7 spare, 3 each and the odd one to the busier. */
	CHECK_EQ(lb->shares[0].applied, 3);
	CHECK_EQ(lb->shares[1].applied, 5);
	CHECK(!fg_allotter_step(&a, c, true, r.now + period)); /* relaxed */
	/* Borrowing moves the limit: at once. */
	__atomic_store_n(&lb->limit, 6, __ATOMIC_RELAXED);
	CHECK(fg_allotter_step(&a, c, true, r.now + period));
	CHECK(!fg_allotter_step(&a, c, true, r.now + 2 * period));
	/* Eight arrivals at worker 0: the level is contended, periods again. */
	char user[16];
	for (uint64_t id = 4; id <= 32; id += 4) {
		snprintf(user, sizeof(user), "v%llu", (unsigned long long)id);
		mesh_send(&r, id, user, 1); /* client 0: worker 0 */
	}
	mesh_step(&r, 0);
	mesh_step(&r, 0);
	CHECK(fg_allotter_step(&a, c, true, r.now + 2 * period)); /* worker 0's head did not fit: its signal */
	CHECK_EQ(a.next_round_ns, r.now + 3 * period);
	mesh_fini(&r);
}

/* The end of a random run: every worker follows the newest configuration,
 * the backends answer all that executes (executing[0..*n_exec), 8192 at
 * most) and allotment rounds run until nothing waits or holds a seat, for
 * 2000 rounds at most.  Returns the rejects over all workers. */
static uint64_t mesh_drain(struct mesh_rig *r, uint64_t *executing, uint8_t *exec_backend, unsigned *n_exec)
{
	for (unsigned i = 0; i < r->n; i++)
		r->follows[i] = r->n_cfgs - 1;
	for (int round = 0; round < 2000 && (*n_exec || mesh_seats_in_use(r) || mesh_waiting(r)); round++) {
		while (*n_exec) {
			(*n_exec)--;
			mesh_respond(r, exec_backend[*n_exec], executing[*n_exec]);
		}
		for (unsigned i = 0; i < r->n; i++)
			mesh_step(r, i);
		fg_board_allot(r->cfgs[r->n_cfgs - 1]->board, NULL);
		r->now += MS;
		mesh_collect(r, executing, exec_backend, n_exec, 8192);
	}
	uint64_t rejected = 0;
	for (int k = 0; k < FG_REJECT__COUNT; k++)
		for (unsigned i = 0; i < r->n; i++)
			rejected += r->w[i].stats.rejected[k];
	return rejected;
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
	printf("  seat-limit run: %llu rounds, %llu grants, %u configurations, peak %llu seats, %llu answers forwarded\n",
	       (unsigned long long)allotter.stats.rounds, (unsigned long long)allotter.stats.grants, r.n_cfgs,
	       (unsigned long long)max_seen, (unsigned long long)MESH_SUM(&r, answers_forwarded));
	CHECK_EQ(violations, 0);
	CHECK(allotter.stats.grants > 100); /* the allotter really moved seats */
	CHECK(max_seen >= 6);           /* and the workers used them */
	/* Drain: answer everything; nothing is lost. */
	uint64_t rejected = mesh_drain(&r, executing, exec_backend, &n_exec);
	CHECK_EQ(MESH_SUM(&r, received), next_id - 1);
	CHECK_EQ(MESH_SUM(&r, responded) + rejected, next_id - 1);
	CHECK_EQ(mesh_seats_in_use(&r), 0);
	for (unsigned i = 0; i < r.n; i++)
		check_apf(&r.w[i]);
	mesh_fini(&r);
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
			struct fg_config *c = mesh_config_fc(&r, 8, one_level_queues(8, 200, queues));
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

/* A full answer ring: an answer that cannot be passed to its request's
 * worker is dropped and its request answered backend-timeout later: every
 * request exactly once. */
TEST(mesh_full_answer_rings_still_answer_everything)
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
		mesh_step(&r, 0); /* worker 0 receives and dispatches them all */
	uint64_t ids[N];
	uint8_t backends[N];
	unsigned n_ids = 0;
	mesh_collect(&r, ids, backends, &n_ids, N);
	/* Every answer arrives at worker 1 at once, which does not let worker
	 * 0 poll: the ring to worker 0 overflows. */
	for (unsigned i = 0; i < n_ids; i++)
		mesh_respond(&r, backends[i], ids[i]);
	while (r.io.rx_head != r.io.rx_tail)
		mesh_step(&r, 1);
	CHECK(r.w[1].stats.handoff_refused > 0);
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

/* Untrusted sources under several workers: every worker that receives them
 * assigns the same identity (not bytes of the packet). */
TEST(mesh_untrusted_sources_get_their_assigned_identity_at_every_worker)
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
		mesh_step(&r, (unsigned)round); /* worker 0 receives the first ten, worker 1 the others */
		mesh_step(&r, (unsigned)!round);
		mesh_step(&r, (unsigned)round);
	}
	CHECK_EQ(r.w[0].stats.untrusted_requests, 10);
	CHECK_EQ(r.w[1].stats.untrusted_requests, 10);
	/* Each worker's flows are all schema "all" by user system:anonymous:
	 * the assigned identity, not bytes of a packet. */
	unsigned owners = 0, flows = 0, other = 0;
	for (unsigned w = 0; w < 2; w++) {
		owners++;
		for (uint32_t i = 0; i < FG_FLOW_TABLE_SIZE; i++) {
			struct fg_flow_snapshot f;
			if (!fg_stats_flow_read(&r.w[w].stats, i, &f) || strncmp(f.name, "all/", 4))
				continue;
			flows++;
			other += strcmp(f.name, "all/" FG_ANONYMOUS_USER) != 0;
		}
	}
	CHECK_EQ(owners, 2);
	CHECK(flows >= 2);
	CHECK_EQ(other, 0);
	uint64_t ids[64];
	uint8_t backends[64];
	unsigned n_ids = 0, answered = 0;
	for (int k = 0; k < 40 && MESH_SUM(&r, responded) < 20; k++) { /* each holds half the seats */
		mesh_collect(&r, ids, backends, &n_ids, 64);
		for (; answered < n_ids; answered++)
			mesh_respond(&r, backends[answered], ids[answered]);
		mesh_step(&r, 0);
		mesh_step(&r, 1);
	}
	CHECK_EQ(MESH_SUM(&r, responded), 20);
	mesh_fini(&r);
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
			fg_board_allot(cfg->board, NULL);
			if (phase == 1 && !pending)
				phase = 2;
		} else { /* a borrowing round moves the limit (2..20 seats), then allots */
			limit = 2 + (uint32_t)rand_r(&rng) % 19;
			bound = limit > bound ? limit : bound;
			fg_config_set_level_limit(cfg, k, limit);
			fg_board_allot(cfg->board, NULL);
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
	uint64_t rejected = mesh_drain(&r, executing, exec_backend, &n_exec);
	CHECK_EQ(MESH_SUM(&r, responded) + rejected, next_id - 1);
	CHECK_EQ(mesh_seats_in_use(&r), 0);
	mesh_fini(&r);
}

TEST_MAIN

/* Several workers and the backends' usable capacity (issue 29): the
 * allotter splits the level's limit scaled by what the workers' pools can
 * take; the workers do not scale their grants themselves (they would hold
 * less than the allotter counts on and block heads the grant covers), and
 * their width checks follow the scaled level. */
TEST(mesh_allotter_scales_the_level_by_usable_capacity)
{
	struct mesh_rig r;
	mesh_init(&r, 2, 8);
	struct fg_board *b = r.cfgs[0]->board;
	uint32_t pl = 0;
	while (pl < b->n_levels && (b->levels[pl].exempt || b->levels[pl].n_queues != 64))
		pl++; /* the test level: the one with 64 queues */
	CHECK(pl < b->n_levels);
	/* Backend 1 drained at every worker (what following the generation
	 * that drains it does to each pool). */
	for (unsigned i = 0; i < r.n; i++)
		fg_backendpool_follow(&r.w[i].pool, 1, r.w[i].pool.b[1].ip, r.w[i].pool.b[1].port, FG_BACKEND_DRAIN);
	for (unsigned i = 0; i < r.n; i++)
		mesh_step(&r, i);
	CHECK_EQ(b->capacity[0].usable, 1);
	CHECK_EQ(b->capacity[0].total, 2);
	CHECK(fg_board_limit_moved(b)); /* a round at once */
	fg_board_allot(b, NULL);
	CHECK_EQ(b->levels[pl].limit_in_force, 4);
	for (unsigned i = 0; i < r.n; i++)
		mesh_step(&r, i);
	fg_board_allot(b, NULL);
	for (unsigned i = 0; i < r.n; i++)
		mesh_step(&r, i);
	uint32_t granted = 0;
	for (unsigned i = 0; i < r.n; i++) {
		const struct fg_queueset *qs = pl_qs(&r.w[i]);
		CHECK_EQ(qs->capacity_total, 0); /* not scaled at the worker */
		CHECK_EQ(qs->level_limit, 4);
		CHECK_EQ(qs->cfg.concurrency_limit, qs->given_limit);
		granted += qs->cfg.concurrency_limit;
	}
	CHECK(granted <= 4);
	/* A 3-seat request at worker 0 runs: its grant is what it can use. */
	mesh_send(&r, 1, "wide", 3);
	for (int k = 0; k < 4; k++) {
		fg_board_allot(b, NULL);
		mesh_step(&r, 0);
		mesh_step(&r, 1);
	}
	CHECK_EQ(MESH_SUM(&r, dispatched), 1);
	CHECK(mesh_seats_in_use(&r) <= 4);
	/* Enabled again: the level is whole. */
	for (unsigned i = 0; i < r.n; i++)
		fg_backendpool_follow(&r.w[i].pool, 1, r.w[i].pool.b[1].ip, r.w[i].pool.b[1].port, FG_BACKEND_ENABLED);
	for (unsigned i = 0; i < r.n; i++)
		mesh_step(&r, i);
	fg_board_allot(b, NULL);
	CHECK_EQ(b->levels[pl].limit_in_force, 8);
	uint64_t ids[8];
	uint8_t backends[8];
	unsigned n = 0;
	mesh_collect(&r, ids, backends, &n, 8);
	for (unsigned i = 0; i < n; i++)
		mesh_respond(&r, backends[i], ids[i]);
	for (int k = 0; k < 3; k++)
		for (unsigned i = 0; i < r.n; i++)
			mesh_step(&r, i);
	CHECK_EQ(MESH_SUM(&r, responded), 1);
	mesh_fini(&r);
}
