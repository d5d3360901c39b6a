/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wheel — a hashed timing wheel of requests by release time (their
 * release_ns), linked through the request table's list links: O(1) to add,
 * O(1) per expiry plus one visit per slot per tick (ticks of
 * 2^FG_WHEEL_TICK_SHIFT ns, FG_WHEEL_SLOTS slots: a request due beyond one turn
 * (about 67 ms) stays in its slot and is passed over once per turn).
 * A request is released at the first expiry call after the tick that holds
 * its release time has passed: never early, at most one tick late.
 *
 * Thread contract: single owner (one worker).
 */
#ifndef FG_WHEEL_H
#define FG_WHEEL_H

#include <stdint.h>

#include "reqtable.h"

#define FG_WHEEL_TICK_SHIFT 16u  /* 65 536 ns ticks */
#define FG_WHEEL_SLOTS 1024u     /* a power of two */

struct fg_wheel {
	struct fg_reqlist slot[FG_WHEEL_SLOTS];
	uint64_t tick;   /* the first tick not yet passed over */
	uint32_t count;
};

void fg_wheel_init(struct fg_wheel *wh, uint64_t now_ns);

/* Add request i (its release_ns is set); it must be on no other list. */
void fg_wheel_add(struct fg_wheel *wh, struct fg_reqtable *t, uint32_t i);

/* Unlink every request due by now_ns and hand it to expired(ctx, i), which
 * may reuse its links.  now_ns = UINT64_MAX releases everything. */
void fg_wheel_expire(struct fg_wheel *wh, struct fg_reqtable *t, uint64_t now_ns,
		     void (*expired)(void *ctx, uint32_t i), void *ctx);

/* Unlink every request for which match(ctx, i) holds, whenever it is due,
 * and hand it to expired(ctx, i).  O(slots + entries): for rare events
 * (a level shrinking or going away), not per request. */
void fg_wheel_expire_if(struct fg_wheel *wh, struct fg_reqtable *t, int (*match)(void *ctx, uint32_t i),
			void (*expired)(void *ctx, uint32_t i), void *ctx);

/* A time at or before which nothing is released (UINT64_MAX when empty). */
uint64_t fg_wheel_next(const struct fg_wheel *wh);

#endif
