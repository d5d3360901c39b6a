/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests: the control commands' answers about what is in force — an
 * apply answers once every worker follows, and names a worker that cannot
 * follow and why. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <urcu-qsbr.h>

#include "backendpool.h"
#include "clock.h"
#include "control.h"
#include "flowcontrol_int.h"
#include "history.h"
#include "test.h"

struct rig {
	struct fg_settings settings;
	struct fg_config *config;
	struct fg_worker_stats *stats[2];
	int shutting_down;
	struct fg_control_view view;
};

static void rig_init(struct rig *r)
{
	memset(r, 0, sizeof(*r));
	fg_settings_defaults(&r->settings);
	struct fg_fc_set *objects = fg_fc_set_bootstrap();
	struct fg_errors e = { .len = 0 };
	r->config = fg_config_build(&r->settings, fg_fc_compile(objects, r->settings.seat_limit, &e), 1);
	for (int i = 0; i < 2; i++) {
		r->stats[i] = calloc(1, sizeof(*r->stats[i]));
		fg_stats_init(r->stats[i]);
	}
	r->view = (struct fg_control_view){ .settings = &r->settings, .config_ptr = &r->config,
					    .worker_stats = r->stats, .n_workers = 2,
					    .shutting_down = &r->shutting_down, .objects = objects };
}

static void rig_fini(struct rig *r)
{
	fg_config_free(r->config);
	fg_fc_set_free(r->view.objects);
	fg_history_free(r->view.history);
	for (int i = 0; i < 2; i++)
		free(r->stats[i]);
}

/* Run one control request (a JSON object, consumed) as an admin with uid 1000. */
static json_t *call(struct rig *r, json_t *req)
{
	char *line = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	char *out = fg_control_handle_line_as(&r->view, (const uint8_t *)line, strlen(line), true, 1000);
	json_t *j = json_loads(out, 0, NULL);
	free(line);
	free(out);
	return j;
}

static json_t *apply_text(struct rig *r, const char *cmd, const char *text)
{
	return call(r, json_pack("{s:s, s:s}", "command", cmd, "data", text));
}

/* Apply a Reject level "extra"; different shares make a different
 * configuration (an unchanged one publishes nothing). */
static json_t *apply(struct rig *r, int shares)
{
	char text[256];
	snprintf(text, sizeof(text), "{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":"
		 "\"PriorityLevelConfiguration\",\"metadata\":{\"name\":\"extra\"},\"spec\":{\"type\":\"Limited\","
		 "\"limited\":{\"nominalConcurrencyShares\":%d,\"limitResponse\":{\"type\":\"Reject\"}}}}", shares);
	return apply_text(r, "apply", text);
}

TEST(apply_names_the_workers_that_cannot_follow)
{
	rcu_register_thread();
	rcu_thread_offline();
	struct rig r;
	rig_init(&r);
	/* Worker 0 follows every generation at once; worker 1 refuses for want
	 * of level slots. */
	r.stats[0]->config_generation = UINT64_MAX;
	r.stats[1]->config_error = ENOSPC;
	r.stats[1]->config_refused_generation = UINT64_MAX;
	json_t *j = apply(&r, 1);
	CHECK(json_is_true(json_object_get(j, "ok")));
	json_t *res = json_object_get(j, "result");
	json_t *refused = json_object_get(res, "workersNotFollowing");
	CHECK_EQ(json_array_size(refused), 1);
	CHECK_EQ(json_integer_value(json_object_get(json_array_get(refused, 0), "worker")), 1);
	const char *why = json_string_value(json_object_get(json_array_get(refused, 0), "reason"));
	CHECK(why && strstr(why, "draining"));
	json_t *warnings = json_object_get(res, "warnings");
	CHECK(json_array_size(warnings) >= 1);
	json_decref(j);

	/* A stalled worker (it neither follows nor says why): the answer comes
	 * after the bounded wait and says so. */
	r.stats[1]->config_error = 0;
	r.stats[1]->config_refused_generation = 0;
	uint64_t t0 = fg_now_ns();
	j = apply(&r, 2);
	uint64_t waited = fg_now_ns() - t0;
	CHECK(waited >= FG_CONTROL_FOLLOW_WAIT_NS && waited < FG_CONTROL_FOLLOW_WAIT_NS + 2000000000ull);
	refused = json_object_get(json_object_get(j, "result"), "workersNotFollowing");
	why = json_string_value(json_object_get(json_array_get(refused, 0), "reason"));
	CHECK(why && strstr(why, "did not follow within the wait"));
	json_decref(j);

	/* Both follow: nothing to report. */
	r.stats[1]->config_generation = UINT64_MAX;
	j = apply(&r, 3);
	CHECK_EQ(json_array_size(json_object_get(json_object_get(j, "result"), "workersNotFollowing")), 0);
	json_decref(j);
	rig_fini(&r);
	rcu_thread_online();
	rcu_unregister_thread();
}

