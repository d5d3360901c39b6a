/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dataplane — `fairgate-bench dataplane`: the DPDK fast path measured in one
 * process.  A generator / backend emulator on the main lcore feeds ~200-byte
 * request frames for F flows into a ring-backed port (rte_eth_from_rings) and
 * answers every request that reaches a backend at once; the worker lcore(s) run
 *   1. forward-only: parse, rewrite the headers, send on (the physical limit
 *      of this harness), then
 *   2. the full fairgate path: the real worker (classification with the
 *      bootstrap FlowSchemas, shuffle sharding, fair queuing, dispatch,
 *      completion) on the same port,
 * and finally librte_sched, DPDK's QoS scheduler, does enqueue + dequeue on
 * the same frames on the main lcore (the peer).  Everything is bounded by
 * --duration; no packet leaves the process.
 *
 * This is `--mode generator` (the default); `--mode scaling`, with no
 * generator running, is dataplane_scaling.c.  What both share is here
 * (dataplane_int.h).
 *
 * --repeat N runs forward-only and the fairgate path N times in this process
 * and reports min/median/max.  EAL starts through dp_eal_init: memory sized
 * by the workers, what a start needs said instead of EAL's log, no telemetry,
 * the (empty) runtime directory removed at once.
 *
 * --workers N: the port gets N RX and N TX rings; the generator spreads
 * requests over the RX rings by flow (as RSS would) and a backend's answers
 * always arrive on ring (backend % N), so some answers cross to their
 * request's worker, as on a NIC.  The main lcore also runs the allotter.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <urcu-qsbr.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_sched.h>

#include "allotter.h"
#include "bench.h"
#include "clock.h"
#include "config.h"
#include "dataplane_int.h"
#include "dpdk_io.h"
#include "flowcontrol.h"
#include "netpkt.h"
#include "proto.h"
#include "workerset.h"

#define DP_BURST 32u
#define DP_WINDOW 2048u            /* requests in flight */
#define DP_RING_SIZE 4096u

const uint8_t dp_client_mac[6] = { 2, 0, 0, 0, 0, 0x32 };

struct harness {
	unsigned n_workers;
	struct rte_ring *to_worker[DP_MAX_WORKERS], *from_worker[DP_MAX_WORKERS];
	uint16_t port;
	struct rte_mempool *gen_pool;
	struct dp_net net;
	int stop;                  /* FG_READ_ONCE / FG_WRITE_ONCE */
	/* worker side */
	int full;                  /* 0: forward-only, 1: the fairgate worker */
	struct dp_fairgate fg;
	uint64_t busy_cycles[DP_MAX_WORKERS];
	int metrics_on;            /* the workers follow it into flowcontrolMetrics (apf_metrics) */
	/* generator side */
	uint64_t completions, rejects;
};

int dp_net_init(struct dp_net *net, uint16_t port, unsigned flows)
{
	memset(net, 0, sizeof(*net));
	net->flows = flows;
	net->fg_port = htons(7400);
	net->fg_ip = htonl(0xc0000201);     /* 192.0.2.1: TEST-NET, never on a wire here */
	net->client_ip = htonl(0xc0000232); /* 192.0.2.50 */
	for (unsigned b = 0; b < DP_BACKENDS; b++) {
		net->backend_ip[b] = htonl(0xc0000264 + b);
		uint8_t mac[6] = { 2, 0, 0, 0, 0, (uint8_t)(0x64 + b) };
		memcpy(net->backend_mac[b], mac, 6);
	}
	struct rte_ether_addr mac;
	rte_eth_macaddr_get(port, &mac);
	memcpy(net->fg_mac, mac.addr_bytes, 6);
	net->templates = calloc(flows, DP_FRAME_LEN);
	if (!net->templates)
		return -ENOMEM;
	for (unsigned f = 0; f < flows; f++) {
		uint8_t *frame = net->templates + (size_t)f * DP_FRAME_LEN;
		char user[32], ns[16];
		snprintf(user, sizeof(user), "user-%05u", f);
		snprintf(ns, sizeof(ns), "ns-%02u", f % 100);
		struct fg_msg m;
		memset(&m, 0, sizeof(m));
		m.hdr.type = FG_MSG_REQUEST;
		m.hdr.request_id = f;
		m.user = fg_str_of(user);
		m.ns = fg_str_of(ns);
		m.verb = fg_str_of("get");
		m.api_group = fg_str_of("");
		m.resource = fg_str_of("pods");
		m.groups[0] = fg_str_of("system:authenticated");
		m.n_groups = 1;
		static const uint8_t pad[DP_FRAME_LEN];
		m.payload = pad;
		int base = fg_proto_encode(frame + FG_NET_HDRS_LEN, DP_FRAME_LEN - FG_NET_HDRS_LEN, &m);
		m.payload_len = DP_FRAME_LEN - FG_NET_HDRS_LEN - (size_t)base; /* pad the frame to 200 bytes */
		int len = fg_proto_encode(frame + FG_NET_HDRS_LEN, DP_FRAME_LEN - FG_NET_HDRS_LEN, &m);
		fg_net_build_udp(frame, dp_client_mac, net->fg_mac, net->client_ip, net->fg_ip,
				 htons((uint16_t)(10000 + f % 50000)), net->fg_port, (uint16_t)len, 0);
		net->template_len = (uint16_t)(FG_NET_HDRS_LEN + len);
	}
	return 0;
}

void dp_net_fini(struct dp_net *net)
{
	if (!net)
		return;
	free(net->templates);
	net->templates = NULL;
}

