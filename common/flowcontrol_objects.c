/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flowcontrol_objects — the object set: documents (JSON or YAML, single
 * objects or Lists) in, normalized objects out; the mandatory and bootstrap
 * objects; `get` with the Dangling condition.  See flowcontrol.h.
 */
#include "flowcontrol_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yamljson.h"

extern const char fg_bootstrap_json[];

const char *const fg_fc_kind_names[2] = { "FlowSchema", "PriorityLevelConfiguration" };
const char *fg_fc_kind_name(enum fg_fc_kind k) { return fg_fc_kind_names[k]; }

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

struct fg_fc_set *fg_fc_set_new(void)
{
	struct fg_fc_set *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->fs = json_object();
	s->pl = json_object();
	if (!s->fs || !s->pl) {
		fg_fc_set_free(s);
		return NULL;
	}
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
	if (!c->fs || !c->pl) {
		fg_fc_set_free(c);
		return NULL;
	}
	return c;
}

struct fg_fc_set *fg_fc_set_share(const struct fg_fc_set *s)
{
	struct fg_fc_set *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->fs = json_copy(s->fs);
	c->pl = json_copy(s->pl);
	if (!c->fs || !c->pl) {
		fg_fc_set_free(c);
		return NULL;
	}
	return c;
}

/* --- mandatory and bootstrap objects ------------------------------------ */

json_t *fg_fc__mandatory(enum fg_fc_kind kind, const char *name)
{
	if (!fg_fc_is_mandatory(name))
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
	for (int k = 0; k < 2; k++)
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

/* --- applying documents ---------------------------------------------------- */

struct pending {
	json_t *tables[2]; /* name -> normalized, to merge */
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
		fg_errors_add(errs, obj, "kind: must be FlowSchema, PriorityLevelConfiguration, FairgateSettings or a "
			      "List of them");
		return;
	}
	unsigned before = errs->count;
	if (!api || strcmp(api, FG_FC_API_VERSION))
		fg_errors_add(errs, obj, "apiVersion: must be \"%s\"", FG_FC_API_VERSION);
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
	struct pending pd = { { json_object(), json_object() }, settings ? &next : NULL, opts, errs, 0 };
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
	size_t n_fs = union_size(s->fs, pd.tables[0]), n_pl = union_size(s->pl, pd.tables[1]);
	if (n_fs + n_pl > FG_FC_MAX_OBJECTS)
		fg_errors_add(errs, "(input)", "more than %d objects in all (%zu)", FG_FC_MAX_OBJECTS, n_fs + n_pl);
	n_pl += !json_object_get(s->pl, "exempt") && !json_object_get(pd.tables[1], "exempt");
	n_pl += !json_object_get(s->pl, "catch-all") && !json_object_get(pd.tables[1], "catch-all");
	if (n_pl > FG_MAX_CONFIG_LEVELS)
		fg_errors_add(errs, "(input)",
			      "%zu PriorityLevelConfigurations (mandatory ones included): fairgate runs at most %u, so "
			      "that a configuration renaming every level still fits while the old ones drain",
			      n_pl, FG_MAX_CONFIG_LEVELS);
	if (errs->count == before) {
		json_object_update(s->fs, pd.tables[0]);
		json_object_update(s->pl, pd.tables[1]);
		if (opts && opts->input) { /* copies: the set keeps its own */
			json_object_update_new(opts->input->fs, json_deep_copy(pd.tables[0]));
			json_object_update_new(opts->input->pl, json_deep_copy(pd.tables[1]));
		}
		if (settings)
			*settings = next;
	}
	json_decref(pd.tables[0]);
	json_decref(pd.tables[1]);
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
	return json_object_size(s->fs) + json_object_size(s->pl);
}

int fg_fc_set_delete(struct fg_fc_set *s, enum fg_fc_kind kind, const char *name)
{
	return json_object_del(fg_fc__table(s, kind), name) ? -ENOENT : 0;
}

/* --- reading the set ------------------------------------------------------- */

/* The level a schema refers to, when it does not exist (mandatory levels
 * always do: they are restored). */
static const char *dangling_level(const struct fg_fc_set *s, json_t *schema)
{
	const char *pl = json_string_value(json_object_get(json_object_get(fg_fc__spec(schema), "priorityLevelConfiguration"), "name"));
	if (!pl || json_object_get(s->pl, pl) || fg_fc_is_mandatory(pl))
		return NULL;
	return pl;
}

unsigned fg_fc_set_warn_dangling(const struct fg_fc_set *s, struct fg_errors *warnings)
{
	const char *name;
	json_t *o;
	unsigned n = 0;
	json_object_foreach(s->fs, name, o) {
		const char *pl = dangling_level(s, o);
		if (!pl)
			continue;
		char obj[300];
		snprintf(obj, sizeof(obj), "FlowSchema/%s", name);
		fg_errors_add(warnings, obj, "spec.priorityLevelConfiguration.name: PriorityLevelConfiguration \"%s\" does "
			      "not exist: the schema is Dangling and matches no request", pl);
		n++;
	}
	return n;
}

/* The Dangling condition Kubernetes' controller writes to a FlowSchema. */
static json_t *schema_status(const struct fg_fc_set *s, json_t *schema)
{
	const char *pl = json_string_value(json_object_get(json_object_get(fg_fc__spec(schema), "priorityLevelConfiguration"), "name"));
	bool dangling = dangling_level(s, schema) != NULL;
	char msg[400];
	snprintf(msg, sizeof(msg), dangling ? "This FlowSchema references the PriorityLevelConfiguration object named "
					      "\"%s\" but there is no such object"
					    : "This FlowSchema references the PriorityLevelConfiguration object named "
					      "\"%s\" and it exists", pl ? pl : "");
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
		if (kind == FG_FC_FLOWSCHEMA && o)
			json_object_set_new(o, "status", schema_status(s, o));
		json_array_append_new(arr, o);
	}
	free(keys);
	return arr;
}
