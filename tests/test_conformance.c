/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes conformance: Kubernetes' own test tables, ported as data into
 * tests/conformance/ (README.md there says from where), run against the
 * flowcontrol module.
 *
 *   validation_cases.json  validation_test.go: each object applied alone must
 *                          give exactly the (field path, error type) pairs
 *                          Kubernetes reports — for the v1 JSON, i.e. after
 *                          the v1 defaulters ("errorsAfterV1Defaulting" where
 *                          defaulting changes the internal-type outcome);
 *   match_cases.json       match_test.go: whether a FlowSchema matches a request;
 *   kubectl-dump.yaml/json what `kubectl get flowschemas,prioritylevelconfigurations
 *                          -o yaml|json` prints for the bootstrap objects: validates
 *                          strictly (no unknown field), applies unchanged, and is
 *                          the embedded bootstrap set, object for object.
 */
#include <errno.h>
#include <stdlib.h>

#include "flowcontrol.h"
#include "test.h"

#ifndef CONFORMANCE_DIR
#error "CONFORMANCE_DIR must name tests/conformance"
#endif

static json_t *load(const char *file)
{
	char path[512];
	json_error_t je;
	snprintf(path, sizeof(path), "%s/%s", CONFORMANCE_DIR, file);
	json_t *v = json_load_file(path, 0, &je);
	if (!v)
		fprintf(stderr, "  %s: %s (line %d)\n", path, je.text, je.line);
	return v;
}

static char *read_text(const char *file, size_t *len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", CONFORMANCE_DIR, file);
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf) {
		buf[n] = 0;
		*len = (size_t)n;
	}
	return buf;
}

/* Kubernetes' field.ErrorType names to the words fairgate's messages use. */
static const char *type_words(const char *type)
{
	static const char *const map[][2] = {
		{ "FieldValueRequired", "Required value" },   { "FieldValueInvalid", "Invalid value" },
		{ "FieldValueForbidden", "Forbidden" },       { "FieldValueNotSupported", "Unsupported value" },
		{ "FieldValueDuplicate", "Duplicate value" }, { "FieldValueTooLong", "Too long" },
		{ "FieldValueTooMany", "Too many" },          { "FieldValueNotFound", "Not found" },
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(type, map[i][0]))
			return map[i][1];
	return type;
}

/* "path|Type words" for each error line ("document 1 Kind/name: PATH: TYPE: ..."). */
static json_t *actual_pairs(const char *text)
{
	static const char *const roots[] = { ": metadata", ": spec", ": status" };
	json_t *out = json_array();
	for (const char *line = text; *line;) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		const char *at = NULL;
		for (size_t r = 0; r < 3; r++) {
			const char *p = strstr(line, roots[r]);
			if (p && p < line + n && (!at || p < at))
				at = p;
		}
		char pair[600];
		if (at) {
			const char *path = at + 2, *sep = strstr(path, ": ");
			const char *type = sep ? sep + 2 : "";
			const char *tend = strchr(type, ':');
			if (!tend || tend > line + n)
				tend = line + n;
			snprintf(pair, sizeof(pair), "%.*s|%.*s", (int)(sep ? sep - path : 0), path, (int)(tend - type), type);
		} else {
			snprintf(pair, sizeof(pair), "(unparsed)|%.*s", (int)n, line);
		}
		json_array_append_new(out, json_string(pair));
		line += n + (nl ? 1 : 0);
	}
	return out;
}

static json_t *expected_pairs(json_t *errors)
{
	json_t *out = json_array(), *e;
	size_t i;
	json_array_foreach(errors, i, e) {
		char pair[600];
		snprintf(pair, sizeof(pair), "%s|%s", json_string_value(json_object_get(e, "field")),
			 type_words(json_string_value(json_object_get(e, "type"))));
		json_array_append_new(out, json_string(pair));
	}
	return out;
}

/* Equal as multisets of strings. */
static bool same_pairs(json_t *a, json_t *b)
{
	if (json_array_size(a) != json_array_size(b))
		return false;
	json_t *left = json_deep_copy(b);
	size_t i, j;
	json_t *x, *y;
	bool ok = true;
	json_array_foreach(a, i, x) {
		bool found = false;
		json_array_foreach(left, j, y)
			if (json_equal(x, y)) {
				json_array_remove(left, j);
				found = true;
				break;
			}
		ok &= found;
	}
	json_decref(left);
	return ok;
}

TEST(kubernetes_validation_table)
{
	json_t *cases = load("validation_cases.json"), *c;
	CHECK(json_array_size(cases) > 0);
	size_t i, bad = 0;
	json_array_foreach(cases, i, c) {
		json_t *expect = json_object_get(c, "errorsAfterV1Defaulting");
		if (!expect)
			expect = json_object_get(c, "errors");
		char *text = json_dumps(json_object_get(c, "object"), JSON_COMPACT);
		struct fg_fc_set *s = fg_fc_set_new();
		struct fg_errors e = { .len = 0 };
		int rc = fg_fc_set_apply(s, (const uint8_t *)text, strlen(text), NULL, &e);
		json_t *have = actual_pairs(e.text), *want = expected_pairs(expect);
		bool ok = same_pairs(have, want) && (rc < 0) == (json_array_size(want) > 0) && e.count == json_array_size(have);
		if (!ok) {
			char *h = json_dumps(have, JSON_COMPACT), *w = json_dumps(want, JSON_COMPACT);
			fprintf(stderr, "  %s / %s:\n    want %s\n    have %s\n%s", json_string_value(json_object_get(c, "test")),
				json_string_value(json_object_get(c, "name")), w, h, e.text);
			free(h);
			free(w);
			bad++;
		}
		json_decref(have);
		json_decref(want);
		fg_fc_set_free(s);
		free(text);
	}
	printf("     %zu validation cases, %zu disagree\n", json_array_size(cases), bad);
	CHECK_EQ(bad, 0);
	json_decref(cases);
}