/* Workers that follow at once, and a history that starts at generation 1. */
static void rig_following(struct rig *r)
{
	rig_init(r);
	r->stats[0]->config_generation = r->stats[1]->config_generation = UINT64_MAX;
	r->view.history = fg_history_new();
	fg_history_record(r->view.history, 1, 0, -1, "start-up", r->view.objects, &r->settings, r->settings.config_history);
}

static json_t *result(json_t *j) { return json_object_get(j, "result"); }
static long long geti(json_t *o, const char *k) { return (long long)json_integer_value(json_object_get(o, k)); }

/* The entry of a change list or level list with this name. */
static json_t *named(json_t *arr, const char *name)
{
	size_t i;
	json_t *e;
	json_array_foreach(arr, i, e)
		if (!strcmp(json_string_value(json_object_get(e, "name")), name))
			return e;
	return NULL;
}

TEST(apply_says_what_each_object_and_level_limit_does_and_a_noop_keeps_the_generation)
{
	rcu_register_thread();
	rcu_thread_offline();
	struct rig r;
	rig_following(&r);
	json_t *j = apply(&r, 100), *res = result(j);
	CHECK(json_is_true(json_object_get(j, "ok")));
	CHECK_EQ(geti(res, "generation"), 2);
	json_t *extra = named(json_object_get(json_object_get(res, "changes"), "objects"), "extra");
	CHECK(extra && !strcmp(json_string_value(json_object_get(extra, "action")), "created"));
	CHECK_EQ(geti(json_object_get(res, "changes"), "created"), 1);
	/* A new level takes seats from every other: global-default's limit moves. */
	json_t *gd = named(json_object_get(res, "levels"), "global-default");
	CHECK(gd && json_is_true(json_object_get(gd, "changed")));
	CHECK_EQ(geti(json_object_get(gd, "before"), "nominal"), 49);
	CHECK(geti(json_object_get(gd, "after"), "nominal") < 49);
	json_t *ex = named(json_object_get(res, "levels"), "extra");
	CHECK(ex && json_is_null(json_object_get(ex, "before")) && geti(json_object_get(ex, "after"), "nominal") > 0);
	/* kubectl's merge keeps the bootstrap objects: said once. */
	json_t *w = json_object_get(res, "warnings");
	CHECK(json_array_size(w) >= 1 && strstr(json_string_value(json_array_get(w, 0)), "not in this input"));
	json_decref(j);

	/* The same again: unchanged, and the generation stays. */
	j = apply(&r, 100);
	res = result(j);
	CHECK(json_is_false(json_object_get(res, "changed")));
	CHECK_EQ(geti(res, "generation"), 2);
	extra = named(json_object_get(json_object_get(res, "changes"), "objects"), "extra");
	CHECK(extra && !strcmp(json_string_value(json_object_get(extra, "action")), "unchanged"));
	CHECK_EQ(r.config->generation, 2);
	json_decref(j);

	/* A changed share: configured, the field named; validate is a dry run. */
	char text[256];
	snprintf(text, sizeof(text), "{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":"
		 "\"PriorityLevelConfiguration\",\"metadata\":{\"name\":\"extra\"},\"spec\":{\"type\":\"Limited\","
		 "\"limited\":{\"nominalConcurrencyShares\":7,\"limitResponse\":{\"type\":\"Reject\"}}}}");
	j = apply_text(&r, "validate", text);
	res = result(j);
	extra = named(json_object_get(json_object_get(res, "changes"), "objects"), "extra");
	CHECK(extra && !strcmp(json_string_value(json_object_get(extra, "action")), "configured"));
	const char *field = json_string_value(json_array_get(json_object_get(extra, "fields"), 0));
	CHECK(field && !strcmp(field, "spec.limited.nominalConcurrencyShares: 100 -> 7"));
	CHECK(json_is_true(json_object_get(res, "changed")) && !json_object_get(res, "generation"));
	CHECK_EQ(r.config->generation, 2);
	json_decref(j);
	rig_fini(&r);
	rcu_thread_online();
	rcu_unregister_thread();
}

