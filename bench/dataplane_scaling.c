/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dataplane_scaling — `fairgate-bench dataplane --mode scaling`: what a
 * second worker costs and gives, with nothing but the workers busy.
 *
 * For each worker count N of --workers (e.g. 1,2) a ring port with N RX and
 * N TX rings carries the real fairgate workers (as in the generator mode:
 * bootstrap FlowSchemas, shuffle sharding, fair queuing, dispatch,
 * completion).  No generator runs while they do:
 *   - before the timed phase each RX ring k is filled with a window of
 *     request frames of the flows f with f % N == k (RSS by flow);
 *   - the reflector, an RX callback on each worker's own queue, takes what
 *     that worker transmitted (its TX ring) and plays the network: a request
 *     to backend b becomes b's answer on RX ring b % N (RSS on the backend's
 *     address, so answers cross to their request's worker as on a NIC); an
 *     answer to the client is a completion, and the client sends its next
 *     request in the same buffer (flow f + N x window, same RX ring) until
 *     the run's count is sent.  The reflector's cycles are counted apart.
 * Every run is a fixed count of requests per worker (deterministic, not a
 * duration); its time is from the start signal to the last completion.
 *
 * The main lcore steps the allotter once per allotment period (1 ms) and
 * sleeps in between (nanosleep), also while it waits for the lanes: with
 * two vCPUs and two workers pinned one per CPU it must not poll.  (The
 * daemon's allotter thread also looks for the workers' demand signals every
 * 50 us; stepping at that rate here measured no better, and its wake-ups
 * would take 20x as much from the workers.)
 *
 * Each repeat runs every count, and for N > 1 twice more: with answers
 * steered to their request's worker (by the dispatch id's worker bits, as a
 * flow director would) — the same work without answer hand-offs, which
 * prices one — and as N independent one-worker dataplanes at once, which
 * share nothing but the machine: its own ceiling.  Per run it reports the
 * share of the workers' time their threads waited for a CPU (schedstat:
 * another process had it) and how often a worker's dispatch stopped for
 * want of seats (with several workers, its allotment).  Last, the hand-off
 * alone is timed between the first two worker lcores (handoff_cost).
 *
 * Thread contract: the main lcore sets up, fills, launches and reads; each
 * sc_lane is written by its worker's lcore only (relaxed stores the main
 * lcore may read while it runs).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_pause.h>
#include <rte_ring.h>

#include "allotter.h"
#include "clock.h"
#include "dataplane_int.h"
#include "defs.h"
#include "proto.h"
#include "reqtable.h"
#include "spsc.h"
#include "worker.h"

#define SC_REFLECT_BURST 64u
#define SC_DEFAULT_WINDOW 2048u       /* requests in flight per worker: the generator mode's window */
#define SC_MAX_WINDOW 16384u
#define SC_DEFAULT_REQUESTS 2000000u  /* per worker and run */
#define SC_MAX_REQUESTS 1000000000u
#define SC_DEFAULT_RUNS 5u
#define SC_MAX_RUNS 20u
#define SC_MAX_COUNTS 4u              /* worker counts in one command */
#define SC_MAX_WORKERS 4u             /* in one dataplane: the pools of 4 fit in -m 512 */
#define SC_RUN_LIMIT_S 60u            /* a run not complete by then fails */

struct sc_rig;

/* The reflector of one lane and that lane's figures. */
struct sc_lane {
	struct sc_rig *rig;
	unsigned id;
	uint64_t completions, rejects, strays;
	uint64_t last_completion_tsc;
	uint64_t reflect_cycles, busy_cycles;
	uint64_t runqueue_wait_ns;    /* the lane's thread waited for its CPU (schedstat), over the run */
} __attribute__((aligned(FG_CACHE_LINE)));

/* One worker count: its port, rings, fairgate and reflectors. */
struct sc_rig {
	unsigned n, window;
	uint16_t port;
	bool answers_to_owner;
	struct rte_ring *rx[DP_MAX_WORKERS], *tx[DP_MAX_WORKERS];
	struct rte_mempool *pool;     /* the windows' frames */
	struct dp_net net;
	struct dp_fairgate fg;
	struct fg_allotter allotter;
	struct sc_lane lanes[DP_MAX_WORKERS];
	/* New requests the clients may still send, over all lanes: taken a
	 * burst's completions at a time (one atomic per burst), so that no
	 * lane keeps a share it has no completions left to spend. */
	int64_t budget __attribute__((aligned(FG_CACHE_LINE)));
	int go __attribute__((aligned(FG_CACHE_LINE))); /* FG_READ_ONCE; set with release */
	int stop;                     /* FG_READ_ONCE / FG_WRITE_ONCE */
	int metrics_on;               /* the daemon's default: on */
};

/* What one run measured. */
struct sc_result {
	double seconds, requests_per_sec;
	double wall_cycles;           /* N x the run's TSC cycles per request: every worker core's time */
	double busy_cycles, reflect_cycles, busy_share;
	double forwarded_share;              /* answers crossing, per completed request */
	double stolen_share;          /* of the workers' time, waiting for their CPU (another thread had it) */
	double blocked_share;         /* dispatch stops on a head that did not fit the worker's seats, per request */
	uint64_t requests, rejects, strays;
	uint64_t rejected_by[FG_REJECT__COUNT]; /* the workers' count, by reason */
};

static void add_relaxed(uint64_t *field, uint64_t n)
{
	__atomic_store_n(field, *field + n, __ATOMIC_RELAXED);
}

/* The client's next request of flow `flow`, written over buffer m. */
static void write_request(const struct dp_net *net, struct rte_mbuf *m, uint64_t flow)
{
	m->data_off = RTE_PKTMBUF_HEADROOM;
	m->data_len = net->template_len;
	m->pkt_len = net->template_len;
	memcpy(rte_pktmbuf_mtod(m, uint8_t *), net->templates + flow * DP_FRAME_LEN, net->template_len);
}

