/* SPDX-License-Identifier: Apache-2.0 */
/* http — /healthz, /readyz and /metrics on libmicrohttpd; see http.h. */
#include "http.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <urcu-qsbr.h>

#include "clock.h"
#include "cluster.h"
#include "defs.h"
#include "expfmt.h"
#include "flowcontrol.h"
#include "metrics_apf.h"
#include "sharingview.h"
#include "http_debug.h"
#include "httpguard.h"
#include "load.h"
#include "proto.h"

struct fg_http {
	struct MHD_Daemon *mhd;
	struct fg_httpguard *guard;
	struct fg_http_view view;
	char address[32];
};

/* --- RCU registration of libmicrohttpd's thread ----------------------------
 * The thread is libmicrohttpd's: it registers on its first request and a
 * thread-specific key's destructor unregisters it when the thread exits
 * (MHD_stop_daemon joins it), so no registered reader outlives the daemon. */

static pthread_key_t rcu_key;
static pthread_once_t rcu_key_once = PTHREAD_ONCE_INIT;
static int rcu_key_err;

static void rcu_key_unregister(void *registered)
{
	(void)registered;
	rcu_unregister_thread();
}

static void rcu_key_create(void) { rcu_key_err = pthread_key_create(&rcu_key, rcu_key_unregister); }

/* Registered and offline on return; false when the key could not be made. */
static bool rcu_reader_ready(void)
{
	if (pthread_once(&rcu_key_once, rcu_key_create) || rcu_key_err)
		return false;
	if (pthread_getspecific(rcu_key))
		return true;
	if (pthread_setspecific(rcu_key, (void *)1))
		return false;
	rcu_register_thread();
	rcu_thread_offline();
	return true;
}

/* --- process metrics, from /proc ------------------------------------------ */

/* At most cap-1 bytes of a /proc file, NUL-terminated; -1 on error. */
static ssize_t read_small(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, cap - 1, f);
	fclose(f);
	buf[n] = 0;
	return (ssize_t)n;
}

/* The boot time in Unix seconds ("btime" of /proc/stat), or 0. */
static uint64_t boot_time(void)
{
	FILE *f = fopen("/proc/stat", "re");
	if (!f)
		return 0;
	char line[256];
	unsigned long long bt = 0;
	for (unsigned i = 0; i < 4096 && fgets(line, sizeof(line), f); i++) /* a line per CPU and a few more */
		if (sscanf(line, "btime %llu", &bt) == 1)
			break;
	fclose(f);
	return bt;
}

static void process_metrics(struct fg_expfmt *e)
{
	char stat[1024];
	long ticks = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	const char *rest = read_small("/proc/self/stat", stat, sizeof(stat)) > 0 ? strrchr(stat, ')') : NULL;
	unsigned long long utime, stime, start, vsize;
	long long rss;
	/* Fields 3.. after "pid (comm)": state, then 14 utime, 15 stime, 22 starttime, 23 vsize, 24 rss. */
	if (rest && ticks > 0 && page > 0 &&
	    sscanf(rest + 1,
		   " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu %llu %lld",
		   &utime, &stime, &start, &vsize, &rss) == 5) {
		fg_expfmt_family(e, "process_cpu_seconds_total", FG_EXPFMT_COUNTER,
				 "Total user and system CPU time spent in seconds.");
		fg_expfmt_double(e, "process_cpu_seconds_total", NULL, 0, (double)(utime + stime) / (double)ticks);
		fg_expfmt_family(e, "process_resident_memory_bytes", FG_EXPFMT_GAUGE, "Resident memory size in bytes.");
		fg_expfmt_u64(e, "process_resident_memory_bytes", NULL, 0,
			      rss > 0 ? (uint64_t)rss * (uint64_t)page : 0);
		fg_expfmt_family(e, "process_virtual_memory_bytes", FG_EXPFMT_GAUGE, "Virtual memory size in bytes.");
		fg_expfmt_u64(e, "process_virtual_memory_bytes", NULL, 0, vsize);
		uint64_t bt = boot_time();
		if (bt) {
			fg_expfmt_family(e, "process_start_time_seconds", FG_EXPFMT_GAUGE,
					 "Start time of the process since unix epoch in seconds.");
			fg_expfmt_double(e, "process_start_time_seconds", NULL, 0,
					 (double)bt + (double)start / (double)ticks);
		}
	}
	struct rlimit rl;
	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		fg_expfmt_family(e, "process_max_fds", FG_EXPFMT_GAUGE, "Maximum number of open file descriptors.");
		fg_expfmt_u64(e, "process_max_fds", NULL, 0, rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur);
	}
	DIR *dir = opendir("/proc/self/fd");
	if (dir) {
		uint64_t n = 0;
		struct dirent *de;
		while ((de = readdir(dir)))
			n += de->d_name[0] != '.';
		closedir(dir);
		fg_expfmt_family(e, "process_open_fds", FG_EXPFMT_GAUGE, "Number of open file descriptors.");
		fg_expfmt_u64(e, "process_open_fds", NULL, 0, n ? n - 1 : 0); /* not the directory's own */
	}
}

