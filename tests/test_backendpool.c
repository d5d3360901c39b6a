/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of one worker's backend pool (common/req/backendpool.c). */
#include <stdlib.h>
#include <string.h>

#include "backendpool.h"
#include "test.h"

#define MS 1000000ull

static void init(struct fg_backendpool *p, uint32_t n)
{
	fg_backendpool_init(p, n, 3, 1000 * MS, 8000 * MS);
}

/* Two workers' pools of n backends sharing what they know of them. */
static void two_workers(struct fg_backendpool *a, struct fg_backendpool *b, uint32_t n, struct fg_backend_shared *shared)
{
	memset(shared, 0, sizeof(*shared) * FG_MAX_BACKENDS);
	init(a, n);
	init(b, n);
	a->shared = b->shared = shared;
}

/* A timeout at backend i seen by pool p. */
static void time_out(struct fg_backendpool *p, uint32_t i, uint64_t now)
{
	p->b[i].outstanding++;
	fg_backendpool_done(p, i, 1, false, now);
}

/* The capacity the levels follow: in seats when every listed backend has
 * one, else in backends; draining, disabled, ejected and probing backends
 * are listed but not usable; removed ones are not listed; every change is
 * counted in changes. */
TEST(usable_capacity)
{
	struct fg_backendpool p;
	init(&p, 3);
	uint32_t usable, total, seen = p.changes;
	fg_backendpool_capacity(&p, &usable, &total);
	CHECK_EQ(usable, 3); /* no capacities: one per backend */
	CHECK_EQ(total, 3);
	fg_backendpool_set_capacity(&p, 0, 4);
	fg_backendpool_set_capacity(&p, 1, 6);
	fg_backendpool_set_capacity(&p, 2, 2);
	CHECK(p.changes != seen);
	fg_backendpool_capacity(&p, &usable, &total);
	CHECK_EQ(usable, 12);
	CHECK_EQ(total, 12);
	fg_backendpool_follow(&p, 1, p.b[1].ip, p.b[1].port, FG_BACKEND_DRAIN);
	fg_backendpool_capacity(&p, &usable, &total);
	CHECK_EQ(usable, 6);
	CHECK_EQ(total, 12);
	fg_backendpool_follow(&p, 1, p.b[1].ip, p.b[1].port, FG_BACKEND_REMOVED);
	fg_backendpool_capacity(&p, &usable, &total);
	CHECK_EQ(usable, 6);
	CHECK_EQ(total, 6);
	seen = p.changes;
	for (int k = 0; k < 3; k++)
		time_out(&p, 0, 0); /* ejected */
	CHECK(p.changes != seen);
	fg_backendpool_capacity(&p, &usable, &total);
	CHECK_EQ(usable, 2);
	CHECK_EQ(total, 6);
	seen = p.changes;
	CHECK_EQ(fg_backendpool_pick(&p, 1, 1000 * MS), 0); /* its probe */
	CHECK(p.changes != seen);
	fg_backendpool_capacity(&p, &usable, &total);
	CHECK_EQ(usable, 2); /* probing: not yet */
	fg_backendpool_done(&p, 0, 1, true, 1001 * MS);
	fg_backendpool_capacity(&p, &usable, &total);
	CHECK_EQ(usable, 6);
	fg_backendpool_set_capacity(&p, 2, 0); /* one without a capacity: count backends */
	fg_backendpool_capacity(&p, &usable, &total);
	CHECK_EQ(usable, 2);
	CHECK_EQ(total, 2);
}

/* A request to backend i answered after latency: what the pool learns. */
static void answer_after(struct fg_backendpool *p, uint32_t i, uint64_t sent, uint64_t latency)
{
	p->b[i].outstanding++;
	fg_backendpool_learn_latency(p, i, 1, latency, sent + latency);
	fg_backendpool_done(p, i, 1, true, sent + latency);
}

/* A backend with requests outstanding that answers nothing for 8 times its
 * learned latency is stalled: it gets nothing new while another is up, and
 * is back at its next answer; with every backend stalled, picks go on (by
 * least outstanding).  Not before it has answered 8 requests. */
