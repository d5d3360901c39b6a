/* SPDX-License-Identifier: Apache-2.0 */
/* settings_table — every setting defined once; see settings_table.h. */
#include "settings_table.h"
#include "reason.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "logfmt.h"

#define FIELD(f) offsetof(struct fg_settings, f), sizeof(((struct fg_settings *)0)->f)
#define MS 1000000ll

static const char *const io_names[] = { "socket", "dpdk", NULL };
static const char *const av_names[] = { "off", "untrusted", "all", NULL };
static const char *const answer_load_names[] = { "off", "trusted", "all", NULL };
static const char *const log_format_names[] = { "text", "json", NULL };
static const char *const log_level_names[] = { "debug", "info", "warn", "error", NULL };
static const char *const seat_limit_mode_names[] = { "Static", "Adaptive", NULL };
static const char *const work_estimates_names[] = { "PerLevel", "PerClass", NULL };
_Static_assert(FG_WORK_ESTIMATES_PER_LEVEL == 0 && FG_WORK_ESTIMATES_PER_CLASS == 1,
	       "work_estimates_names follows enum fg_work_estimates");
_Static_assert(FG_SEAT_LIMIT_STATIC == 0 && FG_SEAT_LIMIT_ADAPTIVE == 1,
	       "seat_limit_mode_names follows enum fg_seat_limit_mode");
_Static_assert(FG_IO_SOCKET == 0 && FG_IO_DPDK == 1, "io_names follows enum fg_io_mode");
_Static_assert(FG_LOG_TEXT == 0 && FG_LOG_JSON == 1, "log_format_names follows enum fg_log_format");
_Static_assert(FG_LOG_DEBUG == 0 && FG_LOG_INFO == 1 && FG_LOG_WARN == 2 && FG_LOG_ERROR == 3,
	       "log_level_names follows enum fg_log_level");
_Static_assert(FG_ANSWER_LOAD_OFF == 0 && FG_ANSWER_LOAD_TRUSTED == 1 && FG_ANSWER_LOAD_ALL == 2,
	       "answer_load_names follows enum fg_answer_load_mode");
_Static_assert(FG_AV_OFF == 0 && FG_AV_UNTRUSTED == 1 && FG_AV_ALL == 2, "av_names follows enum fg_addr_validation");

