/* SPDX-License-Identifier: Apache-2.0 */
/* status — aggregate worker statistics into the status document. */
#include "status.h"

#include <urcu-qsbr.h>

#include "backendpool.h"
#include "clock.h"
#include "cluster.h"
#include "control.h"
#include "defs.h"
#include "proto.h"
#include "sharingview.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* {reason: count} of the reasons that occurred. */
static json_t *reasons_json(const uint64_t by[FG_REJECT__COUNT])
{
	json_t *o = json_object();
	for (int r = 1; r < FG_REJECT__COUNT; r++)
		if (by[r])
			json_object_set_new(o, fg_reject_reason_name(r), json_integer((json_int_t)by[r]));
	return o;
}

static json_t *flows_json(const struct fg_control_view *v)
{
	json_t *arr = json_array();
	for (unsigned w = 0; w < v->n_workers; w++) {
		struct fg_worker_stats *s = v->worker_stats[w];
		for (unsigned i = 0; i < FG_FLOW_TABLE_SIZE; i++) {
			/* A copy checked against reuse: never a name mixed from two flows. */
			struct fg_flow_snapshot f;
			if (!fg_stats_flow_read(s, i, &f) || !f.received)
				continue;
			json_t *row = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:i}",
				"priorityLevel", f.level < FG_MAX_LEVELS ? s->levels[f.level].name : "?", "flow", f.name,
				"received", (json_int_t)f.received, "dispatched", (json_int_t)f.dispatched,
				"responded", (json_int_t)f.responded, "rejected", (json_int_t)f.rejected,
				"waiting", (json_int_t)f.waiting, "executing", (json_int_t)f.executing, "worker", (int)w);
			if (row) { /* names are valid UTF-8 by construction: defensive */
				json_object_set_new(row, "rejectedBy", reasons_json(f.rejected_by));
				json_object_set_new(row, "weight", json_real((f.weight ? f.weight : FG_FC_WEIGHT_ONE) /
									    (double)FG_FC_WEIGHT_ONE));
				json_object_set_new(row, "seatsWaiting", json_integer(f.seats_waiting));
				json_object_set_new(row, "seatsExecuting", json_integer(f.seats_executing));
				if (f.usage_us)
					json_object_set_new(row, "usage", json_real((double)f.usage_us / 1e6));
				json_array_append_new(arr, row);
			}
		}
	}
	return arr;
}

/* A level's borrowing figures (borrowing.md), or NULL when the view has no such level. */
static json_t *level_borrowing_json(const struct fg_borrower_view *b, const char *name)
{
	for (uint32_t i = 0; b && i < b->n && i < FG_MAX_LEVELS; i++) {
		const struct fg_borrower_level_view *l = &b->levels[i];
		if (strcmp(l->name, name))
			continue;
		return json_pack("{s:i, s:i, s:i, s:i, s:i, s:f, s:{s:f, s:f, s:f, s:f, s:f}}", "nominal", (int)l->nominal,
				 "lower", (int)l->min, "upper", (int)l->max, "current", (int)l->current,
				 "minCurrent", (int)l->lower, "target", l->target, "demand", "now", l->demand, "average",
				 l->stats.avg, "stdev", l->stats.stddev, "highWatermark", l->stats.hwm, "smoothed",
				 l->stats.smoothed);
	}
	return NULL;
}

/* The borrowing rounds, or null. */
static json_t *borrowing_json(const struct fg_borrower_view *b)
{
	static const char *const cases[] = { "none", "atMinimum", "between", "fair" };
	if (!b)
		return json_null();
	return json_pack("{s:f, s:I, s:I, s:s, s:I, s:f, s:f}", "periodSeconds", (double)b->period_ns / 1e9,
			 "rounds", (json_int_t)b->rounds, "backstops", (json_int_t)b->backstops, "case",
			 b->kase < 4 ? cases[b->kase] : "?", "remaining", (json_int_t)b->remaining, "fairFrac",
			 b->fair_frac, "lastRoundMicroseconds", (double)b->round_ns / 1e3);
}

