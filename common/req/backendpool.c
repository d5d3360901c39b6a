/* SPDX-License-Identifier: Apache-2.0 */
/* backendpool — see backendpool.h. */
#include "backendpool.h"

#include <string.h>

const char *fg_backend_admin_name(unsigned admin)
{
	static const char *const names[FG_BACKEND_ADMIN__COUNT] = { "enabled", "drain", "disabled", "removed" };
	return admin < FG_BACKEND_ADMIN__COUNT ? names[admin] : "?";
}

void fg_backendpool_init(struct fg_backendpool *p, uint32_t n, uint32_t eject_after, uint64_t eject_ns,
			 uint64_t max_eject_ns)
{
	memset(p, 0, sizeof(*p)); /* no controllers: the owner gives them (adapt) */
	p->overbook_milli = 1000;
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
	p->max_eject_ns = max_eject_ns > eject_ns ? max_eject_ns : eject_ns;
}

bool fg_backendpool_follow(struct fg_backendpool *p, uint32_t i, uint32_t ip, uint16_t port, uint8_t admin)
{
	if (i >= FG_MAX_BACKENDS)
		return false;
	struct fg_backend *b = &p->b[i];
	bool fresh = i >= p->n || b->ip != ip || b->port != port;
	if (fresh) {
		memset(b, 0, sizeof(*b));
		b->ip = ip;
		b->port = port;
		/* Every pool following the slot clears the same: what the
		 * previous address earned does not eject the new one. */
		if (p->shared) {
			__atomic_store_n(&p->shared[i].down_until, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&p->shared[i].back_at, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&p->shared[i].timeouts, 0, __ATOMIC_RELAXED);
		}
	}
	if (fresh || admin != b->admin) {
		p->changes++;
		b->stalled = false; /* judged afresh in its new state */
	}
	if (admin != b->admin && admin == FG_BACKEND_ENABLED) {
		/* Enabled again: a fresh start, as an operator expects of "enable"
		 * (the other workers' ejection too: each clears it as it follows). */
		b->state = FG_BACKEND_UP;
		b->eject_ns = 0;
		b->consecutive_timeouts = 0;
		b->probe_in_flight = false;
		if (p->shared) {
			__atomic_store_n(&p->shared[i].down_until, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&p->shared[i].timeouts, 0, __ATOMIC_RELAXED);
		}
	}
	b->admin = admin;
	return fresh;
}

void fg_backendpool_set_count(struct fg_backendpool *p, uint32_t n)
{
	n = n > FG_MAX_BACKENDS ? FG_MAX_BACKENDS : n;
	for (uint32_t i = n; i < p->n; i++)
		memset(&p->b[i], 0, sizeof(p->b[i]));
	if (n != p->n)
		p->changes++;
	p->n = n;
}

/* Another worker ejected backend i: eject it here too, for the same time.
 * Another saw it answer after it was ejected here: it is back here too. */
static inline void follow_shared(struct fg_backendpool *p, uint32_t i, struct fg_backend *b, uint64_t now)
{
	if (!p->shared || b->admin != FG_BACKEND_ENABLED)
		return;
	if (b->state != FG_BACKEND_UP) {
		if (!b->probe_in_flight && __atomic_load_n(&p->shared[i].back_at, __ATOMIC_RELAXED) > b->ejected_at) {
			b->state = FG_BACKEND_UP;
			b->eject_ns = 0;
			p->changes++;
		}
		return;
	}
	uint64_t until = __atomic_load_n(&p->shared[i].down_until, __ATOMIC_RELAXED);
	if (now < until) {
		b->state = FG_BACKEND_EJECTED;
		b->until_ns = until;
		b->ejected_at = now;
		b->eject_ns = p->base_eject_ns;
		b->probe_in_flight = false;
		p->changes++;
	}
}

bool fg_backendpool_stalled(const struct fg_backendpool *p, uint32_t i, uint64_t now)
{
	const struct fg_backend *b = &p->b[i];
	if (b->stalled)
		return true; /* until it answers */
	if (!b->outstanding || b->latency_samples < FG_BACKEND_LATENCY_SAMPLES ||
	    (b->admin != FG_BACKEND_ENABLED && b->admin != FG_BACKEND_DRAIN))
		return false;
	uint64_t after = b->latency_ns * FG_BACKEND_STALL_FACTOR;
	if (after < FG_BACKEND_STALL_MIN_NS)
		after = FG_BACKEND_STALL_MIN_NS;
	return now > b->progress_ns && now - b->progress_ns > after;
}

/* The stall as of now, counted when it starts; it lasts until an answer
 * (fg_backendpool_done), not until what it holds times out. */
static bool update_stall(struct fg_backendpool *p, uint32_t i, uint64_t now)
{
	struct fg_backend *b = &p->b[i];
	if (!b->stalled && fg_backendpool_stalled(p, i, now)) {
		b->stalled = true;
		b->stalls++;
	}
	return b->stalled;
}

