/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the per-worker seat allotment rounds (common/seats/seatshare.c). */
#include <stdbool.h>
#include <math.h>
#include <stdlib.h>

#include "seatshare.h"
#include "test.h"

/* Views of workers that applied their last grant and hold `used` seats. */
static void views(struct fg_seatshare_view *v, unsigned n, const uint32_t *used, const uint32_t *head,
		  const uint32_t *applied)
{
	for (unsigned w = 0; w < n; w++)
		v[w] = (struct fg_seatshare_view){ .used = used[w], .head = head[w], .grant = applied[w],
						   .reserved = applied[w] > used[w] ? applied[w] : used[w] };
}

/* The workers acknowledge the grants of the last round (nothing else
 * changes), then the allotter runs the next one. */
static void acknowledge_and_rerun(struct fg_seatshare_view *v, unsigned n, const uint32_t *used,
				  const uint32_t *head, uint32_t *applied, uint32_t limit, const uint32_t *demand,
				  uint32_t n_queues, double *credit)
{
	for (unsigned w = 0; w < n; w++)
		applied[w] = v[w].grant;
	views(v, n, used, head, applied);
	fg_seatshare_round(limit, n, demand, NULL, NULL, n_queues, v, credit);
}

/* Whatever the state, a round never lets the seats held or granted add up
 * past the limit (beyond what is already held after a decrease). */
TEST(grants_stay_within_the_limit)
{
	unsigned seed = 3;
	double credit[8] = { 0 };
	for (int round = 0; round < 20000; round++) {
		unsigned n = 2 + (unsigned)rand_r(&seed) % 7;
		uint32_t limit = 1 + (uint32_t)rand_r(&seed) % 40, used[8], head[8], applied[8], demand[64];
		uint64_t held = 0;
		for (unsigned w = 0; w < n; w++) {
			used[w] = (uint32_t)rand_r(&seed) % (limit / n + 2);
			applied[w] = (uint32_t)rand_r(&seed) % (limit / n + 2);
			head[w] = rand_r(&seed) % 3 ? 0 : 1 + (uint32_t)rand_r(&seed) % 4;
			held += used[w] > applied[w] ? used[w] : applied[w];
		}
		uint32_t nq = 1 + (uint32_t)rand_r(&seed) % 64;
		for (uint32_t q = 0; q < nq; q++)
			demand[q] = (uint32_t)rand_r(&seed) % 10;
		struct fg_seatshare_view v[8];
		views(v, n, used, head, applied);
		fg_seatshare_round(limit, n, demand, NULL, NULL, nq, v, credit);
		uint64_t after = 0;
		for (unsigned w = 0; w < n; w++) {
			after += v[w].grant > v[w].reserved ? v[w].grant : v[w].reserved;
			CHECK(credit[w] <= limit + 4 && credit[w] >= -(double)limit - 4);
		}
		if (after > (held > limit ? held : limit)) {
			fprintf(stderr, "  round %d: %" PRIu64 " seats for a limit of %u\n", round, after, limit);
			CHECK(0);
			break;
		}
	}
}

/* Narrow requests and steady demands: the grants do not move. */
/* The per-flow round: flow A waits at both workers (5 seats each), flow B at
 * worker 1 only (10): A and B get 5 each, A's split 2.5 / 2.5, so worker 0
 * is due 2.5 and worker 1 7.5 (a per-entry max-min would give B 3.33 and
 * worker 1 6.67); whole seats by turns, never above the limit. */
TEST(flows_not_queues_share_a_level_over_workers)
{
	/* Entry e is a queue at worker e % 2. */
	uint32_t demand[4] = { 5, 5, 0, 10 };
	uint64_t flow[4] = { 0xa, 0xa, 0, 0xb };
	double entry_share[4], credit[2] = { 0, 0 }, got[2] = { 0, 0 };
	uint32_t grant[2] = { 0, 0 };
	int rounds = 2000;
	for (int k = 0; k < rounds; k++) {
		/* Each worker uses what it was granted (it always has more waiting). */
		struct fg_seatshare_view v[2];
		for (unsigned w = 0; w < 2; w++)
			v[w] = (struct fg_seatshare_view){ .used = grant[w], .reserved = grant[w], .head = 1, .grant = grant[w] };
		fg_seatshare_round_flows(10, 2, demand, NULL, flow, 4, v, credit, entry_share);
		CHECK(v[0].grant + v[1].grant <= 10);
		for (unsigned w = 0; w < 2; w++)
			got[w] += grant[w] = v[w].grant;
	}
	CHECK(fabs(entry_share[0] - 2.5) < 1e-6 && fabs(entry_share[1] - 2.5) < 1e-6);
	CHECK(fabs(entry_share[3] - 5.0) < 1e-6 && entry_share[2] == 0);
	fprintf(stderr, "  average grants %.3f %.3f\n", got[0] / rounds, got[1] / rounds);
	CHECK(fabs(got[0] / rounds - 2.5) < 0.1);
	CHECK(fabs(got[1] / rounds - 7.5) < 0.1);
}

