/* SPDX-License-Identifier: Apache-2.0 */
/*
 * control_int — what the control thread (control.c: the socket, its
 * connections and peers, SIGHUP reloads) and the commands (commands.c)
 * share.  Not for other modules.
 *
 * Thread contract: the control thread alone (and tests through control.h's
 * fg_control_handle_line*).
 */
#ifndef FG_CONTROL_INT_H
#define FG_CONTROL_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "control.h"

/* One configuration text (a file's, a request's "data"). */
struct fg_control_text {
	const char *data;
	size_t len;
};

/* An error answer line, {"ok":false,"error":"..."}: the message made
 * printable ASCII (it may quote the client's bytes). */
char *fg_control__error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A request line from a peer (who NULL: none known, no rights recorded):
 * its answer line; a change an admin's (may_mutate), logged with the peer. */
char *fg_control__handle(const struct fg_control_view *view, const uint8_t *line, size_t len, bool may_mutate,
			 const struct fg_control_peer *who);
/* SIGHUP: the texts merged onto the live set as one change of the daemon's
 * (uid -1); the answer line, *failed the text with errors. */
char *fg_control__reload(const struct fg_control_view *view, const struct fg_control_text *texts, unsigned n,
			 unsigned *failed);
/* A change's outcome, counted for /metrics. */
void fg_control__count_change(const struct fg_control_view *view, bool ok);
/* logFormat and logLevel are live: the log follows them at once. */
void fg_control__follow_log_settings(const struct fg_settings *s);

#endif