/* A request digest of match_test.go as fairgate's classifier sees it. */
static void request_of(json_t *q, struct fg_fc_request *r, struct fg_str *groups, unsigned cap)
{
	static const char *const keys[] = { "user", "namespace", "verb", "apiGroup", "resource", "subresource" };
	struct fg_str *dst[] = { &r->user, &r->ns, &r->verb, &r->api_group, &r->resource, &r->subresource };
	memset(r, 0, sizeof(*r));
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		const char *v = json_string_value(json_object_get(q, keys[k]));
		*dst[k] = fg_str_of(v ? v : "");
	}
	if (!json_is_true(json_object_get(q, "isResourceRequest"))) {
		const char *p = json_string_value(json_object_get(q, "path"));
		r->path = fg_str_of(p ? p : "");
	}
	size_t i;
	json_t *g;
	json_array_foreach(json_object_get(q, "groups"), i, g)
		if (r->n_groups < cap)
			groups[r->n_groups++] = fg_str_of(json_string_value(g));
	r->groups = groups;
}

TEST(kubernetes_matching_table)
{
	json_t *cases = load("match_cases.json"), *c;
	CHECK(json_array_size(cases) > 0);
	size_t i, bad = 0;
	json_array_foreach(cases, i, c) {
		/* The schema under test, with a level of its own (a mandatory
		 * schema keeps its level, which compile adds). */
		json_t *fs = json_deep_copy(json_object_get(c, "flowSchema"));
		const char *name = json_string_value(json_object_get(json_object_get(fs, "metadata"), "name"));
		json_t *spec = json_object_get(fs, "spec");
		if (!fg_fc_is_mandatory(name))
			json_object_set_new(spec, "priorityLevelConfiguration", json_pack("{s:s}", "name", "level-under-test"));
		json_t *doc = json_pack("{s:s, s:[O, {s:s, s:s, s:{s:s}, s:{s:s, s:{s:{s:s}}}}]}", "kind", "List", "items", fs,
					"apiVersion", FG_FC_API_VERSION, "kind", "PriorityLevelConfiguration", "metadata",
					"name", "level-under-test", "spec", "type", "Limited", "limited", "limitResponse",
					"type", "Reject");
		char *text = json_dumps(doc, JSON_COMPACT);
		struct fg_fc_set *s = fg_fc_set_new();
		struct fg_errors e = { .len = 0 };
		struct fg_fc_config *cfg = NULL;
		if (fg_fc_set_apply(s, (const uint8_t *)text, strlen(text), NULL, &e) >= 0)
			cfg = fg_fc_compile(s, 600, &e);
		bool ok = cfg != NULL;
		if (cfg) {
			struct fg_str groups[64];
			struct fg_fc_request r;
			request_of(json_object_get(c, "request"), &r, groups, 64);
			uint32_t k = 0;
			while (k < cfg->n_schemas && strcmp(cfg->schema_names[k], name))
				k++;
			ok = k < cfg->n_schemas &&
			     fg_fc_schema_matches(cfg, k, &r) == json_is_true(json_object_get(c, "matches"));
		}
		if (!ok) {
			fprintf(stderr, "  %s: %s\n%s", json_string_value(json_object_get(c, "name")),
				cfg ? "wrong outcome" : "schema refused", e.text);
			bad++;
		}
		fg_fc_config_free(cfg);
		fg_fc_set_free(s);
		free(text);
		json_decref(doc);
		json_decref(fs);
	}
	printf("     %zu matching cases, %zu disagree\n", json_array_size(cases), bad);
	CHECK_EQ(bad, 0);
	json_decref(cases);
}

/* A dump must validate with no warning even when strict, leave nothing out,
 * and give exactly the embedded bootstrap objects. */
static void check_dump(const char *file)
{
	size_t len;
	char *text = read_text(file, &len);
	CHECK(text != NULL);
	if (!text)
		return;
	struct fg_fc_set *s = fg_fc_set_new(), *boot = fg_fc_set_bootstrap();
	struct fg_errors e = { .len = 0 }, w = { .len = 0 };
	struct fg_fc_apply_opts strict = { .strict = true, .warnings = &w };
	int n = fg_fc_set_apply_opts(s, (const uint8_t *)text, len, NULL, &strict, &e);
	if (n < 0)
		fprintf(stderr, "  %s refused:\n%s", file, e.text);
	CHECK_EQ(n, (long long)fg_fc_set_size(boot));
	CHECK_EQ(w.count, 0);
	fg_fc_set_warn_dangling(s, &w);
	CHECK_EQ(w.count, 0);
	for (int k = 0; k < 2; k++) {
		json_t *a = fg_fc_set_get(s, (enum fg_fc_kind)k, NULL), *b = fg_fc_set_get(boot, (enum fg_fc_kind)k, NULL);
		CHECK(json_equal(a, b));
		json_decref(a);
		json_decref(b);
	}
	/* Applied onto the running bootstrap set (what `apply -f` does), too. */
	memset(&e, 0, sizeof(e));
	CHECK_EQ(fg_fc_set_apply_opts(boot, (const uint8_t *)text, len, NULL, &strict, &e), n);
	struct fg_fc_config *cfg = fg_fc_compile(s, 600, &e);
	CHECK(cfg != NULL);
	fg_fc_config_free(cfg);
	fg_fc_set_free(s);
	fg_fc_set_free(boot);
	free(text);
}

TEST(kubectl_dump_yaml_applies_unchanged) { check_dump("kubectl-dump.yaml"); }
TEST(kubectl_dump_json_applies_unchanged) { check_dump("kubectl-dump.json"); }

TEST_MAIN
