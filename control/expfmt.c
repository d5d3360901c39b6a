/* SPDX-License-Identifier: Apache-2.0 */
/* expfmt — Prometheus text exposition writer; see expfmt.h. */
#include "expfmt.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const type_names[] = {
	[FG_EXPFMT_COUNTER] = "counter", [FG_EXPFMT_GAUGE] = "gauge", [FG_EXPFMT_UNTYPED] = "untyped",
	[FG_EXPFMT_HISTOGRAM] = "histogram",
};

void fg_expfmt_init(struct fg_expfmt *e) { memset(e, 0, sizeof(*e)); }

void fg_expfmt_fini(struct fg_expfmt *e)
{
	free(e->buf);
	memset(e, 0, sizeof(*e));
}

static void fail(struct fg_expfmt *e, int err)
{
	if (!e->err)
		e->err = err;
}

/* Room for n more bytes and a NUL. */
static int reserve(struct fg_expfmt *e, size_t n)
{
	if (e->err)
		return -1;
	if (n > FG_EXPFMT_MAX_BODY || e->len + n >= FG_EXPFMT_MAX_BODY) {
		fail(e, -E2BIG);
		return -1;
	}
	if (e->len + n + 1 <= e->cap)
		return 0;
	size_t cap = e->cap ? e->cap : 4096;
	while (cap < e->len + n + 1)
		cap *= 2;
	char *b = realloc(e->buf, cap);
	if (!b) {
		fail(e, -ENOMEM);
		return -1;
	}
	e->buf = b;
	e->cap = cap;
	return 0;
}

static void put(struct fg_expfmt *e, const char *s, size_t n)
{
	if (reserve(e, n))
		return;
	memcpy(e->buf + e->len, s, n);
	e->len += n;
	e->buf[e->len] = 0;
}

static void puts_(struct fg_expfmt *e, const char *s) { put(e, s, strlen(s)); }

static void printf_(struct fg_expfmt *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void printf_(struct fg_expfmt *e, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n < sizeof(tmp))
		put(e, tmp, (size_t)n);
}

/* s with backslash and newline escaped, and double quote when in_label. */
static void put_escaped(struct fg_expfmt *e, const char *s, int in_label)
{
	for (const char *run = s;; s++) {
		const char *esc = NULL;
		if (*s == '\\')
			esc = "\\\\";
		else if (*s == '\n')
			esc = "\\n";
		else if (*s == '"' && in_label)
			esc = "\\\"";
		if (!esc && *s)
			continue;
		put(e, run, (size_t)(s - run));
		if (!*s)
			return;
		puts_(e, esc);
		run = s + 1;
	}
}

static int name_ok(const char *name, int colon)
{
	if (!name || !*name || (*name >= '0' && *name <= '9'))
		return 0;
	for (const char *p = name; *p; p++) {
		char c = *p;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      (colon && c == ':')))
			return 0;
	}
	return 1;
}

int fg_expfmt_metric_name_ok(const char *name) { return name_ok(name, 1); }

int fg_expfmt_label_name_ok(const char *name) { return name_ok(name, 0) && strncmp(name, "__", 2) != 0; }

void fg_expfmt_family(struct fg_expfmt *e, const char *name, enum fg_expfmt_type type, const char *help)
{
	if ((unsigned)type > FG_EXPFMT_HISTOGRAM || !fg_expfmt_metric_name_ok(name)) {
		fail(e, -EINVAL);
		return;
	}
	puts_(e, "# HELP ");
	puts_(e, name);
	puts_(e, " ");
	put_escaped(e, help ? help : "", 0);
	puts_(e, "\n# TYPE ");
	puts_(e, name);
	puts_(e, " ");
	puts_(e, type_names[type]);
	puts_(e, "\n");
}

/* "name{...} " or an error; the value follows. */
static int sample_head(struct fg_expfmt *e, const char *name, const struct fg_expfmt_label *labels, unsigned n)
{
	if (!fg_expfmt_metric_name_ok(name) || n > FG_EXPFMT_MAX_LABELS || (n && !labels)) {
		fail(e, -EINVAL);
		return -1;
	}
	for (unsigned i = 0; i < n; i++)
		if (!fg_expfmt_label_name_ok(labels[i].name) || !labels[i].value) {
			fail(e, -EINVAL);
			return -1;
		}
	puts_(e, name);
	for (unsigned i = 0; i < n; i++) {
		puts_(e, i ? "," : "{");
		puts_(e, labels[i].name);
		puts_(e, "=\"");
		put_escaped(e, labels[i].value, 1);
		puts_(e, "\"");
	}
	puts_(e, n ? "} " : " ");
	return e->err ? -1 : 0;
}

void fg_expfmt_u64(struct fg_expfmt *e, const char *name, const struct fg_expfmt_label *labels, unsigned n,
		   uint64_t value)
{
	if (!sample_head(e, name, labels, n))
		printf_(e, "%" PRIu64 "\n", value);
}

void fg_expfmt_double(struct fg_expfmt *e, const char *name, const struct fg_expfmt_label *labels, unsigned n,
		      double value)
{
	if (sample_head(e, name, labels, n))
		return;
	if (isnan(value))
		puts_(e, "NaN\n");
	else if (isinf(value))
		puts_(e, value > 0 ? "+Inf\n" : "-Inf\n");
	else
		printf_(e, "%.17g\n", value);
}

void fg_expfmt_histogram(struct fg_expfmt *e, const char *name, const struct fg_expfmt_label *labels, unsigned n,
			 const double *bounds, const uint64_t *counts, unsigned n_bounds, double sum)
{
	char series[256], le[32];
	struct fg_expfmt_label l[FG_EXPFMT_MAX_LABELS];
	if (n >= FG_EXPFMT_MAX_LABELS || (n && !labels) || strlen(name) + sizeof("_bucket") > sizeof(series)) {
		fail(e, -EINVAL);
		return;
	}
	memcpy(l, labels, n * sizeof(*l));
	l[n].name = "le";
	l[n].value = le;
	snprintf(series, sizeof(series), "%s_bucket", name);
	uint64_t total = 0;
	for (unsigned i = 0; i <= n_bounds; i++) {
		total += counts[i];
		if (i < n_bounds)
			snprintf(le, sizeof(le), "%g", bounds[i]);
		else
			snprintf(le, sizeof(le), "+Inf");
		fg_expfmt_u64(e, series, l, n + 1, total);
	}
	snprintf(series, sizeof(series), "%s_sum", name);
	fg_expfmt_double(e, series, labels, n, sum);
	snprintf(series, sizeof(series), "%s_count", name);
	fg_expfmt_u64(e, series, labels, n, total);
}

char *fg_expfmt_finish(struct fg_expfmt *e, size_t *len, int *err)
{
	if (!e->err && !e->buf && !reserve(e, 0)) /* an empty body is still a body */
		e->buf[0] = 0;
	if (e->err) {
		*err = e->err;
		fg_expfmt_fini(e);
		return NULL;
	}
	char *b = e->buf;
	*len = e->len;
	*err = 0;
	memset(e, 0, sizeof(*e));
	return b;
}
