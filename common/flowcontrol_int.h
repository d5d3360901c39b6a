/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flowcontrol_int — what the files of the flowcontrol module share and no
 * one else uses.  The module is split along its seams:
 *
 *   flowcontrol_objects.c   the object set: documents in, objects out, mandatory copies
 *   flowcontrol_validate.c  decoding (known fields, types), v1 defaulting, validation
 *   flowcontrol_compile.c   derived limits and the compiled matcher
 *   flowcontrol_classify.c  the per-request classifier and explain
 *
 * Objects in a set are stored decoded and defaulted ("normalized"): only the
 * fields Kubernetes' v1 types know, with the v1 defaults filled in, so the
 * compiler and `get` never apply a default of their own.
 */
#ifndef FG_FLOWCONTROL_INT_H
#define FG_FLOWCONTROL_INT_H

#include "flowcontrol.h"

struct fg_fc_set {
	json_t *fs; /* name -> normalized FlowSchema object */
	json_t *pl; /* name -> normalized PriorityLevelConfiguration object */
};

extern const char *const fg_fc_kind_names[2];

/* The set's table for one kind. */
static inline json_t *fg_fc__table(const struct fg_fc_set *s, enum fg_fc_kind k)
{
	return k == FG_FC_FLOWSCHEMA ? s->fs : s->pl;
}

/* An object's metadata.name and spec (borrowed). */
const char *fg_fc__name(json_t *obj);
json_t *fg_fc__spec(json_t *obj);

/* An integer field, or dflt when absent. */
json_int_t fg_fc__int(json_t *o, const char *key, json_int_t dflt);

/* The normalized object {apiVersion, kind, metadata{name}, spec} of an input
 * object, or NULL after reporting every error to errs.  `where` names the
 * object in messages ("document 2 FlowSchema/x").  Unknown fields are
 * warnings (or errors when strict). */
json_t *fg_fc__take(json_t *obj, enum fg_fc_kind kind, const char *name, const char *where, bool strict,
		    struct fg_errors *errs, struct fg_errors *warnings);

/* A built-in object decoded and defaulted, not validated (the mandatory
 * check compares against these). */
json_t *fg_fc__normalize_builtin(json_t *obj, enum fg_fc_kind kind, const char *name);

/* The built-in mandatory object of this kind and name, normalized, or NULL
 * when the name is not a mandatory one. */
json_t *fg_fc__mandatory(enum fg_fc_kind kind, const char *name);

/* DNS-1123 subdomain (object names, level references, service accounts). */
bool fg_fc__dns_subdomain(const char *s);

#endif