const struct fg_setting fg_settings_table[] = {
	{ "io", "io", FG_SET_ENUM, FIELD(io), 0, 0, false,
	  "`socket` (kernel UDP, recvmmsg/sendmmsg) or `dpdk`", io_names },
	{ "listen", "listen", FG_SET_ENDPOINT, FIELD(listen), 0, 0, false,
	  "where clients send; in DPDK mode also fairgate's IPv4 address on the port" },
	{ "backends", "backend", FG_SET_BACKENDS, FIELD(backends), 0, FG_MAX_BACKENDS, true,
	  "`ADDR:PORT`, optionally `@MAC` (DPDK mode: a static MAC instead of ARP) and `,seats=N` (the backend's "
	  "capacity: at most N seats executing there at once, 1-1000000, at least the number of workers; none: no "
	  "limit); at most 64, each address once; the flag is repeated, and flags replace the file's list; the list "
	  "changes live (requests in flight at a removed backend are still answered by it; operations.md)" },
	{ "controlSocket", "control-socket", FG_SET_PATH, FIELD(control_socket), 1, 0, false,
	  "the control interface (control.md)" },
	{ "controlSocketGroup", "control-socket-group", FG_SET_GROUP, FIELD(control_socket_group), 0, 0, false,
	  "the group of the control socket file, a name or a numeric gid: with `controlSocketMode` it decides who "
	  "may connect (readers; `controlAdmins` decides who may change); empty: the daemon's own group" },
	{ "controlSocketMode", "control-socket-mode", FG_SET_MODE, FIELD(control_socket_mode), 0,
	  FG_CONTROL_SOCKET_MODE_MASK, false,
	  "the control socket file's permission bits, octal: owner and group only (connecting needs write "
	  "permission, e.g. `0660`; `0600`: root only)" },
	{ "logFormat", "log-format", FG_SET_ENUM, FIELD(log_format), 0, 0, true,
	  "`text` (`ts=... level=... msg=\"...\" key=value`) or `json` (one object per line) on stderr "
	  "(operations.md, \"Logs\")", log_format_names },
	{ "logLevel", "log-level", FG_SET_ENUM, FIELD(log_level), 0, 0, true,
	  "`debug`, `info`, `warn` or `error`: lines below it are not written (DPDK's own lines included)",
	  log_level_names },
	{ "httpListen", "http", FG_SET_OPT_LISTEN, FIELD(http), 0, 0, false,
	  "the HTTP endpoint (`/metrics`, `/healthz`, `/readyz`; metrics.md): `ADDR:PORT`, port 0 for any free port "
	  "(the bound one is in status and on stderr), or `off`; unauthenticated, so keep it on loopback unless the "
	  "network in front is trusted (operations.md)" },
	{ "controlAdmins", NULL, FG_SET_ADMINS, FIELD(admin_uids), 0, FG_CONTROL_MAX_ADMINS, true,
	  "`{uids: [...], gids: [...]}`: who besides root may `apply` and `delete` (at most 16 of each)" },
	{ "serverConcurrencyLimit", "seat-limit", FG_SET_U32, FIELD(seat_limit), 1, FG_MAX_SEAT_LIMIT, true,
	  "seats, split over the priority levels; in Adaptive mode where the limit starts" },
	{ "serverConcurrencyLimitMode", "seat-limit-mode", FG_SET_ENUM, FIELD(seat_limit_mode), 0, 0, true,
	  "`Static` (the limit and the backends' seats as given) or `Adaptive` (each backend's limit learned from "
	  "its latency and throughput, and the levels follow their sum; adaptive-limit.md)", seat_limit_mode_names },
	{ "serverConcurrencyLimitMin", "seat-limit-min", FG_SET_U32, FIELD(seat_limit_min), 1, FG_MAX_SEAT_LIMIT, true,
	  "Adaptive: the fewest seats the backends are given together (each at least its part, Min / backends)" },
	{ "serverConcurrencyLimitMax", "seat-limit-max", FG_SET_U32, FIELD(seat_limit_max), 0, FG_MAX_SEAT_LIMIT, true,
	  "Adaptive: the most seats the levels share; 0: 4 x serverConcurrencyLimit" },
	{ "workEstimates", "work-estimates", FG_SET_ENUM, FIELD(work_estimates), 0, 0, true,
	  "how a request is priced in its queue: `PerClass` with the service time learned per (priority level, "
	  "flow schema, verb class: get, list, watch, mutating, other), or `PerLevel` with its level's alone "
	  "(fair-queuing.md)",
	  work_estimates_names },
	{ "workEstimateMin", "work-estimate-min", FG_SET_DURATION, FIELD(work_estimate_min_ns), 1000, 3600 * 1000 * MS, true,
	  "the least service time a class is priced with" },
	{ "workEstimateMax", "work-estimate-max", FG_SET_DURATION, FIELD(work_estimate_max_ns), 1000, 3600 * 1000 * MS, true,
	  "the most service time a class is priced with (a class whose requests hang cannot price itself out)" },
	{ "queueWaitLimit", "queue-wait", FG_SET_DURATION, FIELD(queue_wait_ns), 0, 0, true,
	  "longest wait in a queue; beyond it: REJECT time-out" },
	{ "backendTimeout", "backend-timeout", FG_SET_DURATION, FIELD(backend_timeout_ns), 1 * MS, 0, true,
	  "longest execution; beyond it: REJECT backend-timeout" },
	{ "shutdownGrace", "shutdown-grace", FG_SET_DURATION, FIELD(shutdown_grace_ns), 0, 0, false,
	  "how long SIGTERM waits for executing requests" },
	{ "retryAfterMillis", "retry-after-ms", FG_SET_U32, FIELD(retry_after_ms), 0, FG_MAX_RETRY_AFTER_MS, true,
	  "the retry-after hint in fairgate's REJECTs, in milliseconds; 0: adaptive per level, Kubernetes' algorithm "
	  "(1-32 s, doubling under sustained rejects, protocol.md)" },
	{ "backendEjectAfter", "backend-eject-after", FG_SET_U32, FIELD(eject_after), 1, FG_MAX_EJECT_AFTER, true,
	  "consecutive backend timeouts that eject a backend" },
	{ "backendEjectTime", "backend-eject-time", FG_SET_DURATION, FIELD(eject_ns), 1 * MS, 0, true,
	  "first ejection; doubles after each failed probe" },
	{ "backendMaxEjectTime", "backend-max-eject-time", FG_SET_DURATION, FIELD(max_eject_ns), 1 * MS, 0, true,
	  "longest ejection" },
	{ "maxRequests", "max-requests", FG_SET_U32, FIELD(max_requests), 1, FG_MAX_MAX_REQUESTS, false,
	  "request slots per worker (waiting + executing); when all are taken: REJECT queue-full" },
	{ "workers", "workers", FG_SET_U32, FIELD(workers), 1, FG_MAX_WORKER_CORES, false,
	  "workers, each queuing what it receives: DPDK lcores (as many EAL lcores; the port's RSS spreads the "
	  "flows) or, in socket mode, threads with a SO_REUSEPORT socket each (operations.md)" },
	{ "allotmentPeriod", "allotment-period", FG_SET_DURATION, FIELD(allotment_period_ns),
	  (int64_t)FG_MIN_ALLOTMENT_PERIOD_NS, (int64_t)FG_MAX_ALLOTMENT_PERIOD_NS, true,
	  "how often each level's seats are re-split between workers; a worker whose request waits for want of "
	  "allotted seats also triggers a round within 50 us" },
	{ "borrowingPeriod", "borrowing-period", FG_SET_DURATION, FIELD(borrowing_period_ns),
	  (int64_t)FG_MIN_BORROWING_PERIOD_NS, (int64_t)FG_MAX_BORROWING_PERIOD_NS, true,
	  "how often the priority levels' current limits are recomputed from their seat demand (borrowing "
	  "between levels, borrowing.md; Kubernetes' 10 s)" },
	{ "strictFields", "strict-fields", FG_SET_BOOL, FIELD(strict_fields), 0, 0, true,
	  "unknown fields in FlowSchema, PriorityLevelConfiguration and FairSharing objects are errors, not warnings "
	  "(`--config`, `apply`, `validate`)" },
	{ "flowcontrolMetrics", "flowcontrol-metrics", FG_SET_BOOL, FIELD(flowcontrol_metrics), 0, 0, false,
	  "workers count Kubernetes' APF metrics per priority level and flow schema (`fairgate_flowcontrol_*` "
	  "counters, gauges and histograms, metrics.md); `false` saves their cost on the fast path" },
	{ "metricsFlowLabels", "metrics-flow-labels", FG_SET_BOOL, FIELD(metrics_flow_labels), 0, 0, true,
	  "`/metrics` also carries each level's busiest flows (`fairgate_fair_sharing_flow_*` with a `flow` label: "
	  "tenants' user names or namespaces, at most 10 a level, so 5 series per flow, 50 per level); off, no label "
	  "names a tenant (security.md)" },
	{ "maxExtraLatency", "max-extra-latency", FG_SET_DURATION, FIELD(max_extra_latency_ns), 0,
	  (int64_t)FG_MAX_MAX_EXTRA_LATENCY_NS, true,
	  "the longest a request's final seats stay held after its answer, whatever it or its work hint asks "
	  "(security.md)" },
	{ "trustedSources", "trusted-source", FG_SET_CIDRS, FIELD(trusted), 0, FG_MAX_CIDRS, true,
	  "`A.B.C.D/N` prefixes whose requests' user and group attributes are believed; others are classified "
	  "by `sourceIdentities` or as `system:anonymous` (security.md); at most 32" },
	{ "sourceIdentities", NULL, FG_SET_IDENTITIES, FIELD(identities), 0, FG_MAX_SOURCE_IDENTITIES, true,
	  "`[{cidr, user, groups}]`: the identity of untrusted sources by address, first match wins (at most 32, "
	  "8 groups each, names of 1-127 bytes)" },
	{ "addressValidation", "address-validation", FG_SET_ENUM, FIELD(addr_validation), 0, 0, true,
	  "`off`, `untrusted` or `all`: which sources must first prove their address with a cookie "
	  "(REJECT retry-with-cookie, security.md)", av_names },
	{ "answerLoad", "answer-load", FG_SET_ENUM, FIELD(answer_load), 0, 0, true,
	  "`off`, `trusted` or `all`: which clients' answers carry fairgate's LOAD attribute (the level's and the "
	  "instance's load and the level's estimated wait, refreshed every 100 ms; protocol.md), for a balancer or "
	  "client library in front of several instances", answer_load_names },
	{ "configHistory", "config-history", FG_SET_U32, FIELD(config_history), 1, FG_MAX_CONFIG_HISTORY, true,
	  "configuration generations the daemon keeps (objects and settings) for `fairgatectl history` and "
	  "`rollback`; fewer drops the oldest" },
	{ "clusterEtcd", "cluster-etcd", FG_SET_URLS, FIELD(cluster_etcd), 0, FG_CLUSTER_MAX_ENDPOINTS, false,
	  "`http(s)://HOST:PORT[,...]`: etcd endpoints; set, this instance shares each level's seats with the "
	  "other members of its cluster (scale-out.md); empty: cluster mode off" },
	{ "clusterEtcdCA", "cluster-etcd-ca", FG_SET_PATH, FIELD(cluster_etcd_ca), 0, 0, false,
	  "https: a PEM file of the CAs that sign etcd's server certificate; empty: the system's CAs" },
	{ "clusterEtcdCert", "cluster-etcd-cert", FG_SET_PATH, FIELD(cluster_etcd_cert), 0, 0, false,
	  "https: this member's client certificate (PEM), for etcd's --client-cert-auth; with clusterEtcdKey" },
	{ "clusterEtcdKey", "cluster-etcd-key", FG_SET_PATH, FIELD(cluster_etcd_key), 0, 0, false,
	  "https: the client certificate's private key (PEM, unencrypted); with clusterEtcdCert" },
	{ "clusterEtcdServerName", "cluster-etcd-server-name", FG_SET_NAME, FIELD(cluster_etcd_server_name), 0, 0,
	  false, "https: the name etcd's certificate must carry (and SNI), when the endpoints are addresses; empty: "
	  "each endpoint's host" },
	{ "clusterEtcdUser", "cluster-etcd-user", FG_SET_NAME, FIELD(cluster_etcd_user), 0, 0, false,
	  "etcd user (etcd's `auth enable`), with clusterEtcdPasswordFile; https only: the password must not "
	  "cross the network in clear" },
	{ "clusterEtcdPasswordFile", "cluster-etcd-password-file", FG_SET_PATH, FIELD(cluster_etcd_password_file), 0,
	  0, false, "a file whose first line is clusterEtcdUser's password (read at start; keep it 0600)" },
	{ "clusterName", "cluster-name", FG_SET_NAME, FIELD(cluster_name), 1, 0, false,
	  "the cluster this instance is a member of: its keys in etcd are under `/fairgate/<name>/`" },
	{ "clusterMember", "cluster-member", FG_SET_NAME, FIELD(cluster_member), 0, 0, false,
	  "this instance's member id, unique in its cluster; empty: `<hostname>-<listen address>`" },
	{ "clusterPeriod", "cluster-period", FG_SET_DURATION, FIELD(cluster_period_ns),
	  (int64_t)FG_MIN_CLUSTER_PERIOD_NS, (int64_t)FG_MAX_CLUSTER_PERIOD_NS, false,
	  "how often a member publishes its demand, reads the others' and moves its share (one etcd transaction "
	  "and one range read each)" },
	{ "clusterLeaseTTL", "cluster-lease-ttl", FG_SET_DURATION, FIELD(cluster_lease_ttl_ns),
	  (int64_t)FG_MIN_CLUSTER_LEASE_TTL_NS, (int64_t)FG_MAX_CLUSTER_LEASE_TTL_NS, false,
	  "whole seconds, at least 3 periods: one that loses etcd keeps its share this long, then falls back; a "
	  "member that stops renewing its lease loses its share this long after, or backendTimeout + a period "
	  "when that is longer (its requests may run that long: scale-out.md)" },
	{ "clusterExpectedMembers", "cluster-expected-members", FG_SET_U32, FIELD(cluster_expected_members), 0,
	  FG_MAX_CLUSTER_EXPECTED_MEMBERS, false,
	  "the members the fallback share divides a level's limit by while etcd cannot be reached; 0: the most "
	  "members seen at once" },
};
const size_t fg_settings_table_len = sizeof(fg_settings_table) / sizeof(fg_settings_table[0]);
_Static_assert(sizeof(fg_settings_table) / sizeof(fg_settings_table[0]) <= FG_SETTINGS_MAX_ROWS,
	       "FG_SETTINGS_MAX_ROWS must cover the table");

