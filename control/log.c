/* SPDX-License-Identifier: Apache-2.0 */
/* log — the daemon's log lines on stderr; see log.h. */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int log_format = FG_LOG_TEXT, log_min = FG_LOG_INFO; /* relaxed atomics */

void fg_log_configure(enum fg_log_format format, enum fg_log_level min_level)
{
	__atomic_store_n(&log_format, (int)format, __ATOMIC_RELAXED);
	__atomic_store_n(&log_min, (int)min_level, __ATOMIC_RELAXED);
}

bool fg_log_enabled(enum fg_log_level level)
{
	return (int)level >= __atomic_load_n(&log_min, __ATOMIC_RELAXED);
}

static void write_all(const char *buf, size_t len)
{
	while (len) {
		ssize_t w = write(STDERR_FILENO, buf, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* nowhere to complain */
		buf += w;
		len -= (size_t)w;
	}
}

void fg_log_fields(enum fg_log_level level, const char *msg, const struct fg_log_field *fields, unsigned n)
{
	if (!fg_log_enabled(level))
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	char line[FG_LOG_LINE_MAX];
	size_t len = fg_logfmt_line(line, sizeof(line), (enum fg_log_format)__atomic_load_n(&log_format, __ATOMIC_RELAXED),
				    (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec, level, msg, fields, n);
	write_all(line, len);
}

void fg_logf(enum fg_log_level level, const char *fmt, ...)
{
	if (!fg_log_enabled(level))
		return;
	char msg[FG_LOG_LINE_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fg_log_fields(level, msg, NULL, 0);
}

/* --- a stdio stream into the log -------------------------------------------- */

/* A partial line waits here until its newline; stdio calls the cookie's
 * write with the stream locked, so one stream's writers are serialized. */
struct log_stream {
	const char *source;
	enum fg_log_level (*level_of)(void);
	size_t len;
	char line[FG_LOG_LINE_MAX / 2];
};

static void stream_emit(struct log_stream *s)
{
	while (s->len && (s->line[s->len - 1] == '\n' || s->line[s->len - 1] == '\r'))
		s->len--;
	s->line[s->len] = 0;
	if (s->len)
		fg_log(s->level_of ? s->level_of() : FG_LOG_INFO, s->line, FG_LOG_STR("source", s->source));
	s->len = 0;
}

static ssize_t stream_write(void *cookie, const char *buf, size_t size)
{
	struct log_stream *s = cookie;
	for (size_t i = 0; i < size; i++) {
		if (buf[i] == '\n' || s->len == sizeof(s->line) - 1) {
			stream_emit(s); /* a line too long is cut into several */
			if (buf[i] == '\n')
				continue;
		}
		s->line[s->len++] = buf[i];
	}
	return (ssize_t)size;
}

static int stream_close(void *cookie)
{
	struct log_stream *s = cookie;
	stream_emit(s);
	free(s);
	return 0;
}

FILE *fg_log_stream_open(const char *source, enum fg_log_level (*level_of)(void))
{
	struct log_stream *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->source = source;
	s->level_of = level_of;
	FILE *f = fopencookie(s, "w", (cookie_io_functions_t){ .write = stream_write, .close = stream_close });
	if (!f) {
		free(s);
		return NULL;
	}
	setvbuf(f, NULL, _IOLBF, 0); /* a line as soon as it ends */
	return f;
}
