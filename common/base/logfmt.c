/* SPDX-License-Identifier: Apache-2.0 */
/* logfmt — log lines as text or JSON; see logfmt.h. */
#include "logfmt.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Room kept for what closes a cut line: `"`, then ` truncated=true` or
 * `,"truncated":true}`, and the newline. */
#define FG_LOG_CLOSE_RESERVE 32u

static const char *const level_names[] = { "debug", "info", "warn", "error" };
_Static_assert(FG_LOG_DEBUG == 0 && FG_LOG_ERROR == 3, "level_names follows enum fg_log_level");

const char *fg_log_level_name(enum fg_log_level level)
{
	return (unsigned)level <= FG_LOG_ERROR ? level_names[level] : "error";
}

/* A line being written: limit leaves FG_LOG_CLOSE_RESERVE for the end. */
struct out {
	char *buf;
	size_t len, limit;
	bool truncated;
};

/* Append n bytes whole or not at all (an escape is never cut in two). */
static bool put(struct out *o, const char *s, size_t n)
{
	if (o->truncated || o->len + n > o->limit) {
		o->truncated = true;
		return false;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	return true;
}

static bool puts_(struct out *o, const char *s) { return put(o, s, strlen(s)); }

/* The closing bytes go into the reserve, so they always fit. */
static void put_end(struct out *o, const char *s)
{
	size_t n = strlen(s);
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

/* Characters a text value may hold unquoted (no space, quote, `=` or escape). */
static bool plain(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("-._:/@+,%", c);
}

/* The escapes text and JSON share; NULL for other bytes. */
static const char *short_escape(unsigned char c)
{
	switch (c) {
	case '"': return "\\\"";
	case '\\': return "\\\\";
	case '\n': return "\\n";
	case '\r': return "\\r";
	case '\t': return "\\t";
	default: return NULL;
	}
}

static void text_string(struct out *o, const char *s)
{
	size_t n = strlen(s), i = 0;
	while (i < n && plain((unsigned char)s[i]))
		i++;
	if (n && i == n && o->len + n <= o->limit) {
		put(o, s, n);
		return;
	}
	if (!put(o, "\"", 1))
		return;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[8];
		const char *e = short_escape(c);
		if (!e && (c < 0x20 || c >= 0x7f)) {
			snprintf(esc, sizeof(esc), "\\x%02x", c);
			e = esc;
		}
		if (e ? !puts_(o, e) : !put(o, (const char *)&c, 1))
			break;
	}
	if (o->truncated)
		put_end(o, "\"");
	else
		put(o, "\"", 1);
}

/* The length of the valid UTF-8 sequence at s (n bytes left), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	unsigned char lo = 0x80, hi = 0xbf; /* the second byte's range */
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0; /* overlong */
		else if (c == 0xed)
			hi = 0x9f; /* surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f; /* above U+10FFFF */
	} else
		return 0;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t k = 2; k < len; k++)
		if ((s[k] & 0xc0) != 0x80)
			return 0;
	return len;
}

static void json_string(struct out *o, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);
	if (!put(o, "\"", 1))
		return;
	for (size_t i = 0; i < n;) {
		unsigned char c = p[i];
		char esc[8];
		const char *e = short_escape(c);
		size_t step = 1;
		if (!e && c < 0x20) {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			e = esc;
		} else if (!e && c >= 0x80) {
			step = utf8_len(p + i, n - i);
			if (!step) {
				step = 1;
				e = "\\ufffd";
			}
		}
		if (e ? !puts_(o, e) : !put(o, s + i, step))
			break;
		i += step;
	}
	if (o->truncated)
		put_end(o, "\"");
	else
		put(o, "\"", 1);
}

