/* SPDX-License-Identifier: Apache-2.0 */
/*
 * control — the control thread: the control socket (newline-delimited JSON
 * over a Unix stream socket, docs/control.md), configuration publication
 * with liburcu QSBR, and the reload that SIGHUP asks for.
 *
 * Invariants: a connection's answers leave in the order of its requests and
 * each whole, newline-terminated, however slowly the peer reads; a peer that
 * is not reading never stalls the thread or another peer (sockets are
 * non-blocking, answers wait in a per-connection output buffer, and a
 * connection with output pending is not read).  FG_CONTROL_ADMIN_SLOTS of the
 * FG_CONTROL_MAX_CLIENTS connections are kept for admins.  A mutating command
 * is allowed by the peer's credentials (taken at connect, supplementary
 * groups included) against controlAdmins as in force when the command runs.
 * A change (apply, delete, rollback, SIGHUP reload) is all or nothing, is
 * published as a new generation only when its result differs from what is in
 * force (objects or settings), and is then kept in the history (history.h)
 * with the peer's uid.
 *
 * Thread contract: fg_control_start/stop are called by main; the control
 * thread registers with RCU and stays offline except while publishing.  It
 * reads worker statistics with relaxed loads (stats.h) and never blocks a
 * worker.  The pending and dump commands wait (at most FG_SNAP_TIMEOUT_NS)
 * for the workers' snapshots under the visibility mutex it shares with the
 * HTTP thread only (visibility.h); other connections wait meanwhile.  The daemon's signal handler only writes to view.reload_fd (an
 * eventfd); the reload itself runs on the control thread, which tells
 * systemd RELOADING=1 and READY=1 around it (sd_notify) and STOPPING=1 when
 * the drain begins.  It logs every change and refusal with the peer's
 * credentials, and the workers' events from their counters
 * (control/logwatch.h).  The socket file gets controlSocketGroup and
 * controlSocketMode before it listens.
 */
#ifndef FG_CONTROL_H
#define FG_CONTROL_H

#include <stdbool.h>
#include <stdint.h>

#include "borrower.h"
#include "config.h"
#include "defs.h"
#include "flowcontrol.h"
#include "history.h"
#include "settings.h"
#include "seatshare.h"
#include "stats.h"
#include "visibility.h"


/* What the control thread may look at. */
/* Connection limits; the control thread alone uses them. */
#define FG_CONTROL_ADMIN_SLOTS 4u              /* of FG_CONTROL_MAX_CLIENTS, for admins only */
#define FG_CONTROL_IDLE_TIMEOUT_MS 10000u      /* no byte either way for this long: closed */
#define FG_CONTROL_MAX_QUEUED (64u << 20)      /* answers waiting for slow readers, all connections */
#define FG_CONTROL_DENIAL_LOG_MAX 10u          /* permission-denied lines per window; more are counted */
#define FG_CONTROL_DENIAL_LOG_WINDOW_NS 1000000000ull
_Static_assert(FG_CONTROL_ADMIN_SLOTS < FG_CONTROL_MAX_CLIENTS, "non-admins need at least one slot");
_Static_assert(FG_CONTROL_READ_TIMEOUT_MS < FG_CONTROL_IDLE_TIMEOUT_MS, "a partial line times out first");

struct fg_control_view {
	struct fg_settings *settings;    /* the control thread's own copy */
	struct fg_config **config_ptr;   /* RCU-protected, published here */
	struct fg_worker_stats **worker_stats;
	unsigned n_workers;
	uint64_t start_ns;
	const int *shutting_down;    /* read with FG_READ_ONCE */
	struct fg_fc_set *objects;       /* the applied objects; the control thread's own */
	const struct fg_allotter_stats *allotter; /* several workers; else NULL */
	const struct fg_borrower_view *borrowing; /* the levels' current limits (borrower.h); NULL: none */
	int reload_fd;                   /* eventfd: readable when SIGHUP asked for a reload; -1 none */
	const char *const *reload_paths; /* the --config files a reload applies, in order */
	unsigned n_reload_paths;
	char http_listen[32];            /* the HTTP endpoint's bound address, or "off" (status) */
	struct fg_config_changes *changes; /* counted here (NULL: not counted) */
	struct fg_vis *vis;              /* worker snapshots: pending and dump commands; NULL: none */
	/* DPDK mode: what ARP taught about a backend's address (1 learned, 0
	 * asking, -1 not asked; dataplane/dpdk_io.h), for status; NULL otherwise. */
	int (*backend_mac)(const void *ctx, uint32_t ip, uint8_t mac[6]);
	const void *backend_mac_ctx;
	struct fg_history *history;      /* kept generations (history, rollback), the control thread's own;
					  * fg_control_start creates it; NULL: none kept */
	uint64_t (*martians)(void *ctx); /* the I/O's martian drops (any thread; dataplane/io.h); NULL: none */
	void *martians_ctx;
	struct fg_cluster *cluster;      /* cluster mode (cluster.h), for status; NULL: off */
};

struct fg_control;

/* Bind the control socket and start the thread.  NULL and *err on failure
 * (message in errbuf).  The socket path is taken only when nothing is there
 * or it is a stale socket nobody listens on (then it is replaced); a live
 * socket or any other file is left alone and refused. */
struct fg_control *fg_control_start(const struct fg_control_view *view, char *errbuf, size_t errlen);
void fg_control_stop(struct fg_control *c);

/*
 * Handle one request line and return the response (a JSON object, no
 * newline), malloc'd.  Exposed for tests and the fuzz target.
 */
char *fg_control_handle_line(const struct fg_control_view *view, const uint8_t *line, size_t len, bool may_mutate);

/* The same for a peer with this uid (-1: unknown), which a change records
 * in the history. */
char *fg_control_handle_line_as(const struct fg_control_view *view, const uint8_t *line, size_t len, bool may_mutate,
				int64_t uid);
/* Who sent a control request: its credentials at connect (SO_PEERCRED). */
struct fg_control_peer {
	bool known;
	uint32_t uid, gid;
};

/*
 * Log a configuration change and its outcome: one line with the command,
 * the peer's uid and gid (who NULL: the daemon itself, e.g. a reload), the
 * object named (detail, or NULL) and, from the command's answer
 * (`{"ok":...}`), the new generation and counts or the error.  Every
 * mutating command of the table is logged this way already; a change made
 * outside it (a rollback, a reload) calls this.  Control thread.
 */
void fg_control_log_change(const char *command, const struct fg_control_peer *who, const char *response,
			   const char *detail);

/* Resolve controlSocketGroup: "" (the daemon's group: *gid = (gid_t)-1),
 * a group name, or a numeric gid.  0, or -ENOENT with the reason in errbuf. */
int fg_control_socket_gid(const char *group, uint32_t *gid, char *errbuf, size_t errlen);

#endif
