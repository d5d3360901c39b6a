/* flowcontrol — FlowSchema / PriorityLevelConfiguration model; see flowcontrol.h. */
#include "flowcontrol.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flowhash.h"
#include "shuffle.h"
#include "yamljson.h"

extern const char fg_bootstrap_json[];

struct fg_fc_set {
	json_t *fs; /* name -> normalized FlowSchema */
	json_t *pl; /* name -> normalized PriorityLevelConfiguration */
};

static const char *const kind_names[] = { "FlowSchema", "PriorityLevelConfiguration" };
const char *fg_fc_kind_name(enum fg_fc_kind k) { return kind_names[k]; }

int fg_fc_kind_parse(const char *s)
{
	static const char *const fs[] = { "FlowSchema", "flowschema", "flowschemas", "fs" };
	static const char *const pl[] = { "PriorityLevelConfiguration", "prioritylevelconfiguration",
					   "prioritylevelconfigurations", "plc", "pl", "prioritylevel", "prioritylevels" };
	for (size_t i = 0; i < sizeof(fs) / sizeof(fs[0]); i++)
		if (!strcmp(s, fs[i]))
			return FG_FC_FLOWSCHEMA;
	for (size_t i = 0; i < sizeof(pl) / sizeof(pl[0]); i++)
		if (!strcmp(s, pl[i]))
			return FG_FC_PRIORITYLEVEL;
	return -1;
}

struct fg_fc_set *fg_fc_set_new(void)
{
	struct fg_fc_set *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->fs = json_object();
	s->pl = json_object();
	return s;
}

void fg_fc_set_free(struct fg_fc_set *s)
{
	if (!s)
		return;
	json_decref(s->fs);
	json_decref(s->pl);
	free(s);
}

struct fg_fc_set *fg_fc_set_copy(const struct fg_fc_set *s)
{
	struct fg_fc_set *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->fs = json_deep_copy(s->fs);
	c->pl = json_deep_copy(s->pl);
	return c;
}

/* --- validation helpers ------------------------------------------------ */

struct ctx {
	struct fg_errors *errs;
	char obj[300]; /* "FlowSchema/name" */
};

static void err(struct ctx *c, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void err(struct ctx *c, const char *path, const char *fmt, ...)
{
	char full[512], msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(full, sizeof(full), "%s: %s", c->obj, path);
	fg_errors_add(c->errs, full, "%s", msg);
}

/* DNS-1123 subdomain: lowercase alphanumerics, '-' and '.', alnum at both ends, <= 253. */
static bool dns_subdomain(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 253 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-' || s[i] == '.'))
			return false;
	return true;
}

/* DNS-1123 label: as a subdomain without dots, <= 63. */
static bool dns_label(const char *s)
{
	return dns_subdomain(s) && strlen(s) <= 63 && !strchr(s, '.');
}

static const char *const resource_verbs[] = { "get", "list", "create", "update", "delete", "deletecollection",
					      "patch", "watch", "proxy" };

/* A non-empty list of strings, where "*" may only stand alone.  Returns the
 * list (borrowed) or NULL after reporting. */
static json_t *string_list(struct ctx *c, json_t *obj, const char *key, const char *path, bool allow_empty)
{
	char p[256];
	snprintf(p, sizeof(p), "%s.%s", path, key);
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v)) {
		if (!allow_empty)
			err(c, p, "must not be empty");
		return NULL;
	}
	if (!json_is_array(v)) {
		err(c, p, "must be a list of strings");
		return NULL;
	}
	if (json_array_size(v) == 0 && !allow_empty) {
		err(c, p, "must not be empty");
		return NULL;
	}
	size_t i;
	json_t *e;
	bool bad = false;
	json_array_foreach(v, i, e) {
		if (!json_is_string(e)) {
			char q[280];
			snprintf(q, sizeof(q), "%s[%zu]", p, i);
			err(c, q, "must be a string");
			bad = true;
		} else if (!strcmp(json_string_value(e), "*") && json_array_size(v) > 1) {
			err(c, p, "if '*' is present, it must be the only entry");
			bad = true;
		}
	}
	return bad ? NULL : v;
}

static void validate_verbs(struct ctx *c, json_t *rule, const char *path, bool resource)
{
	json_t *verbs = string_list(c, rule, "verbs", path, false);
	size_t i;
	json_t *e;
	json_array_foreach(verbs, i, e) {
		const char *v = json_string_value(e);
		if (!strcmp(v, "*"))
			continue;
		bool ok = false;
		if (resource) {
			for (size_t k = 0; k < sizeof(resource_verbs) / sizeof(resource_verbs[0]); k++)
				ok |= !strcmp(v, resource_verbs[k]);
		} else {
			ok = *v != 0;
		}
		if (!ok) {
			char q[280];
			snprintf(q, sizeof(q), "%s.verbs[%zu]", path, i);
			err(c, q, resource ? "unsupported verb \"%s\" (want *, get, list, create, update, delete, "
					     "deletecollection, patch, watch or proxy)"
					   : "must not be empty (\"%s\")", v);
		}
	}
}

static void validate_url(struct ctx *c, const char *u, const char *path)
{
	if (!strcmp(u, "*"))
		return;
	if (u[0] != '/')
		err(c, path, "must start with '/': \"%s\"", u);
	for (const char *p = u; *p; p++)
		if (isspace((unsigned char)*p)) {
			err(c, path, "must not contain whitespace: \"%s\"", u);
			break;
		}
	if (strstr(u, "//"))
		err(c, path, "must not contain '//': \"%s\"", u);
	const char *star = strchr(u, '*');
	size_t n = strlen(u);
	if (star && !(star == u + n - 1 && n >= 2 && u[n - 2] == '/'))
		err(c, path, "the only wildcard allowed is a trailing '/*': \"%s\"", u);
}