const struct fg_setting *fg_setting_by_name(const char *name)
{
	for (size_t i = 0; i < fg_settings_table_len; i++)
		if (!strcmp(fg_settings_table[i].name, name))
			return &fg_settings_table[i];
	return NULL;
}

static void *field(const struct fg_setting *row, struct fg_settings *s)
{
	return (char *)s + row->offset;
}

static const void *cfield(const struct fg_setting *row, const struct fg_settings *s)
{
	return (const char *)s + row->offset;
}

static void append(char *buf, size_t cap, size_t *n, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

bool fg_setting_is_list(const struct fg_setting *row)
{
	return row->type == FG_SET_BACKENDS || row->type == FG_SET_CIDRS;
}

void fg_setting_clear_list(const struct fg_setting *row, struct fg_settings *s)
{
	if (row->type == FG_SET_BACKENDS)
		s->n_backends = 0;
	else if (row->type == FG_SET_CIDRS)
		s->n_trusted = 0;
}

#define BACKEND_FORMAT "IPv4:PORT[@aa:bb:cc:dd:ee:ff][,seats=N], N 1..%u"

int fg_setting_set_text(const struct fg_setting *row, struct fg_settings *s, const char *text, char *why,
			size_t whylen)
{
	switch (row->type) {
	case FG_SET_U32: {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(text, &end, 10);
		if (errno || *end || end == text || *text == '-' || *text == '+' || *text == ' ')
			return fg_reason(-EINVAL, why, whylen, "must be a whole number in [%" PRId64 ", %" PRId64 "]", row->lo, row->hi);
		if ((long long)v < row->lo || (long long)v > row->hi)
			return fg_reason(-EINVAL, why, whylen, "must be in [%" PRId64 ", %" PRId64 "], got %s", row->lo, row->hi, text);
		*(uint32_t *)field(row, s) = (uint32_t)v;
		return 0;
	}
	case FG_SET_DURATION: {
		int64_t ns;
		char d[32];
		if (text[0] == '-')
			return fg_reason(-EINVAL, why, whylen, "must not be negative, got %s", text);
		if (fg_duration_parse(text, strlen(text), &ns) || ns < 0)
			return fg_reason(-EINVAL, why, whylen, "must be a duration string such as \"1.5s\" or \"250ms\"");
		if (ns < row->lo)
			return fg_reason(-EINVAL, why, whylen, "must be at least %s, got %s", fg_duration_format(row->lo, d, sizeof(d)),
					 text);
		if (row->hi && ns > row->hi)
			return fg_reason(-EINVAL, why, whylen, "must be at most %s", fg_duration_format(row->hi, d, sizeof(d)));
		*(int64_t *)field(row, s) = ns;
		return 0;
	}
	case FG_SET_BOOL:
		if (strcmp(text, "true") && strcmp(text, "false"))
			return fg_reason(-EINVAL, why, whylen, "must be true or false");
		*(bool *)field(row, s) = !strcmp(text, "true");
		return 0;
	case FG_SET_ENUM: {
		for (int i = 0; row->names[i]; i++)
			if (!strcmp(text, row->names[i])) {
				*(int *)field(row, s) = i;
				return 0;
			}
		char list[128];
		size_t n = 0;
		for (int i = 0; row->names[i]; i++)
			append(list, sizeof(list), &n, "%s\"%s\"", i ? (row->names[i + 1] ? ", " : " or ") : "", row->names[i]);
		return fg_reason(-EINVAL, why, whylen, "must be %s", list);
	}
	case FG_SET_CIDRS: {
		struct fg_cidr c;
		if (s->n_trusted >= (uint32_t)row->hi)
			return fg_reason(-EINVAL, why, whylen, "too many prefixes (at most %" PRId64 ")", row->hi);
		if (fg_cidr_parse(text, &c))
			return fg_reason(-EINVAL, why, whylen, "invalid prefix \"%.64s\" (want A.B.C.D/N, N 0..32, no host bits set)",
				      text);
		s->trusted[s->n_trusted++] = c;
		return 0;
	}
	case FG_SET_ENDPOINT:
		if (fg_endpoint_parse(text, (struct fg_endpoint *)field(row, s)))
			return fg_reason(-EINVAL, why, whylen, strchr(text, ':') != strrchr(text, ':')
					  ? "must be \"IPv4:PORT\": IPv4 only (IPv6 is not supported yet)"
					  : "must be \"IPv4:PORT\"");
		return 0;
	case FG_SET_OPT_LISTEN: {
		struct fg_opt_listen *l = field(row, s);
		if (!strcmp(text, "off")) {
			memset(l, 0, sizeof(*l));
			return 0;
		}
		struct fg_endpoint ep;
		if (fg_endpoint_parse_bind(text, &ep))
			return fg_reason(-EINVAL, why, whylen, "must be \"IPv4:PORT\" (port 0: any free port; IPv4 only) or \"off\"");
		l->on = true;
		l->ep = ep;
		return 0;
	}
	case FG_SET_PATH:
		if ((!*text && row->lo) || strlen(text) >= row->size)
			return fg_reason(-EINVAL, why, whylen, "must be a path of %" PRId64 "..%zu bytes", row->lo,
					 row->size - 1);
		snprintf((char *)field(row, s), row->size, "%s", text);
		return 0;
	case FG_SET_BACKENDS: {
		int rc = fg_settings_add_backend(s, text);
		if (rc == -ENOSPC)
			return fg_reason(-EINVAL, why, whylen, "too many backends (at most %u)", FG_MAX_BACKENDS);
		if (rc)
			return fg_reason(-EINVAL, why, whylen, "invalid backend \"%.100s\" (want " BACKEND_FORMAT ")", text,
				      FG_MAX_BACKEND_SEATS);
		return 0;
	}
	case FG_SET_GROUP: {
		size_t n = strlen(text), ok = 0;
		while (ok < n && (isalnum((unsigned char)text[ok]) || strchr("_.-", text[ok])))
			ok++;
		if (n >= row->size || ok < n || *text == '-')
			return fg_reason(-EINVAL, why, whylen, "must be a group name (letters, digits, '_', '.', '-', at most %zu "
				      "bytes) or a numeric gid", row->size - 1);
		snprintf((char *)field(row, s), row->size, "%s", text);
		return 0;
	}
	case FG_SET_MODE: {
		char *end;
		errno = 0;
		unsigned long v = strtoul(text, &end, 8);
		size_t n = strlen(text);
		if (errno || *end || n < 3 || n > 4 || strspn(text, "01234567") != n)
			return fg_reason(-EINVAL, why, whylen, "must be an octal mode such as \"0660\"");
		if (v & 07000)
			return fg_reason(-EINVAL, why, whylen, "%04lo has setuid, setgid or sticky bits: give owner and group bits "
				      "only (at most %04lo)", v, (unsigned long)row->hi);
		if (v & ~(unsigned long)row->hi)
			return fg_reason(-EINVAL, why, whylen, "%04lo gives others access: any local user could reach the control "
				      "socket; owner and group bits only (at most %04lo, e.g. 0660)", v,
				      (unsigned long)row->hi);
		*(uint32_t *)field(row, s) = (uint32_t)v;
		return 0;
	}
	case FG_SET_NAME: {
		size_t n = strlen(text), ok = 0;
		while (ok < n && (isalnum((unsigned char)text[ok]) || strchr("_.:-", text[ok])))
			ok++;
		if (n >= row->size || ok < n || (int64_t)n < row->lo)
			return fg_reason(-EINVAL, why, whylen, "must be %" PRId64 "..%zu letters, digits, '_', '.', ':' or '-'", row->lo,
				      row->size - 1);
		snprintf((char *)field(row, s), row->size, "%s", text);
		return 0;
	}
	case FG_SET_URLS: {
		char bad[96];
		int n = fg_urls_parse(text, (unsigned)row->hi, NULL, bad, sizeof(bad));
		if (n < 0)
			return fg_reason(-EINVAL, why, whylen, "%s", bad);
		if (strlen(text) >= row->size)
			return fg_reason(-EINVAL, why, whylen, "must be at most %zu bytes", row->size - 1);
		snprintf((char *)field(row, s), row->size, "%s", text);
		return 0;
	}
	case FG_SET_ADMINS:
	case FG_SET_IDENTITIES:
		break;
	}
	return fg_reason(-EINVAL, why, whylen, "cannot be given as text");
}

static void set_admins(const struct fg_setting *row, struct fg_settings *s, json_t *admins, struct fg_errors *errs)
{
	static const char *const keys[2] = { "uids", "gids" };
	uint32_t *dst[2] = { s->admin_uids, s->admin_gids }, *n[2] = { &s->n_admin_uids, &s->n_admin_gids };
	char path[64];
	if (!json_is_object(admins)) {
		snprintf(path, sizeof(path), "spec.%s", row->name);
		fg_errors_add(errs, path, "must be an object {uids: [...], gids: [...]}");
		return;
	}
	for (int k = 0; k < 2; k++) {
		json_t *arr = json_object_get(admins, keys[k]), *e;
		snprintf(path, sizeof(path), "spec.%s.%s", row->name, keys[k]);
		if (arr && (!json_is_array(arr) || json_array_size(arr) > (size_t)row->hi)) {
			fg_errors_add(errs, path, "must be a list of at most %" PRId64 " numeric ids", row->hi);
			continue;
		}
		size_t i;
		*n[k] = 0;
		json_array_foreach(arr, i, e) {
			if (!json_is_integer(e) || json_integer_value(e) < 0 || json_integer_value(e) > UINT32_MAX)
				fg_errors_add(errs, path, "must hold numeric ids");
			else
				dst[k][(*n[k])++] = (uint32_t)json_integer_value(e);
		}
	}
}

/* A user or group name of a source identity: 1..FG_IDENTITY_NAME_MAX-1 bytes (JSON strings are UTF-8). */
static bool copy_name(json_t *v, char *dst, const char *path, struct fg_errors *errs)
{
	size_t len = json_is_string(v) ? json_string_length(v) : 0;
	if (!json_is_string(v) || len == 0 || len >= FG_IDENTITY_NAME_MAX || memchr(json_string_value(v), 0, len)) {
		fg_errors_add(errs, path, "must be a string of 1..%u bytes", FG_IDENTITY_NAME_MAX - 1);
		return false;
	}
	memcpy(dst, json_string_value(v), len + 1);
	return true;
}

static void set_identities(const struct fg_setting *row, struct fg_settings *s, json_t *v, struct fg_errors *errs)
{
	char path[128];
	snprintf(path, sizeof(path), "spec.%s", row->name);
	if (!json_is_array(v) || json_array_size(v) > (size_t)row->hi) {
		fg_errors_add(errs, path, "must be a list of at most %" PRId64 " {cidr, user, groups} objects", row->hi);
		return;
	}
	memset(s->identities, 0, sizeof(s->identities));
	s->n_identities = 0;
	size_t i;
	json_t *e;
	json_array_foreach(v, i, e) {
		struct fg_source_identity *id = &s->identities[s->n_identities];
		char p[160];
		snprintf(p, sizeof(p), "spec.%s[%zu]", row->name, i);
		if (!json_is_object(e)) {
			fg_errors_add(errs, p, "must be an object {cidr, user, groups}");
			continue;
		}
		bool ok = true;
		const char *key;
		json_t *f;
		json_object_foreach(e, key, f) {
			if (strcmp(key, "cidr") && strcmp(key, "user") && strcmp(key, "groups")) {
				snprintf(p, sizeof(p), "spec.%s[%zu].%.40s", row->name, i, key);
				fg_errors_add(errs, p, "unknown field");
				ok = false;
			}
		}
		json_t *cidr = json_object_get(e, "cidr"), *groups = json_object_get(e, "groups");
		snprintf(p, sizeof(p), "spec.%s[%zu].cidr", row->name, i);
		if (!json_is_string(cidr) || fg_cidr_parse(json_string_value(cidr), &id->cidr)) {
			fg_errors_add(errs, p, "must be a prefix \"A.B.C.D/N\" with no host bits set");
			ok = false;
		}
		snprintf(p, sizeof(p), "spec.%s[%zu].user", row->name, i);
		ok &= copy_name(json_object_get(e, "user"), id->user, p, errs);
		snprintf(p, sizeof(p), "spec.%s[%zu].groups", row->name, i);
		if (groups && (!json_is_array(groups) || json_array_size(groups) > FG_IDENTITY_MAX_GROUPS)) {
			fg_errors_add(errs, p, "must be a list of at most %u group names", FG_IDENTITY_MAX_GROUPS);
			ok = false;
		} else {
			size_t k;
			json_t *g;
			json_array_foreach(groups, k, g) {
				snprintf(p, sizeof(p), "spec.%s[%zu].groups[%zu]", row->name, i, k);
				ok &= copy_name(g, id->groups[id->n_groups++], p, errs);
			}
		}
		if (ok)
			s->n_identities++;
		else
			memset(id, 0, sizeof(*id));
	}
}

void fg_setting_set_json(const struct fg_setting *row, struct fg_settings *s, json_t *v, struct fg_errors *errs)
{
	char path[96], why[256], text[32], joined[FG_CLUSTER_ETCD_MAX + 1];
	snprintf(path, sizeof(path), "spec.%s", row->name);
	const char *t = NULL;
	switch (row->type) {
	case FG_SET_U32:
		if (!json_is_integer(v)) {
			fg_errors_add(errs, path, "must be an integer");
			return;
		}
		snprintf(text, sizeof(text), "%lld", (long long)json_integer_value(v));
		t = text;
		if (json_integer_value(v) < 0) { /* the text parser refuses the sign itself */
			fg_errors_add(errs, path, "must be in [%" PRId64 ", %" PRId64 "], got %s", row->lo, row->hi, text);
			return;
		}
		break;
	case FG_SET_BOOL:
		if (!json_is_boolean(v)) {
			fg_errors_add(errs, path, "must be true or false");
			return;
		}
		t = json_is_true(v) ? "true" : "false";
		break;
	case FG_SET_BACKENDS:
	case FG_SET_CIDRS: {
		const char *want = row->type == FG_SET_CIDRS ? "\"A.B.C.D/N\"" : "\"ADDR:PORT[@MAC]\"";
		if (!json_is_array(v)) {
			fg_errors_add(errs, path, "must be a list of %s strings", want);
			return;
		}
		fg_setting_clear_list(row, s); /* the file's list replaces the defaults */
		size_t i;
		json_t *e;
		json_array_foreach(v, i, e) {
			char p[64];
			snprintf(p, sizeof(p), "spec.%s[%zu]", row->name, i);
			if (!json_is_string(e))
				fg_errors_add(errs, p, "must be a string %s", want);
			else if (fg_setting_set_text(row, s, json_string_value(e), why, sizeof(why)))
				fg_errors_add(errs, p, "%s", why);
		}
		return;
	}
	case FG_SET_ADMINS:
		set_admins(row, s, v, errs);
		return;
	case FG_SET_IDENTITIES:
		set_identities(row, s, v, errs);
		return;
	case FG_SET_GROUP:
		if (!json_is_string(v)) {
			fg_errors_add(errs, path, "must be a string: a group name or a numeric gid");
			return;
		}
		t = json_string_value(v);
		break;
	case FG_SET_URLS:
		if (json_is_array(v)) {
			size_t i, n = 0;
			json_t *e;
			json_array_foreach(v, i, e) {
				if (!json_is_string(e)) {
					fg_errors_add(errs, path, "must be a list of \"http://HOST:PORT\" strings");
					return;
				}
				append(joined, sizeof(joined), &n, "%s%s", i ? "," : "", json_string_value(e));
			}
			t = joined;
			break;
		}
		if (!json_is_string(v)) {
			fg_errors_add(errs, path, "must be a list of \"http://HOST:PORT\" strings");
			return;
		}
		t = json_string_value(v);
		break;
	default:
		if (!json_is_string(v)) {
			fg_setting_set_text(row, s, "", why, sizeof(why)); /* for the reason only */
			fg_errors_add(errs, path, "%s", why);
			return;
		}
		t = json_string_value(v);
	}
	if (fg_setting_set_text(row, s, t, why, sizeof(why)))
		fg_errors_add(errs, path, "%s", why);
}

static void append(char *buf, size_t cap, size_t *n, const char *fmt, ...)
{
	if (*n >= cap)
		return;
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(buf + *n, cap - *n, fmt, ap);
	va_end(ap);
	if (w > 0)
		*n = *n + (size_t)w < cap ? *n + (size_t)w : cap;
}

const char *fg_setting_format(const struct fg_setting *row, const struct fg_settings *s, char *buf, size_t cap)
{
	const void *p = cfield(row, s);
	char ep[32];
	size_t n = 0;
	buf[0] = 0;
	switch (row->type) {
	case FG_SET_U32:
		append(buf, cap, &n, "%u", *(const uint32_t *)p);
		break;
	case FG_SET_DURATION:
		fg_duration_format(*(const int64_t *)p, buf, cap);
		break;
	case FG_SET_BOOL:
		append(buf, cap, &n, "%s", *(const bool *)p ? "true" : "false");
		break;
	case FG_SET_ENUM:
		append(buf, cap, &n, "%s", row->names[*(const int *)p]);
		break;
	case FG_SET_CIDRS:
		append(buf, cap, &n, "[");
		for (uint32_t i = 0; i < s->n_trusted; i++)
			append(buf, cap, &n, "%s%s", i ? ", " : "", fg_cidr_format(&s->trusted[i], ep, sizeof(ep)));
		append(buf, cap, &n, "]");
		break;
	case FG_SET_IDENTITIES:
		append(buf, cap, &n, "[");
		for (uint32_t i = 0; i < s->n_identities; i++) {
			const struct fg_source_identity *id = &s->identities[i];
			append(buf, cap, &n, "%s%s=%s(", i ? ", " : "", fg_cidr_format(&id->cidr, ep, sizeof(ep)), id->user);
			for (uint32_t k = 0; k < id->n_groups; k++)
				append(buf, cap, &n, "%s%s", k ? "," : "", id->groups[k]);
			append(buf, cap, &n, ")");
		}
		append(buf, cap, &n, "]");
		break;
	case FG_SET_ENDPOINT:
		append(buf, cap, &n, "%s", fg_endpoint_format(p, ep, sizeof(ep)));
		break;
	case FG_SET_OPT_LISTEN: {
		const struct fg_opt_listen *l = p;
		append(buf, cap, &n, "%s", l->on ? fg_endpoint_format(&l->ep, ep, sizeof(ep)) : "off");
		break;
	}
	case FG_SET_PATH:
	case FG_SET_GROUP:
	case FG_SET_NAME:
	case FG_SET_URLS:
		append(buf, cap, &n, "%s", (const char *)p);
		break;
	case FG_SET_MODE:
		append(buf, cap, &n, "%04o", *(const uint32_t *)p);
		break;
	case FG_SET_BACKENDS:
		append(buf, cap, &n, "[");
		for (uint32_t i = 0; i < s->n_backends; i++) {
			append(buf, cap, &n, "%s%s", i ? ", " : "", fg_endpoint_format(&s->backends[i].ep, ep, sizeof(ep)));
			if (s->backends[i].static_mac)
				append(buf, cap, &n, "@%02x:%02x:%02x:%02x:%02x:%02x", s->backends[i].ep.mac[0],
				       s->backends[i].ep.mac[1], s->backends[i].ep.mac[2], s->backends[i].ep.mac[3],
				       s->backends[i].ep.mac[4], s->backends[i].ep.mac[5]);
			if (s->backends[i].seats)
				append(buf, cap, &n, ",seats=%u", s->backends[i].seats);
		}
		append(buf, cap, &n, "]");
		break;
	case FG_SET_ADMINS:
		append(buf, cap, &n, "{uids: [");
		for (uint32_t i = 0; i < s->n_admin_uids; i++)
			append(buf, cap, &n, "%s%u", i ? ", " : "", s->admin_uids[i]);
		append(buf, cap, &n, "], gids: [");
		for (uint32_t i = 0; i < s->n_admin_gids; i++)
			append(buf, cap, &n, "%s%u", i ? ", " : "", s->admin_gids[i]);
		append(buf, cap, &n, "]}");
		break;
	}
	return buf;
}

bool fg_setting_differs(const struct fg_setting *row, const struct fg_settings *a, const struct fg_settings *b)
{
	switch (row->type) {
	case FG_SET_ENDPOINT:
		return !fg_endpoint_same_addr(cfield(row, a), cfield(row, b));
	case FG_SET_OPT_LISTEN: {
		const struct fg_opt_listen *x = cfield(row, a), *y = cfield(row, b);
		return x->on != y->on || (x->on && !fg_endpoint_same_addr(&x->ep, &y->ep));
	}
	case FG_SET_BACKENDS:
		if (a->n_backends != b->n_backends)
			return true;
		for (uint32_t i = 0; i < a->n_backends; i++)
			if (!fg_endpoint_same_addr(&a->backends[i].ep, &b->backends[i].ep) ||
			    memcmp(a->backends[i].ep.mac, b->backends[i].ep.mac, 6))
				return true;
		return false;
	case FG_SET_PATH:
	case FG_SET_GROUP:
	case FG_SET_NAME:
	case FG_SET_URLS:
		return strcmp(cfield(row, a), cfield(row, b)) != 0;
	case FG_SET_CIDRS:
		return a->n_trusted != b->n_trusted || memcmp(a->trusted, b->trusted, sizeof(a->trusted[0]) * a->n_trusted);
	case FG_SET_IDENTITIES:
		return a->n_identities != b->n_identities ||
		       memcmp(a->identities, b->identities, sizeof(a->identities[0]) * a->n_identities);
	case FG_SET_ADMINS: {
		char x[512], y[512];
		return strcmp(fg_setting_format(row, a, x, sizeof(x)), fg_setting_format(row, b, y, sizeof(y))) != 0;
	}
	default:
		return memcmp(cfield(row, a), cfield(row, b), row->size) != 0;
	}
}

void fg_settings_print_markdown(FILE *f)
{
	struct fg_settings d;
	char v[512];
	fg_settings_defaults(&d);
	fprintf(f, "| field | flag | default | live apply | meaning |\n|---|---|---|---|---|\n");
	for (size_t i = 0; i < fg_settings_table_len; i++) {
		const struct fg_setting *r = &fg_settings_table[i];
		char dflt[540];
		snprintf(dflt, sizeof(dflt), "`%s`", fg_setting_format(r, &d, v, sizeof(v)));
		if (r->type == FG_SET_BACKENDS && !d.n_backends)
			snprintf(dflt, sizeof(dflt), "none");
		else if (r->type == FG_SET_ADMINS && !d.n_admin_uids && !d.n_admin_gids)
			snprintf(dflt, sizeof(dflt), "root only");
		else if (r->type == FG_SET_GROUP && !*v)
			snprintf(dflt, sizeof(dflt), "the daemon's group");
		fprintf(f, "| `%s` | %s%s%s | %s | %s | %s", r->name, r->flag ? "`--" : "-", r->flag ? r->flag : "",
			r->flag ? "`" : "", dflt, r->reloadable ? "yes" : "restart", r->doc);
		if (r->type == FG_SET_U32)
			fprintf(f, " (%" PRId64 "-%" PRId64 ")", r->lo, r->hi);
		else if (r->type == FG_SET_DURATION && (r->lo || r->hi)) {
			char lo[32], hi[32];
			fg_duration_format(r->lo, lo, sizeof(lo));
			if (r->hi)
				fprintf(f, " (%s-%s)", lo, fg_duration_format(r->hi, hi, sizeof(hi)));
			else
				fprintf(f, " (at least %s)", lo);
		}
		fprintf(f, " |\n");
	}
}

/* A list row's items as JSON strings: fg_setting_format writes "[a, b]", and
 * no item's text holds ", " (addresses, MACs, ",seats=N", prefixes). */
static json_t *list_json(const struct fg_setting *row, const struct fg_settings *s)
{
	char buf[FG_MAX_BACKENDS * 64];
	json_t *arr = json_array();
	fg_setting_format(row, s, buf, sizeof(buf));
	size_t len = strlen(buf);
	if (len < 2)
		return arr;
	buf[len - 1] = 0; /* the closing ']' */
	for (char *p = buf + 1; *p;) {
		char *sep = strstr(p, ", ");
		if (sep)
			*sep = 0;
		json_array_append_new(arr, json_string(p));
		p = sep ? sep + 2 : p + strlen(p);
	}
	return arr;
}

static json_t *ids_json(const uint32_t *ids, uint32_t n)
{
	json_t *arr = json_array();
	for (uint32_t i = 0; i < n; i++)
		json_array_append_new(arr, json_integer(ids[i]));
	return arr;
}

static json_t *identities_json(const struct fg_settings *s)
{
	char c[32];
	json_t *arr = json_array();
	for (uint32_t i = 0; i < s->n_identities; i++) {
		const struct fg_source_identity *id = &s->identities[i];
		json_t *groups = json_array();
		for (uint32_t k = 0; k < id->n_groups; k++)
			json_array_append_new(groups, json_string(id->groups[k]));
		json_array_append_new(arr, json_pack("{s:s, s:s, s:o}", "cidr", fg_cidr_format(&id->cidr, c, sizeof(c)),
						     "user", id->user, "groups", groups));
	}
	return arr;
}

json_t *fg_setting_json(const struct fg_setting *row, const struct fg_settings *s)
{
	char buf[FG_CLUSTER_ETCD_MAX + 64];
	const void *p = cfield(row, s);
	switch (row->type) {
	case FG_SET_U32:
		return json_integer(*(const uint32_t *)p);
	case FG_SET_BOOL:
		return json_boolean(*(const bool *)p);
	case FG_SET_BACKENDS:
	case FG_SET_CIDRS:
		return list_json(row, s);
	case FG_SET_ADMINS:
		return json_pack("{s:o, s:o}", "uids", ids_json(s->admin_uids, s->n_admin_uids), "gids",
				 ids_json(s->admin_gids, s->n_admin_gids));
	case FG_SET_IDENTITIES:
		return identities_json(s);
	default:
		return json_string(fg_setting_format(row, s, buf, sizeof(buf)));
	}
}

json_t *fg_settings_json(const struct fg_settings *s)
{
	json_t *spec = json_object();
	for (size_t i = 0; spec && i < fg_settings_table_len; i++)
		json_object_set_new(spec, fg_settings_table[i].name, fg_setting_json(&fg_settings_table[i], s));
	return json_pack("{s:s, s:s, s:o}", "apiVersion", FG_SETTINGS_API_VERSION, "kind", "FairgateSettings", "spec",
			 spec);
}

json_t *fg_settings_diff(const struct fg_settings *a, const struct fg_settings *b)
{
	json_t *out = json_array();
	for (size_t i = 0; out && i < fg_settings_table_len; i++) {
		const struct fg_setting *r = &fg_settings_table[i];
		json_t *x = fg_setting_json(r, a), *y = fg_setting_json(r, b);
		if (!json_equal(x, y)) {
			char *tx = json_dumps(x, JSON_ENCODE_ANY | JSON_COMPACT), *ty = json_dumps(y, JSON_ENCODE_ANY | JSON_COMPACT);
			json_array_append_new(out, json_sprintf("%s: %.200s -> %.200s", r->name, tx ? tx : "?", ty ? ty : "?"));
			free(tx);
			free(ty);
		}
		json_decref(x);
		json_decref(y);
	}
	return out;
}

bool fg_settings_equal(const struct fg_settings *a, const struct fg_settings *b)
{
	json_t *d = fg_settings_diff(a, b);
	bool same = d && !json_array_size(d);
	json_decref(d);
	return same;
}
