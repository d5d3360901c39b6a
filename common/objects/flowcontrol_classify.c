/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flowcontrol_classify — the per-request classifier over a compiled
 * configuration (first matching schema in (precedence, name) order, found
 * through the subject index), explain, and requests from messages and JSON.
 * Allocates nothing per request.
 */
#include "flowcontrol_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "flowhash.h"
#include "flowcontrol_match.h"
#include "shuffle.h"


static bool subject_matches(const struct csubject *s, const struct fg_fc_request *r)
{
	switch (s->kind) {
	case SUBJ_USER:
		return s->any || cstr_eq(s->name, r->user.ptr, r->user.len);
	case SUBJ_GROUP:
		if (s->any)
			return true;
		for (unsigned g = 0; g < r->n_groups; g++)
			if (cstr_eq(s->name, r->groups[g].ptr, r->groups[g].len))
				return true;
		return false;
	default: /* service account: a prefix for name '*', else the full user name */
		if (s->any)
			return r->user.len >= s->name.len && !memcmp(r->user.ptr, s->name.s, s->name.len);
		return cstr_eq(s->name, r->user.ptr, r->user.len);
	}
}

static bool resource_matches(const struct cres *x, const struct fg_fc_request *r)
{
	if (!clist_has(&x->verbs, r->verb.ptr, r->verb.len) || !clist_has(&x->groups, r->api_group.ptr, r->api_group.len))
		return false;
	if (!x->resources.any) {
		char buf[2 * FG_PROTO_MAX_STR + 2];
		size_t n = r->resource.len;
		memcpy(buf, r->resource.ptr, n);
		if (r->subresource.len) {
			buf[n++] = '/';
			memcpy(buf + n, r->subresource.ptr, r->subresource.len);
			n += r->subresource.len;
		}
		if (!clist_has(&x->resources, buf, n))
			return false;
	}
	if (r->ns.len == 0)
		return x->cluster_scope; /* '*' does not cover cluster-scoped requests */
	return clist_has(&x->namespaces, r->ns.ptr, r->ns.len);
}

static bool nonresource_matches(const struct cnonres *x, const struct fg_fc_request *r)
{
	if (!clist_has(&x->verbs, r->verb.ptr, r->verb.len))
		return false;
	for (uint32_t i = 0; i < x->n_urls; i++) {
		const struct curl *u = &x->urls[i];
		if (u->any || cstr_eq(u->s, r->path.ptr, r->path.len))
			return true;
		if (r->path.len >= u->prefix.len && !memcmp(r->path.ptr, u->prefix.s, u->prefix.len))
			return true;
	}
	return false;
}

static bool schema_matches(const struct fg_fc_schema *s, const struct fg_fc_request *r)
{
	bool nonresource = r->path.ptr != NULL;
	for (uint32_t i = 0; i < s->n_rules; i++) {
		const struct crule *cr = &s->rules[i];
		bool subject = false;
		for (uint32_t k = 0; k < cr->n_subjects && !subject; k++)
			subject = subject_matches(&cr->subjects[k], r);
		if (!subject)
			continue;
		if (nonresource) {
			for (uint32_t k = 0; k < cr->n_nonres; k++)
				if (nonresource_matches(&cr->nonres[k], r))
					return true;
		} else {
			for (uint32_t k = 0; k < cr->n_res; k++)
				if (resource_matches(&cr->res[k], r))
					return true;
		}
	}
	return false;
}

bool fg_fc_schema_matches(const struct fg_fc_config *c, uint32_t schema, const struct fg_fc_request *r)
{
	return schema < c->n_schemas && schema_matches(c->schemas[schema], r);
}

/* Whether a rule covers every resource request (any verb, API group,
 * resource, namespace, and cluster-scoped ones) / every non-resource one. */
static bool covers_all_resources(const struct crule *cr)
{
	for (uint32_t k = 0; k < cr->n_res; k++) {
		const struct cres *x = &cr->res[k];
		if (x->verbs.any && x->groups.any && x->resources.any && x->namespaces.any && x->cluster_scope)
			return true;
	}
	return false;
}