static void validate_subject(struct ctx *c, json_t *s, const char *path)
{
	const char *kind = json_string_value(json_object_get(s, "kind"));
	char p[280];
	if (!kind || (strcmp(kind, "User") && strcmp(kind, "Group") && strcmp(kind, "ServiceAccount"))) {
		snprintf(p, sizeof(p), "%s.kind", path);
		err(c, p, "must be User, Group or ServiceAccount");
		return;
	}
	if (!strcmp(kind, "ServiceAccount")) {
		json_t *sa = json_object_get(s, "serviceAccount");
		const char *ns = json_string_value(json_object_get(sa, "namespace"));
		const char *name = json_string_value(json_object_get(sa, "name"));
		snprintf(p, sizeof(p), "%s.serviceAccount.namespace", path);
		if (!ns || !*ns)
			err(c, p, "must not be empty");
		else if (!dns_label(ns))
			err(c, p, "must be a DNS-1123 label: \"%s\"", ns);
		snprintf(p, sizeof(p), "%s.serviceAccount.name", path);
		if (!name || !*name)
			err(c, p, "must not be empty");
		else if (strcmp(name, "*") && !dns_subdomain(name))
			err(c, p, "must be '*' or a valid service account name: \"%s\"", name);
		return;
	}
	const char *member = !strcmp(kind, "User") ? "user" : "group";
	const char *name = json_string_value(json_object_get(json_object_get(s, member), "name"));
	snprintf(p, sizeof(p), "%s.%s.name", path, member);
	if (!name || !*name)
		err(c, p, "must not be empty");
}

static void validate_flowschema(struct ctx *c, const char *name, json_t *spec)
{
	if (!json_is_object(spec)) {
		err(c, "spec", "required");
		return;
	}
	const char *pl = json_string_value(json_object_get(json_object_get(spec, "priorityLevelConfiguration"), "name"));
	if (!pl || !*pl)
		err(c, "spec.priorityLevelConfiguration.name", "must not be empty");
	else if (!dns_subdomain(pl))
		err(c, "spec.priorityLevelConfiguration.name", "must be a DNS-1123 subdomain: \"%s\"", pl);
	json_t *prec = json_object_get(spec, "matchingPrecedence");
	if (prec && !json_is_integer(prec))
		err(c, "spec.matchingPrecedence", "must be an integer");
	json_int_t pv = json_integer_value(prec);
	if (pv == 0)
		pv = 1000;
	if (pv < 1 || pv > FG_FC_MAX_PRECEDENCE)
		err(c, "spec.matchingPrecedence", "must be between 1 and %d, inclusive", FG_FC_MAX_PRECEDENCE);
	else if (pv == 1 && strcmp(name, "exempt"))
		err(c, "spec.matchingPrecedence", "only the schema named \"exempt\" may have precedence 1");
	json_t *dm = json_object_get(spec, "distinguisherMethod");
	if (dm && !json_is_null(dm)) {
		const char *t = json_string_value(json_object_get(dm, "type"));
		if (!t || (strcmp(t, "ByUser") && strcmp(t, "ByNamespace")))
			err(c, "spec.distinguisherMethod.type", "must be ByUser or ByNamespace");
	}
	json_t *rules = json_object_get(spec, "rules");
	if (rules && !json_is_array(rules)) {
		err(c, "spec.rules", "must be a list");
		return;
	}
	size_t i, j;
	json_t *r, *e;
	json_array_foreach(rules, i, r) {
		char p[256], q[280];
		snprintf(p, sizeof(p), "spec.rules[%zu]", i);
		json_t *subjects = json_object_get(r, "subjects");
		snprintf(q, sizeof(q), "%s.subjects", p);
		if (!json_is_array(subjects) || json_array_size(subjects) == 0)
			err(c, q, "must have at least one subject");
		json_array_foreach(subjects, j, e) {
			snprintf(q, sizeof(q), "%s.subjects[%zu]", p, j);
			validate_subject(c, e, q);
		}
		json_t *rr = json_object_get(r, "resourceRules"), *nr = json_object_get(r, "nonResourceRules");
		if (json_array_size(rr) == 0 && json_array_size(nr) == 0)
			err(c, p, "at least one of resourceRules and nonResourceRules must be non-empty");
		json_array_foreach(rr, j, e) {
			snprintf(q, sizeof(q), "%s.resourceRules[%zu]", p, j);
			validate_verbs(c, e, q, true);
			string_list(c, e, "apiGroups", q, false);
			string_list(c, e, "resources", q, false);
			bool cluster = json_is_true(json_object_get(e, "clusterScope"));
			json_t *nss = string_list(c, e, "namespaces", q, cluster);
			size_t k;
			json_t *ns;
			json_array_foreach(nss, k, ns) {
				const char *v = json_string_value(ns);
				char nq[320];
				snprintf(nq, sizeof(nq), "%s.namespaces[%zu]", q, k);
				if (strcmp(v, "*") && !dns_label(v))
					err(c, nq, "must be '*' or a DNS-1123 label: \"%s\"", v);
			}
		}
		json_array_foreach(nr, j, e) {
			snprintf(q, sizeof(q), "%s.nonResourceRules[%zu]", p, j);
			validate_verbs(c, e, q, false);
			json_t *urls = string_list(c, e, "nonResourceURLs", q, false);
			size_t k;
			json_t *u;
			json_array_foreach(urls, k, u) {
				char uq[320];
				snprintf(uq, sizeof(uq), "%s.nonResourceURLs[%zu]", q, k);
				validate_url(c, json_string_value(u), uq);
			}
		}
	}
}

