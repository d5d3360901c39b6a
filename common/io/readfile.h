/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readfile — the one way fairgate's programs read an input file (a
 * configuration, a scenario, objects to apply): the whole file, or standard
 * input for "-", NUL-terminated, bounded by FG_INPUT_FILE_MAX.
 *
 * Thread contract: no shared state.
 */
#ifndef FG_READFILE_H
#define FG_READFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "defs.h"

/* Read `path` ("-": standard input) into a new buffer (*buf, freed by the
 * caller; *len bytes plus a NUL).  0, or -errno: -EFBIG past
 * FG_INPUT_FILE_MAX, -ENOMEM, or what opening or reading failed with. */
int fg_read_file(const char *path, char **buf, size_t *len);

/* A message for fg_read_file's error ("larger than 2 MiB" for -EFBIG). */
const char *fg_read_file_strerror(int err);

/* Whether a text holds nothing but blanks, comments and YAML document
 * markers: an input that says nothing, refused as an error rather than read
 * as "no objects" (fairgatectl, --config). */
bool fg_input_empty(const char *text);

#endif
