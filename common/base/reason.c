/* SPDX-License-Identifier: Apache-2.0 */
/* reason — an error code with its text; see reason.h. */
#include "reason.h"

#include <stdarg.h>
#include <stdio.h>

int fg_vreason(int rc, char *why, size_t len, const char *fmt, va_list ap)
{
	if (len)
		vsnprintf(why, len, fmt, ap);
	return rc;
}

int fg_reason(int rc, char *why, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fg_vreason(rc, why, len, fmt, ap);
	va_end(ap);
	return rc;
}