static json_int_t int_or(json_t *o, const char *key, json_int_t dflt, bool *present)
{
	json_t *v = json_object_get(o, key);
	if (present)
		*present = v && !json_is_null(v);
	return v && json_is_integer(v) ? json_integer_value(v) : dflt;
}

static void check_int(struct ctx *c, json_t *o, const char *key, const char *path, json_int_t lo, json_int_t hi,
		      const char *reason)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return;
	char p[280];
	snprintf(p, sizeof(p), "%s.%s", path, key);
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		err(c, p, "%s", reason);
}

static void validate_level(struct ctx *c, const char *name, json_t *spec)
{
	if (!json_is_object(spec)) {
		err(c, "spec", "required");
		return;
	}
	const char *type = json_string_value(json_object_get(spec, "type"));
	if (!type || (strcmp(type, "Exempt") && strcmp(type, "Limited"))) {
		err(c, "spec.type", "must be Exempt or Limited");
		return;
	}
	bool exempt = !strcmp(type, "Exempt");
	if (exempt != !strcmp(name, "exempt"))
		err(c, "spec.type", exempt ? "only the level named \"exempt\" may be Exempt"
					    : "the level named \"exempt\" must be of type Exempt");
	json_t *lim = json_object_get(spec, "limited"), *ex = json_object_get(spec, "exempt");
	if (exempt) {
		if (lim && !json_is_null(lim))
			err(c, "spec.limited", "must be empty when type is Exempt");
		check_int(c, ex, "nominalConcurrencyShares", "spec.exempt", 0, INT32_MAX, "must be a non-negative integer");
		check_int(c, ex, "lendablePercent", "spec.exempt", 0, 100, "must be between 0 and 100, inclusive");
		return;
	}
	if (ex && !json_is_null(ex))
		err(c, "spec.exempt", "must be empty when type is Limited");
	if (!json_is_object(lim)) {
		err(c, "spec.limited", "required when type is Limited");
		return;
	}
	check_int(c, lim, "nominalConcurrencyShares", "spec.limited", 0, INT32_MAX, "must be a non-negative integer");
	check_int(c, lim, "lendablePercent", "spec.limited", 0, 100, "must be between 0 and 100, inclusive");
	check_int(c, lim, "borrowingLimitPercent", "spec.limited", 0, INT32_MAX,
		  "if specified, must be a non-negative integer");
	json_t *lr = json_object_get(lim, "limitResponse");
	const char *lrt = json_string_value(json_object_get(lr, "type"));
	if (!lrt || (strcmp(lrt, "Queue") && strcmp(lrt, "Reject"))) {
		err(c, "spec.limited.limitResponse.type", "must be Queue or Reject");
		return;
	}
	json_t *q = json_object_get(lr, "queuing");
	if (!strcmp(lrt, "Reject")) {
		if (q && !json_is_null(q))
			err(c, "spec.limited.limitResponse.queuing", "must be empty when type is Reject");
		return;
	}
	const char *qp = "spec.limited.limitResponse.queuing";
	check_int(c, q, "queues", qp, 1, 10000000, "must be between 1 and 10000000, inclusive");
	check_int(c, q, "handSize", qp, 1, INT32_MAX, "must be positive");
	check_int(c, q, "queueLengthLimit", qp, 1, INT32_MAX, "must be positive");
	json_int_t queues = int_or(q, "queues", 64, NULL), hand = int_or(q, "handSize", 8, NULL);
	if (queues >= 1 && hand >= 1) {
		if (hand > queues)
			err(c, "spec.limited.limitResponse.queuing.handSize", "should not be greater than queues (%lld)",
			    (long long)queues);
		else if (queues <= 10000000 && fg_dealer_required_bits((uint32_t)queues, (uint32_t)hand) > FG_DEALER_MAX_BITS)
			err(c, "spec.limited.limitResponse.queuing.handSize",
			    "falls foul of the entropy limit: ceil(log2(%lld) * %lld) = %u bits > 60", (long long)queues,
			    (long long)hand, fg_dealer_required_bits((uint32_t)queues, (uint32_t)hand));
		else if (queues > FG_DEALER_MAX_DECK || hand > FG_DEALER_MAX_HAND)
			err(c, "spec.limited.limitResponse.queuing", "fairgate deals at most %u queues and %u cards",
			    FG_DEALER_MAX_DECK, FG_DEALER_MAX_HAND);
	}
}

/* --- normalization: defaults filled in, unknown fields dropped --------- */