TEST(prune_makes_the_live_set_the_file_and_get_all_applies_back_unchanged)
{
	rcu_register_thread();
	rcu_thread_offline();
	struct rig r;
	rig_following(&r);
	const char *file = "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\n"
			   "metadata: {name: tenants}\nspec: {type: Limited, limited: {nominalConcurrencyShares: 10, "
			   "limitResponse: {type: Reject}}}\n---\napiVersion: fairgate.dev/v1alpha1\nkind: FairgateSettings\n"
			   "spec: {serverConcurrencyLimit: 100}\n";
	json_t *j = call(&r, json_pack("{s:s, s:s, s:b}", "command", "apply", "data", file, "prune", 1)), *res = result(j);
	CHECK(json_is_true(json_object_get(j, "ok")));
	json_t *ch = json_object_get(res, "changes");
	CHECK_EQ(geti(ch, "created"), 1);
	CHECK_EQ(geti(ch, "pruned"), 15); /* the bootstrap set (19) less the four mandatory objects */
	json_t *wl = named(json_object_get(ch, "objects"), "workload-low");
	CHECK(wl && !strcmp(json_string_value(json_object_get(wl, "action")), "pruned"));
	CHECK(!named(json_object_get(ch, "objects"), "exempt")); /* mandatory: in force before and after */
	CHECK(!strcmp(json_string_value(json_array_get(json_object_get(res, "settings"), 0)),
		      "serverConcurrencyLimit: 600 -> 100"));
	CHECK_EQ(r.settings.seat_limit, 100);
	json_decref(j);

	/* Exported whole, objects and settings; applied back it changes nothing. */
	j = call(&r, json_pack("{s:s, s:s}", "command", "get", "kind", "all"));
	json_t *items = json_object_get(result(j), "items");
	CHECK_EQ(json_array_size(items), 6); /* tenants, exempt x2, catch-all x2, settings */
	json_t *last = json_array_get(items, json_array_size(items) - 1);
	CHECK(!strcmp(json_string_value(json_object_get(last, "kind")), "FairgateSettings"));
	CHECK_EQ(geti(json_object_get(last, "spec"), "serverConcurrencyLimit"), 100);
	char *all = json_dumps(result(j), JSON_COMPACT);
	json_decref(j);
	j = call(&r, json_pack("{s:s, s:s, s:b}", "command", "apply", "data", all, "prune", 1));
	free(all);
	res = result(j);
	CHECK(json_is_true(json_object_get(j, "ok")) && json_is_false(json_object_get(res, "changed")));
	CHECK_EQ(geti(res, "generation"), 2);
	CHECK_EQ(json_array_size(json_object_get(res, "warnings")), 0);
	json_decref(j);
	rig_fini(&r);
	rcu_thread_online();
	rcu_unregister_thread();
}