static bool covers_all_urls(const struct crule *cr)
{
	for (uint32_t k = 0; k < cr->n_nonres; k++) {
		if (!cr->nonres[k].verbs.any)
			continue;
		for (uint32_t i = 0; i < cr->nonres[k].n_urls; i++)
			if (cr->nonres[k].urls[i].any)
				return true;
	}
	return false;
}

/* Whether the schema matches every request of r's user and groups, whatever
 * the rest of the request says (including whether it names a resource). */
static bool identity_alone_matches(const struct fg_fc_schema *s, const struct fg_fc_request *r)
{
	bool resources = false, urls = false;
	for (uint32_t i = 0; i < s->n_rules && !(resources && urls); i++) {
		const struct crule *cr = &s->rules[i];
		bool subject = false;
		for (uint32_t k = 0; k < cr->n_subjects && !subject; k++)
			subject = subject_matches(&cr->subjects[k], r);
		if (subject) {
			resources = resources || covers_all_resources(cr);
			urls = urls || covers_all_urls(cr);
		}
	}
	return resources && urls;
}

/* Whether a schema that matches r may classify it: always, except that a
 * claimed request reaches an Exempt level only by its identity (flowcontrol.h). */
static bool claim_admitted(const struct fg_fc_config *c, uint32_t s, const struct fg_fc_request *r)
{
	return !r->claimed || !c->levels[c->schema_level[s]].exempt || identity_alone_matches(c->schemas[s], r);
}

static bool schema_classifies(const struct fg_fc_config *c, uint32_t s, const struct fg_fc_request *r)
{
	return schema_matches(c->schemas[s], r) && claim_admitted(c, s, r);
}

/* Every schema in matching order: the reference the index must equal, and
 * the path for requests with more groups than the protocol carries. */
static uint32_t classify_linear(const struct fg_fc_config *c, const struct fg_fc_request *r)
{
	for (uint32_t i = 0; i < c->n_schemas; i++)
		if (schema_classifies(c, i, r))
			return i;
	return c->catch_all_schema;
}

/* A list of the index being merged: its next schema is *p. */
struct cursor {
	const uint32_t *p, *end;
};

/* The lists one request gathers at most: its user, its service account's
 * namespace prefix, its groups, the wildcard schemas. */
#define MAX_LISTS (FG_PROTO_MAX_GROUPS + 3u)

