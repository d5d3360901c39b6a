/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log — the daemon's log: one line per event on stderr (journald takes it
 * under systemd), formatted by common/base/logfmt.h as text or JSON, filtered by
 * level (logFormat, logLevel).  Also a stdio stream that turns what a
 * library prints (DPDK's log, rte_openlog_stream) into such lines.
 *
 * Invariants: each line leaves in one write(2) of at most FG_LOG_LINE_MAX
 * bytes, so lines from different threads never interleave.  Nothing here is
 * called per request: workers never log (their events reach the log through
 * the counters the control thread reads, control/logwatch.h).
 *
 * Thread contract: any thread except a worker may log (DPDK's stream is
 * written by whichever thread DPDK logs from: EAL start-up and drivers);
 * fg_log_configure may
 * run at any time (the control thread calls it when logFormat or logLevel
 * change) and takes effect at the next line.  Writing blocks only the caller
 * (the control or main thread) when stderr is a full pipe.
 */
#ifndef FG_LOG_H
#define FG_LOG_H

#include <stdbool.h>
#include <stdio.h>

#include "logfmt.h"

void fg_log_configure(enum fg_log_format format, enum fg_log_level min_level);
bool fg_log_enabled(enum fg_log_level level);

/* One line: msg and n fields (fg_log below builds the array). */
void fg_log_fields(enum fg_log_level level, const char *msg, const struct fg_log_field *fields, unsigned n);

/* fg_log(FG_LOG_INFO, "configuration applied", FG_LOG_UINT("uid", uid), ...) */
#define fg_log(level, msg, ...)                                                                              \
	fg_log_fields((level), (msg), (const struct fg_log_field[]){ __VA_ARGS__ },                          \
		      (unsigned)(sizeof((const struct fg_log_field[]){ __VA_ARGS__ }) / sizeof(struct fg_log_field)))

/* A line whose message is formatted (the daemon's sentences: start-up,
 * SIGHUP, shutdown), with no other field. */
void fg_logf(enum fg_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A stream whose every line becomes a log line with source=SOURCE, at the
 * level level_of() tells for the message being written (NULL: info).  For
 * rte_openlog_stream.  NULL if out of memory. */
FILE *fg_log_stream_open(const char *source, enum fg_log_level (*level_of)(void));

#endif