/* --- dataplane metrics, from the workers' statistics ----------------------- */

/* Short, stable label values for the decoder's verdicts (proto.h). */
static const char *const malformed_reason[FG_PROTO_ERR__COUNT] = {
	[FG_PROTO_OK] = "ok",
	[FG_PROTO_ETOO_SHORT] = "too-short",
	[FG_PROTO_ETOO_LONG] = "too-long",
	[FG_PROTO_EMAGIC] = "bad-magic",
	[FG_PROTO_EVERSION] = "bad-version",
	[FG_PROTO_ETYPE] = "unknown-type",
	[FG_PROTO_EHDR_LEN] = "bad-header-length",
	[FG_PROTO_EATTR_TRUNC] = "attribute-truncated",
	[FG_PROTO_EATTR_LEN] = "attribute-too-long",
	[FG_PROTO_EATTR_DUP] = "attribute-repeated",
	[FG_PROTO_ETOO_MANY] = "too-many-attributes",
	[FG_PROTO_EREASON] = "unknown-reject-reason",
	[FG_PROTO_EEMPTY] = "empty-attribute",
	[FG_PROTO_ENUL] = "nul-in-attribute",
};
_Static_assert(FG_PROTO_ENUL == FG_PROTO_ERR__COUNT - 1, "a label for every decoder verdict");

/* A per-worker counter or gauge: one sample per worker. */
#define PER_WORKER(e, v, name, type, help, field)                                                  \
	do {                                                                                       \
		fg_expfmt_family(e, name, type, help);                                             \
		for (unsigned w_ = 0; w_ < (v)->n_workers; w_++) {                                 \
			char id_[12];                                                              \
			snprintf(id_, sizeof(id_), "%u", w_);                                      \
			struct fg_expfmt_label l_ = { "worker", id_ };                             \
			fg_expfmt_u64(e, name, &l_, 1, FG_STAT_GET((v)->worker_stats[w_]->field)); \
		}                                                                                  \
	} while (0)

static void single(struct fg_expfmt *e, const char *name, enum fg_expfmt_type type, const char *help, uint64_t v)
{
	fg_expfmt_family(e, name, type, help);
	fg_expfmt_u64(e, name, NULL, 0, v);
}