/* A consistent copy of the borrower's view (malloc'd), or NULL. */
static struct fg_borrower_view *borrowing_copy(const struct fg_control_view *v)
{
	struct fg_borrower_view *b = v->borrowing ? malloc(sizeof(*b)) : NULL;
	if (b)
		fg_borrower_read(v->borrowing, b);
	return b;
}

/* Levels summed over workers by name, in the order the first worker has them;
 * with each configured level's fair sharing (sharingview.h), `sl` giving
 * their policies (their limits are filled in here). */
static json_t *levels_json(const struct fg_control_view *v, const struct fg_borrower_view *b,
			   struct fg_sharing_level *sl, unsigned n_sl)
{
	json_t *arr = json_array();
	struct fg_level_total *t = calloc(FG_MAX_LEVELS, sizeof(*t));
	unsigned n = t ? fg_stats_levels_total(v->worker_stats, v->n_workers, t, FG_MAX_LEVELS) : 0;
	for (unsigned i = 0; i < n; i++)
		json_array_append_new(arr, json_pack("{s:s, s:i, s:i, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}", "name",
			t[i].name, "seatLimit", (int)t[i].limit, "queues", (int)t[i].queues, "live", t[i].live,
			"seatsInUse", (json_int_t)t[i].seats_in_use, "waiting", (json_int_t)t[i].waiting,
			"executing", (json_int_t)t[i].executing, "received", (json_int_t)t[i].received,
			"dispatched", (json_int_t)t[i].dispatched, "responded", (json_int_t)t[i].responded,
			"rejected", (json_int_t)t[i].rejected, "rejectedBy", reasons_json(t[i].rejected_by)));
	for (unsigned k = 0; k < n_sl; k++)
		for (unsigned i = 0; i < n; i++)
			if (!strcmp(t[i].name, sl[k].name))
				sl[k].limit = t[i].limit;
	json_t *sharing = fg_sharing_json(v->worker_stats, v->n_workers, sl, n_sl, FG_SHARING_TOP_FLOWS);
	for (unsigned i = 0; i < n; i++) {
		json_t *lb = level_borrowing_json(b, t[i].name);
		json_t *row = json_array_get(arr, i);
		json_object_set_new(row, "seatsWaiting", json_integer((json_int_t)t[i].seats_waiting));
		if (lb)
			json_object_set_new(row, "borrowing", lb);
		json_t *fs = json_object_get(sharing, t[i].name);
		if (fs) {
			json_object_set_new(fs, "usageFlowsOverflowed", json_integer((json_int_t)t[i].usage_overflowed));
			json_object_set(row, "fairSharing", fs);
		}
	}
	json_decref(sharing);
	free(t);
	return arr;
}

json_t *fg_status_level_json(const struct fg_control_view *v, const char *name)
{
	struct fg_level_total *t = name ? calloc(FG_MAX_LEVELS, sizeof(*t)) : NULL;
	unsigned n = t ? fg_stats_levels_total(v->worker_stats, v->n_workers, t, FG_MAX_LEVELS) : 0;
	json_t *o = NULL;
	for (unsigned i = 0; i < n && !o; i++)
		if (!strcmp(t[i].name, name))
			o = json_pack("{s:i, s:I, s:I, s:I, s:I, s:o}", "seatLimit", (int)t[i].limit, "seatsInUse",
				      (json_int_t)t[i].seats_in_use, "waiting", (json_int_t)t[i].waiting, "executing",
				      (json_int_t)t[i].executing, "rejected", (json_int_t)t[i].rejected, "rejectedBy",
				      reasons_json(t[i].rejected_by));
	free(t);
	return o;
}