static json_t *normalize_level(json_t *spec)
{
	const char *type = json_string_value(json_object_get(spec, "type"));
	if (!strcmp(type, "Exempt")) {
		json_t *ex = json_object_get(spec, "exempt");
		return json_pack("{s:s, s:{s:I, s:I}}", "type", "Exempt", "exempt",
				 "nominalConcurrencyShares", int_or(ex, "nominalConcurrencyShares", 0, NULL),
				 "lendablePercent", int_or(ex, "lendablePercent", 0, NULL));
	}
	json_t *lim = json_object_get(spec, "limited");
	json_t *lr = json_object_get(lim, "limitResponse");
	json_t *out = json_pack("{s:s, s:{s:I, s:I}}", "type", "Limited", "limited",
		"nominalConcurrencyShares", int_or(lim, "nominalConcurrencyShares", 30, NULL),
		"lendablePercent", int_or(lim, "lendablePercent", 0, NULL));
	json_t *nl = json_object_get(out, "limited");
	bool has_borrow;
	json_int_t borrow = int_or(lim, "borrowingLimitPercent", 0, &has_borrow);
	if (has_borrow)
		json_object_set_new(nl, "borrowingLimitPercent", json_integer(borrow));
	if (!strcmp(json_string_value(json_object_get(lr, "type")), "Reject")) {
		json_object_set_new(nl, "limitResponse", json_pack("{s:s}", "type", "Reject"));
	} else {
		json_t *q = json_object_get(lr, "queuing");
		json_object_set_new(nl, "limitResponse", json_pack("{s:s, s:{s:I, s:I, s:I}}", "type", "Queue", "queuing",
			"queues", int_or(q, "queues", 64, NULL), "handSize", int_or(q, "handSize", 8, NULL),
			"queueLengthLimit", int_or(q, "queueLengthLimit", 50, NULL)));
	}
	return out;
}

static json_t *normalize_schema(json_t *spec)
{
	json_t *out = json_deep_copy(spec);
	if (int_or(spec, "matchingPrecedence", 0, NULL) == 0)
		json_object_set_new(out, "matchingPrecedence", json_integer(1000));
	json_t *dm = json_object_get(out, "distinguisherMethod");
	if (dm && json_is_null(dm))
		json_object_del(out, "distinguisherMethod");
	if (!json_object_get(out, "rules"))
		json_object_set_new(out, "rules", json_array());
	return out;
}

/* --- mandatory objects ------------------------------------------------- */

static json_t *bootstrap_items(void)
{
	json_t *doc = json_loads(fg_bootstrap_json, 0, NULL);
	json_t *items = json_incref(json_object_get(doc, "items"));
	json_decref(doc);
	return items;
}

/* The built-in mandatory object of this kind and name, normalized, or NULL. */
static json_t *mandatory_spec(enum fg_fc_kind kind, const char *name)
{
	if (strcmp(name, "exempt") && strcmp(name, "catch-all"))
		return NULL;
	json_t *items = bootstrap_items(), *found = NULL, *o;
	size_t i;
	json_array_foreach(items, i, o) {
		if (!strcmp(json_string_value(json_object_get(o, "kind")), kind_names[kind]) &&
		    !strcmp(json_string_value(json_object_get(json_object_get(o, "metadata"), "name")), name)) {
			json_t *spec = json_object_get(o, "spec");
			found = kind == FG_FC_PRIORITYLEVEL ? normalize_level(spec) : normalize_schema(spec);
		}
	}
	json_decref(items);
	return found;
}

static void check_mandatory(struct ctx *c, enum fg_fc_kind kind, const char *name, json_t *norm)
{
	json_t *want = mandatory_spec(kind, name);
	if (!want)
		return;
	json_t *have = json_deep_copy(norm);
	if (kind == FG_FC_PRIORITYLEVEL && !strcmp(name, "exempt")) {
		/* As in Kubernetes, operators may tune these two. */
		json_object_del(json_object_get(have, "exempt"), "nominalConcurrencyShares");
		json_object_del(json_object_get(have, "exempt"), "lendablePercent");
		json_object_del(json_object_get(want, "exempt"), "nominalConcurrencyShares");
		json_object_del(json_object_get(want, "exempt"), "lendablePercent");
	}
	if (!json_equal(have, want))
		err(c, "spec", "the mandatory %s \"%s\" must keep its built-in spec%s", kind_names[kind], name,
		    kind == FG_FC_PRIORITYLEVEL && !strcmp(name, "exempt")
			    ? " (only nominalConcurrencyShares and lendablePercent may change)" : "");
	json_decref(have);
	json_decref(want);
}

/* --- applying documents ------------------------------------------------ */

struct pending {
	json_t *fs, *pl; /* name -> normalized, to merge */
};

static void take_object(json_t *o, const char *where, struct pending *pd, struct fg_settings *settings,
			struct fg_errors *errs, int *count)
{
	struct ctx c = { .errs = errs };
	const char *kind = json_string_value(json_object_get(o, "kind"));
	const char *api = json_string_value(json_object_get(o, "apiVersion"));
	const char *name = json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
	snprintf(c.obj, sizeof(c.obj), "%s %s/%s", where, kind ? kind : "(no kind)", name ? name : "(no name)");
	if (!json_is_object(o)) {
		snprintf(c.obj, sizeof(c.obj), "%s", where);
		err(&c, "(document)", "must be an object");
		return;
	}
	if (kind && !strcmp(kind, "FairgateSettings")) {
		if (!settings) {
			err(&c, "kind", "FairgateSettings cannot be changed here (it is read at start-up)");
			return;
		}
		char *text = json_dumps(o, JSON_COMPACT);
		if (fg_settings_apply_json(settings, (const uint8_t *)text, strlen(text), errs) == 0)
			(*count)++;
		free(text);
		return;
	}
	int k = kind ? fg_fc_kind_parse(kind) : -1;
	if (k < 0 || strcmp(kind, kind_names[k])) {
		err(&c, "kind", "must be FlowSchema, PriorityLevelConfiguration, FairgateSettings or a List of them");
		return;
	}
	if (!api || strcmp(api, FG_FC_API_VERSION))
		err(&c, "apiVersion", "must be \"%s\"", FG_FC_API_VERSION);
	if (!name || !dns_subdomain(name)) {
		err(&c, "metadata.name", "must be a DNS-1123 subdomain");
		return;
	}
	unsigned before = errs->count;
	json_t *spec = json_object_get(o, "spec");
	if (k == FG_FC_FLOWSCHEMA)
		validate_flowschema(&c, name, spec);
	else
		validate_level(&c, name, spec);
	if (errs->count != before)
		return;
	json_t *norm = k == FG_FC_FLOWSCHEMA ? normalize_schema(spec) : normalize_level(spec);
	check_mandatory(&c, (enum fg_fc_kind)k, name, norm);
	json_t *dst = k == FG_FC_FLOWSCHEMA ? pd->fs : pd->pl;
	if (json_object_get(dst, name))
		err(&c, "metadata.name", "appears twice in this input");
	json_object_set_new(dst, name, json_pack("{s:s, s:s, s:{s:s}, s:o}", "apiVersion", FG_FC_API_VERSION,
						 "kind", kind_names[k], "metadata", "name", name, "spec", norm));
	(*count)++;
}