TEST(steady_narrow_demand_keeps_its_grants)
{
	uint32_t demand[8] = { 9, 9, 9, 9, 9, 9, 9, 9 }, used[3] = { 0 }, head[3] = { 1, 1, 1 }, applied[3] = { 0 };
	double credit[3] = { 0 };
	uint32_t first[3] = { 0 };
	for (int round = 0; round < 2000; round++) {
		struct fg_seatshare_view v[3];
		views(v, 3, used, head, applied);
		fg_seatshare_round(10, 3, demand, NULL, NULL, 8, v, credit);
		for (unsigned w = 0; w < 3; w++) {
			applied[w] = used[w] = v[w].grant; /* the workers fill what they get */
			if (round == 10)
				first[w] = v[w].grant;
			if (round > 10)
				CHECK_EQ(v[w].grant, first[w]);
		}
	}
	/* queues 0,3,6 / 1,4,7 / 2,5: 3.75, 3.75, 2.5 seats */
	CHECK_EQ(first[0] + first[1] + first[2], 10);
	CHECK(first[2] >= 2 && first[2] <= 3);
}

/* Two workers with a share of 3 seats each; one runs 1-seat requests, the
 * other 2-seat ones.  By rounding alone the second holds 2 seats for ever
 * (the third cannot fit a request); with credits the seats move in turn,
 * and over time both hold 3 on average. */
TEST(a_wide_head_gets_its_seats_in_turn)
{
	uint32_t demand[2] = { 13, 14 }, used[2] = { 3, 2 }, head[2] = { 1, 2 }, applied[2] = { 3, 3 };
	double credit[2] = { 0 }, seat_rounds[2] = { 0 };
	int rounds = 20000;
	for (int round = 0; round < rounds; round++) {
		struct fg_seatshare_view v[2];
		views(v, 2, used, head, applied);
		fg_seatshare_round(6, 2, demand, NULL, NULL, 2, v, credit);
		for (unsigned w = 0; w < 2; w++) {
			applied[w] = v[w].grant;
			/* Requests end now and then; a worker over its grant does not
			 * start another, one under it starts whole requests. */
			if (round % 50 == (int)w * 25 && used[w] >= head[w])
				used[w] -= head[w];
			while (used[w] + head[w] <= applied[w])
				used[w] += head[w];
			seat_rounds[w] += used[w];
		}
		CHECK(used[0] + used[1] <= 6);
	}
	double avg0 = seat_rounds[0] / rounds, avg1 = seat_rounds[1] / rounds;
	fprintf(stderr, "  average seats: narrow %.2f, wide %.2f\n", avg0, avg1);
	CHECK(avg1 > 2.5); /* rounding alone: 2.0 */
	CHECK(avg0 > 2.5);
}

/* 3 seats, shares 1.5 and 1.5: rounding gives the 2-seat worker 1 seat,
 * which its head cannot use.  That seat is lent to the 1-seat worker at
 * once, and once the wide worker's credit covers its head the seats it
 * lacks are gathered for it: it starts its 2-seat request. */
TEST(spare_seats_under_a_wide_head_are_lent_until_its_turn)
{
	uint32_t demand[2] = { 10, 2 }, used[2] = { 2, 0 }, head[2] = { 1, 2 }, applied[2] = { 2, 1 };
	double credit[2] = { 0 };
	int lent_at = -1, wide_started_at = -1;
	for (int round = 0; round < 400 && wide_started_at < 0; round++) {
		struct fg_seatshare_view v[2];
		views(v, 2, used, head, applied);
		fg_seatshare_round(3, 2, demand, NULL, NULL, 2, v, credit);
		CHECK(v[0].grant + v[1].grant <= 3);
		if (round == 0)
			CHECK_EQ(v[1].grant, 0); /* its one seat starts nothing: given up */
		for (unsigned w = 0; w < 2; w++)
			applied[w] = v[w].grant;
		if (used[0] > applied[0])
			used[0]--; /* a shrunk worker drains, a request per round */
		while (used[0] + head[0] <= applied[0])
			used[0] += head[0];
		if (used[0] == 3 && lent_at < 0)
			lent_at = round;
		if (used[1] + head[1] <= applied[1]) {
			used[1] += head[1];
			wide_started_at = round;
		}
		CHECK(used[0] + used[1] <= 3);
	}
	fprintf(stderr, "  lent at round %d, the wide head started at round %d\n", lent_at, wide_started_at);
	CHECK_EQ(lent_at, 1); /* granted once the lender acknowledged its shrink */
	CHECK(wide_started_at > lent_at);
}