TEST(stalled_backend_gets_nothing_new)
{
	struct fg_backendpool p;
	init(&p, 2);
	uint64_t t = 1000 * MS;
	CHECK_EQ(fg_backendpool_pick(&p, 1, t), 0);
	CHECK(!fg_backendpool_stalled(&p, 0, t + 10000 * MS)); /* nothing learned yet */
	fg_backendpool_done(&p, 0, 1, true, t + 1);
	for (int k = 0; k < 8; k++) {
		answer_after(&p, 0, t, 10 * MS);
		answer_after(&p, 1, t, 10 * MS);
	}
	CHECK_EQ(p.b[0].latency_ns, 10 * MS);
	t += 100 * MS;
	CHECK_EQ(fg_backendpool_pick(&p, 1, t), 0); /* backend 0 busy from t */
	CHECK_EQ(fg_backendpool_pick(&p, 1, t), 1);
	CHECK_EQ(fg_backendpool_pick(&p, 1, t + 50 * MS), 0); /* 50 ms: below 8 x 10 ms */
	fg_backendpool_done(&p, 1, 1, true, t + 60 * MS); /* backend 1 answers; 0 does not */
	CHECK(!fg_backendpool_stalled(&p, 0, t + 80 * MS));
	CHECK(fg_backendpool_stalled(&p, 0, t + 81 * MS));
	for (int k = 0; k < 5; k++) /* 1 has fewer seats out at first, then more: still 1 */
		CHECK_EQ(fg_backendpool_pick(&p, 1, t + 90 * MS), 1);
	CHECK(p.b[0].stalled);
	CHECK_EQ(p.b[0].stalls, 1);
	/* Backend 1 stalls too: the least outstanding of them. */
	CHECK(fg_backendpool_stalled(&p, 1, t + 200 * MS));
	CHECK_EQ(fg_backendpool_pick(&p, 1, t + 200 * MS), 0);
	/* An answer from 0: no longer stalled, picked again by least outstanding. */
	fg_backendpool_learn_latency(&p, 0, 1, 10 * MS, t + 210 * MS);
	fg_backendpool_done(&p, 0, 1, true, t + 210 * MS);
	CHECK(!fg_backendpool_stalled(&p, 0, t + 210 * MS));
	CHECK_EQ(fg_backendpool_pick(&p, 1, t + 210 * MS), 0);
	CHECK_EQ(p.b[0].stalls, 1);
	/* What a stalled backend held times out: still stalled (no answer
	 * came), and it gets one request at a time, not a burst. */
	p.b[0].outstanding = 1;
	p.b[0].stalled = false;
	p.b[0].progress_ns = t + 300 * MS;
	CHECK(fg_backendpool_stalled(&p, 0, t + 400 * MS));
	fg_backendpool_refresh(&p, t + 400 * MS);
	CHECK(p.b[0].stalled);
	fg_backendpool_done(&p, 0, 1, false, t + 500 * MS); /* timed out */
	CHECK_EQ(p.b[0].outstanding, 0);
	CHECK(fg_backendpool_stalled(&p, 0, t + 500 * MS));
	p.b[1].stalled = false; /* backend 1 flowing again */
	p.b[1].progress_ns = t + 500 * MS;
	CHECK_EQ(fg_backendpool_pick(&p, 1, t + 500 * MS), 0); /* its one request */
	CHECK_EQ(fg_backendpool_pick(&p, 1, t + 500 * MS), 1);
	CHECK_EQ(fg_backendpool_pick(&p, 1, t + 500 * MS), 1);
	/* A disabled backend does not stall (it is out of service), and its
	 * answers clear a stall. */
	fg_backendpool_follow(&p, 0, p.b[0].ip, p.b[0].port, FG_BACKEND_DISABLED);
	CHECK(!p.b[0].stalled);
	CHECK(!fg_backendpool_stalled(&p, 0, t + 5000 * MS));
	fg_backendpool_done(&p, 0, 1, true, t + 5000 * MS);
	CHECK(!fg_backendpool_stalled(&p, 0, t + 5000 * MS));
	/* The floor: a backend answering in 1 ms stalls after 50 ms, not 8. */
	struct fg_backendpool q;
	init(&q, 1);
	for (int k = 0; k < 8; k++)
		answer_after(&q, 0, t, MS);
	CHECK_EQ(fg_backendpool_pick(&q, 1, t), 0);
	CHECK(!fg_backendpool_stalled(&q, 0, t + 50 * MS));
	CHECK(fg_backendpool_stalled(&q, 0, t + 51 * MS));
	CHECK_EQ(fg_backendpool_pick(&q, 1, t + 60 * MS), 0); /* the only one: picked anyway */
}

