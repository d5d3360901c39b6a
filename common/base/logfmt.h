/* SPDX-License-Identifier: Apache-2.0 */
/*
 * logfmt — one log line as text (`ts=... level=info msg="..." key=value`,
 * logfmt style) or as one JSON object; the per-interval tally that keeps
 * counted events (drops by reason) to one line per reason per interval; and
 * the burst limit on lines a peer can cause (refusals).
 * The sink that writes the lines is control/log.h; this module only formats.
 *
 * Invariants: a line is at most FG_LOG_LINE_MAX bytes, newline included (so
 * one write(2) of it to a pipe is atomic), and always well formed: a value
 * that does not fit is cut (and the line gets truncated=true), never the
 * closing quote or brace.  Every string value is escaped, whatever bytes it
 * holds (names from configurations and peers are hostile): text quotes a
 * value unless it is all plain characters and escapes `"`, `\`, control
 * bytes and non-ASCII bytes (\xHH), so a line stays one greppable line; JSON
 * writes valid JSON strings (\uXXXX for control bytes, U+FFFD for bytes
 * that are not UTF-8).  Keys are the program's own constants and written as
 * they are.
 *
 * Thread contract: pure functions on caller memory; time is an argument.
 */
#ifndef FG_LOGFMT_H
#define FG_LOGFMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FG_LOG_LINE_MAX 4096u /* PIPE_BUF on Linux: one write is one line */
#define FG_LOG_TALLY_MAX 32u  /* counters one tally follows */

enum fg_log_level { FG_LOG_DEBUG, FG_LOG_INFO, FG_LOG_WARN, FG_LOG_ERROR };
enum fg_log_format { FG_LOG_TEXT, FG_LOG_JSON };

enum fg_log_ftype { FG_LF_STR, FG_LF_INT, FG_LF_UINT, FG_LF_BOOL };

struct fg_log_field {
	const char *key;
	enum fg_log_ftype type;
	union {
		const char *s; /* NULL is written as an empty string */
		int64_t i;
		uint64_t u;
		bool b;
	};
};

#define FG_LOG_STR(k, v) ((struct fg_log_field){ .key = (k), .type = FG_LF_STR, .s = (v) })
#define FG_LOG_INT(k, v) ((struct fg_log_field){ .key = (k), .type = FG_LF_INT, .i = (int64_t)(v) })
#define FG_LOG_UINT(k, v) ((struct fg_log_field){ .key = (k), .type = FG_LF_UINT, .u = (uint64_t)(v) })
#define FG_LOG_BOOL(k, v) ((struct fg_log_field){ .key = (k), .type = FG_LF_BOOL, .b = (v) })

/* The level's name ("debug", "info", "warn", "error"). */
const char *fg_log_level_name(enum fg_log_level level);

/* Format one line into buf (cap >= 64; at most FG_LOG_LINE_MAX is used):
 * wall_ns is the wall-clock time in ns since the epoch (written as RFC 3339
 * UTC with milliseconds).  Returns the length, the final newline included;
 * buf is NUL-terminated after it. */
size_t fg_logfmt_line(char *buf, size_t cap, enum fg_log_format format, uint64_t wall_ns, enum fg_log_level level,
		      const char *msg, const struct fg_log_field *fields, unsigned n_fields);

/* Counters reported per interval: fg_log_tally_due() tells, at most once per
 * interval_ns, how much each of n counters grew since the last report. */
struct fg_log_tally {
	uint64_t interval_ns;
	uint64_t last_ns;   /* the last report (or the start) */
	unsigned n;
	uint64_t seen[FG_LOG_TALLY_MAX];
};

/* Start counting from totals (n <= FG_LOG_TALLY_MAX counters) at now. */
void fg_log_tally_init(struct fg_log_tally *t, uint64_t interval_ns, const uint64_t *totals, unsigned n, uint64_t now);

/* false before the interval is over (deltas untouched); else deltas[i] is
 * how much totals[i] grew since the last report (0 if it went back, e.g. a
 * counter restarted), and the interval restarts at now. */
bool fg_log_tally_due(struct fg_log_tally *t, const uint64_t *totals, uint64_t *deltas, uint64_t now);

/* Lines a peer can cause (refusals): at most max per window_ns; the rest are
 * counted and told with the first line allowed after them. */
struct fg_log_burst {
	uint64_t window_ns;
	unsigned max;
	uint64_t start_ns;  /* the current window's */
	unsigned used;      /* lines in it */
	uint64_t suppressed; /* lines not written since the last one written */
};

/* true: write the line, and *suppressed is how many were not written since
 * the last one (0 mostly); false: do not (it is counted). */
bool fg_log_burst_allow(struct fg_log_burst *b, uint64_t now, uint64_t *suppressed);

#endif