unsigned dp_backend_answer(const struct dp_net *net, uint8_t *frame, const struct fg_net_frame *f)
{
	unsigned b = 0;
	while (b < DP_BACKENDS - 1 && f->dst_ip != net->backend_ip[b])
		b++;
	frame[f->payload_off + 3] = FG_MSG_RESPONSE;
	fg_net_build_udp(frame, net->backend_mac[b], net->fg_mac, net->backend_ip[b], net->fg_ip, f->dst_port,
			 f->src_port, (uint16_t)f->payload_len, 0);
	return b;
}

/* --- the worker lcore -------------------------------------------------- */

static void forward_only(struct harness *h, unsigned lane)
{
	struct rte_mbuf *rx[DP_BURST], *tx[DP_BURST];
	unsigned next_backend = 0;
	while (!FG_READ_ONCE(h->stop)) {
		uint16_t n = rte_eth_rx_burst(h->port, (uint16_t)lane, rx, DP_BURST);
		if (!n)
			continue;
		uint64_t t0 = rte_rdtsc();
		fg_dpdk_prefetch_burst(rx, n); /* as the real worker does */
		unsigned nt = 0;
		for (uint16_t i = 0; i < n; i++) {
			struct rte_mbuf *m = rx[i];
			uint8_t *frame = rte_pktmbuf_mtod(m, uint8_t *);
			struct fg_net_frame f;
			if (fg_net_parse(frame, m->data_len, &f) != FG_NET_UDP || f.payload_len < FG_PROTO_HDR_LEN) {
				rte_pktmbuf_free(m);
				continue;
			}
			uint8_t type = frame[f.payload_off + 3];
			if (type == FG_MSG_REQUEST) {
				unsigned b = next_backend++ % DP_BACKENDS;
				fg_net_build_udp(frame, h->net.fg_mac, h->net.backend_mac[b], h->net.fg_ip, h->net.backend_ip[b],
						 h->net.fg_port, htons(DP_BACKEND_PORT), (uint16_t)f.payload_len, 0);
			} else {
				fg_net_build_udp(frame, h->net.fg_mac, dp_client_mac, h->net.fg_ip, h->net.client_ip, h->net.fg_port,
						 htons(10000),
						 (uint16_t)f.payload_len, 0);
			}
			tx[nt++] = m;
		}
		uint16_t sent = rte_eth_tx_burst(h->port, (uint16_t)lane, tx, (uint16_t)nt);
		for (unsigned i = sent; i < nt; i++)
			rte_pktmbuf_free(tx[i]);
		__atomic_store_n(&h->busy_cycles[lane], h->busy_cycles[lane] + rte_rdtsc() - t0, __ATOMIC_RELAXED);
	}
}

void dp_run_fairgate_lane(struct fg_worker *w, const struct fg_config *cfg, const int *stop,
			  const int *metrics_on, uint64_t *busy_cycles)
{
	rcu_register_thread();
	while (!FG_READ_ONCE(*stop)) {
		rcu_quiescent_state();
		w->apf_metrics = __atomic_load_n(metrics_on, __ATOMIC_RELAXED);
		/* Busy: it received datagrams, or answered what another worker
		 * passed over (counted as responded). */
		uint64_t now = fg_now_ns(), t0 = rte_rdtsc(), before = w->stats.responded + w->stats.rx_datagrams;
		unsigned n = fg_worker_poll(w, cfg, now);
		bool busy = n || w->stats.responded + w->stats.rx_datagrams != before;
		if (busy)
			__atomic_store_n(busy_cycles, *busy_cycles + rte_rdtsc() - t0, __ATOMIC_RELAXED);
		fg_stats_poll(&w->stats, now, busy); /* as the daemon's loop; outside the cycles counted */
	}
	rcu_unregister_thread();
}

struct lane_arg {
	struct harness *h;
	unsigned lane;
};

static int worker_main(void *arg)
{
	struct lane_arg *a = arg;
	struct harness *h = a->h;
	if (h->full)
		dp_run_fairgate_lane(h->fg.ws.w[a->lane], h->fg.cfg, &h->stop, &h->metrics_on, &h->busy_cycles[a->lane]);
	else
		forward_only(a->h, a->lane);
	return 0;
}

/* --- the generator / backend emulator on the main lcore ---------------- */

struct phase {
	double requests_per_sec, cycles_per_request, worker_busy_share;
	/* The fairgate path: datagrams a busy poll handled, on average.  The
	 * cost per request depends on it (each poll has its fixed part), and
	 * it depends on how fast the generator is against the worker: a
	 * cycles-per-request figure is comparable with another only at a
	 * similar burst. */
	double datagrams_per_busy_poll;
	uint64_t requests, rejects;
};

/* The metrics' cost: the fairgate path with flowcontrolMetrics switched on
 * and off every DP_SLICE_NS, each slice's cycles per request kept by mode.
 * Short alternating slices see the same machine, so the VM's noise (2x
 * between runs) falls on both modes alike; the switch leaves the gauges of
 * requests in flight off by themselves, which a benchmark may ignore. */
#define DP_SLICE_NS 100000000ull
#define DP_MAX_SLICES 6000u
struct alternation {
	double cycles[2][DP_MAX_SLICES]; /* [metrics on] */
	unsigned n[2];
};

static uint64_t busy_sum(struct harness *h)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i < h->n_workers; i++)
		sum += __atomic_load_n(&h->busy_cycles[i], __ATOMIC_RELAXED);
	return sum;
}

