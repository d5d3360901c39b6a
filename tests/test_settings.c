/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of settings (common/objects/settings.c), durations and endpoints. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "backendpool.h"
#include "duration.h"
#include "config.h"
#include "settings.h"
#include "settings_table.h"
#include "test.h"

static int apply(struct fg_settings *s, const char *json, struct fg_errors *e)
{
	memset(e, 0, sizeof(*e));
	return fg_settings_apply_json(s, (const uint8_t *)json, strlen(json), e);
}

TEST(defaults_are_documented_values)
{
	struct fg_settings s;
	fg_settings_defaults(&s);
	CHECK_EQ(s.io, FG_IO_SOCKET);
	CHECK_EQ(s.seat_limit, 600);
	CHECK_EQ(s.queue_wait_ns, 15000000000LL);
	CHECK_EQ(ntohs(s.listen.port), 7400);
	CHECK_STR(s.control_socket, "/run/fairgate/fairgate.sock");
	struct fg_errors e = { .len = 0 };
	CHECK_EQ(fg_settings_validate(&s, &e), 0);
}

TEST(full_settings_object)
{
	struct fg_settings s;
	fg_settings_defaults(&s);
	struct fg_errors e;
	int rc = apply(&s, "{\"apiVersion\":\"fairgate.dev/v1alpha1\",\"kind\":\"FairgateSettings\",\"spec\":{"
			   "\"io\":\"dpdk\",\"listen\":\"192.0.2.2:9000\",\"controlSocket\":\"/tmp/x.sock\","
			   "\"backends\":[\"192.0.2.1:7501\",\"192.0.2.3:7502@02:00:00:00:00:03\"],"
			   "\"serverConcurrencyLimit\":10,\"maxRequests\":100,"
			   "\"retryAfterMillis\":7,\"queueWaitLimit\":\"1.5s\",\"backendTimeout\":\"250ms\","
			   "\"shutdownGrace\":\"0s\"}}", &e);
	CHECK_EQ(rc, 0);
	CHECK_EQ(e.count, 0);
	CHECK_EQ(s.io, FG_IO_DPDK);
	CHECK_EQ(ntohs(s.listen.port), 9000);
	CHECK_STR(s.control_socket, "/tmp/x.sock");
	CHECK_EQ(s.n_backends, 2);
	CHECK(s.backends[1].static_mac && s.backends[1].ep.mac[5] == 3);
	CHECK(!s.backends[0].static_mac);
	CHECK_EQ(s.seat_limit, 10);
	CHECK_EQ(s.max_requests, 100);
	CHECK_EQ(s.retry_after_ms, 7);
	CHECK_EQ(s.queue_wait_ns, 1500000000LL);
	CHECK_EQ(s.backend_timeout_ns, 250000000LL);
	struct fg_config *c = fg_config_build(&s, NULL, 4);
	CHECK(c && c->generation == 4 && c->n_backends == 2 && c->seat_limit == 10);
	fg_config_free(c);
}

TEST(every_error_reported_and_nothing_changed)
{
	struct fg_settings s, before;
	fg_settings_defaults(&s);
	before = s;
	struct fg_errors e;
	int rc = apply(&s, "{\"apiVersion\":\"v1\",\"kind\":\"Other\",\"spec\":{"
			   "\"io\":\"rdma\",\"listen\":\"nowhere\",\"backends\":[\"1.2.3.4\",7],"
			   "\"serverConcurrencyLimit\":0,\"maxRequests\":\"x\",\"queueWaitLimit\":\"soon\","
			   "\"backendTimeout\":\"1us\",\"bogus\":1}}", &e);
	CHECK_EQ(rc, -EINVAL);
	CHECK_EQ(e.count, 11);
	CHECK(strstr(e.text, "apiVersion: must be \"fairgate.dev/v1alpha1\""));
	CHECK(strstr(e.text, "kind: must be \"FairgateSettings\""));
	CHECK(strstr(e.text, "spec.io: must be \"socket\" or \"dpdk\""));
	CHECK(strstr(e.text, "spec.listen: must be \"IPv4:PORT\""));
	CHECK(strstr(e.text, "spec.backends[0]: invalid backend \"1.2.3.4\""));
	CHECK(strstr(e.text, "spec.backends[1]: must be a string"));
	CHECK(strstr(e.text, "spec.serverConcurrencyLimit: must be in [1, 1000000], got 0"));
	CHECK(strstr(e.text, "spec.maxRequests: must be an integer"));
	CHECK(strstr(e.text, "spec.queueWaitLimit: must be a duration"));
	CHECK(strstr(e.text, "spec.backendTimeout: must be at least 1ms, got 1us"));
	CHECK(strstr(e.text, "spec.bogus: unknown field"));
	CHECK(!memcmp(&s, &before, sizeof(s)));
}

/* A negative duration is told as such, not as a malformed one (issue 30). */
TEST(negative_duration_named)
{
	struct fg_settings s;
	fg_settings_defaults(&s);
	struct fg_errors e;
	CHECK_EQ(apply(&s, "{\"apiVersion\":\"fairgate.dev/v1alpha1\",\"kind\":\"FairgateSettings\","
			   "\"spec\":{\"queueWaitLimit\":\"-2s\"}}", &e),
		 -EINVAL);
	CHECK(strstr(e.text, "spec.queueWaitLimit: must not be negative, got -2s"));
}

