/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http — the HTTP endpoint (setting httpListen): GET/HEAD of /healthz,
 * /readyz and /metrics (Prometheus text format 0.0.4; docs/metrics.md lists
 * every metric), served by libmicrohttpd from a pool of FG_HTTP_THREADS
 * internal polling threads (each serves its connections; any may run any
 * handler, so handlers keep no state between requests).
 *
 * Invariants: every input is bounded — by libmicrohttpd's options
 * (FG_HTTP_TIMEOUT_S without progress closes a connection, FG_HTTP_CONNECTION_MEMORY bytes per
 * connection: a request line or headers beyond it get 414/431 and the
 * connection is closed) and by control/httpguard.h (FG_HTTP_MAX_PER_SOURCE
 * connections from one address and FG_HTTP_MAX_CONNECTIONS in all kept, the
 * oldest request evicted for a new connection, a deadline per
 * request whatever trickles in, at most FG_HTTP_MAX_QUERY_PARAMS query
 * parameters).  Only GET and HEAD (405 with Allow), only the paths above (404), no
 * query parameters (400 with the first unknown one, printable, cut short).
 * Answers are one line, or the exposition.  The label values are levels,
 * flow schemas, workers, backends and reasons — never clients, and flows
 * only with metricsFlowLabels (each level's 10 busiest) — so a scrape's size
 * is bounded by FG_MAX_LEVELS, FG_APF_PAIRS, FG_MAX_WORKER_CORES,
 * FG_MAX_BACKENDS (metrics_apf.h) and FG_SHARING_TOP_FLOWS.
 *
 * With a visibility object (view.vis), also the APF debug dumps and the
 * pendingrequests paths of control/http_debug.h, which take their own query
 * parameters and wait a bounded time for worker snapshots under a mutex
 * shared with the control thread only (control/visibility.h).
 *
 * Thread contract: fg_http_start/stop are called by main (stop before the
 * worker statistics and the configuration slot go).  The HTTP threads only
 * reads: worker statistics with relaxed loads (stats.h), the allotter's
 * statistics the same way, *shutting_down, and the published configuration
 * under RCU — it registers with liburcu QSBR on its first request, stays
 * offline except while it reads the configuration, and unregisters when it
 * exits.  It never touches the control thread's objects or settings and
 * takes no lock a worker or the control thread takes, so a slow or hostile
 * client delays only other HTTP clients.
 */
#ifndef FG_HTTP_H
#define FG_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "allotter.h"
#include "borrower.h"
#include "config.h"
#include "endpoint.h"
#include "httpguard.h"
#include "stats.h"
#include "visibility.h"

#define FG_HTTP_TIMEOUT_S 5u             /* a connection idle this long is closed */
#define FG_HTTP_CONNECTION_MEMORY 32768u /* bytes per connection: request line, headers, buffers */
/* Threads serving connections: a snapshot query waiting on the workers (up
 * to a second) leaves the others free for /metrics and the probes. */
#define FG_HTTP_THREADS 4u
#define FG_HTTP_STALL_NS 1000000000ull   /* /readyz: a worker whose heartbeat is older is stalled */
_Static_assert(FG_IDLE_WAIT_NS * 10 < FG_HTTP_STALL_NS, "an idle worker beats well within the stall limit");

/* What the HTTP thread may read; the pointers outlive fg_http_stop(). */
struct fg_http_view {
	struct fg_config **config_ptr; /* RCU-protected */
	struct fg_worker_stats *const *worker_stats;
	unsigned n_workers;
	const struct fg_allotter_stats *allotter; /* several workers; else NULL */
	const struct fg_borrower_view *borrowing; /* the levels' current limits (borrower.h); NULL: none */
	const int *shutting_down;                 /* set at the first stop signal; read with FG_READ_ONCE */
	const struct fg_config_changes *changes;  /* the control thread's count; NULL: none */
	struct fg_vis *vis;                       /* worker snapshots (visibility.h); NULL: no debug paths */
	struct fg_cluster *cluster;               /* cluster mode (cluster.h); NULL: off */
	const struct fg_httpguard *guard;         /* set by fg_http_start; NULL: none (a view not served) */
};

struct fg_http;

/* Listen on ep (port 0: any free port) and start the thread.  NULL on
 * failure, the reason in errbuf. */
struct fg_http *fg_http_start(const struct fg_endpoint *ep, const struct fg_http_view *view, char *errbuf,
			      size_t errlen);
/* The address it listens on, with the bound port: "A.B.C.D:PORT". */
const char *fg_http_address(const struct fg_http *h);
/* Stop the thread and close every connection; NULL is a no-op. */
void fg_http_stop(struct fg_http *h);

/* The /metrics body (malloc'd, *len bytes), or NULL and -errno in *err.
 * The HTTP thread, or a test's registered and offline RCU reader. */
char *fg_http_metrics(const struct fg_http_view *view, size_t *len, int *err);

#endif