/* Per worker: what crossed between workers, and the seat grants applied. */
static json_t *workers_json(const struct fg_control_view *v)
{
	json_t *arr = json_array();
	for (unsigned w = 0; w < v->n_workers; w++) {
		struct fg_worker_stats *s = v->worker_stats[w];
		json_array_append_new(arr, json_pack("{s:i, s:I, s:I, s:I, s:I, s:I, s:I}", "worker", (int)w,
			"datagramsReceived", (json_int_t)FG_STAT_GET(s->rx_datagrams),
			"requestsReceived", (json_int_t)FG_STAT_GET(s->received),
			"answersForwarded", (json_int_t)FG_STAT_GET(s->answers_forwarded),
			"handoffRefused", (json_int_t)FG_STAT_GET(s->handoff_refused),
			"allotmentChanges", (json_int_t)FG_STAT_GET(s->allotment_changes),
			"configGeneration", (json_int_t)FG_STAT_GET(s->config_generation)));
		/* A worker that could not follow the last configuration says why. */
		json_object_set_new(json_array_get(arr, w), "busyRatio", json_real(FG_STAT_GET(s->busy_ppm) / 1e6));
		/* The backends' capacity the levels' limits follow (issue 29). */
		json_object_set_new(json_array_get(arr, w), "backendCapacityUsable",
				    json_integer(FG_STAT_GET(s->capacity_usable)));
		json_object_set_new(json_array_get(arr, w), "backendCapacityListed",
				    json_integer(FG_STAT_GET(s->capacity_total)));
		uint32_t err = FG_STAT_GET(s->config_error);
		json_object_set_new(json_array_get(arr, w), "configError", err ? json_string(strerror((int)err)) : json_null());
	}
	return arr;
}

/* A time on the workers' clock (monotonic, clock.h) as UTC RFC 3339, or null. */
static json_t *wall_time(uint64_t mono_ns)
{
	if (!mono_ns)
		return json_null();
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	uint64_t now = fg_now_ns();
	int64_t wall_ns = (int64_t)rt.tv_sec * (int64_t)FG_NS_PER_SEC + rt.tv_nsec - ((int64_t)now - (int64_t)mono_ns);
	time_t secs = (time_t)(wall_ns / (int64_t)FG_NS_PER_SEC);
	struct tm tm;
	char buf[40];
	gmtime_r(&secs, &tm);
	size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, sizeof(buf) - n, ".%03dZ", (int)(wall_ns % (int64_t)FG_NS_PER_SEC / (int64_t)FG_NS_PER_MS));
	return json_string(buf);
}

/* The administrative state as an operator reads it: a drain shows whether
 * it is done. */
static const char *admin_word(uint8_t admin, uint64_t outstanding)
{
	if (admin == FG_BACKEND_DRAIN)
		return outstanding ? "draining" : "drained";
	return fg_backend_admin_name(admin);
}

/* Each configured backend over the workers (metrics_apf.h has the same);
 * a removed one while requests are still in flight there. */
static json_t *backends_json(const struct fg_control_view *v, const struct fg_config *cfg)
{
	static const char *const states[] = { "up", "ejected", "probing" };
	json_t *arr = json_array();
	for (uint32_t b = 0; b < cfg->n_backends; b++) {
		const struct fg_backend_cfg *bc = &cfg->backends[b];
		struct fg_backend_total t;
		fg_stats_backend_total(v->worker_stats, v->n_workers, b, &t);
		if (bc->admin == FG_BACKEND_REMOVED && !t.outstanding)
			continue;
		char addr[64], mac[24];
		fg_endpoint_format(&bc->ep, addr, sizeof(addr));
		/* One word when the workers agree; else the worst state seen. */
		const char *state = states[t.in_state[1] ? 1 : t.in_state[2] ? 2 : 0];
		json_t *row = json_pack("{s:s, s:s, s:i, s:I, s:I, s:I, s:I}", "address", addr, "state", state,
					"workersUp", (int)t.in_state[0], "outstandingSeats", (json_int_t)t.outstanding,
					"capacitySeats", (json_int_t)t.capacity, "timeouts", (json_int_t)t.timeouts,
					"ejections", (json_int_t)t.ejections);
		json_object_set_new(row, "admin", json_string(admin_word(bc->admin, t.outstanding)));
		json_object_set_new(row, "dispatched", json_integer((json_int_t)t.dispatched));
		json_object_set_new(row, "ejectedUntil", t.in_state[1] ? wall_time(t.until_ns) : json_null());
		json_object_set_new(row, "lastChange", wall_time(t.last_change_ns));
		/* Stalled: no answer for long while busy (backendpool.h). */
		json_object_set_new(row, "stalled", json_boolean(t.stalled > 0));
		json_object_set_new(row, "stalls", json_integer((json_int_t)t.stalls));
		json_object_set_new(row, "latencyMs", json_real((double)t.latency_ns / 1e6));
		if (cfg->adaptive) { /* adaptlimit.h */
			json_object_set_new(row, "learnedLimitSeats", json_integer((json_int_t)t.learned_limit));
			json_object_set_new(row, "noloadLatencyMs", json_real((double)t.noload_ns / 1e6));
			json_object_set_new(row, "limitDecision", json_string(fg_adapt_reason_name(t.limit_reason)));
		}
		if (v->settings->io == FG_IO_DPDK) {
			/* static: given as @MAC; arp: learned; arp-asking: not answered yet. */
			uint8_t m[6];
			memcpy(m, bc->ep.mac, sizeof(m));
			int learned = bc->static_mac || !v->backend_mac ? -1 : v->backend_mac(v->backend_mac_ctx, bc->ep.ip, m);
			snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
			json_object_set_new(row, "mac", bc->static_mac || learned == 1 ? json_string(mac) : json_null());
			json_object_set_new(row, "macSource", json_string(bc->static_mac ? "static"
									  : learned == 1 ? "arp" : "arp-asking"));
		}
		json_array_append_new(arr, row);
	}
	return arr;
}

