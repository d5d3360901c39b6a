/* SPDX-License-Identifier: Apache-2.0 */
/*
 * visibility — the control side of pending-request visibility and of the APF
 * debug dumps (docs/visibility.md): it asks every worker for a snapshot
 * through the workers' boxes (common/req/pending.h), waits for them a bounded
 * time, and renders the answers — the pendingrequests JSON document, and the
 * three dump_* tables with Kubernetes' columns.
 *
 * Invariants: one snapshot at a time (a mutex shared by the HTTP and control
 * threads only; no worker ever takes it).  A buffer lent to a worker is
 * never read or freed before the worker marks it done; a worker that does not
 * answer within FG_SNAP_TIMEOUT_NS makes the query fail (503 and the reason),
 * its buffer stays lent and is freed by the next query that finds it
 * returned (its late contents discarded) or by fg_vis_free once the workers
 * have stopped.  Every string from a client (flow schemas, distinguishers,
 * attributes) is escaped in the output: JSON escapes, "\xNN" for bytes that
 * are not UTF-8, and \uXXXX for line separators and bidi controls.
 *
 * Thread contract: fg_vis_create/fg_vis_free by main, create before the
 * workers poll, free after they have stopped and after the HTTP and control
 * threads are gone; fg_vis_box by main before the workers run; the queries
 * from the HTTP and the control thread, concurrently (serialized inside).
 */
#ifndef FG_VISIBILITY_H
#define FG_VISIBILITY_H

#include <stddef.h>
#include <stdint.h>

#include "pending.h"
#include "stats.h"

struct fg_vis;

/* Boxes for n workers whose statistics (their waiting and executing counts
 * size the buffers) are stats[0..n).  NULL when out of memory. */
struct fg_vis *fg_vis_create(unsigned n, struct fg_worker_stats *const *stats, uint32_t max_requests);
struct fg_snap_box *fg_vis_box(struct fg_vis *v, unsigned worker);
/* Only once no worker polls any more; frees buffers still lent.  NULL: no-op. */
void fg_vis_free(struct fg_vis *v);

/* An answer: an HTTP status and a body (malloc'd, NUL-terminated). */
struct fg_vis_answer {
	unsigned status;   /* 200, 400, 404, 500 or 503 */
	char *body;        /* JSON (pending), or text (dumps); errors: one line */
	size_t len;
};

/* The pendingrequests document of a level (docs/visibility.md).  The
 * parameters as parsed by fg_pending_parse_query. */
void fg_vis_pending(struct fg_vis *v, const char *level, const struct fg_pending_query *q,
		    struct fg_vis_answer *a);

/* An error answer: a one-line message (any bytes; escaped), as the
 * visibility API's JSON Status object or as a text line. */
void fg_vis_error(struct fg_vis_answer *a, unsigned status, const char *msg, bool json);

enum fg_vis_dump { FG_VIS_DUMP_LEVELS = 0, FG_VIS_DUMP_QUEUES, FG_VIS_DUMP_REQUESTS };
/* One of Kubernetes' dump_* tables over all workers; json: the same rows as
 * a JSON array of objects keyed by the column names instead. */
void fg_vis_dump(struct fg_vis *v, enum fg_vis_dump what, bool details, bool json, struct fg_vis_answer *a);

/* Column alignment as Go's tabwriter with minwidth 8, padding 1, ' ':
 * cells end at '\t'; a line's last cell is not aligned.  Returns a malloc'd
 * copy of text aligned, or NULL. */
char *fg_vis_tabwrite(const char *text, size_t *len);

#endif