TEST(malformed_json)
{
	struct fg_settings s;
	fg_settings_defaults(&s);
	struct fg_errors e;
	CHECK_EQ(apply(&s, "{\"spec\": ", &e), -EINVAL);
	CHECK(strstr(e.text, "malformed JSON"));
	CHECK_EQ(apply(&s, "[1,2]", &e), -EINVAL);
	CHECK(strstr(e.text, "(root): must be a JSON object"));
	CHECK_EQ(apply(&s, "{\"a\":1,\"a\":2}", &e), -EINVAL); /* duplicate keys */
	CHECK_EQ(apply(&s, "", &e), -EINVAL);
}

TEST(cross_field_validation)
{
	struct fg_settings s;
	fg_settings_defaults(&s);
	s.max_requests = 10;
	CHECK_EQ(fg_settings_add_backend(&s, "127.0.0.1:7400"), 0);
	struct fg_errors e = { .len = 0 };
	CHECK_EQ(fg_settings_validate(&s, &e), -EINVAL);
	CHECK_EQ(e.count, 2);
	CHECK(strstr(e.text, "spec.maxRequests: must hold at least the executing requests: serverConcurrencyLimit = 600, got 10"));
	CHECK(strstr(e.text, "spec.backends[0]: must differ from spec.listen"));
}

/* ADDR:PORT[@MAC][,seats=N]: the capacity parses with or without a MAC;
 * anything else after the comma, 0, or beyond the maximum is refused and
 * adds nothing; a capacity below the worker count is a validation error. */
