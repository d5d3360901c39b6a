/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flowcontrol_check — the field errors validation reports, in Kubernetes'
 * words ("Required value", "Invalid value: ...", "Forbidden", "Unsupported
 * value"), each with the object and field path; shared by
 * flowcontrol_validate.c and flowcontrol_fairsharing.c.  Internal.
 *
 * Thread contract: a context belongs to one validation call.
 */
#ifndef FG_FLOWCONTROL_CHECK_H
#define FG_FLOWCONTROL_CHECK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "errors.h"

#define FG_FC_PATH_MAX 320 /* bytes of a field path */

struct fg_fc_vctx {
	struct fg_errors *errs, *warnings;
	const char *where; /* "document 1 FlowSchema/x" */
	bool strict;
};

void fg_fc__field_error(struct fg_fc_vctx *c, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A value as Kubernetes quotes it: compact JSON, cut short, printable ASCII. */
const char *fg_fc__show(json_t *v, char *buf, size_t cap);
void fg_fc__required(struct fg_fc_vctx *c, const char *path, const char *detail);
void fg_fc__invalid(struct fg_fc_vctx *c, const char *path, json_t *value, const char *detail);
void fg_fc__invalid_int(struct fg_fc_vctx *c, const char *path, json_int_t value, const char *detail);
void fg_fc__forbidden(struct fg_fc_vctx *c, const char *path, const char *detail);
void fg_fc__not_supported(struct fg_fc_vctx *c, const char *path, json_t *value, const char *supported);
/* A name that is not a DNS subdomain (RFC 1123), with Kubernetes' message. */
void fg_fc__invalid_subdomain(struct fg_fc_vctx *c, const char *path, json_t *v, const char *intro);
/* path + "." + key, and path + "[i]", in buf (FG_FC_PATH_MAX bytes). */
const char *fg_fc__child(char *buf, const char *path, const char *key);
const char *fg_fc__index_of(char *buf, const char *path, size_t i);

/* FairSharing objects (flowcontrol_fairsharing.c): defaults filled in, and the spec checked. */
void fg_fc__default_fairsharing(json_t *spec);
void fg_fc__validate_fairsharing_spec(struct fg_fc_vctx *c, json_t *spec);

#endif
