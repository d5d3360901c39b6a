/* SPDX-License-Identifier: Apache-2.0 */
/*
 * statusview — `fairgatectl status`: the daemon's status document as tables
 * (levels, the busiest flows of weighted and UsageBased levels against their
 * deserved shares, flows with their rejects by reason, counters) or JSON, once or
 * every --watch seconds; flows filtered by --level and --flow, sorted by
 * --sort, cut to --top.  Names are printed whole (columns widen to fit).
 *
 * Thread contract: the CLI's main thread.
 */
#ifndef FG_STATUSVIEW_H
#define FG_STATUSVIEW_H

#define FG_STATUS_MAX_TOP 1000000L  /* --top */
#define FG_STATUS_MAX_WATCH_S 3600.0 /* --watch */

#include <jansson.h>

/* The status document's backendPool as a table (also `backend list`). */
void fg_ctl_print_backends(json_t *status);

/* A level's busiest flows (its fairSharing: weight, usage, seats, demand,
 * deserved share), indented under a row (also `get fairsharings -o wide`). */
void fg_ctl_print_busiest_flows(json_t *status, const char *level);

/* The `status` command: argv[0] is "status".  Exit status (fairgatectl.c). */
int fg_ctl_status(const char *socket_path, int argc, char **argv);

#endif
