/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reason — the one way an error return carries its text: the reason is
 * formatted into the caller's buffer (always terminated, cut to fit) and the
 * error code is returned, so a check reads `return fg_reason(-EINVAL, why,
 * len, "...", ...)`.
 *
 * Thread contract: reentrant.
 */
#ifndef FG_REASON_H
#define FG_REASON_H

#include <stdarg.h>
#include <stddef.h>

int fg_reason(int rc, char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int fg_vreason(int rc, char *why, size_t len, const char *fmt, va_list ap) __attribute__((format(printf, 4, 0)));

#endif
