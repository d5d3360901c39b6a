/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the flowcontrol model (common/objects/flowcontrol*.c): matching
 * tables for every rule and wildcard edge case, validation with the error
 * texts, JSON/YAML parity, bootstrap derived limits (docs/apf-facts.md §7.1), and
 * the subject index's classification against a linear walk (random sets). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>

#include "flowcontrol.h"
#include "test.h"
#include "fc_errors.h"

static struct fg_fc_config *compile_text(const char *text, struct fg_errors *e)
{
	struct fg_fc_set *s = fg_fc_set_new();
	memset(e, 0, sizeof(*e));
	struct fg_fc_config *c = NULL;
	if (fg_fc_set_apply(s, (const uint8_t *)text, strlen(text), NULL, e) >= 0)
		c = fg_fc_compile(s, 600, e);
	fg_fc_set_free(s);
	return c;
}

/* A one-schema configuration ("fs", precedence 500) sending to level "pl". */
static struct fg_fc_config *one_schema(const char *rules, const char *dist)
{
	char text[4096];
	snprintf(text, sizeof(text),
		 "{\"kind\":\"List\",\"items\":["
		 "{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"PriorityLevelConfiguration\","
		 "\"metadata\":{\"name\":\"pl\"},\"spec\":{\"type\":\"Limited\",\"limited\":{\"limitResponse\":"
		 "{\"type\":\"Queue\",\"queuing\":{\"queues\":64,\"handSize\":6,\"queueLengthLimit\":50}}}}},"
		 "{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"FlowSchema\",\"metadata\":{\"name\":\"fs\"},"
		 "\"spec\":{\"priorityLevelConfiguration\":{\"name\":\"pl\"},\"matchingPrecedence\":500%s%s%s,\"rules\":%s}}]}",
		 dist ? ",\"distinguisherMethod\":{\"type\":\"" : "", dist ? dist : "", dist ? "\"}" : "", rules);
	struct fg_errors e;
	struct fg_fc_config *c = compile_text(text, &e);
	if (!c)
		fprintf(stderr, "  config refused:\n%s", e.text);
	return c;
}

struct req {
	const char *user, *groups[3], *ns, *verb, *group, *resource, *sub, *path;
	bool claimed; /* from an untrusted source: only user and groups are its own */
};

static const char *match_name(const struct fg_fc_config *c, const struct req *q, struct fg_fc_match *m)
{
	struct fg_str groups[3];
	unsigned n = 0;
	while (n < 3 && q->groups[n]) {
		groups[n] = fg_str_of(q->groups[n]);
		n++;
	}
	struct fg_fc_request r = {
		.user = fg_str_of(q->user ? q->user : ""), .ns = fg_str_of(q->ns ? q->ns : ""),
		.verb = fg_str_of(q->verb ? q->verb : "get"), .api_group = fg_str_of(q->group ? q->group : ""),
		.resource = fg_str_of(q->resource ? q->resource : ""), .subresource = fg_str_of(q->sub ? q->sub : ""),
		.path = q->path ? fg_str_of(q->path) : (struct fg_str){ NULL, 0 }, .groups = groups, .n_groups = n,
		.claimed = q->claimed,
	};
	fg_fc_classify(c, &r, m);
	return c->schema_names[m->schema];
}

static int matches(const struct fg_fc_config *c, struct req q)
{
	struct fg_fc_match m;
	return !strcmp(match_name(c, &q, &m), "fs");
}

#define ALL_RES "\"resourceRules\":[{\"verbs\":[\"*\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"],\"clusterScope\":true,\"namespaces\":[\"*\"]}]"

TEST(subjects)
{
	struct fg_fc_config *c = one_schema("[{\"subjects\":[{\"kind\":\"User\",\"user\":{\"name\":\"alice\"}},"
		"{\"kind\":\"Group\",\"group\":{\"name\":\"devs\"}},"
		"{\"kind\":\"ServiceAccount\",\"serviceAccount\":{\"namespace\":\"ci\",\"name\":\"builder\"}},"
		"{\"kind\":\"ServiceAccount\",\"serviceAccount\":{\"namespace\":\"ops\",\"name\":\"*\"}}]," ALL_RES "}]", NULL);
	CHECK(c);
	CHECK(matches(c, (struct req){ .user = "alice", .ns = "x" }));
	CHECK(!matches(c, (struct req){ .user = "alicex", .ns = "x" }));
	CHECK(matches(c, (struct req){ .user = "bob", .groups = { "a", "devs" }, .ns = "x" }));
	CHECK(!matches(c, (struct req){ .user = "bob", .groups = { "dev" }, .ns = "x" }));
	CHECK(matches(c, (struct req){ .user = "system:serviceaccount:ci:builder", .ns = "x" }));
	CHECK(!matches(c, (struct req){ .user = "system:serviceaccount:ci:builder2", .ns = "x" }));
	CHECK(matches(c, (struct req){ .user = "system:serviceaccount:ops:anything", .ns = "x" }));
	CHECK(!matches(c, (struct req){ .user = "system:serviceaccount:opsx:a", .ns = "x" }));
	CHECK(!matches(c, (struct req){ .user = "system:serviceaccount:ops", .ns = "x" }));
	fg_fc_config_free(c);
	c = one_schema("[{\"subjects\":[{\"kind\":\"User\",\"user\":{\"name\":\"*\"}}]," ALL_RES "}]", NULL);
	CHECK(matches(c, (struct req){ .user = "anyone", .ns = "x" }));
	fg_fc_config_free(c);
	c = one_schema("[{\"subjects\":[{\"kind\":\"Group\",\"group\":{\"name\":\"*\"}}]," ALL_RES "}]", NULL);
	CHECK(matches(c, (struct req){ .user = "u", .ns = "x" })); /* '*' group: everyone */
	fg_fc_config_free(c);
}

