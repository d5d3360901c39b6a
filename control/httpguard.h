/* SPDX-License-Identifier: Apache-2.0 */
/*
 * httpguard — keeps the HTTP endpoint answering while slow or hostile
 * clients hold connections (docs/security.md "The HTTP endpoint"):
 *
 *  - An absolute deadline per request: FG_HTTP_REQUEST_DEADLINE_NS from the
 *    connection's accept, or from the end of its previous request, to the
 *    end of this one, however the bytes trickle in (libmicrohttpd's own
 *    timeout restarts with every byte, so one byte every 2 s kept a
 *    connection for ever).
 *  - Room for the next connection: at most FG_HTTP_MAX_PER_SOURCE from one
 *    address and FG_HTTP_MAX_CONNECTIONS in all are kept; one more evicts
 *    the connection (of that address, or of all) whose request began
 *    longest ago, one still sending its request before one being answered.
 *    libmicrohttpd's own limit is FG_HTTP_SPARE_CONNECTIONS higher, so a
 *    probe always gets in and is answered while every other slot is taken,
 *    even from the address of the client that holds them.
 *  - A request line with more than FG_HTTP_MAX_QUERY_PARAMS query
 *    parameters is answered 400 on the socket and the connection shut from
 *    libmicrohttpd's URI callback, which runs before it splits them (it
 *    still does, within its per-connection memory, and then finds the
 *    connection closed): past a few hundred parameters that memory runs out
 *    and it left the client without an answer until its idle timeout.
 *
 * A connection is ended with shutdown(2) on its socket: libmicrohttpd sees
 * the end and closes it its usual way.  Invariant: a slot's socket is shut
 * only while the slot is in use, under the guard's mutex, and the slot is
 * freed in libmicrohttpd's CLOSED notification, which comes before it
 * closes the socket — so a shut socket is never a newer connection's that
 * reused the number.
 *
 * Thread contract: create and free by fg_http_start/stop (free after
 * MHD_stop_daemon); the fg_httpguard_on_* callbacks from libmicrohttpd's
 * threads; a sweeper thread of its own enforces the deadline.  The mutex is
 * taken by those threads only, never by a worker or the control thread.
 */
#ifndef FG_HTTPGUARD_H
#define FG_HTTPGUARD_H

#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

#define FG_HTTP_MAX_CONNECTIONS 64u            /* kept at once; one more evicts the oldest request */
#define FG_HTTP_SPARE_CONNECTIONS 16u          /* libmicrohttpd's limit above that: room for the next one */
#define FG_HTTP_MAX_PER_SOURCE 16u             /* connections from one address at once */
#define FG_HTTP_REQUEST_DEADLINE_NS 10000000000ull /* accept (or the previous answer) to the answer */
#define FG_HTTP_SWEEP_NS 250000000ull          /* how often the deadline is checked */
#define FG_HTTP_MAX_QUERY_PARAMS 64u

/* What the guard did, for /metrics (read with relaxed loads). */
struct fg_httpguard_stats {
	uint64_t deadline_cut;   /* requests past the deadline, their connections shut */
	uint64_t evicted;        /* connections shut to make room for a new one (per source or in all) */
	uint64_t too_many_params; /* request lines answered 400 before parsing */
};

struct fg_httpguard;

/* The guard with its sweeper thread running; NULL with the reason in err. */
struct fg_httpguard *fg_httpguard_create(char *err, size_t errlen);
/* Stop the sweeper and free; after MHD_stop_daemon.  NULL is a no-op. */
void fg_httpguard_free(struct fg_httpguard *g);
void fg_httpguard_stats(const struct fg_httpguard *g, struct fg_httpguard_stats *out);

/* libmicrohttpd callbacks, cls = the guard. */
void fg_httpguard_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
				enum MHD_ConnectionNotificationCode toe);
void fg_httpguard_on_completed(void *cls, struct MHD_Connection *c, void **req, enum MHD_RequestTerminationCode toe);
void *fg_httpguard_on_uri(void *cls, const char *uri, struct MHD_Connection *c);
/* Called by the request handler: the request is being answered (evicted
 * only when no connection is still sending its request). */
void fg_httpguard_answering(struct fg_httpguard *g, struct MHD_Connection *c);

#endif
