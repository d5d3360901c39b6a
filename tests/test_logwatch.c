/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests: the workers' events into the log (control/logwatch.h), from
 * hand-set counters of two workers on a virtual clock: an ejection and a
 * recovery, a worker that cannot follow a configuration, drops once per
 * reason per interval, the drain; nothing when nothing changed. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <urcu-qsbr.h>

#include "backendpool.h"
#include "log.h"
#include "logwatch.h"
#include "test.h"

#define MS 1000000ull
#define S 1000000000ull

struct rig {
	struct fg_settings settings;
	struct fg_config *config;
	struct fg_worker_stats *stats[2];
	int shutting_down;
	struct fg_control_view view;
	struct fg_logwatch watch;
	uint64_t martians;
};

static uint64_t rig_martians(void *ctx) { return ((struct rig *)ctx)->martians; }

static void rig_init(struct rig *r)
{
	memset(r, 0, sizeof(*r));
	fg_settings_defaults(&r->settings);
	CHECK_EQ(fg_settings_add_backend(&r->settings, "192.0.2.10:7501"), 0);
	struct fg_fc_set *objects = fg_fc_set_bootstrap();
	struct fg_errors e = { .len = 0 };
	r->config = fg_config_build(&r->settings, fg_fc_compile(objects, r->settings.seat_limit, &e), 1);
	fg_fc_set_free(objects);
	for (int i = 0; i < 2; i++) {
		r->stats[i] = calloc(1, sizeof(*r->stats[i]));
		fg_stats_init(r->stats[i]);
	}
	r->view = (struct fg_control_view){ .settings = &r->settings, .config_ptr = &r->config,
					    .worker_stats = r->stats, .n_workers = 2,
					    .shutting_down = &r->shutting_down, .martians = rig_martians,
					    .martians_ctx = r };
}

static void rig_fini(struct rig *r)
{
	fg_config_free(r->config);
	for (int i = 0; i < 2; i++)
		free(r->stats[i]);
}

/* What fg_logwatch_poll wrote (JSON lines) at now. */
static char out[16384];
static const char *poll_at(struct rig *r, uint64_t now)
{
	int p[2];
	CHECK_EQ(pipe(p), 0);
	int saved = dup(2);
	dup2(p[1], 2);
	fg_logwatch_poll(&r->watch, &r->view, now);
	dup2(saved, 2);
	close(saved);
	close(p[1]);
	ssize_t n = read(p[0], out, sizeof(out) - 1);
	close(p[0]);
	out[n > 0 ? n : 0] = 0;
	return out;
}

static unsigned count(const char *text, const char *what)
{
	unsigned n = 0;
	for (const char *p = text; (p = strstr(p, what)); p++)
		n++;
	return n;
}

TEST(worker_events_become_one_line_each)
{
	rcu_register_thread();
	rcu_thread_offline();
	fg_log_configure(FG_LOG_JSON, FG_LOG_DEBUG);
	struct rig r;
	rig_init(&r);
	uint64_t t = 1000 * S;
	r.stats[0]->malformed_by_err[FG_PROTO_EMAGIC] = 3; /* before the start: never told */
	fg_logwatch_init(&r.watch, &r.view, t);
	CHECK_STR(poll_at(&r, t + 300 * MS), "");

	/* Worker 1 ejects the backend; both see it ejected. */
	r.stats[1]->backends[0].ejections = 1;
	r.stats[1]->backends[0].timeouts = 3;
	r.stats[0]->backends[0].state = r.stats[1]->backends[0].state = FG_BACKEND_EJECTED;
	CHECK_STR(poll_at(&r, t + 400 * MS), ""); /* within the period: not looked at yet */
	const char *o = poll_at(&r, t + 600 * MS);
	CHECK(strstr(o, "\"msg\":\"backend ejected\",\"backend\":\"192.0.2.10:7501\",\"ejections\":1,\"timeouts\":3,"
			"\"workersUp\":0") != NULL);
	CHECK_EQ(count(o, "\n"), 1);
	CHECK_STR(poll_at(&r, t + 900 * MS), ""); /* told once */
	/* One worker probes it back; the other still has it ejected: not yet. */
	r.stats[0]->backends[0].state = FG_BACKEND_UP;
	CHECK_STR(poll_at(&r, t + 1200 * MS), "");
	r.stats[1]->backends[0].state = FG_BACKEND_UP;
	o = poll_at(&r, t + 1500 * MS);
	CHECK(strstr(o, "\"level\":\"info\",\"msg\":\"backend recovered\",\"backend\":\"192.0.2.10:7501\"") != NULL);
	CHECK_EQ(count(o, "\n"), 1);

	/* Worker 0 cannot follow generation 7. */
	r.stats[0]->config_error = ENOSPC;
	r.stats[0]->config_refused_generation = 7;
	r.stats[0]->config_generation = 6;
	o = poll_at(&r, t + 1800 * MS);
	CHECK(strstr(o, "\"level\":\"error\",\"msg\":\"worker cannot follow the configuration\",\"worker\":0,"
			"\"generation\":7,\"error\":\"No space left on device\",\"following\":6") != NULL);
	CHECK_STR(poll_at(&r, t + 2100 * MS), "");

	/* Drops: one line per reason per 10 s, the count over the interval. */
	r.stats[0]->malformed_by_err[FG_PROTO_EMAGIC] = 10;
	r.stats[1]->malformed_by_err[FG_PROTO_EMAGIC] = 5;
	r.stats[1]->responses_unmatched = 2;
	r.martians = 4;
	CHECK_STR(poll_at(&r, t + 5 * S), "");
	o = poll_at(&r, t + 10 * S);
	CHECK_EQ(count(o, "\"msg\":\"datagrams dropped\""), 3);
	CHECK(strstr(o, "\"count\":12,") != NULL); /* 3 + 7 + 5 - 3 */
	CHECK(strstr(o, "\"reason\":\"martian source") != NULL && strstr(o, "\"count\":4,") != NULL);
	r.stats[0]->malformed_by_err[FG_PROTO_EMAGIC] = 1000;
	CHECK_STR(poll_at(&r, t + 15 * S), ""); /* a burst waits for the next interval */
	/* The drain: said once, and the interval's drops at once. */
	r.shutting_down = 1;
	o = poll_at(&r, t + 16 * S);
	CHECK(strstr(o, "\"msg\":\"draining: new requests are answered shutting-down\"") != NULL);
	CHECK(strstr(o, "\"count\":990,") != NULL);
	CHECK_EQ(count(poll_at(&r, t + 30 * S), "draining"), 0);
	rig_fini(&r);
	fg_log_configure(FG_LOG_TEXT, FG_LOG_INFO);
	rcu_thread_online();
	rcu_unregister_thread();
}

TEST_MAIN