/* The workers' received datagrams and busy polls (the fairgate path). */
static void polls_sum(struct harness *h, uint64_t *datagrams, uint64_t *busy_polls)
{
	*datagrams = *busy_polls = 0;
	for (unsigned i = 0; h->full && i < h->n_workers; i++) {
		*datagrams += FG_STAT_GET(h->fg.ws.w[i]->stats.rx_datagrams);
		*busy_polls += FG_STAT_GET(h->fg.ws.w[i]->stats.busy_polls);
	}
}

static struct phase run_phase(struct harness *h, int full, double seconds, struct alternation *alt)
{
	struct phase ph = { 0 };
	h->full = full;
	FG_WRITE_ONCE(h->stop, 0);
	memset(h->busy_cycles, 0, sizeof(h->busy_cycles));
	h->completions = h->rejects = 0;
	struct lane_arg args[DP_MAX_WORKERS];
	unsigned lcore = (unsigned)-1;
	for (unsigned i = 0; i < h->n_workers; i++) {
		lcore = rte_get_next_lcore(lcore, 1, 0);
		args[i] = (struct lane_arg){ h, i };
		rte_eal_remote_launch(worker_main, &args[i], lcore);
	}
	struct fg_allotter allotter = { 0 };
	uint64_t inflight = 0, next_flow = 0;
	uint64_t hz = rte_get_tsc_hz(), start = rte_rdtsc(), end = start + (uint64_t)(seconds * (double)hz);
	uint64_t warm = start + hz / 2, counted_from = 0, base_completions = 0, base_busy = 0;
	uint64_t base_datagrams = 0, base_polls = 0;
	struct rte_mbuf *pkts[DP_BURST], *back[DP_BURST];
	unsigned back_ring[DP_BURST];
	uint64_t slice = (uint64_t)((double)hz * DP_SLICE_NS / 1e9), slice_end = warm + slice;
	uint64_t slice_completions = 0, slice_busy = 0;
	for (uint64_t now = start; now < end; now = rte_rdtsc()) {
		if (!counted_from && now >= warm) { /* ignore the first half second */
			counted_from = now;
			base_completions = slice_completions = h->completions;
			base_busy = slice_busy = busy_sum(h);
			polls_sum(h, &base_datagrams, &base_polls);
		}
		if (alt && counted_from && now >= slice_end) {
			int on = __atomic_load_n(&h->metrics_on, __ATOMIC_RELAXED);
			uint64_t busy = busy_sum(h), done = h->completions - slice_completions;
			if (done && alt->n[on] < DP_MAX_SLICES)
				alt->cycles[on][alt->n[on]++] = (double)(busy - slice_busy) / (double)done;
			slice_completions = h->completions;
			slice_busy = busy;
			slice_end = now + slice;
			__atomic_store_n(&h->metrics_on, !on, __ATOMIC_RELAXED);
		}
		/* The allotter, on the generator's lcore: every workers follow the
		 * one configuration. */
		if (full)
			fg_allotter_step(&allotter, h->fg.cfg, true, fg_now_ns());
		unsigned want = inflight + DP_BURST <= DP_WINDOW ? DP_BURST : 0;
		if (want && rte_pktmbuf_alloc_bulk(h->gen_pool, pkts, want) == 0) {
			for (unsigned i = 0; i < want; i++) {
				uint8_t *d = (uint8_t *)rte_pktmbuf_append(pkts[i], h->net.template_len);
				memcpy(d, h->net.templates + (size_t)(next_flow++ % h->net.flows) * DP_FRAME_LEN,
				       h->net.template_len);
			}
			/* RSS: a flow's requests always reach the same RX ring. */
			unsigned q = 0;
			if (h->n_workers == 1) {
				q = rte_ring_enqueue_burst(h->to_worker[0], (void **)pkts, want, NULL);
				for (unsigned i = q; i < want; i++)
					rte_pktmbuf_free(pkts[i]);
			} else {
				for (unsigned i = 0; i < want; i++) {
					unsigned ring = (unsigned)((next_flow - want + i) % h->net.flows % h->n_workers);
					if (rte_ring_enqueue(h->to_worker[ring], pkts[i]) == 0)
						q++;
					else
						rte_pktmbuf_free(pkts[i]);
				}
			}
			inflight += q;
		}
		unsigned n = 0, nb = 0;
		for (unsigned r = 0; r < h->n_workers && n < DP_BURST; r++)
			n += rte_ring_dequeue_burst(h->from_worker[r], (void **)pkts + n, DP_BURST - n, NULL);
		for (unsigned i = 0; i < n; i++) {
			struct rte_mbuf *m = pkts[i];
			uint8_t *frame = rte_pktmbuf_mtod(m, uint8_t *);
			struct fg_net_frame f;
			if (fg_net_parse(frame, m->data_len, &f) != FG_NET_UDP) {
				rte_pktmbuf_free(m);
				continue;
			}
			uint8_t *msg = frame + f.payload_off;
			if (msg[3] == FG_MSG_REQUEST) {
				unsigned b = dp_backend_answer(&h->net, frame, &f);
				back_ring[nb] = b % h->n_workers; /* RSS on the backend's address */
				back[nb++] = m;
			} else {
				h->completions++;
				h->rejects += msg[3] == FG_MSG_REJECT;
				inflight--;
				rte_pktmbuf_free(m);
			}
		}
		for (unsigned i = 0; i < nb; i++)
			if (rte_ring_enqueue(h->to_worker[back_ring[i]], back[i])) { /* cannot happen with these sizes; stay exact */
				rte_pktmbuf_free(back[i]);
				inflight--;
			}
	}
	uint64_t stop_at = rte_rdtsc();
	uint64_t done = h->completions - base_completions;
	uint64_t busy = busy_sum(h) - base_busy, datagrams, polls;
	polls_sum(h, &datagrams, &polls);
	FG_WRITE_ONCE(h->stop, 1);
	rte_eal_mp_wait_lcore();
	/* Drain what is still in the rings. */
	struct rte_mbuf *m;
	for (unsigned r = 0; r < h->n_workers; r++) {
		while (rte_ring_dequeue(h->from_worker[r], (void **)&m) == 0)
			rte_pktmbuf_free(m);
		while (rte_ring_dequeue(h->to_worker[r], (void **)&m) == 0)
			rte_pktmbuf_free(m);
	}
	double span = (double)(stop_at - counted_from) / (double)hz;
	ph.requests = done;
	ph.rejects = h->rejects;
	ph.requests_per_sec = (double)done / span;
	ph.cycles_per_request = done ? (double)busy / (double)done : 0;
	ph.worker_busy_share = (double)busy / (double)(stop_at - counted_from) / h->n_workers;
	ph.datagrams_per_busy_poll = polls > base_polls ? (double)(datagrams - base_datagrams) / (double)(polls - base_polls) : 0;
	return ph;
}