/* The network behind lane l's TX ring: see the file's comment.  Runs in
 * the lane's worker (rte_eth_rx_burst on its queue), before that burst is
 * handed to the worker, which it leaves as it is. */
static uint16_t reflect(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t nb_rx, uint16_t max_pkts,
			void *arg)
{
	(void)port, (void)queue, (void)pkts, (void)max_pkts;
	struct sc_lane *l = arg;
	struct sc_rig *r = l->rig;
	struct rte_mbuf *ms[SC_REFLECT_BURST];
	unsigned n = rte_ring_dequeue_burst(r->tx[l->id], (void **)ms, SC_REFLECT_BURST, NULL);
	if (!n)
		return nb_rx;
	uint64_t t0 = rte_rdtsc(), rejects = 0, strays = 0;
	struct rte_mbuf *out[DP_MAX_WORKERS][SC_REFLECT_BURST], *answered[SC_REFLECT_BURST];
	uint64_t flow_of[SC_REFLECT_BURST];
	unsigned n_out[DP_MAX_WORKERS] = { 0 }, done = 0;
	for (unsigned i = 0; i < n; i++) {
		struct rte_mbuf *m = ms[i];
		uint8_t *frame = rte_pktmbuf_mtod(m, uint8_t *);
		struct fg_net_frame f;
		uint64_t id;
		if (fg_net_parse(frame, m->data_len, &f) != FG_NET_UDP ||
		    fg_proto_peek_id(frame + f.payload_off, f.payload_len, &id)) {
			strays++; /* nothing fairgate sends here: its request never completes, the run fails */
			rte_pktmbuf_free(m);
			continue;
		}
		if (f.dst_ip == r->net.client_ip) {
			rejects += frame[f.payload_off + 3] == FG_MSG_REJECT;
			flow_of[done] = id % r->net.flows; /* the answer names its flow: the client's request id */
			answered[done++] = m;
			continue;
		}
		unsigned b = dp_backend_answer(&r->net, frame, &f);
		unsigned ring = r->answers_to_owner ? fg_dispatch_id_worker(id) % r->n : b % r->n;
		out[ring][n_out[ring]++] = m;
	}
	/* The clients answered send their next requests while the budget
	 * lasts, each of a flow of the same RX ring (flows % n == 0). */
	int64_t left = done ? __atomic_fetch_sub(&r->budget, (int64_t)done, __ATOMIC_RELAXED) : 0;
	unsigned granted = left <= 0 ? 0 : left >= done ? done : (unsigned)left;
	for (unsigned i = 0; i < done; i++) {
		if (i >= granted) {
			rte_pktmbuf_free(answered[i]);
			continue;
		}
		uint64_t flow = (flow_of[i] + (uint64_t)r->n * r->window) % r->net.flows;
		write_request(&r->net, answered[i], flow);
		unsigned ring = (unsigned)(flow % r->n);
		out[ring][n_out[ring]++] = answered[i];
	}
	for (unsigned k = 0; k < r->n; k++) {
		unsigned q = n_out[k] ? rte_ring_enqueue_burst(r->rx[k], (void **)out[k], n_out[k], NULL) : 0;
		for (unsigned i = q; i < n_out[k]; i++) { /* the rings hold every frame in flight: defensive */
			strays++;
			rte_pktmbuf_free(out[k][i]);
		}
	}
	if (done) {
		add_relaxed(&l->completions, done);
		add_relaxed(&l->rejects, rejects);
		__atomic_store_n(&l->last_completion_tsc, t0, __ATOMIC_RELAXED);
	}
	if (strays)
		add_relaxed(&l->strays, strays);
	add_relaxed(&l->reflect_cycles, rte_rdtsc() - t0);
	return nb_rx;
}

/* The calling thread's time waiting on a run queue, ns (the second
 * field of its schedstat); 0 where the kernel does not say. */
static uint64_t runqueue_wait_ns(void)
{
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	unsigned long long run = 0, wait = 0;
	if (f) {
		if (fscanf(f, "%llu %llu", &run, &wait) != 2)
			wait = 0;
		fclose(f);
	}
	return wait;
}

static int lane_main(void *arg)
{
	struct sc_lane *l = arg;
	struct sc_rig *r = l->rig;
	while (!FG_READ_ONCE(r->go) && !FG_READ_ONCE(r->stop))
		rte_pause();
	uint64_t waited = runqueue_wait_ns();
	dp_run_fairgate_lane(r->fg.ws.w[l->id], r->fg.cfg, &r->stop, &r->metrics_on, &l->busy_cycles);
	l->runqueue_wait_ns = runqueue_wait_ns() - waited;
	return 0;
}

static void rig_free(struct sc_rig *r)
{
	dp_fairgate_destroy(&r->fg); /* frames still in the rings are EAL memory, gone with the EAL */
	dp_net_fini(&r->net);
	for (unsigned k = 0; k < DP_MAX_WORKERS; k++) {
		rte_ring_free(r->rx[k]);
		rte_ring_free(r->tx[k]);
	}
	rte_mempool_free(r->pool);
	free(r);
}

