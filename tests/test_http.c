/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests: the HTTP endpoint (control/http.h) on loopback with fake worker
 * statistics — readiness from heartbeats, draining and the published
 * configuration; the metrics summed and labelled from the statistics. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <urcu-qsbr.h>

#include "clock.h"
#include "config.h"
#include "control.h"
#include "http.h"
#include "test.h"

struct rig {
	struct fg_settings settings;
	struct fg_config *config;
	struct fg_worker_stats *stats[2];
	int shutting_down;
	struct fg_http_view view;
	struct fg_http *http;
	struct fg_endpoint bound;
};

static void rig_init(struct rig *r)
{
	memset(r, 0, sizeof(*r));
	fg_settings_defaults(&r->settings);
	struct fg_fc_set *objects = fg_fc_set_bootstrap();
	struct fg_errors e = { .len = 0 };
	r->config = fg_config_build(&r->settings, fg_fc_compile(objects, r->settings.seat_limit, &e), 7);
	fg_fc_set_free(objects);
	for (int i = 0; i < 2; i++) {
		r->stats[i] = calloc(1, sizeof(*r->stats[i]));
		fg_stats_init(r->stats[i]);
	}
	r->view = (struct fg_http_view){
		.config_ptr = &r->config, .worker_stats = r->stats, .n_workers = 2, .shutting_down = &r->shutting_down
	};
	struct fg_endpoint ep;
	char err[256];
	fg_endpoint_parse_bind("127.0.0.1:0", &ep);
	r->http = fg_http_start(&ep, &r->view, err, sizeof(err));
	if (r->http)
		fg_endpoint_parse(fg_http_address(r->http), &r->bound);
}

static void rig_fini(struct rig *r)
{
	fg_http_stop(r->http);
	fg_config_free(r->config);
	for (int i = 0; i < 2; i++)
		free(r->stats[i]);
}

/* The status code of GET path (0 on failure) and the body in buf. */
static int get(struct rig *r, const char *path, char *buf, size_t cap)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), status = 0;
	struct timeval tv = { 5, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = r->bound.ip, .sin_port = r->bound.port };
	char req[256];
	int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
	size_t len = 0;
	buf[0] = 0;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && write(fd, req, (size_t)n) == n) {
		for (int i = 0; i < 1000 && len + 1 < cap; i++) {
			ssize_t got = read(fd, buf + len, cap - 1 - len);
			if (got <= 0)
				break;
			len += (size_t)got;
		}
		buf[len] = 0;
		sscanf(buf, "HTTP/1.1 %d", &status);
		char *body = strstr(buf, "\r\n\r\n");
		if (body)
			memmove(buf, body + 4, strlen(body + 4) + 1);
	}
	close(fd);
	return status;
}

TEST(readiness_follows_heartbeats_drain_and_configuration)
{
	struct rig r;
	rig_init(&r);
	CHECK(r.http != NULL);
	if (!r.http)
		return;
	static char body[1 << 16];
	CHECK_EQ(get(&r, "/healthz", body, sizeof(body)), 200);
	CHECK_STR(body, "ok\n");
	CHECK_EQ(get(&r, "/readyz", body, sizeof(body)), 503); /* no worker has polled yet */
	CHECK(strstr(body, "worker 0 is not polling") != NULL);
	uint64_t now = fg_now_ns();
	r.stats[0]->heartbeat_ns = now;
	r.stats[1]->heartbeat_ns = now;
	CHECK_EQ(get(&r, "/readyz", body, sizeof(body)), 200);
	r.stats[0]->heartbeat_ns = fg_now_ns() + FG_HTTP_STALL_NS; /* beat after the reader took its time */
	CHECK_EQ(get(&r, "/readyz", body, sizeof(body)), 200);
	r.stats[1]->heartbeat_ns = now - 2 * FG_HTTP_STALL_NS; /* worker 1 stalled */
	CHECK_EQ(get(&r, "/readyz", body, sizeof(body)), 503);
	CHECK(strstr(body, "worker 1 is not polling") != NULL && strchr(body, '\n') == body + strlen(body) - 1);
	r.stats[1]->heartbeat_ns = fg_now_ns();
	r.shutting_down = 1;
	CHECK_EQ(get(&r, "/readyz", body, sizeof(body)), 503);
	CHECK_STR(body, "not ready: shutting down: draining\n");
	r.shutting_down = 0;
	struct fg_config *c = r.config;
	r.config = NULL; /* nothing published: the HTTP thread sees NULL */
	CHECK_EQ(get(&r, "/readyz", body, sizeof(body)), 503);
	CHECK_STR(body, "not ready: no configuration published\n");
	CHECK_EQ(get(&r, "/metrics", body, sizeof(body)), 200);
	CHECK(strstr(body, "fairgate_config_generation") == NULL);
	r.config = c;
	rig_fini(&r);
}

TEST(metrics_sum_and_label_the_statistics)
{
	struct rig r;
	rig_init(&r);
	CHECK(r.http != NULL);
	if (!r.http)
		return;
	r.stats[0]->rx_datagrams = 5;
	r.stats[1]->rx_datagrams = 7;
	r.stats[0]->malformed_by_err[FG_PROTO_EMAGIC] = 2;
	r.stats[1]->malformed_by_err[FG_PROTO_EMAGIC] = 3;
	r.stats[0]->rejected[FG_REJECT_QUEUE_FULL] = 11;
	r.stats[1]->rejected[FG_REJECT_QUEUE_FULL] = 1;
	r.stats[1]->answers_forwarded = 4;
	r.stats[0]->buffers_in_use = 10;
	r.stats[0]->buffers_reserved = 3;
	static char body[1 << 17];
	CHECK_EQ(get(&r, "/metrics", body, sizeof(body)), 200);
	const char *want[] = {
		"fairgate_worker_rx_packets_total{worker=\"0\"} 5\n",
		"fairgate_worker_rx_packets_total{worker=\"1\"} 7\n",
		"fairgate_malformed_datagrams_total{reason=\"bad-magic\"} 5\n",
		"fairgate_requests_rejected_total{reason=\"queue-full\"} 12\n",
		"fairgate_worker_answers_forwarded_total{worker=\"1\"} 4\n",
		"fairgate_buffers_in_use 7\n",
		"fairgate_config_generation 7\n",
		"fairgate_flowcontrol_nominal_limit_seats{priority_level=\"global-default\"} 49\n",
		"fairgate_flowcontrol_lower_limit_seats{priority_level=\"global-default\"} 24\n",
		"# TYPE fairgate_requests_rejected_total counter\n",
		"fairgate_build_info{version=\"" FG_VERSION "\"} 1\n",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		CHECK(strstr(body, want[i]) != NULL);
		if (!strstr(body, want[i]))
			fprintf(stderr, "  missing: %s", want[i]);
	}
	CHECK(strstr(body, "fairgate_allotter_rounds_total") == NULL); /* one allotter only with one */
	rig_fini(&r);
}

TEST_MAIN