/* --- the peer: librte_sched enqueue + dequeue ---------------------------- */

static double rte_sched_cycles(struct harness *h, unsigned iterations)
{
	static struct rte_sched_pipe_params pipe = {
		.tb_rate = 1250000000, .tb_size = 1000000,
		.tc_rate = { 1250000000, 1250000000, 1250000000, 1250000000, 1250000000, 1250000000, 1250000000,
			     1250000000, 1250000000, 1250000000, 1250000000, 1250000000, 1250000000 },
		.tc_period = 10, .tc_ov_weight = 1, .wrr_weights = { 1, 1, 1, 1 },
	};
	static struct rte_sched_subport_profile_params sprof = {
		.tb_rate = 1250000000, .tb_size = 1000000,
		.tc_rate = { 1250000000, 1250000000, 1250000000, 1250000000, 1250000000, 1250000000, 1250000000,
			     1250000000, 1250000000, 1250000000, 1250000000, 1250000000, 1250000000 },
		.tc_period = 10,
	};
	uint32_t n_pipes = 4096;
	struct rte_sched_subport_params sub = {
		.n_pipes_per_subport_enabled = n_pipes,
		.qsize = { 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64 },
		.pipe_profiles = &pipe, .n_pipe_profiles = 1, .n_max_pipe_profiles = 1,
	};
	struct rte_sched_port_params pp = {
		.name = "fg_sched", .socket = (int)rte_socket_id(), .rate = 1250000000, .mtu = 1522,
		.frame_overhead = 24, .n_subports_per_port = 1, .subport_profiles = &sprof, .n_subport_profiles = 1,
		.n_max_subport_profiles = 1, .n_pipes_per_subport = n_pipes,
	};
	struct rte_sched_port *port = rte_sched_port_config(&pp);
	if (!port || rte_sched_subport_config(port, 0, &sub, 0))
		return -1;
	for (uint32_t p = 0; p < n_pipes; p++)
		if (rte_sched_pipe_config(port, 0, p, 0))
			return -1;
	struct rte_mbuf *pkts[DP_BURST], *out[DP_BURST];
	if (rte_pktmbuf_alloc_bulk(h->gen_pool, pkts, DP_BURST))
		return -1;
	for (unsigned i = 0; i < DP_BURST; i++) {
		uint8_t *d = (uint8_t *)rte_pktmbuf_append(pkts[i], h->net.template_len);
		memcpy(d, h->net.templates + (size_t)(i % h->net.flows) * DP_FRAME_LEN, h->net.template_len);
	}
	uint64_t cycles = 0, packets = 0, flow = 0;
	unsigned have = DP_BURST;
	struct rte_mbuf *batch[DP_BURST];
	memcpy(batch, pkts, sizeof(pkts));
	for (unsigned it = 0; it < iterations; it++) {
		/* Classify each packet to its flow's pipe, as fairgate classifies to a flow. */
		for (unsigned i = 0; i < have; i++, flow++)
			rte_sched_port_pkt_write(port, batch[i], 0, (uint32_t)(flow % n_pipes), RTE_SCHED_TRAFFIC_CLASS_BE,
						 (uint32_t)(flow % RTE_SCHED_BE_QUEUES_PER_PIPE), RTE_COLOR_GREEN);
		uint64_t t0 = rte_rdtsc();
		int in = rte_sched_port_enqueue(port, batch, have);
		int got = rte_sched_port_dequeue(port, out, DP_BURST);
		cycles += rte_rdtsc() - t0;
		packets += (uint64_t)(got > 0 ? got : 0);
		(void)in;
		memcpy(batch, out, sizeof(out[0]) * (size_t)(got > 0 ? got : 0));
		have = (unsigned)(got > 0 ? got : 0);
		if (!have) { /* the scheduler holds them for now: keep feeding what it gives back later */
			struct rte_mbuf *fresh[DP_BURST];
			if (rte_pktmbuf_alloc_bulk(h->gen_pool, fresh, DP_BURST) == 0) {
				for (unsigned i = 0; i < DP_BURST; i++) {
					uint8_t *d = (uint8_t *)rte_pktmbuf_append(fresh[i], h->net.template_len);
					memcpy(d, h->net.templates + (size_t)(i % h->net.flows) * DP_FRAME_LEN,
					       h->net.template_len);
				}
				memcpy(batch, fresh, sizeof(fresh));
				have = DP_BURST;
			}
		}
	}
	struct rte_mbuf *rest[DP_BURST];
	int got;
	while ((got = rte_sched_port_dequeue(port, rest, DP_BURST)) > 0)
		for (int i = 0; i < got; i++)
			rte_pktmbuf_free(rest[i]);
	for (unsigned i = 0; i < have; i++)
		rte_pktmbuf_free(batch[i]);
	rte_sched_port_free(port);
	return packets ? (double)cycles / (double)packets : -1;
}

