/* SPDX-License-Identifier: Apache-2.0 */
/*
 * top — `fairgatectl top`: a live view of a running daemon from its status
 * (docs/control.md).  On a terminal: a full screen (plain ANSI, the
 * alternate screen) redrawn every interval — levels with their seats in use
 * against the limit as bars, waiting, requests and rejects per second; rejects
 * per second by reason; the busiest flows; the workers — until `q` (or
 * SIGINT/SIGTERM), the terminal restored on every way out.  Without a
 * terminal: one summary line per interval.  Rates are deltas between two
 * samples.
 *
 * Thread contract: the calling thread only; it installs SIGINT/SIGTERM
 * handlers for its run (they end it, the terminal restored) and restores the
 * previous ones.  A resized terminal is fitted at the next redraw.
 */
#ifndef FG_TOP_H
#define FG_TOP_H

/* Run until q, a signal, count samples (count < 0: no limit) or an error
 * reaching the daemon.  Returns the exit status (0, or 1 with a message). */
int fg_top_run(const char *sock_path, double interval_s, long count);

#endif