static void dataplane_metrics(struct fg_expfmt *e, const struct fg_http_view *v)
{
	const enum fg_expfmt_type C = FG_EXPFMT_COUNTER, G = FG_EXPFMT_GAUGE;
	PER_WORKER(e, v, "fairgate_worker_rx_packets_total", C, "Datagrams the worker received.", rx_datagrams);
	PER_WORKER(e, v, "fairgate_worker_tx_packets_total", C,
		   "Datagrams the worker sent or tried to send (failures included).", tx_datagrams);
	PER_WORKER(e, v, "fairgate_worker_tx_failed_total", C,
		   "Datagrams the worker could not send: no buffer, or the I/O layer refused.", tx_failed);
	PER_WORKER(e, v, "fairgate_worker_handoffs_refused_total", C,
		   "Answers for another worker's requests dropped on a full ring (the request times out).",
		   handoff_refused);
	PER_WORKER(e, v, "fairgate_worker_answers_forwarded_total", C,
		   "Backend answers passed to the worker that owns their request.", answers_forwarded);
	PER_WORKER(e, v, "fairgate_worker_config_generation", G, "The configuration generation the worker follows.",
		   config_generation);
	PER_WORKER(e, v, "fairgate_worker_allotment_changes_total", C, "Seat grants the worker applied.",
		   allotment_changes);
	PER_WORKER(e, v, "fairgate_worker_backend_capacity_usable", G,
		   "The listed backends' capacity that can take requests (enabled, up), in seats or backends: "
		   "the levels' limits are scaled by usable / listed.", capacity_usable);
	PER_WORKER(e, v, "fairgate_worker_backend_capacity_listed", G,
		   "The listed backends' capacity (enabled, draining or disabled), in seats when every one has a "
		   "capacity, else in backends; in Adaptive mode the worker's part of serverConcurrencyLimit (where "
		   "the learned limit started).", capacity_total);
	PER_WORKER(e, v, "fairgate_worker_backend_capacity_changes_total", C,
		   "Times the usable or the listed backend capacity (and with them the levels' limits) moved.",
		   capacity_changes);

	struct fg_worker_totals t;
	fg_stats_totals(v->worker_stats, v->n_workers, &t);
	fg_expfmt_family(e, "fairgate_malformed_datagrams_total", C, "Datagrams that failed to decode, by reason.");
	for (int r = 1; r < FG_PROTO_ERR__COUNT; r++) {
		struct fg_expfmt_label l = { "reason", malformed_reason[r] };
		fg_expfmt_u64(e, "fairgate_malformed_datagrams_total", &l, 1, t.malformed_by_err[r]);
	}
	single(e, "fairgate_requests_received_total", C, "Valid requests received.", t.received);
	single(e, "fairgate_requests_dispatched_total", C, "Requests dispatched to a backend.",
	       t.dispatched);
	single(e, "fairgate_requests_responded_total", C, "Backend answers relayed to clients.",
	       t.responded);
	fg_expfmt_family(e, "fairgate_requests_rejected_total", C, "REJECTs answered to valid requests, by reason.");
	for (int r = 1; r < FG_REJECT__COUNT; r++) {
		struct fg_expfmt_label l = { "reason", fg_reject_reason_name(r) };
		fg_expfmt_u64(e, "fairgate_requests_rejected_total", &l, 1, t.rejected[r]);
	}
	single(e, "fairgate_invalid_rejected_total", C, "REJECT invalid answered to undecodable datagrams.",
	       t.invalid_rejected);
	single(e, "fairgate_untrusted_requests_total", C,
	       "Requests from sources outside trustedSources, classified by an assigned identity.",
	       t.untrusted_requests);
	single(e, "fairgate_cookie_challenges_total", C,
	       "REJECT retry-with-cookie: sources asked to prove their address.", t.cookie_challenges);
	single(e, "fairgate_answers_lost_total", C, "Owed REJECTs with no buffer, even from the reserve.",
	       t.answers_lost);
	single(e, "fairgate_answers_unsent_total", C, "Answers counted as responded or rejected that the I/O refused.",
	       t.answers_unsent);
	single(e, "fairgate_answers_without_load_total", C,
	       "answerLoad: answers sent without the LOAD attribute for want of room (protocol.md).",
	       t.answers_without_load);
	/* Gauges: a sum of samples taken at slightly different moments. */
	single(e, "fairgate_buffers_in_use", G, "I/O buffers out of the pool, not counting the answer reserves.",
	       t.buffers_in_use);
	single(e, "fairgate_buffers_pool_size", G, "I/O buffers the pools hold in all (DPDK: one shared pool; socket mode: one per worker).",
	       t.buffers_total);
	single(e, "fairgate_buffers_reserved", G, "I/O buffers kept in the workers' answer reserves.", t.buffers_reserved);
	if (v->allotter) {
		single(e, "fairgate_allotter_rounds_total", C, "Seat allotment rounds run between workers.",
		       FG_STAT_GET(v->allotter->rounds));
		single(e, "fairgate_allotter_signalled_rounds_total", C,
		       "Of the allotment rounds, those run early on a worker's demand signal.",
		       FG_STAT_GET(v->allotter->signalled_rounds));
		single(e, "fairgate_allotter_grants_total", C, "New seat grants handed out by the allotter.",
		       FG_STAT_GET(v->allotter->grants));
	}
}