/* --- set-up ------------------------------------------------------------ */

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* a / b, or 0 when b is not positive (a phase that completed nothing on a
 * starved machine): the JSON output never carries inf or nan. */
static double ratio_or_0(double a, double b) { return b > 0 ? a / b : 0; }

void dp_min_median(double *v, unsigned n, double *min, double *median)
{
	qsort(v, n, sizeof(*v), by_value);
	*min = n ? v[0] : 0;
	*median = n ? v[n / 2] : 0;
}

int dp_fairgate_create(struct dp_fairgate *fg, const struct dp_net *net, uint16_t port, unsigned workers,
		       uint32_t max_requests)
{
	memset(fg, 0, sizeof(*fg));
	struct fg_settings s;
	fg_settings_defaults(&s);
	s.seat_limit = 100000; /* global-default: ceil(100000 x 20/245) = 8164 seats, more than in flight */
	s.max_requests = max_requests;
	s.listen.ip = net->fg_ip;
	s.listen.port = net->fg_port;
	for (unsigned b = 0; b < DP_BACKENDS; b++) {
		s.backends[b].ep.ip = net->backend_ip[b];
		s.backends[b].ep.port = htons(DP_BACKEND_PORT);
		memcpy(s.backends[b].ep.mac, net->backend_mac[b], 6);
		s.backends[b].static_mac = true;
	}
	s.n_backends = DP_BACKENDS;
	s.workers = workers;
	/* The generator stands for a front tier that authenticated its users:
	 * its sources are trusted (security.md). */
	fg_cidr_parse("0.0.0.0/0", &s.trusted[0]);
	s.n_trusted = 1;
	struct fg_fc_set *set = fg_fc_set_bootstrap();
	struct fg_errors e = { .len = 0 };
	struct fg_fc_config *fc = fg_fc_compile(set, s.seat_limit, &e);
	fg_fc_set_free(set);
	fg->cfg = fg_config_build(&s, fc, 1);
	char err[256];
	fg->io = fg->cfg ? fg_dpdk_io_attach(port, &s, s.max_requests, workers, err, sizeof(err)) : NULL;
	if (!fg->io) {
		fprintf(stderr, "fairgate-bench dataplane: %s\n", fg->cfg ? err : "out of memory");
		goto err;
	}
	struct fg_io ios[DP_MAX_WORKERS];
	for (unsigned i = 0; i < workers; i++)
		ios[i] = fg_dpdk_io_lane(fg->io, i);
	if (fg_workerset_init(&fg->ws, workers, ios, s.max_requests, fg->cfg, fg_now_ns(), err, sizeof(err))) {
		fprintf(stderr, "fairgate-bench dataplane: %s\n", err);
		goto err;
	}
	return 0;
err:
	dp_fairgate_destroy(fg);
	return -ENOMEM;
}

void dp_fairgate_destroy(struct dp_fairgate *fg)
{
	for (unsigned i = 0; i < fg->ws.n; i++) {
		fg_worker_drain(fg->ws.w[i], fg->cfg, fg_now_ns());
		fg_worker_abort_executing(fg->ws.w[i], fg->cfg, fg_now_ns());
	}
	fg_workerset_fini(&fg->ws);
	fg_dpdk_io_free(fg->io);
	fg_config_free(fg->cfg);
	memset(fg, 0, sizeof(*fg));
}

/* MemAvailable from /proc/meminfo in MB, or -1. */
static long mem_available_mb(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	if (!f)
		return -1;
	char line[256];
	long kb = -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : kb / 1024;
}

/* The last `keep` lines of text, each indented, to stderr. */
static void print_tail(const char *text, unsigned keep)
{
	unsigned lines = 0;
	for (const char *c = text; *c; c++)
		lines += *c == '\n';
	unsigned skip = lines > keep ? lines - keep : 0;
	for (const char *c = text; *c;) {
		const char *nl = strchr(c, '\n');
		size_t len = nl ? (size_t)(nl - c) : strlen(c);
		if (skip)
			skip--;
		else
			fprintf(stderr, "    %.*s\n", (int)len, c);
		c += len + (nl != NULL);
	}
}

void dp_print_needs(const char *lcores, unsigned mem_mb, unsigned lcores_needed)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN), avail = mem_available_mb();
	fprintf(stderr,
		"fairgate-bench dataplane needs: %u lcores (main + %u worker(s); --lcores %s over the %ld CPU(s) here,\n"
		"  sharing CPUs is allowed), %u MB of memory for EAL (-m %u without hugepages: ordinary memory, one\n"
		"  4 KiB page per mbuf; %ld MB available now), and a writable /var/run/dpdk\n",
		lcores_needed, lcores_needed - 1, lcores, cpus, mem_mb, mem_mb, avail);
}

