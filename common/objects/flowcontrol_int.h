/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flowcontrol_int — what the files of the flowcontrol module share and no
 * one else uses.  The module is split along its seams:
 *
 *   flowcontrol_objects.c   the object set: documents in, objects out, mandatory copies
 *   flowcontrol_validate.c  decoding (known fields, types), v1 defaulting, validation
 *   flowcontrol_compile.c   derived limits, the compiled matcher and its subject index
 *   flowcontrol_classify.c  the per-request classifier (through the index) and explain
 *
 * Objects in a set are stored decoded and defaulted ("normalized"): only the
 * fields Kubernetes' v1 types know, with the v1 defaults filled in, so the
 * compiler and `get` never apply a default of their own.
 */
#ifndef FG_FLOWCONTROL_INT_H
#define FG_FLOWCONTROL_INT_H

#include "flowcontrol.h"

/* One table per kind (enum fg_fc_kind): name -> normalized object. */
struct fg_fc_set {
	json_t *tables[FG_FC_N_KINDS];
};

extern const char *const fg_fc_kind_names[FG_FC_N_KINDS];

/* What a document's kind must be, as errors say it. */
#define FG_FC_KINDS_MSG \
	"kind: must be FlowSchema, PriorityLevelConfiguration, FairSharing, FairgateSettings or a List of them"

/* The set's table for one kind. */
static inline json_t *fg_fc__table(const struct fg_fc_set *s, enum fg_fc_kind k)
{
	return s->tables[k];
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

/* The level a FlowSchema sends to (NULL when the spec has none). */
const char *fg_fc__schema_level(json_t *schema);

/* The entries of a FairSharing object's spec.flowWeights (borrowed). */
json_t *fg_fc__flow_weights(json_t *fairsharing);

/* A normalized FairSharing weight (a JSON number in (0, 1000]) in
 * thousandths, and back (an integer when whole, else a real). */
uint32_t fg_fc__weight_milli(json_t *w);
json_t *fg_fc__weight_json(uint32_t milli);

#endif