/* --- the published configuration, read under RCU --------------------------- */

/* The per-level gauges of the configuration, with Kubernetes' names and help. */
static const struct {
	const char *name, *help;
	size_t offset; /* of a uint32_t in struct fg_fc_level */
} level_gauges[] = {
	{ "fairgate_flowcontrol_nominal_limit_seats",
	  "Nominal number of execution seats configured for each priority level",
	  offsetof(struct fg_fc_level, nominal) },
	{ "fairgate_flowcontrol_lower_limit_seats",
	  "Configured lower bound on number of execution seats available to each priority level",
	  offsetof(struct fg_fc_level, min) },
	{ "fairgate_flowcontrol_upper_limit_seats",
	  "Configured upper bound on number of execution seats available to each priority level",
	  offsetof(struct fg_fc_level, max) },
};

/* The borrowing round's per-level figures (borrower.h), Kubernetes' names and help. */
static const struct {
	const char *name, *help;
	size_t offset; /* of a double in struct fg_borrower_level_view */
} borrowing_gauges[] = {
	{ "fairgate_flowcontrol_demand_seats_high_watermark",
	  "High watermark, over last adjustment period, of demand_seats",
	  offsetof(struct fg_borrower_level_view, stats.hwm) },
	{ "fairgate_flowcontrol_demand_seats_average", "Time-weighted average, over last adjustment period, of demand_seats",
	  offsetof(struct fg_borrower_level_view, stats.avg) },
	{ "fairgate_flowcontrol_demand_seats_stdev",
	  "Time-weighted standard deviation, over last adjustment period, of demand_seats",
	  offsetof(struct fg_borrower_level_view, stats.stddev) },
	{ "fairgate_flowcontrol_demand_seats_smoothed", "Smoothed seat demands",
	  offsetof(struct fg_borrower_level_view, stats.smoothed) },
	{ "fairgate_flowcontrol_target_seats", "Seat allocation targets",
	  offsetof(struct fg_borrower_level_view, target) },
};

/* The statistics and targets of the last borrowing round (a copy of the
 * borrower's view: a consistent round). */
static void borrowing_metrics(struct fg_expfmt *e, const struct fg_borrower_view *view)
{
	struct fg_borrower_view *b = view ? malloc(sizeof(*b)) : NULL;
	if (!b)
		return;
	fg_borrower_read(view, b);
	for (size_t g = 0; g < sizeof(borrowing_gauges) / sizeof(borrowing_gauges[0]); g++) {
		fg_expfmt_family(e, borrowing_gauges[g].name, FG_EXPFMT_GAUGE, borrowing_gauges[g].help);
		for (uint32_t i = 0; i < b->n && i < FG_MAX_LEVELS; i++) {
			const struct fg_borrower_level_view *lv = &b->levels[i];
			struct fg_expfmt_label l = { "priority_level", lv->name };
			fg_expfmt_double(e, borrowing_gauges[g].name, &l, 1,
					 *(const double *)((const char *)lv + borrowing_gauges[g].offset));
		}
	}
	fg_expfmt_family(e, "fairgate_flowcontrol_seat_fair_frac", FG_EXPFMT_GAUGE,
			 "Fair fraction of server's concurrency to allocate to each priority level that can use it");
	fg_expfmt_double(e, "fairgate_flowcontrol_seat_fair_frac", NULL, 0, b->fair_frac);
	free(b);
}

/* Each level's fair sharing (sharingview.h): its policy and active flows,
 * and its busiest flows (at most FG_SHARING_TOP_FLOWS a level: a bounded
 * set of series whatever the number of tenants). */
