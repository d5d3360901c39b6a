/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flowcontrol_objects — the object set: documents (JSON or YAML, single
 * objects or Lists) in, normalized objects out; the mandatory and bootstrap
 * objects; `get` with the Dangling condition (FlowSchemas and FairSharing
 * objects).  See flowcontrol.h.
 */
#include "flowcontrol_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yamljson.h"

extern const char fg_bootstrap_json[];

const char *const fg_fc_kind_names[FG_FC_N_KINDS] = { "FlowSchema", "PriorityLevelConfiguration", "FairSharing" };
const char *fg_fc_kind_name(enum fg_fc_kind k) { return fg_fc_kind_names[k]; }
const enum fg_fc_kind fg_fc_kind_order[FG_FC_N_KINDS] = { FG_FC_PRIORITYLEVEL, FG_FC_FLOWSCHEMA, FG_FC_FAIRSHARING };

const char *fg_fc_kind_api_version(enum fg_fc_kind k)
{
	return k == FG_FC_FAIRSHARING ? FG_FC_FAIRSHARING_API_VERSION : FG_FC_API_VERSION;
}

int fg_fc_kind_parse(const char *s)
{
	static const struct {
		const char *name;
		enum fg_fc_kind kind;
	} names[] = {
		{ "FlowSchema", FG_FC_FLOWSCHEMA },
		{ "flowschema", FG_FC_FLOWSCHEMA },
		{ "flowschemas", FG_FC_FLOWSCHEMA },
		{ "fs", FG_FC_FLOWSCHEMA },
		{ "PriorityLevelConfiguration", FG_FC_PRIORITYLEVEL },
		{ "prioritylevelconfiguration", FG_FC_PRIORITYLEVEL },
		{ "prioritylevelconfigurations", FG_FC_PRIORITYLEVEL },
		{ "plc", FG_FC_PRIORITYLEVEL },
		{ "pl", FG_FC_PRIORITYLEVEL },
		{ "prioritylevel", FG_FC_PRIORITYLEVEL },
		{ "prioritylevels", FG_FC_PRIORITYLEVEL },
		{ "FairSharing", FG_FC_FAIRSHARING },
		{ "fairsharing", FG_FC_FAIRSHARING },
		{ "fairsharings", FG_FC_FAIRSHARING },
		{ "fsh", FG_FC_FAIRSHARING },
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i].name))
			return (int)names[i].kind;
	return -1;
}

const char *fg_fc__name(json_t *obj)
{
	return json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
}

json_t *fg_fc__spec(json_t *obj)
{
	return json_object_get(obj, "spec");
}

bool fg_fc_is_mandatory(const char *name)
{
	return !strcmp(name, "exempt") || !strcmp(name, "catch-all");
}

bool fg_fc_is_mandatory_object(enum fg_fc_kind kind, const char *name)
{
	return kind != FG_FC_FAIRSHARING && fg_fc_is_mandatory(name);
}

/* A set with copies of s's tables (deep, or sharing the objects), or
 * empty tables when s is NULL. */
static struct fg_fc_set *set_from(const struct fg_fc_set *s, bool deep)
{
	struct fg_fc_set *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	for (int k = 0; k < FG_FC_N_KINDS; k++) {
		json_t *t = s ? s->tables[k] : NULL;
		if (!(c->tables[k] = !t ? json_object() : deep ? json_deep_copy(t) : json_copy(t))) {
			fg_fc_set_free(c);
			return NULL;
		}
	}
	return c;
}

struct fg_fc_set *fg_fc_set_new(void)
{
	return set_from(NULL, false);
}

void fg_fc_set_free(struct fg_fc_set *s)
{
	if (!s)
		return;
	for (int k = 0; k < FG_FC_N_KINDS; k++)
		json_decref(s->tables[k]);
	free(s);
}

struct fg_fc_set *fg_fc_set_copy(const struct fg_fc_set *s)
{
	return set_from(s, true);
}

struct fg_fc_set *fg_fc_set_share(const struct fg_fc_set *s)
{
	return set_from(s, false);
}

/* --- mandatory and bootstrap objects ------------------------------------ */

