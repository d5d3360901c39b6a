/* SPDX-License-Identifier: Apache-2.0 */
/* adaptlimit — an adaptive concurrency limit for one backend; see adaptlimit.h. */
#include "adaptlimit.h"

#include <string.h>

#define RHO_BASE_MILLI 400u /* the first bucket's lower edge */
#define RHO_STEP_MILLI 50u
#define RHO_LAST_MILLI 2600u /* what the last bucket stands for */
#define BAND_LOW_MILLI 1050u  /* grow below */
#define BAND_HIGH_MILLI 1200u /* cut above, two intervals in a row */
#define SLOW_FLOOR_MILLI 1500u
#define SLOW_FLOOR_INTERVALS 3u
#define FAST_FLOOR_INTERVALS 2u

static const char *const reason_names[FG_ADAPT_REASONS] = {
	"start", "hold", "grow", "cut", "timeout", "probe", "probed", "idle",
};

const char *fg_adapt_reason_name(unsigned reason)
{
	return reason < FG_ADAPT_REASONS ? reason_names[reason] : "?";
}

static uint32_t clamp_u32(uint32_t v, uint32_t lo, uint32_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static void start_interval(struct fg_adapt *a, uint64_t now)
{
	a->interval_start = now;
	a->timed_out = false;
	a->samples = 0;
	a->seats = a->latency_seat_ns = a->floor_seat_ns = 0;
	a->peak_outstanding = 0;
	memset(a->ratio_seats, 0, sizeof(a->ratio_seats));
}

void fg_adapt_init(struct fg_adapt *a, uint32_t start, uint32_t min, uint32_t max, uint32_t phase, uint64_t now)
{
	memset(a, 0, sizeof(*a));
	a->phase = phase % FG_ADAPT_PROBE_PHASES;
	a->limit = a->start = start;
	fg_adapt_set_bounds(a, min, max);
	a->bucket_epoch = now / FG_ADAPT_FLOOR_BUCKET_NS;
	start_interval(a, now);
}

void fg_adapt_set_bounds(struct fg_adapt *a, uint32_t min, uint32_t max)
{
	a->min = min ? min : 1;
	a->max = max < a->min ? a->min : max;
	a->limit = clamp_u32(a->limit, a->min, a->max);
}

void fg_adapt_restart(struct fg_adapt *a, uint32_t start)
{
	if (start == a->start)
		return;
	a->start = start;
	a->limit = clamp_u32(start, a->min, a->max);
}

/* Move the floors' window to now's bucket, emptying the buckets it passes. */
static void slide_floors(struct fg_adapt *a, uint64_t now)
{
	uint64_t epoch = now / FG_ADAPT_FLOOR_BUCKET_NS;
	if (epoch <= a->bucket_epoch)
		return;
	uint64_t steps = epoch - a->bucket_epoch;
	if (steps > FG_ADAPT_FLOOR_BUCKETS)
		steps = FG_ADAPT_FLOOR_BUCKETS;
	for (uint64_t k = 1; k <= steps; k++)
		for (unsigned c = 0; c < FG_ADAPT_CLASSES; c++)
			a->floor_bucket[c][(a->bucket_epoch + k) % FG_ADAPT_FLOOR_BUCKETS] = 0;
	a->bucket_epoch = epoch;
}

/* The smallest latency of a class over the window (0: none). */
static uint64_t windowed_min(const struct fg_adapt *a, enum fg_adapt_class c)
{
	uint64_t floor = 0;
	for (unsigned i = 0; i < FG_ADAPT_FLOOR_BUCKETS; i++) {
		uint64_t v = a->floor_bucket[c][i];
		if (v && (!floor || v < floor))
			floor = v;
	}
	return floor;
}

uint64_t fg_adapt_floor_ns(const struct fg_adapt *a, enum fg_adapt_class c)
{
	return a->noload_ns[c] ? a->noload_ns[c] : windowed_min(a, c);
}

uint32_t fg_adapt_capacity_estimate(const struct fg_adapt *a)
{
	uint64_t best = 0;
	for (unsigned i = 0; i < FG_ADAPT_HISTORY; i++)
		if (a->capacity_milli[i] > best)
			best = a->capacity_milli[i];
	return (uint32_t)(best / 1000 > UINT32_MAX ? UINT32_MAX : best / 1000);
}

void fg_adapt_answer(struct fg_adapt *a, uint64_t latency_ns, uint32_t seats, uint64_t now)
{
	if (!latency_ns)
		latency_ns = 1; /* a virtual clock can answer at once */
	if (!seats)
		seats = 1;
	enum fg_adapt_class c = seats > 1 ? FG_ADAPT_WIDE : FG_ADAPT_NARROW;
	slide_floors(a, now);
	uint64_t *bucket = &a->floor_bucket[c][a->bucket_epoch % FG_ADAPT_FLOOR_BUCKETS];
	if (!*bucket || latency_ns < *bucket)
		*bucket = latency_ns;
	uint64_t floor = fg_adapt_floor_ns(a, c);
	if (a->probing) {
		/* Only requests sent during the probe found the backend near empty. */
		if (now - latency_ns >= a->probe_start) {
			a->probe_sum_ns[c] += latency_ns;
			if (!a->probe_n[c]++ || latency_ns < a->probe_min_ns[c])
				a->probe_min_ns[c] = latency_ns;
			a->probe_samples++;
		}
		return;
	}
	uint64_t rho_milli = latency_ns * 1000 / floor;
	uint64_t bucket_i = rho_milli > RHO_BASE_MILLI ? (rho_milli - RHO_BASE_MILLI) / RHO_STEP_MILLI : 0;
	a->ratio_seats[bucket_i < FG_ADAPT_RATIO_BUCKETS ? bucket_i : FG_ADAPT_RATIO_BUCKETS - 1] += seats;
	a->samples++;
	a->seats += seats;
	a->latency_seat_ns += latency_ns * seats;
	a->floor_seat_ns += floor * seats;
}

/* The seat-weighted quantile q (per mille) of this interval's rho, milli. */
static uint32_t rho_quantile(const struct fg_adapt *a, uint64_t q_milli)
{
	uint64_t want = (a->seats * q_milli + 999) / 1000, seen = 0;
	for (unsigned i = 0; i < FG_ADAPT_RATIO_BUCKETS; i++) {
		seen += a->ratio_seats[i];
		if (seen >= want && seen)
			return i == FG_ADAPT_RATIO_BUCKETS - 1 ? RHO_LAST_MILLI
							       : RHO_BASE_MILLI + RHO_STEP_MILLI * i + RHO_STEP_MILLI / 2;
	}
	return RHO_LAST_MILLI;
}

static uint32_t isqrt(uint32_t v)
{
	uint32_t r = 0;
	while ((uint64_t)(r + 1) * (r + 1) <= v)
		r++;
	return r;
}

static bool move_limit(struct fg_adapt *a, uint32_t limit, enum fg_adapt_reason why)
{
	uint32_t was = fg_adapt_in_force(a);
	a->limit = clamp_u32(limit, a->min, a->max);
	a->last_reason = (uint8_t)(a->limit == was ? FG_ADAPT_HOLD : why);
	a->moves[a->last_reason]++;
	return fg_adapt_in_force(a) != was;
}

bool fg_adapt_timeout(struct fg_adapt *a, uint64_t now)
{
	(void)now;
	if (a->timed_out || a->probing)
		return false;
	a->timed_out = true;
	return move_limit(a, (uint32_t)((uint64_t)a->limit * 9 / 10), FG_ADAPT_TIMEOUT);
}

static bool probe_due(const struct fg_adapt *a, uint64_t now)
{
	/* A backend without answers now has nothing to measure. */
	uint64_t every = (uint64_t)FG_ADAPT_PROBE_SPACING * a->last_probe_ns;
	if (every < FG_ADAPT_PROBE_AFTER_NS)
		every = FG_ADAPT_PROBE_AFTER_NS;
	bool stale = (!a->moves[FG_ADAPT_PROBED] || now - a->floors_since >= every) && a->samples;
	bool slow = a->slow_floor >= SLOW_FLOOR_INTERVALS, fast = a->fast_floor >= FAST_FLOOR_INTERVALS;
	return (stale || slow || fast) && (now / FG_ADAPT_PROBE_SLOT_NS) % FG_ADAPT_PROBE_PHASES == a->phase;
}

static bool start_probe(struct fg_adapt *a, uint64_t now)
{
	uint32_t was = fg_adapt_in_force(a);
	a->probing = true;
	a->probe_seats = a->moves[FG_ADAPT_PROBED] ? clamp_u32(a->limit / 4, a->min, a->limit) : a->min;
	a->probe_start = now;
	/* Long enough for what is outstanding to drain and a few to answer:
	 * this interval's answers say how long that takes too (before the
	 * first decision, from a start far above what the backend executes,
	 * they are all it knows of its queue). */
	uint64_t longest = a->last_latency_ns;
	if (a->seats && a->latency_seat_ns / a->seats > longest)
		longest = a->latency_seat_ns / a->seats;
	for (unsigned c = 0; c < FG_ADAPT_CLASSES; c++)
		if (fg_adapt_floor_ns(a, c) > longest)
			longest = fg_adapt_floor_ns(a, c);
	uint64_t drain = 2 * longest > FG_ADAPT_PROBE_MIN_NS / 2 ? 2 * longest : FG_ADAPT_PROBE_MIN_NS / 2;
	a->probe_enough_at = now + drain;
	a->probe_until = now + 2 * drain;
	memset(a->probe_sum_ns, 0, sizeof(a->probe_sum_ns));
	memset(a->probe_n, 0, sizeof(a->probe_n));
	a->probe_samples = 0;
	a->last_reason = FG_ADAPT_PROBE;
	a->moves[FG_ADAPT_PROBE]++;
	return fg_adapt_in_force(a) != was;
}

static bool end_probe(struct fg_adapt *a, uint64_t now)
{
	uint32_t was = fg_adapt_in_force(a);
	if (!a->probe_samples) {
		/* Nothing sent during it answered: it measured nothing, and is
		 * due again at the next slot. */
		a->probing = false;
		a->last_reason = FG_ADAPT_HOLD;
		start_interval(a, now);
		return fg_adapt_in_force(a) != was;
	}
	for (unsigned c = 0; c < FG_ADAPT_CLASSES; c++)
		if (a->probe_n[c]) {
			a->noload_ns[c] = a->probe_sum_ns[c] / a->probe_n[c];
			/* How far below its mean the fastest no-load answer came:
			 * what rho10 is at no load (the service times' spread). */
			if (c == FG_ADAPT_NARROW || !a->probe_n[FG_ADAPT_NARROW])
				a->noload_rho10_milli = (uint32_t)(a->probe_min_ns[c] * 1000 / a->noload_ns[c]);
		}
	a->probing = false;
	a->last_probe_ns = now - a->probe_start;
	a->floors_since = now;
	a->cuts_pending = a->slow_floor = a->fast_floor = 0;
	a->last_reason = FG_ADAPT_PROBED;
	a->moves[FG_ADAPT_PROBED]++;
	start_interval(a, now);
	return fg_adapt_in_force(a) != was;
}

/* The limit went unused (less than half of it outstanding at the most):
 * it decays towards twice what was used, as TCP's congestion window
 * validation does (RFC 7661), so that a limit never tested against the
 * backend — a quiet worker's part, a quiet hour — cannot send a burst the
 * backend was never seen to take when the load comes back. */
static bool decay_unused(struct fg_adapt *a, uint32_t peak)
{
	if ((uint64_t)peak * 2 >= a->limit || a->pressed)
		return move_limit(a, a->limit, FG_ADAPT_HOLD);
	uint32_t keep = a->limit - a->limit / 4;
	return move_limit(a, peak * 2 > keep ? peak * 2 : keep, FG_ADAPT_IDLE);
}

/* An interval with enough answers is over: the dead band decides. */
static bool decide(struct fg_adapt *a, uint64_t now)
{
	uint64_t len = now - a->interval_start;
	/* The mean queueing ratio: at saturation, the seats outstanding over
	 * the seats the backend executes at once (Little's law). */
	uint32_t rho = a->floor_seat_ns ? (uint32_t)(a->latency_seat_ns * 1000 / a->floor_seat_ns) : 1000;
	uint32_t rho10 = rho_quantile(a, 100);
	a->last_rho_milli = rho;
	a->last_rho10_milli = rho10;
	a->last_latency_ns = a->latency_seat_ns / a->seats;
	a->capacity_milli[a->history_at++ % FG_ADAPT_HISTORY] = len ? a->floor_seat_ns * 1000 / len : 0;
	uint32_t peak = a->peak_outstanding, limit = a->limit;
	/* A probe just measured the floors: slowness since is load. */
	bool floors_fresh = now - a->floors_since < FG_ADAPT_PROBE_FRESH_NS && a->moves[FG_ADAPT_PROBED];
	a->cuts_pending = rho > BAND_HIGH_MILLI ? (uint8_t)(a->cuts_pending + 1) : 0;
	a->slow_floor = rho10 > SLOW_FLOOR_MILLI && !floors_fresh ? (uint8_t)(a->slow_floor + 1) : 0;
	/* Answers well faster than a no-load one: the backend got faster and
	 * the no-load latency is stale, so rho understates the queueing. */
	a->fast_floor = (uint64_t)rho10 * 4 < (uint64_t)a->noload_rho10_milli * 3 ? (uint8_t)(a->fast_floor + 1) : 0;
	start_interval(a, now);
	if (a->slow_floor) /* even the fastest answers are slow: probe before cutting */
		return move_limit(a, limit, FG_ADAPT_HOLD);
	if (a->cuts_pending >= 2) {
		a->cuts_pending = 0;
		uint64_t factor = (uint64_t)BAND_LOW_MILLI * 1000 / rho;
		if (factor < 500)
			factor = 500;
		uint32_t cut = (uint32_t)((uint64_t)limit * factor / 1000);
		uint32_t keep = fg_adapt_capacity_estimate(a) / 2;
		return move_limit(a, cut > keep ? cut : keep < limit ? keep : limit, FG_ADAPT_CUT);
	}
	if (rho < BAND_LOW_MILLI && !a->fast_floor && (uint64_t)peak * 5 >= (uint64_t)limit * 4) {
		uint32_t step = isqrt(limit);
		if (step > limit / 4)
			step = limit / 4;
		if (step < 1)
			step = 1;
		return move_limit(a, limit > UINT32_MAX - step ? UINT32_MAX : limit + step, FG_ADAPT_GROW);
	}
	return decay_unused(a, peak);
}

bool fg_adapt_tick(struct fg_adapt *a, uint64_t now)
{
	if (now < a->interval_start)
		return false;
	if (a->probing)
		return now >= a->probe_until || a->probe_samples >= FG_ADAPT_PROBE_SAMPLES ||
				       (now >= a->probe_enough_at && a->probe_samples >= FG_ADAPT_PROBE_FEW)
			       ? end_probe(a, now)
			       : false;
	if (probe_due(a, now))
		return start_probe(a, now);
	if (now - a->interval_start < FG_ADAPT_INTERVAL_NS)
		return false;
	/* Nothing to judge against before a probe measured the no-load latency
	 * (the smallest latency seen is no measure of it: it is one lucky
	 * answer, and every answer may have queued). */
	if (a->samples < FG_ADAPT_MIN_SAMPLES || !a->moves[FG_ADAPT_PROBED]) {
		/* Too few answers to judge: wait longer, but not for ever (a
		 * quiet backend's stale answers say nothing of it now). */
		if (now - a->interval_start < FG_ADAPT_MAX_STRETCH * FG_ADAPT_INTERVAL_NS)
			return false;
		uint32_t peak = a->peak_outstanding;
		start_interval(a, now);
		return decay_unused(a, peak);
	}
	return decide(a, now);
}
