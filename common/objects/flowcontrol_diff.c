/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flowcontrol_diff — what a change to the object set does: per object
 * created / configured / unchanged / deleted with the fields that changed,
 * and every level's seat limits before and after.  See flowcontrol.h.
 *
 * Objects are compared in their normalized form (decoded, v1 defaults filled
 * in), so a file that spells a default out and the live object that has it
 * implied are equal, as kubectl apply finds them.
 */
#include "flowcontrol_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yamljson.h"

/* A value as one short line for a field's "old -> new". */
static void value_text(json_t *v, char *buf, size_t cap)
{
	if (!v) {
		snprintf(buf, cap, "(none)");
		return;
	}
	char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS | FG_FC_JSON_REALS);
	snprintf(buf, cap, "%s", t ? t : "?");
	if (t && strlen(t) >= cap && cap > 4)
		memcpy(buf + cap - 4, "...", 4); /* long lists: the start says enough */
	free(t);
}

/* One "path: old -> new" line per leaf that differs; objects are walked,
 * anything else (lists included, which are ordered) compared whole. */
static void field_diff(json_t *a, json_t *b, const char *path, json_t *out)
{
	if (json_array_size(out) >= FG_FC_DIFF_MAX_FIELDS || json_equal(a, b))
		return;
	if (json_is_object(a) && json_is_object(b)) {
		const char *k;
		json_t *v;
		char sub[256];
		json_object_foreach(a, k, v) {
			snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", k);
			field_diff(v, json_object_get(b, k), sub, out);
		}
		json_object_foreach(b, k, v)
			if (!json_object_get(a, k)) {
				snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", k);
				field_diff(NULL, v, sub, out);
			}
		return;
	}
	char x[120], y[120];
	value_text(a, x, sizeof(x));
	value_text(b, y, sizeof(y));
	json_array_append_new(out, json_sprintf("%s: %s -> %s", path, x, y));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The union of two tables' names, sorted (a stable answer). */
static const char **sorted_names(json_t *a, json_t *b, size_t *n)
{
	size_t cap = json_object_size(a) + json_object_size(b), k = 0;
	const char **names = calloc(cap ? cap : 1, sizeof(*names));
	const char *key;
	json_t *v;
	if (!names)
		return NULL;
	json_object_foreach(a, key, v)
		names[k++] = key;
	json_object_foreach(b, key, v)
		if (!json_object_get(a, key))
			names[k++] = key;
	qsort(names, k, sizeof(*names), cmp_str);
	*n = k;
	return names;
}

json_t *fg_fc_set_diff(const struct fg_fc_set *before, const struct fg_fc_set *after, const struct fg_fc_set *input,
		       const char *removed)
{
	json_t *objects = json_array(), *counts = json_pack("{s:i, s:i, s:i, s:i}", "created", 0, "configured", 0,
							     "unchanged", 0, removed, 0);
	json_int_t more = 0;
	if (!objects || !counts)
		goto oom;
	const enum fg_fc_kind *order = fg_fc_kind_order;
	for (int i = 0; i < FG_FC_N_KINDS; i++) {
		json_t *b = fg_fc__table(before, order[i]), *a = fg_fc__table(after, order[i]);
		size_t n;
		const char **names = sorted_names(b, a, &n);
		if (!names)
			goto oom;
		for (size_t k = 0; k < n; k++) {
			json_t *ob = json_object_get(b, names[k]), *oa = json_object_get(a, names[k]);
			const char *action = !ob ? "created" : !oa ? removed : !json_equal(ob, oa) ? "configured" : NULL;
			if (!action && input && json_object_get(fg_fc__table(input, order[i]), names[k]))
				action = "unchanged";
			if (!action)
				continue;
			json_object_set_new(counts, action, json_integer(json_integer_value(json_object_get(counts, action)) + 1));
			if (json_array_size(objects) >= FG_FC_DIFF_MAX_OBJECTS) {
				more++;
				continue;
			}
			json_t *e = json_pack("{s:s, s:s, s:s}", "kind", fg_fc_kind_names[order[i]], "name", names[k],
					      "action", action);
			if (e && ob && oa && !strcmp(action, "configured")) {
				json_t *fields = json_array();
				field_diff(fg_fc__spec(ob), fg_fc__spec(oa), "spec", fields);
				json_object_set_new(e, "fields", fields);
			}
			json_array_append_new(objects, e);
		}
		free(names);
	}
	json_object_set_new(counts, "objects", objects);
	json_object_set_new(counts, "more", json_integer(more));
	return counts;
oom:
	json_decref(objects);
	json_decref(counts);
	return NULL;
}

static void take_id(json_t *ids, size_t *n_objects, json_t *o, const char *where, struct fg_errors *errs)
{
	const char *kind = json_string_value(json_object_get(o, "kind"));
	const char *name = json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
	int k = kind ? fg_fc_kind_parse(kind) : -1;
	if (kind && !strcmp(kind, "FairgateSettings")) {
		json_array_append_new(ids, json_pack("{s:s, s:s}", "kind", kind, "name", ""));
		return;
	}
	if (k < 0 || strcmp(kind, fg_fc_kind_names[k])) {
		fg_errors_add(errs, where, FG_FC_KINDS_MSG);
		return;
	}
	if (!name || !*name) {
		fg_errors_add(errs, where, "metadata.name: Required value");
		return;
	}
	if (++*n_objects > FG_FC_MAX_OBJECTS) { /* as apply counts: settings aside */
		fg_errors_add(errs, where, "more than %d objects", FG_FC_MAX_OBJECTS);
		return;
	}
	json_array_append_new(ids, json_pack("{s:s, s:s}", "kind", fg_fc_kind_names[k], "name", name));
}

json_t *fg_fc_document_ids(const uint8_t *buf, size_t len, struct fg_errors *errs)
{
	char msg[256], where[64];
	unsigned before = errs->count;
	json_t *docs = fg_load_documents(buf, len, msg, sizeof(msg)), *ids = json_array(), *doc, *o;
	size_t d, i, n_objects = 0;
	if (!docs)
		fg_errors_add(errs, "(input)", "%s", msg);
	json_array_foreach(docs, d, doc) {
		const char *kind = json_string_value(json_object_get(doc, "kind"));
		snprintf(where, sizeof(where), "document %zu", d + 1);
		if (!json_is_object(doc)) {
			fg_errors_add(errs, where, "must be an object");
		} else if (kind && strlen(kind) >= 4 && !strcmp(kind + strlen(kind) - 4, "List")) {
			if (!json_is_array(json_object_get(doc, "items")))
				fg_errors_add(errs, where, "items: must be a list");
			json_array_foreach(json_object_get(doc, "items"), i, o) {
				snprintf(where, sizeof(where), "document %zu item %zu", d + 1, i);
				if (json_is_object(o))
					take_id(ids, &n_objects, o, where, errs);
				else
					fg_errors_add(errs, where, "must be an object");
			}
		} else {
			take_id(ids, &n_objects, doc, where, errs);
		}
	}
	json_decref(docs);
	if (errs->count != before || !ids) {
		json_decref(ids);
		return NULL;
	}
	return ids;
}

bool fg_fc_set_has(const struct fg_fc_set *s, enum fg_fc_kind kind, const char *name)
{
	return json_object_get(fg_fc__table(s, kind), name) != NULL;
}

bool fg_fc_set_equal(const struct fg_fc_set *a, const struct fg_fc_set *b)
{
	for (int k = 0; k < FG_FC_N_KINDS; k++)
		if (!json_equal(a->tables[k], b->tables[k]))
			return false;
	return true;
}

static json_t *limits(const struct fg_fc_level *l)
{
	if (!l)
		return json_null();
	return json_pack("{s:i, s:i, s:i}", "nominal", (json_int_t)l->nominal, "min", (json_int_t)l->min, "max",
			 (json_int_t)l->max);
}

static const struct fg_fc_level *level_named(const struct fg_fc_config *c, const char *name)
{
	int i = c ? fg_fc_level_index(c, name) : -1;
	return i >= 0 ? &c->levels[i] : NULL;
}

static json_t *level_entry(const char *name, const struct fg_fc_level *b, const struct fg_fc_level *a)
{
	bool changed = !a || !b || a->nominal != b->nominal || a->min != b->min || a->max != b->max;
	return json_pack("{s:s, s:o, s:o, s:b}", "name", name, "before", limits(b), "after", limits(a), "changed",
			 changed);
}

json_t *fg_fc_levels_diff(const struct fg_fc_config *before, const struct fg_fc_config *after)
{
	json_t *out = json_array();
	for (uint32_t i = 0; out && after && i < after->n_levels; i++) {
		const struct fg_fc_level *a = &after->levels[i];
		json_array_append_new(out, level_entry(a->name, level_named(before, a->name), a));
	}
	for (uint32_t i = 0; out && before && i < before->n_levels; i++)
		if (!level_named(after, before->levels[i].name))
			json_array_append_new(out, level_entry(before->levels[i].name, &before->levels[i], NULL));
	return out;
}