json_t *fg_fc__mandatory(enum fg_fc_kind kind, const char *name)
{
	if (!fg_fc_is_mandatory_object(kind, name))
		return NULL;
	json_t *doc = json_loads(fg_bootstrap_json, 0, NULL), *found = NULL, *o;
	size_t i;
	json_array_foreach(json_object_get(doc, "items"), i, o)
		if (!strcmp(json_string_value(json_object_get(o, "kind")), fg_fc_kind_names[kind]) &&
		    !strcmp(fg_fc__name(o), name))
			found = fg_fc__normalize_builtin(o, kind, name);
	json_decref(doc);
	return found;
}

unsigned fg_fc_set_add_mandatory(struct fg_fc_set *s)
{
	static const char *const names[] = { "exempt", "catch-all" };
	unsigned added = 0;
	for (int k = FG_FC_FLOWSCHEMA; k <= FG_FC_PRIORITYLEVEL; k++) /* the kinds with mandatory objects */
		for (int i = 0; i < 2; i++) {
			json_t *dst = fg_fc__table(s, (enum fg_fc_kind)k);
			if (json_object_get(dst, names[i]))
				continue;
			json_t *o = fg_fc__mandatory((enum fg_fc_kind)k, names[i]);
			if (o && !json_object_set_new(dst, names[i], o))
				added++;
		}
	return added;
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

int fg_fc_set_or_bootstrap(struct fg_fc_set *s)
{
	if (json_object_size(s->tables[FG_FC_FLOWSCHEMA]) || json_object_size(s->tables[FG_FC_PRIORITYLEVEL]))
		return 0;
	struct fg_fc_set *boot = fg_fc_set_bootstrap();
	if (!boot)
		return -ENOMEM;
	for (int k = FG_FC_FLOWSCHEMA; k <= FG_FC_PRIORITYLEVEL; k++) {
		json_t *t = s->tables[k];
		s->tables[k] = boot->tables[k];
		boot->tables[k] = t;
	}
	fg_fc_set_free(boot);
	return 0;
}

/* --- applying documents ---------------------------------------------------- */

struct pending {
	json_t *tables[FG_FC_N_KINDS]; /* name -> normalized, to merge */
	struct fg_settings *settings;
	const struct fg_fc_apply_opts *opts;
	struct fg_errors *errs;
	int count;
};

static void take_object(struct pending *pd, json_t *o, const char *where)
{
	char obj[320];
	struct fg_errors *errs = pd->errs;
	if (!json_is_object(o)) {
		fg_errors_add(errs, where, "must be an object");
		return;
	}
	const char *kind = json_string_value(json_object_get(o, "kind"));
	const char *api = json_string_value(json_object_get(o, "apiVersion"));
	json_t *name_v = json_object_get(json_object_get(o, "metadata"), "name");
	const char *name = json_string_value(name_v);
	if (kind && !strcmp(kind, "FairgateSettings")) {
		if (!pd->settings) {
			fg_errors_add(errs, where, "kind: FairgateSettings cannot be changed here (it is read at start-up)");
			return;
		}
		char *text = json_dumps(o, JSON_COMPACT);
		if (text && fg_settings_apply_json(pd->settings, (const uint8_t *)text, strlen(text), errs) == 0)
			pd->count++;
		free(text);
		return;
	}
	int k = kind ? fg_fc_kind_parse(kind) : -1;
	snprintf(obj, sizeof(obj), "%s %s/%.200s", where, k >= 0 ? fg_fc_kind_names[k] : kind ? "(unknown kind)" : "(no kind)",
		 name ? name : "(no name)");
	if (k < 0 || strcmp(kind, fg_fc_kind_names[k])) {
		fg_errors_add(errs, obj, FG_FC_KINDS_MSG);
		return;
	}
	unsigned before = errs->count;
	const char *want_api = fg_fc_kind_api_version((enum fg_fc_kind)k);
	if (!api || strcmp(api, want_api))
		fg_errors_add(errs, obj, "apiVersion: must be \"%s\"%s%.100s%s", want_api, api ? ", not \"" : "",
			      api ? api : "", api ? "\"" : "");
	if (!name_v)
		fg_errors_add(errs, obj, "metadata.name: Required value: name or generateName is required");
	else if (!name)
		fg_errors_add(errs, obj, "metadata.name: Invalid value: must be a string");
	else if (!fg_fc__dns_subdomain(name))
		fg_errors_add(errs, obj, "metadata.name: Invalid value: \"%.200s\": a lowercase RFC 1123 subdomain must "
			      "consist of lower case alphanumeric characters, '-' or '.', and must start and end with an "
			      "alphanumeric character%s", name, strlen(name) > 253 ? " (at most 253 characters)" : "");
	/* The spec is validated also when the name is bad: every error at once. */
	json_t *norm = fg_fc__take(o, (enum fg_fc_kind)k, name ? name : "", obj, pd->opts && pd->opts->strict, errs,
				   pd->opts ? pd->opts->warnings : NULL);
	if (errs->count != before) {
		json_decref(norm);
		return;
	}
	if (!norm) {
		fg_errors_add(errs, obj, "out of memory");
		return;
	}
	json_t *dst = pd->tables[k];
	if (json_object_get(dst, name))
		fg_errors_add(errs, obj, "metadata.name: Duplicate value: \"%s\": appears twice in this input", name);
	json_object_set_new(dst, name, norm);
	pd->count++;
}

/* The flowWeights entries of the FairSharing objects a merge leaves: those
 * of `next`, and of `cur` where next does not replace them. */
static size_t flow_weights_after(json_t *cur, json_t *next)
{
	size_t n = 0;
	const char *key;
	json_t *v;
	json_object_foreach(next, key, v)
		n += json_array_size(fg_fc__flow_weights(v));
	json_object_foreach(cur, key, v)
		if (!json_object_get(next, key))
			n += json_array_size(fg_fc__flow_weights(v));
	return n;
}

/* The number of distinct names in two tables. */
static size_t union_size(json_t *a, json_t *b)
{
	size_t n = json_object_size(a);
	const char *key;
	json_t *v;
	json_object_foreach(b, key, v)
		n += json_object_get(a, key) == NULL;
	return n;
}

int fg_fc_set_apply_opts(struct fg_fc_set *s, const uint8_t *buf, size_t len, struct fg_settings *settings,
			 const struct fg_fc_apply_opts *opts, struct fg_errors *errs)
{
	char msg[256];
	unsigned before = errs->count;
	json_t *docs = fg_load_documents(buf, len, msg, sizeof(msg));
	if (!docs) {
		fg_errors_add(errs, "(input)", "%s", msg);
		return -EINVAL;
	}
	struct fg_settings next;
	if (settings)
		next = *settings;
	struct pending pd = { { NULL }, settings ? &next : NULL, opts, errs, 0 };
	for (int k = 0; k < FG_FC_N_KINDS; k++)
		pd.tables[k] = json_object();
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
				take_object(&pd, o, where);
			}
		} else {
			snprintf(where, sizeof(where), "document %zu", d + 1);
			take_object(&pd, doc, where);
		}
	}
	json_decref(docs);
	/* Objects replaced by name count once. */
	json_t *pl = s->tables[FG_FC_PRIORITYLEVEL], *new_pl = pd.tables[FG_FC_PRIORITYLEVEL];
	size_t n_all = 0, n_pl = union_size(pl, new_pl);
	for (int k = 0; k < FG_FC_N_KINDS; k++)
		n_all += union_size(s->tables[k], pd.tables[k]);
	if (n_all > FG_FC_MAX_OBJECTS)
		fg_errors_add(errs, "(input)", "more than %d objects in all (%zu)", FG_FC_MAX_OBJECTS, n_all);
	size_t n_weights = flow_weights_after(s->tables[FG_FC_FAIRSHARING], pd.tables[FG_FC_FAIRSHARING]);
	if (n_weights > FG_FC_MAX_FLOW_WEIGHTS_TOTAL)
		fg_errors_add(errs, "(input)", "more than %u flowWeights entries in all FairSharing objects (%zu)",
			      FG_FC_MAX_FLOW_WEIGHTS_TOTAL, n_weights);
	n_pl += !json_object_get(pl, "exempt") && !json_object_get(new_pl, "exempt");
	n_pl += !json_object_get(pl, "catch-all") && !json_object_get(new_pl, "catch-all");
	if (n_pl > FG_MAX_CONFIG_LEVELS)
		fg_errors_add(errs, "(input)",
			      "%zu PriorityLevelConfigurations (mandatory ones included): fairgate runs at most %u, so "
			      "that a configuration renaming every level still fits while the old ones drain",
			      n_pl, FG_MAX_CONFIG_LEVELS);
	if (errs->count == before) {
		for (int k = 0; k < FG_FC_N_KINDS; k++) {
			json_object_update(s->tables[k], pd.tables[k]);
			if (opts && opts->input) /* copies: the set keeps its own */
				json_object_update_new(opts->input->tables[k], json_deep_copy(pd.tables[k]));
		}
		if (settings)
			*settings = next;
	}
	for (int k = 0; k < FG_FC_N_KINDS; k++)
		json_decref(pd.tables[k]);
	return errs->count == before ? pd.count : -EINVAL;
}