/* Two workers each hold one idle seat under a blocked 2-seat head, and no
 * seat is free: by the targets alone both would wait for a request to end
 * (in the simulator, a whole request time with two seats idle).  In one
 * dispatch order the less owed gives its idle seat up, and the more owed
 * starts its head the next round. */
TEST(blocked_wide_heads_do_not_split_the_free_seats)
{
	uint32_t demand[2] = { 10, 10 }, used[2] = { 1, 1 }, head[2] = { 2, 2 }, applied[2] = { 2, 2 };
	double credit[2] = { 5, 3 };
	struct fg_seatshare_view v[2];
	views(v, 2, used, head, applied);
	fg_seatshare_round(4, 2, demand, NULL, NULL, 2, v, credit);
	CHECK_EQ(v[0].grant, 2); /* the most owed holds its seats */
	CHECK_EQ(v[1].grant, 1); /* the other gives up its idle one */
	acknowledge_and_rerun(v, 2, used, head, applied, 4, demand, 2, credit);
	CHECK_EQ(v[0].grant, 3); /* 1 running + its 2-seat head */
	CHECK(v[0].grant + (v[1].grant > used[1] ? v[1].grant : used[1]) <= 4);
}

/* A seat held idle under a blocked wide head goes to a more owed worker
 * whose narrow head it lets start, as in one queue set the first head in
 * order would take it. */
TEST(a_more_owed_narrow_head_runs_on_a_seat_a_blocked_wide_head_idles)
{
	uint32_t demand[2] = { 10, 10 }, used[2] = { 2, 0 }, head[2] = { 1, 2 }, applied[2] = { 2, 1 };
	double credit[2] = { 10, 3 };
	struct fg_seatshare_view v[2];
	views(v, 2, used, head, applied);
	fg_seatshare_round(3, 2, demand, NULL, NULL, 2, v, credit);
	CHECK_EQ(v[1].grant, 0);
	acknowledge_and_rerun(v, 2, used, head, applied, 3, demand, 2, credit);
	CHECK_EQ(v[0].grant, 3);
	CHECK_EQ(v[1].grant, 0);
}

/* A worker whose queues all execute (nothing waits) above its share keeps
 * its debt: clearing it whenever nothing waits made it look owed again at
 * its next arrival. */
TEST(a_busy_worker_keeps_its_debt)
{
	uint32_t demand[2] = { 3, 10 }, used[2] = { 3, 1 }, head[2] = { 0, 1 }, applied[2] = { 3, 1 };
	double credit[2] = { 0 };
	for (int round = 0; round < 64; round++) {
		struct fg_seatshare_view v[2];
		views(v, 2, used, head, applied);
		fg_seatshare_round(4, 2, demand, NULL, NULL, 2, v, credit); /* shares 2 and 2 */
	}
	fprintf(stderr, "  credits after 64 rounds: %.2f, %.2f\n", credit[0], credit[1]);
	CHECK(credit[0] < -0.9); /* 1 seat over its share for 64 rounds */
	CHECK(credit[1] > 0.9);
	uint32_t idle[2] = { 0, 1 }, none[2] = { 0, 1 };
	struct fg_seatshare_view v[2];
	views(v, 2, idle, none, applied);
	fg_seatshare_round(4, 2, demand, NULL, NULL, 2, v, credit);
	CHECK_EQ(credit[0], 0); /* idle: forgotten */
}

/* The dispatch order's one exception: an over-served worker behind a more
 * owed one does not take back the seat its target takes from it (its
 * 2-seat head would otherwise start on seats it holds at every request
 * end, for ever: 3 workers, 16% off); the seat goes by the order once
 * freed. */
