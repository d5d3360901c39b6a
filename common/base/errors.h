/* SPDX-License-Identifier: Apache-2.0 */
/*
 * errors — the collector every validation reports into: "path: reason"
 * lines, all of them at once (Kubernetes' way: every problem of an input in
 * one answer), bounded to 4 KiB of text, the count kept past it.
 *
 * Thread contract: a collector belongs to its caller; nothing is shared.
 */
#ifndef FG_ERRORS_H
#define FG_ERRORS_H

#include <stddef.h>

struct fg_errors {
	char text[4096];
	size_t len;
	unsigned count;
};

/* One line "path: reason"; lines past the text's room are counted only. */
void fg_errors_add(struct fg_errors *e, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