TEST(resource_rules)
{
	struct fg_fc_config *c = one_schema("[{\"subjects\":[{\"kind\":\"User\",\"user\":{\"name\":\"*\"}}],"
		"\"resourceRules\":[{\"verbs\":[\"get\",\"list\"],\"apiGroups\":[\"\",\"apps\"],"
		"\"resources\":[\"pods\",\"deployments/scale\"],\"namespaces\":[\"team-a\"]}]}]", NULL);
	CHECK(matches(c, (struct req){ .user = "u", .ns = "team-a", .verb = "get", .resource = "pods" }));
	CHECK(matches(c, (struct req){ .user = "u", .ns = "team-a", .verb = "list", .group = "apps",
				      .resource = "deployments", .sub = "scale" }));
	CHECK(!matches(c, (struct req){ .user = "u", .ns = "team-a", .verb = "list", .group = "apps", .resource = "deployments" }));
	CHECK(!matches(c, (struct req){ .user = "u", .ns = "team-a", .verb = "get", .resource = "pods", .sub = "log" }));
	CHECK(!matches(c, (struct req){ .user = "u", .ns = "team-a", .verb = "watch", .resource = "pods" }));
	CHECK(!matches(c, (struct req){ .user = "u", .ns = "team-a", .verb = "get", .group = "batch", .resource = "pods" }));
	CHECK(!matches(c, (struct req){ .user = "u", .ns = "team-b", .verb = "get", .resource = "pods" }));
	CHECK(!matches(c, (struct req){ .user = "u", .verb = "get", .resource = "pods" })); /* cluster-scoped */
	CHECK(!matches(c, (struct req){ .user = "u", .verb = "get", .path = "/pods" }));    /* non-resource */
	fg_fc_config_free(c);
	/* '*' namespaces do not cover cluster-scoped requests; clusterScope does. */
	c = one_schema("[{\"subjects\":[{\"kind\":\"User\",\"user\":{\"name\":\"*\"}}],"
		"\"resourceRules\":[{\"verbs\":[\"*\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"],\"namespaces\":[\"*\"]}]}]", NULL);
	CHECK(matches(c, (struct req){ .user = "u", .ns = "any", .verb = "delete", .group = "x", .resource = "y", .sub = "z" }));
	CHECK(!matches(c, (struct req){ .user = "u", .verb = "get", .resource = "nodes" }));
	fg_fc_config_free(c);
	c = one_schema("[{\"subjects\":[{\"kind\":\"User\",\"user\":{\"name\":\"*\"}}],"
		"\"resourceRules\":[{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"nodes\"],\"clusterScope\":true}]}]", NULL);
	CHECK(matches(c, (struct req){ .user = "u", .verb = "get", .resource = "nodes" }));
	CHECK(!matches(c, (struct req){ .user = "u", .ns = "a", .verb = "get", .resource = "nodes" }));
	fg_fc_config_free(c);
}

TEST(nonresource_rules)
{
	struct fg_fc_config *c = one_schema("[{\"subjects\":[{\"kind\":\"User\",\"user\":{\"name\":\"*\"}}],"
		"\"nonResourceRules\":[{\"verbs\":[\"get\"],\"nonResourceURLs\":[\"/healthz\",\"/metrics/*\",\"/hea\"]}]}]", NULL);
	CHECK(matches(c, (struct req){ .user = "u", .verb = "get", .path = "/healthz" }));
	CHECK(matches(c, (struct req){ .user = "u", .verb = "get", .path = "/healthz/etcd" })); /* prefix + '/' */
	CHECK(matches(c, (struct req){ .user = "u", .verb = "get", .path = "/metrics/cadvisor" }));
	CHECK(!matches(c, (struct req){ .user = "u", .verb = "get", .path = "/metricsx" }));
	CHECK(!matches(c, (struct req){ .user = "u", .verb = "get", .path = "/healthzz" }));
	CHECK(!matches(c, (struct req){ .user = "u", .verb = "post", .path = "/healthz" }));
	CHECK(!matches(c, (struct req){ .user = "u", .verb = "get", .ns = "x", .resource = "healthz" }));
	fg_fc_config_free(c);
	c = one_schema("[{\"subjects\":[{\"kind\":\"User\",\"user\":{\"name\":\"*\"}}],"
		"\"nonResourceRules\":[{\"verbs\":[\"*\"],\"nonResourceURLs\":[\"*\"]}]}]", NULL);
	CHECK(matches(c, (struct req){ .user = "u", .verb = "put", .path = "/anything/at/all" }));
	fg_fc_config_free(c);
}

TEST(order_precedence_then_name_and_catch_all)
{
	struct fg_errors e;
	const char *text =
		"apiVersion: v1\nkind: List\nitems:\n"
		"- apiVersion: flowcontrol.apiserver.k8s.io/v1\n  kind: FlowSchema\n  metadata: {name: zeta}\n"
		"  spec:\n    priorityLevelConfiguration: {name: global-default}\n    matchingPrecedence: 100\n"
		"    rules:\n    - subjects: [{kind: User, user: {name: alice}}]\n"
		"      resourceRules: [{verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*']}]\n"
		"- apiVersion: flowcontrol.apiserver.k8s.io/v1\n  kind: FlowSchema\n  metadata: {name: alpha}\n"
		"  spec:\n    priorityLevelConfiguration: {name: global-default}\n    matchingPrecedence: 100\n"
		"    rules:\n    - subjects: [{kind: User, user: {name: alice}}]\n"
		"      resourceRules: [{verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*']}]\n"
		"- apiVersion: flowcontrol.apiserver.k8s.io/v1\n  kind: FlowSchema\n  metadata: {name: dangling}\n"
		"  spec:\n    priorityLevelConfiguration: {name: nowhere}\n    matchingPrecedence: 50\n"
		"    rules:\n    - subjects: [{kind: User, user: {name: alice}}]\n"
		"      resourceRules: [{verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*']}]\n"
		"- apiVersion: flowcontrol.apiserver.k8s.io/v1\n  kind: PriorityLevelConfiguration\n"
		"  metadata: {name: global-default}\n  spec: {type: Limited, limited: {nominalConcurrencyShares: 20,"
		" limitResponse: {type: Queue, queuing: {queues: 128, handSize: 6, queueLengthLimit: 50}}}}\n";
	struct fg_fc_config *c = compile_text(text, &e);
	CHECK(c);
	if (!c) {
		fprintf(stderr, "%s", e.text);
		return;
	}
	struct fg_fc_match m;
	CHECK_STR(match_name(c, &(struct req){ .user = "alice", .ns = "x" }, &m), "alpha"); /* tie: name order */
	CHECK_STR(match_name(c, &(struct req){ .user = "bob", .ns = "x", .groups = { "system:authenticated" } }, &m),
		  "catch-all");
	CHECK_STR(match_name(c, &(struct req){ .user = "bob", .ns = "x" }, &m), "catch-all"); /* nothing: catch-all */
	CHECK_STR(match_name(c, &(struct req){ .user = "x", .groups = { "system:masters" }, .path = "/x" }, &m), "exempt");
	CHECK_EQ(fg_fc_level_index(c, "nowhere"), -1);
	fg_fc_config_free(c);
}