static void set_capacity_in_force(struct fg_backendpool *p, uint32_t i, uint32_t seats)
{
	if (i < p->n && p->b[i].capacity != seats) {
		p->b[i].capacity = seats;
		p->changes++;
	}
}

/* The adaptive limit of backend i moved (or not): its capacity follows. */
static void follow_adaptive(struct fg_backendpool *p, uint32_t i, bool moved)
{
	if (moved)
		set_capacity_in_force(p, i, fg_adapt_in_force(&p->adapt[i]));
}

void fg_backendpool_learn_latency(struct fg_backendpool *p, uint32_t i, uint32_t seats, uint64_t latency_ns,
				  uint64_t now)
{
	if (i >= p->n)
		return;
	struct fg_backend *b = &p->b[i];
	if (b->adaptive)
		fg_adapt_answer(&p->adapt[i], latency_ns, seats, now);
	if (b->latency_samples < FG_BACKEND_LATENCY_SAMPLES) { /* the mean of the first ones */
		b->latency_samples++;
		b->latency_ns += ((int64_t)latency_ns - (int64_t)b->latency_ns) / (int64_t)b->latency_samples;
	} else {
		b->latency_ns += ((int64_t)latency_ns - (int64_t)b->latency_ns) / 8;
	}
}

void fg_backendpool_refresh(struct fg_backendpool *p, uint64_t now)
{
	for (uint32_t i = 0; i < p->n; i++) {
		follow_shared(p, i, &p->b[i], now);
		update_stall(p, i, now);
		if (p->b[i].adaptive)
			follow_adaptive(p, i, fg_adapt_tick(&p->adapt[i], now));
	}
}

void fg_backendpool_set_capacity(struct fg_backendpool *p, uint32_t i, uint32_t seats)
{
	if (i < p->n)
		p->b[i].adaptive = false;
	set_capacity_in_force(p, i, seats);
	if (p->overbook_milli != 1000) { /* Static: a later Adaptive start overbooks nothing */
		p->overbook_milli = 1000;
		p->changes++;
	}
}

void fg_backendpool_set_pressure(struct fg_backendpool *p, bool levels_pressed, bool held_here, bool held)
{
	uint64_t limits = 0, outstanding = 0;
	for (uint32_t i = 0; i < p->n; i++) {
		const struct fg_backend *b = &p->b[i];
		if (!b->adaptive)
			continue;
		fg_adapt_pressure(&p->adapt[i], levels_pressed || held_here);
		if (b->admin == FG_BACKEND_ENABLED && b->state == FG_BACKEND_UP) {
			limits += b->capacity;
			outstanding += b->outstanding;
		}
	}
	uint32_t was = p->overbook_milli, s = was;
	if (held)
		s = s - s / 10;
	else if (levels_pressed && outstanding * 10 < limits * 9)
		s = s + s / 10;
	else if (!levels_pressed)
		s = s - s / 32;
	if (s < 1000)
		s = 1000;
	if (s > FG_BACKENDPOOL_MAX_OVERBOOK * 1000)
		s = FG_BACKENDPOOL_MAX_OVERBOOK * 1000;
	if (s != was) {
		p->overbook_milli = s;
		p->changes++;
	}
}

void fg_backendpool_levels_capacity(const struct fg_backendpool *p, uint32_t start, uint32_t max, uint32_t *usable,
				    uint32_t *total)
{
	fg_backendpool_capacity(p, usable, total);
	uint64_t v = (uint64_t)*usable * (p->overbook_milli ? p->overbook_milli : 1000) / 1000;
	*usable = v > max ? max : (uint32_t)v;
	*total = start;
}

void fg_backendpool_set_adaptive(struct fg_backendpool *p, uint32_t i, uint32_t start, uint32_t min, uint32_t max,
				 uint64_t now)
{
	if (i >= p->n || !p->adapt)
		return;
	if (!p->b[i].adaptive) {
		/* Probes of different backends in different slots of the clock. */
		fg_adapt_init(&p->adapt[i], start, min, max, i, now);
		p->b[i].adaptive = true;
	} else {
		fg_adapt_set_bounds(&p->adapt[i], min, max);
		fg_adapt_restart(&p->adapt[i], start);
	}
	set_capacity_in_force(p, i, fg_adapt_in_force(&p->adapt[i]));
}

/* Room for `seats` more; a request wider than the whole capacity runs alone. */
static inline bool has_room(const struct fg_backend *b, uint32_t seats)
{
	return !b->capacity || b->outstanding + seats <= b->capacity || (!b->outstanding && seats > b->capacity);
}

/* Ejected backends whose time is up become probe candidates. */
static inline bool available(struct fg_backendpool *p, struct fg_backend *b, uint64_t now)
{
	if (b->state == FG_BACKEND_EJECTED && now >= b->until_ns) {
		b->state = FG_BACKEND_PROBING;
		b->probe_in_flight = false;
		p->changes++;
	}
	return b->state == FG_BACKEND_UP || (b->state == FG_BACKEND_PROBING && !b->probe_in_flight);
}

