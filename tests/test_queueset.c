/* SPDX-License-Identifier: Apache-2.0 */
/* Exact-behaviour unit tests of the queue set (common/fq/queueset.c). */
#include <errno.h>
#include <string.h>

#include <stdlib.h>

#include "queueset.h"
#include "test.h"

#define SEC 1000000000ull

/* Queues = 64, hand 1, so flow hash h lands in queue h % 64. */
/* Arrive and start: at once when nothing waits, else by the next dispatch. */
static int starts(struct fg_queueset *qs, struct fg_qs_req *r, uint64_t hash, uint16_t seats, uint16_t fin,
		  uint64_t extra, uint64_t now)
{
	enum fg_qs_verdict v = fg_qs_arrive(qs, r, hash, seats, fin, extra, now);
	if (v == FG_QS_EXECUTE)
		return 1;
	return v == FG_QS_QUEUED && fg_qs_dispatch_next(qs, now) == r;
}

static void init(struct fg_queueset *qs, uint32_t cl, uint32_t qll, uint64_t guess)
{
	struct fg_qs_config c = { .mode = FG_QS_QUEUE, .queues = 64, .hand_size = 1, .queue_length_limit = qll,
				  .concurrency_limit = cl, .initial_guess_ns = guess, .fixed_guess = true, .seed = 7 };
	CHECK_EQ(fg_qs_init(qs, &c, 0), 0);
}

TEST(wide_head_blocks_until_seats_free)
{
	/* Kubernetes TestFindDispatchQueueLocked: C = 50, 26 seats in use, heads
	 * of widths 25 (smallest finish) and 10: nothing dispatches until 25 are
	 * in use; the narrow head never bypasses the wide one. */
	struct fg_queueset qs;
	init(&qs, 50, 10, SEC);
	struct fg_qs_req a, b, wide, narrow;
	CHECK(starts(&qs, &a, 1, 25, 0, 0, 0));
	CHECK(starts(&qs, &b, 1, 1, 0, 0, 0));
	CHECK_EQ(qs.seats_in_use, 26);
	CHECK_EQ(fg_qs_arrive(&qs, &wide, 2, 25, 0, 0, 0), FG_QS_QUEUED);   /* F = 0 + 25 */
	CHECK_EQ(fg_qs_arrive(&qs, &narrow, 1, 10, 0, 0, 0), FG_QS_QUEUED); /* F = 26 + 10 */
	CHECK(fg_qs_dispatch_next(&qs, 0) == NULL);
	CHECK_EQ(qs.stats.blocked_by_width, 1);
	fg_qs_finish(&qs, &b, SEC); /* 25 in use now */
	CHECK(fg_qs_dispatch_next(&qs, SEC) == &wide);
	CHECK(fg_qs_dispatch_next(&qs, SEC) == NULL); /* 50 in use: the narrow one waits */
	fg_qs_fini(&qs);
}

/* A 2-seat head blocked behind one narrow request on a level of 2 seats;
 * the narrow one ends at `block_ns`.  The wide queue's F_prev after the
 * wide head is dispatched (optionally with the limit moved meanwhile). */
static uint64_t wide_f_prev_after_block(uint64_t block_ns, bool limit_moved)
{
	struct fg_queueset qs;
	init(&qs, 2, 10, SEC);
	struct fg_qs_req narrow, wide;
	CHECK(starts(&qs, &narrow, 1, 1, 0, 0, 0));
	CHECK_EQ(fg_qs_arrive(&qs, &wide, 2, 2, 0, 0, 0), FG_QS_QUEUED);
	CHECK(fg_qs_dispatch_next(&qs, 0) == NULL); /* one seat idles for it from now */
	if (limit_moved) {
		fg_qs_set_limit(&qs, 1, 0);
		fg_qs_set_limit(&qs, 2, 0);
	}
	fg_qs_finish(&qs, &narrow, block_ns);
	CHECK(fg_qs_dispatch_next(&qs, block_ns) == &wide);
	uint64_t f = qs.queues[2].f_prev;
	fg_qs_fini(&qs);
	return f;
}

TEST(blocked_head_is_credited_the_seats_idled_for_it)
{
	/* One seat idled for 1 s: its queue's F_prev is 1 seat-s lower than
	 * without the credit (a moved limit drops it: the allotter then decides). */
	CHECK_EQ(wide_f_prev_after_block(SEC, true) - wide_f_prev_after_block(SEC, false), SEC);
	/* 3 seat-s idled: at most the head's own cost (2 seats x 1 s). */
	CHECK_EQ(wide_f_prev_after_block(3 * SEC, true) - wide_f_prev_after_block(3 * SEC, false), 2 * SEC);
}

TEST(too_wide_runs_alone)
{
	struct fg_queueset qs;
	init(&qs, 6, 10, SEC);
	struct fg_qs_req small, wide;
		CHECK(starts(&qs, &small, 1, 1, 0, 0, 0));
	fg_qs_arrive(&qs, &wide, 2, 7, 0, 0, 0);
	CHECK(fg_qs_dispatch_next(&qs, 0) == NULL);
	fg_qs_finish(&qs, &small, SEC);
	CHECK(fg_qs_dispatch_next(&qs, SEC) == &wide);
	CHECK_EQ(qs.seats_in_use, 7);
	fg_qs_fini(&qs);
}

/* Virtual time follows the dispatches that happen (issue 29): with both
 * seats stuck (a paused backend), R stops at the first waiting finish
 * instead of running on for 100 s, so a newcomer waits for at most one of
 * the backlogged flow's requests, not for all of them. */
TEST(virtual_time_stops_at_the_first_waiting_finish)
{
	struct fg_queueset qs;
	init(&qs, 2, 50, SEC);
	struct fg_qs_req a[12], b;
	CHECK(starts(&qs, &a[0], 1, 1, 0, 0, 0));
	CHECK(starts(&qs, &a[1], 1, 1, 0, 0, 0));
	for (int i = 2; i < 12; i++)
		CHECK_EQ(fg_qs_arrive(&qs, &a[i], 1, 1, 0, 0, 0), FG_QS_QUEUED);
	uint64_t first_finish = fg_order_key(&qs.order, fg_order_first(&qs.order));
	CHECK_EQ(fg_qs_arrive(&qs, &b, 2, 1, 0, 0, 100 * SEC), FG_QS_QUEUED); /* 100 s later, nothing answered */
	CHECK((int64_t)(qs.r - first_finish) <= 0);
	/* The stuck seats come back: b goes within the next two dispatches. */
	fg_qs_finish(&qs, &a[0], 101 * SEC);
	fg_qs_finish(&qs, &a[1], 101 * SEC);
	struct fg_qs_req *d1 = fg_qs_dispatch_next(&qs, 101 * SEC), *d2 = fg_qs_dispatch_next(&qs, 101 * SEC);
	CHECK(d1 == &b || d2 == &b);
	fg_qs_fini(&qs);
}