/* The rig of n workers; `index` names its rings, pool and port. */
static struct sc_rig *rig_create(unsigned n, unsigned window, unsigned flows, unsigned index)
{
	struct sc_rig *r = aligned_alloc(FG_CACHE_LINE, FG_CACHE_ALIGN(sizeof(*r)));
	if (!r)
		return NULL;
	memset(r, 0, sizeof(*r));
	r->n = n;
	r->window = window;
	r->metrics_on = 1;
	/* Every frame in flight fits in any one ring: no enqueue can fail. */
	unsigned ring_size = rte_align32pow2(2 * n * window + 1);
	char name[RTE_RING_NAMESIZE];
	for (unsigned k = 0; k < n; k++) {
		snprintf(name, sizeof(name), "fg_sc%u_rx%u", index, k);
		/* Answers come from every lane's reflector. */
		r->rx[k] = rte_ring_create(name, ring_size, rte_socket_id(), (n == 1 ? RING_F_SP_ENQ : 0) | RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "fg_sc%u_tx%u", index, k);
		r->tx[k] = rte_ring_create(name, ring_size, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (!r->rx[k] || !r->tx[k])
			goto err;
	}
	snprintf(name, sizeof(name), "fg_sc%u_pool", index);
	r->pool = rte_pktmbuf_pool_create(name, n * window, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	snprintf(name, sizeof(name), "fgscale%u", index);
	int port = r->pool ? rte_eth_from_rings(name, r->rx, (uint16_t)n, r->tx, (uint16_t)n, rte_socket_id()) : -1;
	if (port < 0)
		goto err;
	r->port = (uint16_t)port;
	/* A worker may hold every request in flight. */
	if (dp_net_init(&r->net, r->port, flows) || dp_fairgate_create(&r->fg, &r->net, r->port, n, n * window))
		goto err;
	for (unsigned k = 0; k < n; k++) {
		r->lanes[k] = (struct sc_lane){ .rig = r, .id = k };
		if (!rte_eth_add_rx_callback(r->port, (uint16_t)k, reflect, &r->lanes[k]))
			goto err;
	}
	return r;
err:
	fprintf(stderr, "fairgate-bench dataplane: cannot set up %u worker(s): rings, pool or port\n", n);
	rig_free(r);
	return NULL;
}

/* A worker statistic (a uint64_t at offset in fg_worker_stats) summed over
 * a group's workers. */
static uint64_t sum_stat(struct sc_rig *const *g, unsigned n_rigs, size_t offset)
{
	uint64_t s = 0;
	for (unsigned j = 0; j < n_rigs; j++)
		for (unsigned i = 0; i < g[j]->n; i++)
			s += __atomic_load_n((const uint64_t *)((const char *)&g[j]->fg.ws.w[i]->stats + offset),
					     __ATOMIC_RELAXED);
	return s;
}

#define SC_SUM(g, n_rigs, field) sum_stat(g, n_rigs, offsetof(struct fg_worker_stats, field))
#define SC_SUM_REJECTED(g, n_rigs, why) \
	sum_stat(g, n_rigs, offsetof(struct fg_worker_stats, rejected) + (why) * sizeof(uint64_t))

/* Dispatch stops for want of seats (the queue sets' blocked_by_width) over
 * a group's workers: with several, a worker's seats are its allotment.
 * Read while the workers are stopped. */
static uint64_t seat_blocks(struct sc_rig *const *g, unsigned n_rigs)
{
	uint64_t s = 0;
	for (unsigned j = 0; j < n_rigs; j++)
		for (unsigned i = 0; i < g[j]->n; i++) {
			const struct fg_worker *w = g[j]->fg.ws.w[i];
			for (uint32_t l = 0; l < w->n_levels; l++)
				if (w->levels[l].used)
					s += w->levels[l].qs.stats.blocked_by_width;
		}
	return s;
}

static uint64_t completions(struct sc_rig *const *g, unsigned n_rigs)
{
	uint64_t s = 0;
	for (unsigned j = 0; j < n_rigs; j++)
		for (unsigned i = 0; i < g[j]->n; i++)
			s += __atomic_load_n(&g[j]->lanes[i].completions, __ATOMIC_RELAXED);
	return s;
}

/* Each RX ring's window of requests, the lanes' figures zeroed, the budget
 * of per_worker requests per worker: 0 or -ENOBUFS. */
static int rig_fill(struct sc_rig *r, uint64_t per_worker, bool answers_to_owner)
{
	r->answers_to_owner = answers_to_owner;
	for (unsigned k = 0; k < r->n; k++) {
		r->lanes[k] = (struct sc_lane){ .rig = r, .id = k };
		for (unsigned i = 0; i < r->window; i++) {
			struct rte_mbuf *m = rte_pktmbuf_alloc(r->pool);
			if (!m)
				return -ENOBUFS;
			write_request(&r->net, m, (k + (uint64_t)r->n * i) % r->net.flows);
			if (rte_ring_enqueue(r->rx[k], m)) { /* sized for it: defensive */
				rte_pktmbuf_free(m);
				return -ENOBUFS;
			}
		}
	}
	r->budget = (int64_t)(per_worker - r->window) * r->n;
	FG_WRITE_ONCE(r->go, 0);
	FG_WRITE_ONCE(r->stop, 0);
	return 0;
}

static void rig_report_stuck(const struct sc_rig *r)
{
	for (unsigned k = 0; k < r->n; k++) {
		const struct fg_worker_stats *st = &r->fg.ws.w[k]->stats;
		fprintf(stderr, "worker %u of %u: received %llu dispatched %llu responded %llu answers forwarded %llu "
				"refused %llu tx failed %llu unsent %llu unmatched %llu; rings rx %u tx %u\n",
			k, r->n, (unsigned long long)st->received, (unsigned long long)st->dispatched,
			(unsigned long long)st->responded, (unsigned long long)st->answers_forwarded,
			(unsigned long long)st->handoff_refused,
			(unsigned long long)st->tx_failed, (unsigned long long)st->answers_unsent,
			(unsigned long long)st->responses_unmatched, rte_ring_count(r->rx[k]), rte_ring_count(r->tx[k]));
	}
}

/* One run of a group of rigs at once (one rig of N workers, or N
 * independent rigs of one), per_worker requests per worker, lanes on
 * lcores 1, 2, ...: 0, or -ETIMEDOUT (not all completed within
 * SC_RUN_LIMIT_S) or -ENOBUFS (the windows' frames). */
static int sc_run(struct sc_rig *const *g, unsigned n_rigs, uint64_t per_worker, bool answers_to_owner,
		  struct sc_result *res)
{
	memset(res, 0, sizeof(*res));
	uint64_t forwarded0 = SC_SUM(g, n_rigs, answers_forwarded);
	uint64_t blocked0 = seat_blocks(g, n_rigs);
	uint64_t rejected0[FG_REJECT__COUNT];
	for (unsigned why = 0; why < FG_REJECT__COUNT; why++)
		rejected0[why] = SC_SUM_REJECTED(g, n_rigs, why);
	unsigned lanes = 0, lcore = (unsigned)-1;
	for (unsigned j = 0; j < n_rigs; j++) {
		int rc = rig_fill(g[j], per_worker, answers_to_owner);
		if (rc)
			return rc;
		lanes += g[j]->n;
	}
	for (unsigned j = 0; j < n_rigs; j++)
		for (unsigned k = 0; k < g[j]->n; k++) {
			lcore = rte_get_next_lcore(lcore, 1, 0);
			rte_eal_remote_launch(lane_main, &g[j]->lanes[k], lcore);
		}
	uint64_t hz = rte_get_tsc_hz(), total = per_worker * lanes;
	uint64_t start = rte_rdtsc();
	for (unsigned j = 0; j < n_rigs; j++)
		__atomic_store_n(&g[j]->go, 1, __ATOMIC_RELEASE);
	struct timespec nap = { 0, (long)g[0]->fg.cfg->allotment_period_ns };
	while (completions(g, n_rigs) < total && rte_rdtsc() - start < SC_RUN_LIMIT_S * hz) {
		for (unsigned j = 0; j < n_rigs; j++) {
			const struct fg_config *cfg = g[j]->fg.cfg;
			fg_allotter_step(&g[j]->allotter, cfg, fg_workerset_all_follow(&g[j]->fg.ws, cfg->generation),
					 fg_now_ns());
		}
		nanosleep(&nap, NULL);
	}
	for (unsigned j = 0; j < n_rigs; j++)
		FG_WRITE_ONCE(g[j]->stop, 1);
	rte_eal_mp_wait_lcore();
	uint64_t end = start, busy = 0, reflect = 0, waited_ns = 0;
	for (unsigned j = 0; j < n_rigs; j++)
		for (unsigned k = 0; k < g[j]->n; k++) {
			const struct sc_lane *l = &g[j]->lanes[k];
			end = l->last_completion_tsc > end ? l->last_completion_tsc : end;
			busy += l->busy_cycles;
			reflect += l->reflect_cycles;
			waited_ns += l->runqueue_wait_ns;
			res->requests += l->completions;
			res->rejects += l->rejects;
			res->strays += l->strays;
		}
	for (unsigned why = 0; why < FG_REJECT__COUNT; why++)
		res->rejected_by[why] = SC_SUM_REJECTED(g, n_rigs, why) - rejected0[why];
	uint64_t span = end - start;
	if (res->requests < total || !span) {
		for (unsigned j = 0; j < n_rigs; j++)
			rig_report_stuck(g[j]);
		return -ETIMEDOUT;
	}
	double done = (double)res->requests;
	res->seconds = (double)span / (double)hz;
	res->requests_per_sec = done / res->seconds;
	res->wall_cycles = (double)span * lanes / done;
	res->busy_cycles = (double)busy / done;
	res->reflect_cycles = (double)reflect / done;
	res->busy_share = (double)busy / ((double)span * lanes);
	/* Over the lanes' whole launch (a little longer than the span). */
	res->stolen_share = (double)waited_ns / 1e9 / (res->seconds * lanes);
	res->forwarded_share = (double)(SC_SUM(g, n_rigs, answers_forwarded) - forwarded0) / done;
	res->blocked_share = (double)(seat_blocks(g, n_rigs) - blocked0) / done;
	return 0;
}

/* --- the hand-off alone, timed ------------------------------------------ */

/*
 * What crossing to another worker costs, without the dataplane around it:
 * the sender writes a request's frame (as the receiving worker's parse and
 * classification leave it: every line touched) and pushes its fg_handoff
 * into an SPSC ring of the mesh's kind and size; the taker pops it and
 * reads the frame and rewrites its headers (as admit and the send to a
 * backend do).  Timed with rte_rdtsc around each side's work (spinning on
 * an empty or full ring is not counted), once with sender and taker on the
 * two worker lcores and once with both on one lcore (a burst pushed, then
 * taken): the difference per hand-off is what the crossing adds — the
 * descriptor's and the frame's cache lines moving between the CPUs.  And
 * one cache line bounced between the two lcores: half a round trip.
 */
#define SC_HO_FRAMES 4096u           /* frames in rotation: as many as in flight */
#define SC_HO_FRAME_BYTES 256u
#define SC_HO_ITEMS 2000000u
#define SC_HO_BOUNCES 200000u

struct sc_handoff_bench {
	struct fg_spsc ring;
	uint8_t *frames;                 /* SC_HO_FRAMES x SC_HO_FRAME_BYTES */
	const uint8_t *template;
	uint16_t template_len;
	uint64_t send_cycles, take_cycles, bounce_cycles, checksum;
	uint64_t bounce __attribute__((aligned(FG_CACHE_LINE))); /* FG_READ_ONCE / FG_WRITE_ONCE */
	int go;
};

static void ho_send(struct sc_handoff_bench *b, uint64_t i)
{
	uint8_t *frame = b->frames + (i % SC_HO_FRAMES) * SC_HO_FRAME_BYTES;
	memcpy(frame, b->template, b->template_len);
	frame[FG_NET_HDRS_LEN + 8] = (uint8_t)i; /* a request id of its own */
	struct fg_handoff h = { .pkt = { .data = frame, .len = b->template_len }, .hdr = { .request_id = i } };
	fg_spsc_push(&b->ring, &h, sizeof(h)); /* the caller made sure of room */
}

static bool ho_room(struct sc_handoff_bench *b)
{
	return fg_spsc_count(&b->ring) <= b->ring.mask;
}

static void ho_take(struct sc_handoff_bench *b, const struct fg_handoff *h)
{
	uint64_t sum = 0;
	for (unsigned off = 0; off < h->pkt.len; off += RTE_CACHE_LINE_SIZE)
		sum += h->pkt.data[off];
	memset(h->pkt.data, 0x02, 34); /* the Ethernet and IPv4 headers rewritten for the backend */
	b->checksum += sum + h->hdr.request_id;
}

static int ho_sender(void *arg)
{
	struct sc_handoff_bench *b = arg;
	while (!FG_READ_ONCE(b->go))
		rte_pause();
	for (uint64_t i = 0; i < SC_HO_ITEMS; i++) {
		while (!ho_room(b)) /* waiting for the taker is not the hand-off's cost */
			rte_pause();
		uint64_t t0 = rte_rdtsc();
		ho_send(b, i);
		b->send_cycles += rte_rdtsc() - t0;
	}
	return 0;
}

static int ho_taker(void *arg)
{
	struct sc_handoff_bench *b = arg;
	struct fg_handoff hs[FG_RX_BURST];
	while (!FG_READ_ONCE(b->go))
		rte_pause();
	for (uint64_t done = 0; done < SC_HO_ITEMS;) {
		unsigned n = fg_spsc_pop(&b->ring, hs, FG_RX_BURST, sizeof(hs[0]));
		if (!n) {
			rte_pause();
			continue;
		}
		uint64_t t0 = rte_rdtsc();
		for (unsigned i = 0; i < n; i++)
			ho_take(b, &hs[i]);
		b->take_cycles += rte_rdtsc() - t0;
		done += n;
	}
	return 0;
}

/* Both sides on one lcore: a burst sent, then taken (the ring's pop
 * included in the taker's time, as on two). */
static int ho_alone(void *arg)
{
	struct sc_handoff_bench *b = arg;
	struct fg_handoff hs[FG_RX_BURST];
	for (uint64_t i = 0; i < SC_HO_ITEMS; i += FG_RX_BURST) {
		uint64_t t0 = rte_rdtsc();
		for (unsigned k = 0; k < FG_RX_BURST; k++)
			ho_send(b, i + k);
		uint64_t t1 = rte_rdtsc();
		unsigned n = fg_spsc_pop(&b->ring, hs, FG_RX_BURST, sizeof(hs[0]));
		for (unsigned k = 0; k < n; k++)
			ho_take(b, &hs[k]);
		uint64_t t2 = rte_rdtsc();
		b->send_cycles += t1 - t0;
		b->take_cycles += t2 - t1;
	}
	return 0;
}

static int ho_bounce_back(void *arg)
{
	struct sc_handoff_bench *b = arg;
	for (uint64_t i = 1; i <= SC_HO_BOUNCES; i++) {
		while (FG_READ_ONCE(b->bounce) != 2 * i - 1)
			; /* no pause: it would add its own latency to the transfer's */
		FG_WRITE_ONCE(b->bounce, 2 * i);
	}
	return 0;
}

static int ho_bounce_lead(void *arg)
{
	struct sc_handoff_bench *b = arg;
	uint64_t t0 = rte_rdtsc();
	for (uint64_t i = 1; i <= SC_HO_BOUNCES; i++) {
		FG_WRITE_ONCE(b->bounce, 2 * i - 1);
		while (FG_READ_ONCE(b->bounce) != 2 * i)
			;
	}
	b->bounce_cycles = rte_rdtsc() - t0;
	return 0;
}

/* rte_eal_mp_wait_lcore spins: the main lcore sleeps until the lanes are
 * done instead (it shares a CPU with one of them). */
static void wait_lanes_asleep(void)
{
	struct timespec ms = { 0, 1000000 };
	unsigned lcore;
	RTE_LCORE_FOREACH_WORKER(lcore)
		while (rte_eal_get_lcore_state(lcore) == RUNNING)
			nanosleep(&ms, NULL);
	rte_eal_mp_wait_lcore();
}

struct sc_handoff_cost {
	double cross_send, cross_take, alone_send, alone_take, line_transfer;
};

/* On the first two worker lcores; 0 or -ENOMEM. */
static int handoff_cost(const struct dp_net *net, struct sc_handoff_cost *c)
{
	static struct sc_handoff_bench b;
	memset((void *)&b, 0, sizeof(b));
	b.frames = aligned_alloc(FG_CACHE_LINE, (size_t)SC_HO_FRAMES * SC_HO_FRAME_BYTES);
	if (!b.frames || fg_spsc_init(&b.ring, fg_handoff_ring_capacity(2), sizeof(struct fg_handoff))) {
		free(b.frames);
		return -ENOMEM;
	}
	memset(b.frames, 0, (size_t)SC_HO_FRAMES * SC_HO_FRAME_BYTES);
	b.template = net->templates;
	b.template_len = net->template_len;
	unsigned first = rte_get_next_lcore((unsigned)-1, 1, 0), second = rte_get_next_lcore(first, 1, 0);
	rte_eal_remote_launch(ho_taker, &b, second);
	rte_eal_remote_launch(ho_sender, &b, first);
	FG_WRITE_ONCE(b.go, 1);
	wait_lanes_asleep();
	c->cross_send = (double)b.send_cycles / SC_HO_ITEMS;
	c->cross_take = (double)b.take_cycles / SC_HO_ITEMS;
	b.send_cycles = b.take_cycles = 0;
	rte_eal_remote_launch(ho_alone, &b, first);
	wait_lanes_asleep();
	c->alone_send = (double)b.send_cycles / SC_HO_ITEMS;
	c->alone_take = (double)b.take_cycles / SC_HO_ITEMS;
	rte_eal_remote_launch(ho_bounce_back, &b, second);
	rte_eal_remote_launch(ho_bounce_lead, &b, first);
	wait_lanes_asleep();
	c->line_transfer = (double)b.bounce_cycles / SC_HO_BOUNCES / 2;
	fg_spsc_fini(&b.ring);
	free(b.frames);
	return 0;
}

/* "1,2": at most SC_MAX_COUNTS counts, each 1..SC_MAX_WORKERS; the count, or 0. */
static unsigned parse_counts(const char *s, unsigned counts[SC_MAX_COUNTS])
{
	unsigned n = 0;
	while (*s && n < SC_MAX_COUNTS) {
		char *end;
		unsigned long v = strtoul(s, &end, 10);
		if (end == s || v < 1 || v > SC_MAX_WORKERS || (*end && *end != ','))
			return 0;
		counts[n++] = (unsigned)v;
		s = *end ? end + 1 : end;
	}
	return *s ? 0 : n;
}

/* What one series of runs is: N workers in one dataplane (the mesh), the
 * same with answers steered to their request's worker, or N independent
 * dataplanes of one worker each (nothing shared: the machine's own ceiling). */
enum sc_kind { SC_MESH, SC_TO_OWNER, SC_INDEPENDENT, SC__KINDS };
static const char *const sc_kind_label[] = { "", " (answers to owner)", " x 1 (independent)" };
static const char *const sc_kind_name[] = { "mesh", "owner", "independent" };

/* "mesh,owner": the kinds named, a bit each; 0 when a name is unknown. */
static unsigned parse_kinds(const char *s)
{
	unsigned kinds = 0;
	while (*s) {
		size_t len = strcspn(s, ",");
		unsigned k = 0;
		while (k < SC__KINDS && (strlen(sc_kind_name[k]) != len || strncmp(s, sc_kind_name[k], len)))
			k++;
		if (k == SC__KINDS)
			return 0;
		kinds |= 1u << k;
		s += len + (s[len] == ',');
	}
	return kinds;
}

struct sc_series {
	unsigned n;
	enum sc_kind kind;
	struct sc_rig *group[SC_MAX_WORKERS];
	unsigned n_rigs;
	struct sc_result runs[SC_MAX_RUNS];
};

struct sc_stat {
	double min, median;
};

static struct sc_stat series_stat(const struct sc_series *s, unsigned runs, size_t offset)
{
	double v[SC_MAX_RUNS];
	for (unsigned i = 0; i < runs; i++)
		v[i] = *(const double *)((const char *)&s->runs[i] + offset);
	struct sc_stat st;
	dp_min_median(v, runs, &st.min, &st.median);
	return st;
}

#define SC_STAT(s, runs, field) series_stat(s, runs, offsetof(struct sc_result, field))

/* Per run, (a's figure - b's) / divisor's share; 0 where the divisor is not
 * positive.  Figures of the same repeat only: the VM's noise is shared. */
static struct sc_stat paired_cost(const struct sc_series *a, const struct sc_series *b, unsigned runs,
				  const struct sc_series *d_plus, const struct sc_series *d_minus, size_t share)
{
	double v[SC_MAX_RUNS];
	for (unsigned i = 0; i < runs; i++) {
		double crossed = *(const double *)((const char *)&d_plus->runs[i] + share) -
				 (d_minus ? *(const double *)((const char *)&d_minus->runs[i] + share) : 0);
		v[i] = crossed > 0 ? (a->runs[i].wall_cycles - b->runs[i].wall_cycles) / crossed : 0;
	}
	struct sc_stat st;
	dp_min_median(v, runs, &st.min, &st.median);
	return st;
}

static void report(const struct sc_series *series, unsigned n_series, unsigned runs, bool json)
{
	const struct sc_series *base = &series[0];
	for (unsigned s = 0; s < n_series; s++) {
		const struct sc_series *se = &series[s];
		struct sc_stat rps = SC_STAT(se, runs, requests_per_sec), cyc = SC_STAT(se, runs, wall_cycles);
		struct sc_stat busy = SC_STAT(se, runs, busy_cycles), refl = SC_STAT(se, runs, reflect_cycles);
		struct sc_stat fwd = SC_STAT(se, runs, forwarded_share);
		struct sc_stat share = SC_STAT(se, runs, busy_share), stolen = SC_STAT(se, runs, stolen_share);
		struct sc_stat blocked = SC_STAT(se, runs, blocked_share);
		double v[SC_MAX_RUNS], stolen_max = 0;
		uint64_t rejects = 0, requests = 0;
		for (unsigned i = 0; i < runs; i++) {
			v[i] = se->runs[i].requests_per_sec / base->runs[i].requests_per_sec;
			stolen_max = se->runs[i].stolen_share > stolen_max ? se->runs[i].stolen_share : stolen_max;
			rejects += se->runs[i].rejects;
			requests += se->runs[i].requests;
		}
		struct sc_stat scale;
		dp_min_median(v, runs, &scale.min, &scale.median);
		/* The answer hand-off: (cycles/request with answers by backend
		 * - steered to their owner) / (answers forwarded per request,
		 * the same).  Requests never cross: they stay where they arrive. */
		struct sc_stat answer_cost = { 0, 0 };
		if (se->kind == SC_TO_OWNER) {
			const struct sc_series *mesh = se - 1;
			answer_cost = paired_cost(mesh, se, runs, mesh, se, offsetof(struct sc_result, forwarded_share));
		}
		if (json) {
			printf("  {\"workers\": %u, \"kind\": \"%s\", \"requests\": %llu, \"rejected\": %llu,\n"
			       "   \"requests_per_sec_min\": %.0f, \"requests_per_sec_median\": %.0f,\n"
			       "   \"ratio_to_first_min\": %.3f, \"ratio_to_first_median\": %.3f,\n"
			       "   \"cycles_per_request_min\": %.1f, \"cycles_per_request_median\": %.1f,\n"
			       "   \"busy_cycles_per_request_median\": %.1f, \"reflector_cycles_per_request_median\": %.1f,\n"
			       "   \"worker_busy_share_median\": %.3f, \"cpu_stolen_share_median\": %.3f, "
			       "\"cpu_stolen_share_max\": %.3f,\n"
			       "   \"answers_crossing_share_median\": %.3f,\n"
			       "   \"seat_blocked_dispatches_per_request_median\": %.3f",
			       se->n, se->kind == SC_MESH ? "mesh" : se->kind == SC_TO_OWNER ? "answers_to_owner" : "independent",
			       (unsigned long long)requests, (unsigned long long)rejects, rps.min, rps.median, scale.min,
			       scale.median, cyc.min, cyc.median, busy.median, refl.median, share.median, stolen.median,
			       stolen_max, fwd.median, blocked.median);
			if (se->kind == SC_TO_OWNER)
				printf(",\n   \"answer_handoff_cycles_min\": %.1f, \"answer_handoff_cycles_median\": %.1f",
				       answer_cost.min, answer_cost.median);
			printf("}%s\n", s + 1 < n_series ? "," : "");
			continue;
		}
		char label[40];
		snprintf(label, sizeof(label), "%u%s", se->n, sc_kind_label[se->kind]);
		printf("%-22s %11.0f / %9.0f %9.1f / %8.1f %16.1f %16.1f %13.1f%% %13.1f%% %13.3f %8llu\n", label,
		       rps.min, rps.median, cyc.min, cyc.median, busy.median, refl.median, fwd.median * 100, stolen_max * 100, blocked.median, (unsigned long long)rejects);
		if (rejects) {
			printf("%-22s rejected by the workers:", "");
			for (unsigned why = 0; why < FG_REJECT__COUNT; why++) {
				uint64_t sum = 0;
				for (unsigned i = 0; i < runs; i++)
					sum += se->runs[i].rejected_by[why];
				if (sum)
					printf(" %s %llu", fg_reject_reason_name(why), (unsigned long long)sum);
			}
			printf("\n");
		}
		if (s > 0)
			printf("%-22s requests/s against %u worker(s), paired per run: min %.3fx, median %.3fx\n", "", base->n,
			       scale.min, scale.median);
		if (se->kind == SC_TO_OWNER)
			printf("%-22s an answer hand-off: %.0f cycles (median; min %.0f) = cycles/request by backend - to "
			       "owner, over the answers crossing\n",
			       "", answer_cost.median, answer_cost.min);
	}
}

static void usage(FILE *f)
{
	fprintf(f, "usage: fairgate-bench dataplane --mode scaling [--workers 1,2] [--requests R] [--window W]\n"
		   "       [--runs 5] [--flows F] [--series mesh,owner,independent] [--json]\n"
		   "  R requests per worker and run (default %u), W in flight per worker (default %u);\n"
		   "  each repeat runs every count N, for N > 1 also with answers steered to their owner and\n"
		   "  N independent one-worker dataplanes; --series keeps only those named (e.g. one\n"
		   "  to profile: perf record ... --workers 2 --series owner)\n",
		SC_DEFAULT_REQUESTS, SC_DEFAULT_WINDOW);
}

int fg_bench_dataplane_scaling(int argc, char **argv)
{
	unsigned counts[SC_MAX_COUNTS] = { 1, 2 }, n_counts = 2, flows = 10000, window = SC_DEFAULT_WINDOW;
	unsigned runs = SC_DEFAULT_RUNS;
	unsigned long long per_worker = SC_DEFAULT_REQUESTS;
	int json = 0;
	unsigned kinds = (1u << SC__KINDS) - 1;
	static const struct option opts[] = { { "mode", required_argument, 0, 'm' }, { "series", required_argument, 0, 's' },
		{ "workers", required_argument, 0, 'w' }, { "requests", required_argument, 0, 'r' },
		{ "window", required_argument, 0, 'W' }, { "runs", required_argument, 0, 'n' },
		{ "flows", required_argument, 0, 'f' }, { "json", no_argument, 0, 'j' },
		{ "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 } };
	int opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'm': break; /* scaling: fg_bench_dataplane chose this mode */
		case 'w': n_counts = parse_counts(optarg, counts); break;
		case 'r': per_worker = strtoull(optarg, NULL, 10); break;
		case 'W': window = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'n': runs = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'f': flows = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'j': json = 1; break;
		case 's': kinds = parse_kinds(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	unsigned max_n = 0;
	bool flows_split = true;
	for (unsigned i = 0; i < n_counts; i++) {
		max_n = counts[i] > max_n ? counts[i] : max_n;
		flows_split &= flows % counts[i] == 0;
	}
	if (!n_counts || !kinds || window < 1 || window > SC_MAX_WINDOW || per_worker < window || per_worker > SC_MAX_REQUESTS ||
	    runs < 1 || runs > SC_MAX_RUNS || flows == 0 || flows > 1000000 || !flows_split) {
		fprintf(stderr, "fairgate-bench dataplane: --mode scaling: --workers N[,N...] (at most %u counts, "
				"1..%u each), --series of mesh, owner, independent, --window 1..%u, --requests W..%u, "
				"--runs 1..%u, --flows 1..1000000 and a multiple of every worker count\n",
			SC_MAX_COUNTS, SC_MAX_WORKERS, SC_MAX_WINDOW, SC_MAX_REQUESTS, SC_MAX_RUNS);
		return 2;
	}
	/* Worker lcore i on CPU (i - 1) % cpus, the main lcore (asleep but
	 * for the allotter) free to run on any. */
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	cpus = cpus < 1 ? 1 : cpus;
	char lcores[128];
	int off = snprintf(lcores, sizeof(lcores), "0@(0-%ld)", cpus - 1);
	for (unsigned i = 1; i <= max_n; i++)
		off += snprintf(lcores + off, sizeof(lcores) - (size_t)off, ",%u@%ld", i, (long)(i - 1) % cpus);
	if (!dp_eal_init(lcores, 512, max_n + 1))
		return 1;
	/* The rigs: one of each count (the count 1's is also the first
	 * independent one), and further one-worker rigs for the independent
	 * series. */
	struct sc_rig *rigs[SC_MAX_COUNTS + SC_MAX_WORKERS] = { 0 }, *singles[SC_MAX_WORKERS] = { 0 };
	unsigned n_rigs = 0, n_singles = 0;
	static struct sc_series series[3 * SC_MAX_COUNTS];
	unsigned n_series = 0;
	int rc = 0;
	for (unsigned i = 0; i < n_counts && !rc; i++) {
		struct sc_rig *mesh = rig_create(counts[i], window, flows, n_rigs);
		rigs[n_rigs++] = mesh;
		rc = mesh ? 0 : 1;
		if (counts[i] == 1 && mesh && !n_singles)
			singles[n_singles++] = mesh;
		if (kinds & 1u << SC_MESH)
			series[n_series++] =
				(struct sc_series){ .n = counts[i], .kind = SC_MESH, .group = { mesh }, .n_rigs = 1 };
		if (counts[i] == 1 || rc)
			continue;
		if (kinds & 1u << SC_TO_OWNER)
			series[n_series++] =
				(struct sc_series){ .n = counts[i], .kind = SC_TO_OWNER, .group = { mesh }, .n_rigs = 1 };
		if (!(kinds & 1u << SC_INDEPENDENT))
			continue;
		while (!rc && n_singles < counts[i]) {
			struct sc_rig *single = rig_create(1, window, flows, n_rigs);
			rigs[n_rigs++] = singles[n_singles++] = single;
			rc = single ? 0 : 1;
		}
		struct sc_series *ind = &series[n_series++];
		*ind = (struct sc_series){ .n = counts[i], .kind = SC_INDEPENDENT, .n_rigs = counts[i] };
		memcpy(ind->group, singles, sizeof(singles[0]) * counts[i]);
	}
	if (!rc && !n_series) {
		fprintf(stderr, "fairgate-bench dataplane: --mode scaling: no series left to run (owner and independent "
				"need a worker count above 1)\n");
		rc = 2;
	}
	/* A warm-up run of each series, then the repeats, each running every
	 * series in turn so that they share the VM's moods. */
	for (unsigned run = 0; !rc && run <= runs; run++) {
		for (unsigned s = 0; !rc && s < n_series; s++) {
			struct sc_series *se = &series[s];
			struct sc_result warm, *res = run ? &se->runs[run - 1] : &warm;
			uint64_t count = run ? per_worker : per_worker / 4 > window ? per_worker / 4 : window;
			int e = sc_run(se->group, se->n_rigs, count, se->kind == SC_TO_OWNER, res);
			if (e || res->strays) {
				fprintf(stderr, "fairgate-bench dataplane: %u worker(s)%s: %s (%llu of %llu requests completed, "
						"%llu stray frames)\n",
					se->n, sc_kind_label[se->kind],
					e == -ENOBUFS ? "no buffers for the window" : "run incomplete",
					(unsigned long long)res->requests, (unsigned long long)count * se->n,
					(unsigned long long)res->strays);
				rc = 1;
			}
		}
	}
	/* The hand-off alone, between the first two worker lcores. */
	double ho[5][SC_MAX_RUNS];
	struct sc_stat ho_stat[5] = { { 0, 0 } };
	bool ho_done = !rc && max_n >= 2 && (kinds & 1u << SC_MESH); /* what the mesh's hand-offs cost */
	for (unsigned run = 0; ho_done && run < runs; run++) {
		struct sc_handoff_cost c;
		if (handoff_cost(&rigs[0]->net, &c)) {
			ho_done = false;
			break;
		}
		ho[0][run] = c.cross_send + c.cross_take - c.alone_send - c.alone_take;
		ho[1][run] = c.cross_send;
		ho[2][run] = c.cross_take;
		ho[3][run] = c.alone_send + c.alone_take;
		ho[4][run] = c.line_transfer;
	}
	for (unsigned k = 0; ho_done && k < 5; k++)
		dp_min_median(ho[k], runs, &ho_stat[k].min, &ho_stat[k].median);
	double hz = (double)rte_get_tsc_hz();
	if (!rc && json) {
		printf("{\"mode\": \"scaling\", \"flows\": %u, \"window\": %u, \"requests_per_worker\": %llu, \"runs\": %u, "
		       "\"cpus\": %ld, \"tscHz\": %.0f, \"series\": [\n",
		       flows, window, per_worker, runs, cpus, hz);
		report(series, n_series, runs, true);
		printf("], \"handoff_alone\": {\"measured\": %s, \"added_cycles_min\": %.1f, \"added_cycles_median\": %.1f,\n"
		       " \"cross_send_cycles_median\": %.1f, \"cross_take_cycles_median\": %.1f, \"one_cpu_cycles_median\": %.1f,\n"
		       " \"cache_line_transfer_cycles_min\": %.1f, \"cache_line_transfer_cycles_median\": %.1f}}\n",
		       ho_done ? "true" : "false", ho_stat[0].min, ho_stat[0].median, ho_stat[1].median, ho_stat[2].median,
		       ho_stat[3].median, ho_stat[4].min, ho_stat[4].median);
	} else if (!rc) {
		printf("scaling: %u flows, %u requests in flight and %llu requests per worker and run, %u runs (+1 warm-up); "
		       "%ld CPU(s), worker i on CPU i-1, the main lcore asleep but for the allotter (1 ms); TSC %.2f GHz\n",
		       flows, window, per_worker, runs, cpus, hz / 1e9);
		printf("%-22s %23s %20s %16s %16s %14s %14s %13s %8s\n", "workers", "requests/s min/median",
		       "cycles/req min/med", "busy cycles/req", "reflector c/req", "answers cross",
		       "CPU stolen max", "seat-blocked", "rejected");
		report(series, n_series, runs, false);
		if (ho_done)
			printf("the hand-off alone (%u fg_handoff + 200-byte frames through an SPSC ring, %u runs): between the two "
			       "worker CPUs %.0f cycles (send %.0f + take %.0f), on one CPU %.0f; the crossing adds %.0f cycles "
			       "(median; min %.0f); one cache line moved between them: %.0f cycles (median; min %.0f)\n",
			       SC_HO_ITEMS, runs, ho_stat[1].median + ho_stat[2].median, ho_stat[1].median, ho_stat[2].median,
			       ho_stat[3].median, ho_stat[0].median, ho_stat[0].min, ho_stat[4].median, ho_stat[4].min);
	}
	for (unsigned i = 0; i < n_rigs; i++)
		if (rigs[i])
			rig_free(rigs[i]);
	fg_dpdk_eal_cleanup(true);
	return rc;
}
