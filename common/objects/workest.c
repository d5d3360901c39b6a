/* SPDX-License-Identifier: Apache-2.0 */
/* workest — Kubernetes' work estimators on fairgate's header; see workest.h. */
#include "workest.h"

#include <string.h>

enum verb_kind { VERB_OTHER, VERB_LIST, VERB_MUTATING };

/* By length first: most requests (get) are told apart without a compare. */
static enum verb_kind verb_kind(struct fg_str v)
{
	if (!v.ptr)
		return VERB_OTHER;
	switch (v.len) {
	case 4:
		return !memcmp(v.ptr, "list", 4) ? VERB_LIST : VERB_OTHER;
	case 5:
		return !memcmp(v.ptr, "watch", 5) ? VERB_LIST : !memcmp(v.ptr, "patch", 5) ? VERB_MUTATING : VERB_OTHER;
	case 6:
		return !memcmp(v.ptr, "create", 6) || !memcmp(v.ptr, "update", 6) || !memcmp(v.ptr, "delete", 6)
			       ? VERB_MUTATING : VERB_OTHER;
	default:
		return VERB_OTHER;
	}
}

static uint32_t clamp(uint64_t v, uint32_t lo, uint32_t hi)
{
	return v < lo ? lo : v > hi ? hi : (uint32_t)v;
}

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

void fg_work_estimate(struct fg_str verb, const struct fg_hdr *hint, bool trusted, uint32_t level_cap,
		      uint64_t max_extra_latency_ns, struct fg_work *out)
{
	if (!trusted) {
		*out = (struct fg_work){ .initial_seats = 1, .verb_class = (uint8_t)fg_verb_class_of(verb.ptr, verb.len) };
		return;
	}
	uint32_t cap = level_cap && level_cap < FG_WORK_MAX_SEATS ? level_cap : FG_WORK_MAX_SEATS;
	uint32_t initial = 1, final = 0;
	uint64_t extra = 0;
	enum verb_kind kind = verb_kind(verb);
	if (kind == VERB_LIST) {
		/* Count-based LIST estimate: the work hint is the object count. */
		initial = clamp(div_up(hint->work_hint, FG_WORK_OBJECTS_PER_SEAT), 1, cap);
	} else if (kind == VERB_MUTATING) {
		/* Mutating: the work hint is the watchers to notify; their work
		 * is kept over the capped final seats as a longer latency. */
		uint64_t watchers = hint->work_hint;
		if (watchers >= FG_WORK_WATCHES_PER_SEAT) {
			uint64_t seats = div_up(watchers, FG_WORK_WATCHES_PER_SEAT);
			uint64_t final_work = seats * FG_WORK_EVENT_NS;
			final = clamp(seats, 1, cap);
			extra = final_work / final;
		}
	}
	/* Explicit hints choose inside the same bounds, never beyond. */
	if (hint->seats)
		initial = clamp(hint->seats, 1, cap);
	if (hint->final_seats || hint->extra_latency_us) {
		final = clamp(hint->final_seats, 0, cap);
		extra = (uint64_t)hint->extra_latency_us * 1000;
	}
	if (extra > max_extra_latency_ns)
		extra = max_extra_latency_ns;
	out->initial_seats = (uint16_t)initial;
	out->final_seats = (uint16_t)(extra ? final : 0);
	out->extra_latency_ns = final ? extra : 0;
	out->verb_class = (uint8_t)fg_verb_class_of(verb.ptr, verb.len);
}