/* Only kind and name count (kubectl delete -f): "nosuch" has no spec. */
TEST(delete_from_a_file_names_what_was_not_found_and_restores_mandatory_objects)
{
	rcu_register_thread();
	rcu_thread_offline();
	struct rig r;
	rig_following(&r);
	const char *file = "apiVersion: v1\nkind: List\nitems:\n"
			   "- {apiVersion: flowcontrol.apiserver.k8s.io/v1, kind: FlowSchema, metadata: {name: probes}, "
			   "spec: {priorityLevelConfiguration: {name: exempt}}}\n"
			   "- {apiVersion: flowcontrol.apiserver.k8s.io/v1, kind: FlowSchema, metadata: {name: nosuch}}\n"
			   "- {apiVersion: flowcontrol.apiserver.k8s.io/v1, kind: PriorityLevelConfiguration, "
			   "metadata: {name: catch-all}, spec: {type: Limited, limited: {nominalConcurrencyShares: 5, "
			   "limitResponse: {type: Reject}}}}\n";
	json_t *j = call(&r, json_pack("{s:s, s:s}", "command", "delete", "data", file)), *res = result(j);
	CHECK(json_is_true(json_object_get(j, "ok")));
	CHECK_EQ(json_array_size(json_object_get(res, "notFound")), 1);
	CHECK(named(json_object_get(res, "notFound"), "nosuch"));
	CHECK(named(json_object_get(res, "restored"), "catch-all"));
	json_t *p = named(json_object_get(json_object_get(res, "changes"), "objects"), "probes");
	CHECK(p && !strcmp(json_string_value(json_object_get(p, "action")), "deleted"));
	CHECK_EQ(geti(res, "generation"), 2);
	json_decref(j);
	j = call(&r, json_pack("{s:s, s:s, s:s}", "command", "get", "kind", "plc", "name", "catch-all"));
	CHECK(json_is_true(json_object_get(j, "ok")));
	json_decref(j);
	rig_fini(&r);
	rcu_thread_online();
	rcu_unregister_thread();
}

TEST(history_lists_kept_generations_and_rollback_restores_one_as_a_new_generation)
{
	rcu_register_thread();
	rcu_thread_offline();
	struct rig r;
	rig_following(&r);
	r.settings.config_history = 3;
	for (int shares = 1; shares <= 4; shares++)
		json_decref(apply(&r, shares)); /* generations 2..5 */
	json_t *j = call(&r, json_pack("{s:s}", "command", "history")), *items = json_object_get(result(j), "items");
	CHECK_EQ(json_array_size(items), 3); /* configHistory bounds what is kept */
	CHECK_EQ(geti(json_array_get(items, 0), "generation"), 3);
	CHECK_EQ(geti(json_array_get(items, 2), "uid"), 1000);
	const char *sum = json_string_value(json_object_get(json_array_get(items, 2), "summary"));
	CHECK(sum && !strcmp(sum, "apply: 1 configured"));
	json_decref(j);

	/* Back one: generation 4's objects as generation 6. */
	j = call(&r, json_pack("{s:s}", "command", "rollback"));
	json_t *res = result(j);
	CHECK(json_is_true(json_object_get(j, "ok")));
	CHECK_EQ(geti(res, "rolledBackTo"), 4);
	CHECK_EQ(geti(res, "generation"), 6);
	json_decref(j);
	j = call(&r, json_pack("{s:s, s:s, s:s}", "command", "get", "kind", "plc", "name", "extra"));
	json_t *spec = json_object_get(json_array_get(json_object_get(result(j), "items"), 0), "spec");
	CHECK_EQ(geti(json_object_get(spec, "limited"), "nominalConcurrencyShares"), 3);
	json_decref(j);

	/* A generation no longer kept is named; one kept and in force is a no-op. */
	j = call(&r, json_pack("{s:s, s:i}", "command", "rollback", "to", 1));
	CHECK(json_is_false(json_object_get(j, "ok")) &&
	      strstr(json_string_value(json_object_get(j, "error")), "generation 1 is not kept"));
	json_decref(j);
	j = call(&r, json_pack("{s:s, s:i}", "command", "rollback", "to", 6));
	CHECK(json_is_false(json_object_get(result(j), "changed")) && geti(result(j), "generation") == 6);
	json_decref(j);
	/* Rolling back needs an admin. */
	char *out = fg_control_handle_line(&r.view, (const uint8_t *)"{\"command\":\"rollback\"}", 22, false);
	CHECK(strstr(out, "permission denied"));
	free(out);
	rig_fini(&r);
	rcu_thread_online();
	rcu_unregister_thread();
}