TEST(an_over_served_worker_does_not_take_back_its_seats)
{
	/* queues 0 and 2 on worker 0, 1 and 3 on worker 1: shares 4/3 and 8/3,
	 * targets 1 and 3 */
	uint32_t demand[4] = { 2, 10, 0, 10 }, used[2] = { 0, 1 }, head[2] = { 2, 1 }, applied[2] = { 2, 2 };
	double credit[2] = { -50, 50 };
	struct fg_seatshare_view v[2];
	views(v, 2, used, head, applied);
	fg_seatshare_round(4, 2, demand, NULL, NULL, 4, v, credit);
	CHECK_EQ(v[0].grant, 1);
	CHECK_EQ(v[1].grant, 2);
}


/* Any state the allotter can see: credits anywhere within the bound
 * (negative, large, tied), pending workers (grant above applied and used,
 * reserved = max(applied, used, grant) as fg_board_allot counts it), used
 * above applied (draining), heads 1..4, MaxMin and UsageBased, up to 64
 * workers.  Pending grants are left alone and the sum of max(grant,
 * reserved) never passes max(limit, what is already held). */
TEST(grants_stay_within_the_limit_in_any_state)
{
	unsigned seed = 11;
	enum { MW = FG_SEATSHARE_MAX_WORKERS };
	for (int round = 0; round < 200000; round++) {
		unsigned n = 1 + (unsigned)rand_r(&seed) % (round % 10 ? 8 : MW);
		uint32_t limit = 1 + (uint32_t)rand_r(&seed) % 40, demand[256], before[MW];
		uint64_t key[256];
		double credit[MW];
		struct fg_seatshare_view v[MW];
		uint64_t held = 0;
		for (unsigned w = 0; w < n; w++) {
			uint32_t span = limit / n + 3;
			uint32_t used = (uint32_t)rand_r(&seed) % span, applied = (uint32_t)rand_r(&seed) % span;
			bool pending = rand_r(&seed) % 4 == 0;
			uint32_t grant = pending ? (uint32_t)rand_r(&seed) % (2 * span) : applied;
			uint32_t reserved = applied > used ? applied : used;
			if (pending && grant > reserved)
				reserved = grant;
			v[w] = (struct fg_seatshare_view){ .used = used, .reserved = reserved, .grant = grant,
							   .pending = pending,
							   .head = rand_r(&seed) % 3 ? 1 + (uint32_t)rand_r(&seed) % 4 : 0 };
			before[w] = grant;
			held += reserved;
			int k = rand_r(&seed) % 4;
			double b = FG_SEATSHARE_CREDIT_BOUND * limit;
			credit[w] = k == 0 ? 0 : k == 1 ? (double)(rand_r(&seed) % 9) - 4 :
				    k == 2 ? (rand_r(&seed) % 2 ? b : -b) : b * (2.0 * rand_r(&seed) / RAND_MAX - 1);
		}
		uint32_t nq = 1 + (uint32_t)rand_r(&seed) % 256;
		for (uint32_t q = 0; q < nq; q++) {
			demand[q] = (uint32_t)rand_r(&seed) % 10;
			key[q] = (uint64_t)(rand_r(&seed) % 5);
		}
		bool usage = rand_r(&seed) % 5 == 0;
		fg_seatshare_round(limit, n, demand, NULL, usage ? key : NULL, rand_r(&seed) % 20 ? nq : 0, v, credit);
		uint64_t after = 0;
		bool touched = false;
		for (unsigned w = 0; w < n; w++) {
			after += v[w].grant > v[w].reserved ? v[w].grant : v[w].reserved;
			touched |= v[w].pending && v[w].grant != before[w];
		}
		if (touched) {
			fprintf(stderr, "  round %d: a pending grant was changed\n", round);
			CHECK(0);
			break;
		}
		if (after > (held > limit ? held : limit)) {
			fprintf(stderr, "  round %d: %" PRIu64 " seats for a limit of %u (held %" PRIu64 ")\n", round,
				after, limit, held);
			CHECK(0);
			break;
		}
	}
}

/* The grant protocol over time, as the daemon runs it: the allotter reads
 * the shares (pending until acknowledged), workers acknowledge late or not
 * at all for a while, dispatch their head only within their applied
 * allotment, finish requests at random.  Executing plus reserved seats
 * never pass the limit: sum max(applied, used, pending grant) <= C. */
