/* SPDX-License-Identifier: Apache-2.0 */
/*
 * retryafter — one priority level's adaptive Retry-After, Kubernetes'
 * dropped-requests tracker (docs/apf-facts.md §6.3): the hint starts at 1 s; on the
 * first drop of each new second it is recomputed from the drops of the last
 * `retry-after` seconds: doubled (at most FG_RETRY_AFTER_MAX_S) when they
 * are at least 3 × retry-after and retry-after seconds have passed since the
 * last increase, otherwise lowered by one when they are fewer than
 * retry-after.  A drop is a REJECT of the level for queue-full,
 * concurrency-limit or time-out (Kubernetes' 429s).
 *
 * Each worker tracks its own part of a level's drops (no shared state on the
 * fast path); with several workers a level's hint is per worker.
 *
 * Invariant: 1 <= retry_after_s <= FG_RETRY_AFTER_MAX_S; the history holds at
 * most one entry per second of the window, so FG_RETRY_AFTER_HISTORY bounds it.
 *
 * Thread contract: one owner (a worker); time is passed in.
 */
#ifndef FG_RETRYAFTER_H
#define FG_RETRYAFTER_H

#include <stdint.h>

#define FG_RETRY_AFTER_MAX_S 32u
#define FG_RETRY_AFTER_HISTORY (FG_RETRY_AFTER_MAX_S + 2u) /* the window's seconds, ends included */

struct fg_retry_after {
	uint32_t retry_after_s;
	uint32_t head, n;          /* ring of the seconds with drops, oldest at head */
	uint64_t increased_s;      /* when retry_after_s was last doubled */
	struct {
		uint64_t second;
		uint64_t drops;
	} hist[FG_RETRY_AFTER_HISTORY];
};

void fg_retry_after_init(struct fg_retry_after *t, uint64_t now_s);

/* A drop at now_s (non-decreasing); returns the hint in seconds. */
uint32_t fg_retry_after_drop(struct fg_retry_after *t, uint64_t now_s);

#endif