TEST(distinguisher_and_flow_hash)
{
	struct fg_fc_config *c = one_schema("[{\"subjects\":[{\"kind\":\"User\",\"user\":{\"name\":\"*\"}}]," ALL_RES "}]",
					    "ByNamespace");
	struct fg_fc_match m, m2;
	match_name(c, &(struct req){ .user = "a", .ns = "n1" }, &m);
	match_name(c, &(struct req){ .user = "b", .ns = "n1" }, &m2);
	CHECK(m.flow_hash == m2.flow_hash && m.flow_hash != 0);
	CHECK(m.distinguisher.len == 2 && !memcmp(m.distinguisher.ptr, "n1", 2));
	match_name(c, &(struct req){ .user = "a", .verb = "get", .resource = "nodes" }, &m2); /* cluster-scoped */
	CHECK(m2.distinguisher.len == 0);
	fg_fc_config_free(c);
	c = one_schema("[{\"subjects\":[{\"kind\":\"User\",\"user\":{\"name\":\"*\"}}]," ALL_RES "}]", "ByUser");
	match_name(c, &(struct req){ .user = "a", .ns = "n1" }, &m);
	match_name(c, &(struct req){ .user = "b", .ns = "n1" }, &m2);
	CHECK(m.flow_hash != m2.flow_hash);
	fg_fc_config_free(c);
	c = one_schema("[{\"subjects\":[{\"kind\":\"User\",\"user\":{\"name\":\"*\"}}]," ALL_RES "}]", NULL);
	match_name(c, &(struct req){ .user = "a", .ns = "n1" }, &m);
	match_name(c, &(struct req){ .user = "b", .ns = "n2" }, &m2);
	CHECK(m.flow_hash == m2.flow_hash); /* no distinguisher: one flow */
	fg_fc_config_free(c);
}

/* The trust rule (security.md §2): what an untrusted request claims never
 * takes it to an Exempt level that its identity alone would not reach. */
TEST(claims_do_not_reach_exempt_with_bootstrap)
{
	struct fg_fc_set *s = fg_fc_set_bootstrap();
	struct fg_errors e = { .len = 0 };
	struct fg_fc_config *c = fg_fc_compile(s, 600, &e);
	struct fg_fc_match m;
	const char *probe_paths[] = { "/healthz", "/readyz", "/livez", "/healthz/etcd", "/livez/ping" };
	for (size_t i = 0; i < sizeof(probe_paths) / sizeof(probe_paths[0]); i++) {
		struct req q = { .user = "system:anonymous", .groups = { "system:unauthenticated" }, .verb = "get",
				 .path = probe_paths[i] };
		CHECK_STR(match_name(c, &q, &m), "probes"); /* a trusted front tier's probe: exempt, as in Kubernetes */
		q.claimed = true;
		CHECK_STR(match_name(c, &q, &m), "global-default");
		CHECK_STR(c->levels[m.level].name, "global-default");
		q.groups[0] = "system:authenticated"; /* a sourceIdentities identity */
		q.user = "batch";
		CHECK_STR(match_name(c, &q, &m), "global-default");
	}
	/* An identity whose schema covers every request reaches exempt whatever it claims. */
	struct req masters = { .user = "ops", .groups = { "system:masters" }, .verb = "get", .path = "/healthz",
			       .claimed = true };
	CHECK_STR(match_name(c, &masters, &m), "exempt");
	masters.path = NULL;
	masters.resource = "pods";
	masters.ns = "default";
	CHECK_STR(match_name(c, &masters, &m), "exempt");
	/* Limited levels still follow claims as the rules say. */
	struct req lease = { .user = "system:kube-scheduler", .verb = "update", .group = "coordination.k8s.io",
			     .resource = "leases", .ns = "kube-system", .claimed = true };
	CHECK_STR(match_name(c, &lease, &m), "system-leader-election");
	fg_fc_config_free(c);
	fg_fc_set_free(s);
}

/* Schemas to an Exempt level that need one claimed attribute each: an
 * untrusted request passes over every one of them. */
