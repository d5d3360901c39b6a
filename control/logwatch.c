/* SPDX-License-Identifier: Apache-2.0 */
/* logwatch — the workers' events, from their counters, into the log; see logwatch.h. */
#include "logwatch.h"

#include <string.h>
#include <urcu-qsbr.h>

#include "endpoint.h"
#include "log.h"
#include "proto.h"

/* The drop reasons a tally follows: the decoder's verdicts, then these. */
enum { DROP_UNMATCHED = FG_PROTO_ERR__COUNT, DROP_UNEXPECTED, DROP_ANSWERS_LOST, DROP_SEND_FAILED,
       DROP_HANDOFF_REFUSED, DROP_MARTIAN, DROP__COUNT };
_Static_assert(DROP__COUNT <= FG_LOG_TALLY_MAX, "a tally follows every drop reason");

static const char *drop_name(unsigned i)
{
	static const char *const extra[] = { "response unmatched (late, stale or forged)",
					     "unexpected message type", "answer lost (no buffer)",
					     "send failed", "hand-off ring full",
					     "martian source (loopback from the wire, own or group address)" };
	return i < FG_PROTO_ERR__COUNT ? fg_proto_strerror((enum fg_proto_err)i) : extra[i - FG_PROTO_ERR__COUNT];
}

static void drop_totals(const struct fg_control_view *v, uint64_t *out)
{
	struct fg_worker_totals t;
	fg_stats_totals(v->worker_stats, v->n_workers, &t);
	memset(out, 0, DROP__COUNT * sizeof(*out));
	for (unsigned e = 1; e < FG_PROTO_ERR__COUNT; e++) /* 0 is "ok" */
		out[e] = t.malformed_by_err[e];
	out[DROP_UNMATCHED] = t.responses_unmatched;
	out[DROP_UNEXPECTED] = t.rx_unexpected;
	out[DROP_ANSWERS_LOST] = t.answers_lost;
	out[DROP_SEND_FAILED] = t.tx_failed;
	uint64_t refused = 0;
	for (unsigned i = 0; i < v->n_workers; i++)
		refused += __atomic_load_n(&v->worker_stats[i]->handoff_refused, __ATOMIC_RELAXED);
	out[DROP_HANDOFF_REFUSED] = refused;
	out[DROP_MARTIAN] = v->martians ? v->martians(v->martians_ctx) : 0;
}

/* The configured backends' addresses (they change only with the configuration). */
static uint32_t backend_addrs(const struct fg_control_view *v, char (*addr)[32])
{
	rcu_thread_online();
	const struct fg_config *cfg = rcu_dereference(*v->config_ptr);
	uint32_t n = cfg ? cfg->n_backends : 0;
	for (uint32_t b = 0; b < n; b++)
		fg_endpoint_format(&cfg->backends[b].ep, addr[b], sizeof(addr[b]));
	rcu_thread_offline();
	return n;
}

static void watch_backends(struct fg_logwatch *w, const struct fg_control_view *v, bool quiet)
{
	char addr[FG_MAX_BACKENDS][32];
	uint32_t n = backend_addrs(v, addr);
	for (uint32_t b = 0; b < n; b++) {
		struct fg_backend_total t;
		fg_stats_backend_total(v->worker_stats, v->n_workers, b, &t);
		bool down = t.in_state[1] || t.in_state[2];
		/* A backend newly at this index (a configuration changed the list): start over quietly. */
		if (b >= w->n_backends || strcmp(w->backends[b].addr, addr[b])) {
			snprintf(w->backends[b].addr, sizeof(w->backends[b].addr), "%s", addr[b]);
			w->backends[b].ejections = t.ejections;
			w->backends[b].stalls = t.stalls;
			w->backends[b].learned = t.learned_limit;
			w->backends[b].down = down;
			continue;
		}
		if (!quiet && t.ejections > w->backends[b].ejections)
			fg_log(FG_LOG_WARN, "backend ejected", FG_LOG_STR("backend", addr[b]),
			       FG_LOG_UINT("ejections", t.ejections), FG_LOG_UINT("timeouts", t.timeouts),
			       FG_LOG_UINT("workersUp", t.in_state[0]));
		if (!quiet && w->backends[b].down && !down)
			fg_log(FG_LOG_INFO, "backend recovered", FG_LOG_STR("backend", addr[b]),
			       FG_LOG_UINT("ejections", t.ejections));
		if (!quiet && t.stalls > w->backends[b].stalls)
			fg_log(FG_LOG_WARN, "backend stalled", FG_LOG_STR("backend", addr[b]),
			       FG_LOG_UINT("stalls", t.stalls), FG_LOG_UINT("outstandingSeats", t.outstanding),
			       FG_LOG_UINT("latencyUs", t.latency_ns / 1000));
		/* An adaptive limit: told when it moved by a quarter or more
		 * (each line is such a move, so they stay few). */
		uint64_t was = w->backends[b].learned, now_l = t.learned_limit;
		if (now_l && was && (now_l * 4 >= was * 5 || now_l * 4 <= was * 3)) {
			if (!quiet)
				fg_log(FG_LOG_INFO, "backend limit moved", FG_LOG_STR("backend", addr[b]),
				       FG_LOG_UINT("fromSeats", was), FG_LOG_UINT("toSeats", now_l),
				       FG_LOG_STR("decision", fg_adapt_reason_name(t.limit_reason)),
				       FG_LOG_UINT("noloadUs", t.noload_ns / 1000), FG_LOG_UINT("latencyUs", t.latency_ns / 1000));
			w->backends[b].learned = now_l;
		} else if (!was) {
			w->backends[b].learned = now_l;
		}
		w->backends[b].stalls = t.stalls;
		w->backends[b].ejections = t.ejections;
		w->backends[b].down = down;
	}
	w->n_backends = n;
}

