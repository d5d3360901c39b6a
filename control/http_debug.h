/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http_debug — the HTTP endpoint's visibility paths (docs/visibility.md):
 * Kubernetes' /debug/api_priority_and_fairness/dump_{priority_levels,queues,
 * requests} and /apis/visibility.fairgate.io/v1/prioritylevels/NAME/
 * pendingrequests, answered from worker snapshots (control/visibility.h).
 *
 * Invariants: each path takes only its own query parameters (at most
 * FG_PENDING_MAX_PARAMS, each once, bounded; anything else is a 400 with a
 * one-line reason); a level name in the path is at most FG_LEVEL_NAME_MAX - 1
 * bytes without '/'.  A worker that does not answer in time is a 503.
 *
 * Thread contract: libmicrohttpd's thread only (http.c routes to it).  It
 * waits at most FG_SNAP_TIMEOUT_NS per request for the workers, under the
 * visibility mutex it shares with the control thread alone.
 */
#ifndef FG_HTTP_DEBUG_H
#define FG_HTTP_DEBUG_H

#include <microhttpd.h>
#include <stdbool.h>

#include "visibility.h"

#define FG_HTTP_DEBUG_PREFIX "/debug/api_priority_and_fairness/"
#define FG_HTTP_VISIBILITY_PREFIX "/apis/visibility.fairgate.io/v1/prioritylevels/"

/* Is url one of the paths served here? */
/* Queue body (malloc'd, len bytes; taken over, freed on failure too) as the
 * answer with this status and Content-Type.  Any HTTP thread. */
enum MHD_Result fg_http_respond(struct MHD_Connection *c, unsigned status, char *body, size_t len, const char *type);

bool fg_http_debug_route(const char *url);
enum MHD_Result fg_http_debug_serve(struct fg_vis *vis, struct MHD_Connection *c, const char *url);

#endif