int fg_fc_set_apply(struct fg_fc_set *s, const uint8_t *buf, size_t len, struct fg_settings *settings,
		    struct fg_errors *errs)
{
	char msg[256];
	unsigned before = errs->count;
	json_t *docs = fg_load_documents(buf, len, msg, sizeof(msg));
	if (!docs) {
		fg_errors_add(errs, "(input)", "%s", msg);
		return -EINVAL;
	}
	struct pending pd = { json_object(), json_object() };
	struct fg_settings next;
	if (settings)
		next = *settings;
	int count = 0;
	size_t d, i;
	json_t *doc, *o;
	json_array_foreach(docs, d, doc) {
		char where[64];
		const char *kind = json_string_value(json_object_get(doc, "kind"));
		if (kind && strlen(kind) >= 4 && !strcmp(kind + strlen(kind) - 4, "List")) {
			json_t *items = json_object_get(doc, "items");
			if (!json_is_array(items)) {
				snprintf(where, sizeof(where), "document %zu", d + 1);
				fg_errors_add(errs, where, "items: must be a list");
			}
			json_array_foreach(items, i, o) {
				snprintf(where, sizeof(where), "document %zu item %zu", d + 1, i);
				take_object(o, where, &pd, settings ? &next : NULL, errs, &count);
			}
		} else {
			snprintf(where, sizeof(where), "document %zu", d + 1);
			take_object(doc, where, &pd, settings ? &next : NULL, errs, &count);
		}
	}
	json_decref(docs);
	if (json_object_size(s->fs) + json_object_size(pd.fs) + json_object_size(s->pl) + json_object_size(pd.pl) >
	    FG_FC_MAX_OBJECTS)
		fg_errors_add(errs, "(input)", "more than %d objects in all", FG_FC_MAX_OBJECTS);
	if (errs->count == before) {
		json_object_update(s->fs, pd.fs);
		json_object_update(s->pl, pd.pl);
		if (settings)
			*settings = next;
	}
	json_decref(pd.fs);
	json_decref(pd.pl);
	return errs->count == before ? count : -EINVAL;
}

void fg_fc_set_swap(struct fg_fc_set *a, struct fg_fc_set *b)
{
	struct fg_fc_set t = *a;
	*a = *b;
	*b = t;
}

size_t fg_fc_set_size(const struct fg_fc_set *s)
{
	return json_object_size(s->fs) + json_object_size(s->pl);
}

int fg_fc_set_delete(struct fg_fc_set *s, enum fg_fc_kind kind, const char *name)
{
	return json_object_del(kind == FG_FC_FLOWSCHEMA ? s->fs : s->pl, name) ? -ENOENT : 0;
}

void fg_fc_set_add_mandatory(struct fg_fc_set *s)
{
	const char *names[] = { "exempt", "catch-all" };
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 2; i++) {
			json_t *dst = k == FG_FC_FLOWSCHEMA ? s->fs : s->pl;
			if (json_object_get(dst, names[i]))
				continue;
			json_object_set_new(dst, names[i], json_pack("{s:s, s:s, s:{s:s}, s:o}", "apiVersion",
				FG_FC_API_VERSION, "kind", kind_names[k], "metadata", "name", names[i],
				"spec", mandatory_spec((enum fg_fc_kind)k, names[i])));
		}
}

struct fg_fc_set *fg_fc_set_bootstrap(void)
{
	struct fg_fc_set *s = fg_fc_set_new();
	struct fg_errors e = { .len = 0 };
	if (s && fg_fc_set_apply(s, (const uint8_t *)fg_bootstrap_json, strlen(fg_bootstrap_json), NULL, &e) < 0) {
		fprintf(stderr, "fairgate: embedded bootstrap configuration is invalid:\n%s", e.text);
		abort(); /* a build defect, caught by the tests */
	}
	return s;
}