TEST(claims_do_not_reach_exempt_by_any_attribute)
{
	const char *fs = "{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"FlowSchema\","
			 "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"priorityLevelConfiguration\":{\"name\":\"exempt\"},"
			 "\"matchingPrecedence\":%d,\"rules\":[{\"subjects\":[{\"kind\":\"Group\",\"group\":{\"name\":\"*\"}}],%s}]}}";
	const struct { const char *name, *rules; struct req q; } cases[] = {
		{ "by-verb", "\"resourceRules\":[{\"verbs\":[\"watch\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"],"
			     "\"clusterScope\":true,\"namespaces\":[\"*\"]}]," "\"nonResourceRules\":[{\"verbs\":[\"*\"],\"nonResourceURLs\":[\"*\"]}]",
		  { .verb = "watch", .resource = "pods", .ns = "x" } },
		{ "by-resource", "\"resourceRules\":[{\"verbs\":[\"*\"],\"apiGroups\":[\"*\"],\"resources\":[\"leases\"],"
				 "\"clusterScope\":true,\"namespaces\":[\"*\"]}]",
		  { .verb = "get", .resource = "leases", .ns = "x" } },
		{ "by-group", "\"resourceRules\":[{\"verbs\":[\"*\"],\"apiGroups\":[\"apps\"],\"resources\":[\"*\"],"
			      "\"clusterScope\":true,\"namespaces\":[\"*\"]}]",
		  { .verb = "get", .group = "apps", .resource = "deployments", .ns = "x" } },
		{ "by-namespace", "\"resourceRules\":[{\"verbs\":[\"*\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"],"
				  "\"namespaces\":[\"kube-system\"]}]",
		  { .verb = "get", .resource = "pods", .ns = "kube-system" } },
		{ "by-cluster-scope", "\"resourceRules\":[{\"verbs\":[\"*\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"],"
				      "\"clusterScope\":true}]",
		  { .verb = "get", .resource = "nodes" } },
		/* Every resource request but no non-resource URL: whether a
		 * request names a resource is a claim too. */
		{ "by-kind", "\"resourceRules\":[{\"verbs\":[\"*\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"],"
			     "\"clusterScope\":true,\"namespaces\":[\"*\"]}]",
		  { .verb = "get", .resource = "pods", .ns = "x" } },
		{ "by-path", "\"nonResourceRules\":[{\"verbs\":[\"*\"],\"nonResourceURLs\":[\"/metrics\"]}]",
		  { .verb = "get", .path = "/metrics" } },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[4096];
		snprintf(text, sizeof(text), fs, cases[i].name, 100, cases[i].rules);
		struct fg_errors e;
		struct fg_fc_config *c = compile_text(text, &e);
		CHECK(c);
		if (!c) {
			fprintf(stderr, "%s", e.text);
			continue;
		}
		struct fg_fc_match m;
		struct req q = cases[i].q;
		q.user = "mallory";
		q.groups[0] = "system:unauthenticated";
		CHECK_STR(match_name(c, &q, &m), cases[i].name);
		q.claimed = true;
		CHECK_STR(match_name(c, &q, &m), "catch-all");
		fg_fc_config_free(c);
	}
	/* Both halves in two rules: the identity alone matches. */
	char text[4096];
	snprintf(text, sizeof(text), fs, "all", 100,
		 "\"resourceRules\":[{\"verbs\":[\"*\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"],\"clusterScope\":true,"
		 "\"namespaces\":[\"*\"]}]}, {\"subjects\":[{\"kind\":\"User\",\"user\":{\"name\":\"mallory\"}}],"
		 "\"nonResourceRules\":[{\"verbs\":[\"*\"],\"nonResourceURLs\":[\"*\"]}]");
	struct fg_errors e;
	struct fg_fc_config *c = compile_text(text, &e);
	CHECK(c);
	if (c) {
		struct fg_fc_match m;
		CHECK_STR(match_name(c, &(struct req){ .user = "mallory", .verb = "get", .path = "/x", .claimed = true }, &m),
			  "all");
		CHECK_STR(match_name(c, &(struct req){ .user = "eve", .verb = "get", .path = "/x", .claimed = true }, &m),
			  "catch-all"); /* eve's identity matches the resource half only */
		fg_fc_config_free(c);
	}
}

TEST(bootstrap_derived_limits_for_600)
{
	struct fg_fc_set *s = fg_fc_set_bootstrap();
	struct fg_errors e = { .len = 0 };
	struct fg_fc_config *c = fg_fc_compile(s, 600, &e);
	const struct { const char *name; unsigned nominal, min, max_seats, max; } want[] = {
		{ "exempt", 0, 0, 10, 600 }, { "catch-all", 13, 13, 10, 613 } /* workest.h caps */, { "system", 74, 50, 12, 674 },
		{ "node-high", 98, 73, 15, 698 }, { "leader-election", 25, 25, 4, 625 },
		{ "workload-high", 98, 49, 15, 698 }, { "workload-low", 245, 24, 37, 845 },
		{ "global-default", 49, 24, 8, 649 },
	};
	CHECK_EQ(c->n_levels, 8);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		int k = fg_fc_level_index(c, want[i].name);
		CHECK(k >= 0);
		if (k < 0)
			continue;
		CHECK_EQ(c->levels[k].nominal, want[i].nominal);
		CHECK_EQ(c->levels[k].min, want[i].min);
		CHECK_EQ(c->levels[k].max_seats, want[i].max_seats);
		CHECK_EQ(c->levels[k].max, want[i].max);
	}
	CHECK_EQ(c->n_schemas, 11);
	struct fg_fc_match m;
	CHECK_STR(match_name(c, &(struct req){ .user = "system:serviceaccount:kube-system:foo", .ns = "kube-system",
					      .verb = "update", .group = "coordination.k8s.io", .resource = "leases" }, &m),
		  "system-leader-election");
	CHECK_STR(match_name(c, &(struct req){ .user = "system:node:n1", .groups = { "system:nodes" }, .verb = "patch",
					      .resource = "nodes", .sub = "status" }, &m), "system-node-high");
	CHECK_STR(match_name(c, &(struct req){ .user = "u", .groups = { "system:unauthenticated" }, .path = "/readyz" }, &m),
		  "probes");
	CHECK_STR(match_name(c, &(struct req){ .user = "system:serviceaccount:ns1:app",
					      .groups = { "system:serviceaccounts", "system:authenticated" }, .ns = "ns1" }, &m),
		  "service-accounts");
	CHECK_STR(match_name(c, &(struct req){ .user = "alice", .groups = { "system:authenticated" }, .ns = "ns1" }, &m),
		  "global-default");
	fg_fc_config_free(c);
	fg_fc_set_free(s);
}