static void sharing_metrics(struct fg_expfmt *e, const struct fg_http_view *v, const struct fg_sharing_level *sl,
			    unsigned n, bool flow_labels)
{
	json_t *sharing = fg_sharing_json(v->worker_stats, v->n_workers, sl, n, FG_SHARING_TOP_FLOWS);
	static const struct {
		const char *name, *help, *field;
	} flow_gauges[] = {
		{ "fairgate_fair_sharing_flow_weight", "A busiest flow's weight (FairSharing flowWeights; 1 without).",
		  "weight" },
		{ "fairgate_fair_sharing_flow_usage_seat_seconds",
		  "UsageBased levels: a busiest flow's decayed usage, seat-seconds per sampling interval.", "usage" },
		{ "fairgate_fair_sharing_flow_seats_in_use", "A busiest flow's seats executing.", "seatsInUse" },
		{ "fairgate_fair_sharing_flow_demand_seats", "A busiest flow's seats executing and waiting.", "demand" },
		{ "fairgate_fair_sharing_flow_deserved_seats",
		  "A busiest flow's weighted max-min share of its level's current limit over the active flows' demands.",
		  "deserved" },
	};
	const char *p = "fairgate_fair_sharing_policy_info", *a = "fairgate_fair_sharing_active_flows";
	fg_expfmt_family(e, p, FG_EXPFMT_GAUGE, "A level's fair-sharing policy (its FairSharing object); always 1.");
	for (unsigned i = 0; i < n; i++) {
		struct fg_expfmt_label l[2] = { { "priority_level", sl[i].name },
						{ "policy", fg_sharing_policy_name(sl[i].policy) } };
		fg_expfmt_u64(e, p, l, 2, 1);
	}
	fg_expfmt_family(e, a, FG_EXPFMT_GAUGE, "Flows with requests waiting or executing (or a usage) in a level.");
	for (unsigned i = 0; i < n; i++) {
		struct fg_expfmt_label l = { "priority_level", sl[i].name };
		json_t *lv = json_object_get(sharing, sl[i].name);
		fg_expfmt_u64(e, a, &l, 1, (uint64_t)json_integer_value(json_object_get(lv, "activeFlows")));
	}
	/* Flow names are tenants' (user names, namespaces): only when asked
	 * (metricsFlowLabels). */
	for (size_t g = 0; flow_labels && g < sizeof(flow_gauges) / sizeof(flow_gauges[0]); g++) {
		fg_expfmt_family(e, flow_gauges[g].name, FG_EXPFMT_GAUGE, flow_gauges[g].help);
		for (unsigned i = 0; i < n; i++) {
			json_t *fl;
			size_t k;
			json_array_foreach(json_object_get(json_object_get(sharing, sl[i].name), "flows"), k, fl) {
				json_t *val = json_object_get(fl, flow_gauges[g].field);
				if (!json_is_number(val))
					continue; /* usage on a MaxMin level */
				struct fg_expfmt_label l[2] = { { "priority_level", sl[i].name },
								{ "flow", json_string_value(json_object_get(fl, "flow")) } };
				fg_expfmt_double(e, flow_gauges[g].name, l, 2, json_number_value(val));
			}
		}
	}
	json_decref(sharing);
}

/* The control thread's count of configuration changes. */
static void change_metrics(struct fg_expfmt *e, const struct fg_config_changes *c)
{
	const char *n = "fairgate_config_changes_total";
	fg_expfmt_family(e, n, FG_EXPFMT_COUNTER, "Configuration changes (apply, delete, SIGHUP reload) published or refused.");
	struct fg_expfmt_label l = { "result", "success" };
	fg_expfmt_u64(e, n, &l, 1, FG_STAT_GET(c->succeeded));
	l.value = "failure";
	fg_expfmt_u64(e, n, &l, 1, FG_STAT_GET(c->failed));
	single(e, "fairgate_config_last_success_timestamp_seconds", FG_EXPFMT_GAUGE,
	       "When the last configuration change was published, Unix seconds; 0: none since start.",
	       FG_STAT_GET(c->last_success_s));
	single(e, "fairgate_config_last_failure_timestamp_seconds", FG_EXPFMT_GAUGE,
	       "When the last configuration change was refused, Unix seconds; 0: none since start.",
	       FG_STAT_GET(c->last_failure_s));
}