TEST(least_outstanding_seats)
{
	struct fg_backendpool p;
	init(&p, 3);
	CHECK_EQ(fg_backendpool_pick(&p, 2, 0), 0);
	CHECK_EQ(fg_backendpool_pick(&p, 1, 0), 1);
	CHECK_EQ(fg_backendpool_pick(&p, 1, 0), 2);
	CHECK_EQ(fg_backendpool_pick(&p, 1, 0), 1); /* 2, 1, 1: the first of the least */
	fg_backendpool_done(&p, 0, 2, true, 0);
	CHECK_EQ(fg_backendpool_pick(&p, 1, 0), 0);
}

/* Capacities: never past them; a request wider than a backend's whole
 * capacity runs there alone; none with room: NONE while still usable. */
TEST(capacity_is_a_hard_cap)
{
	struct fg_backendpool p;
	init(&p, 2);
	fg_backendpool_set_capacity(&p, 0, 2);
	fg_backendpool_set_capacity(&p, 1, 1);
	CHECK_EQ(fg_backendpool_pick(&p, 1, 0), 0);
	CHECK_EQ(fg_backendpool_pick(&p, 1, 0), 1);
	CHECK_EQ(fg_backendpool_pick(&p, 1, 0), 0);
	CHECK_EQ(fg_backendpool_pick(&p, 1, 0), FG_BACKEND_NONE);
	CHECK(fg_backendpool_usable(&p, 0));
	fg_backendpool_done(&p, 1, 1, true, 0);
	CHECK_EQ(fg_backendpool_pick(&p, 3, 0), 1); /* 3 > capacity 1, and backend 1 is idle: alone */
	CHECK_EQ(fg_backendpool_pick(&p, 1, 0), FG_BACKEND_NONE);
}

/* Three timeouts in a row eject a backend; when the time is up one request
 * probes it; an answer brings it back, a timeout doubles the ejection. */
TEST(ejection_and_probe)
{
	struct fg_backendpool p;
	init(&p, 1);
	for (int i = 0; i < 3; i++)
		time_out(&p, 0, 10 * MS);
	CHECK(!fg_backendpool_usable(&p, 20 * MS));
	CHECK_EQ(fg_backendpool_pick(&p, 1, 20 * MS), FG_BACKEND_NONE);
	CHECK_EQ(fg_backendpool_pick(&p, 1, 1010 * MS), 0); /* the probe */
	CHECK_EQ(fg_backendpool_pick(&p, 1, 1010 * MS), FG_BACKEND_NONE);
	fg_backendpool_done(&p, 0, 1, false, 1500 * MS); /* failed probe: 2 s */
	CHECK_EQ(fg_backendpool_pick(&p, 1, 3400 * MS), FG_BACKEND_NONE);
	CHECK_EQ(fg_backendpool_pick(&p, 1, 3500 * MS), 0);
	fg_backendpool_done(&p, 0, 1, true, 3600 * MS);
	CHECK_EQ(fg_backendpool_pick(&p, 1, 3600 * MS), 0);
	CHECK_EQ(fg_backendpool_pick(&p, 1, 3600 * MS), 0); /* up: no longer one at a time */
	CHECK_EQ(p.b[0].ejections, 2);
}

/* Two workers' pools sharing ejections: what one ejects, the other stops
 * using at once, until the same time; then each probes it. */
