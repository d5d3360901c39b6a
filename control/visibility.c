/* SPDX-License-Identifier: Apache-2.0 */
/* visibility — snapshots asked of the workers, rendered; see visibility.h. */
#include "visibility.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "duration.h"

#define SNAP_WAIT_STEP_NS 200000ull /* between looks at the boxes while waiting */
#define SNAP_SLACK 1024u            /* requests a buffer holds beyond the counts read when asking */

struct fg_vis {
	pthread_mutex_t mu;                  /* one snapshot at a time (HTTP and control threads) */
	unsigned n;
	struct fg_worker_stats *const *stats;
	uint32_t max_requests;
	struct fg_snap_box *boxes;           /* n, cache-line aligned */
	struct fg_snapshot **lent;           /* n: a buffer a worker has not given back yet, or NULL */
};

struct fg_vis *fg_vis_create(unsigned n, struct fg_worker_stats *const *stats, uint32_t max_requests)
{
	struct fg_vis *v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	v->n = n;
	v->stats = stats;
	v->max_requests = max_requests;
	v->boxes = aligned_alloc(FG_CACHE_LINE, FG_CACHE_ALIGN(sizeof(*v->boxes) * (n ? n : 1)));
	v->lent = calloc(n ? n : 1, sizeof(*v->lent));
	if (!v->boxes || !v->lent || pthread_mutex_init(&v->mu, NULL)) {
		free(v->boxes);
		free(v->lent);
		free(v);
		return NULL;
	}
	memset(v->boxes, 0, sizeof(*v->boxes) * n);
	return v;
}

struct fg_snap_box *fg_vis_box(struct fg_vis *v, unsigned worker) { return &v->boxes[worker]; }

void fg_vis_free(struct fg_vis *v)
{
	if (!v)
		return;
	for (unsigned i = 0; i < v->n; i++)
		fg_snapshot_free(v->lent[i]);
	pthread_mutex_destroy(&v->mu);
	free(v->boxes);
	free(v->lent);
	free(v);
}

/* --- taking snapshots ---------------------------------------------------------- */

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / FG_NS_PER_SEC), (long)(ns % FG_NS_PER_SEC) };
	nanosleep(&ts, NULL);
}

/* Whether worker i has given its buffer back (acquire: its writes are ours). */
static bool returned(struct fg_vis *v, unsigned i)
{
	return __atomic_load_n(&v->boxes[i].done, __ATOMIC_ACQUIRE) == __atomic_load_n(&v->boxes[i].asked,
											 __ATOMIC_RELAXED);
}

/*
 * One snapshot of every worker into snaps[0..n), which the caller then owns.
 * 0, or -ETIMEDOUT / -ENOMEM with a one-line reason; on failure nothing is
 * the caller's, and a buffer a worker still holds stays lent (v->lent).
 */