/* The backends' usable capacity scales the limits (issue 29): rounded up,
 * at least 1, above what was given only past the start of an adaptive
 * limit, and never above the size of the set's trees; a new limit set meanwhile is
 * scaled too; a shrink dispatches nothing new until the seats are below
 * it; all capacity back: the given limits again. */
TEST(capacity_scales_the_limits)
{
	struct fg_queueset qs;
	init(&qs, 10, 10, SEC);
	struct fg_qs_req r[12];
	for (int i = 0; i < 8; i++)
		CHECK(starts(&qs, &r[i], (uint64_t)i, 1, 0, 0, 0));
	fg_qs_set_capacity(&qs, 1, 3, 0); /* ceil(10 / 3) = 4 */
	CHECK_EQ(qs.cfg.concurrency_limit, 4);
	CHECK_EQ(qs.level_limit, 4);
	CHECK_EQ(fg_qs_arrive(&qs, &r[8], 8, 1, 0, 0, 0), FG_QS_QUEUED);
	for (int i = 0; i < 4; i++)
		fg_qs_finish(&qs, &r[i], SEC);
	CHECK(fg_qs_dispatch_next(&qs, SEC) == NULL); /* 4 in use: still at the limit */
	fg_qs_finish(&qs, &r[4], SEC);
	CHECK(fg_qs_dispatch_next(&qs, SEC) == &r[8]);
	fg_qs_set_limit(&qs, 7, SEC); /* a new allotment: ceil(7 / 3) = 3 */
	CHECK_EQ(qs.cfg.concurrency_limit, 3);
	fg_qs_set_capacity(&qs, 0, 3, SEC); /* nothing usable: 1 seat, for a probe */
	CHECK_EQ(qs.cfg.concurrency_limit, 1);
	fg_qs_set_capacity(&qs, 4, 3, SEC); /* an adaptive limit past its start: ceil(7 x 4 / 3) = 10 */
	CHECK_EQ(qs.cfg.concurrency_limit, 10);
	CHECK_EQ(qs.level_limit, 10);
	fg_qs_set_capacity(&qs, 5, 3, SEC); /* 12 and 17: no more than the trees were sized for */
	CHECK_EQ(qs.cfg.concurrency_limit, 10);
	CHECK_EQ(qs.level_limit, 10);
	fg_qs_set_capacity(&qs, 3, 3, SEC);
	CHECK_EQ(qs.cfg.concurrency_limit, 7);
	fg_qs_set_limit(&qs, 0, SEC); /* 0 stays 0 */
	fg_qs_set_capacity(&qs, 1, 2, SEC);
	CHECK_EQ(qs.cfg.concurrency_limit, 0);
	fg_qs_fini(&qs);
	/* Exempt sets are not scaled. */
	struct fg_qs_config c = { .mode = FG_QS_EXEMPT, .concurrency_limit = 5 };
	CHECK_EQ(fg_qs_init(&qs, &c, 0), 0);
	fg_qs_set_capacity(&qs, 1, 5, 0);
	CHECK_EQ(qs.cfg.concurrency_limit, 5);
	fg_qs_fini(&qs);
}

/* Cluster mode: a member's limit is its share of a cluster-wide limit
 * (wide_limit); a request is too wide only against the cluster-wide limit,
 * so at a share of 0 nothing runs, and a request wider than the share but
 * not than the cluster waits for the share to grow. */
TEST(cluster_share_is_not_a_width_limit)
{
	struct fg_queueset qs;
	struct fg_qs_config c = { .mode = FG_QS_QUEUE, .queues = 64, .hand_size = 1, .queue_length_limit = 10,
				  .concurrency_limit = 0, .capacity = 12, .wide_limit = 12, .initial_guess_ns = SEC,
				  .fixed_guess = true, .seed = 7 };
	CHECK_EQ(fg_qs_init(&qs, &c, 0), 0);
	fg_qs_set_level_limit(&qs, 0);
	struct fg_qs_req one, three;
	CHECK_EQ(fg_qs_arrive(&qs, &one, 1, 1, 0, 0, 0), FG_QS_QUEUED);
	CHECK(fg_qs_dispatch_next(&qs, 0) == NULL); /* without wide_limit it would run alone */
	CHECK_EQ(qs.seats_in_use, 0);
	fg_qs_set_level_limit(&qs, 2);
	fg_qs_set_limit(&qs, 2, SEC);
	CHECK(fg_qs_dispatch_next(&qs, SEC) == &one);
	CHECK_EQ(fg_qs_arrive(&qs, &three, 2, 3, 3, 0, SEC), FG_QS_QUEUED);
	CHECK_EQ(three.final_seats, 3); /* capped by the cluster-wide limit, not the share */
	fg_qs_finish(&qs, &one, 2 * SEC);
	CHECK(fg_qs_dispatch_next(&qs, 2 * SEC) == NULL); /* 3 > the share of 2: it waits */
	fg_qs_set_level_limit(&qs, 3);
	fg_qs_set_limit(&qs, 3, 2 * SEC);
	CHECK(fg_qs_dispatch_next(&qs, 2 * SEC) == &three);
	CHECK_EQ(qs.seats_in_use, 3);
	fg_qs_fini(&qs);
}

TEST(cancel_and_time_out_remove_in_place)
{
	/* Kubernetes TestContextCancel: C = 1, one executing, one queued behind it
	 * and removed; the queue set is consistent afterwards. */
	struct fg_queueset qs;
	init(&qs, 1, 10, SEC);
	struct fg_qs_req run, a, b, c;
		CHECK(starts(&qs, &run, 5, 1, 0, 0, 0));
	fg_qs_arrive(&qs, &a, 5, 1, 0, 0, 0);
	fg_qs_arrive(&qs, &b, 5, 1, 0, 0, 0);
	fg_qs_arrive(&qs, &c, 5, 1, 0, 0, 0);
	fg_qs_remove_waiting(&qs, &b, SEC);       /* from the middle */
	fg_qs_remove_waiting(&qs, &a, SEC);       /* the head: the queue is re-keyed */
	CHECK_EQ(qs.n_waiting, 1);
	CHECK_EQ(qs.queues[5].n_waiting, 1);
	CHECK(qs.queues[5].head == &c && qs.queues[5].tail == &c);
	CHECK_EQ(qs.stats.removed, 2);
	CHECK_EQ(a.state, FG_QS_IDLE);
	fg_qs_finish(&qs, &run, SEC);
	CHECK(fg_qs_dispatch_next(&qs, SEC) == &c);
	fg_qs_fini(&qs);
}