static void config_metrics(struct fg_expfmt *e, const struct fg_http_view *v)
{
	rcu_thread_online();
	const struct fg_config *cfg = rcu_dereference(*v->config_ptr);
	if (cfg) {
		single(e, "fairgate_config_generation", FG_EXPFMT_GAUGE,
		       "The generation of the published configuration.", cfg->generation);
		fg_load_metrics(e, v->worker_stats, v->n_workers, cfg->seat_limit);
		fg_expfmt_family(e, "fairgate_queue_wait_limit_seconds", FG_EXPFMT_GAUGE,
				 "queueWaitLimit: the longest a request waits in a queue before REJECT time-out.");
		fg_expfmt_double(e, "fairgate_queue_wait_limit_seconds", NULL, 0, (double)cfg->queue_wait_ns / 1e9);
		for (size_t g = 0; g < sizeof(level_gauges) / sizeof(level_gauges[0]); g++) {
			fg_expfmt_family(e, level_gauges[g].name, FG_EXPFMT_GAUGE, level_gauges[g].help);
			for (uint32_t i = 0; i < cfg->fc->n_levels; i++) {
				const struct fg_fc_level *lv = &cfg->fc->levels[i];
				struct fg_expfmt_label l = { "priority_level", lv->name };
				fg_expfmt_u64(e, level_gauges[g].name, &l, 1,
					      *(const uint32_t *)((const char *)lv + level_gauges[g].offset));
			}
		}
		/* The limit in force: borrowing's, as the workers follow it. */
		const char *cur = "fairgate_flowcontrol_current_limit_seats";
		fg_expfmt_family(e, cur, FG_EXPFMT_GAUGE,
				 "current derived number of execution seats available to each priority level");
		for (uint32_t i = 0; i < cfg->fc->n_levels; i++) {
			struct fg_expfmt_label l = { "priority_level", cfg->fc->levels[i].name };
			fg_expfmt_u64(e, cur, &l, 1, fg_config_level_limit(cfg, i));
		}
		fg_metrics_backends(e, cfg, v->worker_stats, v->n_workers);
		fg_metrics_work_estimates(e, cfg, v->worker_stats, v->n_workers);
	}
	/* The levels' fair sharing, read outside the read-side section. */
	unsigned n_sl = cfg ? (cfg->fc->n_levels < FG_MAX_LEVELS ? cfg->fc->n_levels : FG_MAX_LEVELS) : 0;
	struct fg_sharing_level *sl = n_sl ? calloc(n_sl, sizeof(*sl)) : NULL;
	bool flow_labels = cfg && cfg->metrics_flow_labels;
	for (unsigned i = 0; sl && i < n_sl; i++) {
		const struct fg_fc_level *lv = &cfg->fc->levels[i];
		snprintf(sl[i].name, sizeof(sl[i].name), "%s", lv->name);
		sl[i].policy = lv->policy;
		sl[i].weighted = lv->weighted;
		sl[i].limit = lv->exempt ? 0 : fg_config_level_limit(cfg, i);
	}
	rcu_thread_offline();
	if (sl)
		sharing_metrics(e, v, sl, n_sl, flow_labels);
	free(sl);
	borrowing_metrics(e, v->borrowing);
	fg_cluster_metrics(v->cluster, e);
	if (v->changes)
		change_metrics(e, v->changes);
}

/* What the endpoint's own guard cut (httpguard.h). */
static void guard_metrics(struct fg_expfmt *e, const struct fg_httpguard *g)
{
	struct fg_httpguard_stats st;
	fg_httpguard_stats(g, &st);
	const char *name = "fairgate_http_connections_cut_total";
	fg_expfmt_family(e, name, FG_EXPFMT_COUNTER,
			 "HTTP connections the endpoint shut: a request past its deadline, the oldest request evicted "
			 "for a new connection, a request line with too many query parameters (answered 400).");
	const struct { const char *reason; uint64_t v; } rows[] = {
		{ "deadline", st.deadline_cut }, { "evicted", st.evicted }, { "too-many-parameters", st.too_many_params } };
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct fg_expfmt_label l = { "reason", rows[i].reason };
		fg_expfmt_u64(e, name, &l, 1, rows[i].v);
	}
}