int fg_fc_set_apply(struct fg_fc_set *s, const uint8_t *buf, size_t len, struct fg_settings *settings,
		    struct fg_errors *errs)
{
	return fg_fc_set_apply_opts(s, buf, len, settings, NULL, errs);
}

void fg_fc_set_swap(struct fg_fc_set *a, struct fg_fc_set *b)
{
	struct fg_fc_set t = *a;
	*a = *b;
	*b = t;
}

size_t fg_fc_set_size(const struct fg_fc_set *s)
{
	size_t n = 0;
	for (int k = 0; k < FG_FC_N_KINDS; k++)
		n += json_object_size(s->tables[k]);
	return n;
}

int fg_fc_set_delete(struct fg_fc_set *s, enum fg_fc_kind kind, const char *name)
{
	return json_object_del(fg_fc__table(s, kind), name) ? -ENOENT : 0;
}

/* --- reading the set ------------------------------------------------------- */

const char *fg_fc__schema_level(json_t *schema)
{
	json_t *pl = json_object_get(fg_fc__spec(schema), "priorityLevelConfiguration");
	return json_string_value(json_object_get(pl, "name"));
}

json_t *fg_fc__flow_weights(json_t *fairsharing)
{
	return json_object_get(fg_fc__spec(fairsharing), "flowWeights");
}