TEST(flowschema_validation_reports_everything)
{
	expect_errors("{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"FlowSchema\",\"metadata\":{\"name\":\"bad\"},"
		"\"spec\":{\"priorityLevelConfiguration\":{\"name\":\"\"},\"matchingPrecedence\":10001,"
		"\"distinguisherMethod\":{\"type\":\"ByGroup\"},\"rules\":["
		"{\"subjects\":[],\"resourceRules\":[{\"verbs\":[\"get\",\"fly\"],\"apiGroups\":[\"*\",\"apps\"],"
		"\"resources\":[],\"namespaces\":[]}]},"
		"{\"subjects\":[{\"kind\":\"Robot\"},{\"kind\":\"User\",\"user\":{\"name\":\"\"}},"
		"{\"kind\":\"ServiceAccount\",\"serviceAccount\":{\"namespace\":\"\",\"name\":\"Bad_Name\"}}]},"
		"{\"subjects\":[{\"kind\":\"Group\",\"group\":{\"name\":\"g\"}}],\"nonResourceRules\":[{\"verbs\":[],"
		"\"nonResourceURLs\":[\"healthz\",\"/a//b\",\"/x*\",\"/ok/*\",\"/s p\"]}]}]}}",
		(const char *const[]){
			"FlowSchema/bad: spec.priorityLevelConfiguration.name: Required value: must reference a priority level",
			"spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000",
			"spec.distinguisherMethod.type: Unsupported value: \"ByGroup\": supported values: \"ByNamespace\", \"ByUser\"",
			"spec.rules[0].subjects: Required value: subjects must contain at least one value",
			"spec.rules[0].resourceRules[0].verbs: Unsupported value: [\"get\",\"fly\"]: supported values: \"create\", ",
			"spec.rules[0].resourceRules[0].apiGroups: Invalid value: [\"*\",\"apps\"]: if '*' is present, must not specify other api groups",
			"spec.rules[0].resourceRules[0].resources: Required value: resource rules must supply at least one resource",
			"spec.rules[0].resourceRules[0].namespaces: Required value: resource rules that are not cluster scoped must supply at least one namespace",
			"spec.rules[1].subjects[0].kind: Unsupported value: \"Robot\": supported values: \"Group\", \"ServiceAccount\", \"User\"",
			"spec.rules[1].subjects[1].user.name: Required value\n",
			"spec.rules[1].subjects[2].serviceAccount.namespace: Required value: must specify namespace for service account",
			"spec.rules[1].subjects[2].serviceAccount.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain",
			"spec.rules[1]: Required value: at least one of resourceRules and nonResourceRules has to be non-empty",
			"spec.rules[2].nonResourceRules[0].verbs: Required value: verbs must contain at least one value",
			"nonResourceURLs[0]: Invalid value: \"healthz\": must start with slash",
			"nonResourceURLs[1]: Invalid value: \"/a//b\": must not contain double slashes",
			"nonResourceURLs[2]: Invalid value: \"/x*\": wildcard can only do suffix glob matching",
			"nonResourceURLs[4]: Invalid value: \"/s p\": must not contain white-space",
			NULL });
	expect_errors("{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"FlowSchema\",\"metadata\":{\"name\":\"x\"},"
		"\"spec\":{\"priorityLevelConfiguration\":{\"name\":\"p\"},\"matchingPrecedence\":1,\"rules\":[]}}",
		(const char *const[]){ "spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1", NULL });
	expect_errors("{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"FlowSchema\",\"metadata\":{\"name\":\"Upper\"}}",
		(const char *const[]){ "FlowSchema/Upper: metadata.name: Invalid value: \"Upper\": a lowercase RFC 1123 subdomain",
				       "spec.priorityLevelConfiguration.name: Required value", NULL });
	expect_errors("{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1beta3\",\"kind\":\"FlowSchema\",\"metadata\":{\"name\":\"a\"},"
		"\"spec\":{\"priorityLevelConfiguration\":{\"name\":\"p\"}}}",
		(const char *const[]){ "apiVersion: must be \"flowcontrol.apiserver.k8s.io/v1\"", NULL });
	expect_errors("{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"FlowSchema\",\"metadata\":{\"name\":\"catch-all\"},"
		"\"spec\":{\"priorityLevelConfiguration\":{\"name\":\"global-default\"},\"matchingPrecedence\":10000,\"rules\":[]}}",
		(const char *const[]){ "FlowSchema/catch-all: spec: Invalid value: {\"priorityLevelConfiguration\":{\"name\":\"global-default\"},\"matchingPrecedence\":10000,\"rules\":[]}: spec of 'catch-all' must equal the fixed value", NULL });
}

TEST(level_validation_reports_everything)
{
	expect_errors("{\"kind\":\"List\",\"items\":["
		"{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"PriorityLevelConfiguration\",\"metadata\":{\"name\":\"a\"},"
		"\"spec\":{\"type\":\"Limited\",\"limited\":{\"nominalConcurrencyShares\":-1,\"lendablePercent\":101,"
		"\"borrowingLimitPercent\":-1,\"limitResponse\":{\"type\":\"Queue\",\"queuing\":{\"queues\":512,\"handSize\":8,"
		"\"queueLengthLimit\":-1}}}}},"
		"{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"PriorityLevelConfiguration\",\"metadata\":{\"name\":\"b\"},"
		"\"spec\":{\"type\":\"Exempt\"}},"
		"{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"PriorityLevelConfiguration\",\"metadata\":{\"name\":\"c\"},"
		"\"spec\":{\"type\":\"Limited\",\"limited\":{\"limitResponse\":{\"type\":\"Queue\",\"queuing\":{\"queues\":4,\"handSize\":5}}}}},"
		"{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"PriorityLevelConfiguration\",\"metadata\":{\"name\":\"d\"},"
		"\"spec\":{\"type\":\"Limited\",\"limited\":{\"limitResponse\":{\"type\":\"Drop\"}}}},"
		"{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"PriorityLevelConfiguration\",\"metadata\":{\"name\":\"catch-all\"},"
		"\"spec\":{\"type\":\"Limited\",\"limited\":{\"nominalConcurrencyShares\":50,\"limitResponse\":{\"type\":\"Reject\"}}}}]}",
		(const char *const[]){
			"item 0 PriorityLevelConfiguration/a: spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
			"spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
			"spec.limited.borrowingLimitPercent: Invalid value: -1: if specified, must be a non-negative integer",
			"spec.limited.limitResponse.queuing.queueLengthLimit: Invalid value: -1: must be positive",
			"spec.limited.limitResponse.queuing.handSize: Invalid value: 8: required entropy bits of deckSize 512 and handSize 8 should not be greater than 60",
			"PriorityLevelConfiguration/b: spec.type: Invalid value: \"Exempt\": must be 'Exempt' if and only if `name` is 'exempt'",
			"PriorityLevelConfiguration/c: spec.limited.limitResponse.queuing.handSize: Invalid value: 5: should not be greater than queues (4)",
			"PriorityLevelConfiguration/d: spec.limited.limitResponse.type: Unsupported value: \"Drop\": supported values: \"Queue\", \"Reject\"",
			"spec of 'catch-all' must equal the fixed value",
			NULL });
	/* The exempt level may change its shares and lendable percent only. */
	struct fg_fc_set *s = fg_fc_set_new();
	struct fg_errors e = { .len = 0 };
	const char *ok = "{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"PriorityLevelConfiguration\","
			 "\"metadata\":{\"name\":\"exempt\"},\"spec\":{\"type\":\"Exempt\",\"exempt\":{\"nominalConcurrencyShares\":7}}}";
	CHECK_EQ(fg_fc_set_apply(s, (const uint8_t *)ok, strlen(ok), NULL, &e), 1);
	fg_fc_set_free(s);
}

