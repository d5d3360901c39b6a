/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the FairSharing object (common/flowcontrol_*.c): decoding
 * and defaults, every validation error's text, bounds against hostile input,
 * dangling warnings, the compiled level fields, flow weights in
 * classification (exact, schema default, none; a colliding flow hash is not
 * confused), and the kind in get, diff, delete -f, equality and copies. */
#include <errno.h>
#include <stdlib.h>

#include "flowcontrol_int.h"
#include "flowcontrol_match.h"
#include "flowhash.h"
#include "test.h"
#include "fc_errors.h"

#define PL(name, queues)                                                                                              \
	"---\napiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\nmetadata: {name: " name  \
	"}\nspec: {type: Limited, limited: {nominalConcurrencyShares: 30, limitResponse: {type: Queue, queuing: "     \
	"{queues: " #queues ", handSize: 1, queueLengthLimit: 50}}}}\n"
#define FS(name, level, prec, dist)                                                                                  \
	"---\napiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: " name "}\nspec:\n"    \
	"  priorityLevelConfiguration: {name: " level "}\n  matchingPrecedence: " #prec "\n" dist                     \
	"  rules: [{subjects: [{kind: Group, group: {name: " name "}}], resourceRules: [{verbs: ['*'], apiGroups: "   \
	"['*'], resources: ['*'], clusterScope: true, namespaces: ['*']}]}]\n"
#define BY_USER "  distinguisherMethod: {type: ByUser}\n"
#define FSH(name, spec) "---\napiVersion: fairgate.io/v1alpha1\nkind: FairSharing\nmetadata: {name: " name "}\nspec: " spec "\n"

static int apply(struct fg_fc_set *s, const char *text, struct fg_errors *e)
{
	memset(e, 0, sizeof(*e));
	return fg_fc_set_apply(s, (const uint8_t *)text, strlen(text), NULL, e);
}

/* The one object of a kind and name, as get gives it (a new reference). */
static json_t *get_one(const struct fg_fc_set *s, enum fg_fc_kind k, const char *name)
{
	json_t *arr = fg_fc_set_get(s, k, name), *o = json_incref(json_array_get(arr, 0));
	json_decref(arr);
	return o;
}

static const char *spec_str(json_t *o, const char *key)
{
	return json_string_value(json_object_get(json_object_get(o, "spec"), key));
}

