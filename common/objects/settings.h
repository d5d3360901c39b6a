/* SPDX-License-Identifier: Apache-2.0 */
/*
 * settings — everything an operator sets: defaults, then the config file
 * (a FairgateSettings JSON object, docs/configuration.md), then flags.
 * Each field is defined once, in settings_table.c; the parser here is driven
 * by that table.  Validation reports every problem at once, each with its
 * field path.
 *
 * Thread contract: used by the control thread at start-up and by tools.
 */
#ifndef FG_SETTINGS_H
#define FG_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "defs.h"
#include "endpoint.h"
#include "errors.h"

/* What the operator wants of a backend (fairgatectl backend, control.md);
 * REMOVED marks the slot of a backend no longer listed, kept so that the
 * answers of requests in flight there are still taken. */
enum fg_backend_admin { FG_BACKEND_ENABLED = 0, FG_BACKEND_DRAIN, FG_BACKEND_DISABLED, FG_BACKEND_REMOVED };
#define FG_BACKEND_ADMIN__COUNT 4

struct fg_backend_cfg {
	struct fg_endpoint ep;
	bool static_mac; /* DPDK mode: ep.mac given; otherwise resolved by ARP */
	uint8_t admin;   /* enum fg_backend_admin (above): set by `fairgatectl backend`, not by files;
			  * kept by address across changes (fg_settings_keep_backend_admin) */
	uint32_t seats;  /* capacity: the most seats executing there at once (0: no limit) */
};

enum fg_io_mode { FG_IO_SOCKET = 0, FG_IO_DPDK = 1 };

/* Which request sources must prove their address with a cookie (security.md). */
enum fg_addr_validation { FG_AV_OFF = 0, FG_AV_UNTRUSTED = 1, FG_AV_ALL = 2 };

/* A source whose requests are classified as this identity (sourceIdentities). */
struct fg_source_identity {
	struct fg_cidr cidr;
	char user[FG_IDENTITY_NAME_MAX];
	uint32_t n_groups;
	char groups[FG_IDENTITY_MAX_GROUPS][FG_IDENTITY_NAME_MAX];
};

/* An optional listening address (httpListen): off, or an address whose port
 * 0 means "any free port". */
struct fg_opt_listen {
	bool on;
	struct fg_endpoint ep;
};

/* serverConcurrencyLimitMode: Static takes serverConcurrencyLimit and the
 * backends' seats as given; Adaptive learns each backend's limit from its
 * answers (common/req/adaptlimit.h), serverConcurrencyLimit the start. */
enum fg_seat_limit_mode { FG_SEAT_LIMIT_STATIC = 0, FG_SEAT_LIMIT_ADAPTIVE };
#define FG_ADAPTIVE_MAX_FACTOR 4u

/* workEstimates: how a request is priced in its queue set (queueset.h):
 * PerLevel, the level's learned service time; PerClass, its (flow schema,
 * verb class)'s (common/fq/classguess.h). */
enum fg_work_estimates { FG_WORK_ESTIMATES_PER_LEVEL = 0, FG_WORK_ESTIMATES_PER_CLASS };

/* answerLoad: which clients' answers carry fairgate's LOAD attribute
 * (protocol.md, control/load.h): none, trusted sources only, or all. */
enum fg_answer_load_mode { FG_ANSWER_LOAD_OFF = 0, FG_ANSWER_LOAD_TRUSTED, FG_ANSWER_LOAD_ALL };