TEST(request_work_arithmetic)
{
	/* Kubernetes TestRequestWork: G = 2s, {3 initial, 50 final, 70s}:
	 * cost = 3*2s + 50*70s. */
	struct fg_queueset qs;
	init(&qs, 100, 10, 2 * SEC);
	struct fg_qs_req busy, r;
	fg_qs_arrive(&qs, &busy, 9, 100, 0, 0, 0);
	fg_qs_dispatch_next(&qs, 0);
	fg_qs_arrive(&qs, &r, 1, 3, 50, 70 * SEC, 0);
	CHECK(fg_qs_req_cost(&r) == 3 * 2 * SEC + 50 * 70 * SEC);
	CHECK_EQ(r.seats, 50);
	fg_qs_fini(&qs);
}

TEST(queue_full_only_when_no_seat_is_free)
{
	struct fg_queueset qs;
	init(&qs, 1, 2, SEC);
	struct fg_qs_req r[5];
	CHECK(starts(&qs, &r[0], 3, 1, 0, 0, 0));
	CHECK_EQ(fg_qs_arrive(&qs, &r[1], 3, 1, 0, 0, 0), FG_QS_QUEUED);
	CHECK_EQ(fg_qs_arrive(&qs, &r[2], 3, 1, 0, 0, 0), FG_QS_QUEUED);
	CHECK_EQ(fg_qs_arrive(&qs, &r[3], 3, 1, 0, 0, 0), FG_QS_REJECT_QUEUE_FULL); /* the youngest */
	CHECK_EQ(fg_qs_arrive(&qs, &r[4], 4, 1, 0, 0, 0), FG_QS_QUEUED);           /* another queue */
	CHECK_EQ(qs.stats.rejected_queue_full, 1);
	fg_qs_fini(&qs);
}

TEST(exempt_and_reject_modes)
{
	struct fg_queueset ex, rj;
	struct fg_qs_config c = { .mode = FG_QS_EXEMPT };
	CHECK_EQ(fg_qs_init(&ex, &c, 0), 0);
	struct fg_qs_req r[4];
	for (int i = 0; i < 4; i++)
		CHECK_EQ(fg_qs_arrive(&ex, &r[i], 1, 1000, 0, 0, 0), FG_QS_EXECUTE);
	CHECK_EQ(ex.seats_in_use, 4000);
	fg_qs_finish(&ex, &r[0], SEC);
	CHECK_EQ(ex.seats_in_use, 3000);
	fg_qs_fini(&ex);

	c = (struct fg_qs_config){ .mode = FG_QS_REJECT, .concurrency_limit = 4 };
	CHECK_EQ(fg_qs_init(&rj, &c, 0), 0);
	CHECK_EQ(fg_qs_arrive(&rj, &r[0], 1, 3, 0, 0, 0), FG_QS_EXECUTE);
	CHECK_EQ(fg_qs_arrive(&rj, &r[1], 1, 2, 0, 0, 0), FG_QS_REJECT_CONCURRENCY);
	CHECK_EQ(fg_qs_arrive(&rj, &r[1], 1, 1, 0, 0, 0), FG_QS_EXECUTE);
	fg_qs_finish(&rj, &r[0], SEC);
	fg_qs_finish(&rj, &r[1], SEC);
	CHECK_EQ(fg_qs_arrive(&rj, &r[2], 1, 9, 0, 0, SEC), FG_QS_EXECUTE); /* too wide, alone */
	CHECK_EQ(fg_qs_arrive(&rj, &r[3], 1, 1, 0, 0, SEC), FG_QS_REJECT_CONCURRENCY);
	CHECK_EQ(rj.stats.rejected_concurrency, 2);
	fg_qs_fini(&rj);
	struct fg_queueset bad;
	c = (struct fg_qs_config){ .mode = FG_QS_QUEUE, .queues = 512, .hand_size = 8, .queue_length_limit = 1,
				   .concurrency_limit = 1 };
	CHECK_EQ(fg_qs_init(&bad, &c, 0), -EINVAL);
}

TEST(extra_latency_holds_seats)
{
	struct fg_queueset qs;
	init(&qs, 2, 10, SEC);
	struct fg_qs_req r, w;
		CHECK(starts(&qs, &r, 1, 1, 2, SEC / 2, 0));
	CHECK_EQ(qs.seats_in_use, 2); /* max(initial, final) for the whole life */
	fg_qs_arrive(&qs, &w, 2, 1, 0, 0, 0);
	CHECK(fg_qs_dispatch_next(&qs, 0) == NULL);
	uint64_t release = fg_qs_finish(&qs, &r, SEC);
	CHECK(release == SEC + SEC / 2);
	CHECK_EQ(r.state, FG_QS_LINGERING);
	CHECK(fg_qs_dispatch_next(&qs, SEC) == NULL);
	fg_qs_release(&qs, &r, release);
	CHECK(fg_qs_dispatch_next(&qs, release) == &w);
	fg_qs_fini(&qs);
}

TEST(guess_is_learned_and_corrects_finish)
{
	struct fg_qs_config c = { .mode = FG_QS_QUEUE, .queues = 64, .hand_size = 1, .queue_length_limit = 100,
				  .concurrency_limit = 1, .seed = 1 };
	struct fg_queueset qs;
	fg_qs_init(&qs, &c, 0);
	uint64_t now = 0;
	for (int i = 0; i < 40; i++) {
		struct fg_qs_req r;
				CHECK(starts(&qs, &r, 1, 1, 0, 0, now));
		now += 10000000; /* 10 ms */
		fg_qs_finish(&qs, &r, now);
	}
	CHECK(qs.guess_ns == 10000000);
	/* The queue's virtual finish counts real durations, not the first guess. */
	CHECK(qs.queues[1].f_prev >= 39 * 10000000ull);
	fg_qs_fini(&qs);
}

/* A flow keeps to the queue of its hand where it waits alone, however many
 * requests it has waiting (per-flow fairness); a queue where another flow's
 * requests are is left for the least loaded card, as Kubernetes chooses. */
