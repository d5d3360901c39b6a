/* SPDX-License-Identifier: Apache-2.0 */
/* settings — defaults, FairgateSettings JSON, validation; see settings.h. */
#include "settings.h"
#include "settings_table.h"

#include "clock.h"

#include <ctype.h>
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "logfmt.h"

#define SETTINGS_API_VERSION FG_SETTINGS_API_VERSION
#define SETTINGS_KIND "FairgateSettings"

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
	s->seat_limit_min = 1;
	s->work_estimates = FG_WORK_ESTIMATES_PER_CLASS;
	s->work_estimate_min_ns = 100000;          /* 100 us */
	s->work_estimate_max_ns = 60000000000LL;   /* 60 s */
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
	s->borrowing_period_ns = (int64_t)FG_DEFAULT_BORROWING_PERIOD_NS;
	s->max_extra_latency_ns = (int64_t)FG_DEFAULT_MAX_EXTRA_LATENCY_NS;
	s->flowcontrol_metrics = true;
	s->addr_validation = FG_AV_UNTRUSTED;
	s->config_history = FG_DEFAULT_CONFIG_HISTORY;
	snprintf(s->cluster_name, sizeof(s->cluster_name), "fairgate");
	s->cluster_period_ns = (int64_t)FG_DEFAULT_CLUSTER_PERIOD_NS;
	s->cluster_lease_ttl_ns = (int64_t)FG_DEFAULT_CLUSTER_LEASE_TTL_NS;
	fg_cidr_parse("127.0.0.0/8", &s->trusted[s->n_trusted++]); /* loopback only */
}