TEST(ejections_are_shared_between_workers)
{
	struct fg_backend_shared shared[FG_MAX_BACKENDS];
	struct fg_backendpool a, b;
	two_workers(&a, &b, 2, shared);
	/* Timeouts in a row over both workers: a, b, a — the third ejects. */
	time_out(&a, 0, 100 * MS);
	time_out(&b, 0, 100 * MS);
	CHECK_EQ(shared[0].timeouts, 2);
	CHECK_EQ(shared[0].down_until, 0);
	time_out(&a, 0, 100 * MS);
	CHECK_EQ(shared[0].down_until, 1100 * MS);
	CHECK_EQ(a.b[0].state, FG_BACKEND_EJECTED);
	CHECK_EQ(fg_backendpool_pick(&b, 1, 200 * MS), 1);
	CHECK_EQ(fg_backendpool_pick(&b, 1, 200 * MS), 1); /* never backend 0 */
	CHECK(fg_backendpool_usable(&b, 200 * MS));
	fg_backendpool_set_capacity(&b, 1, 2); /* backend 1 full: nothing usable left for b... */
	CHECK_EQ(fg_backendpool_pick(&b, 1, 300 * MS), FG_BACKEND_NONE);
	CHECK_EQ(fg_backendpool_pick(&b, 1, 1100 * MS), 0); /* ...until the shared time is up: b probes */
	CHECK_EQ(b.b[0].state, FG_BACKEND_PROBING);
	/* One backend ejected by both: b's usable says no while it lasts. */
	struct fg_backendpool c;
	fg_backendpool_init(&c, 1, 3, 1000 * MS, 8000 * MS);
	struct fg_backend_shared one[FG_MAX_BACKENDS] = { { .down_until = 5000 * MS } };
	c.shared = one;
	CHECK(!fg_backendpool_usable(&c, 4000 * MS));
	CHECK(fg_backendpool_usable(&c, 5000 * MS));
}

/* An answer anywhere breaks the run of timeouts. */
TEST(an_answer_resets_the_shared_run)
{
	struct fg_backend_shared shared[FG_MAX_BACKENDS];
	struct fg_backendpool a, b;
	two_workers(&a, &b, 1, shared);
	time_out(&a, 0, 100 * MS);
	time_out(&a, 0, 100 * MS);
	b.b[0].outstanding++;
	fg_backendpool_done(&b, 0, 1, true, 100 * MS);
	CHECK_EQ(shared[0].timeouts, 0);
	time_out(&a, 0, 100 * MS); /* a's third, but the run is 1 */
	CHECK_EQ(a.b[0].state, FG_BACKEND_UP);
	time_out(&b, 0, 200 * MS);
	time_out(&a, 0, 300 * MS); /* 3 in a row over both */
	CHECK_EQ(a.b[0].state, FG_BACKEND_EJECTED);
	CHECK_EQ(fg_backendpool_pick(&b, 1, 400 * MS), FG_BACKEND_NONE); /* b follows at once */
	CHECK_EQ(b.b[0].state, FG_BACKEND_EJECTED);
}

/* A probe answered at one worker brings the backend back at the others,
 * even one that dispatches nothing (its periodic refresh), unless it was
 * ejected there after that answer, or its own probe is still out. */
