/* SPDX-License-Identifier: Apache-2.0 */
/*
 * history — the configuration generations the daemon keeps for `fairgatectl
 * history` and `rollback` (docs/control.md): for each, when it was published,
 * by whom (the peer's uid; -1 for the daemon itself: start-up, SIGHUP), a
 * one-line summary, and a copy of its objects and settings.
 *
 * Invariants: entries are in increasing generation order, at most `keep`
 * (the configHistory setting, 1..FG_MAX_CONFIG_HISTORY) of them, the newest
 * last; recording beyond `keep` drops the oldest.  An entry's copies are its
 * own (the objects shared, fg_fc_set_share) and never change.
 *
 * Thread contract: the control thread alone (it owns the objects and
 * settings the copies are taken from); nothing here blocks or is shared.
 */
#ifndef FG_HISTORY_H
#define FG_HISTORY_H

#include <jansson.h>
#include <stdint.h>
#include <time.h>

#include "defs.h"
#include "flowcontrol.h"
#include "settings.h"

#define FG_HISTORY_SUMMARY_MAX 200 /* bytes of a summary line, NUL included */

struct fg_history_entry {
	uint64_t generation;
	time_t time;
	int64_t uid;                 /* the peer's; -1: the daemon (start-up, SIGHUP) */
	char summary[FG_HISTORY_SUMMARY_MAX];
	struct fg_fc_set *objects;
	struct fg_settings *settings;
};

struct fg_history;

struct fg_history *fg_history_new(void);
void fg_history_free(struct fg_history *h);

/* Record a published generation (copies objects and settings), keeping at
 * most `keep` entries.  0 or -ENOMEM (the history is then unchanged). */
int fg_history_record(struct fg_history *h, uint64_t generation, time_t when, int64_t uid, const char *summary,
		      const struct fg_fc_set *objects, const struct fg_settings *settings, unsigned keep);

/* The entry of a generation, or NULL when it is not kept. */
const struct fg_history_entry *fg_history_find(const struct fg_history *h, uint64_t generation);

/* The newest entry older than `generation`, or NULL. */
const struct fg_history_entry *fg_history_before(const struct fg_history *h, uint64_t generation);

/* [{generation, time (RFC 3339, UTC), uid, summary}], oldest first. */
json_t *fg_history_json(const struct fg_history *h);

#endif