json_t *fg_fc_set_get(const struct fg_fc_set *s, enum fg_fc_kind kind, const char *name)
{
	json_t *src = kind == FG_FC_FLOWSCHEMA ? s->fs : s->pl, *v;
	if (name) {
		v = json_object_get(src, name);
		return v ? json_pack("[O]", v) : NULL;
	}
	json_t *arr = json_array();
	const char *key;
	/* Sorted by name for stable output. */
	size_t n = json_object_size(src), i = 0;
	const char **keys = calloc(n ? n : 1, sizeof(*keys));
	json_object_foreach(src, key, v)
		keys[i++] = key;
	for (size_t a = 1; a < n; a++)
		for (size_t b = a; b > 0 && strcmp(keys[b - 1], keys[b]) > 0; b--) {
			const char *t = keys[b];
			keys[b] = keys[b - 1];
			keys[b - 1] = t;
		}
	for (i = 0; i < n; i++)
		json_array_append(arr, json_object_get(src, keys[i]));
	free(keys);
	return arr;
}

/* --- compiling --------------------------------------------------------- */

/* All compiled memory comes from one arena, freed at once. */
struct arena_block {
	struct arena_block *next;
	size_t used, cap;
	max_align_t data[];
};

struct cstr {
	const char *s;
	uint32_t len;
};

struct clist {
	bool any; /* the list is exactly ["*"] */
	uint32_t n;
	struct cstr *v;
};

enum { SUBJ_USER, SUBJ_GROUP, SUBJ_SA };

struct csubject {
	uint8_t kind;
	bool any;          /* name "*" */
	struct cstr name;  /* user or group name; SA: full "system:serviceaccount:ns:name" or the prefix */
};

struct cres {
	struct clist verbs, groups, resources, namespaces;
	bool cluster_scope;
};

struct curl {
	struct cstr s;
	bool any;
	struct cstr prefix; /* the rule minus a trailing '*', with '/' appended if missing */
};

struct cnonres {
	struct clist verbs;
	uint32_t n_urls;
	struct curl *urls;
};

struct crule {
	uint32_t n_subjects, n_res, n_nonres;
	struct csubject *subjects;
	struct cres *res;
	struct cnonres *nonres;
};

struct fg_fc_schema {
	uint32_t n_rules;
	struct crule *rules;
};

struct compiled {
	struct fg_fc_config pub;
	struct arena_block *arena;
};

