/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flowcontrol_validate — an input object on its way into a set: decoded
 * against the v1 types (known fields and their JSON types), defaulted as the
 * v1 defaulters do, validated as Kubernetes' validation.go does, and checked
 * against the mandatory objects.  Error texts follow Kubernetes' field errors
 * ("<path>: Required value: ...", "Invalid value: <v>: ...", "Forbidden: ...",
 * "Unsupported value: ...", "Duplicate value: ...") so that an operator sees
 * what kubectl would have shown; every error is reported at once.
 * FairSharing objects (fairgate.io/v1alpha1) go the same way with rules of
 * fairgate's own (docs/configuration.md, "FairSharing").
 */
#include "flowcontrol_int.h"
#include "flowcontrol_check.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "shuffle.h"

#define FG_FC_V1BETA3_ZERO_SHARES_KEY "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares"

/* --- field errors -------------------------------------------------------- */


void fg_fc__field_error(struct fg_fc_vctx *c, const char *path, const char *fmt, ...)
{
	char full[FG_FC_PATH_MAX + 160], msg[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(full, sizeof(full), "%s: %s", c->where, path);
	fg_errors_add(c->errs, full, "%s", msg);
}

/* A value as Kubernetes quotes it in "Invalid value: ...": compact JSON,
 * cut short, printable ASCII only (values are the client's bytes); an absent
 * value (NULL) shows as Go's zero string. */
const char *fg_fc__show(json_t *v, char *buf, size_t cap)
{
	char *s = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | FG_FC_JSON_REALS) : NULL;
	snprintf(buf, cap, "%s", s ? s : "\"\""); /* absent: Go's zero value, the empty string */
	free(s);
	size_t n = strlen(buf);
	if (n + 1 >= cap && cap > 4)
		memcpy(buf + cap - 4, "...", 4);
	for (char *p = buf; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			*p = '?';
	return buf;
}

void fg_fc__required(struct fg_fc_vctx *c, const char *path, const char *detail)
{
	if (*detail)
		fg_fc__field_error(c, path, "Required value: %s", detail);
	else
		fg_fc__field_error(c, path, "Required value");
}

void fg_fc__invalid(struct fg_fc_vctx *c, const char *path, json_t *value, const char *detail)
{
	char v[160];
	fg_fc__field_error(c, path, "Invalid value: %s: %s", fg_fc__show(value, v, sizeof(v)), detail);
}

void fg_fc__invalid_int(struct fg_fc_vctx *c, const char *path, json_int_t value, const char *detail)
{
	fg_fc__field_error(c, path, "Invalid value: %lld: %s", (long long)value, detail);
}

void fg_fc__forbidden(struct fg_fc_vctx *c, const char *path, const char *detail)
{
	fg_fc__field_error(c, path, "Forbidden: %s", detail);
}

void fg_fc__not_supported(struct fg_fc_vctx *c, const char *path, json_t *value, const char *supported)
{
	char v[160];
	fg_fc__field_error(c, path, "Unsupported value: %s: supported values: %s", fg_fc__show(value, v, sizeof(v)), supported);
}

/* path + "." + key, or path + "[i]". */
const char *fg_fc__child(char *buf, const char *path, const char *key)
{
	snprintf(buf, FG_FC_PATH_MAX, "%s%s%s", path, *path ? "." : "", key);
	return buf;
}

const char *fg_fc__index_of(char *buf, const char *path, size_t i)
{
	snprintf(buf, FG_FC_PATH_MAX, "%s[%zu]", path, i);
	return buf;
}

/* --- decoding: known fields and their types ------------------------------ */

enum ftype { T_OBJ, T_OBJLIST, T_STR, T_INT32, T_NUM, T_BOOL, T_STRLIST, T_ANY };

struct fdef {
	const char *name;
	enum ftype type;
	const struct fdef *sub; /* T_OBJ, T_OBJLIST: the known fields; NULL-name terminated */
	bool drop;              /* known, checked, not kept (metadata other than the name) */
};

static const struct fdef f_name[] = { { "name", T_STR, NULL, false }, { 0 } };
static const struct fdef f_sa[] = { { "namespace", T_STR, NULL, false }, { "name", T_STR, NULL, false }, { 0 } };
static const struct fdef f_subject[] = {
	{ "kind", T_STR, NULL, false }, { "user", T_OBJ, f_name, false }, { "group", T_OBJ, f_name, false },
	{ "serviceAccount", T_OBJ, f_sa, false }, { 0 }
};
static const struct fdef f_resrule[] = {
	{ "verbs", T_STRLIST, NULL, false }, { "apiGroups", T_STRLIST, NULL, false },
	{ "resources", T_STRLIST, NULL, false }, { "clusterScope", T_BOOL, NULL, false },
	{ "namespaces", T_STRLIST, NULL, false }, { 0 }
};
static const struct fdef f_nonresrule[] = {
	{ "verbs", T_STRLIST, NULL, false }, { "nonResourceURLs", T_STRLIST, NULL, false }, { 0 }
};
static const struct fdef f_rule[] = {
	{ "subjects", T_OBJLIST, f_subject, false }, { "resourceRules", T_OBJLIST, f_resrule, false },
	{ "nonResourceRules", T_OBJLIST, f_nonresrule, false }, { 0 }
};
static const struct fdef f_dist[] = { { "type", T_STR, NULL, false }, { 0 } };
static const struct fdef f_fs_spec[] = {
	{ "priorityLevelConfiguration", T_OBJ, f_name, false }, { "matchingPrecedence", T_INT32, NULL, false },
	{ "distinguisherMethod", T_OBJ, f_dist, false }, { "rules", T_OBJLIST, f_rule, false }, { 0 }
};
static const struct fdef f_queuing[] = {
	{ "queues", T_INT32, NULL, false }, { "handSize", T_INT32, NULL, false },
	{ "queueLengthLimit", T_INT32, NULL, false }, { 0 }
};
static const struct fdef f_limit_response[] = {
	{ "type", T_STR, NULL, false }, { "queuing", T_OBJ, f_queuing, false }, { 0 }
};
static const struct fdef f_limited[] = {
	{ "nominalConcurrencyShares", T_INT32, NULL, false }, { "lendablePercent", T_INT32, NULL, false },
	{ "borrowingLimitPercent", T_INT32, NULL, false }, { "limitResponse", T_OBJ, f_limit_response, false }, { 0 }
};
static const struct fdef f_exempt[] = {
	{ "nominalConcurrencyShares", T_INT32, NULL, false }, { "lendablePercent", T_INT32, NULL, false }, { 0 }
};
static const struct fdef f_pl_spec[] = {
	{ "type", T_STR, NULL, false }, { "limited", T_OBJ, f_limited, false }, { "exempt", T_OBJ, f_exempt, false },
	{ 0 }
};
static const struct fdef f_condition[] = {
	{ "type", T_STR, NULL, false }, { "status", T_STR, NULL, false }, { "lastTransitionTime", T_ANY, NULL, false },
	{ "reason", T_STR, NULL, false }, { "message", T_STR, NULL, false }, { 0 }
};
static const struct fdef f_status[] = { { "conditions", T_OBJLIST, f_condition, false }, { 0 } };
/* ObjectMeta: what a kubectl dump carries is accepted and not kept. */
static const struct fdef f_metadata[] = {
	{ "name", T_STR, NULL, false }, { "generateName", T_STR, NULL, true }, { "namespace", T_STR, NULL, true },
	{ "selfLink", T_STR, NULL, true }, { "uid", T_STR, NULL, true }, { "resourceVersion", T_STR, NULL, true },
	{ "generation", T_ANY, NULL, true }, { "creationTimestamp", T_ANY, NULL, true },
	{ "deletionTimestamp", T_ANY, NULL, true }, { "deletionGracePeriodSeconds", T_ANY, NULL, true },
	{ "labels", T_ANY, NULL, true }, { "annotations", T_ANY, NULL, true }, { "ownerReferences", T_ANY, NULL, true },
	{ "finalizers", T_ANY, NULL, true }, { "managedFields", T_ANY, NULL, true }, { 0 }
};
static const struct fdef f_fs[] = {
	{ "apiVersion", T_STR, NULL, false }, { "kind", T_STR, NULL, false }, { "metadata", T_OBJ, f_metadata, false },
	{ "spec", T_OBJ, f_fs_spec, false }, { "status", T_OBJ, f_status, false }, { 0 }
};
static const struct fdef f_pl[] = {
	{ "apiVersion", T_STR, NULL, false }, { "kind", T_STR, NULL, false }, { "metadata", T_OBJ, f_metadata, false },
	{ "spec", T_OBJ, f_pl_spec, false }, { "status", T_OBJ, f_status, false }, { 0 }
};
static const struct fdef f_flow_weight[] = {
	{ "flowSchema", T_STR, NULL, false }, { "distinguisher", T_STR, NULL, false }, { "weight", T_NUM, NULL, false },
	{ 0 }
};
static const struct fdef f_fsh_spec[] = {
	{ "policy", T_STR, NULL, false }, { "usageHalfLifeTime", T_STR, NULL, false },
	{ "usageSamplingInterval", T_STR, NULL, false }, { "resetInactivityPeriod", T_STR, NULL, false },
	{ "flowWeights", T_OBJLIST, f_flow_weight, false }, { 0 }
};
static const struct fdef f_fsh[] = {
	{ "apiVersion", T_STR, NULL, false }, { "kind", T_STR, NULL, false }, { "metadata", T_OBJ, f_metadata, false },
	{ "spec", T_OBJ, f_fsh_spec, false }, { "status", T_OBJ, f_status, false }, { 0 }
};
static const struct fdef *const kind_fields[FG_FC_N_KINDS] = { f_fs, f_pl, f_fsh };

/* A field name as it may appear in a message: printable and bounded. */
static const char *safe_key(const char *k, char *buf, size_t cap)
{
	size_t i = 0;
	for (; k[i] && i + 1 < cap; i++)
		buf[i] = (unsigned char)k[i] < 0x20 || (unsigned char)k[i] >= 0x7f ? '?' : k[i];
	buf[i] = 0;
	return buf;
}

static json_t *decode(struct fg_fc_vctx *c, json_t *in, const struct fdef *defs, const char *path, unsigned *bad);

static json_t *decode_value(struct fg_fc_vctx *c, json_t *v, const struct fdef *d, const char *path, unsigned *bad)
{
	char p[FG_FC_PATH_MAX];
	size_t i;
	json_t *e;
	switch (d->type) {
	case T_ANY:
		return json_incref(v);
	case T_STR:
		if (json_is_string(v))
			return json_incref(v);
		fg_fc__invalid(c, path, v, "must be a string");
		break;
	case T_BOOL:
		if (json_is_boolean(v))
			return json_incref(v);
		fg_fc__invalid(c, path, v, "must be a boolean");
		break;
	case T_INT32:
		if (json_is_integer(v) && json_integer_value(v) >= INT32_MIN && json_integer_value(v) <= INT32_MAX)
			return json_incref(v);
		fg_fc__invalid(c, path, v, "must be a 32-bit integer");
		break;
	case T_NUM:
		if (json_is_number(v))
			return json_incref(v);
		fg_fc__invalid(c, path, v, "must be a number");
		break;
	case T_OBJ:
		if (json_is_object(v))
			return decode(c, v, d->sub, path, bad);
		fg_fc__invalid(c, path, v, "must be an object");
		break;
	case T_STRLIST:
	case T_OBJLIST:
		if (!json_is_array(v)) {
			fg_fc__invalid(c, path, v, d->type == T_STRLIST ? "must be a list of strings" : "must be a list of objects");
			break;
		} else {
			json_t *out = json_array();
			const struct fdef elem = { d->name, d->type == T_STRLIST ? T_STR : T_OBJ, d->sub, false };
			json_array_foreach(v, i, e) {
				json_t *x = decode_value(c, e, &elem, fg_fc__index_of(p, path, i), bad);
				json_array_append_new(out, x ? x : json_null());
			}
			return out;
		}
	}
	(*bad)++;
	return NULL;
}

/* The known, non-null fields of `in`, type-checked; unknown fields are
 * warnings (errors when strict), as kubectl's field validation does. */
static json_t *decode(struct fg_fc_vctx *c, json_t *in, const struct fdef *defs, const char *path, unsigned *bad)
{
	json_t *out = json_object(), *v;
	const char *key;
	char p[FG_FC_PATH_MAX], k[80];
	json_object_foreach(in, key, v) {
		const struct fdef *d = defs;
		while (d->name && strcmp(d->name, key))
			d++;
		fg_fc__child(p, path, safe_key(key, k, sizeof(k)));
		if (!d->name) {
			if (c->strict) {
				fg_errors_add(c->errs, c->where, "strict decoding error: unknown field \"%s\"", p);
				(*bad)++;
			} else if (c->warnings) {
				fg_errors_add(c->warnings, c->where, "unknown field \"%s\"", p);
			}
			continue;
		}
		if (json_is_null(v)) /* as Go's decoder: null is the zero value */
			continue;
		json_t *x = decode_value(c, v, d, p, bad);
		if (x && !d->drop)
			json_object_set_new(out, key, x);
		else
			json_decref(x);
	}
	return out;
}

/* --- v1 defaulting (k8s.io/api/flowcontrol/v1 defaulters) ---------------- */

json_int_t fg_fc__int(json_t *o, const char *key, json_int_t dflt)
{
	json_t *v = json_object_get(o, key);
	return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/* Go's zero value for an int32 field (absent or 0) takes the default. */
static void default_zero(json_t *o, const char *key, json_int_t dflt)
{
	if (fg_fc__int(o, key, 0) == 0)
		json_object_set_new(o, key, json_integer(dflt));
}

/* A pointer field (absent) takes the default; an explicit 0 stays. */
static void default_absent(json_t *o, const char *key, json_int_t dflt)
{
	if (!json_object_get(o, key))
		json_object_set_new(o, key, json_integer(dflt));
}

static void default_schema(json_t *spec)
{
	default_zero(spec, "matchingPrecedence", FG_FC_DEFAULT_MATCHING_PRECEDENCE);
}

static void default_level(json_t *spec)
{
	json_t *lim = json_object_get(spec, "limited"), *ex = json_object_get(spec, "exempt");
	if (lim) {
		default_absent(lim, "nominalConcurrencyShares", FG_FC_DEFAULT_SHARES);
		default_absent(lim, "lendablePercent", 0);
		json_t *q = json_object_get(json_object_get(lim, "limitResponse"), "queuing");
		if (q) {
			default_zero(q, "queues", FG_FC_DEFAULT_QUEUES);
			default_zero(q, "handSize", FG_FC_DEFAULT_HAND_SIZE);
			default_zero(q, "queueLengthLimit", FG_FC_DEFAULT_QUEUE_LENGTH_LIMIT);
		}
	}
	if (ex) {
		default_absent(ex, "nominalConcurrencyShares", 0);
		default_absent(ex, "lendablePercent", 0);
	}
}

/* --- validation (Kubernetes' validation.go) ------------------------------ */

static const char *const supported_verbs[] = { "create", "delete", "deletecollection", "get", "list", "patch",
					       "proxy", "update", "watch" };
#define SUPPORTED_VERBS "\"create\", \"delete\", \"deletecollection\", \"get\", \"list\", \"patch\", \"proxy\", " \
			"\"update\", \"watch\""
#define DNS1123_SUBDOMAIN_MSG                                                                                        \
	"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "  \
	"start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "           \
	"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
#define DNS1123_LABEL_MSG                                                                                            \
	"a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and " \
	"end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "          \
	"'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"

/* One DNS-1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])? */
static bool label_ok(const char *s, size_t n)
{
	if (n == 0 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-'))
			return false;
	return true;
}

bool fg_fc__dns_subdomain(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 253)
		return false;
	for (const char *p = s;;) {
		const char *dot = strchr(p, '.');
		size_t len = dot ? (size_t)(dot - p) : strlen(p);
		if (!label_ok(p, len))
			return false;
		if (!dot)
			return true;
		p = dot + 1;
	}
}

static bool dns_label(const char *s)
{
	size_t n = strlen(s);
	return n <= 63 && label_ok(s, n);
}

/* Kubernetes' messages for a name that is not a DNS-1123 subdomain / label. */
void fg_fc__invalid_subdomain(struct fg_fc_vctx *c, const char *path, json_t *v, const char *intro)
{
	char msg[600];
	const char *s = json_string_value(v);
	snprintf(msg, sizeof(msg), "%s%s", intro, strlen(s) > 253 ? "must be no more than 253 characters" : DNS1123_SUBDOMAIN_MSG);
	fg_fc__invalid(c, path, v, msg);
}

static void invalid_label(struct fg_fc_vctx *c, const char *path, json_t *v, const char *intro)
{
	char msg[600];
	const char *s = json_string_value(v);
	snprintf(msg, sizeof(msg), "%s%s", intro, strlen(s) > 63 ? "must be no more than 63 characters" : DNS1123_LABEL_MSG);
	fg_fc__invalid(c, path, v, msg);
}

static bool has_wildcard(json_t *list)
{
	size_t i;
	json_t *e;
	json_array_foreach(list, i, e)
		if (!strcmp(json_string_value(e), "*"))
			return true;
	return false;
}

/* verbs: required; "*" alone; otherwise a subset of the supported verbs
 * (one error for the whole list, as Kubernetes reports it). */
static void validate_verbs(struct fg_fc_vctx *c, json_t *rule, const char *path)
{
	char p[FG_FC_PATH_MAX];
	json_t *verbs = json_object_get(rule, "verbs");
	fg_fc__child(p, path, "verbs");
	if (json_array_size(verbs) == 0) {
		fg_fc__required(c, p, "verbs must contain at least one value");
		return;
	}
	if (has_wildcard(verbs)) {
		if (json_array_size(verbs) > 1)
			fg_fc__invalid(c, p, verbs, "if '*' is present, must not specify other verbs");
		return;
	}
	size_t i;
	json_t *e;
	json_array_foreach(verbs, i, e) {
		bool ok = false;
		for (size_t k = 0; k < sizeof(supported_verbs) / sizeof(supported_verbs[0]); k++)
			ok |= !strcmp(json_string_value(e), supported_verbs[k]);
		if (!ok) {
			fg_fc__not_supported(c, p, verbs, SUPPORTED_VERBS);
			return;
		}
	}
}

/* A list that must not be empty and may hold "*" only alone. */
static void validate_wild_list(struct fg_fc_vctx *c, json_t *rule, const char *key, const char *path, const char *req,
			       const char *others)
{
	char p[FG_FC_PATH_MAX], msg[96];
	json_t *l = json_object_get(rule, key);
	fg_fc__child(p, path, key);
	if (json_array_size(l) == 0)
		fg_fc__required(c, p, req);
	else if (json_array_size(l) > 1 && has_wildcard(l)) {
		snprintf(msg, sizeof(msg), "if '*' is present, must not specify other %s", others);
		fg_fc__invalid(c, p, l, msg);
	}
}

static void validate_resource_rule(struct fg_fc_vctx *c, json_t *r, const char *path)
{
	char p[FG_FC_PATH_MAX], q[FG_FC_PATH_MAX];
	validate_verbs(c, r, path);
	validate_wild_list(c, r, "apiGroups", path, "resource rules must supply at least one api group", "api groups");
	validate_wild_list(c, r, "resources", path, "resource rules must supply at least one resource", "resources");
	json_t *nss = json_object_get(r, "namespaces");
	fg_fc__child(p, path, "namespaces");
	if (json_array_size(nss) == 0 && !json_is_true(json_object_get(r, "clusterScope"))) {
		fg_fc__required(c, p, "resource rules that are not cluster scoped must supply at least one namespace");
	} else if (has_wildcard(nss)) {
		if (json_array_size(nss) > 1)
			fg_fc__invalid(c, p, nss, "if '*' is present, must not specify other namespaces");
	} else {
		size_t i;
		json_t *e;
		json_array_foreach(nss, i, e)
			if (!dns_label(json_string_value(e)))
				invalid_label(c, fg_fc__index_of(q, p, i), e, "each member of this list must be '*' or a DNS-1123 label; ");
	}
}

/* Kubernetes' ValidateNonResourceURLPath: one error per path, the first. */
static void validate_url(struct fg_fc_vctx *c, json_t *v, const char *path)
{
	const char *u = json_string_value(v);
	size_t n = strlen(u);
	const char *why = NULL;
	unsigned stars = 0;
	for (const char *p = u; *p; p++)
		stars += *p == '*';
	if (n == 0)
		why = "must not be empty";
	else if (!strcmp(u, "/"))
		return;
	else if (u[0] != '/')
		why = "must start with slash";
	else if (strchr(u, ' ')) /* only a space: Kubernetes accepts tabs */
		why = "must not contain white-space";
	else if (strstr(u, "//"))
		why = "must not contain double slashes";
	else if (stars > 1 || (stars == 1 && !(n >= 2 && !strcmp(u + n - 2, "/*"))))
		why = "wildcard can only do suffix glob matching";
	if (why)
		fg_fc__invalid(c, path, v, why);
}

static void validate_nonresource_rule(struct fg_fc_vctx *c, json_t *r, const char *path)
{
	char p[FG_FC_PATH_MAX], q[FG_FC_PATH_MAX];
	validate_verbs(c, r, path);
	json_t *urls = json_object_get(r, "nonResourceURLs");
	fg_fc__child(p, path, "nonResourceURLs");
	if (json_array_size(urls) == 0) {
		fg_fc__required(c, p, "nonResourceURLs must contain at least one value");
	} else if (has_wildcard(urls)) {
		if (json_array_size(urls) > 1)
			fg_fc__invalid(c, p, urls, "if '*' is present, must not specify other non-resource URLs");
	} else {
		size_t i;
		json_t *e;
		json_array_foreach(urls, i, e)
			validate_url(c, e, fg_fc__index_of(q, p, i));
	}
}

/* Subjects are a union: the member `kind` names is required, the others
 * are forbidden. */
static void validate_subject(struct fg_fc_vctx *c, json_t *s, const char *path)
{
	static const struct {
		const char *kind, *member, *required, *forbidden;
	} kinds[] = {
		{ "User", "user", "user is required when subject kind is 'User'",
		  "user is forbidden when subject kind is not 'User'" },
		{ "Group", "group", "group is required when subject kind is 'Group'",
		  "group is forbidden when subject kind is not 'Group'" },
		{ "ServiceAccount", "serviceAccount", "serviceAccount is required when subject kind is 'ServiceAccount'",
		  "serviceAccount is forbidden when subject kind is not 'ServiceAccount'" },
	};
	char p[FG_FC_PATH_MAX], q[FG_FC_PATH_MAX];
	json_t *kind = json_object_get(s, "kind");
	size_t k = 0;
	while (k < 3 && !(kind && !strcmp(json_string_value(kind), kinds[k].kind)))
		k++;
	if (k == 3) {
		fg_fc__not_supported(c, fg_fc__child(p, path, "kind"), kind,
			      "\"Group\", \"ServiceAccount\", \"User\"");
		return;
	}
	json_t *m = json_object_get(s, kinds[k].member);
	fg_fc__child(p, path, kinds[k].member);
	if (!m) {
		fg_fc__required(c, p, kinds[k].required);
	} else if (k == 2) {
		json_t *name = json_object_get(m, "name"), *ns = json_object_get(m, "namespace");
		fg_fc__child(q, p, "name");
		if (!name || !*json_string_value(name))
			fg_fc__required(c, q, "");
		else if (strcmp(json_string_value(name), "*") && !fg_fc__dns_subdomain(json_string_value(name)))
			fg_fc__invalid_subdomain(c, q, name, "");
		fg_fc__child(q, p, "namespace");
		if (!ns || !*json_string_value(ns))
			fg_fc__required(c, q, "must specify namespace for service account");
		else if (!dns_label(json_string_value(ns)))
			invalid_label(c, q, ns, "");
	} else {
		json_t *name = json_object_get(m, "name");
		if (!name || !*json_string_value(name))
			fg_fc__required(c, fg_fc__child(q, p, "name"), "");
	}
	for (size_t o = 0; o < 3; o++)
		if (o != k && json_object_get(s, kinds[o].member))
			fg_fc__forbidden(c, fg_fc__child(p, path, kinds[o].member), kinds[o].forbidden);
}

static void validate_schema_spec(struct fg_fc_vctx *c, const char *name, json_t *spec)
{
	char p[FG_FC_PATH_MAX], q[FG_FC_PATH_MAX], msg[96];
	json_int_t prec = fg_fc__int(spec, "matchingPrecedence", 0);
	if (prec <= 0)
		fg_fc__invalid_int(c, "spec.matchingPrecedence", prec, "must be a positive value");
	if (prec > FG_FC_MAX_PRECEDENCE) {
		snprintf(msg, sizeof(msg), "must not be greater than %d", FG_FC_MAX_PRECEDENCE);
		fg_fc__invalid_int(c, "spec.matchingPrecedence", prec, msg);
	}
	if (prec == 1 && strcmp(name, "exempt"))
		fg_fc__invalid_int(c, "spec.matchingPrecedence", prec, "only the schema named 'exempt' may have matchingPrecedence 1");
	json_t *dm = json_object_get(spec, "distinguisherMethod");
	if (dm) {
		json_t *t = json_object_get(dm, "type");
		if (!t || (strcmp(json_string_value(t), "ByUser") && strcmp(json_string_value(t), "ByNamespace")))
			fg_fc__not_supported(c, "spec.distinguisherMethod.type", t,
				      "\"ByNamespace\", \"ByUser\"");
	}
	json_t *pl = json_object_get(json_object_get(spec, "priorityLevelConfiguration"), "name");
	if (!pl || !*json_string_value(pl))
		fg_fc__required(c, "spec.priorityLevelConfiguration.name", "must reference a priority level");
	else if (!fg_fc__dns_subdomain(json_string_value(pl)))
		fg_fc__invalid_subdomain(c, "spec.priorityLevelConfiguration.name", pl, "");
	size_t i, j;
	json_t *r, *e;
	json_array_foreach(json_object_get(spec, "rules"), i, r) {
		fg_fc__index_of(p, "spec.rules", i);
		json_t *subjects = json_object_get(r, "subjects");
		if (json_array_size(subjects) == 0)
			fg_fc__required(c, fg_fc__child(q, p, "subjects"), "subjects must contain at least one value");
		json_array_foreach(subjects, j, e) {
			char sp[FG_FC_PATH_MAX];
			validate_subject(c, e, fg_fc__index_of(sp, fg_fc__child(q, p, "subjects"), j));
		}
		json_t *rr = json_object_get(r, "resourceRules"), *nr = json_object_get(r, "nonResourceRules");
		if (json_array_size(rr) == 0 && json_array_size(nr) == 0)
			fg_fc__required(c, p, "at least one of resourceRules and nonResourceRules has to be non-empty");
		json_array_foreach(rr, j, e) {
			char rp[FG_FC_PATH_MAX];
			validate_resource_rule(c, e, fg_fc__index_of(rp, fg_fc__child(q, p, "resourceRules"), j));
		}
		json_array_foreach(nr, j, e) {
			char rp[FG_FC_PATH_MAX];
			validate_nonresource_rule(c, e, fg_fc__index_of(rp, fg_fc__child(q, p, "nonResourceRules"), j));
		}
	}
}

static void validate_queuing(struct fg_fc_vctx *c, json_t *q)
{
	const char *p = "spec.limited.limitResponse.queuing";
	char path[FG_FC_PATH_MAX], msg[160];
	json_int_t queues = fg_fc__int(q, "queues", 0), hand = fg_fc__int(q, "handSize", 0);
	json_int_t qll = fg_fc__int(q, "queueLengthLimit", 0);
	if (qll <= 0)
		fg_fc__invalid_int(c, fg_fc__child(path, p, "queueLengthLimit"), qll, "must be positive");
	fg_fc__child(path, p, "queues");
	if (queues <= 0) {
		fg_fc__invalid_int(c, path, queues, "must be positive");
	} else if (queues > FG_FC_MAX_QUEUES) {
		snprintf(msg, sizeof(msg), "must not be greater than %d", FG_FC_MAX_QUEUES);
		fg_fc__invalid_int(c, path, queues, msg);
	}
	fg_fc__child(path, p, "handSize");
	if (hand <= 0) {
		fg_fc__invalid_int(c, path, hand, "must be positive");
	} else if (hand > queues) {
		snprintf(msg, sizeof(msg), "should not be greater than queues (%lld)", (long long)queues);
		fg_fc__invalid_int(c, path, hand, msg);
	} else if (fg_dealer_required_bits((uint32_t)queues, (uint32_t)hand) > FG_DEALER_MAX_BITS) {
		snprintf(msg, sizeof(msg), "required entropy bits of deckSize %lld and handSize %lld should not be greater "
			 "than %u", (long long)queues, (long long)hand, FG_DEALER_MAX_BITS);
		fg_fc__invalid_int(c, path, hand, msg);
	} else if (queues > FG_DEALER_MAX_DECK || hand > FG_DEALER_MAX_HAND) {
		/* fairgate's own bound, beyond what Kubernetes checks */
		snprintf(msg, sizeof(msg), "fairgate deals at most %u queues and %u cards", FG_DEALER_MAX_DECK,
			 FG_DEALER_MAX_HAND);
		fg_fc__invalid_int(c, path, hand, msg);
	}
}

static void validate_percent(struct fg_fc_vctx *c, json_t *o, const char *path)
{
	char p[FG_FC_PATH_MAX];
	json_t *v = json_object_get(o, "lendablePercent");
	if (v && (json_integer_value(v) < 0 || json_integer_value(v) > 100))
		fg_fc__invalid(c, fg_fc__child(p, path, "lendablePercent"), v, "must be between 0 and 100, inclusive");
	v = json_object_get(o, "nominalConcurrencyShares");
	if (v && json_integer_value(v) < 0)
		fg_fc__invalid(c, fg_fc__child(p, path, "nominalConcurrencyShares"), v, "must be a non-negative integer");
}

static void validate_level_spec(struct fg_fc_vctx *c, const char *name, json_t *spec)
{
	json_t *type = json_object_get(spec, "type");
	const char *t = type ? json_string_value(type) : "";
	if (!strcmp(name, "exempt") != !strcmp(t, "Exempt"))
		fg_fc__invalid(c, "spec.type", type, "must be 'Exempt' if and only if `name` is 'exempt'");
	json_t *lim = json_object_get(spec, "limited"), *ex = json_object_get(spec, "exempt");
	if (!strcmp(t, "Exempt")) {
		if (lim)
			fg_fc__forbidden(c, "spec.limited", "must be nil if the type is not Limited");
		if (ex)
			validate_percent(c, ex, "spec.exempt");
		return;
	}
	if (strcmp(t, "Limited")) {
		fg_fc__not_supported(c, "spec.type", type, "\"Exempt\", \"Limited\"");
		return;
	}
	if (ex)
		fg_fc__forbidden(c, "spec.exempt", "must be nil if the type is Limited");
	if (!lim) {
		fg_fc__required(c, "spec.limited", "must not be empty when type is Limited");
		return;
	}
	validate_percent(c, lim, "spec.limited");
	json_t *b = json_object_get(lim, "borrowingLimitPercent");
	if (b && json_integer_value(b) < 0)
		fg_fc__invalid(c, "spec.limited.borrowingLimitPercent", b, "if specified, must be a non-negative integer");
	json_t *lr = json_object_get(lim, "limitResponse");
	json_t *lrt = json_object_get(lr, "type"), *q = json_object_get(lr, "queuing");
	const char *lt = lrt ? json_string_value(lrt) : "";
	if (!strcmp(lt, "Reject")) {
		if (q)
			fg_fc__forbidden(c, "spec.limited.limitResponse.queuing",
				  "must be nil if limited.limitResponse.type is not Limited");
	} else if (!strcmp(lt, "Queue")) {
		if (!q)
			fg_fc__required(c, "spec.limited.limitResponse.queuing",
				 "must not be empty if limited.limitResponse.type is Limited");
		else
			validate_queuing(c, q);
	} else {
		fg_fc__not_supported(c, "spec.limited.limitResponse.type", lrt, "\"Queue\", \"Reject\"");
	}
}

static void validate_status(struct fg_fc_vctx *c, json_t *status)
{
	json_t *conds = json_object_get(status, "conditions"), *e;
	size_t i;
	char p[FG_FC_PATH_MAX];
	json_array_foreach(conds, i, e) {
		json_t *t = json_object_get(e, "type");
		if (!t || !*json_string_value(t)) {
			snprintf(p, sizeof(p), "status.conditions[%zu].type", i);
			fg_fc__required(c, p, "");
			continue;
		}
		for (size_t k = 0; t && k < i; k++)
			if (json_equal(t, json_object_get(json_array_get(conds, k), "type"))) {
				char v[160];
				snprintf(p, sizeof(p), "status.conditions[%zu].type", i);
				fg_fc__field_error(c, p, "Duplicate value: %s", fg_fc__show(t, v, sizeof(v)));
				break;
			}
	}
}

/* --- mandatory objects ----------------------------------------------------- */

/* Go's semantic equality on decoded objects: an absent field equals its
 * zero value (0, false, "", an empty list). */
static bool is_zero(json_t *v)
{
	return !v || json_is_null(v) || json_is_false(v) || (json_is_integer(v) && json_integer_value(v) == 0) ||
	       (json_is_string(v) && json_string_length(v) == 0) || (json_is_array(v) && json_array_size(v) == 0);
}

/* An object whose every field is its zero value (recursively). */
static bool all_zero(json_t *o)
{
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v)
		if (!is_zero(v) && !(json_is_object(v) && all_zero(v)))
			return false;
	return true;
}

static bool semantic_equal(json_t *a, json_t *b)
{
	if (is_zero(a) || is_zero(b))
		return is_zero(a) && is_zero(b);
	if (json_is_object(a) && json_is_object(b)) {
		const char *k;
		json_t *v;
		json_object_foreach(a, k, v)
			if (!semantic_equal(v, json_object_get(b, k)))
				return false;
		json_object_foreach(b, k, v)
			if (!json_object_get(a, k) && !is_zero(v) && !(json_is_object(v) && all_zero(v)))
				return false;
		return true;
	}
	if (json_is_array(a) && json_is_array(b)) {
		if (json_array_size(a) != json_array_size(b))
			return false;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!semantic_equal(json_array_get(a, i), json_array_get(b, i)))
				return false;
		return true;
	}
	return json_equal(a, b);
}