bool dp_eal_init(const char *lcores, unsigned mem_mb, unsigned lcores_needed)
{
	long avail = mem_available_mb();
	if (avail >= 0 && avail < (long)mem_mb) {
		fprintf(stderr, "fairgate-bench dataplane: not enough memory to start\n");
		dp_print_needs(lcores, mem_mb, lcores_needed);
		return false;
	}
	char prefix[64], mem[16];
	snprintf(prefix, sizeof(prefix), "--file-prefix=fgbench%d", (int)getpid());
	snprintf(mem, sizeof(mem), "%u", mem_mb);
	/* No telemetry socket and no shared config (--no-shconf): the runtime
	 * directory stays empty, so it goes at once and a killed run leaves
	 * nothing under /var/run/dpdk.  EAL's messages are kept for a failure. */
	char *eal[] = { "fairgate-bench", "--no-huge", "-m", mem, "--no-pci", "--no-shconf", "--no-telemetry", prefix,
			"--lcores", (char *)lcores, "--log-level=lib.eal:warning", NULL };
	char *log_text = NULL;
	size_t log_len = 0;
	FILE *log = open_memstream(&log_text, &log_len);
	if (log)
		rte_openlog_stream(log);
	int eal_up = rte_eal_init(11, eal) >= 0;
	int eal_errno = rte_errno;
	rte_openlog_stream(NULL);
	if (log)
		fclose(log);
	bool ok = eal_up && rte_lcore_count() >= lcores_needed;
	if (ok) {
		rmdir(rte_eal_get_runtime_dir()); /* empty: nothing in it is used (see above) */
		if (log_text && *log_text)
			fputs(log_text, stderr); /* warnings of a good start still show */
	} else {
		fprintf(stderr, "fairgate-bench dataplane: DPDK's EAL cannot start: %s\n",
			eal_up ? "too few lcores" : rte_strerror(eal_errno));
		dp_print_needs(lcores, mem_mb, lcores_needed);
		if (log_text && *log_text) {
			fprintf(stderr, "  EAL said (last lines):\n");
			print_tail(log_text, 4);
		}
		fg_dpdk_eal_cleanup(eal_up); /* no runtime directory left behind */
	}
	free(log_text);
	return ok;
}

/* The generator mode's figures over --repeat runs. */
#define DP_MAX_REPEAT 100u
#define DP_GEN_MAX_REQUESTS 65536u /* fairgate's slots per worker */
struct dp_spread {
	double v[DP_MAX_REPEAT];
	double min, median, max;
};

static void spread_of(struct dp_spread *s, unsigned n)
{
	dp_min_median(s->v, n, &s->min, &s->median); /* sorts v */
	s->max = s->v[n - 1];
}

/* EAL memory for the generator mode: without hugepages each mbuf takes a
 * 4 KiB page (an object does not cross a page), and the pool holds
 * DP_GEN_MAX_REQUESTS per worker plus rings, caches and the hand-off rings
 * between workers (growing as workers^2); the generator's pool (16 384
 * mbufs) and EAL's own beside.  1 GB was enough for 2 workers, not for 4. */
static unsigned dp_generator_mem_mb(unsigned workers)
{
	unsigned mb = 256 + 384 * workers;
	return mb < 1024 ? 1024 : mb;
}

/* "--mode M" or "--mode=M" among the arguments, or NULL. */
static const char *mode_arg(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mode"))
			return i + 1 < argc ? argv[i + 1] : "";
		if (!strncmp(argv[i], "--mode=", 7))
			return argv[i] + 7;
	}
	return NULL;
}