static void *alloc(struct compiled *c, size_t size)
{
	size = (size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
	struct arena_block *b = c->arena;
	if (!b || b->used + size > b->cap) {
		size_t cap = size > 65536 ? size : 65536;
		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->next = c->arena;
		b->used = 0;
		b->cap = cap;
		c->arena = b;
	}
	void *p = (char *)b->data + b->used;
	b->used += size;
	memset(p, 0, size);
	return p;
}

static struct cstr dup_str(struct compiled *c, const char *s, size_t n)
{
	char *d = alloc(c, n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = 0;
	}
	return (struct cstr){ d, (uint32_t)n };
}

static struct clist compile_list(struct compiled *c, json_t *arr)
{
	struct clist l = { 0 };
	size_t n = json_array_size(arr), i;
	json_t *e;
	if (n == 1 && !strcmp(json_string_value(json_array_get(arr, 0)), "*")) {
		l.any = true;
		return l;
	}
	l.v = alloc(c, sizeof(*l.v) * (n ? n : 1));
	json_array_foreach(arr, i, e)
		l.v[l.n++] = dup_str(c, json_string_value(e), json_string_length(e));
	return l;
}

static inline bool str_eq(struct cstr a, const char *s, size_t n)
{
	return a.len == n && !memcmp(a.s, s, n);
}

static bool list_has(const struct clist *l, const char *s, size_t n)
{
	if (l->any)
		return true;
	for (uint32_t i = 0; i < l->n; i++)
		if (str_eq(l->v[i], s, n))
			return true;
	return false;
}

static struct fg_fc_schema *compile_schema(struct compiled *c, json_t *spec)
{
	json_t *rules = json_object_get(spec, "rules");
	struct fg_fc_schema *s = alloc(c, sizeof(*s));
	size_t nr = json_array_size(rules), i, j;
	json_t *r, *e;
	s->rules = alloc(c, sizeof(*s->rules) * (nr ? nr : 1));
	json_array_foreach(rules, i, r) {
		struct crule *cr = &s->rules[s->n_rules++];
		json_t *subjects = json_object_get(r, "subjects");
		json_t *rr = json_object_get(r, "resourceRules"), *nn = json_object_get(r, "nonResourceRules");
		cr->subjects = alloc(c, sizeof(*cr->subjects) * (json_array_size(subjects) + 1));
		cr->res = alloc(c, sizeof(*cr->res) * (json_array_size(rr) + 1));
		cr->nonres = alloc(c, sizeof(*cr->nonres) * (json_array_size(nn) + 1));
		json_array_foreach(subjects, j, e) {
			struct csubject *cs = &cr->subjects[cr->n_subjects++];
			const char *kind = json_string_value(json_object_get(e, "kind"));
			if (!strcmp(kind, "ServiceAccount")) {
				json_t *sa = json_object_get(e, "serviceAccount");
				const char *ns = json_string_value(json_object_get(sa, "namespace"));
				const char *name = json_string_value(json_object_get(sa, "name"));
				char full[600];
				cs->kind = SUBJ_SA;
				cs->any = !strcmp(name, "*");
				int n = snprintf(full, sizeof(full), "system:serviceaccount:%s:%s", ns, cs->any ? "" : name);
				cs->name = dup_str(c, full, (size_t)n);
			} else {
				bool user = !strcmp(kind, "User");
				const char *name = json_string_value(json_object_get(json_object_get(e, user ? "user" : "group"), "name"));
				cs->kind = user ? SUBJ_USER : SUBJ_GROUP;
				cs->any = !strcmp(name, "*");
				cs->name = dup_str(c, name, strlen(name));
			}
		}
		json_array_foreach(rr, j, e) {
			struct cres *x = &cr->res[cr->n_res++];
			x->verbs = compile_list(c, json_object_get(e, "verbs"));
			x->groups = compile_list(c, json_object_get(e, "apiGroups"));
			x->resources = compile_list(c, json_object_get(e, "resources"));
			x->namespaces = compile_list(c, json_object_get(e, "namespaces"));
			x->cluster_scope = json_is_true(json_object_get(e, "clusterScope"));
		}
		json_array_foreach(nn, j, e) {
			struct cnonres *x = &cr->nonres[cr->n_nonres++];
			x->verbs = compile_list(c, json_object_get(e, "verbs"));
			json_t *urls = json_object_get(e, "nonResourceURLs"), *u;
			size_t k;
			x->urls = alloc(c, sizeof(*x->urls) * (json_array_size(urls) + 1));
			json_array_foreach(urls, k, u) {
				struct curl *cu = &x->urls[x->n_urls++];
				const char *us = json_string_value(u);
				size_t n = strlen(us);
				cu->s = dup_str(c, us, n);
				cu->any = !strcmp(us, "*");
				char pre[1024];
				size_t pn = n && us[n - 1] == '*' ? n - 1 : n;
				if (pn >= sizeof(pre) - 1)
					pn = sizeof(pre) - 2;
				memcpy(pre, us, pn);
				if (!pn || pre[pn - 1] != '/')
					pre[pn++] = '/';
				cu->prefix = dup_str(c, pre, pn);
			}
		}
	}
	return s;
}

/* Kubernetes' rounding: half away from zero (values here are >= 0). */
static uint32_t round_half_up(double x) { return (uint32_t)floor(x + 0.5); }

static int cmp_schema(const void *a, const void *b)
{
	json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	json_int_t px = json_integer_value(json_object_get(json_object_get(x, "spec"), "matchingPrecedence"));
	json_int_t py = json_integer_value(json_object_get(json_object_get(y, "spec"), "matchingPrecedence"));
	if (px != py)
		return px < py ? -1 : 1;
	return strcmp(json_string_value(json_object_get(json_object_get(x, "metadata"), "name")),
		      json_string_value(json_object_get(json_object_get(y, "metadata"), "name")));
}

int fg_fc_level_index(const struct fg_fc_config *c, const char *name)
{
	for (uint32_t i = 0; i < c->n_levels; i++)
		if (!strcmp(c->levels[i].name, name))
			return (int)i;
	return -1;
}

void fg_fc_config_free(struct fg_fc_config *pub)
{
	if (!pub)
		return;
	struct compiled *c = (struct compiled *)pub;
	for (struct arena_block *b = c->arena, *n; b; b = n) {
		n = b->next;
		free(b);
	}
	free(c);
}

struct fg_fc_config *fg_fc_compile(const struct fg_fc_set *set, uint32_t server_limit, struct fg_errors *errs)
{
	struct fg_fc_set *s = fg_fc_set_copy(set);
	if (!s)
		return NULL;
	fg_fc_set_add_mandatory(s);
	struct compiled *c = calloc(1, sizeof(*c));
	if (!c) {
		fg_fc_set_free(s);
		return NULL;
	}
	struct fg_fc_config *pub = &c->pub;
	pub->server_limit = server_limit;
	json_t *levels = fg_fc_set_get(s, FG_FC_PRIORITYLEVEL, NULL);
	json_t *schemas = fg_fc_set_get(s, FG_FC_FLOWSCHEMA, NULL);
	size_t n_levels = json_array_size(levels), i;
	json_t *o;
	pub->levels = alloc(c, sizeof(*pub->levels) * n_levels);
	uint64_t share_sum = 0;
	json_array_foreach(levels, i, o) {
		struct fg_fc_level *l = &pub->levels[pub->n_levels++];
		json_t *spec = json_object_get(o, "spec");
		const char *name = json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
		l->name = (char *)dup_str(c, name, strlen(name)).s;
		l->exempt = !strcmp(json_string_value(json_object_get(spec, "type")), "Exempt");
		json_t *body = json_object_get(spec, l->exempt ? "exempt" : "limited");
		l->shares = (uint32_t)int_or(body, "nominalConcurrencyShares", 0, NULL);
		l->lendable_percent = (uint32_t)int_or(body, "lendablePercent", 0, NULL);
		bool has_borrow;
		json_int_t borrow = int_or(body, "borrowingLimitPercent", 0, &has_borrow);
		l->borrowing_percent = has_borrow ? (int32_t)borrow : -1;
		json_t *lr = json_object_get(body, "limitResponse");
		l->reject = !l->exempt && !strcmp(json_string_value(json_object_get(lr, "type")), "Reject");
		if (!l->exempt && !l->reject) {
			json_t *q = json_object_get(lr, "queuing");
			l->queues = (uint32_t)int_or(q, "queues", 64, NULL);
			l->hand_size = (uint32_t)int_or(q, "handSize", 8, NULL);
			l->queue_length_limit = (uint32_t)int_or(q, "queueLengthLimit", 50, NULL);
		}
		share_sum += l->shares;
	}
	for (uint32_t k = 0; k < pub->n_levels; k++) {
		struct fg_fc_level *l = &pub->levels[k];
		l->nominal = share_sum ? (uint32_t)(((uint64_t)server_limit * l->shares + share_sum - 1) / share_sum) : 0;
		l->lendable = round_half_up(l->nominal * l->lendable_percent / 100.0);
		l->borrowing = l->borrowing_percent < 0 ? server_limit
							: round_half_up(l->nominal * (double)l->borrowing_percent / 100.0);
		l->min = l->nominal - l->lendable;
		l->max = l->nominal + l->borrowing;
		l->limit = l->nominal;
		if (l->queues) {
			uint32_t a = (uint32_t)ceil(0.15 * l->nominal), b = l->nominal / l->hand_size;
			l->max_seats = a < b ? a : b;
			if (l->max_seats < 1)
				l->max_seats = 1;
		}
	}
	/* Schemas in matching order; those whose level does not exist dangle and
	 * are dropped, as in Kubernetes. */
	size_t n_schemas = json_array_size(schemas);
	json_t **sorted = calloc(n_schemas ? n_schemas : 1, sizeof(*sorted));
	json_array_foreach(schemas, i, o)
		sorted[i] = o;
	qsort(sorted, n_schemas, sizeof(*sorted), cmp_schema);
	pub->schemas = alloc(c, sizeof(*pub->schemas) * (n_schemas + 1));
	pub->schema_names = alloc(c, sizeof(char *) * (n_schemas + 1));
	pub->schema_level = alloc(c, sizeof(uint32_t) * (n_schemas + 1));
	pub->schema_dist = alloc(c, sizeof(*pub->schema_dist) * (n_schemas + 1));
	for (i = 0; i < n_schemas; i++) {
		json_t *spec = json_object_get(sorted[i], "spec");
		const char *pl = json_string_value(json_object_get(json_object_get(spec, "priorityLevelConfiguration"), "name"));
		int li = fg_fc_level_index(pub, pl);
		if (li < 0)
			continue;
		uint32_t k = pub->n_schemas++;
		const char *name = json_string_value(json_object_get(json_object_get(sorted[i], "metadata"), "name"));
		pub->schema_names[k] = (char *)dup_str(c, name, strlen(name)).s;
		pub->schema_level[k] = (uint32_t)li;
		const char *dt = json_string_value(json_object_get(json_object_get(spec, "distinguisherMethod"), "type"));
		pub->schema_dist[k] = !dt ? FG_FC_DIST_NONE : !strcmp(dt, "ByUser") ? FG_FC_DIST_BY_USER : FG_FC_DIST_BY_NAMESPACE;
		pub->schemas[k] = compile_schema(c, spec);
		if (!strcmp(name, "catch-all"))
			pub->catch_all_schema = k;
	}
	free(sorted);
	json_decref(levels);
	json_decref(schemas);
	fg_fc_set_free(s);
	(void)errs;
	return pub;
}

/* --- classification ---------------------------------------------------- */

static bool subject_matches(const struct csubject *s, const struct fg_fc_request *r)
{
	switch (s->kind) {
	case SUBJ_USER:
		return s->any || str_eq(s->name, r->user.ptr, r->user.len);
	case SUBJ_GROUP:
		if (s->any)
			return true;
		for (unsigned g = 0; g < r->n_groups; g++)
			if (str_eq(s->name, r->groups[g].ptr, r->groups[g].len))
				return true;
		return false;
	default: /* service account: a prefix for name '*', else the full user name */
		if (s->any)
			return r->user.len >= s->name.len && !memcmp(r->user.ptr, s->name.s, s->name.len);
		return str_eq(s->name, r->user.ptr, r->user.len);
	}
}

static bool resource_matches(const struct cres *x, const struct fg_fc_request *r)
{
	if (!list_has(&x->verbs, r->verb.ptr, r->verb.len) || !list_has(&x->groups, r->api_group.ptr, r->api_group.len))
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
		if (!list_has(&x->resources, buf, n))
			return false;
	}
	if (r->ns.len == 0)
		return x->cluster_scope; /* '*' does not cover cluster-scoped requests */
	return list_has(&x->namespaces, r->ns.ptr, r->ns.len);
}