static void check_mandatory(struct fg_fc_vctx *c, enum fg_fc_kind kind, const char *name, json_t *spec)
{
	json_t *want = fg_fc__mandatory(kind, name);
	if (!want)
		return;
	json_t *want_spec = json_deep_copy(fg_fc__spec(want)), *have = json_deep_copy(spec);
	bool exempt_level = kind == FG_FC_PRIORITYLEVEL && !strcmp(name, "exempt");
	if (exempt_level) { /* as Kubernetes: operators may tune spec.exempt */
		json_object_del(want_spec, "exempt");
		json_object_del(have, "exempt");
	}
	if (!semantic_equal(have, want_spec)) {
		char msg[128];
		snprintf(msg, sizeof(msg), "spec of '%s'%s must equal the fixed value", name,
			 exempt_level ? " except the 'spec.exempt' field" : "");
		fg_fc__invalid(c, "spec", spec, msg);
	}
	json_decref(want);
	json_decref(want_spec);
	json_decref(have);
}

/* --- an object in ---------------------------------------------------------- */

/* Decoded and defaulted, or NULL when a value has the wrong type (Kubernetes
 * would not get past decoding) or there is no spec. */
static json_t *normalize(struct fg_fc_vctx *c, json_t *obj, enum fg_fc_kind kind)
{
	unsigned bad = 0;
	json_t *dec = decode(c, obj, kind_fields[kind], "", &bad);
	if (bad) {
		json_decref(dec);
		return NULL;
	}
	json_t *spec = json_object_get(dec, "spec");
	if (!spec) { /* a struct in Go, not a pointer: absent is empty */
		spec = json_object();
		json_object_set_new(dec, "spec", spec);
	}
	if (kind == FG_FC_FLOWSCHEMA)
		default_schema(spec);
	else if (kind == FG_FC_PRIORITYLEVEL)
		default_level(spec);
	else
		fg_fc__default_fairsharing(spec);
	return dec;
}