/* The allotter's rounds (several workers), or null. */
static json_t *allotter_json(const struct fg_control_view *v)
{
	if (!v->allotter)
		return json_null();
	return json_pack("{s:I, s:I, s:I}", "rounds", (json_int_t)FG_STAT_GET(v->allotter->rounds),
			 "roundsOnSignal", (json_int_t)FG_STAT_GET(v->allotter->signalled_rounds),
			 "grants", (json_int_t)FG_STAT_GET(v->allotter->grants));
}

/* Capacity sanity (operations.md, "Backends"): the settings' warnings, and
 * requests that had to wait for backend room since start. */
static json_t *capacity_warnings(const struct fg_control_view *v, uint64_t held)
{
	struct fg_errors w = { .len = 0 };
	fg_settings_warn_capacity(v->settings, &w);
	if (held)
		fg_errors_add(&w, "counters.heldForBackend",
			      "%llu request(s) waited for backend room (every usable backend was at its capacity): "
			      "the backends, not the levels, were the bottleneck", (unsigned long long)held);
	json_t *out = json_array();
	for (const char *p = w.text; *p;) {
		size_t n = strcspn(p, "\n");
		json_array_append_new(out, json_stringn(p, n));
		p += n + (p[n] ? 1 : 0);
	}
	return out;
}