TEST(json_and_yaml_are_the_same)
{
	const char *json = "{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"PriorityLevelConfiguration\","
		"\"metadata\":{\"name\":\"p\",\"uid\":\"123\",\"resourceVersion\":\"9\"},\"status\":{\"conditions\":[]},"
		"\"spec\":{\"type\":\"Limited\",\"limited\":{\"nominalConcurrencyShares\":10,\"lendablePercent\":5,"
		"\"limitResponse\":{\"type\":\"Queue\",\"queuing\":{\"queues\":16,\"handSize\":4,\"queueLengthLimit\":20}}}}}";
	const char *yaml = "# as kubectl prints it\napiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\n"
		"metadata:\n  name: p\n  uid: \"123\"\n  resourceVersion: \"9\"\nstatus:\n  conditions: []\nspec:\n  type: Limited\n"
		"  limited:\n    nominalConcurrencyShares: 10\n    lendablePercent: 5\n    limitResponse:\n      type: Queue\n"
		"      queuing:\n        queues: 16\n        handSize: 4\n        queueLengthLimit: 20\n---\n";
	struct fg_fc_set *a = fg_fc_set_new(), *b = fg_fc_set_new();
	struct fg_errors e = { .len = 0 };
	CHECK_EQ(fg_fc_set_apply(a, (const uint8_t *)json, strlen(json), NULL, &e), 1);
	CHECK_EQ(fg_fc_set_apply(b, (const uint8_t *)yaml, strlen(yaml), NULL, &e), 1);
	json_t *ja = fg_fc_set_get(a, FG_FC_PRIORITYLEVEL, "p"), *jb = fg_fc_set_get(b, FG_FC_PRIORITYLEVEL, "p");
	CHECK(ja && jb && json_equal(ja, jb));
	json_decref(ja);
	json_decref(jb);
	/* Multi-document YAML with a FairgateSettings object. */
	const char *multi = "apiVersion: fairgate.dev/v1alpha1\nkind: FairgateSettings\nspec:\n  serverConcurrencyLimit: 42\n"
		"---\napiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: f}\n"
		"spec:\n  priorityLevelConfiguration: {name: p}\n  rules: []\n";
	struct fg_settings st;
	fg_settings_defaults(&st);
	CHECK_EQ(fg_fc_set_apply(a, (const uint8_t *)multi, strlen(multi), &st, &e), 2);
	CHECK_EQ(st.seat_limit, 42);
	json_t *f = fg_fc_set_get(a, FG_FC_FLOWSCHEMA, "f");
	CHECK(f && json_integer_value(json_object_get(json_object_get(json_array_get(f, 0), "spec"), "matchingPrecedence")) == 1000);
	json_decref(f);
	/* Malformed inputs. */
	const char *bad[] = { "{\"kind\":", "a: [1, 2\n", "a: &x 1\nb: *x\n", "- - - - -\n", "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&e, 0, sizeof(e));
		int rc = fg_fc_set_apply(b, (const uint8_t *)bad[i], strlen(bad[i]), NULL, &e);
		CHECK(rc == -EINVAL || rc == 0);
	}
	fg_fc_set_free(a);
	fg_fc_set_free(b);
}

/* A List of n Queue-type levels named prefix-0..n-1 (and n_fs schemas). */
static char *many_objects(const char *prefix, unsigned n_pl, unsigned n_fs)
{
	size_t cap = 512 + (size_t)(n_pl + n_fs) * 512, len = 0;
	char *buf = malloc(cap);
	len += (size_t)snprintf(buf + len, cap - len, "{\"kind\":\"List\",\"items\":[");
	for (unsigned i = 0; i < n_pl; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\","
			"\"kind\":\"PriorityLevelConfiguration\",\"metadata\":{\"name\":\"%s-%u\"},\"spec\":{\"type\":"
			"\"Limited\",\"limited\":{\"nominalConcurrencyShares\":1,\"limitResponse\":{\"type\":\"Reject\"}}}}",
			i ? "," : "", prefix, i);
	for (unsigned i = 0; i < n_fs; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\","
			"\"kind\":\"FlowSchema\",\"metadata\":{\"name\":\"%s-fs-%u\"},\"spec\":{\"priorityLevelConfiguration\":"
			"{\"name\":\"%s-0\"},\"matchingPrecedence\":1000,\"rules\":[{\"subjects\":[{\"kind\":\"User\","
			"\"user\":{\"name\":\"u%u\"}}],\"nonResourceRules\":[{\"verbs\":[\"get\"],"
			"\"nonResourceURLs\":[\"/x\"]}]}]}}", n_pl || i ? "," : "", prefix, i, prefix, i);
	snprintf(buf + len, cap - len, "]}");
	return buf;
}

/* More levels than a worker can follow (with room for as many draining) are
 * refused with the reason; fewer are fine. */