static json_t *stored_form(enum fg_fc_kind kind, const char *name, json_t *spec)
{
	return json_pack("{s:s, s:s, s:{s:s}, s:O}", "apiVersion", fg_fc_kind_api_version(kind), "kind",
			 fg_fc_kind_names[kind], "metadata", "name", name, "spec", spec);
}

json_t *fg_fc__normalize_builtin(json_t *obj, enum fg_fc_kind kind, const char *name)
{
	struct fg_errors e = { .len = 0 };
	struct fg_fc_vctx c = { .errs = &e, .where = "built-in" };
	json_t *dec = normalize(&c, obj, kind);
	json_t *out = dec ? stored_form(kind, name, json_object_get(dec, "spec")) : NULL;
	json_decref(dec);
	return out;
}

json_t *fg_fc__take(json_t *obj, enum fg_fc_kind kind, const char *name, const char *where, bool strict,
		    struct fg_errors *errs, struct fg_errors *warnings)
{
	struct fg_fc_vctx c = { .errs = errs, .warnings = warnings, .where = where, .strict = strict };
	unsigned before = errs->count;
	json_t *dec = normalize(&c, obj, kind);
	if (!dec)
		return NULL;
	/* v1beta3's round-trip marker has no meaning in v1 (validation.go). */
	if (kind == FG_FC_PRIORITYLEVEL &&
	    json_object_get(json_object_get(json_object_get(obj, "metadata"), "annotations"), FG_FC_V1BETA3_ZERO_SHARES_KEY))
		fg_fc__forbidden(&c, "metadata.annotations", "annotation '" FG_FC_V1BETA3_ZERO_SHARES_KEY "' is forbidden");
	json_t *spec = json_object_get(dec, "spec");
	if (kind == FG_FC_FLOWSCHEMA)
		validate_schema_spec(&c, name, spec);
	else if (kind == FG_FC_PRIORITYLEVEL)
		validate_level_spec(&c, name, spec);
	else
		fg_fc__validate_fairsharing_spec(&c, spec);
	check_mandatory(&c, kind, name, spec);
	validate_status(&c, json_object_get(dec, "status"));
	json_t *out = errs->count == before ? stored_form(kind, name, spec) : NULL;
	json_decref(dec);
	return out;
}