TEST(the_grant_protocol_stays_within_the_limit)
{
	unsigned seed = 5;
	for (int run = 0; run < 300; run++) {
		unsigned n = 2 + (unsigned)rand_r(&seed) % 6;
		uint32_t limit = 2 + (uint32_t)rand_r(&seed) % 14, nq = 2 * n, demand[16];
		uint32_t applied[8], used[8], grant[8], head[8];
		bool pending[8];
		double credit[8] = { 0 };
		for (unsigned w = 0; w < n; w++) {
			applied[w] = grant[w] = fg_seatshare_static(limit, n, w);
			used[w] = 0;
			pending[w] = false;
			head[w] = 1 + (uint32_t)rand_r(&seed) % 3;
		}
		for (int step = 0; step < 3000; step++) {
			for (uint32_t q = 0; q < nq; q++)
				demand[q] = head[q % n] ? (uint32_t)rand_r(&seed) % 6 + used[q % n] / 2 : used[q % n] / 2;
			struct fg_seatshare_view v[8];
			for (unsigned w = 0; w < n; w++) {
				uint32_t r = applied[w] > used[w] ? applied[w] : used[w];
				if (pending[w] && grant[w] > r)
					r = grant[w];
				v[w] = (struct fg_seatshare_view){ .used = used[w], .reserved = r, .head = head[w],
								   .grant = grant[w], .pending = pending[w] };
			}
			fg_seatshare_round(limit, n, demand, NULL, NULL, nq, v, credit);
			for (unsigned w = 0; w < n; w++)
				if (!v[w].pending && v[w].grant != applied[w]) {
					grant[w] = v[w].grant;
					pending[w] = true;
				}
			for (unsigned w = 0; w < n; w++) {
				int a = rand_r(&seed) % 4;
				if (pending[w] && a) { /* acknowledges (3 in 4) */
					applied[w] = grant[w];
					pending[w] = false;
				}
				while (head[w] && used[w] + head[w] <= applied[w]) { /* dispatches */
					used[w] += head[w];
					head[w] = rand_r(&seed) % 3 ? 1 + (uint32_t)rand_r(&seed) % 3 : 0;
				}
				if (used[w] && rand_r(&seed) % 3 == 0) /* a request ends */
					used[w] -= 1 + (uint32_t)rand_r(&seed) % used[w];
				if (!head[w] && rand_r(&seed) % 2)
					head[w] = 1 + (uint32_t)rand_r(&seed) % 3;
			}
			uint64_t sum = 0, run_seats = 0;
			for (unsigned w = 0; w < n; w++) {
				uint32_t r = applied[w] > used[w] ? applied[w] : used[w];
				if (pending[w] && grant[w] > r)
					r = grant[w];
				sum += r;
				run_seats += used[w];
			}
			if (sum > limit || run_seats > limit) {
				fprintf(stderr, "  run %d step %d: %" PRIu64 " reserved, %" PRIu64 " used, limit %u\n", run,
					step, sum, run_seats, limit);
				CHECK(0);
				run = 300;
				break;
			}
		}
	}
}

/* Behind a holder (the most owed blocked head, here 3 seats wide, waiting
 * for a draining worker), a blocked worker gives up its idle seat and does
 * not grow back to its target while the holder waits: the seat reaches the
 * holder.  (It grew back every other round before: the freed seat flapped
 * between the two and the holder saw it free only half the time.) */
TEST(a_worker_behind_the_holder_does_not_grow_back)
{
	/* queues 0, 1, 2 on workers 0, 1, 2: shares 2, 2, 2 */
	uint32_t demand[3] = { 10, 10, 4 }, used[3] = { 0, 0, 4 }, head[3] = { 2, 3, 0 }, applied[3] = { 1, 1, 4 };
	double credit[3] = { 5, 10, 0 };
	struct fg_seatshare_view v[3];
	views(v, 3, used, head, applied);
	fg_seatshare_round(6, 3, demand, NULL, NULL, 3, v, credit);
	CHECK_EQ(v[0].grant, 0); /* given up: worker 1 holds */
	for (int round = 1; round <= 6; round++) {
		acknowledge_and_rerun(v, 3, used, head, applied, 6, demand, 3, credit);
		CHECK_EQ(v[0].grant, 0);
		CHECK_EQ(v[1].grant, 2); /* its own seat and the one given up */
		CHECK(v[0].grant + v[1].grant + used[2] <= 6);
	}
}

/* A head wider than the level (it runs alone once its worker is empty, on
 * no seats of the others) never holds the order, however owed its worker:
 * the narrow head behind it starts on a free seat. */