/* 100 one-object changes keep one copy of each unchanged object, shared by
 * every kept generation (issue 26: each generation was a full deep copy, a
 * 0.45 MB configuration grew the daemon from 33 to 571 MB). */
TEST(history_generations_share_unchanged_objects)
{
	rcu_register_thread();
	rcu_thread_offline();
	struct rig r;
	rig_following(&r);
	r.settings.config_history = FG_MAX_CONFIG_HISTORY;
	for (int shares = 1; shares <= 100; shares++)
		json_decref(apply(&r, shares)); /* generations 2..101 */
	const struct fg_history_entry *first = fg_history_find(r.view.history, 2), *last = fg_history_find(r.view.history, 101);
	CHECK(first && last);
	if (first && last) {
		json_t *fs_first = fg_fc__table(first->objects, FG_FC_FLOWSCHEMA);
		json_t *fs_last = fg_fc__table(last->objects, FG_FC_FLOWSCHEMA);
		const char *name;
		json_t *o;
		unsigned shared = 0, n = 0;
		json_object_foreach(fs_first, name, o) {
			n++;
			shared += json_object_get(fs_last, name) == o; /* the very same object, not a copy */
		}
		CHECK(n >= 10 && shared == n);
		/* The changed object is each generation's own. */
		CHECK(json_object_get(fg_fc__table(first->objects, FG_FC_PRIORITYLEVEL), "extra") !=
		      json_object_get(fg_fc__table(last->objects, FG_FC_PRIORITYLEVEL), "extra"));
		/* And the live set shares them too. */
		CHECK(json_object_get(fg_fc__table(r.view.objects, FG_FC_FLOWSCHEMA), "catch-all") ==
		      json_object_get(fs_first, "catch-all"));
	}
	rig_fini(&r);
	rcu_thread_online();
	rcu_unregister_thread();
}

static json_t *line(struct rig *r, const char *text, bool admin)
{
	char *out = fg_control_handle_line(&r->view, (const uint8_t *)text, strlen(text), admin);
	json_t *j = json_loads(out, 0, NULL);
	free(out);
	return j;
}

/* The error of a refused command ("" when it was not refused). */
static const char *refused(json_t *j)
{
	const char *e = json_string_value(json_object_get(j, "error"));
	return json_is_false(json_object_get(j, "ok")) && e ? e : "";
}

static bool slot_is(const struct fg_config *c, uint32_t i, const char *addr, uint8_t admin)
{
	struct fg_endpoint ep;
	return i < c->n_backends && !fg_endpoint_parse(addr, &ep) && fg_endpoint_same_addr(&c->backends[i].ep, &ep) &&
	       c->backends[i].admin == admin;
}

/* The backend command: drain, remove, add and an apply of a new list keep
 * every backend in its slot with its administrative state; hostile or
 * wrong input and a non-admin change nothing. */