TEST(a_flow_keeps_to_its_queue_and_leaves_a_shared_one)
{
	struct fg_qs_config c = { .mode = FG_QS_QUEUE, .queues = 16, .hand_size = 2, .queue_length_limit = 100,
				  .concurrency_limit = 1, .fixed_guess = true, .initial_guess_ns = SEC, .seed = 1 };
	struct fg_queueset qs;
	fg_qs_init(&qs, &c, 0);
	uint32_t hand[2];
	fg_qs_hand(&qs, 12345, hand);
	struct fg_qs_req r[4];
	fg_qs_arrive(&qs, &r[0], 12345, 1, 0, 0, 0);
	fg_qs_arrive(&qs, &r[1], 12345, 1, 0, 0, 0);
	fg_qs_arrive(&qs, &r[2], 12345, 1, 0, 0, 0);
	CHECK(r[0].queue == hand[0] || r[0].queue == hand[1]);
	CHECK_EQ(r[0].state, FG_QS_EXECUTING);           /* nothing waited: it runs at once */
	CHECK(r[1].queue != r[0].queue);                 /* nothing waits anywhere: the rotated first card */
	CHECK_EQ(r[2].queue, r[1].queue);                /* where it waits alone, not the emptier card */
	uint32_t waits = r[1].queue, runs = r[0].queue;
	CHECK_EQ(qs.queues[waits].n_waiting, 2);

	/* Another flow's request joins that queue (placed there directly): the
	 * queue is shared, so the flow's next request takes the least loaded
	 * card, the other one, and then keeps to it. */
	CHECK_EQ(fg_qs_arrive_weighted(&qs, &r[3], waits, 999, 1, 0, 0, FG_QS_WEIGHT_ONE, 0), FG_QS_QUEUED);
	CHECK(r[3].foreign);
	struct fg_qs_req more[2];
	fg_qs_arrive(&qs, &more[0], 12345, 1, 0, 0, 0);
	CHECK_EQ(more[0].queue, runs);
	fg_qs_arrive(&qs, &more[1], 12345, 1, 0, 0, 0);
	CHECK_EQ(more[1].queue, runs);
	CHECK_EQ(qs.queues[waits].n_foreign, 1u);
	fg_qs_remove_waiting(&qs, &r[3], 0);
	CHECK_EQ(qs.queues[waits].n_foreign, 0u);        /* the other flow left: the queue is the flow's again */
	fg_qs_fini(&qs);
}

/* What a flow owes follows the flow, not the queue: a flow served ahead of
 * its share that comes back through another (idle) queue of its hand starts
 * from its own finish time, and a flow that takes the queue it left starts
 * at R, not from the debt left there. */
TEST(a_flows_debt_follows_it_to_another_queue)
{
	struct fg_qs_config c = { .mode = FG_QS_QUEUE, .queues = 16, .hand_size = 2, .queue_length_limit = 100,
				  .concurrency_limit = 2, .fixed_guess = true, .initial_guess_ns = SEC, .seed = 1 };
	struct fg_queueset qs;
	fg_qs_init(&qs, &c, 0);
	struct fg_qs_req a[3], other, b;
	/* Flow 111 takes both seats for 0.1 s while flow 333 waits: it runs
	 * ahead of its share (R moves at one seat, its queue at two). */
	CHECK_EQ(fg_qs_arrive_weighted(&qs, &a[0], 3, 111, 1, 0, 0, FG_QS_WEIGHT_ONE, 0), FG_QS_EXECUTE);
	CHECK_EQ(fg_qs_arrive_weighted(&qs, &a[1], 3, 111, 1, 0, 0, FG_QS_WEIGHT_ONE, 0), FG_QS_EXECUTE);
	CHECK_EQ(fg_qs_arrive_weighted(&qs, &other, 7, 333, 1, 0, 0, FG_QS_WEIGHT_ONE, 0), FG_QS_QUEUED);
	uint64_t now = SEC / 10;
	for (int i = 0; i < 2; i++)
		CHECK_EQ(fg_qs_finish(&qs, &a[i], now), 0); /* no extra latency: released at once */
	uint64_t owed = qs.queues[3].f_prev;
	/* Back through queue 5 (idle, never used): it starts from what it owes. */
	CHECK_EQ(fg_qs_arrive_weighted(&qs, &a[2], 5, 111, 1, 0, 0, FG_QS_WEIGHT_ONE, now), FG_QS_QUEUED);
	CHECK(owed > qs.r);
	CHECK_EQ(qs.queues[5].f_prev, owed);
	CHECK(fg_qs_dispatch_next(&qs, now) == &other); /* flow 333 first: it is owed */
	CHECK(fg_qs_dispatch_next(&qs, now) == &a[2]);
	/* Another flow in queue 3, where flow 111's debt was left: from R. */
	CHECK_EQ(fg_qs_arrive_weighted(&qs, &b, 3, 222, 1, 0, 0, FG_QS_WEIGHT_ONE, now), FG_QS_QUEUED);
	CHECK_EQ(qs.queues[3].f_prev, qs.r);
	fg_qs_fini(&qs);
}

/* A queue another flow's requests joined while it was busy leaves no debt
 * for the flow that took it: its finish time is theirs too.  (Flow 111,
 * light, took queue 3; heavy flow 222's requests joined it and ran ahead;
 * taken as 111's debt, 111 would start behind 222's backlog.) */
TEST(a_shared_queue_leaves_no_debt_to_its_first_flow)
{
	struct fg_qs_config c = { .mode = FG_QS_QUEUE, .queues = 16, .hand_size = 2, .queue_length_limit = 100,
				  .concurrency_limit = 4, .fixed_guess = true, .initial_guess_ns = SEC, .seed = 1 };
	struct fg_queueset qs;
	fg_qs_init(&qs, &c, 0);
	struct fg_qs_req light[2], heavy[3], other;
	CHECK_EQ(fg_qs_arrive_weighted(&qs, &light[0], 3, 111, 1, 0, 0, FG_QS_WEIGHT_ONE, 0), FG_QS_EXECUTE);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(fg_qs_arrive_weighted(&qs, &heavy[i], 3, 222, 1, 0, 0, FG_QS_WEIGHT_ONE, 0), FG_QS_EXECUTE);
	CHECK_EQ(fg_qs_arrive_weighted(&qs, &other, 7, 333, 1, 0, 0, FG_QS_WEIGHT_ONE, 0), FG_QS_QUEUED);
	uint64_t now = SEC / 10;
	CHECK_EQ(fg_qs_finish(&qs, &light[0], now), 0);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(fg_qs_finish(&qs, &heavy[i], now), 0);
	/* Flow 111 back through idle queue 5: from its own finish (the 0.1 s
	 * its one request took), not from queue 3's (all four requests'). */
	uint64_t shared_finish = qs.queues[3].f_prev;
	CHECK(shared_finish > SEC / 10);
	CHECK_EQ(fg_qs_arrive_weighted(&qs, &light[1], 5, 111, 1, 0, 0, FG_QS_WEIGHT_ONE, now), FG_QS_QUEUED);
	CHECK(fg_qs_later(qs.queues[5].f_prev, qs.r) <= SEC / 10);
	fg_qs_fini(&qs);
}