int fg_settings_add_backend(struct fg_settings *s, const char *spec)
{
	if (s->n_backends >= FG_MAX_BACKENDS)
		return -ENOSPC;
	struct fg_backend_cfg b = { 0 };
	/* ADDR:PORT[@MAC][,seats=N] */
	char buf[FG_BACKEND_SPEC_MAX];
	size_t len = strnlen(spec, sizeof(buf));
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

int fg_settings_find_backend(const struct fg_settings *s, const struct fg_endpoint *ep)
{
	for (uint32_t i = 0; i < s->n_backends; i++)
		if (fg_endpoint_same_addr(&s->backends[i].ep, ep))
			return (int)i;
	return -1;
}

void fg_settings_keep_backend_admin(struct fg_settings *next, const struct fg_settings *cur)
{
	for (uint32_t i = 0; i < next->n_backends; i++) {
		int k = fg_settings_find_backend(cur, &next->backends[i].ep);
		next->backends[i].admin = k < 0 ? FG_BACKEND_ENABLED : cur->backends[k].admin;
	}
}

uint32_t fg_settings_seat_limit_max(const struct fg_settings *s)
{
	if (s->seat_limit_max)
		return s->seat_limit_max;
	uint64_t v = (uint64_t)s->seat_limit * FG_ADAPTIVE_MAX_FACTOR;
	return v > FG_MAX_SEAT_LIMIT ? FG_MAX_SEAT_LIMIT : (uint32_t)v;
}

int fg_settings_validate(const struct fg_settings *s, struct fg_errors *errs)
{
	unsigned before = errs->count;
	bool adaptive = s->seat_limit_mode == FG_SEAT_LIMIT_ADAPTIVE;
	uint32_t most = adaptive ? fg_settings_seat_limit_max(s) : s->seat_limit;
	if (s->max_requests < most)
		fg_errors_add(errs, "spec.maxRequests",
			      "must hold at least the executing requests: %s = %u, got %u",
			      adaptive ? "serverConcurrencyLimitMax" : "serverConcurrencyLimit", most, s->max_requests);
	if (s->work_estimate_min_ns > s->work_estimate_max_ns)
		fg_errors_add(errs, "spec.workEstimateMin", "must be at most workEstimateMax (%.6gs), got %.6gs",
			      (double)s->work_estimate_max_ns / 1e9, (double)s->work_estimate_min_ns / 1e9);
	if (adaptive && s->seat_limit_min > s->seat_limit)
		fg_errors_add(errs, "spec.serverConcurrencyLimitMin",
			      "must be at most serverConcurrencyLimit (the adaptive limit's start) %u, got %u",
			      s->seat_limit, s->seat_limit_min);
	if (adaptive && s->seat_limit_max && s->seat_limit_max < s->seat_limit)
		fg_errors_add(errs, "spec.serverConcurrencyLimitMax",
			      "must be at least serverConcurrencyLimit (the adaptive limit's start) %u, got %u",
			      s->seat_limit, s->seat_limit_max);
	if (s->cluster_lease_ttl_ns % (int64_t)FG_NS_PER_SEC)
		fg_errors_add(errs, "spec.clusterLeaseTTL", "must be whole seconds (etcd's leases count seconds), got %.3fs",
			      (double)s->cluster_lease_ttl_ns / 1e9);
	if (s->cluster_lease_ttl_ns < 3 * s->cluster_period_ns)
		fg_errors_add(errs, "spec.clusterLeaseTTL",
			      "must be at least 3 clusterPeriods (a lease must outlive two missed renewals): period %.3fs, "
			      "TTL %.3fs", (double)s->cluster_period_ns / 1e9, (double)s->cluster_lease_ttl_ns / 1e9);
	/* Each endpoint's scheme: the URLs are checked, so each starts with one. */
	unsigned n_https = 0, n_urls = 0;
	for (const char *u = s->cluster_etcd; *u; n_urls++) {
		n_https += !strncmp(u, "https://", 8);
		const char *comma = strchr(u, ',');
		u = comma ? comma + 1 : u + strlen(u);
	}
	bool https = n_urls && n_https == n_urls;
	if (n_https && n_https != n_urls)
		fg_errors_add(errs, "spec.clusterEtcd", "all endpoints https:// or all http://, not both");
	size_t name_ok = strspn(s->cluster_etcd_server_name,
				"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-");
	if (s->cluster_etcd_server_name[name_ok] || s->cluster_etcd_server_name[0] == '-' ||
	    s->cluster_etcd_server_name[0] == '.')
		fg_errors_add(errs, "spec.clusterEtcdServerName", "must be a DNS name (letters, digits, '.' and '-'), got "
			      "\"%.100s\"", s->cluster_etcd_server_name);
	const struct { const char *path, *value; } tls[] = {
		{ "spec.clusterEtcdCA", s->cluster_etcd_ca }, { "spec.clusterEtcdCert", s->cluster_etcd_cert },
		{ "spec.clusterEtcdKey", s->cluster_etcd_key }, { "spec.clusterEtcdServerName", s->cluster_etcd_server_name } };
	for (size_t i = 0; i < sizeof(tls) / sizeof(tls[0]); i++)
		if (tls[i].value[0] && !https)
			fg_errors_add(errs, tls[i].path, "is for TLS: clusterEtcd must be https://");
	if (!s->cluster_etcd_cert[0] != !s->cluster_etcd_key[0])
		fg_errors_add(errs, s->cluster_etcd_cert[0] ? "spec.clusterEtcdKey" : "spec.clusterEtcdCert",
			      "a client certificate needs both clusterEtcdCert and clusterEtcdKey");
	if (!s->cluster_etcd_user[0] != !s->cluster_etcd_password_file[0])
		fg_errors_add(errs, s->cluster_etcd_user[0] ? "spec.clusterEtcdPasswordFile" : "spec.clusterEtcdUser",
			      "etcd authentication needs both clusterEtcdUser and clusterEtcdPasswordFile");
	if (s->cluster_etcd_user[0] && !https)
		fg_errors_add(errs, "spec.clusterEtcdUser",
			      "needs https:// endpoints (over http:// the password would cross the network in clear)");
	/* DPDK with several workers: worker i sends to backends from listen port + 1 + i. */
	if (s->io == FG_IO_DPDK && s->workers > 1 && (uint32_t)ntohs(s->listen.port) + s->workers > UINT16_MAX)
		fg_errors_add(errs, "spec.listen",
			      "port %u leaves no room for the %u workers' backend-side ports (listen port + 1 .. + %u)",
			      (unsigned)ntohs(s->listen.port), s->workers, s->workers);
	for (uint32_t i = 0; i < s->n_backends; i++)
		if (fg_endpoint_reaches(&s->listen, &s->backends[i].ep)) {
			char path[64];
			snprintf(path, sizeof(path), "spec.backends[%u]", i);
			fg_errors_add(errs, path, "must differ from spec.listen (fairgate would send requests to itself)");
		}
	for (uint32_t i = 0; i < s->n_backends; i++) {
		/* Backends are told apart by address (answers, slots, fairgatectl backend). */
		int first = fg_settings_find_backend(s, &s->backends[i].ep);
		if (first >= 0 && (uint32_t)first < i) {
			char path[64];
			snprintf(path, sizeof(path), "spec.backends[%u]", i);
			fg_errors_add(errs, path, "the same address as spec.backends[%d]", first);
		}
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

unsigned fg_settings_warn_capacity(const struct fg_settings *s, struct fg_errors *warnings)
{
	uint64_t total = 0;
	unsigned unlimited = 0, n = 0;
	for (uint32_t i = 0; i < s->n_backends; i++) {
		total += s->backends[i].seats;
		unlimited += !s->backends[i].seats;
	}
	if (s->seat_limit_mode == FG_SEAT_LIMIT_ADAPTIVE)
		return 0; /* the backends' limits are learned */
	if (unlimited) {
		fg_errors_add(warnings, "spec.backends",
			      "%u of %u backend(s) have no capacity (,seats=N): fairgate sends them up to "
			      "serverConcurrencyLimit %u seats at once, and what they cannot execute waits in their "
			      "socket queues, where no fairness applies", unlimited, s->n_backends, s->seat_limit);
		n++;
	} else if (s->n_backends && total < s->seat_limit) {
		fg_errors_add(warnings, "spec.backends",
			      "the backends' capacities sum to %llu seats, below serverConcurrencyLimit %u: the levels "
			      "admit more than the backends take, and requests are held for backend room (status "
			      "heldForBackend) in arrival order, outside the levels' fair queuing",
			      (unsigned long long)total, s->seat_limit);
		n++;
	}
	return n;
}