char *fg_http_metrics(const struct fg_http_view *v, size_t *len, int *err)
{
	struct fg_expfmt e;
	fg_expfmt_init(&e);
	process_metrics(&e);
	fg_expfmt_family(&e, "fairgate_build_info", FG_EXPFMT_GAUGE, "fairgate's version; always 1.");
	struct fg_expfmt_label version = { "version", FG_VERSION };
	fg_expfmt_u64(&e, "fairgate_build_info", &version, 1, 1);
	config_metrics(&e, v);
	dataplane_metrics(&e, v);
	fg_metrics_busy(&e, v->worker_stats, v->n_workers);
	fg_metrics_virtual_time(&e, v->worker_stats, v->n_workers);
	fg_metrics_flowcontrol(&e, v->worker_stats, v->n_workers);
	if (v->guard)
		guard_metrics(&e, v->guard);
	return fg_expfmt_finish(&e, len, err);
}

/* --- requests --------------------------------------------------------------- */

/* Why the daemon is not ready, or NULL when it is. */
static const char *not_ready(const struct fg_http_view *v, char *buf, size_t cap)
{
	if (FG_READ_ONCE(*v->shutting_down))
		return "shutting down: draining";
	rcu_thread_online();
	bool published = rcu_dereference(*v->config_ptr) != NULL;
	rcu_thread_offline();
	if (!published)
		return "no configuration published";
	uint64_t now = fg_now_ns();
	for (unsigned w = 0; w < v->n_workers; w++) {
		/* A busy worker beats between our clock read and this load: a beat
		 * later than now is fresh, not 584 years old. */
		uint64_t beat = FG_STAT_GET(v->worker_stats[w]->heartbeat_ns);
		if (!beat || (now > beat && now - beat > FG_HTTP_STALL_NS)) {
			if (beat)
				snprintf(buf, cap, "worker %u is not polling (no heartbeat for %.1fs)", w,
					 (double)(now - beat) / 1e9);
			else
				snprintf(buf, cap, "worker %u is not polling (not started yet)", w);
			return buf;
		}
	}
	return NULL;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *text, const char *allow)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO; /* out of memory: libmicrohttpd closes the connection */
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	if (allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* The first query parameter's name, printable ASCII and cut short, for the 400 line. */
static enum MHD_Result first_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	(void)kind;
	(void)value;
	char *out = cls;
	size_t n = 0;
	for (const char *p = key ? key : ""; *p && n < 48; p++)
		out[n++] = *p >= 0x20 && *p < 0x7f ? *p : '?';
	out[n] = 0;
	return MHD_NO; /* the first is enough */
}

static enum MHD_Result serve_metrics(struct fg_http *h, struct MHD_Connection *c)
{
	size_t len;
	int err;
	if (!rcu_reader_ready())
		return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot read the configuration\n", NULL);
	char *body = fg_http_metrics(&h->view, &len, &err);
	if (!body) {
		char line[96];
		snprintf(line, sizeof(line), "cannot build the metrics: %s\n", strerror(-err));
		return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, line, NULL);
	}
	return fg_http_respond(c, MHD_HTTP_OK, body, len, FG_EXPFMT_CONTENT_TYPE);
}