TEST(backend_capacity)
{
	struct fg_settings s;
	fg_settings_defaults(&s);
	CHECK_EQ(fg_settings_add_backend(&s, "192.0.2.1:7501,seats=16"), 0);
	CHECK_EQ(fg_settings_add_backend(&s, "192.0.2.2:7501@02:00:00:00:00:02,seats=1"), 0);
	CHECK_EQ(fg_settings_add_backend(&s, "192.0.2.3:7501"), 0);
	CHECK_EQ(s.n_backends, 3);
	CHECK_EQ(s.backends[0].seats, 16);
	CHECK_EQ(s.backends[1].seats, 1);
	CHECK(s.backends[1].static_mac && s.backends[1].ep.mac[5] == 2);
	CHECK_EQ(s.backends[2].seats, 0);
	static const char *const bad[] = { "192.0.2.4:7501,seats=0", "192.0.2.4:7501,seats=", "192.0.2.4:7501,seats=x",
					   "192.0.2.4:7501,seat=3", "192.0.2.4:7501,seats=1000001", "192.0.2.4:7501,seats=-1",
					   "192.0.2.4:7501,seats=2,", "192.0.2.4:7501,", "192.0.2.4:7501,seats=99999999999999999999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_EQ(fg_settings_add_backend(&s, bad[i]), -EINVAL);
	CHECK_EQ(s.n_backends, 3);
	struct fg_errors e = { .len = 0 };
	CHECK_EQ(apply(&s, "{\"apiVersion\":\"fairgate.dev/v1\",\"kind\":\"FairgateSettings\",\"spec\":{"
			   "\"backends\":[\"192.0.2.9:7501,seats=nope\"]}}", &e), -EINVAL);
	CHECK(strstr(e.text, "spec.backends[0]: invalid backend \"192.0.2.9:7501,seats=nope\""));
	s.io = FG_IO_DPDK;
	s.workers = 2;
	e = (struct fg_errors){ .len = 0 };
	CHECK_EQ(fg_settings_validate(&s, &e), -EINVAL);
	CHECK(strstr(e.text, "spec.backends[1]: seats=1 is fewer than the 2 workers"));
	CHECK_EQ(e.count, 1);
}

TEST(workers_and_allotment_period)
{
	struct fg_settings s;
	fg_settings_defaults(&s);
	CHECK_EQ(s.workers, 1);
	CHECK_EQ(s.allotment_period_ns, 1000000);
	struct fg_errors e;
	CHECK_EQ(apply(&s, "{\"apiVersion\":\"fairgate.dev/v1alpha1\",\"kind\":\"FairgateSettings\",\"spec\":{"
			   "\"io\":\"dpdk\",\"workers\":4,\"allotmentPeriod\":\"250us\"}}", &e), 0);
	CHECK_EQ(s.workers, 4);
	CHECK_EQ(s.allotment_period_ns, 250000);
	e = (struct fg_errors){ .len = 0 };
	CHECK_EQ(fg_settings_validate(&s, &e), 0);

	/* Out of range, wrong types, below the floor: all reported, nothing changed. */
	struct fg_settings before = s;
	CHECK_EQ(apply(&s, "{\"apiVersion\":\"fairgate.dev/v1alpha1\",\"kind\":\"FairgateSettings\",\"spec\":{"
			   "\"workers\":0,\"allotmentPeriod\":\"10us\"}}", &e), -EINVAL);
	CHECK_EQ(e.count, 2);
	CHECK(strstr(e.text, "spec.workers: must be in [1, 64], got 0"));
	CHECK(strstr(e.text, "spec.allotmentPeriod: must be at least 100us, got 10us"));
	CHECK_EQ(apply(&s, "{\"apiVersion\":\"fairgate.dev/v1alpha1\",\"kind\":\"FairgateSettings\",\"spec\":{"
			   "\"workers\":\"two\",\"allotmentPeriod\":5}}", &e), -EINVAL);
	CHECK_EQ(e.count, 2);
	CHECK(strstr(e.text, "spec.workers: must be an integer"));
	CHECK(strstr(e.text, "spec.allotmentPeriod: must be a duration"));
	CHECK_EQ(apply(&s, "{\"apiVersion\":\"fairgate.dev/v1alpha1\",\"kind\":\"FairgateSettings\",\"spec\":{"
			   "\"workers\":65}}", &e), -EINVAL);
	CHECK(strstr(e.text, "spec.workers: must be in [1, 64], got 65"));
	CHECK(!memcmp(&s, &before, sizeof(s)));

	/* Above the ceiling: refused by the table's bound. */
	CHECK_EQ(apply(&s, "{\"apiVersion\":\"fairgate.dev/v1alpha1\",\"kind\":\"FairgateSettings\",\"spec\":{"
			   "\"allotmentPeriod\":\"200ms\"}}", &e), -EINVAL);
	CHECK_EQ(e.count, 1);
	CHECK(strstr(e.text, "spec.allotmentPeriod: must be at most 100ms"));
	CHECK(!memcmp(&s, &before, sizeof(s)));

	/* Several workers in socket mode: threads with a socket each. */
	s.io = FG_IO_SOCKET;
	e = (struct fg_errors){ .len = 0 };
	CHECK_EQ(fg_settings_validate(&s, &e), 0);
	CHECK_EQ(e.count, 0);
	/* DPDK: worker i's backend-side port is listen port + 1 + i. */
	s.io = FG_IO_DPDK;
	uint16_t port = s.listen.port;
	s.listen.port = htons(65533);
	e = (struct fg_errors){ .len = 0 };
	CHECK_EQ(fg_settings_validate(&s, &e), -EINVAL);
	CHECK(strstr(e.text, "spec.listen: port 65533 leaves no room for the 4 workers' backend-side ports"));
	s.listen.port = htons(65531);
	e = (struct fg_errors){ .len = 0 };
	CHECK_EQ(fg_settings_validate(&s, &e), 0);
	s.listen.port = port;
	s.io = FG_IO_SOCKET;
}

/* A backend that is fairgate itself (a wildcard listen reaches loopback on
 * its port) is refused; another port, or another address, is fine. */
TEST(backend_that_is_fairgate_itself)
{
	static const struct {
		const char *listen, *backend;
		bool loops;
	} cases[] = {
		{ "0.0.0.0:7400", "127.0.0.1:7400", true },  { "0.0.0.0:7400", "127.0.0.9:7400", true },
		{ "127.0.0.1:7400", "0.0.0.0:7400", true },  { "127.0.0.1:7400", "127.0.0.1:7400", true },
		{ "0.0.0.0:7400", "127.0.0.1:7401", false }, { "127.0.0.1:7400", "127.0.0.2:7400", false },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fg_settings s;
		struct fg_errors e = { .len = 0 };
		fg_settings_defaults(&s);
		fg_endpoint_parse(cases[i].listen, &s.listen);
		CHECK_EQ(fg_settings_add_backend(&s, cases[i].backend), 0);
		CHECK_EQ(fg_settings_validate(&s, &e), cases[i].loops ? -EINVAL : 0);
		CHECK_EQ(strstr(e.text, "fairgate would send requests to itself") != NULL, cases[i].loops);
	}
}

TEST(backend_specs)
{
	struct fg_settings s;
	fg_settings_defaults(&s);
	CHECK_EQ(fg_settings_add_backend(&s, "10.0.0.1:80@aa:bb:cc:dd:ee:ff"), 0);
	CHECK_EQ(s.backends[0].ep.mac[0], 0xaa);
	CHECK_EQ(fg_settings_add_backend(&s, "10.0.0.1:80@aa:bb"), -EINVAL);
	CHECK_EQ(fg_settings_add_backend(&s, "10.0.0.1:0"), -EINVAL);
	CHECK_EQ(fg_settings_add_backend(&s, "10.0.0.1:65536"), -EINVAL);
	CHECK_EQ(fg_settings_add_backend(&s, "host:80"), -EINVAL);
	CHECK_EQ(fg_settings_add_backend(&s, ":80"), -EINVAL);
	for (unsigned i = 1; i < FG_MAX_BACKENDS; i++)
		CHECK_EQ(fg_settings_add_backend(&s, "10.0.0.2:80"), 0);
	CHECK_EQ(fg_settings_add_backend(&s, "10.0.0.2:80"), -ENOSPC);
}

TEST(durations)
{
	int64_t ns;
	CHECK_EQ(fg_duration_parse("1.5s", 4, &ns), 0); CHECK_EQ(ns, 1500000000LL);
	CHECK_EQ(fg_duration_parse("2m30s", 5, &ns), 0); CHECK_EQ(ns, 150000000000LL);
	CHECK_EQ(fg_duration_parse("-1ns", 4, &ns), 0); CHECK_EQ(ns, -1);
	CHECK_EQ(fg_duration_parse("0", 1, &ns), 0); CHECK_EQ(ns, 0);
	CHECK_EQ(fg_duration_parse("300ms", 5, &ns), 0); CHECK_EQ(ns, 300000000LL);
	CHECK_EQ(fg_duration_parse("7us", 3, &ns), 0); CHECK_EQ(ns, 7000);
	CHECK_EQ(fg_duration_parse("1h", 2, &ns), 0); CHECK_EQ(ns, 3600000000000LL);
	CHECK_EQ(fg_duration_parse("", 0, &ns), -EINVAL);
	CHECK_EQ(fg_duration_parse("5", 1, &ns), -EINVAL);
	CHECK_EQ(fg_duration_parse("s", 1, &ns), -EINVAL);
	CHECK_EQ(fg_duration_parse("1.2.3s", 6, &ns), -EINVAL);
	CHECK_EQ(fg_duration_parse("3 s", 3, &ns), -EINVAL);
	CHECK_EQ(fg_duration_parse("1x", 2, &ns), -EINVAL);
	CHECK_EQ(fg_duration_parse("99999999999h", 12, &ns), -ERANGE);
	char buf[32];
	CHECK_STR(fg_duration_format(1500000000LL, buf, sizeof(buf)), "1.5s");
	CHECK_STR(fg_duration_format(15000000000LL, buf, sizeof(buf)), "15s");
	CHECK_STR(fg_duration_format(250000000LL, buf, sizeof(buf)), "250ms");
	CHECK_STR(fg_duration_format(0, buf, sizeof(buf)), "0s");
	CHECK_STR(fg_duration_format(-1, buf, sizeof(buf)), "-1ns");
}

TEST(endpoints)
{
	struct fg_endpoint ep;
	char buf[32];
	CHECK_EQ(fg_endpoint_parse("127.0.0.1:7400", &ep), 0);
	CHECK_STR(fg_endpoint_format(&ep, buf, sizeof(buf)), "127.0.0.1:7400");
	CHECK_EQ(fg_endpoint_parse("127.0.0.1", &ep), -EINVAL);
	CHECK_EQ(fg_endpoint_parse("127.0.0.1:", &ep), -EINVAL);
	CHECK_EQ(fg_endpoint_parse("127.0.0.1:7x", &ep), -EINVAL);
	CHECK_EQ(fg_endpoint_parse("::1:7400", &ep), -EINVAL);
	uint8_t mac[6];
	CHECK_EQ(fg_mac_parse("02:00:00:00:00:0a", mac), 0);
	CHECK_EQ(mac[5], 10);
	CHECK_EQ(fg_mac_parse("02:00:00:00:00:0a:", mac), -EINVAL);
}

/* httpListen: an address (port 0 allowed: any free port) or off; the rest refused. */
TEST(http_listen)
{
	const struct fg_setting *r = fg_setting_by_name("httpListen");
	struct fg_settings s;
	char why[256], buf[64];
	fg_settings_defaults(&s);
	CHECK(r != NULL && s.http.on);
	if (!r)
		return;
	CHECK_STR(fg_setting_format(r, &s, buf, sizeof(buf)), FG_DEFAULT_HTTP_LISTEN);
	CHECK_EQ(fg_setting_set_text(r, &s, "127.0.0.1:0", why, sizeof(why)), 0);
	CHECK(s.http.on && s.http.ep.port == 0);
	CHECK_EQ(fg_setting_set_text(r, &s, "off", why, sizeof(why)), 0);
	CHECK(!s.http.on);
	CHECK_STR(fg_setting_format(r, &s, buf, sizeof(buf)), "off");
	CHECK_EQ(fg_setting_set_text(r, &s, "OFF", why, sizeof(why)), -EINVAL);
	CHECK_EQ(fg_setting_set_text(r, &s, "127.0.0.1:65536", why, sizeof(why)), -EINVAL);
	CHECK_EQ(fg_setting_set_text(r, &s, "localhost:9400", why, sizeof(why)), -EINVAL);
	CHECK(!s.http.on); /* a refused value changes nothing */
	CHECK_EQ(fg_endpoint_parse("127.0.0.1:0", &s.listen), -EINVAL); /* the UDP listen keeps port >= 1 */
}

/* controlSocketGroup and controlSocketMode: what may be given, and why the rest is refused. */
TEST(control_socket_group_and_mode)
{
	const struct fg_setting *g = fg_setting_by_name("controlSocketGroup"), *m = fg_setting_by_name("controlSocketMode");
	struct fg_settings s;
	char why[256];
	fg_settings_defaults(&s);
	CHECK(g && m && s.control_socket_mode == 0660 && !*s.control_socket_group);
	if (!g || !m)
		return;
	CHECK_EQ(fg_setting_set_text(g, &s, "fairgate-ops", why, sizeof(why)), 0);
	CHECK_STR(s.control_socket_group, "fairgate-ops");
	CHECK_EQ(fg_setting_set_text(g, &s, "1000", why, sizeof(why)), 0);
	CHECK_EQ(fg_setting_set_text(g, &s, "-rf", why, sizeof(why)), -EINVAL);
	CHECK(strstr(why, "group name") != NULL);
	CHECK_EQ(fg_setting_set_text(g, &s, "a b", why, sizeof(why)), -EINVAL);
	CHECK_EQ(fg_setting_set_text(g, &s, "g\n", why, sizeof(why)), -EINVAL);
	CHECK_EQ(fg_setting_set_text(g, &s, "abcdefghijklmnopqrstuvwxyz0123456", why, sizeof(why)), -EINVAL);
	CHECK_STR(s.control_socket_group, "1000"); /* a refused value changes nothing */
	CHECK_EQ(fg_setting_set_text(m, &s, "0600", why, sizeof(why)), 0);
	CHECK_EQ(s.control_socket_mode, 0600);
	CHECK_EQ(fg_setting_set_text(m, &s, "770", why, sizeof(why)), 0);
	CHECK_EQ(s.control_socket_mode, 0770);
	CHECK_EQ(fg_setting_set_text(m, &s, "0666", why, sizeof(why)), -EINVAL);
	CHECK(strstr(why, "0666 gives others access") != NULL);
	CHECK_EQ(fg_setting_set_text(m, &s, "2660", why, sizeof(why)), -EINVAL);
	CHECK(strstr(why, "setgid") != NULL);
	CHECK_EQ(fg_setting_set_text(m, &s, "0o660", why, sizeof(why)), -EINVAL);
	CHECK_EQ(fg_setting_set_text(m, &s, "0680", why, sizeof(why)), -EINVAL);
	CHECK_EQ(fg_setting_set_text(m, &s, "66", why, sizeof(why)), -EINVAL);
	CHECK_EQ(s.control_socket_mode, 0770);
	struct fg_errors e = { .len = 0 };
	json_t *v = json_integer(432);
	fg_setting_set_json(m, &s, v, &e);
	json_decref(v);
	CHECK(e.count == 1 && strstr(e.text, "spec.controlSocketMode: must be an octal mode such as \"0660\"") != NULL);
	e = (struct fg_errors){ .len = 0 };
	v = json_integer(5);
	fg_setting_set_json(g, &s, v, &e);
	json_decref(v);
	CHECK(e.count == 1 && strstr(e.text, "spec.controlSocketGroup: must be a string") != NULL);
	CHECK_STR(s.control_socket_group, "1000");
}

/* --- the settings table ---------------------------------------------------- */

TEST(table_rows_are_well_formed)
{
	struct fg_settings d;
	fg_settings_defaults(&d);
	for (size_t i = 0; i < fg_settings_table_len; i++) {
		const struct fg_setting *r = &fg_settings_table[i];
		CHECK(fg_setting_by_name(r->name) == r);          /* names are unique */
		CHECK(r->doc && *r->doc && r->offset + r->size <= sizeof(struct fg_settings));
		for (size_t k = 0; k < i; k++)
			CHECK(!r->flag || !fg_settings_table[k].flag || strcmp(r->flag, fg_settings_table[k].flag));
		if (r->type == FG_SET_U32) {
			uint32_t v = *(const uint32_t *)((const char *)&d + r->offset);
			CHECK(r->lo <= (int64_t)v && (int64_t)v <= r->hi); /* the default is within bounds */
		} else if (r->type == FG_SET_DURATION) {
			int64_t v = *(const int64_t *)((const char *)&d + r->offset);
			CHECK(r->lo <= v && (!r->hi || v <= r->hi));
		}
	}
}

/* Each scalar row's default, printed and parsed back, through the text
 * (flag) and the JSON paths, gives the same value. */
TEST(table_values_round_trip)
{
	struct fg_settings d, t;
	char text[512], why[256];
	fg_settings_defaults(&d);
	for (size_t i = 0; i < fg_settings_table_len; i++) {
		const struct fg_setting *r = &fg_settings_table[i];
		if (r->type == FG_SET_BACKENDS || r->type == FG_SET_ADMINS || r->type == FG_SET_CIDRS ||
		    r->type == FG_SET_IDENTITIES)
			continue;
		fg_settings_defaults(&t);
		memset((char *)&t + r->offset, 0x5a, r->size);
		fg_setting_format(r, &d, text, sizeof(text));
		CHECK_EQ(fg_setting_set_text(r, &t, text, why, sizeof(why)), 0);
		CHECK(!fg_setting_differs(r, &d, &t));
		struct fg_errors e = { .len = 0 };
		json_t *v = r->type == FG_SET_U32 ? json_integer(*(const uint32_t *)((const char *)&d + r->offset))
			  : r->type == FG_SET_BOOL ? json_boolean(!strcmp(text, "true")) : json_string(text);
		memset((char *)&t + r->offset, 0x5a, r->size);
		fg_setting_set_json(r, &t, v, &e);
		json_decref(v);
		CHECK_EQ(e.count, 0);
		CHECK(!fg_setting_differs(r, &d, &t));
	}
}

/* Just outside each bound: refused with the field's path, nothing changed. */
TEST(table_bounds_are_enforced)
{
	for (size_t i = 0; i < fg_settings_table_len; i++) {
		const struct fg_setting *r = &fg_settings_table[i];
		if (r->type != FG_SET_U32 && r->type != FG_SET_DURATION)
			continue;
		int64_t outside[2] = { r->lo - 1, r->hi + 1 };
		for (int k = 0; k < 2; k++) {
			if (k == 0 && r->lo == 0)
				continue; /* nothing is below 0 in a flag's syntax */
			if (k == 1 && r->type == FG_SET_DURATION && !r->hi)
				continue;
			char json[256], path[96];
			if (r->type == FG_SET_U32)
				snprintf(json, sizeof(json), "{\"apiVersion\":\"fairgate.dev/v1alpha1\",\"kind\":\"FairgateSettings\","
					 "\"spec\":{\"%s\":%lld}}", r->name, (long long)outside[k]);
			else
				snprintf(json, sizeof(json), "{\"apiVersion\":\"fairgate.dev/v1alpha1\",\"kind\":\"FairgateSettings\","
					 "\"spec\":{\"%s\":\"%lldns\"}}", r->name, (long long)outside[k]);
			struct fg_settings s, before;
			struct fg_errors e;
			fg_settings_defaults(&s);
			before = s;
			CHECK_EQ(apply(&s, json, &e), -EINVAL);
			snprintf(path, sizeof(path), "spec.%s: must be", r->name);
			if (!strstr(e.text, path))
				fprintf(stderr, "  %s out of bounds: %s", r->name, e.text);
			CHECK(strstr(e.text, path) != NULL);
			CHECK(!memcmp(&s, &before, sizeof(s)));
		}
	}
}

/* docs/configuration.md carries the table exactly as the binary prints it. */
TEST(docs_table_matches_the_settings_table)
{
	FILE *f = fopen(DOCS_DIR "/configuration.md", "r");
	CHECK(f != NULL);
	if (!f)
		return;
	static char doc[1 << 16], gen[1 << 14];
	size_t n = fread(doc, 1, sizeof(doc) - 1, f);
	fclose(f);
	doc[n] = 0;
	FILE *m = fmemopen(gen, sizeof(gen), "w");
	fg_settings_print_markdown(m);
	fclose(m);
	const char *begin = strstr(doc, "<!-- settings-table: generated by `fairgate --help-settings` -->\n");
	CHECK(begin != NULL);
	if (begin) {
		begin = strchr(begin, '\n') + 1;
		const char *end = strstr(begin, "<!-- end of settings-table -->");
		CHECK(end != NULL && (size_t)(end - begin) == strlen(gen) && !memcmp(begin, gen, strlen(gen)));
		if (!end || (size_t)(end - begin) != strlen(gen) || memcmp(begin, gen, strlen(gen)))
			fprintf(stderr, "  docs/configuration.md's settings table differs from:\n%s", gen);
	}
}

static struct fg_backend_cfg be(const char *addr)
{
	struct fg_backend_cfg b = { 0 };
	CHECK_EQ(fg_endpoint_parse(addr, &b.ep), 0);
	return b;
}

/* Backends keep their slots by address across configurations: a removed one
 * leaves its slot marked removed, a new one takes a never used slot first,
 * then the lowest removed one; a re-added address gets its old slot back. */
TEST(backend_slots_kept_by_address)
{
	static struct fg_config prev, next;
	memset(&prev, 0, sizeof(prev));
	prev.n_backends = 2;
	prev.backends[0] = be("10.0.0.1:1");
	prev.backends[1] = be("10.0.0.2:1");
	memset(&next, 0, sizeof(next));
	next.n_backends = 2; /* 10.0.0.1 removed, 10.0.0.3 added, the order changed */
	next.backends[0] = be("10.0.0.3:1");
	next.backends[1] = be("10.0.0.2:1");
	next.backends[1].admin = FG_BACKEND_DRAIN;
	fg_config_keep_backend_slots(&next, &prev);
	CHECK_EQ(next.n_backends, 3);
	CHECK_EQ(next.backends[0].ep.ip, be("10.0.0.1:1").ep.ip);
	CHECK_EQ(next.backends[0].admin, FG_BACKEND_REMOVED);
	CHECK_EQ(next.backends[1].ep.ip, be("10.0.0.2:1").ep.ip);
	CHECK_EQ(next.backends[1].admin, FG_BACKEND_DRAIN);
	CHECK_EQ(next.backends[2].ep.ip, be("10.0.0.3:1").ep.ip);
	/* Re-added: its old slot again. */
	prev = next;
	next.n_backends = 1;
	next.backends[0] = be("10.0.0.1:1");
	fg_config_keep_backend_slots(&next, &prev);
	CHECK_EQ(next.n_backends, 3);
	CHECK_EQ(next.backends[0].admin, FG_BACKEND_ENABLED);
	CHECK_EQ(next.backends[1].admin, FG_BACKEND_REMOVED);
	CHECK_EQ(next.backends[2].admin, FG_BACKEND_REMOVED);
	/* Every slot used once: a new address takes the lowest removed slot. */
	prev = next;
	prev.n_backends = FG_MAX_BACKENDS;
	for (uint32_t i = 3; i < FG_MAX_BACKENDS; i++) {
		prev.backends[i] = be("10.1.0.1:1");
		prev.backends[i].ep.port = htons((uint16_t)(100 + i));
	}
	next.n_backends = 2;
	next.backends[0] = be("10.0.0.1:1");
	next.backends[1] = be("10.9.9.9:9");
	fg_config_keep_backend_slots(&next, &prev);
	CHECK_EQ(next.n_backends, FG_MAX_BACKENDS);
	CHECK_EQ(next.backends[1].ep.ip, be("10.9.9.9:9").ep.ip);
	CHECK_EQ(next.backends[1].admin, FG_BACKEND_ENABLED);
	CHECK_EQ(next.backends[2].admin, FG_BACKEND_REMOVED);
}

/* The same address twice is refused: backends are told apart by address. */
TEST(duplicate_backend_addresses_refused)
{
	struct fg_settings s;
	fg_settings_defaults(&s);
	CHECK_EQ(fg_settings_add_backend(&s, "127.0.0.1:7501"), 0);
	CHECK_EQ(fg_settings_add_backend(&s, "127.0.0.1:7501,seats=4"), 0);
	struct fg_errors e = { .len = 0 };
	CHECK_EQ(fg_settings_validate(&s, &e), -EINVAL);
	CHECK(strstr(e.text, "spec.backends[1]: the same address as spec.backends[0]") != NULL);
	/* Administrative states follow addresses into a new list. */
	struct fg_settings next = s;
	s.backends[0].admin = FG_BACKEND_DISABLED;
	next.n_backends = 2;
	next.backends[0] = be("127.0.0.1:7600");
	next.backends[1] = be("127.0.0.1:7501");
	fg_settings_keep_backend_admin(&next, &s);
	CHECK_EQ(next.backends[0].admin, FG_BACKEND_ENABLED);
	CHECK_EQ(next.backends[1].admin, FG_BACKEND_DISABLED);
}

/* Every setting exported as one FairgateSettings object reads back equal,
 * lists, capacities, MACs, admins and identities included (get settings). */
TEST(settings_export_reads_back_equal)
{
	struct fg_settings s, back;
	struct fg_errors e;
	fg_settings_defaults(&s);
	CHECK_EQ(apply(&s, "{\"apiVersion\":\"fairgate.dev/v1alpha1\",\"kind\":\"FairgateSettings\",\"spec\":{"
			   "\"backends\":[\"192.0.2.1:7501,seats=8\",\"192.0.2.3:7502@02:00:00:00:00:03\"],"
			   "\"controlAdmins\":{\"uids\":[1000,1001],\"gids\":[50]},\"queueWaitLimit\":\"1.5s\","
			   "\"trustedSources\":[\"10.0.0.0/8\",\"127.0.0.0/8\"],\"httpListen\":\"off\",\"configHistory\":3,"
			   "\"sourceIdentities\":[{\"cidr\":\"10.30.0.0/16\",\"user\":\"batch\",\"groups\":[\"a\",\"b\"]}]}}",
		       &e), 0);
	json_t *o = fg_settings_json(&s);
	char *text = json_dumps(o, JSON_COMPACT);
	fg_settings_defaults(&back);
	CHECK_EQ(apply(&back, text, &e), 0);
	CHECK(fg_settings_equal(&s, &back));
	json_t *d = fg_settings_diff(&s, &back);
	CHECK_EQ(json_array_size(d), 0);
	json_decref(d);
	/* A capacity change alone is a difference (it changes live). */
	back.backends[0].seats = 9;
	d = fg_settings_diff(&s, &back);
	CHECK_EQ(json_array_size(d), 1);
	CHECK_STR(json_string_value(json_array_get(d, 0)),
		  "backends: [\"192.0.2.1:7501,seats=8\",\"192.0.2.3:7502@02:00:00:00:00:03\"] -> "
		  "[\"192.0.2.1:7501,seats=9\",\"192.0.2.3:7502@02:00:00:00:00:03\"]");
	json_decref(d);
	free(text);
	json_decref(o);
}

TEST(capacity_warnings)
{
	struct fg_settings s;
	struct fg_errors w = { .len = 0 };
	fg_settings_defaults(&s);
	CHECK_EQ(fg_settings_warn_capacity(&s, &w), 0); /* no backends: nothing to say */
	fg_settings_add_backend(&s, "192.0.2.1:7501,seats=100");
	fg_settings_add_backend(&s, "192.0.2.2:7501,seats=200");
	CHECK_EQ(fg_settings_warn_capacity(&s, &w), 1);
	CHECK(strstr(w.text, "sum to 300 seats, below serverConcurrencyLimit 600"));
	s.seat_limit = 300;
	memset(&w, 0, sizeof(w));
	CHECK_EQ(fg_settings_warn_capacity(&s, &w), 0);
	fg_settings_add_backend(&s, "192.0.2.3:7501");
	CHECK_EQ(fg_settings_warn_capacity(&s, &w), 1);
	CHECK(strstr(w.text, "1 of 3 backend(s) have no capacity"));
}

/* Cluster mode's rows: etcd URLs, names, the lease against the period. */
TEST(cluster_settings)
{
	struct fg_settings s;
	fg_settings_defaults(&s);
	char why[256];
	const struct fg_setting *etcd = fg_setting_by_name("clusterEtcd"), *member = fg_setting_by_name("clusterMember");
	CHECK_EQ(fg_setting_set_text(etcd, &s, "http://127.0.0.1:2379,http://etcd-2.example:12379", why, sizeof(why)), 0);
	CHECK_STR(s.cluster_etcd, "http://127.0.0.1:2379,http://etcd-2.example:12379");
	CHECK_EQ(fg_setting_set_text(etcd, &s, "https://127.0.0.1:2379", why, sizeof(why)), 0);
	CHECK_EQ(fg_setting_set_text(etcd, &s, "http://127.0.0.1:2379,http://etcd-2.example:12379", why, sizeof(why)), 0);
	static const char *const bad[] = { "ftp://127.0.0.1:2379", "http://127.0.0.1", "http://:80", "http://a:0",
					   "http://a:65536", "http://a:80/v3", "http://a b:80", "127.0.0.1:2379",
					   "http://a:1,", "http://-a:1",
					   "http://a:1,http://a:2,http://a:3,http://a:4,http://a:5,http://a:6,http://a:7,http://a:8,http://a:9" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = 0;
		CHECK(fg_setting_set_text(etcd, &s, bad[i], why, sizeof(why)) < 0);
		CHECK(why[0] != 0);
	}
	CHECK_STR(s.cluster_etcd, "http://127.0.0.1:2379,http://etcd-2.example:12379"); /* refused: unchanged */
	char urls[FG_CLUSTER_MAX_ENDPOINTS][FG_URL_MAX];
	CHECK_EQ(fg_urls_parse(s.cluster_etcd, FG_CLUSTER_MAX_ENDPOINTS, urls, why, sizeof(why)), 2);
	CHECK_STR(urls[1], "http://etcd-2.example:12379");
	CHECK_EQ(fg_setting_set_text(member, &s, "", why, sizeof(why)), 0);
	CHECK_EQ(fg_setting_set_text(member, &s, "host-1:127.0.0.1:7000", why, sizeof(why)), 0);
	CHECK(fg_setting_set_text(member, &s, "a/b", why, sizeof(why)) < 0);
	CHECK(fg_setting_set_text(fg_setting_by_name("clusterName"), &s, "", why, sizeof(why)) < 0);
	/* A file gives the endpoints as a list or as the text. */
	struct fg_errors errs = { 0 };
	const char *json = "{\"apiVersion\":\"fairgate.dev/v1alpha1\",\"kind\":\"FairgateSettings\",\"spec\":"
			   "{\"clusterEtcd\":[\"http://10.0.0.1:2379\",\"http://10.0.0.2:2379\"],\"clusterLeaseTTL\":\"3s\"}}";
	CHECK_EQ(fg_settings_apply_json(&s, (const uint8_t *)json, strlen(json), &errs), 0);
	CHECK_STR(s.cluster_etcd, "http://10.0.0.1:2379,http://10.0.0.2:2379");
	json = "{\"apiVersion\":\"fairgate.dev/v1alpha1\",\"kind\":\"FairgateSettings\",\"spec\":{\"clusterEtcd\":[7]}}";
	CHECK(fg_settings_apply_json(&s, (const uint8_t *)json, strlen(json), &errs) < 0);
	CHECK(strstr(errs.text, "spec.clusterEtcd") != NULL);
	/* The lease: whole seconds, at least three periods. */
	fg_settings_defaults(&s);
	memset(&errs, 0, sizeof(errs));
	CHECK_EQ(fg_settings_validate(&s, &errs), 0);
	s.cluster_period_ns = 1000000000;
	CHECK(fg_settings_validate(&s, &errs) < 0);
	CHECK(strstr(errs.text, "at least 3 clusterPeriods") != NULL);
	fg_settings_defaults(&s);
	memset(&errs, 0, sizeof(errs));
	s.cluster_lease_ttl_ns = 2500000000;
	CHECK(fg_settings_validate(&s, &errs) < 0);
	CHECK(strstr(errs.text, "whole seconds") != NULL);
	/* TLS and authentication: each setting with what it needs. */
	static const struct {
		const char *etcd, *ca, *cert, *key, *user, *pass, *error; /* error NULL: valid */
	} cases[] = {
		{ "https://e:2379", "/ca.pem", "/c.pem", "/k.pem", "u", "/pw", NULL },
		{ "https://e:2379", "", "", "", "", "", NULL },
		{ "http://e:2379", "/ca.pem", "", "", "", "", "spec.clusterEtcdCA: is for TLS" },
		{ "https://e:2379", "", "/c.pem", "", "", "", "spec.clusterEtcdKey: a client certificate needs both" },
		{ "https://e:2379", "", "", "", "u", "", "spec.clusterEtcdPasswordFile: etcd authentication needs both" },
		{ "http://e:2379", "", "", "", "u", "/pw", "spec.clusterEtcdUser: needs https://" },
		{ "https://e:2379,http://f:2379", "", "", "", "", "", "spec.clusterEtcd: all endpoints https:// or" },
		{ "http://e:2379,https://f:2379", "", "", "", "", "", "spec.clusterEtcd: all endpoints https:// or" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fg_settings_defaults(&s);
		memset(&errs, 0, sizeof(errs));
		snprintf(s.cluster_etcd, sizeof(s.cluster_etcd), "%s", cases[i].etcd);
		snprintf(s.cluster_etcd_ca, sizeof(s.cluster_etcd_ca), "%s", cases[i].ca);
		snprintf(s.cluster_etcd_cert, sizeof(s.cluster_etcd_cert), "%s", cases[i].cert);
		snprintf(s.cluster_etcd_key, sizeof(s.cluster_etcd_key), "%s", cases[i].key);
		snprintf(s.cluster_etcd_user, sizeof(s.cluster_etcd_user), "%s", cases[i].user);
		snprintf(s.cluster_etcd_password_file, sizeof(s.cluster_etcd_password_file), "%s", cases[i].pass);
		int rc = fg_settings_validate(&s, &errs);
		CHECK(cases[i].error ? rc < 0 && strstr(errs.text, cases[i].error) : rc == 0);
		if (cases[i].error && !strstr(errs.text, cases[i].error))
			fprintf(stderr, "  case %zu: %s\n", i, errs.text);
	}
	fg_settings_defaults(&s);
	memset(&errs, 0, sizeof(errs));
	snprintf(s.cluster_etcd, sizeof(s.cluster_etcd), "https://10.0.0.1:2379");
	snprintf(s.cluster_etcd_server_name, sizeof(s.cluster_etcd_server_name), "etcd_1:2379");
	CHECK(fg_settings_validate(&s, &errs) < 0 && strstr(errs.text, "spec.clusterEtcdServerName: must be a DNS name"));
	CHECK(fg_setting_set_text(fg_setting_by_name("controlSocket"), &s, "", why, sizeof(why)) < 0);
	CHECK_EQ(fg_setting_set_text(fg_setting_by_name("clusterEtcdCA"), &s, "", why, sizeof(why)), 0);
}

TEST_MAIN