uint32_t fg_backendpool_pick(struct fg_backendpool *p, uint32_t seats, uint64_t now)
{
	uint32_t best = FG_BACKEND_NONE, best_stalled = FG_BACKEND_NONE;
	bool any_flowing = false; /* an available backend that is not stalled, room or not */
	for (uint32_t i = 0; i < p->n; i++) {
		struct fg_backend *b = &p->b[i];
		if (b->admin != FG_BACKEND_ENABLED)
			continue;
		follow_shared(p, i, b, now);
		if (!available(p, b, now))
			continue;
		/* A backend to probe goes first: one request tells whether it is back. */
		if (b->state == FG_BACKEND_PROBING) {
			best = i;
			any_flowing = true;
			break;
		}
		/* Stalled with nothing outstanding (what it held timed out): one
		 * request at a time, which its answer or timeout decides on. */
		bool stalled = update_stall(p, i, now) && b->outstanding;
		any_flowing |= !stalled;
		if (!has_room(b, seats))
			continue;
		uint32_t *pick = stalled ? &best_stalled : &best;
		if (*pick == FG_BACKEND_NONE || b->outstanding < p->b[*pick].outstanding)
			*pick = i;
	}
	/* A stalled backend only while no other is up: it gets nothing new
	 * while another can take it, or wait for room on it. */
	if (best == FG_BACKEND_NONE && !any_flowing)
		best = best_stalled;
	if (best != FG_BACKEND_NONE) {
		if (!p->b[best].outstanding)
			p->b[best].progress_ns = now; /* busy from now: its stall is measured from here */
		p->b[best].outstanding += seats;
		if (p->b[best].adaptive)
			fg_adapt_outstanding(&p->adapt[best], p->b[best].outstanding);
		if (p->b[best].state == FG_BACKEND_PROBING)
			p->b[best].probe_in_flight = true;
	}
	return best;
}

bool fg_backendpool_usable(const struct fg_backendpool *p, uint64_t now)
{
	for (uint32_t i = 0; i < p->n; i++) {
		const struct fg_backend *b = &p->b[i];
		if (b->admin != FG_BACKEND_ENABLED)
			continue;
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
	if (answered) { /* it answers: not stalled, whatever its state */
		b->progress_ns = now;
		b->stalled = false;
	}
	/* Taken out of service: what it still answers or not says nothing the
	 * pool acts on (enable starts it afresh). */
	if (b->admin == FG_BACKEND_DISABLED || b->admin == FG_BACKEND_REMOVED)
		return;
	if (answered) {
		b->consecutive_timeouts = 0;
		if (p->shared && __atomic_load_n(&p->shared[i].timeouts, __ATOMIC_RELAXED))
			__atomic_store_n(&p->shared[i].timeouts, 0, __ATOMIC_RELAXED);
		if (b->state != FG_BACKEND_UP) {
			b->state = FG_BACKEND_UP;
			b->eject_ns = 0;
			p->changes++;
			if (p->shared) { /* back for all, and no longer ejected for the others to follow */
				if (__atomic_load_n(&p->shared[i].back_at, __ATOMIC_RELAXED) < now)
					__atomic_store_n(&p->shared[i].back_at, now, __ATOMIC_RELAXED);
				__atomic_store_n(&p->shared[i].down_until, 0, __ATOMIC_RELAXED);
			}
		}
		return;
	}
	if (b->adaptive)
		follow_adaptive(p, i, fg_adapt_timeout(&p->adapt[i], now));
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
		b->ejected_at = now;
		b->probe_in_flight = false;
		b->ejections++;
		p->changes++;
		if (p->shared) {
			if (__atomic_load_n(&p->shared[i].down_until, __ATOMIC_RELAXED) < b->until_ns)
				__atomic_store_n(&p->shared[i].down_until, b->until_ns, __ATOMIC_RELAXED);
			__atomic_store_n(&p->shared[i].timeouts, 0, __ATOMIC_RELAXED);
		}
	}
}

void fg_backendpool_capacity(const struct fg_backendpool *p, uint32_t *usable, uint32_t *total)
{
	bool all_sized = true;
	for (uint32_t i = 0; i < p->n; i++)
		all_sized &= p->b[i].admin == FG_BACKEND_REMOVED || p->b[i].capacity > 0;
	*usable = *total = 0;
	for (uint32_t i = 0; i < p->n; i++) {
		const struct fg_backend *b = &p->b[i];
		if (b->admin == FG_BACKEND_REMOVED)
			continue;
		uint32_t part = all_sized ? b->capacity : 1;
		*total += part;
		if (b->admin == FG_BACKEND_ENABLED && b->state == FG_BACKEND_UP)
			*usable += part;
	}
}