/* A flow that waits in two queues (it spilled over its first) is served as
 * one flow: with one seat, flows A (queues 3 and 5) and B (queue 7) take
 * turns, where per-queue fairness gave A two dispatches for each of B's
 * (the first turn may go to A twice: its second queue was keyed before its
 * first one's dispatch moved the flow on). */
TEST(a_flow_waiting_in_several_queues_is_served_as_one)
{
	struct fg_qs_config c = { .mode = FG_QS_QUEUE, .queues = 16, .hand_size = 2, .queue_length_limit = 6,
				  .concurrency_limit = 1, .fixed_guess = true, .initial_guess_ns = SEC, .seed = 1 };
	struct fg_queueset qs;
	fg_qs_init(&qs, &c, 0);
	struct fg_qs_req x, a[12], b[6];
	CHECK_EQ(fg_qs_arrive_weighted(&qs, &x, 9, 999, 1, 0, 0, FG_QS_WEIGHT_ONE, 0), FG_QS_EXECUTE);
	for (int i = 0; i < 12; i++) /* six in queue 3, then six spilled into queue 5 */
		CHECK_EQ(fg_qs_arrive_weighted(&qs, &a[i], i < 6 ? 3 : 5, 111, 1, 0, 0, FG_QS_WEIGHT_ONE, 0), FG_QS_QUEUED);
	for (int i = 0; i < 6; i++)
		CHECK_EQ(fg_qs_arrive_weighted(&qs, &b[i], 7, 222, 1, 0, 0, FG_QS_WEIGHT_ONE, 0), FG_QS_QUEUED);
	uint64_t now = SEC;
	CHECK_EQ(fg_qs_finish(&qs, &x, now), 0);
	int b_first = 0;
	for (int k = 0; k < 12; k++) {
		struct fg_qs_req *r = fg_qs_dispatch_next(&qs, now);
		CHECK(r != NULL);
		if (!r)
			break;
		b_first += r >= &b[0] && r <= &b[5];
		now += SEC;
		CHECK_EQ(fg_qs_finish(&qs, r, now), 0);
	}
	CHECK(b_first >= 5); /* per queue: 4 of the first 12 */
	fg_qs_fini(&qs);
}

/* A share below one seat-ns per step: R still moves (its fraction is
 * carried from one step to the next, not dropped at each). */
TEST(virtual_time_moves_in_steps_below_one_seat_ns)
{
	struct fg_queueset qs;
	init(&qs, 1, 10, SEC);
	struct fg_qs_req running, waiting[40];
	CHECK(starts(&qs, &running, 1, 1, 0, 0, 0)); /* its queue waits too: the seat is shared */
	for (int i = 0; i < 40; i++)
		CHECK_EQ(fg_qs_arrive(&qs, &waiting[i], (uint64_t)i + 1, 1, 0, 0, 0), FG_QS_QUEUED);
	/* At most 64 waiting queues share one seat: R moves at least 1/64 per ns. */
	for (uint64_t t = 1; t <= 6400; t++)
		CHECK(fg_qs_dispatch_next(&qs, t) == NULL);
	CHECK(qs.r >= 100);
	fg_qs_fini(&qs);
}

TEST(virtual_time_wraps_after_91_days)
{
	/* Two flows of 500-seat, 91-day requests on 2000 seats: R passes 2^64
	 * seat-ns, and the two flows still alternate evenly. */
	struct fg_queueset qs;
	init(&qs, 2000, 100, 3000000);
	uint64_t day = 86400 * SEC, now = 0;
	struct fg_qs_req r[2][8];
	unsigned got[2] = { 0, 0 };
	struct fg_qs_req *running[8], *next_run[8];
	unsigned n_run = 0;
	/* Alternate the two flows' arrivals, as two clients would. */
	for (int i = 0; i < 8; i++)
		for (int f = 0; f < 2; f++)
			if (fg_qs_arrive(&qs, &r[f][i], (uint64_t)(f + 1), 500, 0, 0, now) == FG_QS_EXECUTE) {
				running[n_run++] = &r[f][i];
				got[f]++;
			}
	for (int step = 0; step < 60; step++) {
		struct fg_qs_req *d;
		while ((d = fg_qs_dispatch_next(&qs, now))) {
			running[n_run++] = d;
			got[d->queue == 1 ? 0 : 1]++;
		}
		now += 91 * day;
		unsigned n_next = 0;
		for (unsigned i = 0; i < n_run; i++) {
			struct fg_qs_req *x = running[i];
			uint32_t q = x->queue;
			fg_qs_finish(&qs, x, now);
			if (fg_qs_arrive(&qs, x, q, 500, 0, 0, now) == FG_QS_EXECUTE) { /* closed loop, same flow */
				next_run[n_next++] = x;
				got[q == 1 ? 0 : 1]++;
			}
		}
		memcpy(running, next_run, sizeof(running[0]) * n_next);
		n_run = n_next;
	}
	CHECK(qs.stats.epochs >= 1);
	CHECK_EQ(got[0] + got[1], 240);
	CHECK_EQ(got[0], got[1]);
	printf("  %llu wraps of R; dispatches %u / %u\n", (unsigned long long)qs.stats.epochs, got[0], got[1]);
	fg_qs_fini(&qs);
}

