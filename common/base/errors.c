/* SPDX-License-Identifier: Apache-2.0 */
/* errors — the validation error collector; see errors.h. */
#include "errors.h"

#include <stdarg.h>
#include <stdio.h>

void fg_errors_add(struct fg_errors *e, const char *path, const char *fmt, ...)
{
	e->count++;
	if (e->len >= sizeof(e->text) - 1)
		return;
	int n = snprintf(e->text + e->len, sizeof(e->text) - e->len, "%s: ", path);
	if (n > 0)
		e->len = e->len + (size_t)n < sizeof(e->text) ? e->len + (size_t)n : sizeof(e->text) - 1;
	va_list ap;
	va_start(ap, fmt);
	n = vsnprintf(e->text + e->len, sizeof(e->text) - e->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		e->len = e->len + (size_t)n < sizeof(e->text) ? e->len + (size_t)n : sizeof(e->text) - 1;
	if (e->len < sizeof(e->text) - 1)
		e->text[e->len++] = '\n';
	e->text[e->len] = 0;
}