static int take(struct fg_vis *v, const char *level, uint32_t flags, struct fg_snapshot **snaps, char *err,
		size_t errlen)
{
	int rc = 0;
	/* One deadline for the wait for the lock and for the workers: a query
	 * answers within FG_SNAP_TIMEOUT_NS, busy (503) if another holds it. */
	uint64_t deadline = fg_now_ns() + FG_SNAP_TIMEOUT_NS;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until); /* pthread_mutex_timedlock's clock */
	until.tv_sec += (time_t)(FG_SNAP_TIMEOUT_NS / 1000000000u);
	until.tv_nsec += (long)(FG_SNAP_TIMEOUT_NS % 1000000000u);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	if (pthread_mutex_timedlock(&v->mu, &until)) {
		snprintf(err, errlen, "another snapshot query is under way; try again");
		return -ETIMEDOUT;
	}
	/* A worker that timed out last time may still hold that buffer. */
	for (unsigned i = 0; i < v->n; i++) {
		while (!returned(v, i) && fg_now_ns() < deadline)
			sleep_ns(SNAP_WAIT_STEP_NS);
		if (!returned(v, i)) {
			snprintf(err, errlen, "worker %u is still copying an earlier snapshot", i);
			pthread_mutex_unlock(&v->mu);
			return -ETIMEDOUT;
		}
		fg_snapshot_free(v->lent[i]); /* a late answer nobody waits for any more */
		v->lent[i] = NULL;
	}
	unsigned asked = 0;
	for (unsigned i = 0; i < v->n; i++) {
		uint64_t count = (uint64_t)FG_STAT_GET(v->stats[i]->waiting) + FG_STAT_GET(v->stats[i]->executing);
		uint64_t cap = count + count / 4 + SNAP_SLACK;
		if (cap > v->max_requests + (uint64_t)SNAP_SLACK)
			cap = v->max_requests + (uint64_t)SNAP_SLACK; /* re-walks of a queue copy some twice */
		uint64_t cap_queues = cap; /* a queue listed holds a request, unless idle ones are asked for */
		if (flags & FG_SNAP_ALL_QUEUES)
			for (unsigned k = 0; k < FG_MAX_LEVELS; k++)
				if (__atomic_load_n(&v->stats[i]->levels[k].used, __ATOMIC_ACQUIRE))
					cap_queues += FG_STAT_GET(v->stats[i]->levels[k].queues);
		snaps[i] = fg_snapshot_new(level, flags, (uint32_t)cap, (uint32_t)cap_queues);
		if (!snaps[i]) {
			snprintf(err, errlen, "out of memory for the snapshot of worker %u", i);
			rc = -ENOMEM;
			break;
		}
		v->lent[i] = snaps[i];
		v->boxes[i].buf = snaps[i];
		__atomic_store_n(&v->boxes[i].asked, v->boxes[i].asked + 1, __ATOMIC_RELEASE);
		asked++;
	}
	for (unsigned i = 0; i < asked; i++)
		while (!returned(v, i) && fg_now_ns() < deadline)
			sleep_ns(SNAP_WAIT_STEP_NS);
	for (unsigned i = 0; i < asked; i++) {
		if (!returned(v, i)) {
			if (!rc)
				snprintf(err, errlen, "worker %u did not answer within %.1f s", i,
					 (double)FG_SNAP_TIMEOUT_NS / 1e9);
			rc = rc ? rc : -ETIMEDOUT;
			continue; /* stays lent: freed once it comes back */
		}
		v->lent[i] = NULL;
	}
	if (rc)
		for (unsigned i = 0; i < asked; i++)
			if (!v->lent[i])
				fg_snapshot_free(snaps[i]);
	pthread_mutex_unlock(&v->mu);
	return rc;
}

static void free_snaps(struct fg_snapshot **snaps, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		fg_snapshot_free(snaps[i]);
}

/* --- output ---------------------------------------------------------------------- */

struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void sb_grow(struct sbuf *b, size_t more)
{
	if (b->oom || b->len + more + 1 <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->len + more + 1)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p) {
		b->oom = true;
		return;
	}
	b->p = p;
	b->cap = cap;
}

#define SB_LIT(b, lit) sb_put(b, lit, sizeof(lit) - 1)

static void sb_put(struct sbuf *b, const char *s, size_t n)
{
	sb_grow(b, n);
	if (b->oom)
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

__attribute__((format(printf, 2, 3))) static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(small)) {
		sb_put(b, small, (size_t)n);
		return;
	}
	sb_grow(b, (size_t)n);
	if (b->oom)
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* The length of the valid UTF-8 character at p (2-4 bytes, no overlong
 * form, no surrogate, at most U+10FFFF), its code point in *cp; 0 if none. */