TEST(level_count_is_bounded)
{
	struct fg_fc_set *set = fg_fc_set_new();
	struct fg_errors e = { .len = 0 };
	char *text = many_objects("pl", FG_MAX_CONFIG_LEVELS - 2, 0); /* + exempt and catch-all */
	CHECK_EQ(fg_fc_set_apply(set, (const uint8_t *)text, strlen(text), NULL, &e), FG_MAX_CONFIG_LEVELS - 2);
	free(text);
	text = many_objects("more", 1, 0);
	CHECK_EQ(fg_fc_set_apply(set, (const uint8_t *)text, strlen(text), NULL, &e), -EINVAL);
	CHECK(strstr(e.text, "fairgate runs at most 128") != NULL);
	CHECK_EQ(fg_fc_set_size(set), FG_MAX_CONFIG_LEVELS - 2); /* nothing changed */
	free(text);
	fg_fc_set_free(set);
}

/* Re-applying the same objects replaces them: they count once. */
TEST(reapplying_the_same_objects_is_not_refused)
{
	struct fg_fc_set *set = fg_fc_set_new();
	struct fg_errors e = { .len = 0 };
	char *text = many_objects("pl", 100, 2000);
	CHECK_EQ(fg_fc_set_apply(set, (const uint8_t *)text, strlen(text), NULL, &e), 2100);
	CHECK_EQ(fg_fc_set_apply(set, (const uint8_t *)text, strlen(text), NULL, &e), 2100);
	CHECK_EQ(e.count, 0);
	if (e.count)
		fprintf(stderr, "%s", e.text);
	free(text);
	fg_fc_set_free(set);
}

/* A huge borrowingLimitPercent saturates at the server's seats instead of
 * overflowing the derived maximum. */
TEST(huge_borrowing_limit_does_not_overflow)
{
	const char *text = "{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"PriorityLevelConfiguration\","
			   "\"metadata\":{\"name\":\"greedy\"},\"spec\":{\"type\":\"Limited\",\"limited\":{"
			   "\"nominalConcurrencyShares\":1000,\"borrowingLimitPercent\":2147483647,"
			   "\"limitResponse\":{\"type\":\"Reject\"}}}}";
	struct fg_fc_set *set = fg_fc_set_new();
	struct fg_errors e = { .len = 0 };
	CHECK_EQ(fg_fc_set_apply(set, (const uint8_t *)text, strlen(text), NULL, &e), 1);
	struct fg_fc_config *c = fg_fc_compile(set, 1000000, &e);
	int k = fg_fc_level_index(c, "greedy");
	CHECK(k >= 0);
	if (k >= 0) {
		CHECK_EQ(c->levels[k].borrowing, 1000000);
		CHECK_EQ(c->levels[k].max, c->levels[k].nominal + 1000000);
		CHECK(c->levels[k].max > c->levels[k].nominal);
	}
	fg_fc_config_free(c);
	fg_fc_set_free(set);
}

/* --- the subject index against the linear walk -------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static unsigned rnd(unsigned n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (unsigned)(rng_state % n);
}

/* Small vocabularies, so that schemas share keys and requests hit them. */
static const char *const v_users[] = { "u0", "u1", "u2", "system:serviceaccount:ns0:sa0",
				       "system:serviceaccount:ns1:sa1", "system:serviceaccount:ns0:" };
static const char *const v_groups[] = { "g0", "g1", "g2", "g3", "u0", "system:authenticated" };
static const char *const v_ns[] = { "ns0", "ns1", "ns2" };
static const char *const v_sa[] = { "sa0", "sa1", "*" };
static const char *const v_verbs[] = { "get", "list", "*" };
static const char *const v_paths[] = { "/healthz", "/api/*", "*", "/version" };

struct buf {
	char *p;
	size_t len, cap;
};

static void put(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n < b->cap - b->len ? (size_t)n : 0;
}

static void random_subject(struct buf *b)
{
	unsigned k = rnd(10);
	if (k < 3)
		put(b, "{\"kind\":\"User\",\"user\":{\"name\":\"%s\"}}", rnd(12) ? v_users[rnd(6)] : "*");
	else if (k < 7)
		put(b, "{\"kind\":\"Group\",\"group\":{\"name\":\"%s\"}}", rnd(12) ? v_groups[rnd(6)] : "*");
	else
		put(b, "{\"kind\":\"ServiceAccount\",\"serviceAccount\":{\"namespace\":\"%s\",\"name\":\"%s\"}}",
		    v_ns[rnd(3)], v_sa[rnd(3)]);
}

/* Up to 40 schemas of 1-3 rules, each with 1-3 subjects and resource or
 * non-resource rules (or both), mixed precedences (ties: name order). */
static void random_set(struct buf *b, unsigned n)
{
	put(b, "{\"kind\":\"List\",\"items\":[{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\","
	       "\"kind\":\"PriorityLevelConfiguration\",\"metadata\":{\"name\":\"pl\"},\"spec\":{\"type\":\"Limited\","
	       "\"limited\":{\"limitResponse\":{\"type\":\"Reject\"}}}}");
	for (unsigned i = 0; i < n; i++) {
		put(b, ",{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"FlowSchema\",\"metadata\":"
		       "{\"name\":\"s%02u\"},\"spec\":{\"priorityLevelConfiguration\":{\"name\":\"pl\"},"
		       "\"matchingPrecedence\":%u,\"rules\":[", i, 2 + rnd(8));
		for (unsigned r = 0, nr = 1 + rnd(3); r < nr; r++) {
			put(b, "%s{\"subjects\":[", r ? "," : "");
			for (unsigned k = 0, ns = 1 + rnd(3); k < ns; k++) {
				put(b, "%s", k ? "," : "");
				random_subject(b);
			}
			put(b, "]");
			unsigned kinds = 1 + rnd(3); /* 1: resource, 2: non-resource, 3: both */
			if (kinds & 1)
				put(b, ",\"resourceRules\":[{\"verbs\":[\"%s\"],\"apiGroups\":[\"*\"],\"resources\":[\"%s\"],"
				       "\"namespaces\":[\"%s\"]%s}]", v_verbs[rnd(3)], rnd(2) ? "*" : "pods",
				    rnd(2) ? "*" : v_ns[rnd(3)], rnd(2) ? ",\"clusterScope\":true" : "");
			if (kinds & 2)
				put(b, ",\"nonResourceRules\":[{\"verbs\":[\"%s\"],\"nonResourceURLs\":[\"%s\"]}]",
				    v_verbs[rnd(3)], v_paths[rnd(4)]);
			put(b, "}");
		}
		put(b, "]}}");
	}
	put(b, "]}");
}