TEST(kind_names_and_api_version)
{
	static const char *const names[] = { "FairSharing", "fairsharing", "fairsharings", "fsh" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		CHECK_EQ(fg_fc_kind_parse(names[i]), FG_FC_FAIRSHARING);
	CHECK_STR(fg_fc_kind_name(FG_FC_FAIRSHARING), "FairSharing");
	CHECK_STR(fg_fc_kind_api_version(FG_FC_FAIRSHARING), "fairgate.io/v1alpha1");
	CHECK(!fg_fc_is_mandatory_object(FG_FC_FAIRSHARING, "exempt"));
	CHECK(fg_fc_is_mandatory_object(FG_FC_PRIORITYLEVEL, "exempt"));
	struct fg_fc_set *s = fg_fc_set_new();
	struct fg_errors e;
	CHECK_EQ(apply(s, "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FairSharing\nmetadata: {name: a}\n", &e),
		 -EINVAL);
	CHECK(strstr(e.text, "FairSharing/a: apiVersion: must be \"fairgate.io/v1alpha1\", not "
			     "\"flowcontrol.apiserver.k8s.io/v1\""));
	CHECK_EQ(apply(s, "apiVersion: fairgate.io/v1alpha1\nkind: FairSharings\nmetadata: {name: a}\n", &e), -EINVAL);
	CHECK(strstr(e.text, "kind: must be FlowSchema, PriorityLevelConfiguration, FairSharing, FairgateSettings"));
	CHECK_EQ(fg_fc_set_size(s), 0);
	fg_fc_set_free(s);
}

TEST(defaults_are_stored_and_spelling_a_default_changes_nothing)
{
	struct fg_fc_set *a = fg_fc_set_new(), *b = fg_fc_set_new();
	struct fg_errors e;
	CHECK_EQ(apply(a, FSH("workload-low", "{}"), &e), 1);
	json_t *o = get_one(a, FG_FC_FAIRSHARING, "workload-low");
	CHECK_STR(json_string_value(json_object_get(o, "apiVersion")), "fairgate.io/v1alpha1");
	CHECK_STR(spec_str(o, "policy"), "MaxMin");
	CHECK_STR(spec_str(o, "usageHalfLifeTime"), "300s");
	CHECK_STR(spec_str(o, "usageSamplingInterval"), "1s");
	CHECK_STR(spec_str(o, "resetInactivityPeriod"), "3000s");
	CHECK(json_is_array(json_object_get(json_object_get(o, "spec"), "flowWeights")));
	json_decref(o);
	/* The same object with every default spelled out, in JSON, durations in
	 * other units, a weight of 1.0. */
	const char *json = "{\"apiVersion\":\"fairgate.io/v1alpha1\",\"kind\":\"FairSharing\",\"metadata\":{\"name\":"
			   "\"workload-low\",\"uid\":\"x\"},\"spec\":{\"policy\":\"MaxMin\",\"usageHalfLifeTime\":\"5m\","
			   "\"usageSamplingInterval\":\"1000ms\",\"resetInactivityPeriod\":\"50m\",\"flowWeights\":[]}}";
	CHECK_EQ(apply(b, json, &e), 1);
	CHECK(fg_fc_set_equal(a, b));
	/* The reset default follows the half-life; weights are canonical. */
	CHECK_EQ(apply(a, FSH("w", "{usageHalfLifeTime: 1h, flowWeights: [{flowSchema: f, weight: 4.0}, "
				"{flowSchema: f, distinguisher: u, weight: 0.5}, {flowSchema: g, weight: 0.0015}]}"), &e), 1);
	o = get_one(a, FG_FC_FAIRSHARING, "w");
	CHECK_STR(spec_str(o, "resetInactivityPeriod"), "36000s");
	json_t *fw = json_object_get(json_object_get(o, "spec"), "flowWeights");
	CHECK(json_is_integer(json_object_get(json_array_get(fw, 0), "weight")));
	CHECK_EQ(json_integer_value(json_object_get(json_array_get(fw, 0), "weight")), 4);
	CHECK(json_real_value(json_object_get(json_array_get(fw, 1), "weight")) == 0.5);
	CHECK(json_real_value(json_object_get(json_array_get(fw, 2), "weight")) == 0.002);
	CHECK(!json_object_get(json_array_get(fw, 0), "distinguisher"));
	json_decref(o);
	fg_fc_set_free(a);
	fg_fc_set_free(b);
}

TEST(validation_errors_name_object_and_field)
{
	static const struct {
		const char *spec;
		const char *errors[4];
	} cases[] = {
		{ "{policy: Fifo}",
		  { "FairSharing/x: spec.policy: Unsupported value: \"Fifo\": supported values: \"MaxMin\", \"UsageBased\"" } },
		{ "{usageHalfLifeTime: 0s}", { "FairSharing/x: spec.usageHalfLifeTime: Invalid value: \"0s\": must be greater than 0" } },
		{ "{usageHalfLifeTime: -5m}", { "spec.usageHalfLifeTime: Invalid value: \"-5m\": must be greater than 0" } },
		{ "{usageSamplingInterval: \"0\"}", { "spec.usageSamplingInterval: Invalid value: \"0\": must be greater than 0" } },
		{ "{usageSamplingInterval: 999us}", { "spec.usageSamplingInterval: Invalid value: \"999us\": must be at least 1ms" } },
		{ "{resetInactivityPeriod: 0ms}", { "spec.resetInactivityPeriod: Invalid value: \"0ms\": must be greater than 0" } },
		{ "{usageHalfLifeTime: 5 minutes}", { "spec.usageHalfLifeTime: Invalid value: \"5 minutes\": must be a duration" } },
		{ "{usageHalfLifeTime: 8761h}", { "spec.usageHalfLifeTime: Invalid value: \"8761h\": must be at most 8760h" } },
		{ "{usageSamplingInterval: 99999999999h}", { "spec.usageSamplingInterval: Invalid value: \"99999999999h\": must be a duration" } },
		{ "{resetInactivityPeriod: 87601h}", { "spec.resetInactivityPeriod: Invalid value: \"87601h\": must be at most 87600h" } },
		{ "{usageHalfLifeTime: 5}", { "spec.usageHalfLifeTime: Invalid value: 5: must be a string" } },
		{ "{flowWeights: [{flowSchema: a, weight: 1}, {flowSchema: a, distinguisher: u, weight: 0}]}",
		  { "spec.flowWeights[1].weight: Invalid value: 0: must be in (0, 1000]" } },
		{ "{flowWeights: [{flowSchema: a, weight: -1}, {flowSchema: b, weight: 1000.5}, {flowSchema: c, weight: 0.0004}]}",
		  { "spec.flowWeights[0].weight: Invalid value: -1: must be in (0, 1000]",
		    "spec.flowWeights[1].weight: Invalid value: 1000.5: must be in (0, 1000]",
		    "spec.flowWeights[2].weight: Invalid value: 0.0004: must be in (0, 1000] and at least 0.0005 (weights are "
		    "kept in thousandths)" } },
		{ "{flowWeights: [{flowSchema: a, weight: \"4\"}]}",
		  { "spec.flowWeights[0].weight: Invalid value: \"4\": must be a number" } },
		{ "{flowWeights: [{weight: 2}, {flowSchema: \"\", weight: 2}, {flowSchema: Bad_Name, weight: 2}]}",
		  { "spec.flowWeights[0].flowSchema: Required value\n", "spec.flowWeights[1].flowSchema: Required value\n",
		    "spec.flowWeights[2].flowSchema: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain" } },
		{ "{flowWeights: [{flowSchema: a}]}", { "spec.flowWeights[0].weight: Required value" } },
		{ "{flowWeights: [{flowSchema: a, weight: 2}, {flowSchema: a, distinguisher: u, weight: 3}, "
		  "{flowSchema: a, weight: 4}, {flowSchema: a, distinguisher: u, weight: 5}, {flowSchema: a, distinguisher: \"\", weight: 6}]}",
		  { "spec.flowWeights[2]: Duplicate value: {\"flowSchema\":\"a\"}",
		    "spec.flowWeights[3]: Duplicate value: {\"flowSchema\":\"a\",\"distinguisher\":\"u\"}" } },
		{ "{flowWeights: [{flowSchema: a, distinguisher: \"a\\0b\", weight: 2}]}",
		  { "spec.flowWeights[0].distinguisher: Invalid value: \"a\\u0000b\": must not contain a NUL byte" } },
		{ "{flowWeights: {flowSchema: a}}", { "spec.flowWeights: Invalid value: {\"flowSchema\":\"a\"}: must be a list of objects" } },
		{ "{flowWeight: []}", { "strict decoding error: unknown field \"spec.flowWeight\"" } },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[1024];
		snprintf(text, sizeof(text), "apiVersion: fairgate.io/v1alpha1\nkind: FairSharing\nmetadata: {name: x}\n"
			 "spec: %s\n", cases[i].spec);
		if (strstr(cases[i].errors[0], "strict")) { /* unknown fields: errors only when strict */
			struct fg_fc_set *s = fg_fc_set_new();
			struct fg_errors e = { .len = 0 }, w = { .len = 0 };
			struct fg_fc_apply_opts opts = { .strict = true };
			CHECK_EQ(fg_fc_set_apply_opts(s, (const uint8_t *)text, strlen(text), NULL, &opts, &e), -EINVAL);
			CHECK(strstr(e.text, cases[i].errors[0]) != NULL);
			opts = (struct fg_fc_apply_opts){ .warnings = &w };
			memset(&e, 0, sizeof(e));
			CHECK_EQ(fg_fc_set_apply_opts(s, (const uint8_t *)text, strlen(text), NULL, &opts, &e), 1);
			CHECK(strstr(w.text, "FairSharing/x: unknown field \"spec.flowWeight\"") != NULL);
			fg_fc_set_free(s);
			continue;
		}
		const char *frags[5] = { 0 };
		memcpy(frags, cases[i].errors, sizeof(cases[i].errors));
		expect_errors(text, frags);
	}
	/* A bad name and a bad spec: both at once. */
	expect_errors(FSH("Bad", "{policy: X}"),
		      (const char *const[]){ "FairSharing/Bad: metadata.name: Invalid value: \"Bad\"",
					     "FairSharing/Bad: spec.policy: Unsupported value: \"X\"", NULL });
}

/* A list of n entries (schema "a", distinguishers u0..), or n entries in
 * each of `objects` objects. */
static char *many_weights(unsigned objects, unsigned n, unsigned dist_len)
{
	size_t cap = (size_t)objects * (n + 1) * (dist_len + 80) + 256, len = 0;
	char *buf = malloc(cap), *pad = malloc(dist_len + 1);
	memset(pad, 'd', dist_len);
	pad[dist_len] = 0;
	len += (size_t)snprintf(buf + len, cap - len, "{\"kind\":\"List\",\"items\":[");
	for (unsigned o = 0; o < objects; o++) {
		len += (size_t)snprintf(buf + len, cap - len, "%s{\"apiVersion\":\"fairgate.io/v1alpha1\",\"kind\":"
					"\"FairSharing\",\"metadata\":{\"name\":\"l%u\"},\"spec\":{\"flowWeights\":[",
					o ? "," : "", o);
		for (unsigned i = 0; i < n; i++)
			len += (size_t)snprintf(buf + len, cap - len, "%s{\"flowSchema\":\"a\",\"distinguisher\":\"%s%u\","
						"\"weight\":2}", i ? "," : "", pad, i);
		len += (size_t)snprintf(buf + len, cap - len, "]}}");
	}
	snprintf(buf + len, cap - len, "]}");
	free(pad);
	return buf;
}

TEST(hostile_sizes_are_bounded)
{
	struct fg_fc_set *s = fg_fc_set_new();
	struct fg_errors e;
	char *text = many_weights(1, FG_FC_MAX_FLOW_WEIGHTS, 1);
	CHECK_EQ(apply(s, text, &e), 1);
	free(text);
	text = many_weights(1, FG_FC_MAX_FLOW_WEIGHTS + 1, 1);
	CHECK_EQ(apply(s, text, &e), -EINVAL);
	CHECK(strstr(e.text, "FairSharing/l0: spec.flowWeights: Too many: 10001: must have at most 10000 items"));
	CHECK_EQ(e.count, 1);
	free(text);
	/* Across objects: the set's total is bounded too. */
	text = many_weights(FG_FC_MAX_FLOW_WEIGHTS_TOTAL / FG_FC_MAX_FLOW_WEIGHTS + 1, FG_FC_MAX_FLOW_WEIGHTS, 1);
	CHECK_EQ(apply(s, text, &e), -EINVAL);
	CHECK(strstr(e.text, "more than 100000 flowWeights entries in all FairSharing objects (110000)"));
	free(text);
	/* Distinguishers: 511 bytes and less are fine, more are not. */
	text = many_weights(1, 1, FG_FC_MAX_DISTINGUISHER - 1);
	CHECK_EQ(apply(s, text, &e), 1);
	free(text);
	text = many_weights(1, 1, FG_FC_MAX_DISTINGUISHER);
	CHECK_EQ(apply(s, text, &e), -EINVAL);
	CHECK(strstr(e.text, "spec.flowWeights[0].distinguisher: Invalid value: \"ddd"));
	CHECK(strstr(e.text, "must be no more than 511 bytes"));
	free(text);
	CHECK_EQ(fg_fc_set_size(s), 1);
	fg_fc_set_free(s);
}

TEST(dangling_objects_and_entries_without_effect_are_warnings)
{
	struct fg_fc_set *s = fg_fc_set_new();
	struct fg_errors e, w = { .len = 0 };
	CHECK_EQ(apply(s, PL("tenants", 64) PL("other", 64) FS("t", "tenants", 500, BY_USER) FS("o", "other", 600, "")
			  FSH("tenants", "{flowWeights: [{flowSchema: t, weight: 2}, {flowSchema: o, weight: 2}, "
					 "{flowSchema: nosuch, weight: 2}, {flowSchema: exempt, weight: 2}]}")
			  FSH("workload-lo", "{}") FSH("catch-all", "{}"), &e), 7);
	CHECK_EQ(fg_fc_set_warn_dangling(s, &w), 5);
	static const char *const want[] = {
		"FairSharing/tenants: spec.flowWeights[1].flowSchema: FlowSchema \"o\" sends to PriorityLevelConfiguration "
		"\"other\", not \"tenants\": the entry has no effect",
		"FairSharing/tenants: spec.flowWeights[2].flowSchema: FlowSchema \"nosuch\" does not exist: the entry has no "
		"effect",
		"FairSharing/tenants: spec.flowWeights[3].flowSchema: FlowSchema \"exempt\" sends to PriorityLevelConfiguration "
		"\"exempt\", not \"tenants\"",
		"FairSharing/workload-lo: metadata.name: PriorityLevelConfiguration \"workload-lo\" does not exist: the object "
		"is Dangling and has no effect",
		"FairSharing/catch-all: metadata.name: PriorityLevelConfiguration \"catch-all\" does not queue (Exempt or "
		"Reject): its policy and weights have no effect",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(w.text, want[i])) {
			fprintf(stderr, "  missing \"%s\" in:\n%s", want[i], w.text);
			CHECK(0);
		}
	/* get: the Dangling condition, as for a FlowSchema. */
	json_t *o = get_one(s, FG_FC_FAIRSHARING, "workload-lo");
	json_t *cond = json_array_get(json_object_get(json_object_get(o, "status"), "conditions"), 0);
	CHECK_STR(json_string_value(json_object_get(cond, "type")), "Dangling");
	CHECK_STR(json_string_value(json_object_get(cond, "status")), "True");
	CHECK_STR(json_string_value(json_object_get(cond, "reason")), "NotFound");
	json_decref(o);
	o = get_one(s, FG_FC_FAIRSHARING, "tenants");
	cond = json_array_get(json_object_get(json_object_get(o, "status"), "conditions"), 0);
	CHECK_STR(json_string_value(json_object_get(cond, "status")), "False");
	json_decref(o);
	/* get applies back: the status is known and not kept. */
	json_t *all = fg_fc_set_get(s, FG_FC_FAIRSHARING, NULL);
	CHECK_EQ(json_array_size(all), 3);
	CHECK_STR(fg_fc__name(json_array_get(all, 0)), "catch-all"); /* sorted by name */
	json_t *list = json_pack("{s:s, s:s, s:o}", "apiVersion", "v1", "kind", "List", "items", all);
	char *t = json_dumps(list, JSON_COMPACT);
	struct fg_fc_set *c = fg_fc_set_copy(s);
	CHECK_EQ(apply(c, t, &e), 3);
	CHECK(fg_fc_set_equal(c, s));
	free(t);
	json_decref(list);
	fg_fc_set_free(c);
	fg_fc_set_free(s);
}

static struct fg_fc_config *compile(const char *text)
{
	struct fg_fc_set *s = fg_fc_set_new();
	struct fg_errors e;
	struct fg_fc_config *c = NULL;
	if (apply(s, text, &e) >= 0)
		c = fg_fc_compile(s, 600, &e);
	if (!c)
		fprintf(stderr, "  refused:\n%s", e.text);
	fg_fc_set_free(s);
	return c;
}

static const struct fg_fc_level *level(const struct fg_fc_config *c, const char *name)
{
	int k = fg_fc_level_index(c, name);
	return k >= 0 ? &c->levels[k] : NULL;
}

TEST(compile_fills_the_level_fields)
{
	struct fg_fc_config *c = compile(PL("a", 64) PL("b", 64) PL("d", 64) FS("fa", "a", 500, BY_USER)
					 FS("fd", "d", 500, BY_USER)
					 FSH("a", "{policy: UsageBased, usageHalfLifeTime: 10s, usageSamplingInterval: 250ms, "
						  "flowWeights: [{flowSchema: fa, weight: 1}]}")
					 FSH("d", "{resetInactivityPeriod: 1h, flowWeights: [{flowSchema: fd, distinguisher: x, "
						  "weight: 3}]}"));
	CHECK(c != NULL);
	if (!c)
		return;
	const struct fg_fc_level *a = level(c, "a"), *b = level(c, "b"), *d = level(c, "d");
	CHECK_EQ(a->policy, FG_FC_POLICY_USAGE_BASED);
	CHECK_EQ(a->usage_half_life_ns, 10000000000ull);
	CHECK_EQ(a->usage_sampling_ns, 250000000ull);
	CHECK_EQ(a->reset_inactivity_ns, 100000000000ull);
	CHECK(!a->weighted); /* weight 1 is no weight */
	CHECK_EQ(b->policy, FG_FC_POLICY_MAXMIN); /* no object: the defaults */
	CHECK_EQ(b->usage_half_life_ns, FG_FC_DEFAULT_USAGE_HALF_LIFE_NS);
	CHECK_EQ(b->usage_sampling_ns, FG_FC_DEFAULT_USAGE_SAMPLING_NS);
	CHECK_EQ(b->reset_inactivity_ns, 10 * FG_FC_DEFAULT_USAGE_HALF_LIFE_NS);
	CHECK(!b->weighted);
	CHECK_EQ(d->policy, FG_FC_POLICY_MAXMIN);
	CHECK_EQ(d->reset_inactivity_ns, 3600000000000ull);
	CHECK(d->weighted);
	CHECK(!level(c, "exempt")->weighted && !level(c, "catch-all")->weighted);
	fg_fc_config_free(c);
}

static uint32_t weight_of(const struct fg_fc_config *c, const char *group, const char *user, struct fg_fc_match *m)
{
	struct fg_str g = fg_str_of(group);
	struct fg_fc_request r = { .user = fg_str_of(user), .ns = fg_str_of("ns"), .verb = fg_str_of("get"),
				   .api_group = fg_str_of(""), .resource = fg_str_of("pods"), .subresource = fg_str_of(""),
				   .groups = &g, .n_groups = 1 };
	fg_fc_classify(c, &r, m);
	return m->weight;
}

TEST(classify_gives_each_flow_its_weight)
{
	/* t: weighted per user and by default; u: only a default; plain: none;
	 * one: a level with one queue (no flow hash); rej: a Reject level. */
	struct fg_fc_config *c = compile(
		PL("tenants", 64) PL("one", 1)
		"---\napiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\nmetadata: {name: rej}\n"
		"spec: {type: Limited, limited: {limitResponse: {type: Reject}}}\n"
		FS("t", "tenants", 500, BY_USER) FS("u", "tenants", 501, BY_USER) FS("plain", "tenants", 502, BY_USER)
		FS("single", "one", 503, BY_USER) FS("r", "rej", 504, BY_USER)
		FSH("tenants", "{flowWeights: [{flowSchema: t, distinguisher: alice, weight: 4}, {flowSchema: t, weight: 2}, "
			       "{flowSchema: t, distinguisher: carol, weight: 0.25}, {flowSchema: u, weight: 0.5}, "
			       "{flowSchema: single, distinguisher: alice, weight: 7}]}")
		FSH("one", "{flowWeights: [{flowSchema: single, distinguisher: alice, weight: 3}]}")
		FSH("rej", "{flowWeights: [{flowSchema: r, weight: 9}]}"));
	CHECK(c != NULL);
	if (!c)
		return;
	struct fg_fc_match m;
	CHECK_EQ(weight_of(c, "t", "alice", &m), 4000); /* exact */
	CHECK_STR(c->schema_names[m.schema], "t");
	CHECK_EQ(weight_of(c, "t", "carol", &m), 250);
	CHECK_EQ(weight_of(c, "t", "bob", &m), 2000); /* the schema's default */
	CHECK_EQ(weight_of(c, "u", "alice", &m), 500);
	uint64_t hash = m.flow_hash;
	CHECK_EQ(weight_of(c, "plain", "alice", &m), FG_FC_WEIGHT_ONE); /* none */
	CHECK(m.flow_hash != 0 && m.flow_hash != hash && m.distinguisher.len == 5);
	CHECK_EQ(m.flow_hash, fg_flow_hash("plain", 5, "alice", 5)); /* unchanged by weights */
	CHECK_EQ(weight_of(c, "single", "alice", &m), 3000); /* one queue: looked up all the same */
	CHECK_EQ(m.flow_hash, 0);
	CHECK_EQ(m.distinguisher.len, 0);
	CHECK_EQ(weight_of(c, "single", "bob", &m), FG_FC_WEIGHT_ONE);
	CHECK_EQ(weight_of(c, "r", "x", &m), 9000);
	CHECK_EQ(weight_of(c, "nobody", "x", &m), FG_FC_WEIGHT_ONE); /* catch-all */
	CHECK(level(c, "tenants")->weighted && level(c, "one")->weighted && level(c, "rej")->weighted);
	/* explain says it as a number. */
	struct fg_str g = fg_str_of("t");
	struct fg_fc_request r = { .user = fg_str_of("carol"), .ns = fg_str_of("ns"), .verb = fg_str_of("get"),
				   .api_group = fg_str_of(""), .resource = fg_str_of("pods"), .subresource = fg_str_of(""),
				   .groups = &g, .n_groups = 1 };
	json_t *x = fg_fc_explain(c, &r);
	CHECK(json_real_value(json_object_get(x, "flowWeight")) == 0.25);
	json_decref(x);
	r.user = fg_str_of("alice");
	x = fg_fc_explain(c, &r);
	CHECK_EQ(json_integer_value(json_object_get(x, "flowWeight")), 4);
	json_decref(x);
	fg_fc_config_free(c);
}

/* A hostile client picks a name whose flow hash equals a weighted flow's:
 * the table compares the distinguisher's bytes, so it gets the default.
 * xxHash64 collisions are not found on demand, so the hashes are made up. */
TEST(a_colliding_flow_hash_is_not_confused)
{
	struct cweight slots[8];
	memset(slots, 0, sizeof(slots));
	struct cweights w = { .dflt = 1500, .mask = cweights_slots(3) - 1, .slots = slots };
	CHECK_EQ(w.mask + 1, 8);
	cweights_put(&w, 42, (struct cstr){ "alice", 5 }, 4000);
	cweights_put(&w, 42 + 8, (struct cstr){ "bob", 3 }, 3000);  /* same slot, another hash */
	cweights_put(&w, 42, (struct cstr){ "carol", 5 }, 2000);    /* same hash */
	CHECK_EQ(cweights_get(&w, 42, "alice", 5), 4000);
	CHECK_EQ(cweights_get(&w, 50, "bob", 3), 3000);
	CHECK_EQ(cweights_get(&w, 42, "carol", 5), 2000);
	CHECK_EQ(cweights_get(&w, 42, "mallory", 7), 1500); /* the hash of alice, not her weight */
	CHECK_EQ(cweights_get(&w, 42, "alic", 4), 1500);
	CHECK_EQ(cweights_get(&w, 50, "alice", 5), 1500);
	CHECK_EQ(cweights_get(&w, 7, "alice", 5), 1500);
	struct cweights none = { .dflt = 700 };
	CHECK_EQ(cweights_get(&none, 42, "alice", 5), 700);
	CHECK_EQ(cweights_slots(0), 2);
	CHECK_EQ(cweights_slots(10000), 32768);
}

TEST(diff_delete_ids_equality_and_copies_know_the_kind)
{
	struct fg_fc_set *a = fg_fc_set_new(), *b;
	struct fg_errors e;
	CHECK_EQ(apply(a, PL("p", 8) FSH("p", "{flowWeights: [{flowSchema: f, weight: 2}]}"), &e), 2);
	b = fg_fc_set_copy(a);
	struct fg_fc_set *shared = fg_fc_set_share(a);
	CHECK(fg_fc_set_equal(a, b) && fg_fc_set_equal(a, shared));
	CHECK_EQ(apply(b, FSH("p", "{policy: UsageBased, flowWeights: [{flowSchema: f, weight: 2}]}") FSH("q", "{}"), &e), 2);
	CHECK(!fg_fc_set_equal(a, b));
	CHECK(fg_fc_set_equal(a, shared)); /* the share is unchanged by b's apply */
	json_t *d = fg_fc_set_diff(a, b, NULL, "deleted"), *objs = json_object_get(d, "objects");
	CHECK_EQ(json_integer_value(json_object_get(d, "created")), 1);
	CHECK_EQ(json_integer_value(json_object_get(d, "configured")), 1);
	json_t *p = json_array_get(objs, 0);
	CHECK_STR(json_string_value(json_object_get(p, "kind")), "FairSharing");
	CHECK_STR(json_string_value(json_object_get(p, "action")), "configured");
	CHECK_STR(json_string_value(json_array_get(json_object_get(p, "fields"), 0)), "spec.policy: \"MaxMin\" -> \"UsageBased\"");
	json_decref(d);
	CHECK(fg_fc_set_has(b, FG_FC_FAIRSHARING, "q") && !fg_fc_set_has(b, FG_FC_PRIORITYLEVEL, "q"));
	CHECK_EQ(fg_fc_set_delete(b, FG_FC_FAIRSHARING, "q"), 0);
	CHECK_EQ(fg_fc_set_delete(b, FG_FC_FAIRSHARING, "q"), -ENOENT);
	CHECK_EQ(fg_fc_set_delete(b, FG_FC_FAIRSHARING, "p"), 0);
	CHECK(fg_fc_set_has(b, FG_FC_PRIORITYLEVEL, "p")); /* the level stays */
	d = fg_fc_set_diff(a, b, NULL, "pruned");
	CHECK_EQ(json_integer_value(json_object_get(d, "pruned")), 1);
	json_decref(d);
	const char *doc = FSH("p", "{}") PL("p", 8);
	json_t *ids = fg_fc_document_ids((const uint8_t *)doc, strlen(doc), &e);
	CHECK_EQ(json_array_size(ids), 2);
	CHECK_STR(json_string_value(json_object_get(json_array_get(ids, 0), "kind")), "FairSharing");
	json_decref(ids);
	/* A file of FairSharing objects alone stands for the bootstrap schemas
	 * and levels (with its objects). */
	struct fg_fc_set *f = fg_fc_set_new();
	CHECK_EQ(apply(f, FSH("workload-low", "{}"), &e), 1);
	CHECK_EQ(fg_fc_set_or_bootstrap(f), 0);
	CHECK(fg_fc_set_has(f, FG_FC_PRIORITYLEVEL, "workload-low") && fg_fc_set_has(f, FG_FC_FAIRSHARING, "workload-low"));
	size_t n = fg_fc_set_size(f);
	CHECK_EQ(fg_fc_set_or_bootstrap(f), 0);
	CHECK_EQ(fg_fc_set_size(f), n);
	fg_fc_set_free(f);
	fg_fc_set_free(shared);
	fg_fc_set_free(a);
	fg_fc_set_free(b);
}

TEST_MAIN
