/* SPDX-License-Identifier: Apache-2.0 */
/* backendpool — see backendpool.h. */
#include "backendpool.h"

#include <string.h>

void fg_backendpool_init(struct fg_backendpool *p, uint32_t n, uint32_t eject_after, uint64_t eject_ns,
			 uint64_t max_eject_ns)
{
	memset(p, 0, sizeof(*p));
	p->n = n > FG_MAX_BACKENDS ? FG_MAX_BACKENDS : n;
	p->eject_after = eject_after ? eject_after : 1;
	p->base_eject_ns = eject_ns;
	p->max_eject_ns = max_eject_ns > eject_ns ? max_eject_ns : eject_ns;
}

void fg_backendpool_set_ejection(struct fg_backendpool *p, uint32_t eject_after, uint64_t eject_ns,
				 uint64_t max_eject_ns)
{
	p->eject_after = eject_after ? eject_after : 1;
	p->base_eject_ns = eject_ns;
	p->max_eject_ns = max_eject_ns;
}

void fg_backendpool_resize(struct fg_backendpool *p, uint32_t n)
{
	if (n != p->n) {
		struct fg_backend_shared *shared = p->shared;
		fg_backendpool_init(p, n, p->eject_after, p->base_eject_ns, p->max_eject_ns);
		p->shared = shared;
	}
}

/* Another worker ejected backend i: eject it here too, for the same time. */
static inline void follow_shared(const struct fg_backendpool *p, uint32_t i, struct fg_backend *b, uint64_t now)
{
	if (!p->shared || b->state != FG_BACKEND_UP)
		return;
	uint64_t until = __atomic_load_n(&p->shared[i].down_until, __ATOMIC_RELAXED);
	if (now < until) {
		b->state = FG_BACKEND_EJECTED;
		b->until_ns = until;
		b->eject_ns = p->base_eject_ns;
		b->probe_in_flight = false;
	}
}

void fg_backendpool_set_capacity(struct fg_backendpool *p, uint32_t i, uint32_t seats)
{
	if (i < p->n)
		p->b[i].capacity = seats;
}

/* Room for `seats` more; a request wider than the whole capacity runs alone. */
static inline bool has_room(const struct fg_backend *b, uint32_t seats)
{
	return !b->capacity || b->outstanding + seats <= b->capacity || (!b->outstanding && seats > b->capacity);
}

/* Ejected backends whose time is up become probe candidates. */
static inline bool available(struct fg_backend *b, uint64_t now)
{
	if (b->state == FG_BACKEND_EJECTED && now >= b->until_ns) {
		b->state = FG_BACKEND_PROBING;
		b->probe_in_flight = false;
	}
	return b->state == FG_BACKEND_UP || (b->state == FG_BACKEND_PROBING && !b->probe_in_flight);
}

uint32_t fg_backendpool_pick(struct fg_backendpool *p, uint32_t seats, uint64_t now)
{
	uint32_t best = FG_BACKEND_NONE;
	for (uint32_t i = 0; i < p->n; i++) {
		struct fg_backend *b = &p->b[i];
		follow_shared(p, i, b, now);
		if (!available(b, now))
			continue;
		/* A backend to probe goes first: one request tells whether it is back. */
		if (b->state == FG_BACKEND_PROBING) {
			best = i;
			break;
		}
		if (!has_room(b, seats))
			continue;
		if (best == FG_BACKEND_NONE || b->outstanding < p->b[best].outstanding)
			best = i;
	}
	if (best != FG_BACKEND_NONE) {
		p->b[best].outstanding += seats;
		if (p->b[best].state == FG_BACKEND_PROBING)
			p->b[best].probe_in_flight = true;
	}
	return best;
}

bool fg_backendpool_usable(const struct fg_backendpool *p, uint64_t now)
{
	for (uint32_t i = 0; i < p->n; i++) {
		const struct fg_backend *b = &p->b[i];
		if (b->state == FG_BACKEND_UP && p->shared &&
		    now < __atomic_load_n(&p->shared[i].down_until, __ATOMIC_RELAXED))
			continue; /* another worker ejected it */
		if (b->state == FG_BACKEND_UP || (b->state == FG_BACKEND_PROBING && !b->probe_in_flight) ||
		    (b->state == FG_BACKEND_EJECTED && now >= b->until_ns))
			return true;
	}
	return false;
}

void fg_backendpool_done(struct fg_backendpool *p, uint32_t i, uint32_t seats, bool answered, uint64_t now)
{
	if (i >= p->n)
		return;
	struct fg_backend *b = &p->b[i];
	b->outstanding -= seats < b->outstanding ? seats : b->outstanding;
	if (answered) {
		b->consecutive_timeouts = 0;
		if (p->shared && __atomic_load_n(&p->shared[i].timeouts, __ATOMIC_RELAXED))
			__atomic_store_n(&p->shared[i].timeouts, 0, __ATOMIC_RELAXED);
		if (b->state != FG_BACKEND_UP) {
			b->state = FG_BACKEND_UP;
			b->eject_ns = 0;
		}
		return;
	}
	b->consecutive_timeouts++;
	/* In a row over all workers when shared: an answer anywhere breaks it. */
	uint32_t in_a_row = p->shared ? __atomic_add_fetch(&p->shared[i].timeouts, 1, __ATOMIC_RELAXED)
				      : b->consecutive_timeouts;
	bool failed_probe = b->state == FG_BACKEND_PROBING;
	if (failed_probe || (b->state == FG_BACKEND_UP && in_a_row >= p->eject_after)) {
		b->eject_ns = !b->eject_ns ? p->base_eject_ns
			      : (b->eject_ns * 2 < p->max_eject_ns ? b->eject_ns * 2 : p->max_eject_ns);
		b->state = FG_BACKEND_EJECTED;
		b->until_ns = now + b->eject_ns;
		b->probe_in_flight = false;
		b->ejections++;
		if (p->shared) {
			if (__atomic_load_n(&p->shared[i].down_until, __ATOMIC_RELAXED) < b->until_ns)
				__atomic_store_n(&p->shared[i].down_until, b->until_ns, __ATOMIC_RELAXED);
			__atomic_store_n(&p->shared[i].timeouts, 0, __ATOMIC_RELAXED);
		}
	}
}
