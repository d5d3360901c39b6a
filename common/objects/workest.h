/* SPDX-License-Identifier: Apache-2.0 */
/*
 * workest — the server's estimate of a request's work: initial seats, final
 * seats and extra latency (KEP-1040 "Width of the request", docs/apf-facts.md §5).
 *
 * A client's header carries hints (seats, final seats, extra latency, and a
 * work hint: a LIST's object count or a mutating request's watcher count).
 * Nothing in it is trusted: the estimate follows Kubernetes' estimators from
 * the verb and the work hint, and the explicit hints may only choose a value
 * inside the same bounds:
 *   - every width is in [1, cap] (final seats in [0, cap]), cap being the
 *     level's per-request cap (fg_fc_level.max_seats: maxSeats for queuing
 *     levels, the limit for Reject levels, FG_EXEMPT_MAX_SEATS for Exempt)
 *     and never more than FG_WORK_MAX_SEATS;
 *   - extra latency is at most max_extra_latency_ns (setting
 *     maxExtraLatency) and is never stretched.
 * Requests from untrusted sources (common/edge/trust.h) carry claims nobody
 * vouches for, work hint included: they take one seat, no final seats.  So a
 * header from a trusted source costs at most cap seats for (service time +
 * maxExtraLatency), and one from anywhere else a single seat.
 *
 * Thread contract: pure functions; call from any thread.
 */
#ifndef FG_WORKEST_H
#define FG_WORKEST_H

#include <stdbool.h>
#include <stdint.h>

#include "classguess.h"
#include "proto.h"

#define FG_WORK_OBJECTS_PER_SEAT 100u    /* Kubernetes' objectsPerSeat (count-based LIST estimate) */
#define FG_WORK_WATCHES_PER_SEAT 10u     /* watchesPerSeat */
#define FG_WORK_EVENT_NS 5000000ull      /* eventAdditionalDuration, 5 ms per watcher notified */
#define FG_WORK_MAX_SEATS 10u            /* MaximumListSeatsLimit (count-based) = MaximumMutatingSeatsLimit */
#define FG_EXEMPT_MAX_SEATS FG_WORK_MAX_SEATS /* exempt requests are never refused; their accounting is capped */

struct fg_work {
	uint16_t initial_seats; /* >= 1 */
	uint16_t final_seats;   /* seats held during the extra latency; 0 = none */
	uint8_t verb_class;     /* enum fg_verb_class (classguess.h): its service-time estimate's class */
	uint64_t extra_latency_ns;
};

/*
 * The work of a request with this verb (may be absent) and header hints, in
 * a level whose per-request cap is level_cap (0: FG_WORK_MAX_SEATS); from an
 * untrusted source (trusted false) one seat whatever it says.
 */
void fg_work_estimate(struct fg_str verb, const struct fg_hdr *hint, bool trusted, uint32_t level_cap,
		      uint64_t max_extra_latency_ns, struct fg_work *out);

#endif