json_t *fg_status_json(const struct fg_control_view *v)
{
	struct fg_worker_totals t;
	fg_stats_totals(v->worker_stats, v->n_workers, &t);
	json_t *rejected = json_object(), *bad = json_object();
	for (int r = 1; r < FG_REJECT__COUNT; r++)
		json_object_set_new(rejected, fg_reject_reason_name(r), json_integer((json_int_t)t.rejected[r]));
	for (int e = 1; e < FG_PROTO_ERR__COUNT; e++)
		if (t.malformed_by_err[e])
			json_object_set_new(bad, fg_proto_strerror(e), json_integer((json_int_t)t.malformed_by_err[e]));

	rcu_thread_online();
	struct fg_config *cfg = rcu_dereference(*v->config_ptr);
	json_int_t generation = (json_int_t)cfg->generation;
	json_int_t n_backends = 0;
	for (uint32_t b = 0; b < cfg->n_backends; b++)
		n_backends += cfg->backends[b].admin != FG_BACKEND_REMOVED;
	json_int_t server_limit = (json_int_t)cfg->seat_limit;
	bool adaptive = cfg->adaptive;
	json_t *backends = backends_json(v, cfg);
	unsigned n_sl = cfg->fc->n_levels < FG_MAX_LEVELS ? cfg->fc->n_levels : FG_MAX_LEVELS;
	struct fg_sharing_level *sl = calloc(n_sl ? n_sl : 1, sizeof(*sl));
	for (unsigned i = 0; sl && i < n_sl; i++) {
		const struct fg_fc_level *l = &cfg->fc->levels[i];
		snprintf(sl[i].name, sizeof(sl[i].name), "%s", l->name);
		sl[i].policy = l->policy;
		sl[i].weighted = l->weighted;
	}
	rcu_thread_offline();
	struct fg_borrower_view *borrow = borrowing_copy(v);
	json_t *level = levels_json(v, borrow, sl, sl ? n_sl : 0);
	free(sl);
	json_t *borrowing = borrowing_json(borrow);
	free(borrow);

	char listen[32];
	fg_endpoint_format(&v->settings->listen, listen, sizeof(listen));
	json_t *doc = json_pack("{s:s, s:s, s:s, s:f, s:I, s:I, s:I, s:b, s:o, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:I, s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:I}, s:o, s:o}",
		"version", FG_VERSION,
		"io", v->settings->io == FG_IO_DPDK ? "dpdk" : "socket",
		"listen", listen,
		"uptimeSeconds", (double)(fg_now_ns() - v->start_ns) / 1e9,
		"configGeneration", generation,
		"serverConcurrencyLimit", server_limit,
		"backends", n_backends,
		"shuttingDown", FG_READ_ONCE(*v->shutting_down) ? 1 : 0,
		"workers", workers_json(v),
		"allotter", allotter_json(v),
		"counters",
		"datagramsReceived", (json_int_t)t.rx_datagrams,
		"requestsReceived", (json_int_t)t.received,
		"dispatched", (json_int_t)t.dispatched,
		"responded", (json_int_t)t.responded,
		"rejectedTotal", (json_int_t)t.rejected_total,
		"malformed", (json_int_t)t.rx_malformed,
		"malformedByReason", bad,
		"invalidRejected", (json_int_t)t.invalid_rejected,
		"unexpected", (json_int_t)t.rx_unexpected,
		"responsesUnmatched", (json_int_t)t.responses_unmatched,
		"rejected", rejected,
		"datagramsSent", (json_int_t)(t.tx_datagrams > t.tx_failed ? t.tx_datagrams - t.tx_failed : 0), /* what the I/O took */
		"sendFailed", (json_int_t)t.tx_failed,
		"flowsOverflow", (json_int_t)t.flows_overflow,
		"buffersInUse", (json_int_t)t.buffers_in_use, /* reserves are not in use */
		"backendEjections", (json_int_t)t.backend_ejections,
		"heldForBackend", (json_int_t)t.held_for_backend,
		"priorityLevels", level,
		"flows", flows_json(v));
	/* The trust boundary (security.md): requests classified by their
	 * source's identity, and sources asked to prove their address. */
	json_t *counters = json_object_get(doc, "counters");
	json_object_set_new(counters, "untrustedRequests", json_integer((json_int_t)t.untrusted_requests));
	json_object_set_new(counters, "cookieChallenges", json_integer((json_int_t)t.cookie_challenges));
	json_object_set_new(counters, "buffersReserved", json_integer((json_int_t)t.buffers_reserved));
	json_object_set_new(counters, "answersLost", json_integer((json_int_t)t.answers_lost));
	json_object_set_new(counters, "answersUnsent", json_integer((json_int_t)t.answers_unsent));
	json_object_set_new(counters, "answersWithoutLoad", json_integer((json_int_t)t.answers_without_load));
	json_object_set_new(doc, "http", json_string(v->http_listen[0] ? v->http_listen : "off"));
	/* What the levels share now: the limit scaled by the backends' usable
	 * capacity, or the adaptive limit (issue 29). */
	json_object_set_new(doc, "serverConcurrencyLimitMode", json_string(adaptive ? "Adaptive" : "Static"));
	if (adaptive) {
		json_object_set_new(doc, "serverConcurrencyLimitMin", json_integer((json_int_t)v->settings->seat_limit_min));
		json_object_set_new(doc, "serverConcurrencyLimitMax",
				    json_integer((json_int_t)fg_settings_seat_limit_max(v->settings)));
	}
	json_object_set_new(doc, "serverConcurrencyLimitInForce",
			    json_integer((json_int_t)fg_stats_seat_limit_in_force(v->worker_stats, v->n_workers,
										  (uint32_t)server_limit)));
	json_object_set_new(doc, "backendPool", backends);
	json_object_set_new(doc, "borrowing", borrowing);
	json_object_set_new(doc, "cluster", fg_cluster_status_json(v->cluster));
	json_object_set_new(doc, "warnings", capacity_warnings(v, t.held_for_backend));
	return doc;
}
