/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: one control-socket request line.  Every input gets a
 * JSON object back with an "ok" member. */
#include <jansson.h>
#include <stdlib.h>
#include <urcu-qsbr.h>

#include "control.h"

static struct fg_settings settings;
static struct fg_config *config;
static struct fg_worker_stats stats;
static struct fg_worker_stats *stats_list[1] = { &stats };
static int shutting_down;
static struct fg_fc_set *objects;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	if (!ready) {
		rcu_register_thread();
		rcu_thread_offline(); /* as the control thread runs */
		fg_settings_defaults(&settings);
		objects = fg_fc_set_bootstrap();
		struct fg_errors e = { .len = 0 };
		config = fg_config_build(&settings, fg_fc_compile(objects, settings.seat_limit, &e), 1);
		fg_stats_init(&stats);
		stats.config_generation = UINT64_MAX; /* a worker that follows every configuration at once */
		ready = 1;
	}
	struct fg_control_view v = { .settings = &settings, .config_ptr = &config, .worker_stats = stats_list,
				     .n_workers = 1, .shutting_down = &shutting_down, .objects = objects };
	char *out = fg_control_handle_line(&v, data, size, false);
	json_t *j = out ? json_loads(out, 0, NULL) : NULL;
	if (!j || !json_is_boolean(json_object_get(j, "ok")))
		abort();
	json_decref(j);
	free(out);
	return 0;
}
