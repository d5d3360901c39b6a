/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jsonfield — reading typed fields out of a parsed JSON/YAML document, every
 * error naming the field's path ("clients[2].threads: must be ..."), for the
 * bench tools' input files (sim scenarios, run scenarios).
 *
 * Conventions: `path` is the prefix of the object holding `key`, ending with
 * '.' (or "" at the top), so the message is "<path><key>: ...".  An absent
 * key gives the default and succeeds; a present key of the wrong type or out
 * of range fails with -EINVAL and the message in err (always terminated).
 *
 * Thread contract: pure functions; reentrant.
 */
#ifndef FG_JSONFIELD_H
#define FG_JSONFIELD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Format a message into err; returns -EINVAL. */
int fg_jf_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A duration string ("250ms", "1.5s") in ns. */
int fg_jf_duration(json_t *obj, const char *key, int64_t dflt, int64_t *out, const char *path, char *err,
		   size_t errlen);

/* An integer in [lo, hi]. */
int fg_jf_int(json_t *obj, const char *key, int64_t dflt, int64_t lo, int64_t hi, int64_t *out, const char *path,
	      char *err, size_t errlen);

/* A number (integer or real) in [lo, hi]. */
int fg_jf_number(json_t *obj, const char *key, double dflt, double lo, double hi, double *out, const char *path,
		 char *err, size_t errlen);

/* A string of 1..maxlen-1 bytes; absent: *out = dflt, an error if `required`.
 * *out points into the document. */
int fg_jf_string(json_t *obj, const char *key, bool required, const char *dflt, size_t maxlen, const char **out,
		 const char *path, char *err, size_t errlen);

/* Every key of obj is one of known[] (NULL-terminated): else the first other
 * one is named, so a misspelt field is an error rather than a silent default. */
int fg_jf_known_keys(json_t *obj, const char *const *known, const char *path, char *err, size_t errlen);

#endif