TEST(reconfigure_keeps_everything_in_flight)
{
	struct fg_queueset qs;
	init(&qs, 2, 10, SEC);
	struct fg_qs_req r[8];
	for (int i = 0; i < 6; i++)
		fg_qs_arrive(&qs, &r[i], (uint64_t)(i % 3), 1, 0, 0, 0); /* two run at once, four wait */
	CHECK_EQ(qs.seats_in_use, 2);
	CHECK_EQ(qs.n_waiting, 4);
	/* More queues at once, a higher limit: the next dispatch uses it. */
	struct fg_qs_config c = qs.cfg;
	c.queues = 128;
	c.concurrency_limit = 4;
	CHECK_EQ(fg_qs_reconfigure(&qs, &c, SEC), 0);
	CHECK_EQ(qs.n_alloc, 128);
	CHECK(fg_qs_dispatch_next(&qs, SEC) != NULL);
	CHECK(fg_qs_dispatch_next(&qs, SEC) != NULL);
	CHECK(fg_qs_dispatch_next(&qs, SEC) == NULL);
	CHECK_EQ(qs.n_waiting, 2);
	CHECK_EQ(fg_qs_arrive(&qs, &r[6], 100, 1, 0, 0, SEC), FG_QS_QUEUED); /* queue 100 exists now */
	CHECK_EQ(r[6].queue, 100);
	/* Fewer queues and a lower limit: nothing is aborted; what waits drains. */
	c.queues = 4;
	c.concurrency_limit = 1;
	CHECK_EQ(fg_qs_reconfigure(&qs, &c, 2 * SEC), 0);
	CHECK_EQ(qs.seats_in_use, 4);
	CHECK(fg_qs_dispatch_next(&qs, 2 * SEC) == NULL);
	CHECK_EQ(fg_qs_arrive(&qs, &r[7], 100, 1, 0, 0, 2 * SEC), FG_QS_QUEUED);
	CHECK(r[7].queue < 4); /* the dealer no longer picks queue 100 */
	/* Switch to Reject: arrivals are refused while full, the queued ones still drain. */
	c.mode = FG_QS_REJECT;
	CHECK_EQ(fg_qs_reconfigure(&qs, &c, 3 * SEC), 0);
	struct fg_qs_req extra;
	CHECK_EQ(fg_qs_arrive(&qs, &extra, 1, 1, 0, 0, 3 * SEC), FG_QS_REJECT_CONCURRENCY);
	unsigned drained = 0;
	uint64_t t = 3 * SEC;
	struct fg_qs_req *running[8];
	unsigned n_run = 0;
	for (int i = 0; i < 6; i++)
		if (r[i].state == FG_QS_EXECUTING)
			running[n_run++] = &r[i];
	while (n_run) {
		t += SEC;
		fg_qs_finish(&qs, running[--n_run], t);
		struct fg_qs_req *d;
		while ((d = fg_qs_dispatch_next(&qs, t))) {
			running[n_run++] = d;
			drained++;
		}
	}
	CHECK_EQ(drained, 4);
	CHECK(fg_qs_idle(&qs));
	c.mode = FG_QS_QUEUE;
	c.hand_size = 5;
	c.queues = 4;
	CHECK_EQ(fg_qs_reconfigure(&qs, &c, t), -EINVAL);
	fg_qs_fini(&qs);
}

/* A prepared reconfiguration that is given up leaves the queue set exactly
 * as it was (the worker prepares every level before it commits any). */
TEST(prepare_then_abort_changes_nothing)
{
	struct fg_queueset qs;
	init(&qs, 2, 10, SEC);
	struct fg_qs_req r[6];
	for (int i = 0; i < 6; i++)
		fg_qs_arrive(&qs, &r[i], (uint64_t)(i % 3), 1, 0, 0, 0);
	struct fg_queueset before = qs;
	struct fg_qs_queue *queues_before = malloc(sizeof(*queues_before) * qs.n_alloc);
	memcpy(queues_before, qs.queues, sizeof(*queues_before) * qs.n_alloc);
	/* The order: which queues are in, with which key and tie. */
	uint64_t order_before[64][2];
	for (uint32_t i = 0; i < 64; i++) {
		order_before[i][0] = fg_order_contains(&qs.order, i) ? fg_order_key(&qs.order, i) : UINT64_MAX;
		order_before[i][1] = fg_order_contains(&qs.order, i) ? fg_order_tie(&qs.order, i) : UINT64_MAX;
	}
	uint32_t first_before = fg_order_first(&qs.order);
	CHECK(first_before != FG_ORDER_NIL);
	struct fg_qs_config c = qs.cfg;
	c.queues = 256;
	c.concurrency_limit = 7;
	struct fg_qs_prep p;
	CHECK_EQ(fg_qs_prepare(&qs, &c, &p), 0);
	CHECK(p.queues != NULL && p.new_order && p.new_share);
	fg_qs_prep_abort(&p);
	CHECK(!memcmp(&qs, &before, sizeof(qs)));
	CHECK(!memcmp(qs.queues, queues_before, sizeof(*queues_before) * qs.n_alloc)); /* what it points to, too */
	free(queues_before);
	for (uint32_t i = 0; i < 64; i++) {
		CHECK_EQ(fg_order_contains(&qs.order, i), order_before[i][0] != UINT64_MAX);
		if (fg_order_contains(&qs.order, i))
			CHECK(fg_order_key(&qs.order, i) == order_before[i][0] && fg_order_tie(&qs.order, i) == order_before[i][1]);
	}
	CHECK_EQ(fg_order_first(&qs.order), first_before);
	/* An invalid one is refused by prepare, before anything. */
	c.hand_size = 300;
	CHECK_EQ(fg_qs_prepare(&qs, &c, &p), -EINVAL);
	CHECK(!memcmp(&qs, &before, sizeof(qs)));
	/* And prepare + commit is the reconfiguration. */
	c.hand_size = qs.cfg.hand_size;
	CHECK_EQ(fg_qs_prepare(&qs, &c, &p), 0);
	fg_qs_commit(&qs, &p, SEC);
	CHECK_EQ(qs.n_alloc, 256);
	CHECK_EQ(qs.cfg.concurrency_limit, 7);
	CHECK_EQ(qs.n_waiting, 4);
	CHECK(fg_qs_dispatch_next(&qs, SEC) != NULL);
	fg_qs_fini(&qs);
}

/* --- weights and usage: closed-loop runs on a virtual clock -------------- */

/* A flow: `threads` requests of 1 seat and 1 s outstanding from `start_s`
 * (each starts the next when it completes), of flow hash `hash`. */
struct flow_spec {
	unsigned threads;
	uint32_t weight;
	unsigned start_s;
	uint64_t hash;
};
enum { WF_MAX = 4, WF_THREADS = 60 };