/* The level an object refers to: a FlowSchema's, or the one a FairSharing
 * object is named after. */
static const char *referenced_level(enum fg_fc_kind kind, json_t *o)
{
	return kind == FG_FC_FAIRSHARING ? fg_fc__name(o) : fg_fc__schema_level(o);
}

/* Whether the level exists (mandatory levels always do: they are restored). */
static bool level_exists(const struct fg_fc_set *s, const char *pl)
{
	return pl && (json_object_get(s->tables[FG_FC_PRIORITYLEVEL], pl) || fg_fc_is_mandatory(pl));
}

/* Whether a level holds requests in queues (Limited, Queue): the only
 * kind that fair sharing acts on.  A mandatory level missing from the set
 * (restored at compile time) is exempt or rejects. */
static bool level_queues(const struct fg_fc_set *s, const char *pl)
{
	json_t *spec = fg_fc__spec(json_object_get(s->tables[FG_FC_PRIORITYLEVEL], pl));
	const char *t = json_string_value(json_object_get(json_object_get(json_object_get(spec, "limited"),
									  "limitResponse"), "type"));
	return t && !strcmp(t, "Queue");
}

/* A FairSharing object's entries that have no effect: a schema that does
 * not exist or sends to another level. */
static unsigned warn_entries(const struct fg_fc_set *s, const char *obj, const char *level, json_t *fsh,
			     struct fg_errors *warnings)
{
	size_t i;
	json_t *e;
	unsigned n = 0;
	json_array_foreach(fg_fc__flow_weights(fsh), i, e) {
		const char *fs = json_string_value(json_object_get(e, "flowSchema"));
		json_t *schema = fs ? json_object_get(s->tables[FG_FC_FLOWSCHEMA], fs) : NULL;
		/* A mandatory schema missing here is restored; it sends to its namesake. */
		bool exists = schema || (fs && fg_fc_is_mandatory(fs));
		const char *to = schema ? fg_fc__schema_level(schema) : fs;
		if (exists && to && !strcmp(to, level))
			continue;
		char path[64];
		snprintf(path, sizeof(path), "spec.flowWeights[%zu].flowSchema", i);
		if (!exists)
			fg_errors_add(warnings, obj, "%s: FlowSchema \"%s\" does not exist: the entry has no effect",
				      path, fs ? fs : "");
		else
			fg_errors_add(warnings, obj, "%s: FlowSchema \"%s\" sends to PriorityLevelConfiguration "
				      "\"%s\", not \"%s\": the entry has no effect", path, fs, to ? to : "", level);
		n++;
	}
	return n;
}