TEST(backend_command_keeps_slots_and_refuses_bad_input)
{
	rcu_register_thread();
	rcu_thread_offline();
	struct rig r;
	rig_init(&r);
	r.stats[0]->config_generation = r.stats[1]->config_generation = UINT64_MAX;
	CHECK_EQ(fg_settings_add_backend(&r.settings, "127.0.0.1:7501"), 0);
	CHECK_EQ(fg_settings_add_backend(&r.settings, "127.0.0.1:7502"), 0);
	json_t *j = line(&r, "{\"command\":\"backend\",\"action\":\"add\",\"address\":\"127.0.0.1:7503,seats=4\"}", true);
	CHECK_EQ(strcmp(refused(j), ""), 0);
	json_decref(j);
	CHECK_EQ(r.config->n_backends, 3);
	CHECK(slot_is(r.config, 2, "127.0.0.1:7503", FG_BACKEND_ENABLED) && r.config->backends[2].seats == 4);
	j = line(&r, "{\"command\":\"backend\",\"action\":\"drain\",\"address\":\"127.0.0.1:7502\"}", true);
	CHECK_EQ(strcmp(refused(j), ""), 0);
	CHECK_EQ(strcmp(json_string_value(json_object_get(json_object_get(j, "result"), "backend")), "127.0.0.1:7502"), 0);
	json_decref(j);
	CHECK(slot_is(r.config, 1, "127.0.0.1:7502", FG_BACKEND_DRAIN));
	j = line(&r, "{\"command\":\"backend\",\"action\":\"remove\",\"address\":\"127.0.0.1:7501\"}", true);
	json_decref(j);
	CHECK(slot_is(r.config, 0, "127.0.0.1:7501", FG_BACKEND_REMOVED));
	CHECK_EQ(r.settings.n_backends, 2);
	/* A new list by apply, in another order: slots and the drain stay. */
	j = line(&r, "{\"command\":\"apply\",\"data\":\"{\\\"apiVersion\\\":\\\"fairgate.dev/v1alpha1\\\",\\\"kind\\\":"
		     "\\\"FairgateSettings\\\",\\\"spec\\\":{\\\"backends\\\":[\\\"127.0.0.1:7503\\\",\\\"127.0.0.1:7502\\\","
		     "\\\"127.0.0.1:7504\\\"]}}\"}", true);
	CHECK_EQ(strcmp(refused(j), ""), 0);
	json_decref(j);
	CHECK_EQ(r.config->n_backends, 4);
	CHECK(slot_is(r.config, 0, "127.0.0.1:7501", FG_BACKEND_REMOVED));
	CHECK(slot_is(r.config, 1, "127.0.0.1:7502", FG_BACKEND_DRAIN));
	CHECK(slot_is(r.config, 2, "127.0.0.1:7503", FG_BACKEND_ENABLED) && !r.config->backends[2].seats);
	CHECK(slot_is(r.config, 3, "127.0.0.1:7504", FG_BACKEND_ENABLED));
	/* Disabling the last enabled ones: done, with a warning. */
	j = line(&r, "{\"command\":\"backend\",\"action\":\"disable\",\"address\":\"127.0.0.1:7503\"}", true);
	CHECK_EQ(json_array_size(json_object_get(json_object_get(j, "result"), "warnings")), 0);
	json_decref(j);
	j = line(&r, "{\"command\":\"backend\",\"action\":\"disable\",\"address\":\"127.0.0.1:7504\"}", true);
	const char *w = json_string_value(json_array_get(json_object_get(json_object_get(j, "result"), "warnings"), 0));
	CHECK(w && strstr(w, "none is enabled now"));
	json_decref(j);
	CHECK(slot_is(r.config, 3, "127.0.0.1:7504", FG_BACKEND_DISABLED));

	uint64_t gen = r.config->generation;
	static const struct { const char *line, *error; bool admin; } bad[] = {
		{ "{\"command\":\"backend\",\"action\":\"drain\",\"address\":\"127.0.0.1:7502\"}", "permission denied", false },
		{ "{\"command\":\"backend\",\"address\":\"127.0.0.1:7502\"}", "needs \"action\"", true },
		{ "{\"command\":\"backend\",\"action\":\"removed\",\"address\":\"127.0.0.1:7502\"}", "needs \"action\"", true },
		{ "{\"command\":\"backend\",\"action\":\"drain\"}", "needs \"address\"", true },
		{ "{\"command\":\"backend\",\"action\":\"drain\",\"address\":7502}", "needs \"address\"", true },
		{ "{\"command\":\"backend\",\"action\":\"drain\",\"address\":\"127.0.0.1:7509\"}", "no backend 127.0.0.1:7509",
		  true },
		{ "{\"command\":\"backend\",\"action\":\"enable\",\"address\":\"127.0.0.1:7501\"}", "no backend", true },
		{ "{\"command\":\"backend\",\"action\":\"drain\",\"address\":\"127.0.0.1\"}", "bad backend address", true },
		{ "{\"command\":\"backend\",\"action\":\"drain\",\"address\":\"127.0.0.1:7502,seats=3\"}", "bad backend address",
		  true },
		{ "{\"command\":\"backend\",\"action\":\"add\",\"address\":\"127.0.0.1:7502\"}", "already listed", true },
		{ "{\"command\":\"backend\",\"action\":\"add\",\"address\":\"127.0.0.1:7600,seats=0\"}", "bad backend", true },
		{ "{\"command\":\"backend\",\"action\":\"add\",\"address\":\"127.0.0.1:7400\"}", "invalid configuration", true },
		{ "{\"command\":\"backend\",\"action\":\"add\",\"address\":\"1111111111111111111111111111111111111111111111111"
		  "11111111111111111111111111111111111111111111111111111\"}", "at most 95 characters", true },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		j = line(&r, bad[i].line, bad[i].admin);
		CHECK(strstr(refused(j), bad[i].error) != NULL);
		if (!strstr(refused(j), bad[i].error))
			fprintf(stderr, "  case %zu: %s\n", i, refused(j));
		json_decref(j);
	}
	CHECK_EQ(r.config->generation, gen); /* nothing was published */
	CHECK_EQ(r.settings.n_backends, 3);
	rig_fini(&r);
	rcu_thread_online();
	rcu_unregister_thread();
}