/* Seats each flow held on average over [from, to) seconds. */
static void run_flows(const struct fg_qs_config *c, unsigned n, const struct flow_spec *spec, unsigned from,
		      unsigned to, double *avg_seats)
{
	struct fg_queueset qs;
	CHECK_EQ(fg_qs_init(&qs, c, 0), 0);
	static struct fg_qs_req reqs[WF_MAX][WF_THREADS];
	/* done_at: when it completes (executing), or 1 when waiting, 0 when idle */
	uint64_t done_at[WF_MAX][WF_THREADS] = { { 0 } }, next_start[WF_MAX];
	double held[WF_MAX] = { 0 };
	for (unsigned f = 0; f < n; f++)
		next_start[f] = (uint64_t)spec[f].start_s * SEC;
	for (uint64_t now = 0; now < (uint64_t)to * SEC;) {
		for (unsigned f = 0; f < n; f++)
			if (next_start[f] == now) {
				for (unsigned t = 0; t < spec[f].threads; t++)
					done_at[f][t] = fg_qs_arrive_weighted(&qs, &reqs[f][t], FG_QS_NO_QUEUE, spec[f].hash, 1,
									      0, 0, spec[f].weight, now) == FG_QS_EXECUTE
						? now + SEC : 1;
				next_start[f] = UINT64_MAX;
			}
		struct fg_qs_req *r;
		while ((r = fg_qs_dispatch_next(&qs, now)))
			for (unsigned f = 0; f < n; f++)
				if (r >= reqs[f] && r < reqs[f] + WF_THREADS)
					done_at[f][r - reqs[f]] = now + SEC;
		uint64_t next = UINT64_MAX;
		for (unsigned f = 0; f < n; f++) {
			if (next_start[f] < next)
				next = next_start[f];
			for (unsigned t = 0; t < spec[f].threads; t++)
				if (done_at[f][t] > 1 && done_at[f][t] < next)
					next = done_at[f][t];
		}
		if (next == UINT64_MAX)
			break;
		for (unsigned f = 0; f < n; f++) /* seats held between now and next */
			for (unsigned t = 0; t < spec[f].threads; t++)
				if (done_at[f][t] > 1) {
					uint64_t a = now > (uint64_t)from * SEC ? now : (uint64_t)from * SEC;
					uint64_t b = next < (uint64_t)to * SEC ? next : (uint64_t)to * SEC;
					if (b > a)
						held[f] += (double)(b - a);
				}
		now = next;
		for (unsigned f = 0; f < n; f++)
			for (unsigned t = 0; t < spec[f].threads; t++)
				if (done_at[f][t] == now) {
					fg_qs_finish(&qs, &reqs[f][t], now);
					done_at[f][t] = fg_qs_arrive_weighted(&qs, &reqs[f][t], FG_QS_NO_QUEUE, spec[f].hash, 1,
									      0, 0, spec[f].weight, now) == FG_QS_EXECUTE
						? now + SEC : 1;
				}
		CHECK(qs.seats_in_use <= c->concurrency_limit);
	}
	for (unsigned f = 0; f < n; f++)
		avg_seats[f] = held[f] / ((double)(to - from) * SEC);
	fg_qs_fini(&qs);
}

static struct fg_qs_config flows_config(uint32_t limit, bool weighted, bool usage_based)
{
	return (struct fg_qs_config){ .mode = FG_QS_QUEUE, .queues = 64, .hand_size = 1, .queue_length_limit = 1000,
				      .concurrency_limit = limit, .initial_guess_ns = SEC, .fixed_guess = true,
				      .weighted = weighted, .usage_based = usage_based,
				      .usage = { .half_life_ns = 10 * SEC, .sampling_ns = SEC, .reset_ns = 100 * SEC },
				      .seed = 7 };
}

/* n saturating or limited flows from t = 0 with these threads and weights. */
static void weighted_run(bool weighted, uint32_t limit, unsigned n, const unsigned *threads, const uint32_t *weight,
			 unsigned from, unsigned to, double *avg_seats)
{
	struct flow_spec spec[WF_MAX];
	for (unsigned f = 0; f < n; f++)
		spec[f] = (struct flow_spec){ .threads = threads[f], .weight = weight[f], .hash = f + 1 };
	struct fg_qs_config c = flows_config(limit, weighted, false);
	run_flows(&c, n, spec, from, to, avg_seats);
}

static bool within(double got, double want, double frac)
{
	bool ok = got >= want * (1 - frac) && got <= want * (1 + frac);
	if (!ok)
		fprintf(stderr, "  %.4f seats, want %.4f (within %.0f%%)\n", got, want, frac * 100);
	return ok;
}

/* Weighted max-min on a closed loop, each flow within 3% of its share. */
TEST(weights_share_seats_by_weighted_max_min)
{
	static const struct {
		const char *what;
		bool weighted;
		uint32_t limit;
		unsigned n, threads[3];
		uint32_t weight[3];
		double want[3];
	} cases[] = {
		{ "weights 1, 2 and 4 saturating 14 seats", true, 14, 3, { 20, 20, 20 }, { 1000, 2000, 4000 }, { 2, 4, 8 } },
		{ "the same on a level without weights: equal shares", false, 14, 3, { 20, 20, 20 },
		  { 1000, 2000, 4000 }, { 14.0 / 3, 14.0 / 3, 14.0 / 3 } },
		/* Volcano's proportion example as flows (seed 004). */
		{ "9 seats, weights 2 and 4 asking 5 and 10", true, 9, 2, { 5, 10 }, { 2000, 4000 }, { 3, 6 } },
		/* A flow asking less than its weighted share gets all it asks;
		 * the rest goes to the others, by weight. */
		{ "weight 4 asking 2 of 10, weights 1 and 3 saturating", true, 10, 3, { 2, 20, 20 },
		  { 4000, 1000, 3000 }, { 2, 2, 6 } },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double avg[3];
		weighted_run(cases[i].weighted, cases[i].limit, cases[i].n, cases[i].threads, cases[i].weight, 20, 200, avg);
		for (unsigned f = 0; f < cases[i].n; f++)
			if (!within(avg[f], cases[i].want[f], 0.03)) {
				fprintf(stderr, "  %s: flow %u\n", cases[i].what, f);
				CHECK(0);
			}
	}
}

/* Weights turned on and off on a live queue set: nothing in flight is lost
 * and the demand structures follow (a rebuild from every queue). */