/* The definition: the first schema in matching order that matches, else
 * catch-all. */
static uint32_t classify_reference(const struct fg_fc_config *c, const struct fg_fc_request *r)
{
	for (uint32_t i = 0; i < c->n_schemas; i++)
		if (fg_fc_schema_matches(c, i, r))
			return i;
	return c->catch_all_schema;
}

static void random_request(struct fg_fc_request *r, struct fg_str *groups)
{
	static const char *const users[] = { "u0", "u1", "u3", "system:serviceaccount:ns0:sa0",
					     "system:serviceaccount:ns0:sa1", "system:serviceaccount:ns1:sa1",
					     "system:serviceaccount:ns2:x", "system:serviceaccount:ns0:",
					     "system:serviceaccount:ns0", "system:serviceaccount:", "g0" };
	static const char *const groups_v[] = { "g0", "g1", "g2", "g3", "g9", "u0", "system:authenticated" };
	static const char *const paths[] = { "/healthz", "/api/v1", "/version", "/x" };
	memset(r, 0, sizeof(*r));
	r->user = fg_str_of(users[rnd(11)]);
	r->n_groups = rnd(5);
	for (unsigned g = 0; g < r->n_groups; g++)
		groups[g] = fg_str_of(groups_v[rnd(7)]); /* repeats too */
	r->groups = groups;
	r->verb = fg_str_of(rnd(2) ? "get" : "list");
	r->ns = fg_str_of(rnd(3) ? v_ns[rnd(3)] : "");
	r->api_group = fg_str_of("");
	r->resource = fg_str_of(rnd(2) ? "pods" : "nodes");
	r->subresource = fg_str_of("");
	r->path = rnd(3) ? (struct fg_str){ NULL, 0 } : fg_str_of(paths[rnd(4)]);
}

TEST(index_classifies_as_the_linear_walk)
{
	struct buf b = { malloc(1 << 20), 0, 1 << 20 };
	unsigned sets = 0, requests = 0, differ = 0, not_catch_all = 0;
	for (unsigned t = 0; t < 2000; t++) {
		b.len = 0;
		random_set(&b, 1 + rnd(40));
		struct fg_errors e;
		struct fg_fc_config *c = compile_text(b.p, &e);
		CHECK(c);
		if (!c) {
			fprintf(stderr, "%s", e.text);
			break;
		}
		sets++;
		for (unsigned q = 0; q < 100; q++) {
			struct fg_str groups[4];
			struct fg_fc_request r;
			struct fg_fc_match m;
			random_request(&r, groups);
			fg_fc_classify(c, &r, &m);
			uint32_t want = classify_reference(c, &r);
			requests++;
			not_catch_all += want != c->catch_all_schema;
			if (m.schema != want && differ++ < 5)
				fprintf(stderr, "  set %u request %u (user %s): index %s, linear %s\n", t, q, r.user.ptr,
					c->schema_names[m.schema], c->schema_names[want]);
		}
		fg_fc_config_free(c);
	}
	CHECK_EQ(differ, 0);
	CHECK_EQ(requests, 200000);
	CHECK(not_catch_all > requests / 2); /* the walk finds real schemas, not only the catch-all */
	fprintf(stderr, "  %u sets, %u requests, %u matched a schema before catch-all, %u differ\n", sets, requests,
		not_catch_all, differ);
	free(b.p);
}

/* As many groups as the protocol carries (each naming a schema, the last
 * one matching), and more than it carries (the linear path). */
TEST(index_with_many_groups)
{
	struct buf b = { malloc(1 << 20), 0, 1 << 20 };
	put(&b, "{\"kind\":\"List\",\"items\":[{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\","
		"\"kind\":\"PriorityLevelConfiguration\",\"metadata\":{\"name\":\"pl\"},\"spec\":{\"type\":"
		"\"Limited\",\"limited\":{\"limitResponse\":{\"type\":\"Reject\"}}}}");
	for (unsigned i = 0; i < 300; i++)
		put(&b, ",{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"FlowSchema\",\"metadata\":"
			"{\"name\":\"s%03u\"},\"spec\":{\"priorityLevelConfiguration\":{\"name\":\"pl\"},"
			"\"matchingPrecedence\":%u,\"rules\":[{\"subjects\":[{\"kind\":\"Group\",\"group\":{\"name\":"
			"\"g%03u\"}}],\"resourceRules\":[{\"verbs\":[\"get\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"],"
			"\"namespaces\":[\"%s\"]}]}]}}", i, 100 + i, i, i == 299 ? "*" : "none");
	put(&b, "]}");
	struct fg_errors e;
	struct fg_fc_config *c = compile_text(b.p, &e);
	CHECK(c);
	if (!c) {
		fprintf(stderr, "%s", e.text);
		free(b.p);
		return;
	}
	static char names[300][8];
	struct fg_str groups[300];
	for (unsigned i = 0; i < 300; i++) {
		snprintf(names[i], sizeof(names[i]), "g%03u", 299 - i);
		groups[i] = fg_str_of(names[i]);
	}
	struct fg_fc_match m;
	struct fg_fc_request r = { .user = fg_str_of("u"), .ns = fg_str_of("n"), .verb = fg_str_of("get"),
				   .api_group = fg_str_of(""), .resource = fg_str_of("pods"),
				   .subresource = fg_str_of(""), .groups = groups, .n_groups = FG_PROTO_MAX_GROUPS };
	fg_fc_classify(c, &r, &m); /* g299 is the first group: the match, last in matching order */
	CHECK_STR(c->schema_names[m.schema], "s299");
	r.groups = groups + 1; /* without g299: nothing matches before catch-all */
	fg_fc_classify(c, &r, &m);
	CHECK_STR(c->schema_names[m.schema], "catch-all");
	r.groups = groups;
	r.n_groups = 300;
	fg_fc_classify(c, &r, &m);
	CHECK_STR(c->schema_names[m.schema], "s299");
	fg_fc_config_free(c);
	free(b.p);
}

TEST_MAIN