TEST(a_recovery_is_shared_between_workers)
{
	struct fg_backend_shared shared[FG_MAX_BACKENDS];
	struct fg_backendpool a, b;
	two_workers(&a, &b, 1, shared);
	for (int i = 0; i < 3; i++)
		time_out(&a, 0, 100 * MS);
	fg_backendpool_refresh(&b, 200 * MS); /* b, idle, follows the ejection */
	CHECK_EQ(b.b[0].state, FG_BACKEND_EJECTED);
	CHECK_EQ(fg_backendpool_pick(&a, 1, 1100 * MS), 0); /* a's probe, answered */
	fg_backendpool_done(&a, 0, 1, true, 1150 * MS);
	CHECK_EQ(a.b[0].state, FG_BACKEND_UP);
	CHECK_EQ(shared[0].down_until, 0);
	fg_backendpool_refresh(&b, 1200 * MS);
	CHECK_EQ(b.b[0].state, FG_BACKEND_UP);
	CHECK_EQ(fg_backendpool_pick(&b, 1, 1200 * MS), 0);
	CHECK_EQ(fg_backendpool_pick(&b, 1, 1200 * MS), 0); /* up: not one at a time */

	/* b ejects it again after a's answer: that answer does not undo it. */
	for (int i = 0; i < 3; i++)
		time_out(&b, 0, 2000 * MS);
	fg_backendpool_refresh(&b, 2100 * MS);
	CHECK_EQ(b.b[0].state, FG_BACKEND_EJECTED);
	/* b's own probe is out when a's next answer comes: b waits for its own. */
	CHECK_EQ(fg_backendpool_pick(&b, 1, 3000 * MS), 0);
	CHECK(b.b[0].probe_in_flight);
	a.b[0].outstanding++;
	a.b[0].state = FG_BACKEND_PROBING;
	fg_backendpool_done(&a, 0, 1, true, 3100 * MS);
	fg_backendpool_refresh(&b, 3200 * MS);
	CHECK_EQ(b.b[0].state, FG_BACKEND_PROBING);
	fg_backendpool_done(&b, 0, 1, true, 3300 * MS);
	CHECK_EQ(b.b[0].state, FG_BACKEND_UP);
}

/* Only enabled backends are picked; a drained one keeps its health
 * accounting, a disabled one's timeouts neither eject it nor count; enable
 * starts an ejected backend afresh. */
TEST(administrative_states)
{
	struct fg_backendpool p;
	init(&p, 2);
	fg_backendpool_follow(&p, 0, 1, 7501, FG_BACKEND_ENABLED);
	fg_backendpool_follow(&p, 1, 1, 7502, FG_BACKEND_DRAIN);
	CHECK_EQ(fg_backendpool_pick(&p, 1, 0), 0);
	CHECK_EQ(fg_backendpool_pick(&p, 1, 0), 0); /* never the drained one, however loaded 0 is */
	fg_backendpool_follow(&p, 0, 1, 7501, FG_BACKEND_DISABLED);
	CHECK_EQ(fg_backendpool_pick(&p, 1, 0), FG_BACKEND_NONE);
	CHECK(!fg_backendpool_usable(&p, 0));
	for (int i = 0; i < 5; i++)
		time_out(&p, 0, 100 * MS); /* disabled: no ejection */
	CHECK_EQ(p.b[0].state, FG_BACKEND_UP);
	CHECK_EQ(p.b[0].outstanding, 2); /* the two picked above are still there */
	for (int i = 0; i < 3; i++)
		time_out(&p, 1, 100 * MS); /* drained: health still counts */
	CHECK_EQ(p.b[1].state, FG_BACKEND_EJECTED);
	CHECK(!fg_backendpool_follow(&p, 1, 1, 7502, FG_BACKEND_ENABLED)); /* same address: not fresh */
	CHECK_EQ(p.b[1].state, FG_BACKEND_UP);                            /* enable: a fresh start */
	CHECK_EQ(fg_backendpool_pick(&p, 1, 200 * MS), 1);
}

/* A slot that comes to name another address starts afresh; the shared run
 * and ejection of the old address do not carry over. */
