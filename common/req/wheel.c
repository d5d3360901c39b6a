/* SPDX-License-Identifier: Apache-2.0 */
/* wheel — the hashed timing wheel; see wheel.h. */
#include "wheel.h"

#define SLOT_MASK (FG_WHEEL_SLOTS - 1u)

void fg_wheel_init(struct fg_wheel *wh, uint64_t now_ns)
{
	for (uint32_t s = 0; s < FG_WHEEL_SLOTS; s++)
		fg_reqlist_init(&wh->slot[s]);
	wh->tick = now_ns >> FG_WHEEL_TICK_SHIFT;
	wh->count = 0;
}

void fg_wheel_add(struct fg_wheel *wh, struct fg_reqtable *t, uint32_t i)
{
	uint64_t tick = t->slots[i].release_ns >> FG_WHEEL_TICK_SHIFT;
	if (tick < wh->tick)
		tick = wh->tick; /* already due: released at the next tick */
	fg_reqlist_push_tail(t, &wh->slot[tick & SLOT_MASK], i);
	wh->count++;
}

/* Release what in one slot is due before `before`. */
static void expire_slot(struct fg_wheel *wh, struct fg_reqtable *t, struct fg_reqlist *l, uint64_t before,
			void (*expired)(void *ctx, uint32_t i), void *ctx)
{
	for (uint32_t i = l->head; i != FG_REQ_NIL;) {
		uint32_t next = t->slots[i].next;
		if (t->slots[i].release_ns < before) {
			fg_reqlist_remove(t, l, i);
			wh->count--;
			expired(ctx, i);
		}
		i = next;
	}
}

void fg_wheel_expire(struct fg_wheel *wh, struct fg_reqtable *t, uint64_t now_ns,
		     void (*expired)(void *ctx, uint32_t i), void *ctx)
{
	uint64_t now_tick = now_ns >> FG_WHEEL_TICK_SHIFT;
	if (now_tick <= wh->tick)
		return;
	if (!wh->count || now_tick - wh->tick > FG_WHEEL_SLOTS) {
		/* Idle, or a whole turn passed: one visit of each slot. */
		for (uint32_t s = 0; wh->count && s < FG_WHEEL_SLOTS; s++)
			expire_slot(wh, t, &wh->slot[s], now_tick << FG_WHEEL_TICK_SHIFT, expired, ctx);
		wh->tick = now_tick;
		return;
	}
	/* Each passed tick: its slot's entries of this turn are due. */
	for (; wh->tick < now_tick; wh->tick++)
		if (wh->slot[wh->tick & SLOT_MASK].count)
			expire_slot(wh, t, &wh->slot[wh->tick & SLOT_MASK], (wh->tick + 1) << FG_WHEEL_TICK_SHIFT,
				    expired, ctx);
}

void fg_wheel_expire_if(struct fg_wheel *wh, struct fg_reqtable *t, int (*match)(void *ctx, uint32_t i),
			void (*expired)(void *ctx, uint32_t i), void *ctx)
{
	for (uint32_t s = 0; wh->count && s < FG_WHEEL_SLOTS; s++) {
		struct fg_reqlist *l = &wh->slot[s];
		for (uint32_t i = l->head; i != FG_REQ_NIL;) {
			uint32_t next = t->slots[i].next;
			if (match(ctx, i)) {
				fg_reqlist_remove(t, l, i);
				wh->count--;
				expired(ctx, i);
			}
			i = next;
		}
	}
}

uint64_t fg_wheel_next(const struct fg_wheel *wh)
{
	if (!wh->count)
		return UINT64_MAX;
	for (uint64_t k = 0; k < FG_WHEEL_SLOTS; k++)
		if (wh->slot[(wh->tick + k) & SLOT_MASK].count)
			return (wh->tick + k + 1) << FG_WHEEL_TICK_SHIFT;
	return UINT64_MAX; /* not reached: count > 0 means some slot holds one */
}
