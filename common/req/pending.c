/* SPDX-License-Identifier: Apache-2.0 */
/* pending — snapshot buffers, the pending-requests query and dispatch order; see pending.h. */
#include "pending.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fg_snapshot *fg_snapshot_new(const char *level, uint32_t flags, uint32_t cap_reqs, uint32_t cap_queues)
{
	struct fg_snapshot *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	snprintf(s->level, sizeof(s->level), "%s", level ? level : "");
	s->flags = flags;
	uint64_t per_req = flags & FG_SNAP_DETAILS ? FG_SNAP_STR_BYTES * 4 : FG_SNAP_STR_BYTES;
	uint64_t cap_strs = per_req * cap_reqs;
	if (cap_strs > UINT32_MAX)
		cap_strs = UINT32_MAX;
	s->cap_reqs = cap_reqs;
	s->cap_queues = cap_queues;
	s->cap_strs = (uint32_t)cap_strs;
	size_t req_bytes = sizeof(*s->reqs) * (cap_reqs ? cap_reqs : 1), q_bytes = sizeof(*s->queues) * (cap_queues ? cap_queues : 1);
	s->reqs = malloc(req_bytes);
	s->queues = malloc(q_bytes);
	s->strs = malloc(cap_strs ? cap_strs : 1);
	if (!s->reqs || !s->queues || !s->strs) {
		fg_snapshot_free(s);
		return NULL;
	}
	/* Written now so that the requester takes the page faults, not the
	 * worker that fills the buffer (calloc's fresh pages fault on first write). */
	memset(s->reqs, 0, req_bytes);
	memset(s->queues, 0, q_bytes);
	memset(s->strs, 0, cap_strs ? cap_strs : 1);
	return s;
}

void fg_snapshot_free(struct fg_snapshot *s)
{
	if (!s)
		return;
	free(s->reqs);
	free(s->queues);
	free(s->strs);
	free(s);
}

/* --- the query ----------------------------------------------------------------- */

/* name, cut short and printable, for an error line */
static void printable(char *out, size_t cap, const char *s)
{
	size_t n = 0;
	for (const char *p = s ? s : ""; *p && n + 1 < cap && n < 48; p++)
		out[n++] = *p >= 0x20 && *p < 0x7f ? *p : '?';
	out[n] = 0;
}

static int bad(char *err, size_t errlen, const char *what, const char *key)
{
	char k[49];
	printable(k, sizeof(k), key);
	snprintf(err, errlen, "%s \"%s\"", what, k);
	return -EINVAL;
}

/* A plain decimal within [min, max]. */
static int number(const char *v, uint32_t min, uint32_t max, uint32_t *out)
{
	if (!v || !*v || strlen(v) > 10)
		return -EINVAL;
	uint64_t n = 0;
	for (const char *p = v; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		n = n * 10 + (uint64_t)(*p - '0');
	}
	if (n < min || n > max)
		return -EINVAL;
	*out = (uint32_t)n;
	return 0;
}

static int filter(const char *v, char *out, size_t cap)
{
	size_t n = v ? strlen(v) : 0;
	if (!v || n >= cap)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
			return -EINVAL;
	memcpy(out, v, n + 1);
	return 0;
}

int fg_pending_parse_query(const struct fg_kv *kv, size_t n, struct fg_pending_query *q, char *err, size_t errlen)
{
	memset(q, 0, sizeof(*q));
	q->limit = FG_PENDING_DEFAULT_LIMIT;
	if (n > FG_PENDING_MAX_PARAMS) {
		snprintf(err, errlen, "too many query parameters (at most %u)", FG_PENDING_MAX_PARAMS);
		return -EINVAL;
	}
	static const char *const names[] = { "limit", "offset", "flowSchema", "distinguisher", "details" };
	uint8_t seen[sizeof(names) / sizeof(names[0])] = { 0 };
	for (size_t i = 0; i < n; i++) {
		const char *k = kv[i].key ? kv[i].key : "", *v = kv[i].value;
		size_t which = 0;
		while (which < sizeof(names) / sizeof(names[0]) && strcmp(k, names[which]))
			which++;
		if (which == sizeof(names) / sizeof(names[0]))
			return bad(err, errlen, "unknown query parameter", k);
		if (seen[which]++)
			return bad(err, errlen, "repeated query parameter", k);
		int rc = 0;
		switch (which) {
		case 0: rc = number(v, 1, FG_PENDING_MAX_LIMIT, &q->limit); break;
		case 1: rc = number(v, 0, FG_PENDING_MAX_OFFSET, &q->offset); break;
		case 2: rc = filter(v, q->schema, sizeof(q->schema)), q->has_schema = true; break;
		case 3: rc = filter(v, q->dist, sizeof(q->dist)), q->has_dist = true; break;
		default:
			if (!v || !*v || !strcmp(v, "1") || !strcmp(v, "true"))
				q->details = true;
			else if (strcmp(v, "0") && strcmp(v, "false"))
				rc = -EINVAL;
		}
		if (rc) {
			static const char *const why[] = {
				"limit must be a decimal from 1 to 100000:",
				"offset must be a decimal from 0 to 1073741824:",
				"flowSchema must be at most 512 bytes without control characters:",
				"distinguisher must be at most 512 bytes without control characters:",
				"details must be 1, true, 0 or false:",
			};
			_Static_assert(FG_PENDING_MAX_LIMIT == 100000 && FG_PENDING_MAX_OFFSET == 1073741824u &&
					       FG_PENDING_MAX_FILTER == 512,
				       "the messages quote the bounds");
			return bad(err, errlen, why[which], k);
		}
	}
	return 0;
}