TEST(a_head_wider_than_the_level_does_not_hold_the_order)
{
	uint32_t demand[2] = { 7, 5 }, used[2] = { 1, 1 }, head[2] = { 6, 1 }, applied[2] = { 1, 1 };
	double credit[2] = { 10, 5 };
	struct fg_seatshare_view v[2];
	views(v, 2, used, head, applied);
	fg_seatshare_round(4, 2, demand, NULL, NULL, 2, v, credit);
	CHECK_EQ(v[1].grant, 2);
}

/* A worker whose last grant is not acknowledged keeps its place in the
 * order (and its grant): the over-served worker behind it is not first,
 * so it does not take back the seat its target takes. */
TEST(a_pending_worker_keeps_its_place_in_the_order)
{
	/* queues 0 and 2 on worker 0, 1 on worker 1: shares 8/3 and 4/3, targets 3 and 1 */
	uint32_t demand[3] = { 10, 2, 10 }, used[2] = { 2, 0 }, head[2] = { 1, 2 }, applied[2] = { 2, 2 };
	double credit[2] = { 10, -5 };
	struct fg_seatshare_view v[2];
	views(v, 2, used, head, applied);
	v[0].pending = true; /* its grant of 2 is on its way */
	fg_seatshare_round(4, 2, demand, NULL, NULL, 3, v, credit);
	CHECK_EQ(v[0].grant, 2);
	CHECK_EQ(v[1].grant, 1);
}

/* Levels without queues (reject type) split evenly. */
TEST(no_queues_split_evenly)
{
	struct fg_seatshare_view v[3];
	uint32_t zero[3] = { 0 }, head[3] = { 0 };
	double credit[3] = { 0 };
	views(v, 3, zero, head, zero);
	fg_seatshare_round(10, 3, NULL, NULL, NULL, 0, v, credit);
	CHECK_EQ(v[0].grant, 4);
	CHECK_EQ(v[1].grant, 3);
	CHECK_EQ(v[2].grant, 3);
}

/* Weights: the split follows the weighted max-min of the queues' demands
 * (weights 1 and 3 over 8 seats, both asking 8: 2 and 6). */
TEST(weighted_split)
{
	struct fg_seatshare_view v[2];
	uint32_t zero[2] = { 0 }, head[2] = { 1, 1 }, demand[2] = { 8, 8 }, weight[2] = { 1000, 3000 };
	double credit[2] = { 0 };
	views(v, 2, zero, head, zero);
	fg_seatshare_round(8, 2, demand, weight, NULL, 2, v, credit);
	CHECK_EQ(v[0].grant, 2);
	CHECK_EQ(v[1].grant, 6);
}

/* UsageBased: demands are met in key order (queue 1's flow used less: all
 * it asks), equal keys share max-min what is left. */
TEST(usage_order_split)
{
	struct fg_seatshare_view v[3];
	uint32_t zero[3] = { 0 }, head[3] = { 1, 1, 1 }, demand[3] = { 4, 4, 0 };
	uint64_t key[3] = { 500, 100, 0 };
	double credit[3] = { 0 };
	views(v, 3, zero, head, zero);
	fg_seatshare_round(6, 3, demand, NULL, key, 3, v, credit);
	CHECK_EQ(v[0].grant, 2);
	CHECK_EQ(v[1].grant, 4);
	CHECK_EQ(v[2].grant, 0);
	uint32_t demand4[4] = { 5, 1, 5, 3 };
	uint64_t key4[4] = { 7, 7, 7, 1 }; /* queue 3 first (3 seats), then 7 left over 5, 1, 5: 3, 1, 3 */
	double credit2[2] = { 0 };
	struct fg_seatshare_view v2[2];
	views(v2, 2, zero, head, zero);
	fg_seatshare_round(10, 2, demand4, NULL, key4, 4, v2, credit2);
	CHECK_EQ(v2[0].grant, 6); /* queues 0 and 2: 3 + 3 */
	CHECK_EQ(v2[1].grant, 4); /* queues 1 and 3: 1 + 3 */
	/* 100 000 queues of one key (a level just turned UsageBased, nothing
	 * used yet): one max-min over the group, the seats split evenly. */
	enum { BIG = 100000 };
	static uint32_t big_demand[BIG];
	static uint64_t big_key[BIG];
	for (uint32_t q = 0; q < BIG; q++)
		big_demand[q] = 1 + q % 3;
	views(v2, 2, zero, head, zero);
	fg_seatshare_round(1000, 2, big_demand, NULL, big_key, BIG, v2, credit2);
	CHECK_EQ(v2[0].grant, 500);
	CHECK_EQ(v2[1].grant, 500);
}

TEST_MAIN