TEST(weights_switched_live)
{
	struct fg_queueset qs;
	struct fg_qs_config c = { .mode = FG_QS_QUEUE, .queues = 64, .hand_size = 1, .queue_length_limit = 100,
				  .concurrency_limit = 2, .initial_guess_ns = SEC, .fixed_guess = true, .seed = 7 };
	CHECK_EQ(fg_qs_init(&qs, &c, 0), 0);
	struct fg_qs_req r[6];
	for (unsigned i = 0; i < 6; i++)
		fg_qs_arrive_weighted(&qs, &r[i], FG_QS_NO_QUEUE, 1 + i % 2, 1, 0, 0, i % 2 ? 4000 : 1000, 0);
	CHECK_EQ(r[1].weight, FG_QS_WEIGHT_ONE); /* a level without weights: 1 whatever it says */
	c.weighted = true;
	CHECK_EQ(fg_qs_reconfigure(&qs, &c, 0), 0);
	CHECK(qs.demands.wshare.n_buckets && qs.demands.wshare.n == 2 && qs.demands.wbusy.n == 0);
	CHECK_EQ(qs.n_waiting, 4);
	struct fg_qs_req w;
	CHECK_EQ(fg_qs_arrive_weighted(&qs, &w, FG_QS_NO_QUEUE, 3, 1, 0, 0, 9999999, 0), FG_QS_QUEUED);
	CHECK_EQ(w.weight, FG_QS_WEIGHT_MAX); /* clamped */
	fg_qs_finish(&qs, &r[0], SEC);
	fg_qs_finish(&qs, &r[1], SEC);
	unsigned started = 0;
	while (fg_qs_dispatch_next(&qs, SEC))
		started++;
	CHECK_EQ(started, 2);
	c.weighted = false;
	CHECK_EQ(fg_qs_reconfigure(&qs, &c, SEC), 0);
	CHECK_EQ(qs.demands.wshare.n_buckets, 0);
	CHECK_EQ(qs.demands.share.n + qs.demands.busy.n, 3); /* queues 1, 2 and 3 are all active */
	CHECK_EQ(qs.seats_in_use, 2);
	fg_qs_fini(&qs);
}

/* UsageBased: a flow that ran alone yields to a newcomer until their
 * decayed usages meet (half-life 10 s: about 10 s), then they share. */
TEST(usage_newcomer_first_until_usages_meet)
{
	struct flow_spec spec[] = { { .threads = 8, .weight = 1000, .start_s = 0, .hash = 1 },
				    { .threads = 8, .weight = 1000, .start_s = 60, .hash = 2 } };
	struct fg_qs_config c = flows_config(4, false, true);
	double early[2], late[2];
	run_flows(&c, 2, spec, 61, 65, early);
	CHECK(early[1] >= 3.5 && early[0] <= 0.5);
	run_flows(&c, 2, spec, 100, 200, late);
	CHECK(within(late[0], 2, 0.05) && within(late[1], 2, 0.05));
	/* Weighted usage: weight 3 against 1 -> 3 and 1 seats. */
	spec[1].weight = 3000;
	c.weighted = true;
	run_flows(&c, 2, spec, 100, 200, late);
	CHECK(within(late[0], 1, 0.05) && within(late[1], 3, 0.05));
}

/* The entry penalty: two flows with equal usage; one bursts 50 requests at
 * once.  Its usage is not folded until the next sampling, but every
 * dispatch charges it at once, so the other keeps about its share. */
TEST(usage_entry_penalty_stops_a_burst)
{
	struct flow_spec spec[] = { { .threads = 5, .weight = 1000, .start_s = 0, .hash = 1 },
				    { .threads = 5, .weight = 1000, .start_s = 0, .hash = 2 },
				    { .threads = 50, .weight = 1000, .start_s = 100, .hash = 2 } };
	struct fg_qs_config c = flows_config(10, false, true);
	double avg[3];
	run_flows(&c, 3, spec, 100, 103, avg);
	CHECK(avg[0] >= 4.0);
	/* The burst and its flow together get about the other half. */
	CHECK(avg[1] + avg[2] <= 6.0);
}

/* MaxMin <-> UsageBased on a live queue set: everything in flight finishes,
 * the order follows the new policy at once. */
TEST(usage_policy_switched_live)
{
	struct fg_qs_config c = flows_config(1, false, false);
	struct fg_queueset qs;
	CHECK_EQ(fg_qs_init(&qs, &c, 0), 0);
	struct fg_qs_req a, b, b2, x;
	CHECK_EQ(fg_qs_arrive_weighted(&qs, &a, FG_QS_NO_QUEUE, 1, 1, 0, 0, 0, 0), FG_QS_EXECUTE);
	CHECK_EQ(fg_qs_arrive_weighted(&qs, &b, FG_QS_NO_QUEUE, 2, 1, 0, 0, 0, 0), FG_QS_QUEUED);
	CHECK_EQ(b.flow, FG_USAGE_NONE);
	c.usage_based = true;
	CHECK_EQ(fg_qs_reconfigure(&qs, &c, 0), 0);
	CHECK(qs.usage.flows != NULL);
	CHECK_EQ(fg_qs_arrive_weighted(&qs, &b2, FG_QS_NO_QUEUE, 2, 1, 0, 0, 0, 0), FG_QS_QUEUED);
	CHECK(b2.flow != FG_USAGE_NONE);
	fg_qs_finish(&qs, &a, SEC);
	CHECK(fg_qs_dispatch_next(&qs, SEC) == &b); /* from before the switch: drains first */
	fg_qs_finish(&qs, &b, 2 * SEC);
	CHECK(fg_qs_dispatch_next(&qs, 2 * SEC) == &b2);
	CHECK_EQ(fg_qs_arrive_weighted(&qs, &x, FG_QS_NO_QUEUE, 3, 1, 0, 0, 0, 2 * SEC), FG_QS_QUEUED);
	c.usage_based = false;
	CHECK_EQ(fg_qs_reconfigure(&qs, &c, 2 * SEC), 0);
	fg_qs_finish(&qs, &b2, 3 * SEC); /* released into the kept table */
	CHECK_EQ(qs.usage.flows[b2.flow].requests, 0);
	CHECK_EQ(qs.usage.flows[x.flow].requests, 1);
	CHECK(fg_qs_dispatch_next(&qs, 3 * SEC) == &x);
	fg_qs_finish(&qs, &x, 4 * SEC);
	CHECK(fg_qs_idle(&qs));
	struct fg_qs_config bad = flows_config(1, false, true);
	bad.usage.half_life_ns = 0;
	CHECK_EQ(fg_qs_reconfigure(&qs, &bad, 4 * SEC), -EINVAL);
	fg_qs_fini(&qs);
}

TEST_MAIN