unsigned fg_fc_set_warn_dangling(const struct fg_fc_set *s, struct fg_errors *warnings)
{
	const char *name;
	json_t *o;
	unsigned n = 0;
	char obj[300];
	json_object_foreach(s->tables[FG_FC_FLOWSCHEMA], name, o) {
		const char *pl = fg_fc__schema_level(o);
		if (!pl || level_exists(s, pl))
			continue;
		snprintf(obj, sizeof(obj), "FlowSchema/%s", name);
		fg_errors_add(warnings, obj, "spec.priorityLevelConfiguration.name: PriorityLevelConfiguration \"%s\" does "
			      "not exist: the schema is Dangling and matches no request", pl);
		n++;
	}
	json_object_foreach(s->tables[FG_FC_FAIRSHARING], name, o) {
		snprintf(obj, sizeof(obj), "FairSharing/%s", name);
		if (!level_exists(s, name)) {
			fg_errors_add(warnings, obj, "metadata.name: PriorityLevelConfiguration \"%s\" does not exist: "
				      "the object is Dangling and has no effect", name);
			n++;
			continue;
		}
		if (!level_queues(s, name)) {
			fg_errors_add(warnings, obj, "metadata.name: PriorityLevelConfiguration \"%s\" does not queue "
				      "(Exempt or Reject): its policy and weights have no effect", name);
			n++;
		}
		n += warn_entries(s, obj, name, o, warnings);
	}
	return n;
}

/* The Dangling condition Kubernetes' controller writes to a FlowSchema
 * (and fairgate to a FairSharing object, whose level is its name). */
static json_t *dangling_status(const struct fg_fc_set *s, enum fg_fc_kind kind, json_t *o)
{
	const char *pl = referenced_level(kind, o);
	bool dangling = !level_exists(s, pl);
	char msg[400];
	snprintf(msg, sizeof(msg), "This %s references the PriorityLevelConfiguration object named \"%s\" %s",
		 fg_fc_kind_names[kind], pl ? pl : "", dangling ? "but there is no such object" : "and it exists");
	return json_pack("{s:[{s:s, s:s, s:s, s:s}]}", "conditions", "type", "Dangling", "status",
			 dangling ? "True" : "False", "reason", dangling ? "NotFound" : "Found", "message", msg);
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

json_t *fg_fc_set_get(const struct fg_fc_set *s, enum fg_fc_kind kind, const char *name)
{
	json_t *src = fg_fc__table(s, kind), *v;
	size_t n = name ? 1 : json_object_size(src), i = 0;
	const char **keys = calloc(n ? n : 1, sizeof(*keys));
	json_t *arr = json_array();
	if (!keys || !arr) {
		free(keys);
		json_decref(arr);
		return NULL;
	}
	if (name) {
		if (json_object_get(src, name))
			keys[i++] = name;
	} else {
		const char *key;
		json_object_foreach(src, key, v)
			keys[i++] = key;
		qsort(keys, n, sizeof(*keys), cmp_key); /* stable output */
	}
	if (name && !i) {
		free(keys);
		json_decref(arr);
		return NULL;
	}
	for (size_t k = 0; k < i; k++) {
		json_t *o = json_deep_copy(json_object_get(src, keys[k]));
		if (kind != FG_FC_PRIORITYLEVEL && o)
			json_object_set_new(o, "status", dangling_status(s, kind, o));
		json_array_append_new(arr, o);
	}
	free(keys);
	return arr;
}