static void heap_down(struct cursor *h, unsigned n, unsigned i)
{
	for (;;) {
		unsigned l = 2 * i + 1, m = i;
		if (l < n && *h[l].p < *h[m].p)
			m = l;
		if (l + 1 < n && *h[l + 1].p < *h[m].p)
			m = l + 1;
		if (m == i)
			return;
		struct cursor t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

/* Add the list of (kind, key) to h unless it is empty or there already (a
 * group named twice). */
static void gather(const struct fg_fc_index *x, uint32_t kind, const char *s, size_t len, struct cursor *h,
		   unsigned *n)
{
	const struct ckey *e = cindex_get(x, kind, s, len);
	if (!e)
		return;
	const uint32_t *p = x->schemas + e->off;
	for (unsigned i = 0; i < *n; i++)
		if (h[i].p == p)
			return;
	h[(*n)++] = (struct cursor){ p, p + e->n };
}

/*
 * The first matching schema among the request's candidates (flowcontrol_match.h,
 * the subject index): a k-way merge of its lists in increasing schema
 * order, each distinct schema tested once.  A schema in none of the lists
 * has no subject the request matches, so the answer is the linear walk's.
 * Work: at most MAX_LISTS lookups, then candidates x log(lists).
 */
static uint32_t classify_indexed(const struct fg_fc_config *c, const struct fg_fc_request *r)
{
	const struct fg_fc_index *x = c->index;
	struct cursor h[MAX_LISTS];
	unsigned n = 0;
	gather(x, CKEY_USER, r->user.ptr, r->user.len, h, &n);
	size_t pre = ckey_sa_prefix(r->user.ptr, r->user.len);
	if (pre)
		gather(x, CKEY_SA_NS, r->user.ptr, pre, h, &n);
	for (unsigned g = 0; g < r->n_groups; g++)
		gather(x, CKEY_GROUP, r->groups[g].ptr, r->groups[g].len, h, &n);
	if (x->n_always)
		h[n++] = (struct cursor){ x->always, x->always + x->n_always };
	for (unsigned i = n / 2; i-- > 0;)
		heap_down(h, n, i);
	uint32_t tested = UINT32_MAX;
	while (n) {
		uint32_t s = *h[0].p;
		if (s != tested) {
			if (schema_classifies(c, s, r))
				return s;
			tested = s;
		}
		if (++h[0].p == h[0].end)
			h[0] = h[--n];
		heap_down(h, n, 0);
	}
	return c->catch_all_schema;
}

void fg_fc_classify(const struct fg_fc_config *c, const struct fg_fc_request *r, struct fg_fc_match *m)
{
	uint32_t s = c->index && r->n_groups <= FG_PROTO_MAX_GROUPS ? classify_indexed(c, r) : classify_linear(c, r);
	m->schema = s;
	m->level = c->schema_level[s];
	m->distinguisher = (struct fg_str){ "", 0 };
	m->flow_hash = 0;
	m->weight = FG_FC_WEIGHT_ONE;
	const struct fg_fc_level *l = &c->levels[m->level];
	const struct cweights *w = c->schemas[s]->weights;
	/* As Kubernetes: a flow only matters where there are queues to choose;
	 * a weight only where the schema has FairSharing entries. */
	bool queues = l->queues > 1, exact = w && w->slots;
	if (!queues && !exact) {
		if (w)
			m->weight = w->dflt;
		return;
	}
	struct fg_str d = { "", 0 };
	if (c->schema_dist[s] == FG_FC_DIST_BY_USER)
		d = r->user;
	else if (c->schema_dist[s] == FG_FC_DIST_BY_NAMESPACE)
		d = r->ns;
	if (!d.ptr)
		d = (struct fg_str){ "", 0 };
	const char *name = c->schema_names[s];
	uint64_t hash = fg_flow_hash(name, strlen(name), d.ptr, d.len);
	if (queues) {
		m->distinguisher = d;
		m->flow_hash = hash;
	}
	if (w)
		m->weight = cweights_get(w, hash, d.ptr, d.len);
}

void fg_fc_request_from_msg(const struct fg_msg *m, struct fg_fc_request *r)
{
	static const char empty[1] = "";
	const struct fg_str *src[] = { &m->user, &m->ns, &m->verb, &m->api_group, &m->resource, &m->subresource };
	struct fg_str *dst[] = { &r->user, &r->ns, &r->verb, &r->api_group, &r->resource, &r->subresource };
	for (size_t i = 0; i < sizeof(src) / sizeof(src[0]); i++)
		*dst[i] = src[i]->ptr ? *src[i] : (struct fg_str){ empty, 0 };
	r->path = m->path; /* NULL ptr: a resource request */
	r->groups = m->groups;
	r->n_groups = m->n_groups;
	r->claimed = false;
}

json_t *fg_fc_explain(const struct fg_fc_config *c, const struct fg_fc_request *r)
{
	struct fg_fc_match m;
	fg_fc_classify(c, r, &m);
	const struct fg_fc_level *l = &c->levels[m.level];
	char hash[24];
	snprintf(hash, sizeof(hash), "0x%016llx", (unsigned long long)m.flow_hash);
	json_t *o = json_pack("{s:s, s:s, s:s%, s:s}", "flowSchema", c->schema_names[m.schema], "priorityLevel", l->name,
			      "distinguisher", m.distinguisher.ptr ? m.distinguisher.ptr : "", (size_t)m.distinguisher.len,
			      "flowHash", hash);
	json_object_set_new(o, "flowWeight", fg_fc__weight_json(m.weight));
	json_object_set_new(o, "priorityLevelType",
			    json_string(l->exempt ? "Exempt" : l->reject ? "Limited (Reject)" : "Limited (Queue)"));
	if (l->queues) {
		struct fg_dealer d;
		uint32_t cards[FG_DEALER_MAX_HAND];
		if (fg_dealer_init(&d, l->queues, l->hand_size) == 0) {
			fg_dealer_deal(&d, m.flow_hash, cards);
			json_t *hand = json_array();
			for (uint32_t i = 0; i < l->hand_size; i++)
				json_array_append_new(hand, json_integer(cards[i]));
			json_object_set_new(o, "hand", hand);
			json_object_set_new(o, "queue", json_integer(cards[0]));
		}
	}
	return o;
}

/* --- why a schema did not match (explain --why; not on the fast path) ---- */

struct why {
	char *p;
	size_t len, cap;
};

static void why_add(struct why *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void why_add(struct why *w, const char *fmt, ...)
{
	if (w->len + 1 >= w->cap)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(w->p + w->len, w->cap - w->len, fmt, ap);
	va_end(ap);
	w->len = n < 0 ? w->len : w->len + (size_t)n < w->cap ? w->len + (size_t)n : w->cap - 1;
}

/* The first check of a resource rule the request fails. */
static void why_resource(const struct cres *x, const struct fg_fc_request *r, struct why *w)
{
	if (!clist_has(&x->verbs, r->verb.ptr, r->verb.len))
		why_add(w, "verb \"%.*s\" is not in verbs", (int)r->verb.len, r->verb.ptr);
	else if (!clist_has(&x->groups, r->api_group.ptr, r->api_group.len))
		why_add(w, "apiGroup \"%.*s\" is not in apiGroups", (int)r->api_group.len, r->api_group.ptr);
	else if (!resource_matches(&(struct cres){ .verbs = x->verbs, .groups = x->groups, .resources = x->resources,
						  .namespaces = { .any = true }, .cluster_scope = true }, r))
		why_add(w, "resource \"%.*s%s%.*s\" is not in resources", (int)r->resource.len, r->resource.ptr,
			r->subresource.len ? "/" : "", (int)r->subresource.len, r->subresource.ptr);
	else if (!r->ns.len)
		why_add(w, "request has no namespace and the rule lacks clusterScope");
	else
		why_add(w, "namespace \"%.*s\" is not in namespaces", (int)r->ns.len, r->ns.ptr);
}

static void why_nonresource(const struct cnonres *x, const struct fg_fc_request *r, struct why *w)
{
	if (!clist_has(&x->verbs, r->verb.ptr, r->verb.len))
		why_add(w, "verb \"%.*s\" is not in verbs", (int)r->verb.len, r->verb.ptr);
	else
		why_add(w, "path \"%.*s\" is not in nonResourceURLs", (int)r->path.len, r->path.ptr);
}

/* Why rule cr does not match r (it does not: the caller checked). */
static void why_rule(const struct crule *cr, const struct fg_fc_request *r, struct why *w)
{
	bool subject = false;
	for (uint32_t k = 0; k < cr->n_subjects && !subject; k++)
		subject = subject_matches(&cr->subjects[k], r);
	if (!subject) {
		why_add(w, "no subject matches user \"%.*s\"", (int)r->user.len, r->user.ptr);
		if (r->n_groups)
			why_add(w, " or its %u group%s", r->n_groups, r->n_groups == 1 ? "" : "s");
		return;
	}
	bool nonresource = r->path.ptr != NULL;
	uint32_t n = nonresource ? cr->n_nonres : cr->n_res;
	if (!n) {
		why_add(w, nonresource ? "no nonResourceRules (a non-resource request)"
				       : "no resourceRules (a resource request)");
		return;
	}
	for (uint32_t k = 0; k < n; k++) {
		if (n > 1)
			why_add(w, "%s%s[%u]: ", k ? "; " : "", nonresource ? "nonResourceRules" : "resourceRules", k);
		if (nonresource)
			why_nonresource(&cr->nonres[k], r, w);
		else
			why_resource(&cr->res[k], r, w);
	}
}

json_t *fg_fc_explain_why(const struct fg_fc_config *c, const struct fg_fc_request *r)
{
	struct fg_fc_match m;
	fg_fc_classify(c, r, &m);
	json_t *arr = json_array();
	char text[FG_FC_WHY_MAX];
	for (uint32_t i = 0; i < c->n_schemas && i != m.schema; i++) {
		const struct fg_fc_schema *s = c->schemas[i];
		struct why w = { text, 0, sizeof(text) };
		text[0] = 0;
		if (!s->n_rules)
			why_add(&w, "no rules");
		else if (schema_matches(s, r)) /* passed over by the trust rule */
			why_add(&w, "matches only by what an untrusted request claims, and an Exempt level takes "
				    "an untrusted request only through a schema its identity alone matches");
		for (uint32_t k = 0; k < s->n_rules && !schema_matches(s, r); k++) {
			if (s->n_rules > 1)
				why_add(&w, "%srules[%u]: ", k ? "; " : "", k);
			why_rule(&s->rules[k], r, &w);
		}
		json_array_append_new(arr, json_pack("{s:s, s:s, s:s}", "flowSchema", c->schema_names[i], "priorityLevel",
						     c->levels[c->schema_level[i]].name, "reason", text));
	}
	return arr;
}

int fg_fc_request_from_json(json_t *obj, struct fg_fc_request *r, struct fg_str *groups, unsigned cap,
			    char *err, size_t errlen)
{
	static const char *const keys[] = { "user", "namespace", "verb", "apiGroup", "resource", "subresource", "path" };
	struct fg_str *dst[] = { &r->user, &r->ns, &r->verb, &r->api_group, &r->resource, &r->subresource, &r->path };
	memset(r, 0, sizeof(*r));
	if (!json_is_object(obj)) {
		snprintf(err, errlen, "request: must be an object");
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		json_t *v = json_object_get(obj, keys[i]);
		if (v && !json_is_string(v)) {
			snprintf(err, errlen, "request.%s: must be a string", keys[i]);
			return -EINVAL;
		}
		if (v && json_string_length(v) > FG_PROTO_MAX_STR) {
			snprintf(err, errlen, "request.%s: longer than %u bytes", keys[i], FG_PROTO_MAX_STR);
			return -EINVAL;
		}
		*dst[i] = v ? (struct fg_str){ json_string_value(v), (uint16_t)json_string_length(v) }
			    : (struct fg_str){ i == 6 ? NULL : "", 0 };
	}
	if (!r->verb.len)
		r->verb = (struct fg_str){ "get", 3 };
	json_t *untrusted = json_object_get(obj, "untrusted");
	if (untrusted && !json_is_boolean(untrusted)) {
		snprintf(err, errlen, "request.untrusted: must be true or false");
		return -EINVAL;
	}
	r->claimed = json_is_true(untrusted);
	json_t *gs = json_object_get(obj, "groups"), *g;
	size_t i;
	if (gs && !json_is_array(gs)) {
		snprintf(err, errlen, "request.groups: must be a list of strings");
		return -EINVAL;
	}
	json_array_foreach(gs, i, g) {
		if (!json_is_string(g) || i >= cap) {
			snprintf(err, errlen, "request.groups[%zu]: must be a string (at most %u groups)", i, cap);
			return -EINVAL;
		}
		groups[r->n_groups++] = (struct fg_str){ json_string_value(g), (uint16_t)json_string_length(g) };
	}
	r->groups = groups;
	return 0;
}

int fg_fc_request_from_json_alloc(json_t *obj, struct fg_fc_request *r, struct fg_str **groups, char *err,
				  size_t errlen)
{
	size_t n = json_array_size(json_object_get(obj, "groups"));
	*groups = calloc(n ? n : 1, sizeof(**groups));
	if (!*groups) {
		snprintf(err, errlen, "out of memory for %zu groups", n);
		return -ENOMEM;
	}
	int rc = fg_fc_request_from_json(obj, r, *groups, (unsigned)n, err, errlen);
	if (rc) {
		free(*groups);
		*groups = NULL;
	}
	return rc;
}
