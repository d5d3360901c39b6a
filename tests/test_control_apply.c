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
#include "test.h"

struct rig {
	struct fg_settings settings;
	struct fg_config *config;
	struct fg_worker_stats *stats[2];
	volatile int shutting_down;
	struct fg_control_view view;
};

static void rig_init(struct rig *r)
{
	memset(r, 0, sizeof(*r));
	fg_settings_defaults(&r->settings);
	struct fg_fc_set *objects = fg_fc_set_bootstrap();
	struct fg_errors e = { .len = 0 };
	r->config = fg_settings_compile(&r->settings, fg_fc_compile(objects, r->settings.seat_limit, &e), 1);
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
	for (int i = 0; i < 2; i++)
		free(r->stats[i]);
}

static json_t *apply(struct rig *r)
{
	const char *line = "{\"command\":\"apply\",\"data\":\"{\\\"apiVersion\\\":\\\"flowcontrol.apiserver.k8s.io/v1\\\","
			   "\\\"kind\\\":\\\"PriorityLevelConfiguration\\\",\\\"metadata\\\":{\\\"name\\\":\\\"extra\\\"},"
			   "\\\"spec\\\":{\\\"type\\\":\\\"Limited\\\",\\\"limited\\\":{\\\"limitResponse\\\":{\\\"type\\\":"
			   "\\\"Reject\\\"}}}}\"}";
	char *out = fg_control_handle_line(&r->view, (const uint8_t *)line, strlen(line), true);
	json_t *j = json_loads(out, 0, NULL);
	free(out);
	return j;
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
	json_t *j = apply(&r);
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
	j = apply(&r);
	uint64_t waited = fg_now_ns() - t0;
	CHECK(waited >= FG_CONTROL_FOLLOW_WAIT_NS && waited < FG_CONTROL_FOLLOW_WAIT_NS + 2000000000ull);
	refused = json_object_get(json_object_get(j, "result"), "workersNotFollowing");
	why = json_string_value(json_object_get(json_array_get(refused, 0), "reason"));
	CHECK(why && strstr(why, "did not follow within the wait"));
	json_decref(j);

	/* Both follow: nothing to report. */
	r.stats[1]->config_generation = UINT64_MAX;
	j = apply(&r);
	CHECK_EQ(json_array_size(json_object_get(json_object_get(j, "result"), "workersNotFollowing")), 0);
	json_decref(j);
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

TEST_MAIN
