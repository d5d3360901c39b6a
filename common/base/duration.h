/* SPDX-License-Identifier: Apache-2.0 */
/* duration — Go-style duration strings ("1.5s", "300ms", "2m30s", "-1ns"),
 * the form Kubernetes and fairgate's configuration use. */
#ifndef FG_DURATION_H
#define FG_DURATION_H

#include <stddef.h>
#include <stdint.h>

/* Parse s[0..len) into nanoseconds.  Units: ns, us (or µs), ms, s, m, h;
 * a bare "0" is allowed.  Returns 0 or -EINVAL (syntax) / -ERANGE. */
int fg_duration_parse(const char *s, size_t len, int64_t *ns);
/* Format compactly ("1.5s", "250ms", "0s") into buf. */
const char *fg_duration_format(int64_t ns, char *buf, size_t cap);

#endif