static bool nonresource_matches(const struct cnonres *x, const struct fg_fc_request *r)
{
	if (!list_has(&x->verbs, r->verb.ptr, r->verb.len))
		return false;
	for (uint32_t i = 0; i < x->n_urls; i++) {
		const struct curl *u = &x->urls[i];
		if (u->any || str_eq(u->s, r->path.ptr, r->path.len))
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

void fg_fc_classify(const struct fg_fc_config *c, const struct fg_fc_request *r, struct fg_fc_match *m)
{
	uint32_t s = c->catch_all_schema;
	for (uint32_t i = 0; i < c->n_schemas; i++)
		if (schema_matches(c->schemas[i], r)) {
			s = i;
			break;
		}
	m->schema = s;
	m->level = c->schema_level[s];
	m->distinguisher = (struct fg_str){ "", 0 };
	m->flow_hash = 0;
	const struct fg_fc_level *l = &c->levels[m->level];
	/* As Kubernetes: a flow only matters where there are queues to choose. */
	if (l->queues > 1) {
		if (c->schema_dist[s] == FG_FC_DIST_BY_USER)
			m->distinguisher = r->user;
		else if (c->schema_dist[s] == FG_FC_DIST_BY_NAMESPACE)
			m->distinguisher = r->ns;
		const char *name = c->schema_names[s];
		m->flow_hash = fg_flow_hash(name, strlen(name), m->distinguisher.ptr ? m->distinguisher.ptr : "",
					    m->distinguisher.len);
	}
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
