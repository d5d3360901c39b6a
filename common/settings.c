/* SPDX-License-Identifier: Apache-2.0 */
/* settings — defaults, FairgateSettings JSON, validation, compilation. */
#include "settings.h"
#include "seatshare.h"
#include "settings_table.h"

#include "config.h"
#include "flowcontrol.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "logfmt.h"
#include "shuffle.h"

#define SETTINGS_API_VERSION "fairgate.dev/v1alpha1"
#define SETTINGS_KIND "FairgateSettings"

void fg_errors_add(struct fg_errors *e, const char *path, const char *fmt, ...)
{
	e->count++;
	if (e->len >= sizeof(e->text) - 1)
		return;
	int n = snprintf(e->text + e->len, sizeof(e->text) - e->len, "%s: ", path);
	if (n > 0)
		e->len = e->len + (size_t)n < sizeof(e->text) ? e->len + (size_t)n : sizeof(e->text) - 1;
	va_list ap;
	va_start(ap, fmt);
	n = vsnprintf(e->text + e->len, sizeof(e->text) - e->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		e->len = e->len + (size_t)n < sizeof(e->text) ? e->len + (size_t)n : sizeof(e->text) - 1;
	if (e->len < sizeof(e->text) - 1)
		e->text[e->len++] = '\n';
	e->text[e->len] = 0;
}

void fg_settings_defaults(struct fg_settings *s)
{
	memset(s, 0, sizeof(*s));
	s->io = FG_IO_SOCKET;
	fg_endpoint_parse(FG_DEFAULT_LISTEN, &s->listen);
	snprintf(s->control_socket, sizeof(s->control_socket), "%s", FG_DEFAULT_CONTROL_SOCKET);
	s->control_socket_mode = FG_DEFAULT_CONTROL_SOCKET_MODE;
	s->log_format = FG_LOG_TEXT;
	s->log_level = FG_LOG_INFO;
	s->http.on = true;
	fg_endpoint_parse(FG_DEFAULT_HTTP_LISTEN, &s->http.ep);
	s->seat_limit = FG_DEFAULT_SEAT_LIMIT;
	s->queue_wait_ns = (int64_t)FG_DEFAULT_QUEUE_WAIT_NS;
	s->backend_timeout_ns = (int64_t)FG_DEFAULT_BACKEND_TIMEOUT_NS;
	s->shutdown_grace_ns = (int64_t)FG_DEFAULT_SHUTDOWN_GRACE_NS;
	s->retry_after_ms = FG_DEFAULT_RETRY_AFTER_MS;
	s->eject_after = FG_DEFAULT_EJECT_AFTER;
	s->eject_ns = (int64_t)FG_DEFAULT_EJECT_NS;
	s->max_eject_ns = (int64_t)FG_DEFAULT_MAX_EJECT_NS;
	s->max_requests = FG_DEFAULT_MAX_REQUESTS;
	s->workers = 1;
	s->allotment_period_ns = (int64_t)FG_DEFAULT_ALLOTMENT_PERIOD_NS;
	s->max_extra_latency_ns = (int64_t)FG_DEFAULT_MAX_EXTRA_LATENCY_NS;
	s->flowcontrol_metrics = true;
	s->addr_validation = FG_AV_UNTRUSTED;
	fg_cidr_parse("127.0.0.0/8", &s->trusted[s->n_trusted++]); /* loopback only */
}

int fg_settings_add_backend(struct fg_settings *s, const char *spec)
{
	if (s->n_backends >= FG_MAX_BACKENDS)
		return -ENOSPC;
	struct fg_backend_cfg b = { 0 };
	/* ADDR:PORT[@MAC][,seats=N] */
	char buf[96];
	size_t len = strlen(spec);
	if (len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, spec, len + 1);
	char *opt = strchr(buf, ',');
	if (opt) {
		*opt++ = 0;
		char *end;
		if (strncmp(opt, "seats=", 6) || !isdigit((unsigned char)opt[6]))
			return -EINVAL;
		errno = 0;
		unsigned long v = strtoul(opt + 6, &end, 10);
		if (errno || *end || v < 1 || v > FG_MAX_BACKEND_SEATS)
			return -EINVAL;
		b.seats = (uint32_t)v;
	}
	char *at = strchr(buf, '@');
	if (at)
		*at++ = 0;
	if (fg_endpoint_parse(buf, &b.ep))
		return -EINVAL;
	if (at) {
		if (fg_mac_parse(at, b.ep.mac))
			return -EINVAL;
		b.static_mac = true;
	}
	s->backends[s->n_backends++] = b;
	return 0;
}

int fg_settings_apply_json(struct fg_settings *s, const uint8_t *buf, size_t len, struct fg_errors *errs)
{
	unsigned before = errs->count;
	json_error_t jerr;
	json_t *root = json_loadb((const char *)buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		char path[48];
		snprintf(path, sizeof(path), "line %d column %d", jerr.line, jerr.column);
		fg_errors_add(errs, path, "malformed JSON: %s", jerr.text);
		return -EINVAL;
	}
	struct fg_settings next = *s;
	json_t *av = json_object_get(root, "apiVersion"), *kind = json_object_get(root, "kind");
	json_t *spec = json_object_get(root, "spec");
	if (!json_is_object(root)) {
		fg_errors_add(errs, "(root)", "must be a JSON object");
		goto out;
	}
	if (!json_is_string(av) || strcmp(json_string_value(av), SETTINGS_API_VERSION))
		fg_errors_add(errs, "apiVersion", "must be \"%s\"", SETTINGS_API_VERSION);
	if (!json_is_string(kind) || strcmp(json_string_value(kind), SETTINGS_KIND))
		fg_errors_add(errs, "kind", "must be \"%s\"", SETTINGS_KIND);
	if (!json_is_object(spec)) {
		fg_errors_add(errs, "spec", "must be an object");
		goto out;
	}
	const char *key;
	json_t *v;
	json_object_foreach(spec, key, v) {
		const struct fg_setting *row = fg_setting_by_name(key);
		if (row) {
			fg_setting_set_json(row, &next, v, errs);
		} else {
			char path[128];
			snprintf(path, sizeof(path), "spec.%.100s", key);
			fg_errors_add(errs, path, "unknown field");
		}
	}
out:
	json_decref(root);
	if (errs->count != before)
		return -EINVAL;
	*s = next;
	return 0;
}

int fg_settings_validate(const struct fg_settings *s, struct fg_errors *errs)
{
	unsigned before = errs->count;
	if (s->max_requests < s->seat_limit)
		fg_errors_add(errs, "spec.maxRequests",
			      "must hold at least the executing requests: serverConcurrencyLimit = %u, got %u",
			      s->seat_limit, s->max_requests);
	if (s->workers > 1 && s->io != FG_IO_DPDK)
		fg_errors_add(errs, "spec.workers", "more than one worker needs io: dpdk (socket mode runs one worker), got %u",
			      s->workers);
	for (uint32_t i = 0; i < s->n_backends; i++)
		if (fg_endpoint_reaches(&s->listen, &s->backends[i].ep)) {
			char path[64];
			snprintf(path, sizeof(path), "spec.backends[%u]", i);
			fg_errors_add(errs, path, "must differ from spec.listen (fairgate would send requests to itself)");
		}
	for (uint32_t i = 0; i < s->n_backends; i++)
		if (s->backends[i].seats && s->backends[i].seats < s->workers) {
			char path[64];
			snprintf(path, sizeof(path), "spec.backends[%u]", i);
			fg_errors_add(errs, path,
				      "seats=%u is fewer than the %u workers: each worker takes an even part of a backend's seats",
				      s->backends[i].seats, s->workers);
		}
	return errs->count == before ? 0 : -EINVAL;
}

struct fg_config *fg_settings_compile(const struct fg_settings *s, struct fg_fc_config *fc, uint64_t generation)
{
	struct fg_config *c = calloc(1, sizeof(*c));
	if (!c) {
		fg_fc_config_free(fc);
		return NULL;
	}
	c->generation = generation;
	c->seat_limit = s->seat_limit;
	c->fc = fc;
	c->queue_wait_ns = (uint64_t)s->queue_wait_ns;
	c->backend_timeout_ns = (uint64_t)s->backend_timeout_ns;
	c->retry_after_ms = s->retry_after_ms;
	c->eject_after = s->eject_after;
	c->eject_ns = (uint64_t)s->eject_ns;
	c->max_eject_ns = (uint64_t)s->max_eject_ns;
	c->n_backends = s->n_backends;
	memcpy(c->backends, s->backends, sizeof(c->backends[0]) * s->n_backends);
	c->n_workers = s->workers ? s->workers : 1;
	c->allotment_period_ns = (uint64_t)s->allotment_period_ns;
	c->max_extra_latency_ns = (uint64_t)s->max_extra_latency_ns;
	c->flowcontrol_metrics = s->flowcontrol_metrics;
	fg_trust_init(&c->trust, s);
	if (c->n_workers > 1 && !(c->board = fg_board_new(fc, c->n_workers))) {
		fg_config_free(c);
		return NULL;
	}
	return c;
}

void fg_config_free(struct fg_config *c)
{
	if (!c)
		return;
	fg_board_free(c->board);
	fg_fc_config_free(c->fc);
	free(c);
}