/* --- the order ------------------------------------------------------------------ */

/* A queue in the replay: its next request and its key. */
struct runner {
	int64_t rel;      /* the next request's finish relative to its worker's R */
	uint64_t tie;
	uint32_t snap, next, end; /* positions in the sorted index of its snapshot */
	uint32_t pos;     /* position in its queue of the next request */
};

static bool before(const struct runner *a, const struct runner *b)
{
	if (a->rel != b->rel)
		return a->rel < b->rel;
	if (a->snap != b->snap)
		return a->snap < b->snap;
	return a->tie < b->tie;
}

static void sift_down(struct runner *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < n && before(&h[l], &h[m]))
			m = l;
		if (l + 1 < n && before(&h[l + 1], &h[m]))
			m = l + 1;
		if (m == i)
			return;
		struct runner t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

static void sift_up(struct runner *h, size_t i)
{
	while (i && before(&h[i], &h[(i - 1) / 2])) {
		struct runner t = h[i];
		h[i] = h[(i - 1) / 2];
		h[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static int by_queue_walk(const void *a, const void *b, void *ctx)
{
	const struct fg_snapshot *s = ctx;
	const struct fg_snap_req *x = &s->reqs[*(const uint32_t *)a], *y = &s->reqs[*(const uint32_t *)b];
	if (x->qrow != y->qrow)
		return x->qrow < y->qrow ? -1 : 1;
	return x->walk < y->walk ? -1 : x->walk > y->walk;
}

/* The waiting requests of s grouped by queue in walk order, later copies of
 * a request dropped.  Returns how many indices are in *idx (malloc'd). */
static long waiting_index(const struct fg_snapshot *s, uint32_t **idx)
{
	uint32_t n = 0;
	*idx = malloc(sizeof(**idx) * (s->n_reqs ? s->n_reqs : 1));
	if (!*idx)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->n_reqs; i++)
		if (s->reqs[i].state == FG_SNAP_WAITING && s->reqs[i].qrow < s->n_queues)
			(*idx)[n++] = i;
	qsort_r(*idx, n, sizeof(**idx), by_queue_walk, (void *)s);
	/* Duplicates come from a queue walked again from its head: same queue
	 * row, a later walk.  A small open-addressing set per queue row. */
	uint32_t out = 0, start = 0;
	size_t cap = 16;
	uint32_t *set = malloc(sizeof(*set) * cap);
	if (!set) {
		free(*idx);
		return -ENOMEM;
	}
	while (start < n) {
		uint32_t end = start;
		while (end < n && s->reqs[(*idx)[end]].qrow == s->reqs[(*idx)[start]].qrow)
			end++;
		size_t need = 16;
		while (need < 2 * (size_t)(end - start))
			need *= 2;
		if (need > cap) {
			uint32_t *grown = realloc(set, sizeof(*set) * need);
			if (!grown) {
				free(set);
				free(*idx);
				return -ENOMEM;
			}
			set = grown;
			cap = need;
		}
		memset(set, 0xff, sizeof(*set) * need);
		for (uint32_t i = start; i < end; i++) {
			const struct fg_snap_req *r = &s->reqs[(*idx)[i]];
			size_t h = (r->slot * 2654435761u) & (need - 1);
			bool dup = false;
			for (; set[h] != UINT32_MAX; h = (h + 1) & (need - 1)) {
				const struct fg_snap_req *o = &s->reqs[set[h]];
				if (o->slot == r->slot && o->arrival_ns == r->arrival_ns && o->client_id == r->client_id) {
					dup = true;
					break;
				}
			}
			if (dup)
				continue;
			set[h] = (*idx)[i];
			(*idx)[out++] = (*idx)[i];
		}
		start = end;
	}
	free(set);
	return out;
}

static bool str_is(const struct fg_snapshot *s, const struct fg_snap_req *r, enum fg_snap_str k, const char *want)
{
	size_t len;
	const char *p = fg_snap_str(s, r, k, &len);
	return strlen(want) == len && !memcmp(p, want, len);
}

long fg_pending_order(struct fg_snapshot *const *snaps, unsigned n, const struct fg_pending_query *q,
		      struct fg_pending_item **out, struct fg_pending_counts *counts)
{
	*out = NULL;
	counts->waiting = counts->matched = 0;
	uint64_t *matched = &counts->matched;
	long rc = 0;
	uint32_t **idx = calloc(n ? n : 1, sizeof(*idx));
	uint32_t *n_idx = calloc(n ? n : 1, sizeof(*n_idx));
	uint64_t *ties = calloc(n ? n : 1, sizeof(*ties));
	size_t heads = 0;
	struct runner *heap = NULL;
	if (!idx || !n_idx || !ties) {
		rc = -ENOMEM;
		goto done;
	}
	for (unsigned i = 0; i < n; i++) {
		long k = waiting_index(snaps[i], &idx[i]);
		if (k < 0) {
			rc = k;
			goto done;
		}
		n_idx[i] = (uint32_t)k;
		heads += snaps[i]->n_queues;
		for (uint32_t j = 0; j < snaps[i]->n_queues; j++)
			if (snaps[i]->queues[j].head_tie > ties[i])
				ties[i] = snaps[i]->queues[j].head_tie;
	}
	heap = malloc(sizeof(*heap) * (heads ? heads : 1));
	*out = malloc(sizeof(**out) * (q->limit ? q->limit : 1));
	if (!heap || !*out) {
		rc = -ENOMEM;
		goto done;
	}
	size_t hn = 0;
	for (unsigned i = 0; i < n; i++) {
		const struct fg_snapshot *s = snaps[i];
		for (uint32_t a = 0; a < n_idx[i];) {
			uint32_t b = a;
			uint32_t row = s->reqs[idx[i][a]].qrow;
			while (b < n_idx[i] && s->reqs[idx[i][b]].qrow == row)
				b++;
			const struct fg_snap_req *r = &s->reqs[idx[i][a]];
			uint64_t r_now = s->levels[r->level].r;
			heap[hn++] = (struct runner){ .rel = (int64_t)(r->finish - r_now), .tie = s->queues[row].head_tie,
						      .snap = i, .next = a, .end = b, .pos = 0 };
			sift_up(heap, hn - 1);
			a = b;
		}
	}
	uint32_t pos = 0;
	long n_out = 0;
	while (hn) {
		struct runner *top = &heap[0];
		const struct fg_snapshot *s = snaps[top->snap];
		uint32_t ri = idx[top->snap][top->next];
		const struct fg_snap_req *r = &s->reqs[ri];
		if ((!q->has_schema || str_is(s, r, FG_SNAP_FLOW_SCHEMA, q->schema)) &&
		    (!q->has_dist || str_is(s, r, FG_SNAP_DISTINGUISHER, q->dist))) {
			if (*matched >= q->offset && *matched - q->offset < q->limit)
				(*out)[n_out++] = (struct fg_pending_item){ top->snap, ri, pos, top->pos };
			(*matched)++;
		}
		pos++;
		/* The queue's next request is keyed after every queue already in the order. */
		if (++top->next < top->end) {
			const struct fg_snap_req *nx = &s->reqs[idx[top->snap][top->next]];
			top->rel = (int64_t)(nx->finish - s->levels[nx->level].r);
			top->tie = ++ties[top->snap];
			top->pos++;
			sift_down(heap, hn, 0);
		} else {
			heap[0] = heap[--hn];
			sift_down(heap, hn, 0);
		}
	}
	counts->waiting = pos;
	rc = n_out;
done:
	if (idx)
		for (unsigned i = 0; i < n; i++)
			free(idx[i]);
	free(idx);
	free(n_idx);
	free(ties);
	free(heap);
	if (rc <= 0) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

void fg_pending_format_r(uint64_t seat_ns, char *buf, size_t cap)
{
	snprintf(buf, cap, "%" PRIu64 ".%08" PRIu64 "ss", seat_ns / 1000000000u, seat_ns % 1000000000u / 10u);
}