/* /debug/fairgate/load: the load state for the tier in front (load.h). */
static enum MHD_Result serve_load(struct fg_http *h, struct MHD_Connection *c)
{
	if (!rcu_reader_ready())
		return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot read the configuration\n", NULL);
	rcu_thread_online();
	const struct fg_config *cfg = rcu_dereference(h->view.config_ptr ? *h->view.config_ptr : NULL);
	uint32_t seat_limit = cfg ? cfg->seat_limit : 0;
	rcu_thread_offline();
	json_t *doc = fg_load_json(h->view.worker_stats, h->view.n_workers, seat_limit);
	char *body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	if (!body)
		return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot build the load state: out of memory\n", NULL);
	size_t len = strlen(body);
	char *line = realloc(body, len + 2); /* one line, newline-terminated */
	if (!line) {
		free(body);
		return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot build the load state: out of memory\n", NULL);
	}
	line[len] = '\n';
	line[len + 1] = '\0';
	return fg_http_respond(c, MHD_HTTP_OK, line, len + 1, "application/json");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size, void **req)
{
	struct fg_http *h = cls;
	(void)version;
	(void)upload_data;
	(void)req;
	if (*upload_data_size) /* a body is never read: the answer below is queued before it */
		*upload_data_size = 0;
	fg_httpguard_answering(h->guard, c);
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed: only GET and HEAD\n", "GET, HEAD");
	if (h->view.vis && fg_http_debug_route(url)) /* their own query parameters (http_debug.h) */
		return fg_http_debug_serve(h->view.vis, c, url);
	bool metrics = !strcmp(url, "/metrics"), healthz = !strcmp(url, "/healthz"), readyz = !strcmp(url, "/readyz");
	bool load = !strcmp(url, "/debug/fairgate/load");
	if (!metrics && !healthz && !readyz && !load)
		return reply(c, MHD_HTTP_NOT_FOUND,
			     h->view.vis ? "not found: the paths are /metrics, /healthz, /readyz, /debug/fairgate/load, "
					   FG_HTTP_DEBUG_PREFIX "dump_priority_levels, dump_queues and dump_requests, and "
					   FG_HTTP_VISIBILITY_PREFIX "LEVEL/pendingrequests\n"
					 : "not found: the paths are /metrics, /healthz, /readyz and /debug/fairgate/load\n",
			     NULL);
	char arg[49] = "";
	if (MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, first_arg, arg) > 0) {
		char line[128];
		snprintf(line, sizeof(line), "bad request: unknown query parameter \"%s\" (%s takes none)\n", arg, url);
		return reply(c, MHD_HTTP_BAD_REQUEST, line, NULL);
	}
	if (healthz)
		return reply(c, MHD_HTTP_OK, "ok\n", NULL);
	if (load)
		return serve_load(h, c);
	if (readyz) {
		char why[96], line[128];
		if (!rcu_reader_ready())
			return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot read the configuration\n", NULL);
		const char *no = not_ready(&h->view, why, sizeof(why));
		if (!no)
			return reply(c, MHD_HTTP_OK, "ready\n", NULL);
		snprintf(line, sizeof(line), "not ready: %s\n", no);
		return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, line, NULL);
	}
	return serve_metrics(h, c);
}

struct fg_http *fg_http_start(const struct fg_endpoint *ep, const struct fg_http_view *view, char *errbuf,
			      size_t errlen)
{
	struct fg_http *h = calloc(1, sizeof(*h));
	if (!h) {
		snprintf(errbuf, errlen, "out of memory");
		return NULL;
	}
	h->view = *view;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = ep->ip, .sin_port = ep->port };
	char want[32];
	fg_endpoint_format(ep, want, sizeof(want));
	h->guard = fg_httpguard_create(errbuf, errlen);
	if (!h->guard) {
		free(h);
		return NULL;
	}
	h->view.guard = h->guard;
	errno = 0;
	/* No MHD_USE_ERROR_LOG: a hostile client must not be able to fill stderr. */
	h->mhd = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD, 0, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR,
				  (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_LIMIT,
				  (unsigned int)(FG_HTTP_MAX_CONNECTIONS + FG_HTTP_SPARE_CONNECTIONS),
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)FG_HTTP_TIMEOUT_S,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)FG_HTTP_CONNECTION_MEMORY,
				  MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)FG_HTTP_THREADS,
				  MHD_OPTION_NOTIFY_CONNECTION, fg_httpguard_on_connection, h->guard,
				  MHD_OPTION_NOTIFY_COMPLETED, fg_httpguard_on_completed, h->guard,
				  MHD_OPTION_URI_LOG_CALLBACK, fg_httpguard_on_uri, h->guard, MHD_OPTION_END);
	if (!h->mhd) {
		snprintf(errbuf, errlen, "cannot serve HTTP on %s (httpListen): %s", want,
			 errno ? strerror(errno) : "libmicrohttpd refused to start");
		fg_httpguard_free(h->guard);
		free(h);
		return NULL;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_BIND_PORT);
	struct fg_endpoint bound = *ep;
	if (info && info->port)
		bound.port = htons(info->port);
	fg_endpoint_format(&bound, h->address, sizeof(h->address));
	return h;
}

const char *fg_http_address(const struct fg_http *h) { return h->address; }

void fg_http_stop(struct fg_http *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->mhd);
	fg_httpguard_free(h->guard);
	free(h);
}