/* FairSharing objects go the way of the other kinds: created, configured
 * with the field, got by any of their names, exported and applied back,
 * deleted (never "restored": none is mandatory), pruned. */
TEST(fairsharing_objects_apply_get_delete_and_prune_like_the_others)
{
	rcu_register_thread();
	rcu_thread_offline();
	struct rig r;
	rig_following(&r);
	const char *fsh = "apiVersion: fairgate.io/v1alpha1\nkind: FairSharing\nmetadata: {name: workload-low}\n"
			  "spec: {flowWeights: [{flowSchema: service-accounts, distinguisher: alice, weight: 4}]}\n"
			  "---\napiVersion: fairgate.io/v1alpha1\nkind: FairSharing\nmetadata: {name: exempt}\nspec: {}\n";
	json_t *j = apply_text(&r, "apply", fsh), *res = result(j);
	CHECK(json_is_true(json_object_get(j, "ok")));
	CHECK_EQ(geti(json_object_get(res, "changes"), "created"), 2);
	json_t *wl = named(json_object_get(json_object_get(res, "changes"), "objects"), "workload-low");
	CHECK(wl && !strcmp(json_string_value(json_object_get(wl, "kind")), "FairSharing"));
	/* The exempt level does not queue: said, and applied all the same. */
	json_t *w;
	size_t i;
	bool warned = false;
	json_array_foreach(json_object_get(res, "warnings"), i, w)
		warned |= strstr(json_string_value(w), "FairSharing/exempt: metadata.name: PriorityLevelConfiguration "
						       "\"exempt\" does not queue") != NULL;
	CHECK(warned);
	CHECK_EQ(geti(res, "generation"), 2);
	json_decref(j);
	int k = fg_fc_level_index(r.config->fc, "workload-low");
	CHECK(k >= 0 && r.config->fc->levels[k].weighted);

	/* Configured: the field named. */
	j = apply_text(&r, "apply", "apiVersion: fairgate.io/v1alpha1\nkind: FairSharing\nmetadata: {name: exempt}\n"
				    "spec: {policy: UsageBased}\n");
	json_t *ex = named(json_object_get(json_object_get(result(j), "changes"), "objects"), "exempt");
	CHECK(ex && !strcmp(json_string_value(json_object_get(ex, "action")), "configured"));
	CHECK_STR(json_string_value(json_array_get(json_object_get(ex, "fields"), 0)),
		  "spec.policy: \"MaxMin\" -> \"UsageBased\"");
	json_decref(j);

	/* get by the short name, one and all. */
	j = call(&r, json_pack("{s:s, s:s}", "command", "get", "kind", "fsh"));
	json_t *items = json_object_get(result(j), "items");
	CHECK_EQ(json_array_size(items), 2);
	CHECK_STR(json_string_value(json_object_get(json_object_get(json_array_get(items, 0), "metadata"), "name")), "exempt");
	json_decref(j);
	j = call(&r, json_pack("{s:s, s:s, s:s}", "command", "get", "kind", "fairsharing", "name", "nosuch"));
	CHECK(strstr(refused(j), "FairSharing \"nosuch\" not found"));
	json_decref(j);

	/* get all exports them after the levels and schemas; it applies back. */
	j = call(&r, json_pack("{s:s, s:s}", "command", "get", "kind", "all"));
	items = json_object_get(result(j), "items");
	size_t n = json_array_size(items);
	CHECK(n > 3 && !strcmp(json_string_value(json_object_get(json_array_get(items, n - 2), "kind")), "FairSharing"));
	char *all = json_dumps(result(j), JSON_COMPACT);
	json_decref(j);
	j = call(&r, json_pack("{s:s, s:s, s:b}", "command", "apply", "data", all, "prune", 1));
	free(all);
	CHECK(json_is_true(json_object_get(j, "ok")) && json_is_false(json_object_get(result(j), "changed")));
	json_decref(j);

	/* delete by name: deleted, not restored, though it is named "exempt". */
	j = call(&r, json_pack("{s:s, s:s, s:s}", "command", "delete", "kind", "fsh", "name", "exempt"));
	CHECK(json_is_true(json_object_get(j, "ok")) && json_is_false(json_object_get(result(j), "restored")));
	json_decref(j);
	j = call(&r, json_pack("{s:s, s:s, s:s}", "command", "get", "kind", "fsh", "name", "exempt"));
	CHECK(strstr(refused(j), "not found"));
	json_decref(j);

	/* delete -f names it by kind and name. */
	j = call(&r, json_pack("{s:s, s:s}", "command", "delete", "data", fsh));
	res = result(j);
	CHECK(json_is_true(json_object_get(j, "ok")));
	CHECK(named(json_object_get(res, "notFound"), "exempt") && !named(json_object_get(res, "notFound"), "workload-low"));
	CHECK_EQ(json_array_size(json_object_get(res, "restored")), 0);
	json_decref(j);
	k = fg_fc_level_index(r.config->fc, "workload-low");
	CHECK(k >= 0 && !r.config->fc->levels[k].weighted);

	/* prune: a file of FairSharing objects alone keeps the bootstrap levels
	 * and schemas, and prunes the FairSharing objects it does not name. */
	json_decref(apply_text(&r, "apply", fsh));
	j = call(&r, json_pack("{s:s, s:s, s:b}", "command", "apply", "data",
			       "apiVersion: fairgate.io/v1alpha1\nkind: FairSharing\nmetadata: {name: workload-low}\n"
			       "spec: {flowWeights: [{flowSchema: service-accounts, distinguisher: alice, weight: 4}]}\n",
			       "prune", 1));
	res = result(j);
	CHECK(json_is_true(json_object_get(j, "ok")));
	CHECK_EQ(geti(json_object_get(res, "changes"), "pruned"), 1);
	json_t *pr = named(json_object_get(json_object_get(res, "changes"), "objects"), "exempt");
	CHECK(pr && !strcmp(json_string_value(json_object_get(pr, "action")), "pruned") &&
	      !strcmp(json_string_value(json_object_get(pr, "kind")), "FairSharing"));
	CHECK(fg_fc_level_index(r.config->fc, "workload-low") >= 0);
	json_decref(j);
	rig_fini(&r);
	rcu_thread_online();
	rcu_unregister_thread();
}

TEST_MAIN