struct fg_settings {
	enum fg_io_mode io;
	struct fg_endpoint listen;
	char control_socket[108];
	char control_socket_group[FG_GROUP_NAME_MAX]; /* group name or gid of the socket file; "": the daemon's */
	uint32_t control_socket_mode; /* permission bits of the socket file, within FG_CONTROL_SOCKET_MODE_MASK */
	int log_format;              /* enum fg_log_format (common/base/logfmt.h) */
	int log_level;               /* enum fg_log_level: lines below it are not written */
	struct fg_opt_listen http;   /* the HTTP endpoint (control/http.h); restart-only */
	uint32_t seat_limit;
	int seat_limit_mode;         /* enum fg_seat_limit_mode */
	int work_estimates;          /* enum fg_work_estimates */
	int64_t work_estimate_min_ns, work_estimate_max_ns; /* bounds of a class's service-time estimate */
	uint32_t seat_limit_min;     /* Adaptive: the levels never get less (while a backend is usable) */
	uint32_t seat_limit_max;     /* Adaptive: nor more; 0: FG_ADAPTIVE_MAX_FACTOR x seat_limit */
	int64_t queue_wait_ns;
	int64_t backend_timeout_ns;
	int64_t shutdown_grace_ns;
	uint32_t retry_after_ms;
	uint32_t eject_after;        /* backend timeouts in a row before ejection */
	int64_t eject_ns, max_eject_ns;
	uint32_t max_requests;
	uint32_t workers;            /* worker cores (DPDK mode); restart-only */
	int64_t allotment_period_ns; /* how often seats are re-split between workers */
	int64_t borrowing_period_ns; /* how often the levels' current limits are recomputed */
	bool strict_fields;          /* unknown fields in objects are errors, not warnings */
	bool flowcontrol_metrics;    /* per (level, schema) metrics (common/req/apfstats.h); restart-only */
	bool metrics_flow_labels;    /* /metrics names the busiest flows (tenants); default off */
	int64_t max_extra_latency_ns; /* cap on any request's extra latency (never stretched) */
	enum fg_addr_validation addr_validation;
	int answer_load;             /* enum fg_answer_load_mode */
	/* Sources whose identity attributes are believed (trust boundary). */
	uint32_t n_trusted;
	struct fg_cidr trusted[FG_MAX_CIDRS];
	/* Identities for untrusted sources, first match wins; else anonymous. */
	uint32_t n_identities;
	struct fg_source_identity identities[FG_MAX_SOURCE_IDENTITIES];
	uint32_t n_backends;
	struct fg_backend_cfg backends[FG_MAX_BACKENDS];
	/* Besides root, who may change the configuration through the socket. */
	uint32_t n_admin_uids, n_admin_gids;
	uint32_t admin_uids[FG_CONTROL_MAX_ADMINS], admin_gids[FG_CONTROL_MAX_ADMINS];
	uint32_t config_history;     /* configuration generations kept for rollback (control/history.h) */
	/* Cluster mode (control/cluster.h); restart-only.  No endpoints: off. */
	char cluster_etcd[FG_CLUSTER_ETCD_MAX];   /* "http://HOST:PORT[,...]" */
	char cluster_name[FG_CLUSTER_NAME_MAX];
	char cluster_member[FG_CLUSTER_MEMBER_MAX]; /* "": <hostname>-<listen address> */
	/* TLS and authentication to etcd ("": none). */
	char cluster_etcd_ca[FG_CLUSTER_PATH_MAX], cluster_etcd_cert[FG_CLUSTER_PATH_MAX],
		cluster_etcd_key[FG_CLUSTER_PATH_MAX];
	char cluster_etcd_server_name[FG_CLUSTER_USER_MAX];
	char cluster_etcd_user[FG_CLUSTER_USER_MAX];
	char cluster_etcd_password_file[FG_CLUSTER_PATH_MAX];
	int64_t cluster_period_ns;
	int64_t cluster_lease_ttl_ns;
	uint32_t cluster_expected_members;         /* 0: the most members seen at once */
};

void fg_settings_defaults(struct fg_settings *s);

/*
 * Apply a FairgateSettings object (JSON) on top of *s: every field of its
 * spec through the settings table; unknown fields are errors.  On any error
 * *s is left unchanged and every error is in *errs; returns 0 or -EINVAL.
 */
int fg_settings_apply_json(struct fg_settings *s, const uint8_t *buf, size_t len,
			   struct fg_errors *errs);

/* Parse "A.B.C.D:PORT[@aa:bb:cc:dd:ee:ff][,seats=N]" and append a backend.  0 or -EINVAL/-ENOSPC. */
int fg_settings_add_backend(struct fg_settings *s, const char *spec);

/* The index of the backend at ep's address (ip and port), or -1. */
int fg_settings_find_backend(const struct fg_settings *s, const struct fg_endpoint *ep);

/* A new backends list (an apply, a reload) keeps the administrative state
 * (drain, disabled) of the backends cur already had at the same address. */
void fg_settings_keep_backend_admin(struct fg_settings *next, const struct fg_settings *cur);

/* Cross-field checks after all sources are applied.  0 or -EINVAL. */
/* serverConcurrencyLimitMax in force: as set, or FG_ADAPTIVE_MAX_FACTOR x
 * serverConcurrencyLimit (at most FG_MAX_SEAT_LIMIT). */
uint32_t fg_settings_seat_limit_max(const struct fg_settings *s);

int fg_settings_validate(const struct fg_settings *s, struct fg_errors *errs);

/*
 * Capacity sanity: one warning line per way the backends cannot take what
 * the levels admit (their capacities sum below serverConcurrencyLimit, or a
 * backend has no capacity): fairness then moves into the backends' socket
 * queues.  Returns how many.
 */
unsigned fg_settings_warn_capacity(const struct fg_settings *s, struct fg_errors *warnings);

#endif