TEST(slot_following_another_address_starts_afresh)
{
	struct fg_backend_shared shared[FG_MAX_BACKENDS];
	struct fg_backendpool a, b;
	two_workers(&a, &b, 0, shared);
	CHECK(fg_backendpool_follow(&a, 0, 1, 7501, FG_BACKEND_ENABLED));
	fg_backendpool_set_count(&a, 1);
	for (int i = 0; i < 3; i++)
		time_out(&a, 0, 100 * MS);
	CHECK_EQ(a.b[0].state, FG_BACKEND_EJECTED);
	CHECK(shared[0].down_until > 0);
	CHECK(fg_backendpool_follow(&a, 0, 2, 7501, FG_BACKEND_ENABLED)); /* another ip */
	CHECK_EQ(a.b[0].state, FG_BACKEND_UP);
	CHECK_EQ(a.b[0].ejections, 0);
	CHECK_EQ(shared[0].down_until, 0);
	CHECK_EQ(fg_backendpool_pick(&a, 1, 200 * MS), 0);
	/* Enabled again after an ejection shared by another worker: usable at once. */
	CHECK(fg_backendpool_follow(&b, 0, 2, 7501, FG_BACKEND_DISABLED));
	fg_backendpool_set_count(&b, 1);
	__atomic_store_n(&shared[0].down_until, 9000 * MS, __ATOMIC_RELAXED);
	CHECK_EQ(fg_backendpool_pick(&b, 1, 300 * MS), FG_BACKEND_NONE);
	CHECK(!fg_backendpool_follow(&b, 0, 2, 7501, FG_BACKEND_ENABLED));
	CHECK_EQ(shared[0].down_until, 0);
	CHECK_EQ(fg_backendpool_pick(&b, 1, 300 * MS), 0);
	fg_backendpool_set_count(&a, 0);
	CHECK_EQ(fg_backendpool_pick(&a, 1, 200 * MS), FG_BACKEND_NONE);
	CHECK(!fg_backendpool_usable(&a, 200 * MS));
}

/* Adaptive mode: the learned limits stay each backend's; the levels'
 * seats are overbooked over them while the levels are pressed and the
 * backends have room (10% a call), back while requests wait for backend
 * room, slowly back when nothing presses, never under the limits, at most
 * Max; each move counted in changes; none left after a Static capacity. */
TEST(levels_overbook_the_learned_limits_while_pressed)
{
	struct fg_backendpool p;
	init(&p, 2);
	p.adapt = calloc(FG_MAX_BACKENDS, sizeof(*p.adapt));
	fg_backendpool_set_adaptive(&p, 0, 8, 1, 100, 0);
	fg_backendpool_set_adaptive(&p, 1, 8, 1, 100, 0);
	uint32_t usable, total, seen = p.changes;
	fg_backendpool_levels_capacity(&p, 160, 640, &usable, &total);
	CHECK_EQ(usable, 16);
	CHECK_EQ(total, 160);
	fg_backendpool_set_pressure(&p, true, false, false); /* pressed, the backends empty */
	CHECK_EQ(p.overbook_milli, 1100);
	CHECK(p.changes != seen);
	for (int k = 0; k < 9; k++)
		fg_backendpool_set_pressure(&p, true, false, false);
	fg_backendpool_levels_capacity(&p, 160, 640, &usable, &total);
	CHECK(usable >= 40 && usable <= 42); /* 16 x 1.1^10 */
	CHECK_EQ(p.b[0].capacity, 8);        /* what the backends get stays theirs */
	/* The backends' limits nearly used: no more overbooking. */
	p.b[0].outstanding = p.b[1].outstanding = 8;
	uint32_t was = p.overbook_milli;
	fg_backendpool_set_pressure(&p, true, false, false);
	CHECK_EQ(p.overbook_milli, was);
	/* Requests held for backend room: back by a tenth a call. */
	fg_backendpool_set_pressure(&p, true, true, true);
	CHECK_EQ(p.overbook_milli, was - was / 10);
	/* Nothing presses: slowly back, never under the limits. */
	for (int k = 0; k < 400; k++)
		fg_backendpool_set_pressure(&p, false, false, false);
	CHECK_EQ(p.overbook_milli, 1000);
	/* Max bounds what the levels get. */
	p.b[0].outstanding = p.b[1].outstanding = 0;
	for (int k = 0; k < 100; k++)
		fg_backendpool_set_pressure(&p, true, false, false);
	CHECK_EQ(p.overbook_milli, FG_BACKENDPOOL_MAX_OVERBOOK * 1000);
	fg_backendpool_levels_capacity(&p, 160, 640, &usable, &total);
	CHECK_EQ(usable, 640);
	/* Static (a live mode change): no overbooking left for a later Adaptive start. */
	seen = p.changes;
	fg_backendpool_set_capacity(&p, 0, 8);
	CHECK_EQ(p.overbook_milli, 1000);
	CHECK(p.changes != seen);
	free(p.adapt);
}

TEST_MAIN
