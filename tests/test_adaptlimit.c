/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the adaptive concurrency limit (common/req/adaptlimit.c) on
 * latency traces from a model backend, on a virtual clock: the backend has
 * `capacity` seats that execute at once, first come first served (what it
 * cannot execute waits in its own queue, as a real server's socket backlog);
 * the client keeps as many seats outstanding as the limit in force allows
 * (always more demand than capacity, as behind a busy level).
 * FG_TEST_TRACE=1 prints the controller every 100 ms.  And on a latency
 * trace recorded from the backend emulator (tests/data/
 * record_adaptlimit_trace.py), replayed as it came.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptlimit.h"
#include "test.h"

#define MS 1000000ull
#define STEP_NS 100000ull /* 0.1 ms */
#define MAX_REQS 8192u

struct model_req {
	uint64_t sent, done; /* done 0: waiting in the backend's queue */
	uint32_t seats;
	uint64_t service_ns;
};

struct model {
	struct fg_adapt a;
	uint64_t now;
	uint32_t capacity;     /* seats the backend executes at once */
	uint64_t service_ns;   /* a narrow request's execution */
	uint64_t paused_until; /* nothing finishes before */
	/* Every tenth request is wide: wide_seats seats for wide_factor x service. */
	uint32_t wide_seats, wide_factor;
	uint32_t demand; /* the most seats the client wants outstanding (0: no end) */
	uint32_t offered_pct; /* the part of the limit in force the levels offer (0: all) */
	bool no_pressure;     /* the controller is never told that requests wait */
	uint64_t sent_total;
	uint64_t rng; /* service times vary by +-25% */
	struct model_req reqs[MAX_REQS]; /* in sending order */
	uint32_t head, n;
	uint32_t outstanding; /* seats sent and not answered */
	uint32_t executing;   /* seats executing */
	uint64_t answered_seats;
	double mean_limit;
};

static void model_init(struct model *m, uint32_t start, uint32_t capacity, uint64_t service_ns)
{
	memset(m, 0, sizeof(*m));
	m->capacity = capacity;
	m->service_ns = service_ns;
	fg_adapt_init(&m->a, start, 1, 100000, 3, 0);
}

static struct model_req *req_at(struct model *m, uint32_t k) { return &m->reqs[(m->head + k) % MAX_REQS]; }

/* One step of the virtual clock: answers, the backend's FIFO, new sends,
 * the controller's tick. */
static void model_step(struct model *m)
{
	m->now += STEP_NS;
	/* Answers, in any order they finish. */
	for (uint32_t k = 0; k < m->n; k++) {
		struct model_req *r = req_at(m, k);
		if (r->done && r->done <= m->now && m->now >= m->paused_until) {
			fg_adapt_answer(&m->a, m->now - r->sent, r->seats, m->now);
			m->outstanding -= r->seats;
			m->executing -= r->seats;
			m->answered_seats += r->seats;
			r->seats = 0;
			r->done = UINT64_MAX; /* answered */
		}
	}
	while (m->n && req_at(m, 0)->done == UINT64_MAX) {
		m->head = (m->head + 1) % MAX_REQS;
		m->n--;
	}
	/* The backend starts what it has room for, in order (a request wider
	 * than it runs alone). */
	for (uint32_t k = 0; k < m->n; k++) {
		struct model_req *r = req_at(m, k);
		if (r->done)
			continue;
		if (m->executing && m->executing + r->seats > m->capacity)
			break;
		r->done = m->now + r->service_ns;
		m->executing += r->seats;
	}
	/* The client sends while the limit in force has room; what the limit
	 * holds back waits in fairgate: pressure (unless a test says). */
	bool held_back = false;
	for (;;) {
		uint32_t seats = m->wide_seats && m->sent_total % 10 == 9 ? m->wide_seats : 1;
		uint32_t limit = fg_adapt_in_force(&m->a);
		if (m->offered_pct)
			limit = limit * m->offered_pct / 100 ? limit * m->offered_pct / 100 : 1;
		if (m->demand && m->outstanding + seats > m->demand)
			break;
		if (m->n == MAX_REQS || (m->outstanding && m->outstanding + seats > limit)) {
			held_back = true;
			break;
		}
		struct model_req *r = req_at(m, m->n++);
		uint64_t service = seats > 1 ? m->service_ns * m->wide_factor : m->service_ns;
		m->rng = m->rng * 6364136223846793005ull + 1442695040888963407ull;
		service = service * 3 / 4 + service / 2 * ((m->rng >> 33) % 1001) / 1000;
		*r = (struct model_req){ .sent = m->now, .seats = seats, .service_ns = service };
		m->outstanding += seats;
		fg_adapt_outstanding(&m->a, m->outstanding);
		m->sent_total++;
	}
	if (!m->no_pressure)
		fg_adapt_pressure(&m->a, held_back);
	fg_adapt_tick(&m->a, m->now);
}

/* Run until `until`; the smallest and largest limit seen from `from` on,
 * and the mean (m->mean_limit). */
static void model_run(struct model *m, uint64_t until, uint64_t from, uint32_t *lo, uint32_t *hi)
{
	*lo = UINT32_MAX;
	*hi = 0;
	uint64_t sum = 0, n = 0;
	while (m->now < until) {
		model_step(m);
		if (getenv("FG_TEST_TRACE") && m->now % (100 * MS) == 0)
			fprintf(stderr, "%6.1f L=%u inforce=%u out=%u exec=%u rho=%u rho10=%u floor=%.1f cap=%u why=%s\n", m->now / 1e9, m->a.limit, fg_adapt_in_force(&m->a), m->outstanding, m->executing, m->a.last_rho_milli, m->a.last_rho10_milli, fg_adapt_floor_ns(&m->a, 0) / 1e6, fg_adapt_capacity_estimate(&m->a), fg_adapt_reason_name(m->a.last_reason));
		if (m->now >= from) {
			if (m->a.limit < *lo)
				*lo = m->a.limit;
			if (m->a.limit > *hi)
				*hi = m->a.limit;
			sum += m->a.limit;
			n++;
		}
	}
	m->mean_limit = n ? (double)sum / (double)n : 0;
}

/* After a change: by `by` the limit is within [lo, hi], and stays there
 * until `until`. */
static bool settles_within(struct model *m, uint64_t by, uint64_t until, uint32_t lo, uint32_t hi)
{
	uint32_t min, max;
	model_run(m, by, by, &min, &max);
	bool there = m->a.limit >= lo && m->a.limit <= hi;
	model_run(m, until, by, &min, &max);
	return there && min >= lo && max <= hi;
}

/* Started far above the backend's capacity (serverConcurrencyLimit guessed
 * high), the limit comes down to it and stays near it: no more than 1.5x
 * (what waits in the backend's queue beyond it waits there unfairly), not
 * below it for long (idle seats). */
TEST(finds_capacity_from_above)
{
	static struct model m;
	model_init(&m, 200, 16, 10 * MS);
	uint32_t lo, hi;
	model_run(&m, 10000 * MS, 5000 * MS, &lo, &hi);
	CHECK(lo >= 12);
	CHECK(hi <= 24);
	CHECK(m.a.moves[FG_ADAPT_CUT] > 0);
	CHECK(m.a.moves[FG_ADAPT_PROBED] > 0);
	uint64_t floor = fg_adapt_floor_ns(&m.a, FG_ADAPT_NARROW);
	CHECK(floor >= 9 * MS && floor <= 12 * MS);
}

/* Started far below: it grows to the capacity within seconds. */
TEST(finds_capacity_from_below)
{
	static struct model m;
	model_init(&m, 2, 32, 10 * MS);
	uint32_t lo, hi;
	model_run(&m, 3000 * MS, 0, &lo, &hi);
	CHECK(m.a.limit >= 24);
	model_run(&m, 10000 * MS, 5000 * MS, &lo, &hi);
	CHECK(lo >= 24);
	CHECK(hi <= 48);
	CHECK(m.a.moves[FG_ADAPT_GROW] > 0);
}

/* The capacity triples, then falls back: the limit follows both ways
 * within 3 seconds. */
TEST(follows_a_capacity_step_up_and_down)
{
	static struct model m;
	model_init(&m, 8, 8, 10 * MS);
	uint32_t lo, hi;
	model_run(&m, 8000 * MS, 8000 * MS, &lo, &hi);
	CHECK(m.a.limit >= 6 && m.a.limit <= 12);
	m.capacity = 24;
	CHECK(settles_within(&m, 11000 * MS, 16000 * MS, 18, 36));
	m.capacity = 8;
	CHECK(settles_within(&m, 19000 * MS, 24000 * MS, 6, 12));
}

/* The backend gets three times slower at the same concurrency (a cold
 * cache, a slower disk): that is not load, so the limit must not collapse:
 * a probe measures the new floor and the limit stays near the capacity. */
TEST(a_slower_backend_is_not_load)
{
	static struct model m;
	model_init(&m, 16, 16, 10 * MS);
	uint32_t lo, hi;
	model_run(&m, 8000 * MS, 8000 * MS, &lo, &hi);
	uint32_t before = m.a.limit;
	CHECK(before >= 12);
	m.service_ns = 30 * MS;
	model_run(&m, 16000 * MS, 8000 * MS, &lo, &hi);
	CHECK(lo >= before / 2);
	model_run(&m, 20000 * MS, 16000 * MS, &lo, &hi);
	CHECK(lo >= 12);
	CHECK(hi <= 24);
	uint64_t floor = fg_adapt_floor_ns(&m.a, FG_ADAPT_NARROW);
	CHECK(floor >= 27 * MS && floor <= 35 * MS);
}

/* The backend gets three times faster (a warm cache again): the no-load
 * latency measured before is stale, and rho against it would understate
 * the queueing and let the limit run past the capacity; answers well below
 * it bring a probe, and the limit stays near the capacity. */
TEST(a_faster_backend_brings_a_probe_not_an_overshoot)
{
	static struct model m;
	model_init(&m, 16, 16, 30 * MS);
	uint32_t lo, hi;
	model_run(&m, 8000 * MS, 8000 * MS, &lo, &hi);
	uint64_t probes = m.a.moves[FG_ADAPT_PROBED];
	m.service_ns = 10 * MS;
	model_run(&m, 9500 * MS, 8000 * MS, &lo, &hi);
	CHECK(m.a.moves[FG_ADAPT_PROBED] > probes);
	CHECK(hi <= 24);
	CHECK(settles_within(&m, 10000 * MS, 14000 * MS, 12, 24));
	uint64_t floor = fg_adapt_floor_ns(&m.a, FG_ADAPT_NARROW);
	CHECK(floor >= 9 * MS && floor <= 12 * MS);
}

/* A 300 ms pause (a GC): every answer then comes late at once.  The limit
 * keeps at least half, and is back near the capacity within two seconds. */
TEST(a_pause_does_not_collapse_the_limit)
{
	static struct model m;
	model_init(&m, 16, 16, 10 * MS);
	uint32_t lo, hi;
	model_run(&m, 8000 * MS, 8000 * MS, &lo, &hi);
	uint32_t before = m.a.limit;
	m.paused_until = m.now + 300 * MS;
	model_run(&m, 12000 * MS, 8000 * MS, &lo, &hi);
	CHECK(lo >= before / 2);
	model_run(&m, 14000 * MS, 10000 * MS, &lo, &hi);
	CHECK(lo >= 12);
}

/* One request in ten is a LIST: 10 seats for 20 times as long.  Measured
 * per class and per seat, the mix is not mistaken for queueing: the limit
 * (in seats) stays near the capacity.  It swings more than with one class
 * (a wide request waits at the backend for ten seats to free, and holds up
 * the narrow ones behind it), so the bounds are on the mean. */
TEST(a_slow_wide_class_does_not_drag_the_limit_down)
{
	static struct model m;
	model_init(&m, 40, 40, 10 * MS);
	m.wide_seats = 10;
	m.wide_factor = 20;
	uint32_t lo, hi;
	model_run(&m, 15000 * MS, 8000 * MS, &lo, &hi);
	CHECK(lo >= 20);
	CHECK(hi <= 80);
	CHECK(m.mean_limit >= 30 && m.mean_limit <= 64);
	CHECK(fg_adapt_floor_ns(&m.a, FG_ADAPT_WIDE) >= 200 * MS);
	CHECK(fg_adapt_floor_ns(&m.a, FG_ADAPT_NARROW) <= 11 * MS);
}

/* A limit the load does not use decays towards twice what is used (a
 * burst when the load comes back must not meet a limit the backend was
 * never seen to take), and grows back with the load. */
TEST(an_unused_limit_decays_and_grows_back_with_the_load)
{
	static struct model m;
	model_init(&m, 64, 32, 10 * MS);
	m.demand = 4;
	uint32_t lo, hi;
	model_run(&m, 5000 * MS, 4000 * MS, &lo, &hi);
	CHECK(hi <= 10);
	CHECK(lo >= 4);
	CHECK(m.a.moves[FG_ADAPT_IDLE] > 0);
	m.demand = 0;
	CHECK(settles_within(&m, 8000 * MS, 12000 * MS, 24, 48));
}

/* The levels offer only their part of the limit (idle levels keep theirs):
 * here a quarter of it.  Requests waiting in fairgate for seats keep the
 * limit from decaying, but do not grow it: what the backend was not seen
 * to take is no evidence that it takes more (the pool overbooks the levels
 * instead, test_backendpool); without that pressure it decays to twice
 * what is used, the spiral that starved the levels (4 seats of a 16-seat
 * backend pair, e2e). */
TEST(pressure_keeps_a_limit_the_levels_offer_only_part_of)
{
	static struct model m;
	model_init(&m, 8, 16, 10 * MS);
	m.offered_pct = 25;
	uint32_t lo, hi;
	model_run(&m, 15000 * MS, 8000 * MS, &lo, &hi);
	CHECK(lo >= 8 && hi <= 8);
	m.no_pressure = true;
	fg_adapt_pressure(&m.a, false);
	model_run(&m, 25000 * MS, 25000 * MS, &lo, &hi);
	CHECK(m.a.limit < 8);
}

/* A trace recorded from the backend emulator (8 requests at once,
 * log-normal service times of median 20 ms; tests/data/
 * record_adaptlimit_trace.py), the closed loop's concurrency stepping
 * 4 -> 16 -> 4 -> 8 (2 s, 3 s, 3 s, 2 s), replayed as it came: the answers
 * at their times, the seats outstanding when each was sent, the clock
 * ticking every 10 ms.  The replay is open-loop (the recorded client did
 * not obey the limit), so it checks what the controller measures of a real
 * backend and what it decides, not the loop: the no-load latency is the
 * service time, the capacity estimate the backend's 8, a cut while twice
 * the capacity is outstanding and never while at most the capacity is. */
struct trace_row {
	uint64_t t_ns, latency_ns;
	uint32_t seats, outstanding;
};

TEST(a_recorded_emulator_trace)
{
	FILE *f = fopen(TESTS_DATA_DIR "/adaptlimit_emulator_trace.csv", "r");
	CHECK(f != NULL);
	if (!f)
		return;
	static struct trace_row rows[20000];
	unsigned n = 0;
	char line[128];
	while (fgets(line, sizeof(line), f) && n < sizeof(rows) / sizeof(rows[0])) {
		unsigned long long t, lat;
		unsigned seats, out;
		if (sscanf(line, "%llu,%u,%llu,%u", &t, &seats, &lat, &out) == 4)
			rows[n++] = (struct trace_row){ 100 * MS + t * 1000, lat * 1000, seats, out };
	}
	fclose(f);
	CHECK(n > 1000);
	struct fg_adapt a;
	fg_adapt_init(&a, 16, 1, 1000, 0, 0);
	/* The phases' ends on the trace's clock (the 100 ms offset above). */
	const uint64_t ends[4] = { 2100 * MS, 5100 * MS, 8100 * MS, 10100 * MS };
	uint64_t cuts_at_end[4] = { 0 }, now = 0;
	uint32_t capacity_in_2 = 0, limit_end_2 = 0;
	uint64_t noload_end_1 = 0;
	unsigned phase = 0;
	for (unsigned k = 0; k < n; k++) {
		while (now + 10 * MS <= rows[k].t_ns) {
			now += 10 * MS;
			fg_adapt_tick(&a, now);
			if (phase < 4 && now >= ends[phase]) {
				cuts_at_end[phase] = a.moves[FG_ADAPT_CUT];
				if (phase == 0)
					noload_end_1 = fg_adapt_noload_ns(&a, FG_ADAPT_NARROW);
				if (phase == 1) {
					capacity_in_2 = fg_adapt_capacity_estimate(&a);
					limit_end_2 = a.limit;
				}
				phase++;
			}
		}
		fg_adapt_outstanding(&a, rows[k].outstanding);
		fg_adapt_answer(&a, rows[k].latency_ns, rows[k].seats, rows[k].t_ns);
	}
	if (phase < 4)
		cuts_at_end[3] = a.moves[FG_ADAPT_CUT];
	if (getenv("FG_TEST_TRACE"))
		fprintf(stderr, "noload %.1f ms, capacity %u, limit %u, cuts %llu %llu %llu %llu\n", noload_end_1 / 1e6,
			capacity_in_2, limit_end_2, (unsigned long long)cuts_at_end[0], (unsigned long long)cuts_at_end[1],
			(unsigned long long)cuts_at_end[2], (unsigned long long)cuts_at_end[3]);
	CHECK(noload_end_1 >= 18 * MS && noload_end_1 <= 30 * MS); /* the service time, and loopback's */
	CHECK_EQ(cuts_at_end[0], 0);                                /* 4 outstanding: no cut */
	CHECK(cuts_at_end[1] >= 1);                                 /* 16 on 8: cut */
	CHECK(capacity_in_2 >= 6 && capacity_in_2 <= 10);           /* the backend's 8 */
	CHECK(limit_end_2 <= 10 && limit_end_2 >= 4);               /* near it, not under half of it */
	CHECK_EQ(cuts_at_end[2], cuts_at_end[1]);                   /* 4 again: no cut */
	CHECK_EQ(cuts_at_end[3], cuts_at_end[2]);                   /* 8, the capacity: no cut */
}

/* Timeouts cut by a tenth, at most once per interval; the bounds hold. */
TEST(timeouts_cut_once_per_interval_within_the_bounds)
{
	struct fg_adapt a;
	fg_adapt_init(&a, 100, 10, 200, 0, 0);
	CHECK(fg_adapt_timeout(&a, 1 * MS));
	CHECK_EQ(a.limit, 90);
	CHECK(!fg_adapt_timeout(&a, 2 * MS));
	CHECK_EQ(a.limit, 90);
	CHECK_EQ(a.last_reason, FG_ADAPT_TIMEOUT);
	for (uint64_t t = 0; a.limit > 10 && t < 1000; t++) {
		/* A new interval each time (enough answers to decide). */
		for (uint32_t k = 0; k < FG_ADAPT_MIN_SAMPLES; k++)
			fg_adapt_answer(&a, 10 * MS, 1, (t + 1) * 200 * MS);
		fg_adapt_tick(&a, (t + 1) * 200 * MS + 1);
		fg_adapt_timeout(&a, (t + 1) * 200 * MS + 2);
	}
	CHECK_EQ(a.limit, 10);
	fg_adapt_set_bounds(&a, 20, 30);
	CHECK_EQ(a.limit, 20);
	fg_adapt_set_bounds(&a, 0, 0);
	CHECK_EQ(a.min, 1);
	CHECK_EQ(a.max, 1);
	CHECK_EQ(a.limit, 1);
	CHECK_STR(fg_adapt_reason_name(FG_ADAPT_PROBED), "probed");
	CHECK_STR(fg_adapt_reason_name(99), "?");
}

TEST_MAIN