static size_t utf8_char(const unsigned char *p, size_t n, uint32_t *cp)
{
	unsigned len = p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 && p[0] < 0xe0 ? 2 : 0;
	if (!len || len > n || (len == 4 && p[0] > 0xf4))
		return 0;
	uint32_t c = p[0] & (0x7f >> len);
	for (unsigned i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if ((len == 3 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) || (len == 4 && (c < 0x10000 || c > 0x10ffff)))
		return 0;
	*cp = c;
	return len;
}

/* Line separators and bidi controls: shown escaped, never raw. */
static bool deceptive(uint32_t c)
{
	return (c >= 0x80 && c < 0xa0) || c == 0x2028 || c == 0x2029 || (c >= 0x202a && c <= 0x202e) ||
	       (c >= 0x2066 && c <= 0x2069) || c == 0x200e || c == 0x200f || c == 0x061c;
}

/* Hostile bytes, made safe: json adds quotes and JSON escapes; text (a
 * table cell) writes every byte that is not printable as "\xNN" and so
 * never contains a tab, a newline or a backslash of its own. */
static void put_escaped(struct sbuf *b, const char *s, size_t n, bool json)
{
	const unsigned char *p = (const unsigned char *)s;
	if (json)
		sb_put(b, "\"", 1);
	for (size_t i = 0; i < n;) {
		unsigned char c = p[i];
		uint32_t cp = 0;
		size_t len = 0;
		if (c >= 0x20 && c < 0x7f) {
			if (json && (c == '"' || c == '\\'))
				sb_printf(b, "\\%c", c);
			else if (!json && c == '\\')
				sb_put(b, "\\x5c", 4);
			else
				sb_put(b, (const char *)&p[i], 1);
			i++;
		} else if (c >= 0x80 && (len = utf8_char(&p[i], n - i, &cp)) && !deceptive(cp)) {
			sb_put(b, (const char *)&p[i], len);
			i += len;
		} else if (c >= 0x80 && len && json) {
			sb_printf(b, "\\u%04x", cp);
			i += len;
		} else if (json && c < 0x80) {
			sb_printf(b, "\\u%04x", c);
			i++;
		} else {
			sb_printf(b, json ? "\\\\x%02x" : "\\x%02x", c);
			i++;
		}
	}
	if (json)
		sb_put(b, "\"", 1);
}

static void put_str(struct sbuf *b, const struct fg_snapshot *s, const struct fg_snap_req *r, enum fg_snap_str k,
		    bool json)
{
	size_t len;
	const char *p = fg_snap_str(s, r, k, &len);
	put_escaped(b, p, len, json);
}

static void answer_line(struct fg_vis_answer *a, unsigned status, bool json, const char *msg)
{
	struct sbuf b = { 0 };
	if (json) {
		sb_printf(&b, "{\"kind\":\"Status\",\"status\":\"Failure\",\"code\":%u,\"message\":", status);
		put_escaped(&b, msg, strlen(msg), true);
		sb_put(&b, "}\n", 2);
	} else {
		put_escaped(&b, msg, strlen(msg), false);
		sb_put(&b, "\n", 1);
	}
	a->status = b.oom ? 500 : status;
	a->body = b.p;
	a->len = b.len;
}

void fg_vis_error(struct fg_vis_answer *a, unsigned status, const char *msg, bool json)
{
	answer_line(a, status, json, msg);
}

static void finish(struct fg_vis_answer *a, struct sbuf *b)
{
	if (b->oom) {
		free(b->p);
		answer_line(a, 500, false, "out of memory");
		return;
	}
	a->status = 200;
	a->body = b->p ? b->p : strdup("");
	a->len = b->len;
}

/* A monotonic instant as wall-clock RFC 3339 with nanoseconds (Go's RFC3339Nano). */
static void wall_time(uint64_t mono_ns, int64_t mono_to_wall, char *buf, size_t cap)
{
	int64_t t = (int64_t)mono_ns + mono_to_wall;
	time_t sec = (time_t)(t / (int64_t)FG_NS_PER_SEC);
	long ns = (long)(t % (int64_t)FG_NS_PER_SEC);
	struct tm tm;
	gmtime_r(&sec, &tm);
	size_t n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
	if (ns) {
		char frac[16];
		snprintf(frac, sizeof(frac), ".%09ld", ns);
		for (size_t e = strlen(frac); frac[e - 1] == '0'; e--)
			frac[e - 1] = 0; /* RFC3339Nano drops trailing zeros */
		snprintf(buf + n, cap - n, "%sZ", frac);
	} else {
		snprintf(buf + n, cap - n, "Z");
	}
}

static int64_t mono_to_wall(void)
{
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	return (int64_t)rt.tv_sec * (int64_t)FG_NS_PER_SEC + rt.tv_nsec - (int64_t)fg_now_ns();
}

/* --- pending requests -------------------------------------------------------------- */

static void pending_item(struct sbuf *b, struct fg_snapshot *const *snaps, const struct fg_pending_item *it,
			 bool details)
{
	const struct fg_snapshot *s = snaps[it->snap];
	const struct fg_snap_req *r = &s->reqs[it->req];
	char ip[INET_ADDRSTRLEN] = "", fin[48];
	inet_ntop(AF_INET, &r->client.ip, ip, sizeof(ip));
	/* Signed: a head blocked for seats falls behind R while R moves on. */
	uint64_t ahead = r->finish - s->levels[r->level].r;
	bool behind = (int64_t)ahead < 0;
	fin[0] = '-';
	fg_pending_format_r(behind ? 0 - ahead : ahead, fin + behind, sizeof(fin) - 1);
	double waited = s->now_ns > r->arrival_ns ? (double)(s->now_ns - r->arrival_ns) / 1e9 : 0;
	sb_printf(b, "{\"positionInPriorityLevel\":%" PRIu32 ",\"positionInQueue\":%" PRIu32 ",\"queue\":%" PRIu32
		  ",\"worker\":%u,\"flowSchema\":", it->pos_level, it->pos_queue, r->queue, s->worker);
	put_str(b, s, r, FG_SNAP_FLOW_SCHEMA, true);
	SB_LIT(b, ",\"distinguisher\":");
	put_str(b, s, r, FG_SNAP_DISTINGUISHER, true);
	sb_printf(b, ",\"initialSeats\":%u,\"finalSeats\":%u,\"waitedSeconds\":%.6f,\"requestId\":%" PRIu64
		  ",\"client\":\"%s:%u\",\"virtualFinishAhead\":\"%s\"", r->initial_seats, r->final_seats, waited,
		  r->client_id, ip, (unsigned)ntohs(r->client.port), fin);
	if (details) {
		static const char *const keys[] = { "user", "namespace", "verb", "apiGroup",
						    "resource", "subresource", "name", "path" };
		SB_LIT(b, ",\"attributes\":{");
		for (unsigned k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			sb_printf(b, "%s\"%s\":", k ? "," : "", keys[k]);
			put_str(b, s, r, (enum fg_snap_str)(FG_SNAP_USER + k), true);
		}
		sb_put(b, "}", 1);
	}
	sb_put(b, "}", 1);
}

void fg_vis_pending(struct fg_vis *v, const char *level, const struct fg_pending_query *q, struct fg_vis_answer *a)
{
	memset(a, 0, sizeof(*a));
	if (!level || !*level || strlen(level) >= FG_LEVEL_NAME_MAX) {
		answer_line(a, 404, true, "no such priority level");
		return;
	}
	struct fg_snapshot *snaps[FG_MAX_WORKER_CORES] = { 0 };
	char err[128];
	int rc = take(v, level, q->details ? FG_SNAP_DETAILS : 0, snaps, err, sizeof(err));
	if (rc) {
		answer_line(a, rc == -ENOMEM ? 500 : 503, true, err);
		return;
	}
	bool found = false, complete = true;
	for (unsigned i = 0; i < v->n; i++) {
		found |= snaps[i]->n_levels > 0;
		complete &= !snaps[i]->truncated;
	}
	if (!found) {
		free_snaps(snaps, v->n);
		char line[FG_LEVEL_NAME_MAX * 4 + 40] = "no such priority level: ";
		struct sbuf nb = { 0 };
		put_escaped(&nb, level, strlen(level), false);
		if (nb.p)
			snprintf(line + strlen(line), sizeof(line) - strlen(line), "%s", nb.p);
		free(nb.p);
		answer_line(a, 404, true, line);
		return;
	}
	struct fg_pending_item *items;
	struct fg_pending_counts counts;
	long n = fg_pending_order(snaps, v->n, q, &items, &counts);
	if (n < 0) {
		free_snaps(snaps, v->n);
		answer_line(a, 500, true, "out of memory");
		return;
	}
	struct sbuf b = { 0 };
	SB_LIT(&b, "{\"kind\":\"PendingRequestsSummary\",\"apiVersion\":\"visibility.fairgate.io/v1\","
		   "\"metadata\":{\"priorityLevel\":");
	put_escaped(&b, level, strlen(level), true);
	sb_printf(&b, ",\"waiting\":%" PRIu64 ",\"matched\":%" PRIu64 ",\"offset\":%" PRIu32 ",\"limit\":%" PRIu32
		  ",\"complete\":%s},\"items\":[", counts.waiting, counts.matched, q->offset, q->limit,
		  complete ? "true" : "false");
	for (long i = 0; i < n; i++) {
		if (i)
			sb_put(&b, ",", 1);
		pending_item(&b, snaps, &items[i], q->details);
	}
	sb_put(&b, "]}\n", 3);
	free(items);
	free_snaps(snaps, v->n);
	finish(a, &b);
}

/* --- dumps ------------------------------------------------------------------------ */

/* A table: cells as escaped text, rows of n_cols. */
struct table {
	const char *const *cols;
	const bool *numeric;   /* per column: a JSON number, not a string */
	unsigned n_cols;
	struct sbuf cells;     /* cells separated by '\t', rows by '\n' (escaped text holds neither) */
	unsigned cell;         /* cells in the current row */
};

static void cell_start(struct table *t)
{
	if (t->cell++)
		sb_put(&t->cells, "\t", 1);
}

static void cell_printf(struct table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cell_printf(struct table *t, const char *fmt, ...)
{
	char buf[128];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	cell_start(t);
	put_escaped(&t->cells, buf, strlen(buf), false);
}

static void cell_bytes(struct table *t, const char *p, size_t n)
{
	cell_start(t);
	put_escaped(&t->cells, p, n, false);
}

static void row_end(struct table *t)
{
	sb_put(&t->cells, "\n", 1);
	t->cell = 0;
}

/* Kubernetes' text: columns joined by ",\t", aligned by the tabwriter. */
static void render(struct table *t, bool json, struct fg_vis_answer *a)
{
	struct sbuf b = { 0 };
	if (json) {
		sb_put(&b, "[", 1);
		const char *p = t->cells.p ? t->cells.p : "";
		for (unsigned row = 0; *p; row++) {
			sb_put(&b, row ? ",{" : "{", row ? 2 : 1);
			for (unsigned c = 0; c < t->n_cols; c++) {
				size_t n = strcspn(p, "\t\n");
				sb_printf(&b, "%s\"%s\":", c ? "," : "", t->cols[c]);
				if (t->numeric[c])
					sb_put(&b, p, n);
				else
					put_escaped(&b, p, n, true); /* already printable: only quotes to add */
				p += n;
				if (*p == '\t')
					p++;
			}
			sb_put(&b, "}", 1);
			if (*p == '\n')
				p++;
		}
		sb_put(&b, "]\n", 2);
		free(t->cells.p);
		if (b.oom || t->cells.oom) {
			free(b.p);
			answer_line(a, 500, false, "out of memory");
			return;
		}
		finish(a, &b);
		return;
	}
	for (unsigned c = 0; c < t->n_cols; c++)
		sb_printf(&b, "%s%s", c ? ",\t" : "", t->cols[c]);
	sb_put(&b, "\n", 1);
	for (const char *p = t->cells.p ? t->cells.p : ""; *p; p++)
		sb_put(&b, *p == '\t' ? ",\t" : p, *p == '\t' ? 2 : 1);
	free(t->cells.p);
	if (b.oom || t->cells.oom) {
		free(b.p);
		answer_line(a, 500, false, "out of memory");
		return;
	}
	size_t len;
	char *aligned = fg_vis_tabwrite(b.p, &len);
	free(b.p);
	if (!aligned) {
		answer_line(a, 500, false, "out of memory");
		return;
	}
	a->status = 200;
	a->body = aligned;
	a->len = len;
}

static int by_name(const void *x, const void *y)
{
	return strcmp(((const struct fg_snap_level *)x)->name, ((const struct fg_snap_level *)y)->name);
}

/* The levels of all snapshots summed by name, sorted. */
static unsigned merge_levels(struct fg_snapshot *const *snaps, unsigned n, struct fg_snap_level *out)
{
	unsigned k = 0;
	for (unsigned i = 0; i < n; i++)
		for (uint32_t j = 0; j < snaps[i]->n_levels; j++) {
			const struct fg_snap_level *l = &snaps[i]->levels[j];
			unsigned m = 0;
			while (m < k && strcmp(out[m].name, l->name))
				m++;
			if (m == k) {
				if (k == FG_MAX_LEVELS)
					continue;
				out[k++] = *l;
				continue;
			}
			out[m].live |= l->live;
			out[m].n_waiting += l->n_waiting;
			out[m].n_executing += l->n_executing;
			out[m].seats_in_use += l->seats_in_use;
			out[m].active_queues += l->active_queues;
			out[m].dispatched += l->dispatched;
			out[m].rejected += l->rejected;
			out[m].timed_out += l->timed_out;
		}
	qsort(out, k, sizeof(*out), by_name);
	return k;
}

static void dump_levels(struct fg_snapshot *const *snaps, unsigned n, struct table *t)
{
	static const char *const cols[] = { "PriorityLevelName", "ActiveQueues",	 "IsIdle",
					    "IsQuiescing",	 "WaitingRequests",	 "ExecutingRequests",
					    "DispatchedRequests", "RejectedRequests", "TimedoutRequests",
					    "CancelledRequests" };
	static const bool num[] = { 0, 1, 1, 1, 1, 1, 1, 1, 1, 1 };
	t->cols = cols;
	t->numeric = num;
	t->n_cols = 10;
	struct fg_snap_level *lv = malloc(sizeof(*lv) * FG_MAX_LEVELS);
	if (!lv) {
		t->cells.oom = true;
		return;
	}
	unsigned k = merge_levels(snaps, n, lv);
	for (unsigned i = 0; i < k; i++) {
		const struct fg_snap_level *l = &lv[i];
		cell_bytes(t, l->name, strnlen(l->name, sizeof(l->name)));
		cell_printf(t, "%u", l->active_queues);
		cell_printf(t, "%s", l->n_waiting == 0 && l->seats_in_use == 0 ? "true" : "false");
		cell_printf(t, "%s", l->live ? "false" : "true");
		cell_printf(t, "%u", l->n_waiting);
		cell_printf(t, "%u", l->n_executing);
		cell_printf(t, "%" PRIu64, l->dispatched);
		cell_printf(t, "%" PRIu64, l->rejected);
		cell_printf(t, "%" PRIu64, l->timed_out);
		cell_printf(t, "0");
		row_end(t);
	}
	free(lv);
}

struct qref {
	const struct fg_snapshot *s;
	const struct fg_snap_queue *q;
};

static int by_level_queue(const void *x, const void *y)
{
	const struct qref *a = x, *b = y;
	int c = strcmp(a->s->levels[a->q->level].name, b->s->levels[b->q->level].name);
	return c ? c : (a->q->index > b->q->index) - (a->q->index < b->q->index);
}

static void dump_queues(struct fg_snapshot *const *snaps, unsigned n, struct table *t)
{
	static const char *const cols[] = { "PriorityLevelName", "Index",	  "PendingRequests",
					    "ExecutingRequests", "SeatsInUse",	  "NextDispatchR",
					    "InitialSeatsSum",	 "MaxSeatsSum", "TotalWorkSum" };
	static const bool num[] = { 0, 1, 1, 1, 1, 0, 1, 1, 0 };
	t->cols = cols;
	t->numeric = num;
	t->n_cols = 9;
	size_t total = 0;
	for (unsigned i = 0; i < n; i++)
		total += snaps[i]->n_queues;
	struct qref *refs = malloc(sizeof(*refs) * (total ? total : 1));
	if (!refs) {
		t->cells.oom = true;
		return;
	}
	size_t k = 0;
	for (unsigned i = 0; i < n; i++)
		for (uint32_t j = 0; j < snaps[i]->n_queues; j++)
			refs[k++] = (struct qref){ snaps[i], &snaps[i]->queues[j] };
	qsort(refs, k, sizeof(*refs), by_level_queue);
	/* Every worker has its own queue q (a request waits where it arrived):
	 * one row per level and index, the workers' queues q added up, as the
	 * level's queue q (an idle one comes from one worker only, pending.h);
	 * NextDispatchR the earliest of those with requests waiting. */
	for (size_t i = 0, j; i < k; i = j) {
		const struct fg_snap_queue *q = refs[i].q;
		const char *name = refs[i].s->levels[q->level].name;
		struct fg_snap_queue sum = *q;
		for (j = i + 1; j < k && refs[j].q->index == q->index &&
				!strcmp(refs[j].s->levels[refs[j].q->level].name, name); j++) {
			const struct fg_snap_queue *o = refs[j].q;
			if (o->n_waiting && (!sum.n_waiting || (int64_t)(o->f_prev - sum.f_prev) < 0))
				sum.f_prev = o->f_prev;
			sum.n_waiting += o->n_waiting;
			sum.n_executing += o->n_executing;
			sum.seats_executing += o->seats_executing;
			sum.initial_seats_sum += o->initial_seats_sum;
			sum.max_seats_sum += o->max_seats_sum;
			sum.work_sum += o->work_sum;
		}
		char r[48], work[48];
		fg_pending_format_r(sum.f_prev, r, sizeof(r));
		fg_pending_format_r(sum.work_sum, work, sizeof(work));
		cell_bytes(t, name, strnlen(name, FG_LEVEL_NAME_MAX));
		cell_printf(t, "%" PRIu32, sum.index);
		cell_printf(t, "%" PRIu32, sum.n_waiting);
		cell_printf(t, "%" PRIu32, sum.n_executing);
		cell_printf(t, "%" PRIu32, sum.seats_executing);
		cell_printf(t, "%s", r);
		cell_printf(t, "%" PRIu64, sum.initial_seats_sum);
		cell_printf(t, "%" PRIu64, sum.max_seats_sum);
		cell_printf(t, "%s", work);
		row_end(t);
	}
	free(refs);
}

struct rref {
	const struct fg_snapshot *s;
	const struct fg_snap_req *r;
	int64_t queue, pos;
};

static int by_level_queue_pos(const void *x, const void *y)
{
	const struct rref *a = x, *b = y;
	int c = strcmp(a->s->levels[a->r->level].name, b->s->levels[b->r->level].name);
	if (c)
		return c;
	bool ae = a->r->state == FG_SNAP_EXECUTING_REQ, be = b->r->state == FG_SNAP_EXECUTING_REQ;
	if (ae != be)
		return ae - be; /* waiting first, as Kubernetes lists queues then executing */
	if (a->queue != b->queue)
		return a->queue < b->queue ? -1 : 1;
	if (a->pos != b->pos)
		return a->pos < b->pos ? -1 : 1;
	return (a->r->arrival_ns > b->r->arrival_ns) - (a->r->arrival_ns < b->r->arrival_ns);
}

static void dump_requests(struct fg_snapshot *const *snaps, unsigned n, bool details, struct table *t)
{
	static const char *const cols[] = { "PriorityLevelName", "FlowSchemaName", "QueueIndex", "RequestIndexInQueue",
					    "FlowDistingsher",	 "ArriveTime",	   "InitialSeats", "FinalSeats",
					    "AdditionalLatency", "StartTime",	   "UserName",	   "Verb",
					    "APIPath",		 "Namespace",	   "Name",	   "APIVersion",
					    "Resource",		 "SubResource" };
	static const bool num[] = { 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	t->cols = cols;
	t->numeric = num;
	t->n_cols = details ? 18 : 10;
	size_t total = 0;
	for (unsigned i = 0; i < n; i++)
		total += snaps[i]->n_reqs;
	struct fg_pending_query q = { .limit = total > UINT32_MAX ? UINT32_MAX : (uint32_t)total };
	struct fg_pending_item *items = NULL;
	struct fg_pending_counts counts;
	long n_items = q.limit ? fg_pending_order(snaps, n, &q, &items, &counts) : 0;
	struct rref *refs = malloc(sizeof(*refs) * (total ? total : 1));
	if (n_items < 0 || !refs) {
		free(items);
		free(refs);
		t->cells.oom = true;
		return;
	}
	size_t k = 0;
	for (long i = 0; i < n_items; i++) {
		const struct fg_snap_req *r = &snaps[items[i].snap]->reqs[items[i].req];
		refs[k++] = (struct rref){ snaps[items[i].snap], r, r->queue, items[i].pos_queue };
	}
	free(items);
	for (unsigned i = 0; i < n; i++)
		for (uint32_t j = 0; j < snaps[i]->n_reqs; j++) {
			const struct fg_snap_req *r = &snaps[i]->reqs[j];
			if (r->state == FG_SNAP_EXECUTING_REQ)
				refs[k++] = (struct rref){ snaps[i], r, r->queue == UINT32_MAX ? -1 : (int64_t)r->queue,
							   -1 };
		}
	qsort(refs, k, sizeof(*refs), by_level_queue_pos);
	int64_t off = mono_to_wall();
	for (size_t i = 0; i < k; i++) {
		const struct fg_snapshot *s = refs[i].s;
		const struct fg_snap_req *r = refs[i].r;
		char arrive[48], start[48] = "0001-01-01T00:00:00Z", lat[32];
		wall_time(r->arrival_ns, off, arrive, sizeof(arrive));
		if (r->state == FG_SNAP_EXECUTING_REQ)
			wall_time(r->dispatch_ns, off, start, sizeof(start));
		fg_duration_format((int64_t)r->extra_latency_ns, lat, sizeof(lat));
		const char *lname = s->levels[r->level].name;
		cell_bytes(t, lname, strnlen(lname, FG_LEVEL_NAME_MAX));
		cell_start(t);
		put_str(&t->cells, s, r, FG_SNAP_FLOW_SCHEMA, false);
		cell_printf(t, "%" PRId64, refs[i].queue);
		cell_printf(t, "%" PRId64, refs[i].pos);
		cell_start(t);
		put_str(&t->cells, s, r, FG_SNAP_DISTINGUISHER, false);
		cell_printf(t, "%s", arrive);
		cell_printf(t, "%u", r->initial_seats);
		cell_printf(t, "%u", r->final_seats);
		cell_printf(t, "%s", lat);
		cell_printf(t, "%s", start);
		if (details) {
			static const enum fg_snap_str det[] = { FG_SNAP_USER, FG_SNAP_VERB, FG_SNAP_PATH,
								FG_SNAP_NAMESPACE, FG_SNAP_NAME, FG_SNAP_STR__COUNT,
								FG_SNAP_RESOURCE, FG_SNAP_SUBRESOURCE };
			for (unsigned d = 0; d < sizeof(det) / sizeof(det[0]); d++) {
				cell_start(t);
				if (det[d] != FG_SNAP_STR__COUNT) /* APIVersion: fairgate's requests carry none */
					put_str(&t->cells, s, r, det[d], false);
			}
		}
		row_end(t);
	}
	free(refs);
}

void fg_vis_dump(struct fg_vis *v, enum fg_vis_dump what, bool details, bool json, struct fg_vis_answer *a)
{
	memset(a, 0, sizeof(*a));
	uint32_t flags = FG_SNAP_ALL_LEVELS;
	if (what == FG_VIS_DUMP_QUEUES)
		flags |= FG_SNAP_ALL_QUEUES;
	if (what == FG_VIS_DUMP_REQUESTS)
		flags |= FG_SNAP_EXECUTING | (details ? FG_SNAP_DETAILS : 0);
	struct fg_snapshot *snaps[FG_MAX_WORKER_CORES] = { 0 };
	char err[128];
	int rc = take(v, "", flags, snaps, err, sizeof(err));
	if (rc) {
		answer_line(a, rc == -ENOMEM ? 500 : 503, json, err);
		return;
	}
	struct table t = { 0 };
	if (what == FG_VIS_DUMP_LEVELS)
		dump_levels(snaps, v->n, &t);
	else if (what == FG_VIS_DUMP_QUEUES)
		dump_queues(snaps, v->n, &t);
	else
		dump_requests(snaps, v->n, details, &t);
	free_snaps(snaps, v->n);
	render(&t, json, a);
}

/* --- the tabwriter ------------------------------------------------------------------ */

#define TAB_MINWIDTH 8u
#define TAB_PADDING 1u
#define TAB_MAX_COLS 32u

/* A cell's width as Go's tabwriter counts it: in runes (UTF-8 characters),
 * not bytes. */
static size_t runes(const char *p, size_t n)
{
	size_t r = 0;
	for (size_t i = 0; i < n; i++)
		r += ((unsigned char)p[i] & 0xc0) != 0x80;
	return r;
}

char *fg_vis_tabwrite(const char *text, size_t *len)
{
	size_t width[TAB_MAX_COLS] = { 0 };
	/* Widths: every line has the same columns here, so one block per column. */
	for (const char *p = text; *p;) {
		unsigned c = 0;
		for (;;) {
			size_t n = strcspn(p, "\t\n");
			if (p[n] != '\t') {
				p += n + (p[n] == '\n');
				break;
			}
			size_t r = runes(p, n);
			if (c < TAB_MAX_COLS && r + TAB_PADDING > width[c])
				width[c] = r + TAB_PADDING;
			c++;
			p += n + 1;
		}
	}
	struct sbuf b = { 0 };
	for (const char *p = text; *p;) {
		unsigned c = 0;
		for (;;) {
			size_t n = strcspn(p, "\t\n");
			sb_put(&b, p, n);
			if (p[n] != '\t') {
				if (p[n] == '\n')
					sb_put(&b, "\n", 1);
				p += n + (p[n] == '\n');
				break;
			}
			size_t r = runes(p, n), w = c < TAB_MAX_COLS ? width[c] : r + TAB_PADDING;
			if (w < TAB_MINWIDTH)
				w = TAB_MINWIDTH;
			for (size_t i = r; i < w; i++)
				sb_put(&b, " ", 1);
			c++;
			p += n + 1;
		}
	}
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	*len = b.len;
	return b.p ? b.p : strdup("");
}