static void watch_workers(struct fg_logwatch *w, const struct fg_control_view *v, bool quiet)
{
	for (unsigned i = 0; i < v->n_workers && i < FG_MAX_WORKER_CORES; i++) {
		const struct fg_worker_stats *st = v->worker_stats[i];
		uint64_t gen = __atomic_load_n(&st->config_refused_generation, __ATOMIC_RELAXED);
		if (gen == w->refused_generation[i])
			continue;
		w->refused_generation[i] = gen;
		uint32_t err = __atomic_load_n(&st->config_error, __ATOMIC_RELAXED);
		if (!quiet && gen)
			fg_log(FG_LOG_ERROR, "worker cannot follow the configuration", FG_LOG_UINT("worker", i),
			       FG_LOG_UINT("generation", gen), FG_LOG_STR("error", strerror((int)err)),
			       FG_LOG_UINT("following", __atomic_load_n(&st->config_generation, __ATOMIC_RELAXED)));
	}
}

void fg_logwatch_init(struct fg_logwatch *w, const struct fg_control_view *v, uint64_t now)
{
	uint64_t totals[DROP__COUNT];
	memset(w, 0, sizeof(*w));
	drop_totals(v, totals);
	fg_log_tally_init(&w->drops, FG_LOGWATCH_DROP_INTERVAL_NS, totals, DROP__COUNT, now);
	watch_backends(w, v, true);
	watch_workers(w, v, true);
	w->next_ns = now + FG_LOGWATCH_PERIOD_NS;
}

void fg_logwatch_flush(struct fg_logwatch *w, const struct fg_control_view *v, uint64_t now)
{
	w->next_ns = 0;
	w->drops.last_ns = now - FG_LOGWATCH_DROP_INTERVAL_NS;
	fg_logwatch_poll(w, v, now);
}

bool fg_logwatch_poll(struct fg_logwatch *w, const struct fg_control_view *v, uint64_t now)
{
	if (now < w->next_ns)
		return false;
	w->next_ns = now + FG_LOGWATCH_PERIOD_NS;
	watch_backends(w, v, false);
	watch_workers(w, v, false);
	bool stopping = !w->stopping && v->shutting_down && FG_READ_ONCE(*v->shutting_down);
	if (stopping) {
		w->stopping = true;
		fg_log(FG_LOG_INFO, "draining: new requests are answered shutting-down");
		w->drops.last_ns = now - FG_LOGWATCH_DROP_INTERVAL_NS; /* tell this interval's drops now */
	}
	uint64_t totals[DROP__COUNT], deltas[DROP__COUNT];
	drop_totals(v, totals);
	if (fg_log_tally_due(&w->drops, totals, deltas, now))
		for (unsigned i = 0; i < DROP__COUNT; i++)
			if (deltas[i])
				fg_log(FG_LOG_WARN, "datagrams dropped", FG_LOG_STR("reason", drop_name(i)),
				       FG_LOG_UINT("count", deltas[i]),
				       FG_LOG_UINT("intervalSeconds", FG_LOGWATCH_DROP_INTERVAL_NS / 1000000000u));
	return stopping;
}