static void put_value(struct out *o, enum fg_log_format format, const struct fg_log_field *f)
{
	char num[24];
	switch (f->type) {
	case FG_LF_STR:
		(format == FG_LOG_JSON ? json_string : text_string)(o, f->s ? f->s : "");
		return;
	case FG_LF_INT:
		snprintf(num, sizeof(num), "%" PRId64, f->i);
		break;
	case FG_LF_UINT:
		snprintf(num, sizeof(num), "%" PRIu64, f->u);
		break;
	case FG_LF_BOOL:
		snprintf(num, sizeof(num), "%s", f->b ? "true" : "false");
		break;
	}
	puts_(o, num);
}

/* One field: ` key=value` or `,"key":value`; nothing once the line is cut. */
static void put_field(struct out *o, enum fg_log_format format, const struct fg_log_field *f)
{
	if (o->truncated)
		return;
	size_t mark = o->len;
	bool ok = format == FG_LOG_JSON ? puts_(o, ",\"") && puts_(o, f->key) && puts_(o, "\":")
					: puts_(o, " ") && puts_(o, f->key) && puts_(o, "=");
	size_t value = o->len;
	if (ok)
		put_value(o, format, f);
	if (o->len == value)
		o->len = mark; /* a key without its value would not parse */
}

size_t fg_logfmt_line(char *buf, size_t cap, enum fg_log_format format, uint64_t wall_ns, enum fg_log_level level,
		      const char *msg, const struct fg_log_field *fields, unsigned n_fields)
{
	if (cap > FG_LOG_LINE_MAX)
		cap = FG_LOG_LINE_MAX;
	/* The reserve, and the NUL after the newline. */
	struct out o = { .buf = buf, .len = 0, .limit = cap - FG_LOG_CLOSE_RESERVE - 1 };
	time_t sec = (time_t)(wall_ns / 1000000000u);
	struct tm tm;
	char ts[40];
	gmtime_r(&sec, &tm);
	snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		 tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned)(wall_ns % 1000000000u / 1000000u));
	struct fg_log_field head[3] = { FG_LOG_STR("ts", ts), FG_LOG_STR("level", fg_log_level_name(level)),
					FG_LOG_STR("msg", msg) };
	if (format == FG_LOG_JSON) {
		put(&o, "{\"ts\":", 6);
		put_value(&o, format, &head[0]);
		for (unsigned i = 1; i < 3; i++)
			put_field(&o, format, &head[i]);
	} else {
		put(&o, "ts=", 3);
		put_value(&o, format, &head[0]);
		for (unsigned i = 1; i < 3; i++)
			put_field(&o, format, &head[i]);
	}
	for (unsigned i = 0; i < n_fields; i++)
		put_field(&o, format, &fields[i]);
	if (format == FG_LOG_JSON)
		put_end(&o, o.truncated ? ",\"truncated\":true}\n" : "}\n");
	else
		put_end(&o, o.truncated ? " truncated=true\n" : "\n");
	buf[o.len] = 0;
	return o.len;
}

bool fg_log_burst_allow(struct fg_log_burst *b, uint64_t now, uint64_t *suppressed)
{
	if (now - b->start_ns >= b->window_ns) {
		b->start_ns = now;
		b->used = 0;
	}
	if (b->used >= b->max) {
		b->suppressed++;
		return false;
	}
	b->used++;
	*suppressed = b->suppressed;
	b->suppressed = 0;
	return true;
}

void fg_log_tally_init(struct fg_log_tally *t, uint64_t interval_ns, const uint64_t *totals, unsigned n, uint64_t now)
{
	*t = (struct fg_log_tally){ .interval_ns = interval_ns, .last_ns = now,
				    .n = n < FG_LOG_TALLY_MAX ? n : FG_LOG_TALLY_MAX };
	memcpy(t->seen, totals, t->n * sizeof(t->seen[0]));
}

bool fg_log_tally_due(struct fg_log_tally *t, const uint64_t *totals, uint64_t *deltas, uint64_t now)
{
	if (now - t->last_ns < t->interval_ns)
		return false;
	for (unsigned i = 0; i < t->n; i++) {
		deltas[i] = totals[i] >= t->seen[i] ? totals[i] - t->seen[i] : 0;
		t->seen[i] = totals[i];
	}
	t->last_ns = now;
	return true;
}
