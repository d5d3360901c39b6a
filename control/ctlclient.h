/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctlclient — the client side of the control socket (docs/control.md), as
 * fairgatectl's commands and `fairgatectl top` use it: one connection per
 * request, one JSON line each way, every way a connection can end without an
 * answer named (MSG_NOSIGNAL: a closed connection is an error, not SIGPIPE).
 *
 * Thread contract: no shared state; any thread.
 */
#ifndef FG_CTLCLIENT_H
#define FG_CTLCLIENT_H

#include <jansson.h>
#include <stddef.h>

/* Send one request line, read one answer line: the answer, or NULL with the
 * reason in err.  A refusal the daemon wrote before closing is returned. */
json_t *fg_ctl_call(const char *path, const char *request, char *err, size_t errlen);

/* The "result" of an answer that says ok; NULL with the daemon's error (and
 * its error lines) in err otherwise. */
json_t *fg_ctl_result(json_t *resp, char *err, size_t errlen);

/* Send a request object (consumed); the result (owned by *resp_out, which
 * the caller frees), or NULL after printing the error on stderr. */
json_t *fg_ctl_request(const char *path, json_t *req, json_t **resp_out);

#endif