int fg_bench_dataplane(int argc, char **argv)
{
	const char *mode = mode_arg(argc, argv);
	if (mode && !strcmp(mode, "scaling"))
		return fg_bench_dataplane_scaling(argc, argv);
	if (mode && strcmp(mode, "generator")) {
		fprintf(stderr, "fairgate-bench dataplane: --mode generator|scaling\n");
		return 2;
	}
	unsigned workers = 1, flows = 10000, repeat = 1;
	double duration = 5;
	int json = 0;
	static const struct option opts[] = { { "workers", required_argument, 0, 'w' },
		{ "flows", required_argument, 0, 'f' }, { "duration", required_argument, 0, 'd' },
		{ "repeat", required_argument, 0, 'r' },
		{ "json", no_argument, 0, 'j' }, { "mode", required_argument, 0, 'm' }, { "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 } };
	int opt;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'm': break; /* generator: mode_arg read it */
		case 'w': workers = (unsigned)atoi(optarg); break;
		case 'f': flows = (unsigned)atoi(optarg); break;
		case 'd': duration = (double)fg_bench_duration_arg("--duration", optarg) / 1e9; break;
		case 'r': repeat = (unsigned)atoi(optarg); break;
		case 'j': json = 1; break;
		case 'h':
			printf("usage: fairgate-bench dataplane [--mode generator] [--workers 1] [--flows F] [--duration D]\n"
			       "                                [--repeat N] [--json]\n"
			       "       fairgate-bench dataplane --mode scaling --help\n"
			       "  --repeat N  forward-only and fairgate-path runs N times in this process: min/median/max\n");
			return 0;
		default: return 2;
		}
	}
	if (workers < 1 || workers > DP_MAX_WORKERS) {
		fprintf(stderr, "fairgate-bench dataplane: --workers 1..%u\n", DP_MAX_WORKERS);
		return 2;
	}
	if (flows == 0 || flows > 1000000 || duration < 1 || duration > 600 || repeat < 1 || repeat > DP_MAX_REPEAT) {
		fprintf(stderr, "fairgate-bench dataplane: --flows 1..1000000, --duration 1s..10m, --repeat 1..%u\n",
			DP_MAX_REPEAT);
		return 2;
	}
	/* Lcores: the generator alone on CPU 0, the workers over the other
	 * CPUs; with more workers than those, workers share CPUs (said in the
	 * output). */
	char lcores[128];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int off = snprintf(lcores, sizeof(lcores), "0@0");
	for (unsigned i = 1; i <= workers; i++)
		off += snprintf(lcores + off, sizeof(lcores) - (size_t)off, ",%u@%ld", i,
				cpus > 1 ? 1 + (long)(i - 1) % (cpus - 1) : 0); /* the generator keeps CPU 0 */
	unsigned mem_mb = dp_generator_mem_mb(workers);
	if (!dp_eal_init(lcores, mem_mb, workers + 1))
		return 1;
	struct harness h = { .n_workers = workers };
	bool rings_ok = true;
	for (unsigned i = 0; i < workers; i++) {
		char name[32];
		snprintf(name, sizeof(name), "fg_to_worker%u", i);
		h.to_worker[i] = rte_ring_create(name, DP_RING_SIZE, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "fg_from_worker%u", i);
		h.from_worker[i] = rte_ring_create(name, DP_RING_SIZE, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
		rings_ok &= h.to_worker[i] && h.from_worker[i];
	}
	h.gen_pool = rte_pktmbuf_pool_create("fg_gen", 16384, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	int port = rings_ok ? rte_eth_from_rings("fgring", h.to_worker, workers, h.from_worker, workers, rte_socket_id()) : -1;
	if (port < 0 || !h.gen_pool) {
		fprintf(stderr, "fairgate-bench dataplane: cannot create the ring port or pools\n");
		fg_dpdk_eal_cleanup(true);
		return 1;
	}
	h.port = (uint16_t)port;
	if (dp_net_init(&h.net, h.port, flows) || dp_fairgate_create(&h.fg, &h.net, h.port, workers, DP_GEN_MAX_REQUESTS)) {
		dp_print_needs(lcores, mem_mb, workers + 1);
		dp_net_fini(&h.net);
		fg_dpdk_eal_cleanup(true);
		return 1;
	}
	/* Each run: forward-only, then the fairgate path (the last run's
	 * figures are the single-run keys; --repeat adds min/median/max). */
	struct phase fwd, full;
	static struct dp_spread rps_full, cyc_full, rps_fwd, cyc_fwd, ratio;
	for (unsigned r = 0; r < repeat; r++) {
		h.metrics_on = 0;
		fwd = run_phase(&h, 0, duration, NULL);
		h.metrics_on = 1; /* the daemon's default */
		full = run_phase(&h, 1, duration, NULL);
		rps_fwd.v[r] = fwd.requests_per_sec;
		cyc_fwd.v[r] = fwd.cycles_per_request;
		rps_full.v[r] = full.requests_per_sec;
		cyc_full.v[r] = full.cycles_per_request;
		ratio.v[r] = ratio_or_0(full.requests_per_sec, fwd.requests_per_sec);
	}
	struct dp_spread *spreads[] = { &rps_full, &cyc_full, &rps_fwd, &cyc_fwd, &ratio };
	for (size_t i = 0; i < sizeof(spreads) / sizeof(spreads[0]); i++)
		spread_of(spreads[i], repeat);
	static struct alternation alt;
	run_phase(&h, 1, duration, &alt);
	h.metrics_on = 1;
	double on_min, on_median, off_min, off_median;
	dp_min_median(alt.cycles[1], alt.n[1], &on_min, &on_median);
	dp_min_median(alt.cycles[0], alt.n[0], &off_min, &off_median);
	double sched = rte_sched_cycles(&h, 200000);
	double hz = (double)rte_get_tsc_hz();
	uint64_t forwarded = 0;
	for (unsigned i = 0; i < workers; i++)
		forwarded += h.fg.ws.w[i]->stats.answers_forwarded;
	if (json) {
		printf("{\"flows\": %u, \"workers\": %u, \"cpus\": %ld, \"frameBytes\": %u, \"tscHz\": %.0f,\n"
		       " \"answers_forwarded\": %llu,\n"
		       " \"requests_per_sec\": %.0f, \"cycles_per_request\": %.1f, \"rejected\": %llu,\n"
		       " \"forward_only_requests_per_sec\": %.0f, \"forward_only_cycles_per_request\": %.1f,\n"
		       " \"rte_sched_cycles_per_packet\": %.1f,\n"
		       " \"ratio_requests_per_sec_to_forward_only\": %.3f, \"ratio_cycles_to_rte_sched\": %.3f,\n"
		       " \"worker_busy_share_full\": %.3f, \"worker_busy_share_forward\": %.3f,"
		       " \"datagrams_per_busy_poll\": %.2f,\n"
		       " \"worker_core_capacity_requests_per_sec\": %.0f,\n"
		       " \"metrics_slices\": %u, \"metrics_on_cycles_per_request_min\": %.1f, \"metrics_on_cycles_per_request_median\": %.1f,\n"
		       " \"metrics_off_cycles_per_request_min\": %.1f, \"metrics_off_cycles_per_request_median\": %.1f,\n"
		       " \"ratio_cycles_metrics_on_to_off_min\": %.3f, \"ratio_cycles_metrics_on_to_off_median\": %.3f,\n",
		       flows, workers, cpus, h.net.template_len, hz, (unsigned long long)forwarded,
		       full.requests_per_sec, full.cycles_per_request,
		       (unsigned long long)full.rejects, fwd.requests_per_sec, fwd.cycles_per_request, sched,
		       ratio_or_0(full.requests_per_sec, fwd.requests_per_sec), ratio_or_0(full.cycles_per_request, sched),
		       full.worker_busy_share, fwd.worker_busy_share, full.datagrams_per_busy_poll,
		       ratio_or_0(hz, full.cycles_per_request),
		       alt.n[0] < alt.n[1] ? alt.n[0] : alt.n[1], on_min, on_median, off_min, off_median,
		       ratio_or_0(on_min, off_min), ratio_or_0(on_median, off_median));
		printf(" \"repeat\": %u,\n"
		       " \"requests_per_sec_min\": %.0f, \"requests_per_sec_median\": %.0f, \"requests_per_sec_max\": %.0f,\n"
		       " \"cycles_per_request_min\": %.1f, \"cycles_per_request_median\": %.1f, \"cycles_per_request_max\": %.1f,\n"
		       " \"forward_only_requests_per_sec_min\": %.0f, \"forward_only_requests_per_sec_median\": %.0f,"
		       " \"forward_only_requests_per_sec_max\": %.0f,\n"
		       " \"forward_only_cycles_per_request_min\": %.1f, \"forward_only_cycles_per_request_median\": %.1f,"
		       " \"forward_only_cycles_per_request_max\": %.1f,\n"
		       " \"ratio_requests_per_sec_to_forward_only_min\": %.3f, \"ratio_requests_per_sec_to_forward_only_median\": %.3f,"
		       " \"ratio_requests_per_sec_to_forward_only_max\": %.3f}\n",
		       repeat, rps_full.min, rps_full.median, rps_full.max, cyc_full.min, cyc_full.median, cyc_full.max,
		       rps_fwd.min, rps_fwd.median, rps_fwd.max, cyc_fwd.min, cyc_fwd.median, cyc_fwd.max, ratio.min,
		       ratio.median, ratio.max);
	} else {
		printf("flows %u, %u-byte frames, %u worker lcore(s) + the generator on %ld CPU(s)%s, TSC %.2f GHz\n", flows,
		       h.net.template_len, workers, cpus, workers + 1 > (unsigned)cpus ? " (lcores share CPUs)" : "", hz / 1e9);
		if (workers > 1)
			printf("answers passed to their request's worker: %llu (requests stay where they arrive)\n",
			       (unsigned long long)forwarded);
		printf("forward-only:   %10.0f requests/s  %8.1f cycles/request (worker busy %.0f%%)\n",
		       fwd.requests_per_sec, fwd.cycles_per_request, fwd.worker_busy_share * 100);
		printf("fairgate path:  %10.0f requests/s  %8.1f cycles/request (worker busy %.0f%%, %.1f datagrams "
		       "a busy poll), %llu rejected\n",
		       full.requests_per_sec, full.cycles_per_request, full.worker_busy_share * 100,
		       full.datagrams_per_busy_poll, (unsigned long long)full.rejects);
		printf("rte_sched:                             %8.1f cycles/packet (enqueue + dequeue)\n", sched);
		printf("ratios: requests/s full / forward-only = %.3f; cycles/request full / rte_sched = %.3f\n",
		       full.requests_per_sec / fwd.requests_per_sec, full.cycles_per_request / sched);
		printf("one worker core's capacity at this cost: %.0f requests/s\n", hz / full.cycles_per_request);
		printf("metrics on/off, alternating %.0f ms slices (%u each): cycles/request on min %.1f median %.1f, "
		       "off min %.1f median %.1f; ratio min %.3f, median %.3f\n",
		       DP_SLICE_NS / 1e6, alt.n[0] < alt.n[1] ? alt.n[0] : alt.n[1], on_min, on_median, off_min, off_median,
		       on_min / off_min, on_median / off_median);
		if (repeat > 1) {
			printf("over %u runs (min / median / max; the lines above are the last run):\n", repeat);
			printf("  fairgate path:  %.0f / %.0f / %.0f requests/s, %.1f / %.1f / %.1f cycles/request\n",
			       rps_full.min, rps_full.median, rps_full.max, cyc_full.min, cyc_full.median, cyc_full.max);
			printf("  forward-only:   %.0f / %.0f / %.0f requests/s, %.1f / %.1f / %.1f cycles/request\n",
			       rps_fwd.min, rps_fwd.median, rps_fwd.max, cyc_fwd.min, cyc_fwd.median, cyc_fwd.max);
			printf("  ratio requests/s full / forward-only, each run's pair: %.3f / %.3f / %.3f\n", ratio.min,
			       ratio.median, ratio.max);
			printf("  the fairgate path's requests/s varied %.0f%% (max / min) between runs of one process: a shared\n"
			       "  VM varies (2x seen between commands); compare ratios taken in one command\n",
			       (ratio_or_0(rps_full.max, rps_full.min) - 1) * 100);
		} else {
			printf("one run: this VM varies between runs (35%% and more); --repeat N gives min/median/max\n");
		}
	}
	dp_fairgate_destroy(&h.fg);
	dp_net_fini(&h.net);
	fg_dpdk_eal_cleanup(true);
	return 0;
}
