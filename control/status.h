/* SPDX-License-Identifier: Apache-2.0 */
/* status — the daemon's status as a JSON document (control command
 * "status"; docs/control.md has the schema).  Control thread only. */
#ifndef FG_STATUS_H
#define FG_STATUS_H

#include <jansson.h>

struct fg_control_view;

json_t *fg_status_json(const struct fg_control_view *view);

/* One level as the workers run it now (seats, waiting, executing, rejects by
 * reason), or NULL when no worker runs a level of that name. */
json_t *fg_status_level_json(const struct fg_control_view *view, const char *name);

#endif
