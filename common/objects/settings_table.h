/* SPDX-License-Identifier: Apache-2.0 */
/*
 * settings_table — every FairgateSettings field defined once: its JSON name,
 * flag, type, bounds, whether a live apply may change it, and its one-line
 * doc.  The FairgateSettings parser, the daemon's flags and --help, `fairgate
 * --check`, the live-apply check and the settings table in
 * docs/configuration.md (`fairgate --help-settings`, compared by a unit
 * test) all read this table.  Defaults are fg_settings_defaults(), from the
 * FG_DEFAULT_* constants of defs.h.
 *
 * Adding a setting: a field in struct fg_settings, its default in
 * fg_settings_defaults(), one row in settings_table.c; then regenerate the
 * docs table (docs/style.md, "How to add a setting").
 *
 * Thread contract: the table is immutable; the functions touch only the
 * settings they are given.
 */
#ifndef FG_SETTINGS_TABLE_H
#define FG_SETTINGS_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <stdio.h>

#include "settings.h"

enum fg_setting_type {
	FG_SET_U32,      /* integer in [lo, hi] */
	FG_SET_DURATION, /* "1.5s", "250ms" ... in [lo, hi] nanoseconds (hi 0: no upper bound) */
	FG_SET_BOOL,     /* true/false; as a flag it takes no value and sets true */
	FG_SET_ENUM,     /* one of the row's names; stored as an int (the name's index) */
	FG_SET_ENDPOINT, /* "IPv4:PORT" */
	FG_SET_OPT_LISTEN, /* "IPv4:PORT" (port 0: any free port) or "off"; struct fg_opt_listen */
	FG_SET_PATH,     /* a file system path of 1..sizeof(field)-1 bytes */
	FG_SET_BACKENDS, /* list of "ADDR:PORT[@MAC][,seats=N]"; a flag adds one, the flags replace the file's list */
	FG_SET_ADMINS,   /* {uids: [...], gids: [...]} */
	FG_SET_CIDRS,    /* list of "A.B.C.D/N"; a flag adds one, the flags replace the file's list */
	FG_SET_IDENTITIES, /* list of {cidr, user, groups}; file only */
	FG_SET_GROUP,    /* a group name or numeric gid (resolved where it is used), or "" */
	FG_SET_MODE,     /* permission bits as an octal string ("0660"), within [0, hi] bit by bit */
	FG_SET_NAME,     /* letters, digits, '_', '.', ':', '-' of lo..sizeof(field)-1 bytes (lo 0: "" allowed) */
	FG_SET_URLS,     /* "http://HOST:PORT[,...]", at most hi; JSON: that text or a list of URLs */
};

struct fg_setting {
	const char *name;  /* field of FairgateSettings.spec */
	const char *flag;  /* daemon flag without "--", or NULL */
	enum fg_setting_type type;
	size_t offset;     /* of the value in struct fg_settings */
	size_t size;       /* of the value (paths: the buffer) */
	int64_t lo, hi;    /* bounds of U32 and DURATION */
	bool reloadable;   /* a live apply may change it; otherwise it needs a restart */
	const char *doc;   /* one line for --help, --check and the docs */
	const char *const *names; /* FG_SET_ENUM: the values, NULL-terminated */
};

#define FG_SETTINGS_MAX_ROWS 64 /* room for per-row flags in tools; the table asserts it fits */

extern const struct fg_setting fg_settings_table[];
extern const size_t fg_settings_table_len;

const struct fg_setting *fg_setting_by_name(const char *name);

/* Whether flags replace the file's value instead of setting it (list rows). */
bool fg_setting_is_list(const struct fg_setting *row);
/* Empty a list row (the first flag of a list replaces the file's list). */
void fg_setting_clear_list(const struct fg_setting *row, struct fg_settings *s);

/* Set a row's value from text (a flag's argument).  0, or -EINVAL with the
 * reason in why (without the field path). */
int fg_setting_set_text(const struct fg_setting *row, struct fg_settings *s, const char *text, char *why,
			size_t whylen);

/* Set a row's value from its JSON value; errors go to errs at "spec.NAME". */
void fg_setting_set_json(const struct fg_setting *row, struct fg_settings *s, json_t *v, struct fg_errors *errs);

/* The value as text, as --check prints it (lists on one line). */
const char *fg_setting_format(const struct fg_setting *row, const struct fg_settings *s, char *buf, size_t cap);

/* Whether the row's value differs between two settings in what a restart
 * must apply (a backend's capacity may change live, its address not). */
bool fg_setting_differs(const struct fg_setting *row, const struct fg_settings *a, const struct fg_settings *b);

/* The row's value as JSON, as a FairgateSettings spec spells it (reads back
 * through fg_setting_set_json). */
json_t *fg_setting_json(const struct fg_setting *row, const struct fg_settings *s);

/* Every setting as one FairgateSettings object that applies back. */
#define FG_SETTINGS_API_VERSION "fairgate.dev/v1alpha1"
json_t *fg_settings_json(const struct fg_settings *s);

/* ["name: old -> new"] for each row whose value differs (JSON values). */
json_t *fg_settings_diff(const struct fg_settings *a, const struct fg_settings *b);

/* Whether every row has the same value (backend capacities included). */
bool fg_settings_equal(const struct fg_settings *a, const struct fg_settings *b);

/* The Markdown table of docs/configuration.md: field, flag, default, live
 * apply, meaning. */
void fg_settings_print_markdown(FILE *f);

#endif
