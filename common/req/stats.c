/* SPDX-License-Identifier: Apache-2.0 */
/* stats — flow table of the per-worker statistics: safe names, ageing, reads. */
#include "stats.h"

#include <stdio.h>
#include <string.h>

#define FLOW_OTHER 0u
#define FLOW_NONE UINT32_MAX
#define FLOW_MASK (FG_FLOW_TABLE_SIZE - 1)
#define FLOW_FILL_FIRST (FG_FLOW_TABLE_SIZE / 4 * 3) /* past this, idle entries are reused first */
#define READ_TRIES 3

void fg_stats_init(struct fg_worker_stats *s)
{
	memset(s, 0, sizeof(*s));
	fg_apf_init(&s->apf);
	strcpy(s->flows[FLOW_OTHER].name, "(other)");
	s->flows[FLOW_OTHER].hash = s->flow_keys[FLOW_OTHER] = 1; /* never matched: real hashes are >= 2 */
}

/* --- names ----------------------------------------------------------------- */

/* A name being built: whole units (a character or its escapes) or nothing,
 * and nothing after the first unit that did not fit, so a cut name is a
 * prefix of the whole one. */
struct name_buf {
	char *p;
	size_t len, cap; /* cap counts the NUL */
	bool full;
};

static void put(struct name_buf *b, const void *unit, size_t n)
{
	if (b->full || b->len + n + 1 > b->cap) {
		b->full = true;
		return;
	}
	memcpy(b->p + b->len, unit, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static bool plain(uint8_t c)
{
	return c >= 0x20 && c < 0x7f && c != '\\';
}

static void put_escaped(struct name_buf *b, const uint8_t *bytes, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	char unit[4 * 4];
	for (size_t i = 0; i < n; i++) {
		unit[4 * i] = '\\';
		unit[4 * i + 1] = 'x';
		unit[4 * i + 2] = hex[bytes[i] >> 4];
		unit[4 * i + 3] = hex[bytes[i] & 15];
	}
	put(b, unit, 4 * n);
}

/* Length of the well-formed UTF-8 character at p[0..n) (RFC 3629: no
 * overlong forms, no surrogates, nothing past U+10FFFF), or 0. */
static size_t utf8_char(const uint8_t *p, size_t n, uint32_t *cp)
{
	size_t len;
	uint32_t c, min;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2, c = p[0] & 0x1f, min = 0x80;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		len = 3, c = p[0] & 0x0f, min = 0x800;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		len = 4, c = p[0] & 0x07, min = 0x10000;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

/* Characters that are valid but would hide or reorder what an operator reads. */
static bool invisible(uint32_t c)
{
	return (c >= 0x80 && c <= 0x9f) ||       /* C1 controls */
	       (c >= 0x200b && c <= 0x200f) ||   /* zero widths, LRM, RLM */
	       (c >= 0x2028 && c <= 0x202e) ||   /* line/paragraph separators, bidi embeddings */
	       (c >= 0x2066 && c <= 0x2069) ||   /* bidi isolates */
	       c == 0xfeff;
}

static void put_name_part(struct name_buf *b, const uint8_t *s, size_t n)
{
	for (size_t i = 0; i < n && !b->full;) {
		size_t run = i;
		while (run < n && plain(s[run]))
			run++;
		if (run > i) { /* printable ASCII, the usual name: one copy, cut anywhere */
			size_t room = b->cap - 1 - b->len, take = run - i < room ? run - i : room;
			put(b, s + i, take);
			b->full = take < run - i;
			i = run;
			continue;
		}
		uint32_t c = s[i];
		size_t len = 1;
		if (c >= 0x80 && (len = utf8_char(s + i, n - i, &c)) != 0) {
			if (invisible(c))
				put_escaped(b, s + i, len); /* the whole character, or none of it */
			else
				put(b, s + i, len);
		} else {
			len = 1; /* a control, '\', or a byte that starts no character: resynchronise after it */
			put_escaped(b, &s[i], 1);
		}
		i += len;
	}
}

static void format_name(char *out, size_t cap, const char *schema, const char *dist, uint16_t dist_len)
{
	struct name_buf b = { out, 0, cap, false };
	out[0] = '\0';
	put_name_part(&b, (const uint8_t *)schema, strlen(schema));
	if (dist_len) {
		put(&b, "/", 1);
		put_name_part(&b, (const uint8_t *)dist, dist_len);
	}
}

/* --- the table --------------------------------------------------------------- */

static bool reclaimable(const struct fg_worker_stats *s, uint32_t i)
{
	const struct fg_flow_stats *f = &s->flows[i];
	return i != FLOW_OTHER && s->flow_idle[i] >= FG_FLOW_IDLE_PASSES && !f->waiting && !f->executing;
}

static void advance_hand(struct fg_worker_stats *s)
{
	uint32_t h = s->flow_hand;
	for (unsigned k = 0; k < FG_FLOW_HAND_STEP; k++, h = (h + 1) & FLOW_MASK)
		s->flow_idle[h] += s->flow_idle[h] < FG_FLOW_IDLE_PASSES; /* saturating, without a branch */
	s->flow_hand = h;
}

/* Give entry f to a new flow; readers see hash 0 or an odd seq until it is whole. */
static void flow_write(struct fg_flow_stats *f, uint64_t hash, uint16_t level, const char *schema, const char *dist,
		       uint16_t dist_len)
{
	uint64_t words[FG_FLOW_NAME_MAX / 8] = { 0 };
	format_name((char *)words, sizeof(words), schema, dist, dist_len);
	uint32_t seq = f->seq;
	__atomic_store_n(&f->seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&f->hash, 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	for (unsigned k = 0; k < FG_FLOW_NAME_MAX / 8; k++)
		__atomic_store_n(&f->name_words[k], words[k], __ATOMIC_RELAXED);
	FG_STAT_SET(f->level, level);
	FG_STAT_SET(f->received, 0);
	FG_STAT_SET(f->dispatched, 0);
	FG_STAT_SET(f->responded, 0);
	FG_STAT_SET(f->rejected, 0);
	FG_STAT_SET(f->weight, 0);
	FG_STAT_SET(f->usage_us, 0);
	for (int r = 0; r < FG_REJECT__COUNT; r++)
		FG_STAT_SET(f->rejected_by[r], 0);
	__atomic_store_n(&f->seq, seq + 2, __ATOMIC_RELEASE);
	__atomic_store_n(&f->hash, hash, __ATOMIC_RELEASE);
}

uint32_t fg_stats_flow(struct fg_worker_stats *s, uint64_t hash, uint16_t level, const char *schema,
		       const char *dist, uint16_t dist_len)
{
	hash = fg_stats_flow_key(hash);
	uint32_t i = (uint32_t)hash & FLOW_MASK, free_i = FLOW_NONE, idle_i = FLOW_NONE;
	bool may_reclaim = s->flow_reclaim_wait == 0;
	for (uint32_t probes = 0; probes < FG_FLOW_MAX_PROBES; probes++, i = (i + 1) & FLOW_MASK) {
		uint64_t key = s->flow_keys[i];
		if (key == hash) {
			struct fg_flow_stats *f = &s->flows[i];
			s->flow_idle[i] = 0;
			if (f->level != level) /* its schema moved to another level */
				__atomic_store_n(&f->level, level, __ATOMIC_RELAXED);
			return i;
		}
		if (key == 0) {
			/* Entries are reused in place, never emptied: no run has a
			 * hole, so the flow is not further on. */
			free_i = i;
			break;
		}
		if (may_reclaim && idle_i == FLOW_NONE && reclaimable(s, i))
			idle_i = i;
	}
	advance_hand(s);
	if (s->flow_reclaim_wait)
		s->flow_reclaim_wait--;
	/* Up to 3/4 full, free entries are taken at once.  Past it, only when
	 * the countdown allows: an idle entry first, a free one (a run with no
	 * idle entry: without it a flow whose home is free would never get one). */
	uint32_t take = FLOW_NONE;
	bool counted = false;
	if (free_i != FLOW_NONE && s->flows_used < FLOW_FILL_FIRST)
		take = free_i;
	else if (may_reclaim)
		take = idle_i != FLOW_NONE ? idle_i : free_i, counted = true;
	if (take == FLOW_NONE) {
		FG_STAT_ADD(s->flows_overflow, 1);
		return FLOW_OTHER;
	}
	if (counted)
		s->flow_reclaim_wait = FG_FLOW_RECLAIM_EVERY - 1;
	if (take == free_i)
		FG_STAT_ADD(s->flows_used, 1);
	else
		FG_STAT_ADD(s->flows_reclaimed, 1);
	flow_write(&s->flows[take], hash, level, schema, dist, dist_len);
	s->flow_keys[take] = hash;
	s->flow_idle[take] = 0;
	return take;
}

bool fg_stats_flow_read(const struct fg_worker_stats *s, uint32_t i, struct fg_flow_snapshot *out)
{
	const struct fg_flow_stats *f = &s->flows[i & FLOW_MASK];
	uint64_t words[FG_FLOW_NAME_MAX / 8];
	for (int tries = 0; tries < READ_TRIES; tries++) {
		uint32_t seq = __atomic_load_n(&f->seq, __ATOMIC_ACQUIRE);
		out->hash = __atomic_load_n(&f->hash, __ATOMIC_ACQUIRE);
		if (seq & 1)
			continue; /* being given to another flow */
		if (!out->hash)
			return false;
		for (unsigned k = 0; k < FG_FLOW_NAME_MAX / 8; k++)
			words[k] = __atomic_load_n(&f->name_words[k], __ATOMIC_RELAXED);
		out->level = __atomic_load_n(&f->level, __ATOMIC_RELAXED);
		out->received = FG_STAT_GET(f->received);
		out->dispatched = FG_STAT_GET(f->dispatched);
		out->responded = FG_STAT_GET(f->responded);
		out->rejected = FG_STAT_GET(f->rejected);
		for (int r = 0; r < FG_REJECT__COUNT; r++)
			out->rejected_by[r] = FG_STAT_GET(f->rejected_by[r]);
		out->waiting = (int32_t)FG_STAT_GET(f->waiting);
		out->executing = (int32_t)FG_STAT_GET(f->executing);
		out->seats_waiting = (int32_t)FG_STAT_GET(f->seats_waiting);
		out->seats_executing = (int32_t)FG_STAT_GET(f->seats_executing);
		out->weight = FG_STAT_GET(f->weight);
		out->usage_us = FG_STAT_GET(f->usage_us);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&f->seq, __ATOMIC_RELAXED) == seq) {
			memcpy(out->name, words, sizeof(out->name));
			out->name[sizeof(out->name) - 1] = '\0';
			return true;
		}
	}
	return false;
}

unsigned fg_stats_levels_total(struct fg_worker_stats *const *s, unsigned n, struct fg_level_total *out, unsigned cap)
{
	unsigned count = 0;
	for (unsigned w = 0; w < n; w++) {
		for (unsigned i = 0; i < FG_MAX_LEVELS; i++) {
			const struct fg_level_stats *l = &s[w]->levels[i];
			if (!__atomic_load_n(&l->used, __ATOMIC_ACQUIRE))
				continue;
			struct fg_level_total *t = NULL;
			for (unsigned k = 0; k < count && !t; k++)
				if (!strcmp(out[k].name, l->name))
					t = &out[k];
			if (!t) {
				if (count == cap)
					continue;
				t = &out[count++];
				memset(t, 0, sizeof(*t));
				snprintf(t->name, sizeof(t->name), "%s", l->name);
				t->limit = FG_STAT_GET(l->limit);
				t->queues = FG_STAT_GET(l->queues);
				t->live = FG_STAT_GET(l->live) != 0;
			}
			t->seats_in_use += FG_STAT_GET(l->seats_in_use);
			t->waiting += FG_STAT_GET(l->waiting);
			t->seats_waiting += FG_STAT_GET(l->seats_waiting);
			if (FG_STAT_GET(l->guess_ns) > t->guess_ns)
				t->guess_ns = FG_STAT_GET(l->guess_ns);
			t->usage_overflowed += FG_STAT_GET(l->usage_overflowed);
			t->executing += (uint32_t)FG_STAT_GET(l->executing);
			t->received += FG_STAT_GET(l->received);
			t->dispatched += FG_STAT_GET(l->dispatched);
			t->responded += FG_STAT_GET(l->responded);
			t->rejected += FG_STAT_GET(l->rejected);
			for (int r = 0; r < FG_REJECT__COUNT; r++)
				t->rejected_by[r] += FG_STAT_GET(l->rejected_by[r]);
		}
	}
	return count;
}

void fg_stats_totals(struct fg_worker_stats *const *s, unsigned n, struct fg_worker_totals *t)
{
	memset(t, 0, sizeof(*t));
	uint64_t buffers = 0;
	for (unsigned w = 0; w < n; w++) {
		const struct fg_worker_stats *x = s[w];
		t->rx_datagrams += FG_STAT_GET(x->rx_datagrams);
		t->rx_malformed += FG_STAT_GET(x->rx_malformed);
		t->rx_unexpected += FG_STAT_GET(x->rx_unexpected);
		t->responses_unmatched += FG_STAT_GET(x->responses_unmatched);
		for (int e = 0; e < FG_PROTO_ERR__COUNT; e++)
			t->malformed_by_err[e] += FG_STAT_GET(x->malformed_by_err[e]);
		t->received += FG_STAT_GET(x->received);
		t->dispatched += FG_STAT_GET(x->dispatched);
		t->responded += FG_STAT_GET(x->responded);
		for (int r = 0; r < FG_REJECT__COUNT; r++)
			t->rejected[r] += FG_STAT_GET(x->rejected[r]);
		t->invalid_rejected += FG_STAT_GET(x->invalid_rejected);
		t->tx_datagrams += FG_STAT_GET(x->tx_datagrams);
		t->tx_failed += FG_STAT_GET(x->tx_failed);
		t->flows_overflow += FG_STAT_GET(x->flows_overflow);
		buffers += FG_STAT_GET(x->buffers_in_use);
		t->buffers_total += FG_STAT_GET(x->buffers_total);
		t->buffers_reserved += FG_STAT_GET(x->buffers_reserved);
		t->answers_lost += FG_STAT_GET(x->answers_lost);
		t->answers_unsent += FG_STAT_GET(x->answers_unsent);
		t->answers_without_load += FG_STAT_GET(x->answers_without_load);
		t->backend_ejections += FG_STAT_GET(x->backend_ejections);
		t->held_for_backend += FG_STAT_GET(x->held_for_backend);
		t->untrusted_requests += FG_STAT_GET(x->untrusted_requests);
		t->cookie_challenges += FG_STAT_GET(x->cookie_challenges);
	}
	for (int r = 0; r < FG_REJECT__COUNT; r++)
		t->rejected_total += t->rejected[r];
	/* Samples taken at slightly different moments: never below zero. */
	t->buffers_in_use = buffers > t->buffers_reserved ? buffers - t->buffers_reserved : 0;
}

uint64_t fg_stats_seat_limit_in_force(struct fg_worker_stats *const *s, unsigned n, uint32_t seat_limit)
{
	uint64_t usable = 0, total = 0;
	for (unsigned w = 0; w < n; w++) {
		usable += FG_STAT_GET(s[w]->capacity_usable);
		total += FG_STAT_GET(s[w]->capacity_total);
	}
	if (!total || usable == total)
		return seat_limit;
	return ((uint64_t)seat_limit * usable + total - 1) / total;
}

void fg_stats_backend_total(struct fg_worker_stats *const *s, unsigned n, uint32_t b, struct fg_backend_total *t)
{
	memset(t, 0, sizeof(*t));
	for (unsigned w = 0; w < n; w++) {
		const struct fg_backend_stats *x = &s[w]->backends[b];
		t->outstanding += FG_STAT_GET(x->outstanding);
		t->capacity += FG_STAT_GET(x->capacity);
		t->timeouts += FG_STAT_GET(x->timeouts);
		t->ejections += FG_STAT_GET(x->ejections);
		t->dispatched += FG_STAT_GET(x->dispatched);
		t->stalls += FG_STAT_GET(x->stalls);
		t->stalled += FG_STAT_GET(x->stalled) != 0;
		if (FG_STAT_GET(x->latency_ns) > t->latency_ns)
			t->latency_ns = FG_STAT_GET(x->latency_ns);
		t->learned_limit += FG_STAT_GET(x->learned_limit);
		if (FG_STAT_GET(x->noload_ns) > t->noload_ns)
			t->noload_ns = FG_STAT_GET(x->noload_ns);
		if (!w)
			t->limit_reason = FG_STAT_GET(x->limit_reason);
		for (unsigned r = 0; r < FG_ADAPT_REASONS; r++)
			t->limit_moves[r] += FG_STAT_GET(x->limit_moves[r]);
		uint8_t state = FG_STAT_GET(x->state);
		t->in_state[state < 3 ? state : 1]++; /* 1: ejected (backendpool.h) */
		uint64_t until = FG_STAT_GET(x->until_ns), changed = FG_STAT_GET(x->last_change_ns);
		if (state == 1 && until > t->until_ns)
			t->until_ns = until;
		if (changed > t->last_change_ns)
			t->last_change_ns = changed;
	}
}
